"""Runs the ranks of one gloo worker script as forks of one process that imported the script
(torch with it) once, each as ``python WORKER RANK ARG...`` would run it:
``python _forked_ranks.py TIMEOUT WORKER RANKS ARG...``.

Prints the exit code of each rank (minus the signal that killed it) as one JSON list. A rank
still alive TIMEOUT seconds after the start is killed; every rank dies with this process
(``PR_SET_PDEATHSIG``) and is reaped before it ends."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import runpy
import signal
import sys
import time
import traceback


def _rank(worker: str, argv: list[str]) -> None:
    """Run ``worker`` as ``__main__`` with ``argv`` in this fork, and end it."""
    code = 1
    try:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
        sys.argv = argv
        runpy.run_path(worker, run_name="__main__")  # its imports are this process's already
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
    timeout, worker, ranks, arguments = (float(sys.argv[1]), sys.argv[2], int(sys.argv[3]),
                                         sys.argv[4:])
    runpy.run_path(worker, run_name="_imported")  # the script's imports, torch among them
    sys.stdout.flush()
    pids = {}
    for rank in range(ranks):
        pid = os.fork()
        if pid == 0:
            _rank(worker, [worker, str(rank), *arguments])
        pids[pid] = rank
    codes: dict[int, int] = {}
    deadline = time.monotonic() + timeout
    while len(codes) < ranks:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid:
            codes[pids[pid]] = os.waitstatus_to_exitcode(status)
        elif time.monotonic() > deadline:
            for late in set(pids) - {p for p, r in pids.items() if r in codes}:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(late, signal.SIGKILL)
            deadline = float("inf")  # reaped by the next waits
        else:
            time.sleep(0.02)
    print(json.dumps([codes[rank] for rank in range(ranks)]))


if __name__ == "__main__":
    main()
