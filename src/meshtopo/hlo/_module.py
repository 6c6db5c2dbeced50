"""``Module``: an HLO module read from text; ``parse_module`` and ``load``.

``parse_module`` reads the whole text through the one reader (``_reader``) as one piece
(the stream, ``_stream``, hands the same reader pieces cut where statements end; a whole text
ends where its last statement does, so it needs no cutting): the header (or
none: counts from the keywords, defaulting to 1), every computation and every instruction,
and decodes every collective as it is met, so any text XLA's parser refuses is an
``HloParseError`` with line and column, whatever the entry point. ``load`` reads a file; a
module in XLA's dump layout takes its device table and counts from the
``compile_options.textproto`` XLA wrote beside it (``_compile_options``).
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Mapping
from typing import IO

from numpy.typing import ArrayLike

from .._collector import paused
from .._errors import HloParseError, InvalidArgumentError
from ..groups._placement import DeviceAssignment
from ._assignment import as_assignment, check_assignment, count
from ._collective import ASYNC_OPCODES, COLLECTIVE_OPCODES, Collective, CollectiveScope
from ._compile_options import AssignmentSource, CompileOptions, placement_for, table_file
from ._decode import DecodeCache, decode_collective
from ._dump import single_module_file
from ._input import open_input
from ._link import Linker
from ._printer import module_text
from ._reader import HeaderRecord, Reader
from ._structure import Computation, Instruction
from ._values import flat_value, parse_bool, parse_int


class ModuleHeader:
    """The ``HloModule name, key=value, ...`` line: name, counts, scheduling and raw attributes
    (a module written without the line gets its name from the entry computation)."""

    def __init__(self, record: HeaderRecord) -> None:
        self.name = record.name if record.name is not None else "module_"
        self.attributes = {a.key: a.value for a in record.attributes}
        self.line = record.line
        self.has_header_line = record.name is not None
        self.stack_frames = record.frames
        self.replica_count = 1
        self.num_partitions = 1
        self.is_scheduled = False
        for key, value, line, column in record.attributes:
            if key in ("replica_count", "num_partitions"):
                number = parse_int(flat_value(value), key, line, column)
                if number < 1:
                    raise HloParseError(f"{key} must be at least 1, got {number}", line, column)
                setattr(self, key, number)
            elif key == "is_scheduled":
                self.is_scheduled = parse_bool(value.strip(), key, line, column)


def resolve_counts(
    header: ModuleHeader, replica_count: int | None, num_partitions: int | None
) -> tuple[int, int]:
    """The header's counts, with the keyword overrides winning when given (any integral value
    but a bool, at least 1; else ``InvalidArgumentError``)."""
    r = header.replica_count if replica_count is None else count(replica_count, "replica_count")
    p = (header.num_partitions if num_partitions is None
         else count(num_partitions, "num_partitions"))
    return r, p


class ModuleScope:
    """What the collectives of a module ask of it: counts, placement, computation roots,
    definitions, and the collectives async wrappers stand for.

    While the module is read, roots and definitions are looked up in ``computations``. Once
    it is read, ``let_go`` keeps the answers its collectives can ask for and drops the
    computations: a collective then reaches no computation, so a module no one holds any
    more is freed at once by reference counting, not left to the cyclic collector (a 10 MB
    module is some 160,000 objects). Only each collective and its instruction, which refer
    to each other, wait for the collector."""

    def __init__(self, replica_count: int, num_partitions: int,
                 assignment: DeviceAssignment | None) -> None:
        self.replica_count = replica_count
        self.num_partitions = num_partitions
        self.computations: dict[str, Computation] = {}
        self.wrapped: dict[str, Collective] = {}
        self._assignment = assignment
        # the roots kept once the computations are let go (None: look them up)
        self._roots: dict[str, tuple[str, str] | None] | None = None
        self._definitions: dict[str, dict[str, str | None]] = {}  # computation -> name -> shape

    def default_assignment(self) -> DeviceAssignment:
        """The table given to the reader, else XLA's default placement (built on first use)."""
        if self._assignment is None:
            self._assignment = DeviceAssignment.default(self.replica_count, self.num_partitions)
        return self._assignment

    def computation_root(self, name: str) -> tuple[str, str] | None:
        """(root opcode, root element type) of computation ``name``, if it exists."""
        if self._roots is not None:
            return self._roots.get(name)
        computation = self.computations.get(name)
        root = computation.root if computation is not None else None
        return None if root is None else _root_facts(root)

    def keep_root(self, name: str, root: Instruction) -> None:
        """Keep what a collective can ask of computation ``name``'s ``root``, for a scope
        that has let go of its computations (or, streaming, never holds them)."""
        assert self._roots is not None, "keep_root is for a scope that has let go"
        self._roots[name] = _root_facts(root)

    def root_collective(self, name: str) -> Collective | None:
        """The collective at the root of computation ``name`` (not an async wrapper), while
        the module is read."""
        computation = self.computations.get(name)
        root = computation.root if computation is not None else None
        found = root.collective if root is not None else None
        return None if found is None or found.opcode in ASYNC_OPCODES else found

    def definition(self, computation: str, name: str) -> str | None:
        """The shape text of instruction ``name`` of ``computation`` (None when unknown)."""
        if self._roots is not None:
            return self._definitions.get(computation, {}).get(name)
        found = self.computations.get(computation)
        instruction = found.by_name.get(name) if found is not None else None
        return None if instruction is None or not instruction.shape_text else instruction.shape_text

    def let_go(self, collectives: list[Collective],
               read_root: Callable[[str], Instruction | None] | None = None,
               shapes_read: Callable[[str], Mapping[str, str] | None] | None = None) -> None:
        """Keep the roots and operand definitions ``collectives`` (every collective read,
        linked) can ask for, and stop holding the computations. ``read_root(name)``, when
        given, is the root of computation ``name`` as the reader read it (None when it did
        not), and ``shapes_read(name)`` the shape text of each of its instructions by name
        (None when not kept), so that a computation read again on use is not read again for
        its root or its collectives' operands."""
        roots: dict[str, tuple[str, str] | None] = dict(self._roots or {})
        definitions = self._definitions
        for to_apply, instruction in map(_ASKS, collectives):
            if to_apply is not None and to_apply not in roots:
                root = None if read_root is None else read_root(to_apply)
                roots[to_apply] = (self.computation_root(to_apply) if root is None
                                   else _root_facts(root))
            computation, operands, inline = _OPERANDS(instruction)
            kept = definitions.get(computation)
            if kept is None:
                kept = definitions[computation] = {}
            shapes = None if shapes_read is None else shapes_read(computation)
            for index, name in enumerate(operands):
                if name not in kept and (not inline or inline[index] is None):
                    kept[name] = (self.definition(computation, name) if shapes is None
                                  else shapes.get(name) or None)
        self._roots = roots
        self.computations = {}


