"""Speed of reading per-rank profiler traces (``mt.order.from_profiler_traces`` and
``mt.order.timeline``), against torch's Flight Recorder analyzer on the same entries.

Goals (reported, never asserted):

1. 256 ranks x 2,000 collectives of profiler traces analysed (read, matched, timed) at least
   10x faster than torch's analyzer (``fr_trace``'s read_dir + build_db) takes on the same
   entries written as Flight Recorder dumps (``bench_order.write_dumps``: tp all_reduce, tp
   all_reduce, dp reduce_scatter, world all_reduce, tp = 8). The two sides are interleaved
   (``measure_paired``); best of each and the paired median ratio are printed.
2. Linear growth: the fitted exponent of time in ranks (64, 128, 256 at 2,000 collectives;
   the 256 point is goal 1's) and in collectives (500, 1,000, 2,000 at 64 ranks) at most 1.1
   each.

torch's analyzer takes minutes a call at 256 ranks, so goal 1 runs ``GOAL_ROUNDS`` rounds
and each growth point ``ROUNDS``, without warm-up calls (the traces were just written, so
the files are in the page cache; goal 1's check of the answer runs our side once first).

A trace holds what torch.profiler writes of an NCCL job (``export_chrome_trace``'s layout,
one field a line) around each collective: the operators of a training step
(``_OPERATORS``, 28 with ``record_shapes``' arguments; two launch a kernel: runtime event,
kernel, flow), the ``c10d::`` operator, its ``record_param_comms`` and the NCCL kernel, both
carrying the collective's arguments as torch 2.13 names them (``Collective name``, ``dtype``,
``In msg nelems``, ``Out msg nelems``, ``Group size``, ``In split size``, ``Out split size``,
``Global rank start``/``stride``, ``Process Group Name``/``Description``/``Ranks``,
``Rank``, ``Seq``): 42 events, about 16 KiB, per collective.
"""

from __future__ import annotations

import argparse
import itertools
import sys
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
GOAL_ROUNDS = 2
ROUNDS = 2


# Operators of one training step between two collectives, as torch.profiler records them with
# record_shapes: (name, Input type, Input Dims, Concrete Inputs).
_OPERATORS = (
    ("aten::linear", '["float", "float", "float"]', "[[8, 1024], [1024, 1024], [1024]]", '["", "", ""]'),
    ("aten::t", '["float"]', "[[1024, 1024]]", '[""]'),
    ("aten::transpose", '["float", "Scalar", "Scalar"]', "[[1024, 1024], [], []]", '["", "0", "1"]'),
    ("aten::as_strided", '["float", "ScalarList", "ScalarList", ""]', "[[1024, 1024], [], [], []]", '["", "[1024, 1024]", "[1, 1024]", ""]'),
    ("aten::addmm", '["float", "float", "float", "Scalar", "Scalar"]', "[[1024], [8, 1024], [1024, 1024], [], []]", '["", "", "", "1", "1"]'),
    ("aten::expand", '["float", "ScalarList", "Scalar"]', "[[1024], [], []]", '["", "[8, 1024]", "False"]'),
    ("aten::as_strided", '["float", "ScalarList", "ScalarList", ""]', "[[1024], [], [], []]", '["", "[8, 1024]", "[0, 1]", ""]'),
    ("aten::copy_", '["float", "float", "Scalar"]', "[[8, 1024], [8, 1024], []]", '["", "", "False"]'),
    ("aten::resolve_conj", '["float"]', "[[1024, 1024]]", '[""]'),
    ("aten::relu", '["float"]', "[[8, 1024]]", '[""]'),
    ("aten::clamp_min", '["float", "Scalar"]', "[[8, 1024], []]", '["", "0"]'),
    ("aten::empty", '["ScalarList", "Scalar", "", "", "", ""]', "[[], [], [], [], [], []]", '["[8, 1024]", "6", "", "", "", ""]'),
    ("aten::layer_norm", '["float", "ScalarList", "float", "float", "Scalar", "Scalar"]', "[[8, 1024], [], [1024], [1024], [], []]", '["", "[1024]", "", "", "1e-05", "True"]'),
    ("aten::native_layer_norm", '["float", "ScalarList", "float", "float", "Scalar"]', "[[8, 1024], [], [1024], [1024], []]", '["", "[1024]", "", "", "1e-05"]'),
    ("aten::empty_like", '["float", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"]', "[[8, 1024], [], [], [], [], []]", '["", "", "", "", "", ""]'),
    ("aten::mul", '["float", "float"]', "[[8, 1024], [8, 1024]]", '["", ""]'),
    ("aten::add", '["float", "float", "Scalar"]', "[[8, 1024], [8, 1024], []]", '["", "", "1"]'),
    ("aten::view", '["float", "ScalarList"]', "[[8, 1024], []]", '["", "[8, 8, 128]"]'),
    ("aten::softmax", '["float", "Scalar", ""]', "[[8, 8, 128], [], []]", '["", "-1", ""]'),
    ("aten::_softmax", '["float", "Scalar", "Scalar"]', "[[8, 8, 128], [], []]", '["", "-1", "False"]'),
    ("aten::sum", '["float", "ScalarList", "Scalar", ""]', "[[8, 1024], [], [], []]", '["", "[0]", "False", ""]'),
    ("aten::fill_", '["float", "Scalar"]', "[[8, 1024], []]", '["", "1"]'),
    ("aten::zero_", '["float"]', "[[1024, 1024]]", '[""]'),
    ("aten::add_", '["float", "float", "Scalar"]', "[[1024, 1024], [1024, 1024], []]", '["", "", "1"]'),
    ("aten::mm", '["float", "float"]', "[[1024, 8], [8, 1024]]", '["", ""]'),
    ("aten::div_", '["float", "Scalar"]', "[[1024, 1024], []]", '["", "8"]'),
    ("aten::detach", '["float"]', "[[1024, 1024]]", '[""]'),
    ("detach", '["float"]', "[[1024, 1024]]", '[""]'),
)  # fmt: skip
# Of the operators above, those that launch a kernel: the runtime event, the kernel on the
# compute stream and the flow joining them follow the operator.
_KERNELS = {"aten::addmm": "ampere_sgemm_32x32_sliced1x4_tn", "aten::mm": "ampere_sgemm_128x64_nn"}


