"""An ``HloModuleProto`` built into a ``Module`` (see ``_proto`` for what is read).

Each instruction takes one line of XLA's text (``%name = shape opcode(%a, %b), key=value,
...``) for the attributes read, printed on first use (``_proto_printer``), and the module is
that text as XLA prints it (``Module.text`` is ``to_text()``), so lines and columns,
``Collective.text`` and ``Module.to_text`` all refer to one text; the structure (names,
shapes, operands, callees, order) and the collective attributes come from the proto's fields,
not from that text.
"""

from __future__ import annotations

from operator import attrgetter, itemgetter

from google.protobuf.message import DecodeError, Message

from .._collector import paused
from .._errors import InvalidArgumentError
from ..groups._device_list import CollectiveDeviceList
from ..groups._placement import DeviceAssignment
from ._assignment import check_assignment
from ._collective import (
    COLLECTIVE_OPCODES,
    GROUPED_OPCODES,
    P2P_OPCODES,
    Collective,
    CollectiveAttributes,
)
from ._compile_options import AssignmentSource
from ._link import Linker
from ._module import Module, ModuleHeader, ModuleScope, resolve_counts
from ._proto import literal_text, not_a_module, shape_text
from ._proto_groups import Groups
from ._proto_printer import CALL_KEYS, ProtoPrinter, TextCache, frontend_attributes
from ._reader import HeaderRecord
from ._send_recv_pairs import SEND_RECV_PAIRS, send_recv_pairs
from ._structure import Attribute, Computation, Instruction

EMPTY_GROUPS = CollectiveDeviceList([])
_COLUMN = 3  # an instruction's name's, after its indent
_ROOT_COLUMN = _COLUMN + len("ROOT ")
# An instruction proto's fields every instruction is read for, in one call.
_FIELDS = attrgetter("id", "name", "opcode", "shape", "operand_ids", "called_computation_ids",
                     "control_predecessor_ids")
_COMPUTATION_FIELDS = attrgetter("id", "name", "root_id", "execution_thread", "instructions")
_ID, _NAME, _OPCODE = attrgetter("id"), attrgetter("name"), attrgetter("opcode")
_TEXT = itemgetter(1)
# Opcodes whose instructions need more than ``_FIELDS`` (collectives aside).
_SPECIAL = frozenset({"parameter", "constant", "while"})


def build_module(
    proto: Message, name: str, replica_count: int | None, num_partitions: int | None,
    table: DeviceAssignment | None, assignment_source: AssignmentSource,
    table_path: str | None = None,
) -> Module:
    """The ``Module`` of ``HloModuleProto`` ``proto`` read from file ``name``: counts from the
    overrides, else ``table``'s shape, else 1; ``table`` (None: XLA's default placement) came
    from ``assignment_source`` (``table_path`` names its file, for messages)."""
    if table is not None and assignment_source != "given":
        replica_count = table.replica_count if replica_count is None else replica_count
        num_partitions = table.computation_count if num_partitions is None else num_partitions
    schedule = {entry.key: list(entry.value.instruction_ids)
                for entry in proto.schedule.sequences}
    header = _header(proto.name or "module_", bool(schedule))
    r, p = resolve_counts(header, replica_count, num_partitions)
    header.replica_count, header.num_partitions = r, p
    if table is not None:
        check_assignment(table, r, p, f"module {header.name}", table_path)
    scope = ModuleScope(r, p, table)
    try:
        with paused():  # many long-lived objects
            builder = _Builder(proto, scope, schedule, name)
            found = builder.build()
            collectives = Linker(scope.root_collective, scope.wrapped).link(found)
    except DecodeError:  # a shape, literal or frontend attributes field read on use
        raise not_a_module(name, "cut short or damaged") from None
    module = Module(header, None, scope, collectives, name, assignment_source)
    module.schedule_source = "proto" if schedule else None
    return module


def _header(name: str, is_scheduled: bool) -> ModuleHeader:
    attributes = [Attribute("is_scheduled", "true", 1, 1)] if is_scheduled else []
    return ModuleHeader(HeaderRecord(name, attributes, 1))