_ASKS = operator.attrgetter("to_apply", "instruction")
_OPERANDS = operator.attrgetter("computation", "operands", "inline_shapes")


def _root_facts(root: Instruction) -> tuple[str, str]:
    """A root's opcode and element type (empty for a shape without one, such as a tuple)."""
    bracket = root.shape_text.find("[")
    return root.opcode, root.shape_text[:bracket] if bracket > 0 else ""


class Module:
    """An HLO module: header values, computations and collectives.

    ``collectives`` lists every collective in text order (async wrappers and the collectives
    they call both appear, as in XLA where each is its own instruction); ``computations``
    (name -> ``Computation``, in text order) and ``entry`` hold every instruction.
    ``device_assignment_source`` says where ``device_assignment`` came from: ``"given"`` (the
    caller's table), ``"dump"`` (the ``compile_options.textproto`` beside the file) or
    ``"default"`` (XLA's default placement, for want of anything better), or for a module
    read from a binary proto ``"proto"`` (the proto's own table). ``schedule_source`` says
    where the instruction order of a scheduled module came from: ``"text"`` (the text,
    ``is_scheduled=true``), ``"proto"`` (the proto's ``HloScheduleProto``), or None for a
    module without a schedule.
    """

    def __init__(
        self,
        header: ModuleHeader,
        text: str | None,
        scope: ModuleScope,
        collectives: list[Collective],
        source: str | None,
        assignment_source: AssignmentSource,
    ) -> None:
        self.name = header.name
        self.header_attributes = header.attributes
        self.stack_frames = header.stack_frames
        self.is_scheduled = header.is_scheduled
        self.replica_count = scope.replica_count
        self.num_partitions = scope.num_partitions
        self.collectives = collectives
        self.computations = scope.computations
        self.source = source
        self._text = text
        self.device_assignment_source = assignment_source
        self.compile_options: CompileOptions | None = None
        self.schedule_source: str | None = "text" if header.is_scheduled else None
        self._scope = scope
        entries = [c.name for c in self.computations.values() if c.is_entry]
        names = list(self.computations)
        self.entry_name: str | None = entries[0] if entries else (names[-1] if names else None)

    @property
    def text(self) -> str:
        """The text lines and columns point into: the text read, or for a module read from a
        proto (built with ``text`` None) ``to_text()``, printed on first use."""
        if self._text is None:
            self._text = self.to_text()
        return self._text

    @text.setter
    def text(self, value: str) -> None:
        self._text = value

    @property
    def device_assignment(self) -> DeviceAssignment:
        """``[replica][partition] -> device id`` used by ``device_groups()``/``device_pairs()``
        of the collectives (see ``device_assignment_source``)."""
        return self._scope.default_assignment()

    @property
    def entry_computation_layout(self) -> str | None:
        """The header's ``entry_computation_layout`` text, if written."""
        return self.header_attributes.get("entry_computation_layout")

    @property
    def entry(self) -> Computation:
        """The ENTRY computation (the last one when none is marked ENTRY)."""
        if self.entry_name is None:
            raise InvalidArgumentError(f"module {self.name} has no computations")
        return self.computations[self.entry_name]

    @property
    def collectives_by_name(self) -> dict[str, Collective]:
        """``collectives`` keyed by instruction name."""
        return {c.name: c for c in self.collectives}

    @property
    def instructions(self) -> list[Instruction]:
        """Every instruction of every computation, in text order."""
        return [i for c in self.computations.values() for i in c.instructions]

    def to_text(self) -> str:
        """The module in XLA's HLO text form, which jaxlib's parser reads back to the same
        module (see ``_printer``)."""
        return module_text(self.name, self.header_attributes, self.replica_count,
                           self.num_partitions, self.stack_frames, self.computations.values())

    def __repr__(self) -> str:
        return (f"<Module {self.name}: {len(self.computations)} computations, "
                f"{len(self.collectives)} collectives, replica_count={self.replica_count}, "
                f"num_partitions={self.num_partitions}>")


