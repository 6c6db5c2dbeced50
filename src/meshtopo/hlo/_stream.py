"""``iter_collectives``: the collectives of a big dump, read block by block.

The file is read in blocks (default 8 MB), cut again where top-level statements end
(``_statements.statement_pieces``: a statement longer than a block waits for the blocks it
needs), and the pieces are read by the same reader as ``parse_module`` (``_reader``), which
takes the next one between statements: no statement reaches it cut, so what is accepted,
refused and found is the same as for the whole text. Memory is bounded by one block (and
the megabyte of it being cut, with its tokens), the names of the current computation's
instructions (to check operands as XLA does), and what the collectives themselves hold, not
by the file. Differences from
``parse_module``, all documented on the collective:

- an operand's shape is known when written inline or defined among the 4,096 instructions
  before it (otherwise ``operand_shapes`` has None there and ``bytes`` uses the result where
  the sizes agree);
- the module's name comes from the header line, or for a module without one from its entry
  computation once the whole text is read.

When ``progress`` is None a rich progress bar is drawn on stderr if stderr is a terminal.
"""

from __future__ import annotations

import os
import sys
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator
from typing import IO

from numpy.typing import ArrayLike

from .._errors import HloParseError
from ..groups._placement import DeviceAssignment
from ._assignment import check_assignment
from ._collective import ASYNC_OPCODES, COLLECTIVE_OPCODES, Collective
from ._compile_options import AssignmentSource, CompileOptions, placement_for, table_file
from ._decode import DecodeCache
from ._dump import single_module_file
from ._input import HloInput, open_input
from ._link import Linker
from ._module import (
    ModuleHeader,
    ModuleScope,
    collective_decoder,
    parse_module,
    resolve_counts,
)
from ._reader import Reader
from ._statements import statement_pieces
from ._structure import Instruction

BLOCK_SIZE = 8 << 20
RECENT_DEFINITIONS = 1 << 12


class CollectiveStream(Iterator[Collective]):
    """The iterator ``iter_collectives`` returns: the collectives, and the module header once
    it has been read (after the first ``next()``, or at the end for a dump without
    collectives).

    ``header`` is the ``ModuleHeader`` as written; ``replica_count``/``num_partitions`` are
    the counts the collectives use (the header's, the dump table's, or the overrides) and
    ``device_assignment`` the table their ``device_groups()`` use, None until the header has
    been read. ``device_assignment_source`` is ``"given"``, ``"dump"`` or ``"default"``.
    """

    def __init__(
        self, collectives: Callable[[CollectiveStream], Generator[Collective, None, None]]
    ) -> None:
        self.header: ModuleHeader | None = None
        self.device_assignment: DeviceAssignment | None = None
        self.device_assignment_source: AssignmentSource = "default"
        self.compile_options: CompileOptions | None = None
        self.replica_count: int | None = None
        self.num_partitions: int | None = None
        self._collectives = collectives(self)

    def __iter__(self) -> CollectiveStream:
        return self

    def __next__(self) -> Collective:
        return next(self._collectives)

    def close(self) -> None:
        """Stop reading and close the input (also done at the end and on garbage collection)."""
        self._collectives.close()


def iter_text_collectives(
    source: str | os.PathLike[str] | IO[bytes] | IO[str],
    replica_count: int | None,
    num_partitions: int | None,
    progress: bool | None,
    block_size: int,
    device_assignment: DeviceAssignment | ArrayLike | None,
) -> CollectiveStream:
    """Every collective of an HLO text in text order, read block by block (the public
    ``iter_collectives`` of ``_files`` reads binary protos too and passes text here).

    ``source`` is a path (plain or gzip), ``'-'`` for stdin, an open file (bytes or text), or
    a dump directory holding one module after optimisations (as ``load`` takes it).
    Counts default to the header's; keyword overrides win. The device table is chosen as
    ``load`` chooses it (the one given, else the dump's ``compile_options.textproto``, else
    XLA's default). Errors as in ``parse_module``. The returned ``CollectiveStream`` also
    tells the header, the counts and the table's source once read; each collective tells its
    counts too (``replica_count``, ``num_partitions``).
    """
    source = single_module_file(source)
    table, assignment_source, options = placement_for(source, device_assignment)
    if table is not None and assignment_source == "dump":
        replica_count = table.replica_count if replica_count is None else replica_count
        num_partitions = table.computation_count if num_partitions is None else num_partitions
    hlo_input = open_input(source)
    name = hlo_input.name

    def collectives(stream: CollectiveStream) -> Generator[Collective, None, None]:
        bar = _Bar(name, hlo_input.size) if (progress or (progress is None and sys.stderr.isatty())) else None
        try:
            yield from _blocks(hlo_input, replica_count, num_partitions, block_size, bar,
                               stream, table)
        except HloParseError as error:
            if error.source is None:
                raise HloParseError(error.message, error.line, error.column, name) from None
            raise
        finally:
            if bar is not None:
                bar.stop()
            hlo_input.close()

    stream = CollectiveStream(collectives)
    stream.device_assignment_source = assignment_source
    stream.compile_options = options
    return stream


