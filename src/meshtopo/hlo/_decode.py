"""A collective instruction's attributes decoded, and XLA's parser rejections.

``decode_collective`` reads the attributes XLA interprets from an ``Instruction`` into the
frozen ``CollectiveAttributes`` of a ``Collective``; values are decoded once per distinct text
(``DecodeCache``), and collectives whose attribute text reads the same but for a leading
channel id and explicit groups share one decoding (``decode_collective``). XLA's parser
rejections (``hlo_parser.cc``) are raised here as ``HloParseError`` with the 1-based line and
column of the offending text, because XLA refuses to build such a module:

- all-reduce, all-reduce-start and reduce-scatter with ``use_global_device_ids=true``, no
  ``channel_id`` and no ``mode=``: "Invalid combination of has_channel_id and
  use_global_device_ids: use_global_device_ids=true needs a channel_id" (XLA's newer wording
  is "Cannot have use_global_device_ids=true without channel_id");
- ``slice_sizes`` (in-place permute) without exactly 4 operands;
- ``dimensions`` with other than one element on all-to-all / ragged-all-to-all;
- a collective-broadcast without ``replica_groups`` is read (XLA's parser takes it; its
  groups are empty).

An attribute an opcode does not take ('unexpected attribute "x". Allowed attributes: ...',
``_allowed``) or one it requires missing (``_opcodes.REQUIRED_ATTRIBUTES``) is refused by the
reader, for every opcode, before anything is decoded.
Everything XLA's *verifier* rejects (ids out of range, wrong counts, empty groups, the
all-gather mode error) is left for ``meshtopo.hlo.verify``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, cast

from .._errors import HloParseError, InvalidArgumentError
from ..groups._device_list import CollectiveDeviceList
from ..groups._modes import CollectiveOpGroupMode
from ._collective import (
    ASYNC_OPCODES,
    GROUPED_OPCODES,
    P2P_OPCODES,
    WAIT_OPCODES,
    Collective,
    CollectiveAttributes,
    CollectiveScope,
    Written,
)
from ._explicit import explicit_list
from ._frontend_attributes import frontend_attributes
from ._int_lists import parse_int_list, parse_int_lists
from ._name_lists import names_in
from ._opcodes import async_form
from ._replica_groups import decode_groups
from ._send_recv_pairs import SEND_RECV_PAIRS, send_recv_pairs
from ._structure import Instruction
from ._values import flat_value, parse_bool, parse_int, relocate

_MODE_CHECK_OPCODES = frozenset({"all-reduce", "all-reduce-start", "reduce-scatter"})
_EMPTY_GROUPS = CollectiveDeviceList([])
_T = TypeVar("_T")
# What collectives that share one decoding have in common: opcode, operand count, whether a
# leading channel id and explicit groups were read apart, and the attribute text after them.
DecodingKey = tuple[str, int, bool, bool, str]


class DecodeCache:
    """Decoded values per distinct text, shared by the collectives of one module."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], object] = {}
        self.templates: dict[DecodingKey, tuple[CollectiveAttributes,
                                                CollectiveOpGroupMode | None]] = {}
        # The explicit groups the fast path last found: where in which text, their device
        # list and what was kept as written.
        self._last_groups: tuple[str, int, int, CollectiveDeviceList, Written] = (
            "", 0, 0, _EMPTY_GROUPS, "")

    def get(self, key: str, text: str, line: int, column: int,
            decode: Callable[[str, int, int], _T]) -> _T:
        """``decode(text, line, column)``, once per (key, text); a text written over several
        lines is read as one line and its errors moved back to where they are."""
        found = self.values.get((key, text), _MISSING)
        if found is _MISSING:
            flat = flat_value(text)
            try:
                found = decode(flat, line, column)
            except HloParseError as error:
                raise relocate(error, text, line, column) from None
            self.values[(key, text)] = found
        return found  # type: ignore[return-value]


    def explicit_groups(self, instruction: Instruction) -> tuple[CollectiveDeviceList, Written]:
        """The device list of the explicit ``replica_groups`` the reader's fast path found on
        ``instruction`` (at ``groups_span``, so only the device limit is left to check) and
        the text to keep as written. A list as the collective before wrote it is that one's;
        short lists are shared by text across the module; a long one is converted from the
        instruction's text on use and kept as its span, so that a dump of distinct long
        lists holds each list's text once."""
        text = instruction.text
        start, stop = instruction.groups_span  # type: ignore[misc]
        last_text, last_start, last_stop, found, kept = self._last_groups
        if _same_text(text, start, stop, last_text, last_start, last_stop):
            return found, kept
        if stop - start <= _SHARED_LENGTH:
            written = text[start:stop]
            key = ("replica_groups", written)
            shared = cast(CollectiveDeviceList | None, self.values.get(key))
            if shared is None:
                shared = self.values[key] = _explicit(written, None, instruction)
            self._last_groups = (text, start, stop, shared, written)
            return shared, written
        found = _explicit(text, (start, stop), instruction)
        self._last_groups = (text, start, stop, found, (text, start, stop))
        return found, (text, start, stop)


