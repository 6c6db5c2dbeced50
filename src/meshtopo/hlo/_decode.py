"""A collective instruction's attributes decoded, and XLA's parser rejections.

``decode_collective`` reads the attributes XLA interprets from an ``Instruction`` into a
``Collective``; values are decoded once per distinct text (``DecodeCache``). XLA's parser
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

import re
from collections.abc import Callable
from typing import TypeVar, cast

from .._device_list import CollectiveDeviceList
from .._errors import HloParseError, InvalidArgumentError, LimitError
from .._modes import CollectiveOpGroupMode
from ._collective import (
    ASYNC_OPCODES,
    GROUPED_OPCODES,
    P2P_OPCODES,
    SEND_RECV_PAIRS,
    Collective,
    CollectiveScope,
    Written,
    send_recv_pairs,
)
from ._explicit import explicit_list
from ._native import configure_copies, copy_decoded, decoding_key
from ._structure import Instruction
from ._values import (
    flat_value,
    parse_bool,
    parse_dictionary,
    parse_int,
    parse_int_list,
    parse_int_lists,
    relocate,
)

_MODE_CHECK_OPCODES = frozenset({"all-reduce", "all-reduce-start", "reduce-scatter"})
_EMPTY_GROUPS = CollectiveDeviceList([])
_LONG_NUMBER = re.compile(r"[0-9]{20,}")
_T = TypeVar("_T")


class DecodeCache:
    """Decoded values per distinct text, shared by the collectives of one module."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], object] = {}
        self.templates: dict[tuple[str, int, bool, bool, str], Collective] = {}
        self._last_groups: tuple[str, CollectiveDeviceList] = ("", _EMPTY_GROUPS)

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
        written = text[start:stop]
        last, found = self._last_groups
        if written == last:
            return found, last
        if stop - start <= _SHARED_LENGTH:
            key = ("replica_groups", written)
            shared = cast(CollectiveDeviceList | None, self.values.get(key))
            if shared is None:
                shared = self.values[key] = _explicit(written, None, instruction)
            self._last_groups = (written, shared)
            return shared, written
        found = _explicit(text, (start, stop), instruction)
        self._last_groups = (written, found)
        return found, (text, start, stop)


# The longest explicit list shared by its text across a module (longer ones are shared only
# with the collective right before, which dumps of long lists repeat them on).
_SHARED_LENGTH = 256


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


def decode_groups(text: str, line: int, column: int) -> CollectiveDeviceList:
    """``replica_groups=`` in any encoding; errors point into the input."""
    groups = explicit_list(text) if len(text) > 256 else None
    if groups is not None:
        return groups
    try:
        return CollectiveDeviceList.parse(text, line, column)
    except LimitError as error:
        raise LimitError(f"{line}:{column}: replica_groups: {error}") from None
    except HloParseError:
        raise
    except InvalidArgumentError as error:
        raise HloParseError(
            f"error parsing attribute replica_groups: {error}", line, column) from None
    except ValueError:  # an integer too long for int() to convert
        found = _LONG_NUMBER.search(text)
        at = column + (found.start() if found else 0)
        raise HloParseError("an integer in replica groups does not fit in int64", line,
                            at) from None


def _dimensions(text: str, line: int, column: int) -> tuple[int, ...]:
    braced = text if text.strip().startswith("{") else "{" + text + "}"
    return tuple(parse_int_list(braced, "dimensions", line, column - (braced is not text)))


def _pairs(text: str, line: int, column: int) -> list[tuple[int, int]]:
    # Entries that are not pairs are refused by the reader (``_instruction_checks``).
    return [(a, b) for a, b in parse_int_lists(text, "source_target_pairs", line, column)]


def _slice_sizes(text: str, line: int, column: int) -> list[tuple[int, ...]]:
    return [tuple(item) for item in parse_int_lists(text, "slice_sizes", line, column)]


def _name(text: str, line: int, column: int) -> str:
    return text.strip().lstrip("%")


