"""The general reader for one collective instruction, and the attribute decoders and parser
rejections shared with the fast path.

XLA's parser rejections (``hlo_parser.cc``) are raised here as ``HloParseError`` with the
1-based line and column of the offending text, because XLA refuses to build such a module:

- all-reduce, all-reduce-start and reduce-scatter with ``use_global_device_ids=true``, no
  ``channel_id`` and no ``mode=``: "Invalid combination of has_channel_id and
  use_global_device_ids: use_global_device_ids=true needs a channel_id" (XLA's newer wording
  is "Cannot have use_global_device_ids=true without channel_id");
- ``source_target_pairs`` entries that are not pairs: "expects 'source_target_pairs=' to be a
  list of pairs";
- ``slice_sizes`` (in-place permute) without exactly 4 operands;
- ``dimensions`` with other than one element on all-to-all / ragged-all-to-all;
- required attributes missing: ``to_apply`` (all-reduce, all-reduce-start, reduce-scatter),
  ``dimensions`` (all-gather, all-gather-start, reduce-scatter), ``source_target_pairs``
  (collective-permute, collective-permute-start), ``replica_groups`` (collective-broadcast);
- an attribute written twice.

Everything XLA's *verifier* rejects (ids out of range, wrong counts, empty groups, the
all-gather mode error) is left for ``meshtopo.hlo.verify``.
"""

from __future__ import annotations

import re

from .._device_list import CollectiveDeviceList
from .._errors import HloParseError, InvalidArgumentError, LimitError
from ._collective import (
    COLLECTIVE_OPCODES,
    GROUPED_OPCODES,
    P2P_OPCODES,
    SEND_RECV_PAIRS,
    Collective,
    send_recv_pairs,
)
from ._context import ScanContext
from ._explicit import decode_explicit_lists
from ._lexer import (
    Attribute,
    operand_name,
    parse_bool,
    parse_dictionary,
    parse_int,
    parse_int_list,
    parse_int_lists,
    remap_error,
    split_attributes,
    split_operands,
    value_end,
)

_HEAD = re.compile(r"[ \t]*(ROOT[ \t]+)?(%?[^\s=%]+|%[^\s=]+)[ \t]*=[ \t]*")
_OPCODE = re.compile(r"[ \t]*([A-Za-z][\w\-]*)[ \t]*\(")
_MODE_CHECK_OPCODES = frozenset({"all-reduce", "all-reduce-start", "reduce-scatter"})
_REQUIRED = {
    "all-reduce": ("to_apply",), "all-reduce-start": ("to_apply",),
    "reduce-scatter": ("to_apply", "dimensions"), "all-gather": ("dimensions",),
    "all-gather-start": ("dimensions",), "collective-permute": ("source_target_pairs",),
    "collective-permute-start": ("source_target_pairs",),
    "collective-broadcast": ("replica_groups",),
}  # fmt: skip
_FIELDS = {"to_apply": "to_apply", "dimensions": "dimensions",
           "source_target_pairs": "source_target_pairs", "replica_groups": "groups_text"}
_EMPTY_GROUPS = CollectiveDeviceList([])
_LONG_NUMBER = re.compile(r"[0-9]{20,}")


def decode_groups(text: str, line: int, column: int, context: ScanContext) -> CollectiveDeviceList:
    """``replica_groups=`` in any encoding, cached per text; errors point into the input."""
    cached = context.group_cache.get(text)
    if cached is not None:
        return cached
    groups = decode_explicit_lists([text])[0] if len(text) > 256 else None
    if groups is None:
        try:
            groups = CollectiveDeviceList.parse(text, line, column)
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
    context.group_cache[text] = groups
    return groups