# The longest explicit list shared by its text across a module (longer ones are shared only
# with the collective right before, which dumps of long lists repeat them on).
_SHARED_LENGTH = 256
_COMPARED_FIRST = 64  # how much of two spans is compared before the whole


def _same_text(text: str, start: int, stop: int, other: str, other_start: int,
               other_stop: int) -> bool:
    """Whether ``text[start:stop]`` and ``other[other_start:other_stop]`` are the same text,
    compared in place: their first ``_COMPARED_FIRST`` characters first (lists of one
    length that differ mostly differ early), so that neither long span is copied then."""
    if stop - start != other_stop - other_start:
        return False
    return text.startswith(other[other_start:other_start + _COMPARED_FIRST], start) and (
        text.startswith(other[other_start:other_stop], start))


def _explicit(text: str, span: tuple[int, int] | None,
              instruction: Instruction) -> CollectiveDeviceList:
    """``explicit_list`` of groups the fast path checked, or the exact reader's error when
    they name more devices than the device limit allows."""
    found = explicit_list(text, checked=True, span=span)
    if found is None:
        _, value, line, column = next(
            a for a in instruction.attribute_list if a.key == "replica_groups")
        found = decode_groups(value, line, column)
    return found


_MISSING = object()


def _dimensions(text: str, line: int, column: int) -> tuple[int, ...]:
    return tuple(parse_int_list(text, line, column))


def _pairs(text: str, line: int, column: int) -> list[tuple[int, int]]:
    # Entries that are not pairs are refused by the reader (``_instruction_checks``).
    return [(a, b) for a, b in parse_int_lists(text, line, column)]


def _slice_sizes(text: str, line: int, column: int) -> list[tuple[int, ...]]:
    return [tuple(item) for item in parse_int_lists(text, line, column)]


def _computation(text: str, line: int, column: int) -> str:
    names = names_in("to_apply", text, line, column)
    return names[0] if names else ""


def decode_collective(
    instruction: Instruction, scope: CollectiveScope, cache: DecodeCache
) -> Collective:
    """The ``Collective`` of a collective ``instruction``, its attributes decoded and checked
    against XLA's parser rules. Collectives the reader's fast path read whose attributes read
    the same but for a leading ``channel_id`` and explicit groups (with the same opcode and
    as many operands: ``_decoding_key``) share one decoding, as what is decoded and refused
    depends on that text alone: the first is decoded in full and its record kept as the
    template of the others, each with its own channel id, callee and groups (``_copied``)."""
    key = _decoding_key(instruction)
    if key is not None:
        template = cache.templates.get(key)
        if template is not None:
            decoded, mode = template
            return Collective(instruction, scope, _copied(decoded, instruction, cache), mode)
    c = Collective(instruction, scope, _decoded(instruction, cache))
    if key is not None:
        cache.templates[key] = (c.decoded, _settled_mode(c))
    return c


def _decoding_key(instruction: Instruction) -> DecodingKey | None:
    """What ``instruction`` shares with the collectives decoded like it, or None when the
    fast path did not read it (nothing is shared then)."""
    shared = instruction.shared_attributes
    if shared is None:
        return None
    return (instruction.opcode, len(instruction.operands),
            instruction.leading_channel is not None, instruction.groups_span is not None, shared)


def _copied(template: CollectiveAttributes, instruction: Instruction,
            cache: DecodeCache) -> CollectiveAttributes:
    """``template`` with ``instruction``'s own leading channel id, callee (the fast path
    keeps each line's name) and explicit groups."""
    groups, written = template.replica_groups, template.groups_text
    if instruction.groups_span is not None:
        groups, written = cache.explicit_groups(instruction)
    channel = instruction.leading_channel
    to_apply = template.to_apply
    if to_apply is not None and instruction.called_computations:
        to_apply = instruction.called_computations[0]
    return CollectiveAttributes(
        groups, written, template.use_global_device_ids, template.constrain_layout,
        template.dimensions, template.source_target_pairs, template.slice_sizes, to_apply,
        template.channel_id if channel is None else int(channel))


