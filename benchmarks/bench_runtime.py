"""Speed of meshtopo's runtime backends against anchors timed side by side.

Goals (figure / anchor; reported, never asserted):

1. ``local`` all-reduce of 64 MiB float32 over 8 devices (8 threads, one ``LocalFactory``):
   at least half of numpy's own summation bandwidth for the same bytes (the same 8 buffers
   added into one with ``np.add(out, x, out=out)``), i.e. a time ratio of at most 2.
2. ``torch`` backend ``TorchCommunicator.all_reduce`` in place on the caller's numpy buffer
   (``out=`` the send buffer; the default membership, met in the TCPStore once per clique)
   against raw ``torch.distributed.all_reduce`` in place, on the 4-process 'model' groups of a
   2x4 mesh of 8 gloo processes, 1 KiB to 64 MiB: overhead under 10% (ratio at most 1.1) at
   1 MiB and above; smaller sizes are reported. The default call (out of place: the result is
   a new array, one copy) against raw on a fresh ``clone`` (the same one copy), within 1.1x
   at 16 MiB and above. Reported beside them:
   meeting in the store before every operation (``membership="operation"``, what ``execute``
   and ``replay`` use) and never meeting. The table compares best times; a line per size
   gives each variant's median over rounds of its time over raw's in the same round, which a
   loaded machine disturbs less.
3. Group setup for every group of the 2x4 mesh: one creation per distinct group, counted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import meshtopo as mt
from benchmarks._timing import Comparison, comparison_table, console, seconds, summary
from meshtopo.runtime import CliqueKey, LocalFactory
from meshtopo.runtime._launch import free_port

DEVICES = 8
BYTES = 64 << 20
WORKERS_SECONDS = 600.0
ROOT = Path(__file__).resolve().parents[1]


def bench_local(rows: list[Comparison]) -> None:
    """Goal 1: the local backend's all-reduce against numpy adding the same buffers."""
    buffers = [np.full(BYTES // 4, d, dtype=np.float32) for d in range(DEVICES)]
    factory = LocalFactory(timeout=120)
    communicators = factory.create_clique(CliqueKey(tuple(range(DEVICES)))).communicators()

    def all_reduce() -> None:
        threads = [threading.Thread(target=lambda c=c, b=b: c.all_reduce(b).wait())
                   for c, b in zip(communicators, buffers, strict=True)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def numpy_sum() -> None:
        out = buffers[0].copy()
        for buffer in buffers[1:]:
            np.add(out, buffer, out=out)

    best = {"local": float("inf"), "numpy": float("inf")}
    for _ in range(5):
        for name, function in (("local", all_reduce), ("numpy", numpy_sum)):
            started = time.perf_counter()
            function()
            best[name] = min(best[name], time.perf_counter() - started)
    gib = DEVICES * BYTES / 2**30
    rows.append(Comparison(
        "1", f"local all-reduce, 8 x 64 MiB f32 ({gib / best['local']:.1f} GiB/s)",
        best["local"], f"numpy add chain ({gib / best['numpy']:.1f} GiB/s)", best["numpy"], 2.0))


def _reap(processes: list[subprocess.Popen[bytes]], seconds: float) -> None:
    """Wait for every worker, ``seconds`` at most in all; once one fails or time runs out the
    others are killed (they would wait for it until gloo's timeout) and every one is reaped.
    A failure is a ``RuntimeError`` naming the ranks."""
    deadline = time.monotonic() + seconds
    try:
        while any(process.poll() is None for process in processes):
            if time.monotonic() > deadline or any(process.returncode for process in processes):
                break
            time.sleep(0.05)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
        for process in processes:
            process.wait()
    failed = [rank for rank, process in enumerate(processes) if process.returncode]
    if failed:
        raise RuntimeError(f"benchmark worker rank(s) {failed} failed or ran past {seconds:g} s")


def bench_torch(rows: list[Comparison]) -> None:
    """Goals 2 and 3: 8 gloo processes on this host (see ``_runtime_worker``)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp, "figures.json")
        port = str(free_port())
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
                   TORCH_CPP_LOG_LEVEL="ERROR")
        processes = [subprocess.Popen([sys.executable, "-m", "benchmarks._runtime_worker",
                                       str(r), str(DEVICES), port, str(out)], env=env)
                     for r in range(DEVICES)]
        _reap(processes, WORKERS_SECONDS)
        result = json.loads(out.read_text())
    console.print(f"  group setup for the 2x4 mesh: {result['created']} process groups created "
                  f"for {result['groups']} distinct groups in {seconds(result['setup'])}")
    variants = (("meshtopo", "in place (out=send), membership met once per clique", True),
                ("operation", "in place, membership met before every operation", False),
                ("unchecked", "in place, membership never met", False))
    for figure in result["figures"]:
        size = figure["bytes"]
        label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
        paired = ", ".join(f"{name} {figure['paired'][name]:.2f} "
                           f"(IQR {figure['spread'][name]:.2f})"
                           for name in ("meshtopo", "copy", "operation", "unchecked"))
        console.print(f"  {label}: median of per-round ratios to raw: {paired}; default call "
                      f"(copy) over raw on a clone {figure['paired']['copy_vs_clone']:.2f}")
        for name, what, has_goal in variants:
            goal = 1.1 if has_goal and size >= 1 << 20 else float("inf")
            note = "" if goal < float("inf") else "reported, no goal"
            rows.append(Comparison("2", f"torch all-reduce {label}, 4 of 8 gloo processes: "
                                   f"{what}", figure[name], "raw dist.all_reduce",
                                   figure["raw"], goal, note))
        goal = 1.1 if size >= 16 << 20 else float("inf")
        rows.append(Comparison(
            "2", f"torch all-reduce {label}, 4 of 8 gloo processes: default call (a new array, "
            "one copy)", figure["copy"], "raw dist.all_reduce on a clone", figure["raw_clone"],
            goal, f"paired median {figure['paired']['copy_vs_clone']:.2f}"
            + ("" if goal < float("inf") else "; reported, no goal")))


def main() -> None:
    """Run the goals and print a table of every comparison, then a summary paragraph."""
    rows: list[Comparison] = []
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    console.print(f"[dim]{os.cpu_count()} CPUs, load average {load} at the start; meshtopo "
                  f"{mt.__version__}[/dim]")
    for title, bench in (("1: local all-reduce against numpy", bench_local),
                         ("2, 3: torch backend against raw torch.distributed", bench_torch)):
        console.print(f"[bold]{title}[/bold]")
        start = time.perf_counter()
        bench(rows)
        console.print(f"[dim]  ({time.perf_counter() - start:.1f} s)[/dim]")
    console.print(comparison_table("meshtopo runtime vs anchors (ratio = meshtopo / anchor)",
                                   rows))
    console.print(summary(rows))


if __name__ == "__main__":
    main()
