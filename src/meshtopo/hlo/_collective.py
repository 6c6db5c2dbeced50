"""``Collective``: one collective instruction of an HLO module, with its attributes decoded.

A collective is read by the fast scanner (``_scan``) or, for text it does not place, the
general line reader (``_line``); both produce the same object. Attributes XLA interprets are
decoded while the module is read (so malformed values fail then, with line:column), once per
distinct attribute text; the group mode is known from that text too. The shape, operand
shapes, byte size, reduction kind, the instruction's text and the raw attribute dict are
computed on first use, and device groups on request.

Opcode families:

- sync collectives: all-reduce, all-gather, reduce-scatter, all-to-all, ragged-all-to-all,
  collective-permute, collective-broadcast;
- async pairs: all-reduce-start/-done, all-gather-start/-done, collective-permute-start/-done;
  a ``-done`` names its start as its only operand and carries the start's attributes;
- async-start/-update/-done whose ``calls=`` computation's root is a collective: the wrapped
  op's attributes are copied, ``wrapped_opcode`` names it;
- send, recv, send-done, recv-done (pairs from the frontend attribute
  ``_xla_send_recv_source_target_pairs``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from numpy.typing import ArrayLike

from .._device_list import CollectiveDeviceList
from .._errors import HloParseError, InvalidArgumentError
from .._modes import CollectiveOpGroupMode, group_mode_for_opcode
from .._pairs import participating_device_pairs
from .._placement import DeviceAssignment, participating_device_groups
from ._assignment import placed
from ._lexer import parse_dictionary, parse_int, parse_int_lists, split_attributes
from ._shape import Shape, parse_shape

if TYPE_CHECKING:
    from ._context import ScanContext

SYNC_OPCODES = frozenset({
    "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "ragged-all-to-all",
    "collective-permute", "collective-broadcast",
})  # fmt: skip
START_OPCODES = frozenset({"all-reduce-start", "all-gather-start", "collective-permute-start"})
DONE_OPCODES = frozenset({"all-reduce-done", "all-gather-done", "collective-permute-done"})
ASYNC_OPCODES = frozenset({"async-start", "async-update", "async-done"})
P2P_OPCODES = frozenset({"send", "recv", "send-done", "recv-done"})
COLLECTIVE_OPCODES = SYNC_OPCODES | START_OPCODES | DONE_OPCODES | ASYNC_OPCODES | P2P_OPCODES
# Opcodes whose attributes include replica_groups (empty when not written).
GROUPED_OPCODES = frozenset({
    "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "ragged-all-to-all",
    "collective-broadcast", "all-reduce-start", "all-gather-start",
})  # fmt: skip
# The computation root opcode -> XLA's ReductionKind (MatchReductionInstruction).
REDUCTIONS = {"add": "sum", "multiply": "prod", "minimum": "min", "maximum": "max"}
SEND_RECV_PAIRS = "_xla_send_recv_source_target_pairs"


# The attributes decoded from text, in the order of ``Collective.decoded()``.
DECODED_FIELDS = (
    "replica_groups", "groups_text", "constrain_layout", "use_global_device_ids", "dimensions",
    "source_target_pairs", "slice_sizes", "to_apply",
)  # fmt: skip
DecodedAttributes = tuple[
    "CollectiveDeviceList | None", "str | None", bool, "bool | None", "tuple[int, ...] | None",
    "list[tuple[int, int]] | None", "list[tuple[int, ...]] | None", "str | None",
]
NOTHING_DECODED: DecodedAttributes = (None, None, False, None, None, None, None, None)


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


class Collective:
    """One collective instruction. Names carry no ``%``; ``line``/``column`` (1-based) locate
    the instruction's name token (its ``%`` when written).

    ``replica_groups`` is the ``CollectiveDeviceList`` as written (empty when an op that takes
    groups wrote none; None for permutes and send/recv, which take pairs instead).
    ``use_global_device_ids`` and ``channel_id`` are None when not written.
    """

    __slots__ = (
        "_attributes", "_context", "_mode", "_shape", "_source", "_tail", "channel_id",
        "column", "computation", "constrain_layout", "dimensions", "groups_text",
        "inline_shapes", "is_root", "line", "name", "opcode", "operands", "replica_groups",
        "shape_text", "slice_sizes", "source_target_pairs", "start", "tail_column", "to_apply",
        "use_global_device_ids", "wrapped_opcode",
    )  # fmt: skip

    def __init__(
        self,
        name: str,
        opcode: str,
        shape_text: str,
        operands: tuple[str, ...],
        line: int,
        column: int,
        computation: str | None,
        context: ScanContext,
        decoded: DecodedAttributes | None = None,
        channel_id: int | None = None,
        tail: str | None = "",
        tail_column: int = 0,
        source: int | str = "",
        mode: CollectiveOpGroupMode | None = None,
    ) -> None:
        """Built by the readers; ``decoded`` holds the attributes shared by every line with
        the same attribute text (see ``DECODED_FIELDS``) and ``mode`` their group mode when
        known. ``tail`` is the text after the operands (None: read from ``source`` when
        asked for); ``source`` is the instruction's text, or the offset of its line in the
        module text the context holds."""
        self.name = name
        self.opcode = opcode
        self.shape_text = shape_text
        self.operands = operands
        self.line = line
        self.column = column
        self.computation = computation
        self._context = context
        (
            self.replica_groups, self.groups_text, self.constrain_layout,
            self.use_global_device_ids, self.dimensions, self.source_target_pairs,
            self.slice_sizes, self.to_apply,
        ) = decoded or NOTHING_DECODED  # fmt: skip
        self.channel_id = channel_id
        self._tail = tail
        self.tail_column = tail_column
        self._source = source
        self._mode = mode
        self.is_root = False
        self.inline_shapes: tuple[str | None, ...] = ()
        self.start: str | None = None
        self.wrapped_opcode: str | None = None
        self._attributes: dict[str, str] | None = None
        self._shape: Shape | None = None

    def decoded(self) -> DecodedAttributes:
        """The attributes named by ``DECODED_FIELDS``, as a tuple in that order."""
        return (
            self.replica_groups, self.groups_text, self.constrain_layout,
            self.use_global_device_ids, self.dimensions, self.source_target_pairs,
            self.slice_sizes, self.to_apply,
        )  # fmt: skip

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
        return not self.is_done and self.opcode != "async-update"

    @property
    def is_done(self) -> bool:
        """True for the ops that wait for an earlier start (``start`` names it)."""
        return self.opcode.endswith("-done")

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
        root = self._context.computation_root(self.to_apply)
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
        return participating_device_groups(self.replica_groups, self.mode, assignment)

    def device_pairs(
        self, device_assignment: DeviceAssignment | ArrayLike | None = None
    ) -> list[tuple[int, int]]:
        """(source device, target device) for collective-permute and send/recv: each written
        pair in every partition (no channel) or every replica (channel), per XLA. Placement
        as in ``device_groups``."""
        if self.source_target_pairs is None:
            raise InvalidArgumentError(
                f"{self.opcode} {self.name} (line {self.line}) has no source_target_pairs"
            )
        assignment = self._placement(device_assignment)
        return participating_device_pairs(self.source_target_pairs, self.mode, assignment)

    def _placement(self, device_assignment: DeviceAssignment | ArrayLike | None) -> DeviceAssignment:
        if device_assignment is None:
            return self._context.default_assignment()
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
        return [self._context.operand_shape(self, name) for name in self.operands]

    @property
    def bytes(self) -> int | None:
        """Bytes of the payload buffer, by opcode (None when a needed shape is unknown):

        - all-gather: the gathered result; reduce-scatter: the full operand;
        - all-reduce, all-to-all, ragged-all-to-all, collective-broadcast, collective-permute:
          the data operand(s) (operand 0 for in-place permutes and ragged-all-to-all);
        - send: operand 0; recv: element 0 of the result tuple;
        - start/done and async forms: the same as their synchronous op (a done reports its
          start's size when the start was seen).
        """
        return self._context.payload_bytes(self)

    # ---- the module it belongs to and raw text -----------------------------------------

    @property
    def replica_count(self) -> int:
        """The module's replica count (the header's, or the reader's override)."""
        return self._context.replica_count

    @property
    def num_partitions(self) -> int:
        """The module's partition count (the header's, or the reader's override)."""
        return self._context.num_partitions

    @property
    def text(self) -> str:
        """The instruction as written, from its name to its end (``ROOT`` and indentation
        left out; an instruction written over several lines joined with one space per line
        break), as XLA's verifier messages quote it."""
        source = self._source
        if isinstance(source, str):
            return source
        return self._context.instruction_text(source + self.column - 1)

    @property
    def tail(self) -> str:
        """The text after the operand list (``, channel_id=1, replica_groups=...``)."""
        tail = self._tail
        if tail is None:
            source = self._source
            if isinstance(source, str):
                tail = source[self.tail_column - self.column:]
            else:
                tail = self._context.line_text(source + self.tail_column - 1)
            self._tail = tail
        return tail

    def keep_text(self, text: str) -> None:
        """Copy the instruction's text out of ``text`` (the block it was read from, whose
        offsets ``_source`` counts), so that ``text`` and ``tail`` outlive the block."""
        source = self._source
        if not isinstance(source, str):
            end = text.find("\n", source)
            self._source = text[source + self.column - 1:end if end >= 0 else len(text)].rstrip()

    @property
    def attributes(self) -> dict[str, str]:
        """Every attribute written after the operands, as raw text (``metadata``,
        ``frontend_attributes``, ``backend_config``, ... included). A ``-done`` lists what it
        wrote itself, not its start's attributes."""
        if self._attributes is None:
            self._attributes = {
                a.key: a.value for a in split_attributes(self.tail, self.line, self.tail_column)
            }
        return self._attributes

    @property
    def written_channel_id(self) -> int | None:
        """The ``channel_id`` written on this instruction itself (``channel_id`` of a
        ``-done`` is its start's), or None when it wrote none."""
        text = self.attributes.get("channel_id")
        if text is None:
            return None
        return parse_int(text, "channel_id", self.line, self.tail_column)

    @property
    def frontend_attributes(self) -> dict[str, str]:
        """``frontend_attributes={k="v",...}`` decoded (empty when absent)."""
        text = self.attributes.get("frontend_attributes", "")
        return parse_dictionary(text, self.line, self.tail_column)

    @property
    def metadata(self) -> dict[str, str]:
        """``metadata={op_name="..." source_file=...}`` decoded (empty when absent)."""
        return parse_dictionary(self.attributes.get("metadata", ""), self.line, self.tail_column)

    def copy_attributes_from(self, other: Collective) -> None:
        """Take the decoded collective attributes of ``other`` (a done's start, a wrapped op)."""
        self.channel_id = other.channel_id
        self.use_global_device_ids = other.use_global_device_ids
        self.replica_groups = other.replica_groups
        self.groups_text = other.groups_text
        self.source_target_pairs = other.source_target_pairs
        self.slice_sizes = other.slice_sizes
        self.dimensions = other.dimensions
        self.constrain_layout = other.constrain_layout
        self.to_apply = other.to_apply
        self._mode = None
        if self.opcode in ASYNC_OPCODES and other.opcode not in ASYNC_OPCODES:
            self.wrapped_opcode = other.opcode
        elif other.wrapped_opcode is not None:
            self.wrapped_opcode = other.wrapped_opcode

    def __repr__(self) -> str:
        groups = "" if self.groups_text is None else f", replica_groups={self.groups_text}"
        channel = "" if self.channel_id is None else f", channel_id={self.channel_id}"
        return f"<Collective {self.opcode} {self.name} at {self.line}:{self.column}{channel}{groups}>"


def send_recv_pairs(text: str, line: int, column: int) -> list[tuple[int, int]]:
    """The pairs of ``_xla_send_recv_source_target_pairs="{{0,1},{1,2}}"``."""
    lists = parse_int_lists(text, SEND_RECV_PAIRS, line, column)
    for item in lists:
        if len(item) != 2:
            raise HloParseError(f"Incorrect element size : {text}", line, column)
    return [(a, b) for a, b in lists]