def write_traces(directory: Path, ranks: int, entries: int) -> None:
    """One trace per rank, ``rank<r>.pt.trace.json``, with the entries of ``write_dumps``,
    laid out as torch.profiler's ``export_chrome_trace`` writes them (one field a line)."""
    for rank in range(ranks):
        (directory / f"rank{rank}.pt.trace.json").write_text(_trace(rank, ranks, entries))


def _trace(rank: int, ranks: int, entries: int) -> str:
    """One rank's trace: per collective the ``_OPERATORS`` of a step (those of ``_KERNELS``
    launching a kernel: runtime event, flow, kernel), then the ``c10d::`` operator, its
    ``record_param_comms`` and the NCCL kernel, both with the collective's arguments. Each
    kind of collective is one ``%`` template whose numbers (``_Slots``) advance per
    collective."""
    pattern = ("tp", "tp", "dp", "world")
    names = {"tp": str(1 + rank // TP), "dp": str(1 + ranks // TP + rank % TP), "world": "0"}
    members = {"tp": list(range(rank // TP * TP, rank // TP * TP + TP)),
               "dp": list(range(rank % TP, ranks, TP)), "world": list(range(ranks))}
    strides = {"tp": 1, "dp": TP, "world": 1}
    templates = {kind: _collective(rank, ranks, names[kind], members[kind], strides[kind], kind)
                 for kind in set(pattern)}
    seq = dict.fromkeys(pattern, 0)
    blocks = []
    clock = 1_700_000_000.0 + rank * 0.5
    external = correlation = 0
    for record in range(entries):
        kind = pattern[record % 4]
        seq[kind] += 1
        text, slots = templates[kind]
        blocks.append(text % slots.values(clock, external, correlation, seq[kind]))
        clock += 2.0 * len(_OPERATORS) + 100.0
        external += slots.externals
        correlation += slots.correlations
    config = ", ".join(
        f'{{"pg_name": "{names[k]}", "pg_desc": "undefined", "backend_config": "cuda:nccl", '
        f'"pg_size": {len(members[k])}, "ranks": {members[k]}}}' for k in ("world", "tp", "dp"))
    return (
        '{\n  "schemaVersion": 1,\n  "deviceProperties": [],\n'
        f'  "distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": {ranks}, '
        f'"pg_count": 3, "pg_config": [{config}], "nccl_version": "2.21.5"}},\n'
        f'  "record_shapes": 1,\n  "host_name": "node{rank // TP}",\n'
        '  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": 1700000000000000000,\n'
        '  "traceEvents": [\n' + ",\n".join(blocks)
        + f'\n  ],"traceName": "rank{rank}.pt.trace.json" }}')


class _Slots:
    """The numbers of a collective's template, by name: timestamps (offsets from the
    collective's clock), ``External id``s and ``correlation``s (offsets from the counts before
    the collective) and its ``Seq``."""

    def __init__(self) -> None:
        self.offsets: dict[str, tuple[str, float]] = {}
        self.externals = 0
        self.correlations = 0

    def ts(self, offset: float) -> str:
        name = f"t{len(self.offsets)}"
        self.offsets[name] = ("ts", offset)
        return f"%({name}).3f"

    def external(self) -> str:
        self.externals += 1
        self.offsets[f"e{self.externals}"] = ("external", self.externals)
        return f"%(e{self.externals})d"

    def correlation(self, new: bool = True) -> str:
        self.correlations += new
        self.offsets[f"c{self.correlations}"] = ("correlation", self.correlations)
        return f"%(c{self.correlations})d"

    def seq(self) -> str:
        self.offsets["seq"] = ("seq", 0)
        return "%(seq)d"

    def values(self, clock: float, external: int, correlation: int, seq: int
               ) -> dict[str, float]:
        """The numbers of the collective at ``clock`` after ``external`` and ``correlation``
        ids, numbered ``seq`` on its group."""
        base = {"ts": clock, "external": external, "correlation": correlation, "seq": seq}
        return {name: base[kind] + offset if kind != "seq" else seq
                for name, (kind, offset) in self.offsets.items()}


def _collective(rank: int, ranks: int, group: str, members: list[int], stride: int,
                kind: str) -> tuple[str, _Slots]:
    """The template of one collective of ``kind`` on ``group`` and its slots."""
    pid, stream, nccl_stream, device = 4000 + rank, 7, 24, rank % TP
    slots = _Slots()
    events = []
    for number, (name, types, dims, concrete) in enumerate(_OPERATORS):
        external = slots.external()
        events.append(_op(name, pid, slots.ts(2.0 * number), 1.5, external,
                          f'"Concrete Inputs": {concrete}, "Input type": {types}, '
                          f'"Input Strides": {dims}, "Input Dims": {dims}'))
        if name in _KERNELS:
            events.append(_runtime(pid, slots.ts(2.0 * number + 0.5), external,
                                   slots.correlation()))
            events.append(_flow("s", slots.correlation(False), pid, pid,
                                slots.ts(2.0 * number + 0.5)))
            events.append(_kernel(_KERNELS[name], device, stream, slots.ts(2.0 * number + 10),
                                  8.0, external, slots.correlation(False)))
            events.append(_flow("f", slots.correlation(False), device, stream,
                                slots.ts(2.0 * number + 10)))
    name = "_reduce_scatter_base" if kind == "dp" else "allreduce"
    numel = 8 * (ranks // TP) if kind == "dp" else 8
    at = 2.0 * len(_OPERATORS)
    events.append(_op(f"c10d::{name}_", pid, slots.ts(at), 20.0, slots.external(),
                      '"Concrete Inputs": ["", "", "", "", "False", "-1"], '
                      '"Input type": ["TensorList", "", "", "", "Scalar", "Scalar"], '
                      '"Input Strides": [[[1]], [], [], [], [], []], '
                      f'"Input Dims": [[[{numel}]], [], [], [], [], []]'))
    external = slots.external()
    collective = [
        f'"Collective name": "{name}"', '"dtype": "Float"', f'"In msg nelems": {numel}',
        '"Out msg nelems": 8', f'"Group size": {len(members)}', '"In split size": "[]"',
        '"Out split size": "[]"', f'"Global rank start": {members[0]}',
        f'"Global rank stride": {stride}', f'"Process Group Name": "{group}"',
        '"Process Group Description": "undefined"', f'"Process Group Ranks": "{members}"',
        f'"Rank": {rank}']
    events.append(_op("record_param_comms", pid, slots.ts(at + 1), 15.0, external,
                      f'"Concrete Inputs": ["", "", "{rank}", "{name}", "[]", "[]", '
                      f'"{members[0]}", "{stride}", "{len(members)}"], "Input type": ["Scalar", '
                      '"", "Scalar", "", "", "", "Scalar", "Scalar", "Scalar"], "Input Strides": '
                      '[[], [], [], [], [], [], [], [], []], "Input Dims": [[], [], [], [], [], '
                      f'[], [], [], []], {", ".join(collective)}, "Seq": {slots.seq()}'))
    events.append(_runtime(pid, slots.ts(at + 3), external, slots.correlation()))
    events.append(_flow("s", slots.correlation(False), pid, pid, slots.ts(at + 3)))
    kernel = "ReduceScatter" if kind == "dp" else "AllReduce"
    fields = "".join(f",\n      {field}" for field in collective)
    events.append(_kernel(f"ncclDevKernel_{kernel}_Sum_f32_RING_LL(ncclDevKernelArgsStorage"
                          f"<4096ul>)", device, nccl_stream, slots.ts(at + 30), 50.0, external,
                          slots.correlation(False),
                          f'{fields},\n      "Seq": {slots.seq()}'))
    events.append(_flow("f", slots.correlation(False), device, nccl_stream, slots.ts(at + 30)))
    return ",\n".join(events), slots


def _op(name: str, pid: int, ts: str, dur: float, external: str, args: str) -> str:
    """A CPU operator event; ``args`` the fields between ``Record function id`` and ``Ev Idx``."""
    return (f'  {{\n    "ph": "X",\n    "cat": "cpu_op",\n    "name": "{name}",\n    "pid": {pid},\n'
            f'    "tid": {pid},\n    "ts": {ts},\n    "dur": {dur:.3f}\n    ,\n    "args": {{\n'
            f'      "External id": {external},"Record function id": 0, {args}, '
            f'"Ev Idx": {external}\n    }}\n  }}')


def _runtime(pid: int, ts: str, external: str, correlation: str) -> str:
    """A ``cudaLaunchKernel`` runtime event."""
    return (f'  {{\n    "ph": "X",\n    "cat": "cuda_runtime",\n    "name": "cudaLaunchKernel",\n'
            f'    "pid": {pid},\n    "tid": {pid},\n    "ts": {ts},\n    "dur": 4.100\n    ,\n'
            f'    "args": {{\n      "External id": {external},\n      "cbid": 211,\n'
            f'      "correlation": {correlation}\n    }}\n  }}')


def _kernel(name: str, device: int, stream: int, ts: str, dur: float, external: str,
            correlation: str, extra: str = "") -> str:
    """A GPU kernel event; ``extra`` fields (a collective's) after the launch's."""
    return (f'  {{\n    "ph": "X",\n    "cat": "kernel",\n    "name": "{name}",\n    "pid": {device},\n'
            f'    "tid": {stream},\n    "ts": {ts},\n    "dur": {dur:.3f}\n    ,\n    "args": {{\n'
            f'      "External id": {external},\n      "queued": 0,\n      "device": {device},\n'
            f'      "context": 1,\n      "stream": {stream},\n      "correlation": {correlation},\n'
            f'      "registers per thread": 96,\n      "shared memory": 0,\n'
            f'      "blocks per SM": 0.024691,\n      "warps per SM": 0.098765,\n'
            f'      "grid": [2, 1, 1],\n      "block": [128, 1, 1],\n'
            f'      "est. achieved occupancy %%": 0{extra}\n    }}\n  }}')


def _flow(phase: str, correlation: str, pid: int, tid: int, ts: str) -> str:
    """One end (``s`` at the launch, ``f`` at the kernel) of a launch-to-kernel flow."""
    end = ',\n    "bp": "e"' if phase == "f" else ""
    return (f'  {{\n    "ph": "{phase}",\n    "id": {correlation},\n    "pid": {pid},\n'
            f'    "tid": {tid},\n    "ts": {ts},\n    "cat": "ac2g",\n    "name": "ac2g"{end}\n  }}')


def analyse(directory: Path) -> int:
    """Read, match and time the traces; the count of timed collectives."""
    report, traces = mt.order.from_profiler_traces([directory])
    return len(mt.order.timeline(traces).timings) + len(report.findings)


def _fit(points: list[tuple[float, float]]) -> float:
    x = np.log([p[0] for p in points])
    y = np.log([p[1] for p in points])
    return float(np.polyfit(x, y, 1)[0])


def _alone(ranks: int, entries: int) -> float:
    """Our best seconds on ``ranks`` x ``entries`` (``ROUNDS`` rounds after a warm-up)."""
    with tempfile.TemporaryDirectory() as name:
        write_traces(Path(name), ranks, entries)
        figure = measure_paired(lambda: analyse(Path(name)), lambda: None, rounds=ROUNDS,
                                warm_up=False).first
    console.print(f"{ranks} ranks x {entries} collectives: {seconds(figure)}")
    return figure


def bench_goal(ranks: int, entries: int) -> tuple[list[Comparison], float]:
    """Goal 1 at ``ranks`` x ``entries``: the comparison (none without torch) and our best."""
    with tempfile.TemporaryDirectory() as traces_dir, tempfile.TemporaryDirectory() as dumps_dir:
        traces, dumps = Path(traces_dir), Path(dumps_dir)
        write_traces(traces, ranks, entries)
        write_dumps(dumps, ranks, entries)
        size = sum(p.stat().st_size for p in traces.iterdir())
        report, ranked = mt.order.from_profiler_traces([traces])
        assert report.findings == [], report.findings[:1]
        assert len(mt.order.timeline(ranked).timings) == entries // 4 * (2 * ranks // TP + TP + 1)
        anchor = torch_analyzer(dumps)  # the analyzer itself, run on every call
        paired = measure_paired(lambda: analyse(traces), anchor or (lambda: None),
                                rounds=GOAL_ROUNDS, warm_up=False)  # the check above warmed
    console.print(f"{ranks} ranks x {entries} collectives ({size / 2**30:.1f} GiB of traces): "
                  f"{seconds(paired.first)}")
    if anchor is None:
        return [], paired.first
    console.print(f"profiler traces {ranks} ranks x {entries} collectives against torch's "
                  f"analyzer on the same entries as dumps: {paired.text()}")
    return [Comparison("1", f"profiler traces {ranks} x {entries}", paired.first,
                       "torch fr_trace", paired.second, 0.1,
                       f"paired median {paired.median_ratio:.4f} over {paired.rounds} rounds")
            ], paired.first


def bench_growth(rank_sizes: tuple[int, ...], entry_sizes: tuple[int, ...], at_goal: float
                 ) -> tuple[float, float]:
    """Goal 2: the fitted exponents in ranks (at the most collectives; ``at_goal`` is the
    largest point's figure) and in collectives (at the fewest ranks)."""
    by_ranks = [(r, _alone(r, entry_sizes[-1])) for r in rank_sizes[:-1]]
    by_ranks.append((rank_sizes[-1], at_goal))
    by_entries = [(e, _alone(rank_sizes[0], e)) for e in entry_sizes[:-1]]
    by_entries.append((entry_sizes[-1], by_ranks[0][1]))
    for (low, a), (high, b) in itertools.pairwise(by_ranks):
        console.print(f"ranks {low} -> {high}: exponent {_fit([(low, a), (high, b)]):.3f}")
    for (low, a), (high, b) in itertools.pairwise(by_entries):
        console.print(f"collectives {low} -> {high}: exponent {_fit([(low, a), (high, b)]):.3f}")
    return _fit(by_ranks), _fit(by_entries)


def main(argv: list[str] | None = None) -> None:
    """Run both goals and print the table, the exponents and the summary."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_traces")
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    args = parser.parse_args(argv or [])
    if args.quick:
        rows, at_goal = bench_goal(64, 400)
        exponents = bench_growth((16, 32, 64), (100, 200, 400), at_goal)
    else:
        rows, at_goal = bench_goal(*GOAL_SIZE)
        exponents = bench_growth(RANK_SIZES, ENTRY_SIZES, at_goal)
    console.print(comparison_table("profiler traces", rows))
    met = "met" if max(exponents) <= 1.1 else "MISSED"
    console.print(f"Exponents: in ranks {exponents[0]:.3f}, in collectives {exponents[1]:.3f} "
                  f"(goal <= 1.1 each; {met})")
    console.print(summary_text(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
