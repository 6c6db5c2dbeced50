"""Attribute values that are braced integer lists (``dimensions={1,0}``) or lists of them
(``source_target_pairs={{0,1},{1,2}}``), read by the token cursor as XLA's
``ParseInt64List`` and ``ParseInt64ListList`` read them; a list as XLA prints it (no white
space, elements of at most 18 digits, so each is an int64) is taken whole at once.

>>> parse_int_lists("{{0,1},{2,3}}", 1, 1), parse_int_list("{ 1, -2 }", 1, 1)
([[0, 1], [2, 3]], [1, -2])
>>> parse_int_lists("{{0,1}{1,2}}", 1, 1)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 1:7: expects a list to end with kRbrace
"""

from __future__ import annotations

import re

from ._token_cursor import TokenCursor, read_value, to_the_end

_ELEMENTS = r"(?:-?[0-9]{1,18}(?:,-?[0-9]{1,18})*)?"
_PRINTED_LIST = re.compile(r"\{(" + _ELEMENTS + r")\}")
_PRINTED_LISTS = re.compile(r"\{((?:\{" + _ELEMENTS + r"\}(?:,\{" + _ELEMENTS + r"\})*)?)\}")
_TO_THE_END = "expects the list to end at its '}'"
_INT_LIST = to_the_end(TokenCursor.int_list, _TO_THE_END)
_INT_LISTS = to_the_end(TokenCursor.int_lists, _TO_THE_END)


def parse_int_list(text: str, line: int, column: int) -> list[int]:
    """``{1,2,3}`` (braces required, may be empty; white space and comments around its
    tokens) as a list of int64; an ``HloParseError`` in XLA's words at the offending token
    of ``text``, which starts at ``line:column``."""
    printed = _PRINTED_LIST.fullmatch(text)
    if printed is not None:
        body = printed.group(1)
        return [int(item) for item in body.split(",")] if body else []
    return read_value(_INT_LIST, text, line, column)


def check_int_list(value: str, line: int, column: int) -> None:
    """Refuse ``value`` (an attribute XLA reads as a braced integer list, ``dimensions``)
    as XLA refuses it (``parse_int_list``)."""
    parse_int_list(value, line, column)


def parse_int_lists(text: str, line: int, column: int) -> list[list[int]]:
    """``{{0,1},{2,3}}`` as a list of int64 lists (XLA's ``kBracedInt64ListList``), where
    any other token in place of a list or the end (``{{0,1}{1,2}}``, ``{,{0,1}}``,
    ``{{0,1},}``) is refused at that token in XLA's words; ``text`` starts at
    ``line:column``."""
    printed = _PRINTED_LISTS.fullmatch(text)
    if printed is not None:
        body = printed.group(1)
        return [[int(item) for item in group.split(",")] if group else []
                for group in body[1:-1].split("},{")] if body else []
    return read_value(_INT_LISTS, text, line, column)


def check_int_lists(value: str, line: int, column: int) -> None:
    """Refuse ``value`` (an attribute XLA reads as a braced list of integer lists:
    ``source_target_pairs``, a permute's ``slice_sizes``, explicit ``replica_groups``) as XLA's
    reader of it refuses it (``parse_int_lists``)."""
    parse_int_lists(value, line, column)