class _StreamScope(ModuleScope):
    """A ``ModuleScope`` that keeps no computations: the roots of those read so far
    (``keep_root``), and no definitions (each collective's operand shapes are resolved as it
    is read)."""

    def __init__(self, replica_count: int, num_partitions: int,
                 assignment: DeviceAssignment | None) -> None:
        super().__init__(replica_count, num_partitions, assignment)
        self.let_go([])
        self.root_collectives: dict[str, Collective] = {}

    def root_collective(self, name: str) -> Collective | None:
        return self.root_collectives.get(name)


def _blocks(
    hlo_input: HloInput,
    replica_count: int | None,
    num_partitions: int | None,
    block_size: int,
    bar: _Bar | None,
    stream: CollectiveStream,
    table: DeviceAssignment | None,
) -> Iterator[Collective]:
    def blocks() -> Iterator[str]:
        while chunk := hlo_input.read(block_size):
            if bar is not None:
                bar.advance(len(chunk.encode("utf-8", "replace")))
            yield chunk

    name = hlo_input.name
    recent: OrderedDict[str, str] = OrderedDict()
    reader = Reader("", name, statement_pieces(blocks()),
                    lambda computation, operand: recent.get(operand), parse_module)
    try:
        yield from _collectives(reader, recent, replica_count, num_partitions, stream, table)
    except HloParseError as raised:
        error = reader.reported(raised)
        if error is raised:
            raise
        raise error from None


def _collectives(
    reader: Reader,
    recent: OrderedDict[str, str],
    replica_count: int | None,
    num_partitions: int | None,
    stream: CollectiveStream,
    table: DeviceAssignment | None,
) -> Iterator[Collective]:
    """The collectives ``reader`` reads, linked as they come; ``recent`` holds the shapes of
    the instructions read last (``Reader``'s definitions)."""
    record = reader.header()
    header = ModuleHeader(record)
    r, p = resolve_counts(header, replica_count, num_partitions)
    stream.replica_count, stream.num_partitions = r, p
    if record.name is not None:
        stream.header = header
    if table is not None:
        check_assignment(table, r, p, f"module {header.name}",
                         table_file(stream.device_assignment_source, stream.compile_options))
    scope = _StreamScope(r, p, table)
    stream.device_assignment = scope.default_assignment()
    linker = Linker(scope.root_collective, scope.wrapped)
    cache = DecodeCache()
    decode = collective_decoder(scope, cache, lambda collective: None)
    entry, marked = None, False
    count = 0
    while (computation := reader.computation_head()) is not None:
        count += 1
        recent.clear()
        for run in reader.instruction_runs(computation, decode, COLLECTIVE_OPCODES):
            for instruction in run:
                if instruction.collective is not None:
                    _resolve_operands(instruction, recent)
                    yield from linker.link([instruction.collective])
                recent[instruction.name] = instruction.shape_text
                if len(recent) > RECENT_DEFINITIONS:
                    recent.popitem(last=False)
        for read in [*reader.take_inline(), computation] if reader.inline else (computation,):
            root = read.root
            if root is not None:
                scope.keep_root(read.name, root)
                if root.collective is not None and root.opcode not in ASYNC_OPCODES:
                    scope.root_collectives[read.name] = root.collective
        if computation.is_entry or not marked:
            entry, marked = computation.name, computation.is_entry
    if count == 0:
        raise reader.error("expects a computation (the module has none)", len(reader.text))
    if stream.header is None:
        header.name = f"module_{entry}"
        stream.header = header


def _resolve_operands(instruction: Instruction, recent: OrderedDict[str, str]) -> None:
    """Record the operands' shapes from their recent definitions while they are known."""
    if not instruction.operands:
        return
    inline = instruction.inline_shapes or (None,) * len(instruction.operands)
    instruction.inline_shapes = tuple(
        shape if shape is not None else (recent.get(name) or None)
        for name, shape in zip(instruction.operands, inline, strict=True))


class _Bar:
    """A rich progress bar on stderr, advanced by bytes read."""

    def __init__(self, name: str, total: int | None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

        self._progress = Progress(
            "[progress.description]{task.description}", BarColumn(), DownloadColumn(),
            TransferSpeedColumn(), transient=True, console=Console(stderr=True))
        self._task = self._progress.add_task(f"reading {os.path.basename(name)}", total=total)
        self._progress.start()

    def advance(self, amount: int) -> None:
        self._progress.advance(self._task, amount)

    def stop(self) -> None:
        self._progress.stop()
