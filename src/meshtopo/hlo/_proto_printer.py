"""An instruction read from an ``HloInstructionProto`` printed as one line of XLA's text.

``ProtoPrinter.printed`` is the ``Printer`` of every instruction of a module read from a proto
(``_structure``): it makes ``%name = shape opcode(operands), key=value, ...`` for the attributes
read, with the position of each value, on first use of the instruction's text or attributes,
from the instruction's message, found again in the module's proto by the instruction's line
(one per instruction, from its computation's). Nothing structural depends on the text (an
instruction takes one line, its name at a fixed column), so a module read from a proto prints
only what is asked of it, and holds no message of its own per instruction. The same few
metadata values repeat across a module: each distinct one is printed once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from google.protobuf.message import DecodeError, Message

from ._collective import COLLECTIVE_OPCODES, P2P_OPCODES
from ._module import ModuleScope
from ._proto import not_a_module
from ._proto_groups import Groups
from ._proto_schema import decoded
from ._structure import Attribute, Attributes, Instruction

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


class TextCache:
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


class ProtoPrinter:
    """Prints the instructions of one module read from file ``source`` (named when a field
    decoded on use is damaged); ``scope`` holds its computations, ``groups`` reads replica
    groups."""

    def __init__(self, scope: ModuleScope, groups: Groups, source: str) -> None:
        self.scope = scope
        self.groups = groups
        self.source = source
        self.metadata = TextCache("OpMetadata", _metadata)
        # metadata (serialized) -> what it adds to an instruction whose only attribute it is
        self.metadata_tails: dict[bytes, tuple[str, Attributes]] = {}
        # computation name -> its proto and, when its instructions were not read in the
        # proto's order, the index in it of each instruction read
        self.sources: dict[str, tuple[Message, list[int] | None]] = {}

    def read(self, computation: str, proto: Message, indices: list[int] | None) -> None:
        """Computation ``computation`` was read from ``proto``: all its instructions in order
        (``indices`` None), or those at ``indices``, in that order."""
        self.sources[computation] = (proto, indices)

    def printed(self, instruction: Instruction) -> tuple[str, int, Attributes]:
        """(text, attribute_at, attributes) of ``instruction`` of a computation ``read``:
        every attribute XLA prints for what was read of its message, in XLA's order. A
        damaged metadata or frontend attributes field is an ``InvalidArgumentError`` naming
        the file."""
        proto, indices = self.sources[instruction.computation]
        at = instruction.line - self.scope.computations[instruction.computation].line - 1
        p = proto.instructions[at if indices is None else indices[at]]
        groups = self.groups.of(p) if instruction.opcode in COLLECTIVE_OPCODES else None
        try:
            return self._printed(p, None if groups is None else groups[1], instruction)
        except DecodeError:
            raise not_a_module(self.source, "cut short or damaged") from None

    def _printed(self, p: Message, groups: str | None,
                 instruction: Instruction) -> tuple[str, int, Attributes]:
        opcode = instruction.opcode
        head = (f"%{instruction.name} = {instruction.shape_text} {opcode}"
                f"({instruction.operand_text})")
        called, controls = instruction.called_computations, instruction.control_predecessors
        metadata = p.metadata
        if called or controls or opcode in _READ:
            if opcode in _READ:
                pairs = _attributes(p, opcode, called, groups)
            else:
                pairs = _calls(opcode, called,
                               opcode == "conditional" and self._two_way(instruction))
            if controls:
                pairs.append(("control-predecessors", "{%" + ", %".join(controls) + "}"))
            if metadata:
                pairs.append(("metadata", self.metadata.text(metadata)))
            if not pairs:
                return head, -1, []
            text = head + ", " + ", ".join([f"{key}={value}" for key, value in pairs])
            return text, len(head), functools.partial(_positioned, pairs)
        if metadata:  # the attributes of most instructions: metadata alone
            suffix, attributes = self.metadata_tails.get(metadata) or self._metadata_tail(metadata)
            return head + suffix, len(head), attributes
        return head, -1, []

    def _two_way(self, conditional: Instruction) -> bool:
        """Whether ``conditional``'s predicate (its first operand) is a ``pred``: XLA then
        prints its two branches as ``true_computation`` and ``false_computation``."""
        operands = conditional.operands
        computation = self.scope.computations[conditional.computation]
        predicate = computation.by_name.get(operands[0]) if operands else None
        return (predicate is not None and predicate.shape_text.startswith("pred[")
                and len(conditional.called_computations) == 2)

    def _metadata_tail(self, metadata: bytes) -> tuple[str, Attributes]:
        """``, metadata={...}`` and the attribute list of an instruction whose only
        attribute is ``metadata`` (serialized), made once per distinct value."""
        text = self.metadata.text(metadata)
        found = self.metadata_tails[metadata] = (
            ", metadata=" + text, functools.partial(_positioned, [("metadata", text)]))
        return found


def _positioned(pairs: list[tuple[str, str]], instruction: Instruction) -> list[Attribute]:
    """The attributes of ``pairs`` with the line and column of each value in the
    ``instruction``'s text (made on first use: most are never asked for)."""
    attributes = []
    at = instruction.column + instruction.attribute_at
    for key, value in pairs:
        attributes.append(Attribute(key, value, instruction.line, at + len(key) + 3))
        at += len(key) + len(value) + 3
    return attributes