def decode_int_list(
    text: str, what: str, line: int, column: int, context: ScanContext
) -> tuple[int, ...]:
    """``{0,1}`` or a bare ``0,1`` as a tuple of ints, cached per text."""
    cached = context.dims_cache.get(text)
    if cached is None:
        braced = text if text.strip().startswith("{") else "{" + text + "}"
        shift = 0 if braced is text else -1
        cached = tuple(parse_int_list(braced, what, line, column + shift))
        context.dims_cache[text] = cached
    return cached


def decode_pairs(text: str, line: int, column: int, context: ScanContext) -> list[tuple[int, int]]:
    """``source_target_pairs=``: each inner list must be a pair; cached per text."""
    cached = context.pairs_cache.get(text)
    if cached is None:
        lists = parse_int_lists(text, "source_target_pairs", line, column)
        if any(len(item) != 2 for item in lists):
            raise HloParseError("expects 'source_target_pairs=' to be a list of pairs", line,
                                column)
        cached = context.pairs_cache[text] = [(a, b) for a, b in lists]
    return cached


def decode_slice_sizes(
    text: str, line: int, column: int, context: ScanContext
) -> list[tuple[int, ...]]:
    """``slice_sizes=`` of an in-place permute (lists of any length); cached per text."""
    cached = context.slice_sizes_cache.get(text)
    if cached is None:
        lists = parse_int_lists(text, "slice_sizes", line, column)
        cached = context.slice_sizes_cache[text] = [tuple(item) for item in lists]
    return cached


def read_line(
    text: str, pos: int, line: int, computation: str | None, context: ScanContext
) -> tuple[Collective | None, int]:
    """Read the instruction starting at offset ``pos`` (a line start) with the general reader.

    Returns the collective (None if the instruction is not a collective) and the offset just
    past the instruction, which may span several physical lines when brackets are still open
    or a line ends with a comma.
    """
    logical, end = _logical_line(text, pos)
    flat = logical.replace("\n", " ").replace("\r", " ")
    try:
        return _read(flat, line, computation, context, _written_text(logical)), end
    except HloParseError as error:
        if "\n" not in logical:
            raise
        raise remap_error(error, logical, line) from None


def _logical_line(text: str, pos: int) -> tuple[str, int]:
    end = text.find("\n", pos)
    end = len(text) if end < 0 else end
    chunk = text[pos:end]
    lines = 1
    while end < len(text) and lines < 1000 and _continues(chunk):
        nxt = text.find("\n", end + 1)
        nxt = len(text) if nxt < 0 else nxt
        if text[end + 1:nxt].strip() in ("}", ""):
            break
        chunk += "\n" + text[end + 1:nxt]
        end = nxt
        lines += 1
    return chunk, end


def _written_text(logical: str) -> str:
    """The instruction as ``Collective.text`` gives it: lines stripped and joined with one
    space, ``ROOT`` left out."""
    text = " ".join(part.strip() for part in logical.split("\n"))
    if text.startswith("ROOT") and text[4:5] in (" ", "\t"):
        text = text[4:].lstrip()
    return text


def _continues(chunk: str) -> bool:
    stripped = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', chunk).rstrip()
    if stripped.endswith(","):
        return True
    return sum(stripped.count(c) for c in "{([") > sum(stripped.count(c) for c in "})]")


def _read(
    text: str, line: int, computation: str | None, context: ScanContext, written: str
) -> Collective | None:
    head = _HEAD.match(text)
    if head is None:
        return None
    end_of_shape = shape_end(text, head.end())
    opcode_match = _OPCODE.match(text, end_of_shape)
    if opcode_match is None or opcode_match.group(1) not in COLLECTIVE_OPCODES:
        return None
    opcode = opcode_match.group(1)
    operands_start = opcode_match.end()
    close = operands_end(text, operands_start, line)
    operands = split_operands(text[operands_start:close], line, operands_start + 1)
    names = [operand_name(op) for op, _ in operands]
    rest = text[close + 1:]
    if rest.strip() and not rest.lstrip().startswith(","):
        raise HloParseError(
            f"unexpected {rest.strip()[:20]!r} after the operands of {head.group(2).lstrip('%')}",
            line, close + 2 + len(rest) - len(rest.lstrip()))
    collective = Collective(
        head.group(2).lstrip("%"), opcode, text[head.end():end_of_shape].strip(),
        tuple(n for n, _ in names), line, head.start(2) + 1, computation, context,
        tail=rest, tail_column=close + 2, source=written,
    )
    collective.is_root = head.group(1) is not None
    if any(shape for _, shape in names):
        collective.inline_shapes = tuple(shape for _, shape in names)
    attributes = split_attributes(rest, line, close + 2)
    keys = apply_attributes(collective, attributes, context)
    finish(collective, "mode" in keys)
    return collective


