"""Multi-process gloo jobs for the tests: a free port, and the ranks of one worker script run
under a hard timeout, every process killed and reaped by the end."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

JOB_TIMEOUT = 90


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_ranks(worker: Path, ranks: int, out: Path, scenario: str) -> None:
    """Run ``python WORKER RANK PORT OUT SCENARIO`` for every rank (``out`` created first);
    processes still alive after ``JOB_TIMEOUT`` seconds are killed, all are reaped."""
    out.mkdir(parents=True)
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable, str(worker), str(rank), port, str(out),
                               scenario], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True,
                              env={**os.environ, "PYTHONPATH": ""})
             for rank in range(ranks)]
    try:
        for proc in procs:
            proc.wait(timeout=JOB_TIMEOUT)
    except subprocess.TimeoutExpired:
        pass
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