def _attributes(p: Message, opcode: str, called: tuple[str, ...],
                groups: str | None) -> list[tuple[str, str]]:
    """The attributes XLA prints for what was read of instruction ``p`` (``groups``: its
    replica groups' text), in XLA's order; only the fields ``opcode`` takes are looked at."""
    out: list[tuple[str, str]] = []
    is_collective = opcode in COLLECTIVE_OPCODES
    if is_collective and p.channel_id > 0:
        out.append(("channel_id", str(p.channel_id)))
    if groups is not None:
        out.append(("replica_groups", groups))
    if is_collective and p.constrain_layout:
        out.append(("constrain_layout", "true"))
    global_ids = [("use_global_device_ids", "true")] if (
        is_collective and p.use_global_device_ids) else []
    if opcode == "reduce-scatter":  # its flag comes from the all-reduce part, printed first
        out += global_ids
        global_ids = []
    dimensions = p.dimensions if opcode in _DIMENSIONS else None
    if dimensions:
        out.append(("dimensions", "{" + ",".join(map(str, dimensions[:])) + "}"))
    elif opcode in _SINGLE:
        out.append(_SINGLE[opcode](p))
    out += global_ids
    if is_collective:
        if p.source_target_pairs:
            out.append(("source_target_pairs", "{" + ",".join(
                f"{{{s.source},{s.target}}}" for s in p.source_target_pairs) + "}"))
        if opcode in P2P_OPCODES and p.is_host_transfer:
            out.append(("is_host_transfer", "true"))
    if called:
        out.extend(_calls(opcode, called, False))
    if opcode in _CONFIGURED:
        entries = frontend_attributes(p)
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


def frontend_attributes(p: Message) -> list[Message]:
    """The ``{key, value}`` entries of instruction ``p``'s frontend attributes."""
    written = p.frontend_attributes
    return list(decoded("FrontendAttributes", written).map) if written else []


def _calls(opcode: str, called: tuple[str, ...], two_way: bool) -> list[tuple[str, str]]:
    """The attributes naming ``called``, the computations an instruction of ``opcode`` calls
    in their structural order (a while's condition first); ``two_way``: a conditional whose
    predicate is a ``pred``."""
    if not called:
        return []
    keys = CALL_KEYS.get(opcode, _CALLS)
    if len(called) == 1 and opcode not in _LISTED:  # most: calls=, to_apply=
        return [(keys[0], "%" + called[0])] if keys else []
    if two_way:
        return [("true_computation", "%" + called[0]), ("false_computation", "%" + called[1])]
    if opcode in _LISTED:
        return [(keys[0], "{" + ", ".join("%" + c for c in called) + "}")]
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