def read_header(text: str, source: str | None = None) -> ModuleHeader:
    """The module header of ``text`` alone (the rest is not read)."""
    return ModuleHeader(Reader(text, source, read_module=parse_module).header())


def parse_module(
    text: str,
    replica_count: int | None = None,
    num_partitions: int | None = None,
    device_assignment: DeviceAssignment | ArrayLike | None = None,
    source: str | None = None,
) -> Module:
    """Read HLO module text (as XLA prints it, before or after optimisation, with or without
    the ``HloModule`` line).

    ``replica_count``/``num_partitions`` override the header's values when given (the header
    defaults them to 1). ``device_assignment`` (a ``DeviceAssignment`` or a 2-D table
    ``[replica][partition] -> device id``) places the module on devices: it becomes
    ``module.device_assignment``, the default of every collective's ``device_groups()``, and
    must be ``replica_count x num_partitions`` (else ``InvalidArgumentError``). Errors are
    ``HloParseError`` with 1-based line and column (``source`` names the input in messages),
    or ``LimitError`` for groups past the device limit.
    """
    return _parse(text, replica_count, num_partitions, device_assignment, source,
                  "given" if device_assignment is not None else "default")


def _parse(
    text: str,
    replica_count: int | None,
    num_partitions: int | None,
    device_assignment: DeviceAssignment | ArrayLike | None,
    source: str | None,
    assignment_source: AssignmentSource,
    dump: str | None = None,
) -> Module:
    if not isinstance(text, str):
        raise InvalidArgumentError(f"parse_module expects str text, got {type(text).__name__}")
    assignment = None if device_assignment is None else as_assignment(device_assignment)
    with paused():  # objects for every line, which live as long as the module
        reader = Reader(text, source, read_module=parse_module)
        try:
            header = ModuleHeader(reader.header())
            r, p = resolve_counts(header, replica_count, num_partitions)
            if assignment is not None:
                check_assignment(assignment, r, p, f"module {header.name}", dump)
            scope = ModuleScope(r, p, assignment)
            cache = DecodeCache()
            found: list[Collective] = []
            decode = collective_decoder(scope, cache, found.append)
            while (computation := reader.computation_head()) is not None:
                scope.computations[computation.name] = computation
                reader.read_into(computation, decode, COLLECTIVE_OPCODES)
                if reader.inline:  # computations written inline come before their writer
                    del scope.computations[computation.name]
                    scope.computations.update((c.name, c) for c in reader.take_inline())
                    scope.computations[computation.name] = computation
            if not scope.computations:
                raise reader.error("expects a computation (the module has none)", len(text))
            if reader.single:  # one instruction: XLA's module _, scheduled
                header.name, header.is_scheduled = "_", True
            elif not header.has_header_line:
                computations = list(scope.computations.values())
                entry = next((c.name for c in computations if c.is_entry), computations[-1].name)
                header.name = f"module_{entry}"
            collectives = Linker(scope.root_collective, scope.wrapped).link(found)
            module = Module(header, text, scope, collectives, source, assignment_source)
            scope.let_go(found, reader.root, reader.shapes_read)
        except HloParseError as raised:
            error = reader.reported(raised)
            if source and error.source is None:
                raise HloParseError(error.message, error.line, error.column, source) from None
            if error is not raised:
                raise error from None
            raise
        del reader  # with what it kept for its checks, before the collector walks it
    return module


