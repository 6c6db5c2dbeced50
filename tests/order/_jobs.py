"""Multi-process gloo jobs for the tests: the jobs of one worker script run under a hard
timeout, every process killed and reaped by the end.

The ranks are forks of one process that imported the script's modules (torch) once
(``_forker.py``), not a fresh interpreter each."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

JOB_TIMEOUT = 90


def run_jobs(worker: Path, ranks: int, outs: dict[str, Path], parallel: int = 2) -> None:
    """For each ``scenario: out``, ``python WORKER RANK PORT OUT SCENARIO`` for every rank
    (``out`` created first), ``parallel`` jobs at a time; a job's processes still alive after
    ``JOB_TIMEOUT`` seconds are killed, and all are gone when this returns."""
    waves = -(-len(outs) // parallel)
    launcher = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("_forker.py")), str(worker), str(ranks),
         str(parallel), str(JOB_TIMEOUT),
         *(str(item) for scenario, out in outs.items() for item in (scenario, out))],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, "PYTHONPATH": ""})
    try:
        launcher.wait(timeout=JOB_TIMEOUT * waves + 60)
    except subprocess.TimeoutExpired:
        pass
    finally:
        with contextlib.suppress(ProcessLookupError):  # the launcher and any fork left
            os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait(timeout=10)


def run_ranks(worker: Path, ranks: int, out: Path, scenario: str) -> None:
    """One job of ``run_jobs``."""
    run_jobs(worker, ranks, {scenario: out})
