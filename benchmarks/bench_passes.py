"""Speed of ``Module.to_text()`` and the async-collective passes.

Goals (reported, never asserted):

1. ``to_text()`` of a scheduled 20,000-collective module (all-reduce, all-gather and
   collective-permute in a chain) no slower than jaxlib printing the same module
   (``HloModule.to_string()`` of jaxlib's parse of the same text): ratio <= 1.
2. ``async_collective_creator`` (everything converted) and ``convert_async_collectives_to_sync``
   (on the creator's output) at 5,000, 10,000 and 20,000 collectives: time per instruction,
   with the fitted exponent of time in module size at most 1.1 each. The anchor of each row
   is jaxlib parsing the pass's output (``hlo_module_from_text``), which the pass's own
   reading back stands beside (goal: within 10x of it; the pass includes our own reading of
   its output through ``parse_module``).
"""

from __future__ import annotations

import numpy as np

import meshtopo as mt
from benchmarks._timing import Comparison, comparison_table, console, measure, summary

SIZES = (5000, 10000, 20000)
CONVERT = {"all-reduce", "all-gather", "collective-permute"}


def module_text(collectives: int) -> str:
    """A scheduled module of ``collectives`` collectives on 8 partitions, each feeding the
    next: all-reduce, all-gather (then a slice back) and collective-permute in turn."""
    lines = ["HloModule bench, is_scheduled=true, num_partitions=8",
             "%add (x: f32[], y: f32[]) -> f32[] {", "  %x = f32[] parameter(0)",
             "  %y = f32[] parameter(1)", "  ROOT %s = f32[] add(%x, %y)", "}",
             "ENTRY %main (p: f32[1024]) -> f32[1024] {", "  %p = f32[1024]{0} parameter(0)"]
    previous = "p"
    for i in range(collectives):
        kind = i % 3
        if kind == 0:
            lines.append(f"  %v{i} = f32[1024]{{0}} all-reduce(%{previous}), channel_id={i + 1}, "
                         f"replica_groups={{{{0,1,2,3}},{{4,5,6,7}}}}, use_global_device_ids=true, "
                         f"to_apply=%add")
        elif kind == 1:
            lines.append(f"  %g{i} = f32[2048]{{0}} all-gather(%{previous}), channel_id={i + 1}, "
                         f"replica_groups=[4,2]<=[8], dimensions={{0}}, use_global_device_ids=true")
            lines.append(f"  %v{i} = f32[1024]{{0}} slice(%g{i}), slice={{[0:1024]}}")
        else:
            lines.append(f"  %v{i} = f32[1024]{{0}} collective-permute(%{previous}), "
                         f"channel_id={i + 1}, source_target_pairs={{{{0,1}},{{1,2}},{{2,3}},{{3,0}}}}")
        previous = f"v{i}"
    lines[-1] = "  ROOT " + lines[-1].lstrip()
    return "\n".join([*lines, "}", ""])


def _fit(points: list[tuple[int, float]]) -> float:
    x = np.log([p[0] for p in points])
    y = np.log([p[1] for p in points])
    return float(np.polyfit(x, y, 1)[0])


def _passes_at(size: int) -> tuple[int, float, int, float, float]:
    """(instructions, creator seconds, instructions after it, to-sync seconds, jaxlib parse
    seconds of the creator's output) on the module of ``size`` collectives."""
    import jaxlib._hlo as jax_hlo  # type: ignore[import-not-found]

    module = mt.hlo.parse_module(module_text(size))
    split = mt.hlo.passes.async_collective_creator(module, convert=CONVERT)
    split_text = split.to_text()
    created = measure(lambda: mt.hlo.passes.async_collective_creator(module, convert=CONVERT),
                      repeat=3).best
    synced = measure(lambda: mt.hlo.passes.convert_async_collectives_to_sync(split),
                     repeat=3).best
    read = measure(lambda: jax_hlo.hlo_module_from_text(split_text), repeat=3).best
    return len(module.instructions), created, len(split.instructions), synced, read


def main(argv: list[str] | None = None) -> None:
    """Run both benchmarks and print the table, the exponents and the summary."""
    import jaxlib._hlo as jax_hlo  # type: ignore[import-not-found]

    text = module_text(SIZES[-1])
    module = mt.hlo.parse_module(text)
    parsed = jax_hlo.hlo_module_from_text(text)
    rows = [Comparison("1", f"to_text, {SIZES[-1]} collectives "
                            f"({len(module.instructions)} instructions)",
                       measure(module.to_text, repeat=3).best, "jaxlib to_string",
                       measure(parsed.to_string, repeat=3).best, 1.0)]
    creator_points: list[tuple[int, float]] = []
    sync_points: list[tuple[int, float]] = []
    for size in SIZES:
        count, created, split_count, synced, read = _passes_at(size)
        creator_points.append((count, created))
        sync_points.append((split_count, synced))
        rows.append(Comparison("2", f"async_collective_creator, {count} instructions",
                               created, "jaxlib parse of the result", read, 10.0,
                               note=f"{created / count * 1e6:.2f} µs/instruction"))
        rows.append(Comparison("2", f"convert_async_collectives_to_sync, {split_count} "
                               "instructions", synced, "jaxlib parse of the input", read, 10.0,
                               note=f"{synced / split_count * 1e6:.2f} µs/instruction"))
    creator, sync = _fit(creator_points), _fit(sync_points)
    console.print(comparison_table("passes", rows))
    console.print(f"Exponents in module size: async_collective_creator {creator:.3f}, "
                  f"convert_async_collectives_to_sync {sync:.3f} (goal <= 1.1 each; "
                  f"{'met' if max(creator, sync) <= 1.1 else 'MISSED'})")
    console.print(summary(rows))


if __name__ == "__main__":
    main()
