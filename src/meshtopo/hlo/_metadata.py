"""An instruction's ``metadata={...}`` checked as XLA's parser reads it (``ParseMetadata``).

The value is ``{`` then attributes, each optionally after a ``,``, then ``}``: the attribute
name and its ``=`` are one token, names are XLA's ``OpMetadata`` fields (each once), and
values are strings, int32 numbers or, for ``profile_type``, a braced list of numbers. Tokens
may follow one another without white space (``source_line=3op_type="x"``), as XLA's lexer
splits them. Refusals are XLA's words at XLA's token:

>>> check_metadata('{op_name="x" source_line=3}', 1, 10)
>>> check_metadata('{op_nam="x"}', 1, 10)
Traceback (most recent call last):
meshtopo._errors.HloParseError: 1:11: unexpected attribute "op_nam". Allowed attributes: \
deduplicated_name, metadata_payload, op_name, op_type, profile_type, scheduling_name, \
source_column, source_end_column, source_end_line, source_file, source_line, stack_frame_id
"""

from __future__ import annotations

import re

from .._errors import HloParseError
from ._syntax import SyntaxFault, int64_at, skip, string_end
from ._values import flat_value, int_list_at, relocate, unquote

_STRINGS = frozenset({"op_type", "op_name", "source_file", "deduplicated_name",
                      "scheduling_name", "metadata_payload"})
_INT32S = frozenset({"source_line", "source_end_line", "source_column", "source_end_column",
                     "stack_frame_id"})
_KEYS = _STRINGS | _INT32S | {"profile_type"}
_ALLOWED = ", ".join(sorted(_KEYS))
_PROFILE_TYPES = range(4)  # OpMetadata's ProfileType values
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*=")
# Metadata as XLA prints it: fields of strings or numbers of at most 9 digits, one space
# between them. A string's escapes are those XLA prints (CEscape), each one its lexer reads
# (any other is read token by token: ``_syntax.string_end`` decides).
_FIELD = ("(?:(?:" + "|".join(sorted(_STRINGS)) + r')="(?:[^"\\\n]|\\[abfnrtv\\?\'"]|\\[0-3][0-7]{2})*"|(?:'
          + "|".join(sorted(_INT32S)) + r")=-?[0-9]{1,9})")
_PRINTED = re.compile(r"\{(?:" + _FIELD + "(?: " + _FIELD + r")*)?\}")
_FIELD_NAME = re.compile(r"[{ ]([a-z_]+)=")
_INT32 = 2**31


def check_metadata(value: str, line: int, column: int) -> None:
    """Refuse ``value`` (a ``metadata`` attribute's text, starting at ``line:column``) as
    XLA's parser does: an ``HloParseError`` at the offending token; None when XLA takes it."""
    if not printed_metadata(value):
        metadata_fields(value, line, column)


def printed_metadata(text: str) -> bool:
    """True when ``text`` is metadata as XLA prints it, which XLA takes: fields joined by
    one space, each once, strings or numbers of at most 9 digits (every other text is
    checked token by token). A field's name is found after '{' or a space, which may also
    find one inside a string: then the text is checked token by token too."""
    if _PRINTED.fullmatch(text) is None:
        return False
    keys = _FIELD_NAME.findall(text)
    return len(set(keys)) == len(keys)


def metadata_fields(value: str, line: int, column: int) -> dict[str, str]:
    """The fields of ``value`` (a ``metadata`` attribute's text, starting at
    ``line:column``) read by the one reader of metadata (``check_metadata``'s): strings
    decoded, numbers as written; an ``HloParseError`` where XLA refuses it."""
    try:
        return _check(flat_value(value), line, column)
    except HloParseError as error:
        raise relocate(error, value, line, column) from None


def _check(text: str, line: int, column: int) -> dict[str, str]:
    """The fields of the metadata ``text`` (one line), refused as XLA refuses them."""
    fields, end, taken = metadata_at(text, skip(text, 0), line, column)
    if not taken:  # XLA says so at the attribute, not at the value.
        raise HloParseError("error parsing attribute metadata", line,
                            max(column - len("metadata="), 1))
    if skip(text, end) != len(text):  # a value the reader cut off is one
        raise HloParseError("expects the metadata to end at its '}'", line, column + end)
    return fields


def metadata_at(text: str, at: int, line: int, column: int
                ) -> tuple[dict[str, str], int, bool]:
    """The fields of the metadata written at offset ``at`` of ``text`` (one line, its offset
    0 at ``line:column``), refused as XLA's parser refuses them, the offset just past its
    '}', and whether XLA takes what it read: a profile type that is none of XLA's fails the
    parse of the metadata without a message of its own, once the whole value is read."""
    fields: dict[str, str] = {}
    taken = True
    if not text.startswith("{", at):
        raise HloParseError("expects '{' to start sub attributes", line, column + at)
    at = skip(text, at + 1)
    while not text.startswith("}", at):
        if text.startswith(",", at):
            at = skip(text, at + 1)
        name = _NAME.match(text, at)
        if name is None:
            raise HloParseError("expects attribute name", line, column + at)
        key = name.group()[:-1]
        if key not in _KEYS:
            raise HloParseError(
                f'unexpected attribute "{key}". Allowed attributes: {_ALLOWED}', line, column + at)
        if key in fields:
            raise HloParseError(f"attribute {key} already exists", line, column + at)
        at = skip(text, name.end())
        if key in _STRINGS:
            if not text.startswith('"', at):
                raise HloParseError("expects string", line, column + at)
            try:
                end = string_end(text, at)
            except SyntaxFault as fault:
                raise HloParseError(fault.message, line, column + fault.offset) from None
            fields[key], at = unquote(text[at:end]), end
        else:
            value_at = at
            numbers, at = _numbers(text, at, key == "profile_type", line, column)
            if key == "profile_type" and not all(_int32_bits(n) in _PROFILE_TYPES
                                                 for n in numbers):
                taken = False
            if key != "profile_type" and not -_INT32 <= numbers[0] < _INT32:
                raise HloParseError("value out of range for int32_t", line, column + value_at)
            fields[key] = text[value_at:at]
        at = skip(text, at)
    return fields, at + 1, taken


def _int32_bits(number: int) -> int:
    """The int32 of the low 32 bits of ``number`` (XLA casts a profile type so)."""
    low = number & 0xFFFFFFFF
    return low - 2**32 if low >= _INT32 else low


def _integer(text: str, at: int, line: int, column: int) -> tuple[int, int]:
    """The integer token at ``at`` (``_syntax.int64_at``) and where it ends."""
    found = int64_at(text, at)
    if found is None:
        raise HloParseError("expects integer", line, column + at)
    return found


def _numbers(text: str, at: int, braced: bool, line: int, column: int
             ) -> tuple[list[int], int]:
    """One integer, or with ``braced`` a ``{n, ...}`` list (``_values.int_list_at``), at
    ``at``, and where it ends."""
    if not braced:
        number, end = _integer(text, at, line, column)
        return [number], end
    try:
        return int_list_at(text, at)
    except SyntaxFault as fault:
        raise HloParseError(fault.message, line, column + fault.offset) from None
