"""Speed of the order analysis through loops: a loop's iterations expanded per device cost
no more than the same collectives written out straight.

Goals (reported, never asserted):

1. ``mt.order.analyze`` of an SPMD module on 2,048 devices with 500 collectives in a
   100-iteration ``while`` (a counted loop, ``known_trip_count`` as XLA writes it) costs at
   most 1.2x the analysis of the same 50,000 collectives written out straight. The two sides
   alternate in every round; best and paired median reported.
2. The loop's cost exponent is at most 1.1 in devices (512 to 2,048 at 100 iterations) and in
   iterations (25 to 100 on 2,048 devices).
"""

from __future__ import annotations

import argparse

import numpy as np

import meshtopo as mt
from benchmarks._timing import Comparison, comparison_table, console, measure_paired, seconds

DEVICES = 2048
COLLECTIVES = 500
ITERATIONS = 100
DEVICE_SIZES = (512, 1024, 2048)
ITERATION_SIZES = (25, 50, 100)


def _groups(devices: int) -> tuple[str, str, str]:
    side = devices // 256
    return (f"[{devices // side},{side}]<=[{side},16,16]T(1,2,0)",
            f"[{devices // 16},16]<=[{side},16,16]T(0,2,1)",
            f"[{devices // 16},16]<=[{devices}]")


def _collectives(devices: int, count: int, first: str) -> tuple[list[str], str]:
    """``count`` all-reduces over a (devices/256) x 16 x 16 mesh's three axes in turn, each
    reducing the last; the lines and the last one's name."""
    axes = _groups(devices)
    lines, previous = [], first
    for i in range(count):
        lines.append(f"  %ar_{i} = f32[256]{{0}} all-reduce(%{previous}), channel_id=1, "
                     f"replica_groups={axes[i % 3]}, use_global_device_ids=true, to_apply=%add")
        previous = f"ar_{i}"
    return lines, previous


_HEAD = ["%add (x: f32[], y: f32[]) -> f32[] {", "  %x = f32[] parameter(0)",
         "  %y = f32[] parameter(1)", "  ROOT %s = f32[] add(%x, %y)", "}"]


def loop_module(devices: int, collectives: int, iterations: int) -> mt.hlo.Module:
    """``collectives`` all-reduces in the body of a ``while`` of ``iterations`` iterations."""
    body, last = _collectives(devices, collectives, "v")
    state = "(s32[], f32[256]{0})"
    lines = [
        f"HloModule loop, num_partitions={devices}", *_HEAD,
        f"%cond (s: {state}) -> pred[] {{", f"  %s = {state} parameter(0)",
        "  %i = s32[] get-tuple-element(%s), index=0",
        f"  %n = s32[] constant({iterations})",
        "  ROOT %lt = pred[] compare(%i, %n), direction=LT", "}",
        f"%body (t: {state}) -> {state} {{", f"  %t = {state} parameter(0)",
        "  %j = s32[] get-tuple-element(%t), index=0",
        "  %v = f32[256]{0} get-tuple-element(%t), index=1", *body,
        "  %one = s32[] constant(1)", "  %k = s32[] add(%j, %one)",
        f"  ROOT %u = {state} tuple(%k, %{last})", "}",
        "ENTRY %main (p: f32[256]) -> f32[256] {", "  %p = f32[256]{0} parameter(0)",
        "  %zero = s32[] constant(0)", f"  %init = {state} tuple(%zero, %p)",
        f"  %w = {state} while(%init), condition=%cond, body=%body, "
        f'backend_config={{"known_trip_count":{{"n":"{iterations}"}}}}',
        "  ROOT %out = f32[256]{0} get-tuple-element(%w), index=1", "}"]
    return mt.hlo.parse_module("\n".join(lines))


def straight_module(devices: int, collectives: int) -> mt.hlo.Module:
    """``collectives`` all-reduces in the entry computation, one after another."""
    body, last = _collectives(devices, collectives, "p")
    lines = [f"HloModule straight, num_partitions={devices}", *_HEAD,
             "ENTRY %main (p: f32[256]) -> f32[256] {", "  %p = f32[256]{0} parameter(0)",
             *body, f"  ROOT %out = f32[256]{{0}} copy(%{last})", "}"]
    return mt.hlo.parse_module("\n".join(lines))


def _fit(points: list[tuple[float, float]]) -> float:
    x = np.log([p[0] for p in points])
    y = np.log([p[1] for p in points])
    return float(np.polyfit(x, y, 1)[0])


def _best(module: mt.hlo.Module, rounds: int) -> float:
    return measure_paired(lambda: mt.order.analyze(module), lambda: None, rounds).first


def main(argv: list[str] | None = None) -> None:
    """Run the comparison and the two scaling fits; print the table and the exponents."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_order_loops")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv or [])
    loop = loop_module(DEVICES, COLLECTIVES, ITERATIONS)
    straight = straight_module(DEVICES, COLLECTIVES * ITERATIONS)
    report = mt.order.analyze(loop)
    assert report.findings == [] and len(report.schedule(0, taken_only=True)) == (
        COLLECTIVES * ITERATIONS)
    paired = measure_paired(lambda: mt.order.analyze(loop), lambda: mt.order.analyze(straight),
                            args.rounds)
    console.print(
        f"{COLLECTIVES} collectives x {ITERATIONS} iterations on {DEVICES} devices: loop "
        f"{seconds(paired.first)}, straight {seconds(paired.second)} (best of {paired.rounds}); "
        f"paired median loop/straight {paired.median_ratio:.3f} (goal <= 1.2)")
    console.print(comparison_table("order analysis through loops", [
        Comparison("1", f"{COLLECTIVES} in a {ITERATIONS}-iteration loop, {DEVICES} devices",
                   paired.first, f"{COLLECTIVES * ITERATIONS} written out", paired.second,
                   1.2, f"paired median {paired.median_ratio:.3f}")]))
    by_devices = [(d, _best(loop_module(d, COLLECTIVES, ITERATIONS), args.rounds))
                  for d in DEVICE_SIZES]
    by_iterations = [(n, _best(loop_module(DEVICES, COLLECTIVES, n), args.rounds))
                     for n in ITERATION_SIZES]
    for label, points in (("devices", by_devices), ("iterations", by_iterations)):
        spelled = ", ".join(f"{x}: {seconds(t)}" for x, t in points)
        console.print(f"exponent in {label}: {_fit(points):.3f} (goal <= 1.1; {spelled})")


if __name__ == "__main__":
    main()
