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


def run_reaped(argv: list[str], timeout: float) -> None:
    """Run ``argv`` (a Python script and its arguments) in a session of its own, output
    discarded; it and every process it started are killed after ``timeout`` seconds if still
    alive, and all are gone when this returns."""
    launcher = subprocess.Popen(
        [sys.executable, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, env={**os.environ, "PYTHONPATH": ""})
    try:
        launcher.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        with contextlib.suppress(ProcessLookupError):  # the launcher and any fork left
            os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait(timeout=10)


def run_jobs(worker: Path, ranks: int, outs: dict[str, Path], parallel: int = 2) -> None:
    """For each ``scenario: out``, ``python WORKER RANK PORT OUT SCENARIO`` for every rank
    (``out`` created first), ``parallel`` jobs at a time; a job's processes still alive after
    ``JOB_TIMEOUT`` seconds are killed, and all are gone when this returns."""
    waves = -(-len(outs) // parallel)
    run_reaped([str(Path(__file__).with_name("_forker.py")), str(worker), str(ranks),
                str(parallel), str(JOB_TIMEOUT),
                *(str(item) for scenario, out in outs.items() for item in (scenario, out))],
               JOB_TIMEOUT * waves + 60)


def run_ranks(worker: Path, ranks: int, out: Path, scenario: str) -> None:
    """One job of ``run_jobs``."""
    run_jobs(worker, ranks, {scenario: out})


ANALYZER_TIMEOUT = 120


def torch_analyses(runs: list[tuple[Path, str, str]], out: Path) -> list[str]:
    """What torch's Flight Recorder analyzer prints for each ``(directory, prefix, order)``
    (the ranks whose files it lists first, in that order, e.g. ``"2,0,1,3"``), all run by one
    process that imports it once (``_torch_analyzer.py``), its output files in the new folder
    ``out``; every process is gone after ``ANALYZER_TIMEOUT`` seconds. An analysis that did
    not run to its end raises RuntimeError."""
    out.mkdir()
    files = [out / f"analysis_{number}.txt" for number in range(len(runs))]
    run_reaped([str(Path(__file__).with_name("_torch_analyzer.py")),
                *(str(item) for file, (directory, prefix, order) in zip(files, runs, strict=True)
                  for item in (file, directory, prefix, order))], ANALYZER_TIMEOUT)
    unfinished = [run for run, file in zip(runs, files, strict=True)
                  if not file.with_name(file.name + ".done").exists()]
    if unfinished:
        raise RuntimeError(f"torch's analyzer did not finish {unfinished}")
    return [file.read_text() for file in files]
