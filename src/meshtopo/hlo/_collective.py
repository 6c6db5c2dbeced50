"""``Collective``: one collective instruction of an HLO module, with its attributes decoded.

The reader (``_reader``) builds an ``Instruction`` for every instruction; ``_decode`` turns
each collective one into a ``Collective`` while the module is read, so malformed values fail
then, with line:column. The shape, operand shapes, byte size and reduction kind are computed
on first use, device groups on request; what a collective needs from its module (counts,
placement, computation roots, operand definitions) comes from a ``CollectiveScope``.

Opcode families:

- sync collectives: all-reduce, all-gather, reduce-scatter, all-to-all, ragged-all-to-all,
  collective-permute, collective-broadcast;
- async pairs: all-reduce-start/-done, all-gather-start/-done, collective-permute-start/-done;
  a ``-done`` names its start as its only operand and carries the start's attributes;
- async-start/-update/-done whose ``calls=`` computation's root is a collective: the wrapped
  op's attributes are copied, ``wrapped_opcode`` names it; XLA's shorthand for them
  (``reduce-scatter-start``, ``all-to-all-done``, ...) is the same: ``opcode`` is
  ``async-start`` (-update, -done), ``wrapped_opcode`` the op, and the start carries the
  op's attributes itself;
- send, recv, send-done, recv-done (pairs from the frontend attribute
  ``_xla_send_recv_source_target_pairs``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple, Protocol, TypeAlias

from numpy.typing import ArrayLike

from .._errors import InvalidArgumentError
from ..groups._device_list import CollectiveDeviceList
from ..groups._modes import CollectiveOpGroupMode, group_mode_for_opcode
from ..groups._pairs import participating_device_pairs
from ..groups._placement import DeviceAssignment, participating_device_groups
from ._assignment import placed
from ._frontend_attributes import frontend_attributes
from ._metadata import metadata_fields
from ._opcodes import async_form
from ._send_recv_pairs import SEND_RECV_PAIRS, pairs_problem_line
from ._shape import Shape
from ._shape_syntax import parse_shape
from ._values import parse_int

SYNC_OPCODES = frozenset({
    "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "ragged-all-to-all",
    "collective-permute", "collective-broadcast",
})  # fmt: skip
START_OPCODES = frozenset({"all-reduce-start", "all-gather-start", "collective-permute-start"})
DONE_OPCODES = frozenset({"all-reduce-done", "all-gather-done", "collective-permute-done"})
ASYNC_OPCODES = frozenset({"async-start", "async-update", "async-done"})
P2P_OPCODES = frozenset({"send", "recv", "send-done", "recv-done"})
# XLA's shorthand for async wrappers of the sync collectives (``reduce-scatter-start``, ...:
# ``_opcodes.async_form``), where the form is no opcode of its own.
SHORTHAND_OPCODES = frozenset(
    f"{op}{suffix}" for op in SYNC_OPCODES for suffix in ("-start", "-update", "-done")
) - START_OPCODES - DONE_OPCODES
# XLA's channel instructions (``HloChannelInstruction``): a send-done or recv-done whose
# operand is one must carry its channel_id.
CHANNEL_OPCODES = SYNC_OPCODES | START_OPCODES | P2P_OPCODES
COLLECTIVE_OPCODES = (SYNC_OPCODES | START_OPCODES | DONE_OPCODES | ASYNC_OPCODES | P2P_OPCODES
                      | SHORTHAND_OPCODES)
# The ops that wait for an earlier start (``Collective.is_done``): every -done form, XLA's
# shorthand ones included; with async-update, the ops that issue nothing (``is_start`` False).
WAIT_OPCODES = frozenset(op for op in COLLECTIVE_OPCODES if op.endswith("-done"))
NOT_ISSUED_OPCODES = WAIT_OPCODES | {"async-update"}
# Opcodes whose attributes include replica_groups (empty when not written).
GROUPED_OPCODES = frozenset({
    "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "ragged-all-to-all",
    "collective-broadcast", "all-reduce-start", "all-gather-start",
})  # fmt: skip
# The computation root opcode -> XLA's ReductionKind (MatchReductionInstruction).
REDUCTIONS = {"add": "sum", "multiply": "prod", "minimum": "min", "maximum": "max"}


def base_opcode(opcode: str) -> str:
    """The synchronous op behind a start/done form: ``all-gather-start`` -> ``all-gather``."""
    for suffix in ("-start", "-done"):
        if opcode.endswith(suffix) and opcode[: -len(suffix)] in SYNC_OPCODES:
            return opcode[: -len(suffix)]
    return opcode


@functools.lru_cache(maxsize=256)
def _mode(opcode: str, has_channel_id: bool, use_global: bool | None) -> CollectiveOpGroupMode:
    if opcode in ("send", "recv", "send-done", "recv-done"):
        opcode = "collective-permute"
    elif opcode not in ("all-reduce-start", "all-gather-start", "collective-permute-start"):
        opcode = base_opcode(opcode)
    return group_mode_for_opcode(opcode, has_channel_id, use_global)


# ``replica_groups`` as written: the text, or (text, start, stop) for the part of a longer
# text (a line) that it is, sliced when asked for; None when not written.
Written: TypeAlias = "str | tuple[str, int, int] | None"


class CollectiveAttributes(NamedTuple):
    """The attributes XLA interprets on a collective, decoded from text once: an immutable
    record that collectives decoded alike share (a -done and its start, an async wrapper and
    the op it wraps). Each field is None (``constrain_layout`` False) when not written;
    ``groups_text`` is ``replica_groups`` as written (``Written``). (A named tuple: the
    reader builds one per collective, and a tuple is the cheapest immutable record to build.)"""

    replica_groups: CollectiveDeviceList | None = None
    groups_text: Written = None
    use_global_device_ids: bool | None = None
    constrain_layout: bool = False
    dimensions: tuple[int, ...] | None = None
    source_target_pairs: list[tuple[int, int]] | None = None
    slice_sizes: list[tuple[int, ...]] | None = None
    to_apply: str | None = None
    channel_id: int | None = None


UNDECODED = CollectiveAttributes()


class InstructionRecord(Protocol):
    """What a collective reads of the instruction it was decoded from (``_structure``'s
    ``Instruction`` is one)."""

    name: str
    opcode: str
    shape_text: str
    operands: tuple[str, ...]
    line: int
    column: int
    computation: str
    is_root: bool
    inline_shapes: tuple[str | None, ...]
    collective: Collective | None  # this collective; None once it is found to be none

    @property
    def text(self) -> str:
        """The instruction as written, from its name."""

    @property
    def attribute_list(self) -> Sequence[tuple[str, str, int, int]]:
        """Every attribute: (key, raw value, line, column)."""

    @property
    def attributes(self) -> dict[str, str]:
        """Every attribute as key -> raw value."""


class CollectiveScope(Protocol):
    """What a collective needs from the module it belongs to."""

    replica_count: int
    num_partitions: int
    wrapped: dict[str, Collective]

    def default_assignment(self) -> DeviceAssignment:
        """The module's device assignment."""

    def computation_root(self, name: str) -> tuple[str, str] | None:
        """(root opcode, root element type) of computation ``name``, if known."""

    def definition(self, computation: str, name: str) -> str | None:
        """The shape text of instruction ``name`` of ``computation``, if known."""