def module_header(module: Module) -> ModuleHeader:
    """The header XLA would print for ``module`` read from a proto (name, scheduling,
    counts)."""
    header = _header(module.name, module.is_scheduled)
    header.replica_count, header.num_partitions = module.replica_count, module.num_partitions
    return header


class _Builder:
    """Computations and instructions of one module proto, in XLA's text order."""

    def __init__(self, proto: Message, scope: ModuleScope, schedule: dict[int, list[int]],
                 source: str) -> None:
        self.proto = proto
        self.scope = scope
        self.schedule = schedule
        self.source = source
        self.groups = Groups(source)
        self.shapes = TextCache("ShapeProto", shape_text)
        self.literals = TextCache("LiteralProto", literal_text)
        self.printer = ProtoPrinter(scope, self.groups, source)
        self.computation_names = {c.id: c.name for c in proto.computations}
        entry_id = proto.entry_computation_id
        entry_name = proto.entry_computation_name
        self.entry = entry_id if entry_id in self.computation_names else next(
            (c.id for c in proto.computations if c.name == entry_name),
            proto.computations[-1].id)
        self.line = 1  # the header's

    def build(self) -> list[Collective]:
        found: list[Collective] = []
        for computation in self.proto.computations:
            found.extend(self._computation(computation))
        return found

    def _computation(self, proto: Message) -> list[Collective]:
        """Computation ``proto`` placed in the module (its line and the lines its
        instructions take) and read now when it holds a collective, giving its collectives,
        else on first use (``Computation.read_on_use``). An instruction id written twice is
        read as its last instruction in the place of its first."""
        computation_id, name, root_id, thread, written = _COMPUTATION_FIELDS(proto)
        messages = list(written)
        ids = list(map(_ID, messages))
        order = self.schedule.get(computation_id)
        indices = None  # the index of each instruction read, when not all in the proto's order
        if order is not None or len(set(ids)) < len(ids):
            at = dict(zip(ids, range(len(ids)), strict=True))
            indices = list(at.values()) if order is None else [at[i] for i in order if i in at]
        computation = Computation(name, computation_id == self.entry, self.line + 2, "",
                                  execution_thread=thread or None)
        self.scope.computations[name] = computation
        self.printer.read(name, proto, indices)
        # its head, its instructions and its closing brace
        self.line += 3 + (len(ids) if indices is None else len(indices))
        if COLLECTIVE_OPCODES.isdisjoint(map(_OPCODE, messages)):
            computation.read_on_use(self._read_later, at=(proto, root_id, indices))
            return []
        if indices is not None:
            messages = list(map(messages.__getitem__, indices))
        return self._read(proto, computation, root_id, messages)

    def _read_later(self, computation: Computation,
                    at: tuple[Message, int, list[int] | None]) -> None:
        """``_read`` of a computation read on use (``at``: its proto, its root's id and the
        index of each instruction read, when not all in the proto's order); a damaged shape
        or literal is an ``InvalidArgumentError`` naming the file."""
        proto, root_id, indices = at
        messages = list(proto.instructions)
        if indices is not None:
            messages = list(map(messages.__getitem__, indices))
        try:
            self._read(proto, computation, root_id, messages)
        except DecodeError:
            raise not_a_module(self.source, "cut short or damaged") from None

    def _read(self, proto: Message, computation: Computation, root_id: int,
              messages: list[Message]) -> list[Collective]:
        """The instructions of ``computation`` read from ``messages`` (those of ``proto``,
        in text order) into it, and its collectives."""
        # The names of the instructions read so far; of all of them once one is named
        # before it is read (``_late_ids``).
        names: dict[int, str] = {}
        computation_name = computation.name
        number = computation.line
        parameters: list[tuple[int, str]] = []
        instructions: list[Instruction] = []
        by_name: dict[str, Instruction] = {}
        add = instructions.append
        named, callee = names.__getitem__, self.computation_names.__getitem__
        shapes, shape_text = self.shapes.found.get, self.shapes.text
        printed = self.printer.printed
        root = None
        collectives = []
        for (instruction_id, name, opcode, written, operand_ids, called_ids,
             control_ids), p in zip(map(_FIELDS, messages), messages, strict=True):
            number += 1
            names[instruction_id] = name
            shape = shapes(written) or shape_text(written)
            try:
                # A slice copies the ids in one call; iterating protobuf's container costs per id.
                operands = tuple(map(named, operand_ids[:])) if operand_ids else ()
                called = tuple(map(callee, called_ids[:])) if called_ids else ()
                controls = tuple(map(named, control_ids[:])) if control_ids else ()
            except KeyError:
                operands, called, controls = self._late_ids(
                    proto, name, names, messages, operand_ids, called_ids, control_ids)
            operand_text = None  # the operands' names, printed on use
            if opcode in _SPECIAL:
                if opcode == "parameter":
                    index = p.parameter_number
                    operand_text = str(index)
                    parameters.append((index, f"{name}: {shape}"))
                elif opcode == "constant":
                    operand_text = self.literals.text(p.literal)
                elif len(called) == 2:  # a while's, in written order: condition, body
                    called = (called[1], called[0])
            if instruction_id == root_id:
                instruction = root = Instruction(
                    name, opcode, shape, operands, number, _ROOT_COLUMN, computation_name, True,
                    operand_text, printed, [], called, controls)
            else:
                instruction = Instruction(
                    name, opcode, shape, operands, number, _COLUMN, computation_name, False,
                    operand_text, printed, [], called, controls)
            add(instruction)
            by_name[name] = instruction
            if opcode in COLLECTIVE_OPCODES:
                collectives.append((p, instruction))
        if root is None and instructions:
            root = instructions[-1]
        parameters.sort()
        result = root.shape_text if root is not None else "()"
        computation.instructions, computation.by_name, computation.root = (
            instructions, by_name, root)
        computation.signature = f"({', '.join(map(_TEXT, parameters))}) -> {result}"
        found = []
        for p, instruction in collectives:
            collective = instruction.collective = self._collective(p, instruction)
            found.append(collective)
        return found

    def _late_ids(self, proto: Message, name: str, names: dict[int, str],
                  messages: list[Message], operand_ids: Message, called_ids: Message,
                  control_ids: Message) -> tuple[tuple[str, ...], ...]:
        """The operands, callees and control predecessors of instruction ``name`` when one
        of them was not among the instructions read before it: looked up among all of
        computation ``proto``'s (``names`` then holds them all); an id that names none is an
        ``InvalidArgumentError``."""
        names.update(zip(map(_ID, messages), map(_NAME, messages), strict=True))
        try:
            return (tuple(map(names.__getitem__, operand_ids)),
                    tuple(map(self.computation_names.__getitem__, called_ids)),
                    tuple(map(names.__getitem__, control_ids)))
        except KeyError as unknown:
            raise InvalidArgumentError(
                f"{self.source}: instruction {name}: id {unknown.args[0]} of an operand, "
                f"called computation or control predecessor names no instruction of "
                f"computation {proto.name} and no computation") from None

    def _collective(self, p: Message, instruction: Instruction) -> Collective:
        opcode = instruction.opcode
        found = self.groups.of(p)
        groups = None if found is None else found[0]
        if groups is None and opcode in GROUPED_OPCODES:
            groups = EMPTY_GROUPS
        pairs = [(s.source, s.target) for s in p.source_target_pairs] or None
        if opcode in P2P_OPCODES:
            for entry in frontend_attributes(p):
                if entry.key == SEND_RECV_PAIRS:
                    pairs = send_recv_pairs(entry.value)
        dimensions = tuple(p.dimensions) or None
        to_apply = instruction.called_computations[0] if (
            opcode in CALL_KEYS and CALL_KEYS[opcode] == ("to_apply",)
            and instruction.called_computations) else None
        channel = p.channel_id if p.channel_id > 0 else None
        decoded = CollectiveAttributes(groups, None if found is None else found[1],
                                       True if p.use_global_device_ids else None,
                                       bool(p.constrain_layout), dimensions, pairs, None,
                                       to_apply, channel)
        return Collective(instruction, self.scope, decoded)
