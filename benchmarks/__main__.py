"""Run the benchmark modules: every ``benchmarks/bench_*.py`` in name order, in one process.

Usage::

    python -m benchmarks                  # every module
    python -m benchmarks hlo              # every module except bench_hlo
    python -m benchmarks --only math      # only bench_math (--only may repeat)

A module is named with or without its ``bench_`` prefix and ``.py`` suffix. A module that fails
to import or raises is reported and the others still run; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback
from pathlib import Path

from benchmarks._timing import console

_HERE = Path(__file__).resolve().parent


def discover() -> list[str]:
    """The benchmark module names (``bench_math``, ...) next to this file, in name order."""
    return sorted(path.stem for path in _HERE.glob("bench_*.py"))


def _normalise(name: str) -> str:
    stem = Path(name).name.removesuffix(".py")
    return stem if stem.startswith("bench_") else f"bench_{stem}"


def select(available: list[str], skip: list[str], only: list[str]) -> list[str]:
    """``available`` restricted to ``only`` (when given) and without ``skip``.

    Unknown names are refused with ``SystemExit`` naming the modules that exist.
    """
    wanted = [_normalise(name) for name in only]
    unwanted = [_normalise(name) for name in skip]
    unknown = [name for name in wanted + unwanted if name not in available]
    if unknown:
        raise SystemExit(
            f"unknown benchmark module(s) {', '.join(unknown)}; "
            f"available: {', '.join(available) or 'none'}"
        )
    chosen = [name for name in available if not wanted or name in wanted]
    return [name for name in chosen if name not in unwanted]


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, run the chosen modules' ``main()`` in order; 0 when all of them ran."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.splitlines()[0]
    )
    parser.add_argument("skip", nargs="*", metavar="NAME", help="modules to skip")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this module (repeatable)",
    )
    args = parser.parse_args(argv)
    names = select(discover(), args.skip, args.only)
    failed: list[str] = []
    started = time.perf_counter()
    for name in names:
        console.rule(f"[bold]benchmarks.{name}")
        module_start = time.perf_counter()
        try:
            module = importlib.import_module(f"benchmarks.{name}")
            entry = getattr(module, "main", None)
            if not callable(entry):
                raise TypeError(f"benchmarks.{name} has no main()")
            entry()
        except Exception:
            failed.append(name)
            console.print(f"[red]benchmarks.{name} failed:[/red]")
            console.print(traceback.format_exc(), markup=False, highlight=False)
        console.print(f"[dim]benchmarks.{name}: {time.perf_counter() - module_start:.1f} s[/dim]")
    console.rule()
    total = time.perf_counter() - started
    status = f"failed: {', '.join(failed)}" if failed else "all ran"
    console.print(f"{len(names)} benchmark module(s) in {total:.1f} s; {status}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