class Collective:
    """One collective instruction. Names carry no ``%``; ``line``/``column`` (1-based) locate
    the instruction's name token (its ``%`` when written).

    ``replica_groups`` is the ``CollectiveDeviceList`` as written (empty when an op that takes
    groups wrote none; None for permutes and send/recv, which take pairs instead).
    ``use_global_device_ids`` and ``channel_id`` are None when not written; ``opcode`` is the
    instruction's, as written, but for XLA's async shorthand (``async-start`` for
    ``reduce-scatter-start``, with ``wrapped_opcode`` ``reduce-scatter``).
    """

    __slots__ = ("_decoded", "_instruction", "_mode", "_scope", "_shape", "opcode", "start",
                 "wrapped_opcode")

    def __init__(self, instruction: InstructionRecord, scope: CollectiveScope,
                 decoded: CollectiveAttributes = UNDECODED,
                 mode: CollectiveOpGroupMode | None = None) -> None:
        """The collective of ``instruction`` with its ``decoded`` attributes (``_decode``
        reads them) and, when known, the ``mode`` they give."""
        self._instruction = instruction
        self.opcode = instruction.opcode
        self.wrapped_opcode: str | None = None
        form = async_form(self.opcode)
        if form is not None:  # XLA's shorthand: an async wrapper of the op it names
            self.opcode, self.wrapped_opcode = form
        self._scope = scope
        self._decoded = decoded
        self._mode = mode
        self.start: str | None = None
        self._shape: Shape | None = None

    @property
    def decoded(self) -> CollectiveAttributes:
        """The collective attributes decoded from text (a -done's and an async wrapper's are
        their start's or wrapped op's once linked)."""
        return self._decoded

    @property
    def replica_groups(self) -> CollectiveDeviceList | None:
        """The replica groups as written (empty when an op that takes groups wrote none)."""
        return self._decoded.replica_groups

    @property
    def groups_text(self) -> str | None:
        """``replica_groups`` as written, or None when not written."""
        written = self._decoded.groups_text
        if isinstance(written, tuple):
            text, start, stop = written
            return text[start:stop]
        return written

    @property
    def use_global_device_ids(self) -> bool | None:
        """``use_global_device_ids``, or None when not written."""
        return self._decoded.use_global_device_ids

    @property
    def constrain_layout(self) -> bool:
        """``constrain_layout`` (False when not written)."""
        return self._decoded.constrain_layout

    @property
    def dimensions(self) -> tuple[int, ...] | None:
        """``dimensions``, or None when not written."""
        return self._decoded.dimensions

    @property
    def source_target_pairs(self) -> list[tuple[int, int]] | None:
        """The pairs of a permute (of send/recv: their frontend attribute), or None."""
        return self._decoded.source_target_pairs

    @property
    def slice_sizes(self) -> list[tuple[int, ...]] | None:
        """``slice_sizes`` of an in-place permute, or None."""
        return self._decoded.slice_sizes

    @property
    def to_apply(self) -> str | None:
        """The reduction computation's name, or None."""
        return self._decoded.to_apply

    @property
    def channel_id(self) -> int | None:
        """``channel_id`` (a -done's is its start's), or None when not written."""
        return self._decoded.channel_id

    @property
    def instruction(self) -> InstructionRecord:
        """The instruction this collective was read from."""
        return self._instruction

    @property
    def name(self) -> str:
        """The instruction's name (no ``%``)."""
        return self._instruction.name

    @property
    def shape_text(self) -> str:
        """The result shape as written."""
        return self._instruction.shape_text

    @property
    def operands(self) -> tuple[str, ...]:
        """Operand names (no ``%``)."""
        return self._instruction.operands

    @property
    def line(self) -> int:
        """1-based line of the name token."""
        return self._instruction.line

    @property
    def column(self) -> int:
        """1-based column of the name token."""
        return self._instruction.column

    @property
    def computation(self) -> str:
        """The name of the computation holding the instruction."""
        return self._instruction.computation

    @property
    def is_root(self) -> bool:
        """True for its computation's ROOT."""
        return self._instruction.is_root

    # ---- kinds ------------------------------------------------------------------------

    @property
    def underlying_opcode(self) -> str:
        """The synchronous op this instruction performs: ``all-reduce`` for all-reduce-start,
        the wrapped op for async-start, ``send``/``recv`` for their -done forms."""
        if self.opcode in ASYNC_OPCODES:
            return base_opcode(self.wrapped_opcode or self.opcode)
        if self.opcode in ("send-done", "recv-done"):
            return self.opcode[:-5]
        return base_opcode(self.opcode)

    @property
    def is_async(self) -> bool:
        """True for -start/-done forms, async-wrapped collectives and send/recv (+ -done)."""
        return self.opcode not in SYNC_OPCODES

    @property
    def is_start(self) -> bool:
        """True where the operation is issued: sync ops, -start ops, async-start, send, recv."""
        return self.opcode not in NOT_ISSUED_OPCODES

    @property
    def is_done(self) -> bool:
        """True for the ops that wait for an earlier start (``start`` names it)."""
        return self.opcode in WAIT_OPCODES

    # ---- XLA's readings ---------------------------------------------------------------

    @property
    def is_host_transfer(self) -> bool:
        """True for send/recv written with ``is_host_transfer=true`` (not device traffic)."""
        return self.opcode in P2P_OPCODES and self.attributes.get("is_host_transfer") == "true"

    @property
    def mode(self) -> CollectiveOpGroupMode:
        """XLA's per-opcode group mode (``group_mode_for_opcode``) of the underlying op.

        send/recv follow collective-permute's rule. An all-gather with
        ``use_global_device_ids=true`` and no channel_id raises ``InvalidArgumentError``
        (XLA's verifier rejects it; the parser does not).
        """
        mode = self._mode
        if mode is None:
            opcode = self.wrapped_opcode if self.opcode in ASYNC_OPCODES else self.opcode
            mode = _mode(opcode or self.opcode, self.channel_id is not None,
                         self.use_global_device_ids)
            self._mode = mode
        return mode

    @property
    def reduction(self) -> str | None:
        """``sum``/``prod``/``min``/``max`` from the ``to_apply`` computation's root (``and``
        and ``or`` on pred read as ``min``/``max``), the root opcode when it is none of
        those, or None without ``to_apply``."""
        if self.to_apply is None:
            return None
        root = self._scope.computation_root(self.to_apply)
        if root is None:
            return None
        opcode, element_type = root
        if opcode in REDUCTIONS:
            return REDUCTIONS[opcode]
        if element_type == "pred" and opcode in ("and", "or"):
            return "min" if opcode == "and" else "max"
        return opcode

    def device_groups(
        self, device_assignment: DeviceAssignment | ArrayLike | None = None
    ) -> list[list[int]]:
        """The global device ids that talk, per group, in rank order.

        Default placement: the module's ``device_assignment`` (given to ``parse_module``,
        else XLA's ``DeviceAssignment.default(replica_count, num_partitions)``). A placement
        given here is a ``DeviceAssignment`` or a 2-D table ``[replica][partition]`` (array or
        list of rows), checked as ``parse_module`` checks it: it must be ``replica_count x
        num_partitions`` (else ``InvalidArgumentError``). Ops with pairs (permutes, send/recv)
        give one ``[source, target]`` group per device pair.
        """
        if self.replica_groups is None:
            return [list(pair) for pair in self.device_pairs(device_assignment)]
        assignment = self._placement(device_assignment)
        return participating_device_groups(self.replica_groups, mode=self.mode, device_assignment=assignment)

    def device_pairs(
        self, device_assignment: DeviceAssignment | ArrayLike | None = None
    ) -> list[tuple[int, int]]:
        """(source device, target device) for collective-permute and send/recv: each written
        pair in every partition (no channel) or every replica (channel), per XLA. Placement
        as in ``device_groups``."""
        if self.source_target_pairs is None:
            written = self.frontend_attributes.get(SEND_RECV_PAIRS)
            raise InvalidArgumentError(
                f"{self.opcode} {self.name} (line {self.line}) has no source_target_pairs"
                if written is None else f"{self.opcode} {self.name} (line {self.line}) has a "
                f"{SEND_RECV_PAIRS} XLA cannot read: {pairs_problem_line(written)}"
            )
        assignment = self._placement(device_assignment)
        return participating_device_pairs(self.source_target_pairs, mode=self.mode, device_assignment=assignment)

    def _placement(self, device_assignment: DeviceAssignment | ArrayLike | None) -> DeviceAssignment:
        if device_assignment is None:
            return self._scope.default_assignment()
        return placed(device_assignment, self.replica_count, self.num_partitions,
                      f"the module of {self.opcode} {self.name} (line {self.line})")

    # ---- shapes and sizes -------------------------------------------------------------

    @property
    def shape(self) -> Shape:
        """The result shape."""
        if self._shape is None:
            self._shape = parse_shape(self.shape_text, self.line, self.column)
        return self._shape

    @property
    def operand_shapes(self) -> list[Shape | None]:
        """Operand shapes, from inline shapes or the operands' definitions (None if unseen)."""
        return [None if text is None else parse_shape(text, self.line, self.column)
                for text in self.operand_shape_texts]

    @property
    def operand_shape_texts(self) -> list[str | None]:
        """Operand shapes as written inline or at the operands' definitions (None if
        unseen), unparsed."""
        inline = self._instruction.inline_shapes or (None,) * len(self.operands)
        return [shape if shape is not None else self._scope.definition(self.computation, name)
                for name, shape in zip(self.operands, inline, strict=True)]

    @property
    def bytes(self) -> int | None:
        """Bytes of the payload buffer per device, by opcode (None when a needed shape is
        unknown):

        - all-gather: the gathered result; reduce-scatter: the full operand;
        - all-reduce, all-to-all, ragged-all-to-all, collective-broadcast, collective-permute:
          the data operand(s) (operand 0 for in-place permutes and ragged-all-to-all);
        - send: operand 0; recv: element 0 of the result tuple;
        - start/done and async forms: the same as their synchronous op (a done reports its
          start's size when the start was seen).
        """
        wrapped = self._scope.wrapped.get(self.name)
        if wrapped is not None and wrapped is not self:
            return wrapped.bytes
        opcode = self.opcode
        shape = self.shape
        if opcode.endswith("-done"):
            if opcode == "recv-done":
                return _element_bytes(shape, 0)
            return None if opcode == "send-done" else shape.byte_size
        underlying = self.underlying_opcode
        if underlying == "all-gather":
            if opcode in ("all-gather-start", "async-start") and shape.tuple_shapes and len(
                    shape.tuple_shapes) >= 2:
                return shape.tuple_shapes[1].byte_size
            return shape.byte_size
        if underlying == "recv":
            return _element_bytes(shape, 0)
        operands = self.operand_shapes
        if underlying in ("ragged-all-to-all", "collective-permute", "send"):
            operands = operands[:1]
        sizes = [s.byte_size if s is not None else None for s in operands]
        if not sizes or any(size is None for size in sizes):
            # Without operand shapes, ops whose result has the operand's size use the result.
            same_size = ("all-reduce", "all-to-all", "collective-broadcast", "collective-permute")
            return shape.byte_size if opcode in same_size else None
        return sum(size for size in sizes if size is not None)

    # ---- the module it belongs to and raw text -----------------------------------------

    @property
    def replica_count(self) -> int:
        """The module's replica count (the header's, or the reader's override)."""
        return self._scope.replica_count

    @property
    def num_partitions(self) -> int:
        """The module's partition count (the header's, or the reader's override)."""
        return self._scope.num_partitions

    @property
    def text(self) -> str:
        """The instruction as written, from its name to its end (``ROOT`` and indentation
        left out; an instruction written over several lines joined with one space per line
        break), as XLA's verifier messages quote it."""
        written = self._instruction.text
        if "\n" not in written:
            return written.rstrip()
        return " ".join(part.strip() for part in written.split("\n"))

    @property
    def attributes(self) -> dict[str, str]:
        """Every attribute written after the operands, as raw text (``metadata``,
        ``frontend_attributes``, ``backend_config``, ... included). A ``-done`` lists what it
        wrote itself, not its start's attributes."""
        return self._instruction.attributes

    def _attribute(self, key: str) -> tuple[str, int, int] | None:
        for written, value, line, column in self._instruction.attribute_list:
            if written == key:
                return value, line, column
        return None

    @property
    def written_channel_id(self) -> int | None:
        """The ``channel_id`` written on this instruction itself (``channel_id`` of a
        ``-done`` is its start's), or None when it wrote none."""
        found = self._attribute("channel_id")
        return None if found is None else parse_int(found[0], "channel_id", found[1], found[2])

    @property
    def frontend_attributes(self) -> dict[str, str]:
        """``frontend_attributes={k="v",...}`` decoded (empty when absent)."""
        found = self._attribute("frontend_attributes")
        return {} if found is None else frontend_attributes(*found)

    @property
    def metadata(self) -> dict[str, str]:
        """``metadata={op_name="..." source_file=...}`` decoded (empty when absent)."""
        found = self._attribute("metadata")
        return {} if found is None else metadata_fields(*found)

    def copy_attributes_from(self, other: Collective) -> None:
        """Take the decoded collective attributes of ``other`` (a done's start, a wrapped op)."""
        self._decoded = other._decoded
        self._mode = None
        if self.opcode in ASYNC_OPCODES and other.opcode not in ASYNC_OPCODES:
            self.wrapped_opcode = other.opcode
        elif other.wrapped_opcode is not None:
            self.wrapped_opcode = other.wrapped_opcode

    def __repr__(self) -> str:
        groups = "" if self.groups_text is None else f", replica_groups={self.groups_text}"
        channel = "" if self.channel_id is None else f", channel_id={self.channel_id}"
        return f"<Collective {self.opcode} {self.name} at {self.line}:{self.column}{channel}{groups}>"


def _element_bytes(shape: Shape, index: int) -> int | None:
    if shape.tuple_shapes is None:
        return shape.byte_size
    if index < len(shape.tuple_shapes):
        return shape.tuple_shapes[index].byte_size
    return None

