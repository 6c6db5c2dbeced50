"""Speed of reading per-rank profiler traces (``mt.order.from_profiler_traces`` and
``mt.order.timeline``), against torch's Flight Recorder analyzer on the same entries.

Goals (reported, never asserted):

1. 256 ranks x 2,000 collectives of profiler traces analysed (read, matched, timed) at least
   10x faster than torch's analyzer (``fr_trace``'s read_dir + build_db) takes on the same
   entries written as Flight Recorder dumps (``bench_order.write_dumps``: tp all_reduce, tp
   all_reduce, dp reduce_scatter, world all_reduce, tp = 8). The two sides are interleaved
   (``measure_paired``); best of each and the paired median ratio are printed.
2. Linear growth: the fitted exponent of time in ranks (64, 128, 256 at 2,000 collectives)
   and in collectives (500, 1,000, 2,000 at 256 ranks) at most 1.1 each.

A trace holds what a trace of an NCCL job holds per collective: the CPU
``record_param_comms`` event, the GPU kernel event carrying the same collective arguments
(``Collective name``, ``Process Group Name``/``Ranks``, ``Seq``, msg nelems, ``dtype``), and
the ``c10d::`` operator around them.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

import meshtopo as mt
from benchmarks._timing import Comparison, comparison_table, console, measure_paired, seconds
from benchmarks._timing import summary as summary_text
from benchmarks.bench_order import TP, torch_analyzer, write_dumps

GOAL_SIZE = (256, 2000)
RANK_SIZES = (64, 128, 256)
ENTRY_SIZES = (500, 1000, 2000)
ROUNDS = 3


def write_traces(directory: Path, ranks: int, entries: int) -> None:
    """One trace per rank, ``rank<r>.pt.trace.json``, with the entries of ``write_dumps``."""
    dp = ranks // TP
    pattern = ("tp", "tp", "dp", "world")
    for rank in range(ranks):
        names = {"tp": str(1 + rank // TP), "dp": str(1 + ranks // TP + rank % TP),
                 "world": "0"}
        members = {"tp": list(range(rank // TP * TP, rank // TP * TP + TP)),
                   "dp": list(range(rank % TP, ranks, TP)), "world": list(range(ranks))}
        seq = {"tp": 0, "dp": 0, "world": 0}
        events: list[dict[str, object]] = []
        clock = 1000.0 + rank * 0.5
        for record in range(entries):
            kind = pattern[record % 4]
            seq[kind] += 1
            name = "_reduce_scatter_base" if kind == "dp" else "allreduce"
            numel = 8 * dp if kind == "dp" else 8
            args = {"Collective name": name, "dtype": "Float", "In msg nelems": numel,
                    "Out msg nelems": 8, "Group size": len(members[kind]),
                    "Process Group Name": names[kind], "Process Group Description": "undefined",
                    "Process Group Ranks": str(members[kind]), "Seq": seq[kind]}
            events.append({"ph": "X", "cat": "cpu_op", "name": f"c10d::{name}_", "pid": rank,
                           "tid": 1, "ts": clock, "dur": 20.0,
                           "args": {"External id": record, "Sequence number": 0}})
            events.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms",
                           "pid": rank, "tid": 1, "ts": clock + 1, "dur": 15.0, "args": args})
            events.append({"ph": "X", "cat": "kernel",
                           "name": f"ncclDevKernel_{name}(ncclDevKernelArgsStorage<4096ul>)",
                           "pid": 0, "tid": 7, "ts": clock + 30, "dur": 50.0,
                           "args": {**args, "device": rank % TP, "stream": 7,
                                    "correlation": record}})
            clock += 100.0
        trace = {"schemaVersion": 1, "host_name": f"node{rank // TP}",
                 "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": ranks,
                                     "pg_config": [{"pg_name": names[k], "pg_desc": "undefined",
                                                    "ranks": members[k]} for k in
                                                   ("world", "tp", "dp")]},
                 "traceEvents": events}
        (directory / f"rank{rank}.pt.trace.json").write_text(json.dumps(trace))


def analyse(directory: Path) -> int:
    """Read, match and time the traces; the count of timed collectives."""
    report, traces = mt.order.from_profiler_traces([directory])
    return len(mt.order.timeline(traces).timings) + len(report.findings)


def _fit(points: list[tuple[float, float]]) -> float:
    x = np.log([p[0] for p in points])
    y = np.log([p[1] for p in points])
    return float(np.polyfit(x, y, 1)[0])


def _alone(directory: Path) -> float:
    return measure_paired(lambda: analyse(directory), lambda: None, rounds=ROUNDS).first


def bench_goal(ranks: int, entries: int) -> list[Comparison]:
    """Goal 1 at ``ranks`` x ``entries``."""
    with tempfile.TemporaryDirectory() as traces_dir, tempfile.TemporaryDirectory() as dumps_dir:
        traces, dumps = Path(traces_dir), Path(dumps_dir)
        write_traces(traces, ranks, entries)
        write_dumps(dumps, ranks, entries)
        report, ranked = mt.order.from_profiler_traces([traces])
        assert report.findings == [], report.findings[:1]
        assert len(mt.order.timeline(ranked).timings) == entries // 4 * (2 * ranks // TP + TP + 1)
        anchor = torch_analyzer(dumps)  # the analyzer itself, run on every call
        if anchor is None:
            return []
        paired = measure_paired(lambda: analyse(traces), anchor, rounds=ROUNDS)
    console.print(f"profiler traces {ranks} ranks x {entries} collectives: best "
                  f"{seconds(paired.first)}; torch's analyzer on the same entries as dumps: best "
                  f"{seconds(paired.second)}; paired median ratio {paired.median_ratio:.4f} "
                  f"(goal <= 0.1)")
    return [Comparison("1", f"profiler traces {ranks} x {entries}", paired.first,
                       "torch fr_trace", paired.second, 0.1)]


def bench_growth(rank_sizes: tuple[int, ...], entry_sizes: tuple[int, ...]
                 ) -> tuple[float, float]:
    """Goal 2: the fitted exponents in ranks and in collectives."""
    by_ranks, by_entries = [], []
    for ranks in rank_sizes:
        with tempfile.TemporaryDirectory() as name:
            write_traces(Path(name), ranks, entry_sizes[-1])
            figure = _alone(Path(name))
        by_ranks.append((ranks, figure))
        console.print(f"{ranks} ranks x {entry_sizes[-1]} collectives: {seconds(figure)}")
    for entries in entry_sizes:
        with tempfile.TemporaryDirectory() as name:
            write_traces(Path(name), rank_sizes[-1], entries)
            figure = _alone(Path(name))
        by_entries.append((entries, figure))
        console.print(f"{rank_sizes[-1]} ranks x {entries} collectives: {seconds(figure)}")
    return _fit(by_ranks), _fit(by_entries)


def main(argv: list[str] | None = None) -> None:
    """Run both goals and print the table, the exponents and the summary."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_traces")
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    args = parser.parse_args(argv or [])
    if args.quick:
        rows = bench_goal(32, 400)
        exponents = bench_growth((16, 32, 64), (100, 200, 400))
    else:
        rows = bench_goal(*GOAL_SIZE)
        exponents = bench_growth(RANK_SIZES, ENTRY_SIZES)
    console.print(comparison_table("profiler traces", rows))
    met = "met" if max(exponents) <= 1.1 else "MISSED"
    console.print(f"Exponents: in ranks {exponents[0]:.3f}, in collectives {exponents[1]:.3f} "
                  f"(goal <= 1.1 each; {met})")
    console.print(summary_text(rows))


if __name__ == "__main__":
    main()
