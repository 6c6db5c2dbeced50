"""An ``HloModuleProto`` built into a ``Module`` (see ``_proto`` for what is read).

Each instruction is printed as one line of XLA's text (``%name = shape opcode(%a, %b),
key=value, ...``) for the attributes read, and the module as XLA prints it
(``_printer``), so lines and columns, ``Collective.text`` and ``Module.to_text``
all refer to one text; the collective attributes come from the proto's fields, not from that
text.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from operator import attrgetter, itemgetter

from google.protobuf.message import DecodeError, Message

from .._errors import InvalidArgumentError
from ..groups._device_list import CollectiveDeviceList
from ..groups._placement import DeviceAssignment
from ._assignment import check_assignment
from ._collective import (
    COLLECTIVE_OPCODES,
    GROUPED_OPCODES,
    P2P_OPCODES,
    SEND_RECV_PAIRS,
    Collective,
    CollectiveAttributes,
    send_recv_pairs,
)
from ._compile_options import AssignmentSource
from ._link import Linker
from ._module import Module, ModuleHeader, ModuleScope, resolve_counts
from ._printer import computation_lines, header_line, instruction_line, joined_module
from ._proto import literal_text, not_a_module, shape_text
from ._proto_groups import Groups
from ._proto_schema import decoded
from ._reader import HeaderRecord
from ._structure import Attribute, Computation, Instruction

EMPTY_GROUPS = CollectiveDeviceList([])
# Opcodes whose computations XLA prints under a name of their own (else ``calls=``).
CALL_KEYS = {
    "all-reduce": ("to_apply",), "all-reduce-start": ("to_apply",),
    "reduce-scatter": ("to_apply",), "reduce": ("to_apply",), "map": ("to_apply",),
    "reduce-window": ("to_apply",), "scatter": ("to_apply",), "sort": ("to_apply",),
    "call": ("to_apply",), "all-reduce-done": (), "while": ("condition", "body"),
    "select-and-scatter": ("select", "scatter"), "custom-call": ("called_computations",),
    "conditional": ("branch_computations",),
}  # fmt: skip
_CALLS = ("calls",)
# Opcodes whose computations XLA prints as one braced list.
_LISTED = frozenset(opcode for opcode, keys in CALL_KEYS.items()
                    if keys in (("branch_computations",), ("called_computations",)))


_COLUMN = 3  # an instruction's name's, after its indent
# An instruction proto's fields every instruction is read for, in one call.
_FIELDS = attrgetter("id", "name", "opcode", "shape", "operand_ids", "called_computation_ids",
                     "control_predecessor_ids", "metadata")
_ID, _NAME, _TEXT = attrgetter("id"), attrgetter("name"), itemgetter(1)
# An instruction's attributes, or what makes them on first use (``Instruction.attribute_list``).
Attributes = list[Attribute] | Callable[[Instruction], list[Attribute]]
_ROOT_COLUMN = _COLUMN + len("ROOT ")


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
    collecting = gc.isenabled()
    gc.disable()  # many long-lived objects; cyclic GC passes only cost time
    try:
        builder = _Builder(proto, scope, schedule, name)
        found = builder.build()
        blocks = builder.blocks
        collectives = Linker(scope.root_collective, scope.wrapped).link(found)
    except DecodeError:  # a shape, metadata or attribute list read on use
        raise not_a_module(name, "cut short or damaged") from None
    finally:
        if collecting:
            gc.enable()
    text = joined_module(header_line(header.name, header.attributes, r, p), "", blocks)
    module = Module(header, text, scope, collectives, name, assignment_source)
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
        self.shapes = _TextCache("ShapeProto", shape_text)
        self.metadata = _TextCache("OpMetadata", _metadata)
        self.literals = _TextCache("LiteralProto", literal_text)
        # metadata (serialized) -> what it adds to an instruction whose only attribute it is
        self.metadata_tails: dict[bytes, tuple[str, Attributes]] = {}
        self.computation_names = {c.id: c.name for c in proto.computations}
        entry_id = proto.entry_computation_id
        entry_name = proto.entry_computation_name
        self.entry = entry_id if entry_id in self.computation_names else next(
            (c.id for c in proto.computations if c.name == entry_name),
            proto.computations[-1].id)
        self.line = 1  # the header's
        self.blocks: list[str] = []  # each computation as XLA prints it

    def build(self) -> list[Collective]:
        found: list[Collective] = []
        for computation in self.proto.computations:
            self._computation(computation, found.append)
        return found

    def _computation(self, proto: Message, found: Callable[[Collective], object],
                     repeated: bool = False) -> None:
        """Computation ``proto`` read into the module's; ``repeated``: it writes an id twice,
        read as its last instruction in the place of its first."""
        messages = list(proto.instructions)
        computation_id = proto.id
        order = self.schedule.get(computation_id)
        by_id: dict[int, Message] = {}  # made where needed: a schedule, a conditional
        if order is not None or repeated:
            ids = list(map(_ID, messages))
            by_id = dict(zip(ids, messages, strict=True))
            messages = list(map(by_id.__getitem__, by_id if order is None else (
                i for i in order if i in by_id)))
        # The names of the instructions read so far; of all of them once one is named
        # before it is read (``_late_ids``).
        names: dict[int, str] = {}
        root_id = proto.root_id
        number = self.line + 2
        computation = Computation(proto.name, computation_id == self.entry, number, "",
                                  execution_thread=proto.execution_thread or None)
        computation_name = computation.name
        self.scope.computations[computation_name] = computation
        parameters: list[tuple[int, str]] = []
        instructions = computation.instructions
        add, by_name = instructions.append, computation.by_name
        lines: list[str] = []
        line = lines.append
        named, callee = names.__getitem__, self.computation_names.__getitem__
        shapes, shape_text = self.shapes.found.get, self.shapes.text
        tails, tail = self.metadata_tails.get, self._metadata_tail
        collectives = []
        for (instruction_id, name, opcode, written, operand_ids, called_ids, control_ids,
             metadata), p in zip(map(_FIELDS, messages), messages, strict=True):
            number += 1
            names[instruction_id] = name
            is_collective = opcode in COLLECTIVE_OPCODES
            groups = self.groups.of(p) if is_collective else None
            shape = shapes(written) or shape_text(written)
            try:
                # A slice copies the ids in one call; iterating protobuf's container costs per id.
                operands = tuple(map(named, operand_ids[:])) if operand_ids else ()
                called = tuple(map(callee, called_ids[:])) if called_ids else ()
                controls = tuple(map(named, control_ids[:])) if control_ids else ()
            except KeyError:
                operands, called, controls = self._late_ids(
                    proto, name, names, messages, operand_ids, called_ids, control_ids)
            if opcode == "parameter":
                index = p.parameter_number
                operand_text = str(index)
                parameters.append((index, f"{name}: {shape}"))
            elif opcode == "constant":
                operand_text = self.literals.text(p.literal)
            else:
                operand_text = "%" + ", %".join(operands) if operands else ""
            head = f"%{name} = {shape} {opcode}({operand_text})"
            if called or controls or opcode in _READ:
                if opcode == "conditional" and not by_id:
                    by_id = dict(zip(map(_ID, messages), messages, strict=True))
                pairs = self._pairs(p, opcode, called, controls, metadata, by_id, groups)
                if opcode == "while" and len(called) == 2:  # in written order: condition, body
                    called = (called[1], called[0])
                if pairs:
                    text = head + ", " + ", ".join([f"{key}={value}" for key, value in pairs])
                    attributes: Attributes = functools.partial(_positioned, pairs)
                    at = len(head)
                else:
                    text, attributes, at = head, [], -1
            elif metadata:  # the attributes of most instructions: metadata alone
                suffix, attributes = tails(metadata) or tail(metadata)
                text, at = head + suffix, len(head)
            else:
                text, attributes, at = head, [], -1
            if instruction_id == root_id:
                instruction = computation.root = Instruction(
                    name, opcode, shape, operands, number, _ROOT_COLUMN, computation_name, True,
                    operand_text, text, attributes, called, controls, (), at)
            else:
                instruction = Instruction(
                    name, opcode, shape, operands, number, _COLUMN, computation_name, False,
                    operand_text, text, attributes, called, controls, (), at)
            add(instruction)
            line(text)
            by_name[name] = instruction
            if is_collective:
                collectives.append((p, instruction, groups))
        if len(names) < len(instructions) and not repeated and order is None:
            self._computation(proto, found, True)
            return
        for p, instruction, groups in collectives:
            collective = instruction.collective = self._collective(p, instruction, groups)
            found(collective)
        if computation.root is None and instructions:
            computation.root = instructions[-1]
        root = computation.root
        result = root.shape_text if root is not None else "()"
        parameters.sort()
        computation.signature = f"({', '.join(map(_TEXT, parameters))}) -> {result}"
        if root is not None:
            root_at = instructions.index(root)  # by identity: instructions compare so
            lines[root_at] = instruction_line(lines[root_at], True)
        self.blocks.append(computation_lines(computation, lines))
        self.line = number + 1  # the closing brace

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

    def _metadata_tail(self, metadata: bytes) -> tuple[str, Attributes]:
        """`` , metadata={...}`` and the attribute list of an instruction whose only
        attribute is ``metadata`` (serialized), made once per distinct value."""
        text = self.metadata.text(metadata)
        found = self.metadata_tails[metadata] = (
            ", metadata=" + text, functools.partial(_positioned, [("metadata", text)]))
        return found

    def _pairs(self, p: Message, opcode: str, called: tuple[str, ...], controls: tuple[str, ...],
               metadata: bytes, by_id: dict[int, Message],
               groups: tuple[CollectiveDeviceList, str] | None) -> list[tuple[str, str]]:
        """Every attribute XLA prints for instruction ``p``, in its order."""
        if opcode in _READ:
            pairs = _attributes(p, opcode, called, by_id, None if groups is None else groups[1])
        else:
            pairs = _calls(opcode, called, p, by_id)
        if controls:
            pairs.append(("control-predecessors", "{%" + ", %".join(controls) + "}"))
        if metadata:
            pairs.append(("metadata", self.metadata.text(metadata)))
        return pairs

    def _collective(self, p: Message, instruction: Instruction,
                    found: tuple[CollectiveDeviceList, str] | None) -> Collective:
        opcode = instruction.opcode
        groups = None if found is None else found[0]
        if groups is None and opcode in GROUPED_OPCODES:
            groups = EMPTY_GROUPS
        pairs = [(s.source, s.target) for s in p.source_target_pairs] or None
        if opcode in P2P_OPCODES:
            for entry in _frontend_attributes(p):
                if entry.key == SEND_RECV_PAIRS:
                    pairs = send_recv_pairs(entry.value, instruction.line, instruction.column)
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


def _positioned(pairs: list[tuple[str, str]], instruction: Instruction) -> list[Attribute]:
    """The attributes of ``pairs`` with the line and column of each value in the
    ``instruction``'s text (made on first use: most are never asked for)."""
    attributes = []
    at = instruction.column + instruction.attribute_at
    for key, value in pairs:
        attributes.append(Attribute(key, value, instruction.line, at + len(key) + 3))
        at += len(key) + len(value) + 3
    return attributes


