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

from ._token_cursor import GiveUp, TokenCursor, read_attribute, sub_attributes, to_the_end

_STRINGS = frozenset({"op_type", "op_name", "source_file", "deduplicated_name",
                      "scheduling_name", "metadata_payload"})
_INT32S = frozenset({"source_line", "source_end_line", "source_column", "source_end_column",
                     "stack_frame_id"})
_PROFILE_TYPES = range(4)  # OpMetadata's ProfileType values
# Metadata as XLA prints it: fields of strings or numbers of at most 9 digits, one space
# between them. A string's escapes are those XLA prints (CEscape), each one its lexer reads
# (any other is read token by token, by the lexer).
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
    ``line:column``) read by the one reader of metadata (``read_metadata``): strings
    decoded, numbers as written; an ``HloParseError`` where XLA refuses it (``error parsing
    attribute metadata`` at the attribute where XLA gives it up)."""
    return read_attribute("metadata", _WHOLE, value, line, column)


def read_metadata(c: TokenCursor) -> dict[str, str]:
    """XLA's ``ParseMetadata`` at the cursor's ``{`` (its fields sub-attributes, none
    required): the fields, strings decoded, numbers as written, the cursor moved past the
    ``}``; refused in XLA's words at XLA's token. A profile type that is none of XLA's fails
    the parse without a message of its own once the whole value is read (``GiveUp``)."""
    profile_types: list[int] = []
    fields = sub_attributes(c, {**dict.fromkeys(_STRINGS, TokenCursor.string),
                                **dict.fromkeys(_INT32S, _int32),
                                "profile_type": lambda c: _profile_type(c, profile_types)},
                            required=False)
    if not all(_int32_bits(n) in _PROFILE_TYPES for n in profile_types):
        raise GiveUp
    return fields


def _int32(c: TokenCursor) -> str:
    """An int32 field's number, as written."""
    at = c.start
    if not -_INT32 <= c.integer() < _INT32:
        raise c.error("value out of range for int32_t", at)
    return c.text[at:c.previous_end]


def _profile_type(c: TokenCursor, numbers: list[int]) -> str:
    """A profile type's braced list of numbers, as written (its numbers added to
    ``numbers``)."""
    at = c.start
    numbers += c.int_list()
    return c.text[at:c.previous_end]


_WHOLE = to_the_end(read_metadata, "expects the metadata to end at its '}'")


def _int32_bits(number: int) -> int:
    """The int32 of the low 32 bits of ``number`` (XLA casts a profile type so)."""
    low = number & 0xFFFFFFFF
    return low - 2**32 if low >= _INT32 else low
