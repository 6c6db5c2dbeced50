"""Runs ranks of programs as forks of one process that imported them (torch, or meshtopo's
command line, with them) once, each as ``python PROGRAM ARGV...`` would run it, with its own
environment and output when given: ``python _forked_ranks.py SPEC``, SPEC a JSON file
``{"timeout": seconds, "imports": [module], "scripts": [path], "ranks": [{"script": path |
"module": name, "argv": [...], "env": {...} | null, "output": path | null}]}`` (a rank's
``script`` runs as ``python path``, its ``module`` as ``python -m name``; ``imports`` are
imported and ``scripts`` run, not as ``__main__``, before any fork).

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
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _exit_code(run: Callable[[], object]) -> int:
    """What ``python`` would exit with after ``run()``: 0, a ``SystemExit``'s code (None is
    0, text 1), or 1 with the traceback printed."""
    try:
        run()
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def _run(rank: dict[str, Any]) -> None:
    """Set this fork up as the rank (dies with its parent; its environment and output) and
    run its program as ``__main__``."""
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
    program = rank.get("module") or rank["script"]
    sys.argv = [program, *rank["argv"]]
    if rank.get("module"):
        runpy.run_module(program, run_name="__main__", alter_sys=True)
    else:
        runpy.run_path(program, run_name="__main__")


def _rank(rank: dict[str, Any]) -> None:
    """Run the rank in this fork and end the fork with its exit code, without the teardown
    of the process it was forked from."""
    code = _exit_code(lambda: _run(rank))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main() -> None:
    """Fork the ranks, wait for them (killing the late ones), print their exit codes."""
    spec = json.loads(Path(sys.argv[1]).read_text())
    for name in spec.get("imports", []):
        importlib.import_module(name)
    for script in spec.get("scripts", []):
        runpy.run_path(script, run_name="_imported")  # its imports, torch among them
    sys.stdout.flush()
    pids = {}
    for index, rank in enumerate(spec["ranks"]):
        pid = os.fork()
        if pid == 0:
            _rank(rank)
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
