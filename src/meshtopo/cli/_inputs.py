"""What the commands that read HLO share: several files and dump directories, and the device
limit.

Each FILE argument is a module file (plain or gzip), ``-`` for stdin, or a directory in XLA's
dump layout (``--xla_dump_to``), which stands for every after-optimisations module in it
(``meshtopo.hlo.module_files``). ``--device-limit`` sets the largest number of devices an input
may ask for (``meshtopo.set_device_limit``) for the one run; ``_commands.run`` restores it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from .._limits import DEFAULT_DEVICE_LIMIT, set_device_limit
from ._options import DecimalRange

F = TypeVar("F", bound=Callable[..., Any])

FILES_HELP = ("Each FILE is HLO text (plain or gzip), - for stdin, or a directory in XLA's "
              "dump layout (--xla_dump_to), read as every after-optimizations module in it; "
              "each module gets its own section.")


def input_files(paths: tuple[str, ...]) -> list[str]:
    """Every module file the FILE arguments name, directories expanded, in argument order."""
    from ..hlo import module_files

    files: list[str] = []
    for path in paths:
        files.extend(module_files(path))
    return files


def is_single_file(paths: tuple[str, ...], files: list[str]) -> bool:
    """True when one FILE argument names one module file (not a directory): the commands then
    print and answer exactly as for one module."""
    return len(paths) == 1 and files == [paths[0]]


def _set_limit(ctx: click.Context, param: click.Parameter, value: int | None) -> None:
    if value is not None:
        set_device_limit(value)


def device_limit_option(command: F) -> F:
    """The ``--device-limit N`` option, applied before any input is read."""
    return click.option(
        "--device-limit", type=DecimalRange(min=1), default=None, expose_value=False,
        is_eager=True, callback=_set_limit,
        help=f"Largest number of devices (ids in a group list, cells in a grid) an input may "
             f"ask for; default {DEFAULT_DEVICE_LIMIT}.")(command)


def rendezvous_option(command: F) -> F:
    """The ``--rendezvous`` option of the order analysis (``mt.order.analyze``); the commands
    that take it import the order layer anyway."""
    from ..order import RENDEZVOUS

    return click.option(
        "--rendezvous", type=click.Choice(RENDEZVOUS), default="clique",
        help="What meets in the order analysis: 'clique' (default; the n-th collective of each "
             "member on a clique, as NCCL under XLA:GPU) or 'op_id' (XLA:CPU: collectives of "
             "different channel ids never meet).")(command)
