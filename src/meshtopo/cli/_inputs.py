"""What the commands that read HLO share: several files and dump directories, and the device
limit.

Each FILE argument is a module file (plain or gzip), ``-`` for stdin, or a directory in XLA's
dump layout (``--xla_dump_to``), which stands for every after-optimisations module in it
(``meshtopo.hlo.module_files``). ``--module NAME|NUMBER`` picks one module of a directory.
A command that reads one module reads, from a directory, its one module holding collectives
(``one_module_file``); the commands that read several fold the modules without collectives
into one line (``folded_line``) unless ``--all`` is given. ``--device-limit`` sets the largest number of devices an input
may ask for (``meshtopo.set_device_limit``) for the one run; ``_commands.run`` restores it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .._errors import InvalidArgumentError
from .._limits import DEFAULT_DEVICE_LIMIT, set_device_limit
from ._options import DEVICE_ASSIGNMENT_HELP, DecimalRange, device_assignment, int_list
from ._render import plural

if TYPE_CHECKING:
    from ..hlo import Module

F = TypeVar("F", bound=Callable[..., Any])

FILES_HELP = ("Each FILE is HLO text or a binary HloProto, HloModuleProto or HloSnapshot "
              "(plain or gzip), - for stdin, or a directory in XLA's dump layout "
              "(--xla_dump_to), read as every after-optimizations module in it; each module "
              "gets its own section.")


FOLDED_NAMES = 6
"""Modules without collectives named in the folded line before ``...``."""


def input_files(paths: tuple[str, ...], module_choice: str | None = None) -> list[str]:
    """Every module file the FILE arguments name, directories expanded, in argument order;
    with ``module_choice`` (``--module``), only that module of each directory."""
    from ..hlo import module_files

    files: list[str] = []
    for path in paths:
        found = module_files(path)
        if module_choice is not None and os.path.isdir(path):
            found = [_chosen(path, found, module_choice)]
        files.extend(found)
    return files


def module_label(file: str) -> str:
    """How a module of a dump directory is named to the user: its name and number
    (``jit_step (0006)``), or the file's name outside XLA's layout."""
    from ..hlo import dumped_module

    dumped = dumped_module(file)
    return os.path.basename(file) if dumped is None else f"{dumped.name} ({dumped.number:04d})"


def _chosen(directory: str, files: list[str], module_choice: str) -> str:
    """The file of ``files`` that ``--module`` names: by module name, or by number."""
    from ..hlo import dumped_module

    number = int(module_choice) if module_choice.isascii() and module_choice.isdigit() else None
    matches = [file for file in files if (dumped := dumped_module(file)) is not None
               and (dumped.name == module_choice or dumped.number == number)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise InvalidArgumentError(
            f"--module {module_choice}: {directory} holds {len(matches)} modules of that name "
            f"({', '.join(module_label(file) for file in matches)}); give its number")
    raise InvalidArgumentError(
        f"--module {module_choice}: no such module after optimizations in {directory}; it holds "
        f"{', '.join(module_label(file) for file in files)}")


def collective_count(file: str) -> int:
    """The collectives ``file`` issues (starts and sync ops; a -done is its start's)."""
    from ..hlo import iter_collectives

    return sum(1 for collective in iter_collectives(file) if collective.is_start)


def one_module_file(path: str, module_choice: str | None) -> str:
    """The one module file a command that reads one module reads from FILE.

    A file (or ``-``) is itself. In a dump directory ``--module`` picks a module by name or
    number; without it the one module holding collectives is read (or the only module). With
    several holding collectives, the refusal lists them with their collective counts, largest
    first."""
    if not os.path.isdir(path):
        if module_choice is not None:
            raise click.UsageError("--module picks a module of a dump directory; FILE is a file")
        return path
    files = input_files((path,), module_choice)
    if module_choice is not None or len(files) == 1:
        return files[0]
    counts = sorted(((collective_count(file), file) for file in files), key=lambda c: -c[0])
    holding = [(count, file) for count, file in counts if count]
    if len(holding) == 1:
        return holding[0][1]
    listed = ", ".join(f"{module_label(file)}: {plural(count, 'collective')}"
                       for count, file in holding or counts)
    what = "modules with collectives" if holding else "modules, none with collectives"
    raise InvalidArgumentError(
        f"{path} holds {len(holding or counts)} {what} ({listed}); this reads one module: "
        "pick it with --module NAME|NUMBER")


def program_spec(spec: str, module_choice: str | None = None) -> tuple[str, list[int]] | None:
    """``FILE@DEVICES`` (one program of an MPMD set) as its module file (a dump directory's
    module picked as ``one_module_file`` does) and its devices; None when ``spec`` has no
    ``@``."""
    path, at, devices = spec.rpartition("@")
    if not at:
        return None
    return one_module_file(path, module_choice), int_list(devices, f"the devices of {path}")


def folded_line(files: Sequence[str]) -> str:
    """``3 more modules without collectives: jit_iota (0000), ... (--all shows them)``."""
    names = [module_label(file) for file in files[:FOLDED_NAMES]]
    more = ", ..." if len(files) > FOLDED_NAMES else ""
    return (f"{plural(len(files), 'more module')} without collectives: {', '.join(names)}{more} "
            "(--all shows them)")


def is_single_file(paths: tuple[str, ...], files: list[str], module_choice: str | None = None
                   ) -> bool:
    """True when one FILE argument names one module: a module file, or the module of a dump
    directory that ``--module`` picks. The commands then print and answer exactly as for one
    module."""
    return len(paths) == 1 and (files == [paths[0]] or module_choice is not None)


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


def module_option(command: F) -> F:
    """The ``--module NAME|NUMBER`` option: one module of a dump directory."""
    return click.option(
        "--module", "module_choice", default=None, metavar="NAME|NUMBER",
        help="In a dump directory, the module to read: its name (jit_step) or number "
             "(6 or 0006).")(command)


def all_option(command: F) -> F:
    """The ``--all`` option of the commands that fold modules without collectives."""
    return click.option(
        "--all", "show_all", is_flag=True,
        help="Show every module of a dump directory, also those without collectives (folded "
             "into one line otherwise).")(command)


def rendezvous_option(command: F) -> F:
    """The ``--rendezvous`` option of the order analysis (``mt.order.analyze``); the commands
    that take it import the order layer anyway."""
    from ..order import RENDEZVOUS

    return click.option(
        "--rendezvous", type=click.Choice(RENDEZVOUS), default="clique",
        help="What meets in the order analysis: 'clique' (default; the n-th collective of each "
             "member on a clique, as NCCL under XLA:GPU) or 'op_id' (XLA:CPU: collectives of "
             "different channel ids never meet).")(command)


def assignment_option(command: F) -> F:
    """``--device-assignment`` (``assignment_spec``) for a command that reads modules."""
    return click.option(
        "--device-assignment", "assignment_spec", default="auto", show_default=True,
        help="auto (the table XLA wrote beside a dump in compile_options.textproto, else "
             "XLA's default placement, said so in the output), or " + DEVICE_ASSIGNMENT_HELP,
    )(command)


def load_placed(path: str, assignment_spec: str = "auto", replica_count: int | None = None,
                num_partitions: int | None = None) -> Module:
    """``meshtopo.hlo.load`` of ``path``; with an ``--device-assignment`` spec other than
    ``auto``, the module's text read again under that table (the text is kept, so a module
    from stdin is placed too)."""
    from ..hlo import load, parse_module

    module = load(path, replica_count=replica_count, num_partitions=num_partitions)
    if assignment_spec == "auto":
        return module
    table = device_assignment(assignment_spec, module.replica_count, module.num_partitions)
    return parse_module(module.text, module.replica_count, module.num_partitions, table,
                        module.source)