def _settled_mode(c: Collective) -> CollectiveOpGroupMode | None:
    """The group mode of ``c``, which every collective decoded like it shares, or None where
    linking may still change it (async wrappers, dones) or reading it is an error."""
    if c.opcode in ASYNC_OPCODES or c.opcode in WAIT_OPCODES:
        return None
    try:
        return c.mode
    except InvalidArgumentError:
        return None


def _decoded(instruction: Instruction, cache: DecodeCache) -> CollectiveAttributes:
    """Every collective attribute of ``instruction`` decoded, then checked (``_finish``)."""
    groups: CollectiveDeviceList | None = None
    written: str | None = None
    channel_id = use_global = dimensions = pairs = slice_sizes = to_apply = None
    constrain_layout = has_mode = False
    opcode = instruction.opcode
    for key, value, line, column in instruction.attribute_list:
        if key == "channel_id":
            channel_id = parse_int(flat_value(value), key, line, column)
        elif key == "replica_groups":
            groups = cache.get(key, value, line, column, decode_groups)
            written = value
        elif key == "use_global_device_ids":
            use_global = parse_bool(value, key, line, column)
        elif key == "constrain_layout":
            constrain_layout = parse_bool(value, key, line, column)
        elif key == "dimensions":
            dimensions = cache.get(key, value, line, column, _dimensions)
        elif key == "source_target_pairs":
            pairs = cache.get(key, value, line, column, _pairs)
        elif key == "slice_sizes":
            slice_sizes = cache.get(key, value, line, column, _slice_sizes)
        elif key == "to_apply":
            to_apply = cache.get(key, value, line, column, _computation)
        elif key == "mode":
            has_mode = True
        elif key == "frontend_attributes" and opcode in P2P_OPCODES:
            found = frontend_attributes(value, line, column).get(SEND_RECV_PAIRS)
            if found is not None:  # None when XLA cannot read them (its parser keeps them)
                pairs = send_recv_pairs(found)
    form = async_form(opcode)
    if form is not None and form[0] == "async-start":
        opcode = form[1]  # the shorthand carries its op's attributes
    if opcode in GROUPED_OPCODES and groups is None:
        groups = _EMPTY_GROUPS
    decoded = CollectiveAttributes(groups, written, use_global, constrain_layout, dimensions,
                                   pairs, slice_sizes, to_apply, channel_id)
    _finish(decoded, opcode, instruction, has_mode)
    return decoded


def _finish(decoded: CollectiveAttributes, opcode: str, instruction: Instruction,
            has_mode: bool) -> None:
    """XLA's parser rejections of the ``decoded`` attributes of an ``opcode`` instruction
    (``has_mode``: a ``mode=`` attribute was written, which turns off the mode check): the
    mode at the operand list's '(', the rest at the instruction's name. (A missing attribute
    the opcode requires is the reader's to refuse: ``_opcodes.REQUIRED_ATTRIBUTES``.)"""
    if (
        opcode in _MODE_CHECK_OPCODES
        and decoded.use_global_device_ids
        and decoded.channel_id is None
        and not has_mode
    ):
        operands = instruction.text.find("(" + instruction.operand_text + ")",
                                         len(instruction.name))
        raise HloParseError(
            "Invalid combination of has_channel_id and use_global_device_ids: "
            "use_global_device_ids=true needs a channel_id", *instruction.position(operands))
    if decoded.slice_sizes is not None and len(instruction.operands) != 4:
        raise HloParseError(
            "CollectivePermute and CollectivePermuteStart must have exactly four operands for "
            "dynamic-slice and in-place update.", instruction.line, instruction.column)
    if opcode in ("all-gather", "all-gather-start", "reduce-scatter") and (
            decoded.dimensions == ()):  # XLA reads its first: none is an error (out of range)
        raise HloParseError(
            f"error parsing attribute dimensions: {opcode} needs a dimension, got {{}}",
            instruction.line, instruction.column)
    if (
        opcode in ("all-to-all", "ragged-all-to-all")
        and decoded.dimensions is not None
        and len(decoded.dimensions) != 1
    ):
        raise HloParseError(
            f"error parsing attribute dimensions: {opcode} takes exactly one split dimension, "
            f"got {{{','.join(map(str, decoded.dimensions))}}}",
            instruction.line, instruction.column)