def _attributes(p: Message, opcode: str, called: tuple[str, ...], by_id: dict[int, Message],
                groups: str | None) -> list[tuple[str, str]]:
    """The attributes XLA prints for what was read of instruction ``p`` (``groups``: its
    replica groups' text), in XLA's order; only the fields ``opcode`` takes are looked at."""
    out: list[tuple[str, str]] = []
    is_collective = opcode in COLLECTIVE_OPCODES
    if is_collective and p.channel_id > 0:
        out.append(("channel_id", str(p.channel_id)))
    if groups is not None:
        out.append(("replica_groups", groups))
    dimensions = p.dimensions if opcode in _DIMENSIONS else None
    if dimensions:
        out.append(("dimensions", "{" + ",".join(map(str, dimensions[:])) + "}"))
    elif opcode in _SINGLE:
        out.append(_SINGLE[opcode](p))
    if is_collective:
        if p.use_global_device_ids:
            out.append(("use_global_device_ids", "true"))
        if p.source_target_pairs:
            out.append(("source_target_pairs", "{" + ",".join(
                f"{{{s.source},{s.target}}}" for s in p.source_target_pairs) + "}"))
        if p.constrain_layout:
            out.append(("constrain_layout", "true"))
        if opcode in P2P_OPCODES and p.is_host_transfer:
            out.append(("is_host_transfer", "true"))
    if called:
        out.extend(_calls(opcode, called, p, by_id))
    if opcode in _CONFIGURED:
        entries = _frontend_attributes(p)
        if entries:
            out.append(("frontend_attributes", "{" + ",".join(
                f"{e.key}={_quoted(e.value)}" for e in entries) + "}"))
        if p.backend_config:
            config = p.backend_config.decode("utf-8", "replace")
            out.append(("backend_config", config if config.startswith("{") else _quoted(config)))
    return out