def collective_decoder(
    scope: CollectiveScope, cache: DecodeCache, found: Callable[[Collective], object]
) -> Callable[[Instruction], None]:
    """What the reader calls on each collective instruction as soon as it is read (so errors
    come in text order): decode it (``instruction.collective``) and pass it to ``found``."""

    def decode(instruction: Instruction) -> None:
        collective = instruction.collective = decode_collective(instruction, scope, cache)
        found(collective)

    return decode


def read_text(path: str | os.PathLike[str] | IO[bytes] | IO[str]) -> tuple[str, str]:
    """The whole text of ``path`` (plain or gzip; ``'-'`` is stdin; see ``_input``) and a
    name for messages."""
    with open_input(path) as source:
        return source.read(), source.name


def load(
    path: str | os.PathLike[str] | IO[bytes] | IO[str],
    replica_count: int | None = None,
    num_partitions: int | None = None,
    device_assignment: DeviceAssignment | ArrayLike | None = None,
) -> Module:
    """``parse_module`` of a file (plain or gzip-compressed), an open file, ``'-'`` (stdin),
    or a directory in XLA's dump layout holding one module after optimisations (see
    ``single_module_file``; one with several is an ``InvalidArgumentError``).

    Without ``device_assignment``, a file in XLA's dump layout (``module_NNNN.NAME.*.txt``
    beside ``module_NNNN.NAME/compile_options.textproto``, or the textproto beside it; given
    as a path, or as an open file whose ``name`` is that path) takes
    the table and the replica and partition counts from XLA's compile options;
    ``module.device_assignment_source`` says which was used.
    """
    path = single_module_file(path)
    text, name = read_text(path)
    table, source, options = placement_for(path, device_assignment)
    if table is not None and source == "dump":
        replica_count = table.replica_count if replica_count is None else replica_count
        num_partitions = table.computation_count if num_partitions is None else num_partitions
    module = _parse(text, replica_count, num_partitions, table, name, source,
                    table_file(source, options))
    module.compile_options = options
    return module
