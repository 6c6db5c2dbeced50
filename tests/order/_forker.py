"""Runs the jobs of one gloo worker script from one process that imported torch once: each
rank is a fork of it that calls the script's ``main`` with the argv ``python WORKER RANK PORT
OUT SCENARIO`` would give (its frames are the script's, as under ``python WORKER``).

Usage: python _forker.py WORKER RANKS PARALLEL TIMEOUT SCENARIO OUT [SCENARIO OUT ...]. At
most PARALLEL jobs run at once, each on its own port; a rank still alive TIMEOUT seconds
after its job started is killed. Every fork is reaped before this process ends.
"""

from __future__ import annotations

import os
import runpy
import signal
import socket
import sys
import time
import traceback


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> None:
    worker, ranks, parallel, timeout = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                        float(sys.argv[4]))
    pending = list(zip(sys.argv[5::2], sys.argv[6::2], strict=True))
    # The script's imports (torch, torch.distributed, ...) and definitions, not its main.
    script = runpy.run_path(worker, run_name="_forked_worker")
    running: dict[int, float] = {}  # pid: deadline
    jobs: dict[int, list[int]] = {}  # job index: its live pids
    job_of: dict[int, int] = {}
    started = 0
    while pending or running:
        while pending and len(jobs) < parallel:
            scenario, out = pending.pop(0)
            os.makedirs(out)
            port, deadline = str(free_port()), time.monotonic() + timeout
            pids = [_fork(script, [worker, str(rank), port, out, scenario])
                    for rank in range(ranks)]
            jobs[started] = pids
            for pid in pids:
                running[pid], job_of[pid] = deadline, started
            started += 1
        pid, _ = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            now = time.monotonic()
            for late in [p for p, deadline in running.items() if deadline < now]:
                os.kill(late, signal.SIGKILL)
                running[late] = float("inf")  # reaped by the next waitpid
            time.sleep(0.02)
            continue
        del running[pid]
        job = job_of.pop(pid)
        jobs[job].remove(pid)
        if not jobs[job]:
            del jobs[job]


def _fork(script: dict[str, object], argv: list[str]) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        sys.argv = argv
        script["main"]()  # type: ignore[operator]
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


if __name__ == "__main__":
    main()