def _slice(p: Message) -> tuple[str, str]:
    return ("slice", "{" + ", ".join(
        f"[{s.start}:{s.limit}" + (f":{s.stride}]" if s.stride != 1 else "]")
        for s in p.slice_dimensions) + "}")


# Opcodes whose ``dimensions`` field XLA prints as ``dimensions={...}``.
_DIMENSIONS = frozenset({
    "broadcast", "reduce", "transpose", "concatenate", "reverse", "sort", "map",
    "all-gather", "all-gather-start", "all-to-all", "ragged-all-to-all", "reduce-scatter",
})  # fmt: skip
# Opcodes with one attribute of their own, read from one field.
_SINGLE: dict[str, Callable[[Message], tuple[str, str]]] = {
    "get-tuple-element": lambda p: ("index", str(p.tuple_index)),
    "iota": lambda p: ("iota_dimension", str(p.dimensions[0]) if p.dimensions else "0"),
    "compare": lambda p: ("direction", p.comparison_direction),
    "fusion": lambda p: ("kind", p.fusion_kind),
    "custom-call": lambda p: ("custom_call_target", _quoted(p.custom_call_target)),
    "slice": _slice,
    "dynamic-slice": lambda p: ("dynamic_slice_sizes",
                                "{" + ",".join(map(str, p.dynamic_slice_sizes)) + "}"),
}
# Opcodes whose frontend attributes and backend config are read (send/recv pairs, a while's
# known trip count).
_CONFIGURED = COLLECTIVE_OPCODES | {"while", "custom-call", "fusion"}
# Opcodes whose attributes come from more than their called computations.
_READ = COLLECTIVE_OPCODES | _DIMENSIONS | _SINGLE.keys() | _CONFIGURED


