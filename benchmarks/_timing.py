"""Timing and reporting shared by the benchmark modules.

``measure_all`` takes the best of several ``time.perf_counter`` samples after one warm-up call,
interleaving the functions it compares; a fast call is repeated inside each sample so that a
sample lasts a few milliseconds, and the figure is per call. Every sample counts the work the
cyclic garbage collector does for the objects the calls made (``sample``): a result whose
objects only the collector can free costs its caller that collection, and a call that leaves
its collection for later is not faster. ``Comparison`` records one measurement against its
anchor and the goal ratio; ``comparison_table`` and ``summary`` print them.
"""

from __future__ import annotations

import gc
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

console = Console(width=None if sys.stdout.isatty() else 132, highlight=False)

_SAMPLE_SECONDS = 0.005


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the best sample and the first (cold) call, over ``samples`` samples
    of ``calls`` calls each."""

    best: float
    first: float
    samples: int
    calls: int


def sample(function: Callable[[], object], calls: int = 1) -> tuple[float, float]:
    """Wall and CPU seconds per call of ``calls`` calls of ``function()``, the collector's
    work on the objects they made included. Everything alive before the sample is frozen
    (set aside from collection), the calls run with the collector as the caller has it, and
    a full collection ends the sample (timed): it walks only what the calls made. So a call
    that turns the collector off and leaves the collection for later, or whose results are
    in reference cycles only the collector frees, pays for it here as its caller would; the
    heap before the sample (with jax imported, hundreds of thousands of objects) is walked
    by no side."""
    gc.freeze()
    try:
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(calls):
            function()
        gc.collect()
        return ((time.perf_counter() - start) / calls,
                (time.process_time() - start_cpu) / calls)
    finally:
        gc.unfreeze()


def measure(function: Callable[[], object], repeat: int = 5) -> Timing:
    """Time ``function()`` alone: see ``measure_all``."""
    return measure_all({"function": function}, repeat)["function"]


def measure_all(
    functions: Mapping[str, Callable[[], object]], repeat: int = 5, budget: float = 0.25
) -> dict[str, Timing]:
    """Time several functions side by side: one warm-up call each, then rounds in which each
    function takes one sample in turn; each figure is its best sample.

    Interleaving means a burst of load from elsewhere on the machine hits every function
    alike. There are at least ``repeat`` rounds, more (up to 50) while the rounds fit in about
    ``budget`` seconds, so fast calls get many samples. A full garbage collection runs once
    before the rounds; each sample counts the collector's work on what its calls made
    (``sample``), and results are dropped at once, so memory holds one at a time.
    """
    first: dict[str, float] = {}
    calls: dict[str, int] = {}
    for name, function in functions.items():
        start = time.perf_counter()
        function()
        first[name] = elapsed = time.perf_counter() - start
        calls[name] = (
            1
            if elapsed >= _SAMPLE_SECONDS
            else max(1, min(100_000, int(_SAMPLE_SECONDS / max(elapsed, 1e-7))))
        )
    round_seconds = sum(first[name] * calls[name] for name in functions)
    rounds = max(repeat, min(50, int(budget / max(round_seconds, 1e-9))))
    best = dict.fromkeys(functions, float("inf"))
    gc.collect()  # each sample starts from a heap without garbage (its own collection ends it)
    for _ in range(rounds):
        for name, function in functions.items():
            best[name] = min(best[name], sample(function, calls[name])[0])
    return {
        name: Timing(best=best[name], first=first[name], samples=rounds, calls=calls[name])
        for name in functions
    }


@dataclass(frozen=True)
class Paired:
    """Two functions timed in alternation: each one's best seconds per call, the medians
    over rounds of the ratio ``first / second`` and of the difference ``first - second``
    within a round, and the spread of the ratios (lowest and highest)."""

    first: float
    second: float
    median_ratio: float
    rounds: int
    median_difference: float
    low_ratio: float
    high_ratio: float

    def text(self) -> str:
        """``best a vs best b; paired median r (spread lo-hi over n rounds)``."""
        return (f"best {seconds(self.first)} vs {seconds(self.second)}; paired median "
                f"{self.median_ratio:.3f} (spread {self.low_ratio:.3f}-{self.high_ratio:.3f} "
                f"over {self.rounds} rounds)")


def measure_paired(first: Callable[[], object], second: Callable[[], object],
                   rounds: int = 5, min_seconds: float = 0.0,
                   warm_up: bool = True) -> Paired:
    """Time ``first()`` and ``second()`` in alternation for ``rounds`` rounds (after one
    warm-up call each unless ``warm_up`` is False, for calls of minutes that warm nothing;
    the order within a round alternates too), each turn counting the collector's work on what
    it made (``sample``): the paired median cancels drift that hits both sides of a round.
    A side whose warm-up call took less than ``min_seconds`` is called enough times in a row
    each round to last about that long, and its figure is per call: a call of a few hundred
    microseconds is otherwise timed as much by the scheduler as by its own work. Without a
    warm-up each side is called once a round."""
    calls = [1, 1]
    if warm_up:
        for side, function in enumerate((first, second)):
            start = time.perf_counter()
            function()
            elapsed = time.perf_counter() - start
            calls[side] = max(1, math.ceil(min_seconds / max(elapsed, 1e-7)))
    times: list[tuple[float, float]] = []
    gc.collect()
    for number in range(rounds):
        pair = [0.0, 0.0]
        order = (0, 1) if number % 2 == 0 else (1, 0)
        for side in order:
            pair[side] = sample(first if side == 0 else second, calls[side])[0]
        times.append((pair[0], pair[1]))
    ratios = sorted(a / b for a, b in times)
    differences = sorted(a - b for a, b in times)
    return Paired(min(a for a, _ in times), min(b for _, b in times),
                  ratios[len(ratios) // 2], rounds, differences[len(differences) // 2],
                  ratios[0], ratios[-1])


def seconds(value: float) -> str:
    """``value`` seconds in a readable unit (s, ms, µs, ns)."""
    if value >= 1:
        return f"{value:.3f} s"
    if value >= 1e-3:
        return f"{value * 1e3:.2f} ms"
    if value >= 1e-6:
        return f"{value * 1e6:.2f} µs"
    return f"{value * 1e9:.0f} ns"


@dataclass(frozen=True)
class Comparison:
    """One figure against its anchor. ``ratio`` is figure / anchor (each side's best); the
    goal is met when the ratio is at most ``goal`` (a goal of 0.25 means "at least 4x faster
    than the anchor") and so is ``median``, the paired median of figure / anchor over
    interleaved rounds, where the two were timed so."""

    goal_id: str
    case: str
    figure: float
    anchor_name: str
    anchor: float
    goal: float
    note: str = ""
    median: float | None = None

    @property
    def ratio(self) -> float:
        return self.figure / self.anchor if self.anchor > 0 else float("inf")

    @property
    def met(self) -> bool:
        return self.ratio <= self.goal and (self.median is None or self.median <= self.goal)

    def goal_text(self) -> str:
        if self.goal < 1:
            return f"≤ {self.goal:.3g}× ({1 / self.goal:.3g}× faster)"
        return f"≤ {self.goal:g}×"

    def ratio_text(self) -> str:
        ratio = self.ratio
        if ratio < 1:
            return f"{ratio:.3f}× ({1 / ratio:.1f}× faster)"
        return f"{ratio:.2f}×"


def comparison_table(title: str, rows: Sequence[Comparison]) -> Table:
    """A table of ``rows``: case, figure, anchor, ratio, goal, met."""
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("goal", no_wrap=True)
    table.add_column("case")
    table.add_column("meshtopo", justify="right", no_wrap=True)
    table.add_column("anchor")
    table.add_column("anchor time", justify="right", no_wrap=True)
    table.add_column("ratio", justify="right", no_wrap=True)
    table.add_column("goal ratio", no_wrap=True)
    table.add_column("met", justify="center")
    for row in rows:
        table.add_row(
            row.goal_id,
            row.case + (f" [dim]({row.note})[/dim]" if row.note else ""),
            seconds(row.figure),
            row.anchor_name,
            seconds(row.anchor),
            row.ratio_text(),
            row.goal_text(),
            "[green]yes[/green]" if row.met else "[red]NO[/red]",
        )
    return table


def summary(rows: Sequence[Comparison]) -> str:
    """One paragraph naming every ratio and whether its goal is met."""
    parts = [
        f"{row.goal_id} {row.case}: {seconds(row.figure)} vs {row.anchor_name} "
        f"{seconds(row.anchor)} = {row.ratio_text()} (goal {row.goal_text()}, "
        f"{'met' if row.met else 'MISSED'})"
        for row in rows
    ]
    missed = sum(not row.met for row in rows)
    verdict = f"{len(rows) - missed} of {len(rows)} goals met"
    return f"Summary: {verdict}. " + "; ".join(parts) + "."