def decode_collective(
    instruction: Instruction, scope: CollectiveScope, cache: DecodeCache
) -> Collective:
    """The ``Collective`` of a collective ``instruction``, its attributes decoded and checked
    against XLA's parser rules. Collectives the reader's fast path read whose attributes read
    the same but for a leading ``channel_id`` and explicit groups (with the same opcode and
    as many operands: ``decoding_key``) share one decoding, as what is decoded and refused
    depends on that text alone: the first is decoded in full and kept as the template that
    the others are copied from (``copy_decoded``), each with its own channel id, callee
    and groups."""
    c = copy_decoded(instruction, cache.templates, cache.explicit_groups)
    if c is not None:
        return c
    c = Collective(instruction, scope)
    _decode(c, instruction, cache)
    key = decoding_key(instruction)
    if key is not None:
        cache.templates[key] = Collective(instruction, scope, c.decoded(), _settled_mode(c))
    return c


def _settled_mode(c: Collective) -> CollectiveOpGroupMode | None:
    """The group mode of ``c``, which every collective decoded like it shares, or None where
    linking may still change it (async wrappers, dones) or reading it is an error."""
    if c.opcode in ASYNC_OPCODES or c.opcode.endswith("-done"):
        return None
    try:
        return c.mode
    except InvalidArgumentError:
        return None


def _decode(c: Collective, instruction: Instruction, cache: DecodeCache) -> None:
    keys: set[str] = set()
    for key, value, line, column in instruction.attribute_list:
        keys.add(key)
        if key == "channel_id":
            c.channel_id = parse_int(flat_value(value), key, line, column)
        elif key == "replica_groups":
            c.replica_groups = cache.get(key, value, line, column, decode_groups)
            c.groups_text = value
        elif key == "use_global_device_ids":
            c.use_global_device_ids = parse_bool(value, key, line, column)
        elif key == "constrain_layout":
            c.constrain_layout = parse_bool(value, key, line, column)
        elif key == "dimensions":
            c.dimensions = cache.get(key, value, line, column, _dimensions)
        elif key == "source_target_pairs":
            c.source_target_pairs = cache.get(key, value, line, column, _pairs)
        elif key == "slice_sizes":
            c.slice_sizes = cache.get(key, value, line, column, _slice_sizes)
        elif key == "to_apply":
            c.to_apply = _name(value, line, column)
        elif key == "frontend_attributes" and c.opcode in P2P_OPCODES:
            pairs = parse_dictionary(value, line, column).get(SEND_RECV_PAIRS)
            if pairs is not None:
                c.source_target_pairs = send_recv_pairs(pairs, line, column)
    _finish(c, instruction, "mode" in keys)


def _finish(collective: Collective, instruction: Instruction, has_mode: bool) -> None:
    """Defaults and XLA's parser rejections, once all attributes are decoded (``has_mode``:
    a ``mode=`` attribute was written, which turns off the mode check): the mode at the
    operand list's '(', the rest at the instruction's name. (A missing attribute the opcode
    requires is the reader's to refuse: ``_opcodes.REQUIRED_ATTRIBUTES``.)"""
    opcode = collective.opcode
    if opcode == "async-start" and collective.wrapped_opcode is not None:
        opcode = collective.wrapped_opcode  # the shorthand carries its op's attributes
    if opcode in GROUPED_OPCODES and collective.replica_groups is None:
        collective.replica_groups = _EMPTY_GROUPS
    if (
        opcode in _MODE_CHECK_OPCODES
        and collective.use_global_device_ids
        and collective.channel_id is None
        and not has_mode
    ):
        operands = instruction.text.find("(" + instruction.operand_text + ")",
                                         len(instruction.name))
        raise HloParseError(
            "Invalid combination of has_channel_id and use_global_device_ids: "
            "use_global_device_ids=true needs a channel_id", *instruction.position(operands))
    if collective.slice_sizes is not None and len(collective.operands) != 4:
        raise HloParseError(
            "CollectivePermute and CollectivePermuteStart must have exactly four operands for "
            "dynamic-slice and in-place update.", collective.line, collective.column)
    if (
        opcode in ("all-to-all", "ragged-all-to-all")
        and collective.dimensions is not None
        and len(collective.dimensions) != 1
    ):
        raise HloParseError(
            f"error parsing attribute dimensions: {opcode} takes exactly one split dimension, "
            f"got {{{','.join(map(str, collective.dimensions))}}}",
            collective.line, collective.column)


configure_copies(Instruction, ("opcode", "operands", "leading_channel", "groups_span",
                               "shared_attributes", "called_computations"),
                 Collective, ("_instruction", "channel_id", "to_apply", "replica_groups",
                              "_groups_text"))