def _frontend_attributes(p: Message) -> list[Message]:
    """The ``{key, value}`` entries of instruction ``p``'s frontend attributes."""
    written = p.frontend_attributes
    return list(decoded("FrontendAttributes", written).map) if written else []


class _TextCache:
    """A message field declared as bytes (``_proto_schema``) printed once per distinct value:
    shapes and metadata repeat across a module."""

    def __init__(self, kind: str, printed: Callable[[Message], str]) -> None:
        self.kind = kind
        self.printed = printed
        self.found: dict[bytes, str] = {}

    def text(self, written: bytes) -> str:
        found = self.found.get(written)
        if found is None:
            found = self.found[written] = self.printed(decoded(self.kind, written))
        return found


def _calls(opcode: str, called: tuple[str, ...], p: Message,
           by_id: dict[int, Message]) -> list[tuple[str, str]]:
    if not called:
        return []
    keys = CALL_KEYS.get(opcode, _CALLS)
    if len(called) == 1 and opcode not in _LISTED:  # most: calls=, to_apply=
        return [(keys[0], "%" + called[0])] if keys else []
    if opcode == "conditional":
        predicate = by_id.get(p.operand_ids[0]) if p.operand_ids else None
        if (predicate is not None and decoded("ShapeProto", predicate.shape).element_type == 1
                and len(called) == 2):
            return [("true_computation", "%" + called[0]), ("false_computation", "%" + called[1])]
    if opcode in _LISTED:
        return [(keys[0], "{" + ", ".join("%" + c for c in called) + "}")]
    if opcode == "while" and len(called) == 2:  # XLA keeps the body first
        return [("condition", "%" + called[1]), ("body", "%" + called[0])]
    return [(key, "%" + name) for key, name in zip(keys, called, strict=False)]


def _metadata(metadata: Message) -> str:
    parts = []
    for key in ("op_type", "op_name", "source_file"):
        value = getattr(metadata, key)
        if value:
            parts.append(f"{key}={_quoted(value)}")
    if metadata.source_line:
        parts.append(f"source_line={metadata.source_line}")
    if metadata.stack_frame_id:
        parts.append(f"stack_frame_id={metadata.stack_frame_id}")
    return "{" + " ".join(parts) + "}" if parts else ""


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
