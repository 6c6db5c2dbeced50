"""Timing and reporting shared by the benchmark modules.

``measure`` takes the best of several ``time.perf_counter`` samples after one warm-up call; a
fast call is repeated inside each sample so that a sample lasts a few milliseconds, and the
figure is per call. ``Comparison`` records one measurement against its anchor and the goal
ratio; ``comparison_table`` and ``summary`` print them.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable, Sequence
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


def measure(function: Callable[[], object], repeat: int = 5) -> Timing:
    """Time ``function()``: one warm-up call, then the best of ``repeat`` samples.

    Garbage collection runs before each sample and is off during it; each call's result is
    dropped before the next call, so memory holds at most one result at a time.
    """
    start = time.perf_counter()
    function()
    first = time.perf_counter() - start
    calls = (
        1
        if first >= _SAMPLE_SECONDS
        else max(1, min(100_000, int(_SAMPLE_SECONDS / max(first, 1e-7))))
    )
    best = float("inf")
    enabled = gc.isenabled()
    try:
        for _ in range(repeat):
            gc.collect()
            gc.disable()
            start = time.perf_counter()
            for _ in range(calls):
                function()
            elapsed = (time.perf_counter() - start) / calls
            if enabled:
                gc.enable()
            best = min(best, elapsed)
    finally:
        if enabled:
            gc.enable()
    return Timing(best=best, first=first, samples=repeat, calls=calls)


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
    """One figure against its anchor. ``ratio`` is figure / anchor; the goal is met when the
    ratio is at most ``goal`` (a goal of 0.25 means "at least 4x faster than the anchor")."""

    goal_id: str
    case: str
    figure: float
    anchor_name: str
    anchor: float
    goal: float
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.figure / self.anchor if self.anchor > 0 else float("inf")

    @property
    def met(self) -> bool:
        return self.ratio <= self.goal

    def goal_text(self) -> str:
        if self.goal < 1:
            return f"≤ {self.goal:g}× ({1 / self.goal:g}× faster)"
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
