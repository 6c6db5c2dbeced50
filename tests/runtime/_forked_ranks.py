"""Runs the ranks of one program as forks of one process that imported it (torch, or
meshtopo's command line, with it) once, each as ``python PROGRAM ARGV...`` would run it, with
its own environment and output when given: ``python _forked_ranks.py SPEC``, SPEC a JSON file
``{"timeout": seconds, "script": path | null, "module": name | null, "imports": [module],
"ranks": [{"argv": [...], "env": {...} | null, "output": path | null}]}`` (``script``: run
as ``python path``; ``module``: as ``python -m name``, after importing ``imports``).

Prints the exit code of each rank (minus the signal that killed it) as one JSON list. A rank
still alive ``timeout`` seconds after the start is killed; every rank dies with this process
(``PR_SET_PDEATHSIG``) and is reaped before it ends. ``run_forked`` starts it and bounds it."""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import runpy
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any


def _rank(spec: dict[str, Any], rank: dict[str, Any]) -> None:
    """Run the program as one rank in this fork, and end it."""
    code = 1
    try:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
        if rank.get("env") is not None:
            os.environ.clear()
            os.environ.update(rank["env"])
        if rank.get("output") is not None:
            output = os.open(rank["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(output, 1)
            os.dup2(output, 2)
            os.close(output)
        if spec.get("module"):
            sys.argv = [spec["module"], *rank["argv"]]
            runpy.run_module(spec["module"], run_name="__main__", alter_sys=True)
        else:
            sys.argv = [spec["script"], *rank["argv"]]
            runpy.run_path(spec["script"], run_name="__main__")
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main() -> None:
    """Fork the ranks, wait for them (killing the late ones), print their exit codes."""
    spec = json.loads(Path(sys.argv[1]).read_text())
    for name in spec.get("imports", []):
        importlib.import_module(name)
    if spec.get("script"):
        runpy.run_path(spec["script"], run_name="_imported")  # its imports, torch among them
    sys.stdout.flush()
    pids = {}
    for index, rank in enumerate(spec["ranks"]):
        pid = os.fork()
        if pid == 0:
            _rank(spec, rank)
        pids[pid] = index
    codes: dict[int, int] = {}
    deadline = time.monotonic() + float(spec["timeout"])
    while len(codes) < len(pids):
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid:
            codes[pids[pid]] = os.waitstatus_to_exitcode(status)
        elif time.monotonic() > deadline:
            for late in [p for p, index in pids.items() if index not in codes]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(late, signal.SIGKILL)
            deadline = float("inf")  # reaped by the next waits
        else:
            time.sleep(0.02)
    print(json.dumps([codes[index] for index in range(len(pids))]))


def run_forked(spec: dict[str, Any], directory: Path, env: dict[str, str]) -> list[int]:
    """Each rank's exit code of ``spec`` (written to ``directory``) run by this script in a
    process of its own with ``env``; it is killed and reaped 20 s past the spec's timeout."""
    path = directory / "forked-ranks.json"
    path.write_text(json.dumps(spec))
    forker = subprocess.Popen([sys.executable, __file__, str(path)], env=env, text=True,
                              stdout=subprocess.PIPE)
    try:
        out, _ = forker.communicate(timeout=float(spec["timeout"]) + 20)
    finally:
        if forker.poll() is None:
            forker.kill()
        forker.communicate()
    assert forker.returncode == 0, out
    return [int(code) for code in json.loads(out.splitlines()[-1])]


if __name__ == "__main__":
    main()
