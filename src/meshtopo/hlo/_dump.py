"""Module files in XLA's dump layout: what ``--xla_dump_to=DIR`` writes, one file per stage.

XLA names each dumped module ``module_NNNN.NAME.<stage>.txt`` (NNNN the module's unique id,
zero-padded), with a directory ``module_NNNN.NAME/`` beside it on newer versions. The module
after optimisations is ``module_NNNN.NAME.after_optimizations.txt``, with the platform before
the stage on backends that write one (``cpu_after_optimizations.txt``,
``sm_8.0_gpu_after_optimizations.txt``). With ``--xla_dump_hlo_as_proto`` the same module is
also (or only) ``...after_optimizations.hlo.pb``, a binary ``HloProto``; with
``--xla_dump_hlo_snapshots`` each run of it is ``module_NNNN.NAME.snapshot.K.pb``, an
``HloSnapshot`` of the module after optimisations and the run's arguments. A module written
in several forms is listed once: as its text, else its ``HloProto``, else its first
snapshot. The other files (``before_optimizations``,
``...after_optimizations-buffer-assignment.txt``, ``debug_options``, object code) are not
modules after optimisation.

>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> for name in ("module_0004.jit_f.cpu_after_optimizations.txt",
...              "module_0004.jit_f.before_optimizations.txt",
...              "module_0000.jit_g.cpu_after_optimizations.txt",
...              "module_0004.jit_f.cpu_after_optimizations-buffer-assignment.txt"):
...     open(os.path.join(d, name), "w").close()
>>> [os.path.basename(p) for p in module_files(d)]
['module_0000.jit_g.cpu_after_optimizations.txt', 'module_0004.jit_f.cpu_after_optimizations.txt']

``single_module_file`` is what ``load`` and ``iter_collectives`` read a path through: a
directory stands for its one module after optimisations, and one with several is refused.
"""

from __future__ import annotations

import os
import re
from typing import IO, NamedTuple, overload

from .._errors import InvalidArgumentError

Source = str | os.PathLike[str] | IO[bytes] | IO[str]
NAMES_SHOWN = 3

AFTER_OPTIMIZATIONS = re.compile(
    r"module_(\d+)\.(.+?)\.(?:(?:[A-Za-z0-9_.]*_)?after_optimizations\.(txt|hlo\.pb)"
    r"|snapshot\.-?[0-9]+\.pb)\Z")
# Which file stands for a module written in several forms: the lowest rank.
_RANK = {"txt": 0, "hlo.pb": 1, None: 2}


class DumpedModule(NamedTuple):
    """A module file in XLA's dump layout: its unique id (``NNNN``) and name (``jit_step``)."""

    number: int
    name: str
    file: str


def dumped_module(file: str | os.PathLike[str]) -> DumpedModule | None:
    """``module_0006.jit_step.cpu_after_optimizations.txt`` -> ``(6, 'jit_step', file)``; None
    for a file not named as XLA names a module after optimisations."""
    match = AFTER_OPTIMIZATIONS.match(os.path.basename(os.fspath(file)))
    if match is None:
        return None
    return DumpedModule(int(match.group(1)), match.group(2), os.fspath(file))


def module_files(path: str | os.PathLike[str]) -> list[str]:
    """The HLO module files ``path`` names: a file (or ``'-'``) is itself; a directory in
    XLA's dump layout gives every after-optimisations module in it, by module id then name.

    A directory without such a file is an ``InvalidArgumentError`` naming it; a path that
    does not exist is left to the reader (which names it).
    """
    text = os.fspath(path)
    if text == "-" or not os.path.isdir(text):
        return [text]
    found: dict[tuple[int, str], tuple[int, str, str]] = {}
    with os.scandir(text) as entries:
        for entry in entries:
            match = AFTER_OPTIMIZATIONS.match(entry.name)
            if match is None or not entry.is_file():
                continue
            module = (int(match.group(1)), match.group(2))
            kept = (_RANK[match.group(3)], entry.name, entry.path)
            found[module] = min(found.get(module, kept), kept)
    if not found:
        raise InvalidArgumentError(
            f"{text}: no module after optimizations found (expected XLA's dump layout, "
            "module_NNNN.NAME.after_optimizations.txt or .hlo.pb, or "
            "module_NNNN.NAME.snapshot.K.pb, as --xla_dump_to writes)")
    return [found[module][2] for module in sorted(found)]


@overload
def single_module_file(source: str | os.PathLike[str]) -> str | os.PathLike[str]: ...
@overload
def single_module_file(source: Source) -> Source: ...
def single_module_file(source: Source) -> Source:
    """``source`` itself unless it is a directory; a directory in XLA's dump layout that holds
    exactly one module after optimisations gives that module's file (so the
    ``compile_options.textproto`` beside it is found). A directory with several is an
    ``InvalidArgumentError`` saying how many and naming the first few."""
    if not isinstance(source, (str, os.PathLike)):
        return source
    directory = os.fspath(source)
    if not os.path.isdir(directory):
        return source
    files = module_files(directory)
    if len(files) == 1:
        return files[0]
    names = [os.path.basename(f) for f in files[:NAMES_SHOWN]]
    more = ", ..." if len(files) > NAMES_SHOWN else ""
    raise InvalidArgumentError(
        f"{directory} holds {len(files)} modules after optimizations "
        f"({', '.join(names)}{more}); this reads one module: name its file")
