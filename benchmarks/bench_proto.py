"""Binary HLO reading speed: ``mt.hlo.load`` of a module's ``HloProto`` against its text.

Run with ``python -m benchmarks.bench_proto``. The modules are real: the ``jit(grad)`` of the
transformer of ``bench_hlo`` (FSDP x TP on a 2 x 4 mesh) at ``LAYERS`` layers each (32: about
2.6 MB of text; 128: about 10.8 MB), compiled in a child process with
``--xla_dump_hlo_as_text --xla_dump_hlo_as_proto``, so the two files of a size are one
compilation. Both sides read their file from disk to a ``Module`` (every collective decoded;
the proto's instruction texts, and its computations that hold no collective, are made on
first use, so not by the load). Each round times both sides, in alternating order, each
with the collector's work on what it made (``_timing.sample``). The best wall time of each
side, the median over rounds of the per-round ratio proto / text (paired: drift hits both
sides of a round) with its spread, and the same for CPU time (``time.process_time``: the
machine may be shared) are printed, with the load average before and after. Goal: a proto reads at least as fast as its text (paired median of wall times
<= 1).
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import meshtopo as mt
from benchmarks._timing import Comparison, comparison_table, console, sample, seconds
from benchmarks.bench_hlo import _REAL_DUMP

LAYERS = (32, 128)
ROUNDS = {32: 11, 128: 7}


def dumped_module(directory: str, layers: int) -> tuple[Path, Path] | None:
    """(text, proto) of the largest module after optimisations the real program of
    ``layers`` layers dumps into ``directory``, or None when jax is unavailable."""
    flags = (f"--xla_force_host_platform_device_count=8 --xla_dump_to={directory} "
             "--xla_dump_hlo_as_text --xla_dump_hlo_as_proto")
    env = {**os.environ, "XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}
    try:
        subprocess.run([sys.executable, "-c", _REAL_DUMP, str(layers)], capture_output=True,
                       text=True, timeout=900, env=env, check=True)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        print(f"  real dump unavailable: {str(error)[:200]}")
        return None
    proto = max(Path(directory).glob("*after_optimizations.hlo.pb"), key=lambda p: p.stat().st_size)
    return proto.with_name(proto.name.removesuffix(".hlo.pb") + ".txt"), proto


@dataclass(frozen=True)
class Rounds:
    """Per-round seconds of two functions timed in alternation: wall and CPU time of each."""

    wall: list[tuple[float, float]]
    cpu: list[tuple[float, float]]

    @staticmethod
    def ratios(pairs: list[tuple[float, float]]) -> list[float]:
        return sorted(a / b for a, b in pairs)

    def text(self, pairs: list[tuple[float, float]]) -> str:
        """``best a vs best b; paired median r (spread lo-hi over n rounds)``."""
        ratios = self.ratios(pairs)
        return (f"best {seconds(min(a for a, _ in pairs))} vs "
                f"{seconds(min(b for _, b in pairs))}; paired median "
                f"{ratios[len(ratios) // 2]:.3f} (spread {ratios[0]:.3f}-{ratios[-1]:.3f} "
                f"over {len(ratios)} rounds)")

    def median(self, pairs: list[tuple[float, float]]) -> float:
        ratios = self.ratios(pairs)
        return ratios[len(ratios) // 2]


def measure_rounds(first: Callable[[], object], second: Callable[[], object],
                   rounds: int) -> Rounds:
    """Time ``first()`` and ``second()`` in alternation for ``rounds`` rounds after one warm-up
    call each, the order within a round alternating. Each call is timed as ``_timing``'s
    ``sample`` times them: its result dropped and the collector's work on what it made counted."""
    first(), second()
    wall: list[tuple[float, float]] = []
    cpu: list[tuple[float, float]] = []
    gc.collect()
    for number in range(rounds):
        walls, cpus = [0.0, 0.0], [0.0, 0.0]
        for side in ((0, 1) if number % 2 == 0 else (1, 0)):
            walls[side], cpus[side] = sample(first if side == 0 else second)
        wall.append((walls[0], walls[1]))
        cpu.append((cpus[0], cpus[1]))
    return Rounds(wall, cpu)


@dataclass(frozen=True)
class PairedComparison(Comparison):
    """A comparison whose ratio is the paired median of per-round ratios, not best / best."""

    paired: float = 1.0

    @property
    def ratio(self) -> float:
        return self.paired


def _load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def bench(layers: int, rows: list[Comparison]) -> None:
    """Dump the ``layers``-layer module and time both of its files."""
    with tempfile.TemporaryDirectory() as directory:
        found = dumped_module(directory, layers)
        if found is None:
            return
        text, proto = found
        module = mt.hlo.load(proto)
        console.print(f"{layers} layers, {proto.name}: {len(module.instructions):,} "
                      f"instructions, {len(module.collectives)} collectives; proto "
                      f"{proto.stat().st_size:,} B, text {text.stat().st_size:,} B")
        del module
        before = _load()
        measured = measure_rounds(lambda: mt.hlo.load(proto), lambda: mt.hlo.load(text),
                                  ROUNDS[layers])
    console.print(f"  wall, proto vs text: {measured.text(measured.wall)}")
    console.print(f"  CPU,  proto vs text: {measured.text(measured.cpu)}")
    console.print(f"  [dim]load average {before} before, {_load()} after[/dim]")
    for kind, pairs, goal in (("wall", measured.wall, 1.0), ("CPU", measured.cpu, float("inf"))):
        spread = measured.ratios(pairs)
        rows.append(PairedComparison(
            "proto", f"load of a real {layers}-layer module: HloProto vs its text, {kind} time",
            min(a for a, _ in pairs), "the same module's text", min(b for _, b in pairs), goal,
            f"ratio: paired median, spread {spread[0]:.3f}-{spread[-1]:.3f}"
            + ("" if goal < float("inf") else "; reported, no goal"),
            measured.median(pairs)))


def main() -> None:
    rows: list[Comparison] = []
    console.print(f"[dim]{os.cpu_count()} CPUs, load average {_load()} at the start[/dim]")
    for layers in LAYERS:
        bench(layers, rows)
    console.print(comparison_table("Binary HLO (ratio = paired median of proto / text)", rows))


if __name__ == "__main__":
    main()