def shape_end(text: str, pos: int) -> int:
    """The offset where the shape starting at ``pos`` ends (white space at depth 0)."""
    depth = 0
    for index in range(pos, len(text)):
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char in " \t" and depth <= 0 and index > pos:
            return index
    return len(text)


def operands_end(text: str, pos: int, line: int) -> int:
    """The offset of the ')' that closes the operand list starting at ``pos``."""
    while True:
        end = value_end(text, pos, line, 1)
        if end >= len(text):
            raise HloParseError("the operand list is never closed (expected ')')", line, len(text) + 1)
        if text[end] == ")":
            return end
        if text[end] != ",":
            raise HloParseError(f"unexpected '{text[end]}' in the operand list", line, end + 1)
        pos = end + 1


def apply_attributes(
    collective: Collective, attributes: list[Attribute], context: ScanContext
) -> frozenset[str]:
    """Decode the attributes XLA interprets; return the set of keys written."""
    seen: set[str] = set()
    line = collective.line
    for key, value, column in attributes:
        if key in seen:
            raise HloParseError(f"attribute {key} already exists", line, column)
        seen.add(key)
        if key == "channel_id":
            collective.channel_id = parse_int(value, key, line, column)
        elif key == "replica_groups":
            collective.replica_groups = decode_groups(value, line, column, context)
            collective.groups_text = value
        elif key == "use_global_device_ids":
            collective.use_global_device_ids = parse_bool(value, key, line, column)
        elif key == "constrain_layout":
            collective.constrain_layout = parse_bool(value, key, line, column)
        elif key == "dimensions":
            collective.dimensions = decode_int_list(value, key, line, column, context)
        elif key == "source_target_pairs":
            collective.source_target_pairs = decode_pairs(value, line, column, context)
        elif key == "slice_sizes":
            collective.slice_sizes = decode_slice_sizes(value, line, column, context)
        elif key == "to_apply":
            collective.to_apply = value.lstrip("%")
        elif key == "frontend_attributes" and collective.opcode in P2P_OPCODES:
            pairs = parse_dictionary(value, line, column).get(SEND_RECV_PAIRS)
            if pairs is not None:
                collective.source_target_pairs = send_recv_pairs(pairs, line, column)
    return frozenset(seen)


def finish(collective: Collective, has_mode: bool = False) -> None:
    """Defaults and XLA's parser rejections, once all attributes are decoded (``has_mode``:
    a ``mode=`` attribute was written, which turns off the mode check)."""
    opcode = collective.opcode
    if opcode in GROUPED_OPCODES and collective.replica_groups is None:
        collective.replica_groups = _EMPTY_GROUPS
    for key in _REQUIRED.get(opcode, ()):
        if getattr(collective, _FIELDS[key]) is None:
            raise HloParseError(
                f"attribute {key} is expected but not seen", collective.line, collective.column)
    if (
        opcode in _MODE_CHECK_OPCODES
        and collective.use_global_device_ids
        and collective.channel_id is None
        and not has_mode
    ):
        raise HloParseError(
            "Invalid combination of has_channel_id and use_global_device_ids: "
            "use_global_device_ids=true needs a channel_id",
            collective.line, collective.column)
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
