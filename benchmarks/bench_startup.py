"""Start-up: a fresh interpreter running a meshtopo entry point, beside one importing numpy.

Goals (reported, never asserted), each a difference of wall time against
``python -c "import numpy"`` in a fresh process, the two run in alternation:

1. ``python -c "import meshtopo"``: at most 0.10 s more.
2. ``meshtopo --help`` (``python -m meshtopo --help``): at most 0.15 s more.
3. ``meshtopo expand "[4,2]<=[2,4]T(1,0)"``: at most 0.15 s more.

The child processes write and use bytecode caches, as an installed package does. Each row
prints the best time of each side and the paired median difference (the median over
rounds of meshtopo's time minus numpy's in the same round), which is what the goal judges,
and the same paired median of the children's CPU time (user + system), which load from
elsewhere on the machine stretches far less than wall time.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from rich.table import Table

import meshtopo
from benchmarks._timing import console, measure_paired, seconds

ROUNDS = 15
TIMEOUT = 60.0
CASES = (
    ("import meshtopo", ("-c", "import meshtopo"), 0.10),
    ("meshtopo --help", ("-m", "meshtopo", "--help"), 0.15),
    ("meshtopo expand", ("-m", "meshtopo", "expand", "[4,2]<=[2,4]T(1,0)"), 0.15),
)
ANCHOR = ("-c", "import numpy")


def _environment() -> dict[str, str]:
    """This environment, with the meshtopo this process imported first on the path, and
    bytecode caches written and used as in an installed package (the warm-up run writes them),
    whatever ``PYTHONDONTWRITEBYTECODE`` says here."""
    source = str(Path(meshtopo.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    environment = {key: value for key, value in os.environ.items()
                   if key != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPATH"] = source if not path else f"{source}{os.pathsep}{path}"
    return environment


def _runner(arguments: tuple[str, ...], environment: dict[str, str],
            cpu: list[float]) -> Callable[[], None]:
    """A call that runs ``python ARGUMENTS`` to its end (refused past ``TIMEOUT``) and appends
    the child's CPU seconds (user + system) to ``cpu``."""
    def run() -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, *arguments], env=environment, check=True,
                       stdout=subprocess.DEVNULL, timeout=TIMEOUT)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return run


def _signed(value: float) -> str:
    """``value`` seconds with its sign: ``+12.30 ms``, ``-1.20 ms``."""
    return ("-" if value < 0 else "+") + seconds(abs(value))


def _paired_median(first: list[float], second: list[float]) -> float:
    """The median over rounds of ``first - second`` (the warm-up call of each left out)."""
    differences = sorted(a - b for a, b in zip(first[1:], second[1:], strict=True))
    return differences[len(differences) // 2]


def main(argv: list[str] | None = None) -> None:
    """Time each case against the numpy import and print the table and a summary."""
    environment = _environment()
    table = Table(title="Start-up against python -c 'import numpy' (fresh processes, "
                  f"{ROUNDS} interleaved rounds)", title_justify="left")
    for column in ("case", "meshtopo best", "numpy best", "paired median difference", "goal",
                   "met", "CPU: paired median difference"):
        table.add_column(column, justify="left" if column == "case" else "right")
    verdicts = []
    for name, arguments, goal in CASES:
        cpu: tuple[list[float], list[float]] = ([], [])
        paired = measure_paired(_runner(arguments, environment, cpu[0]),
                                _runner(ANCHOR, environment, cpu[1]), rounds=ROUNDS)
        met = paired.median_difference <= goal
        cpu_difference = _paired_median(*cpu)
        verdicts.append(f"{name} {_signed(paired.median_difference)} "
                        f"({'met' if met else 'MISSED'}; CPU {_signed(cpu_difference)})")
        table.add_row(name, seconds(paired.first), seconds(paired.second),
                      _signed(paired.median_difference), f"≤ +{seconds(goal)}",
                      "[green]yes[/green]" if met else "[red]NO[/red]",
                      _signed(cpu_difference))
    console.print(table)
    console.print("Summary: " + "; ".join(verdicts) + ".")
