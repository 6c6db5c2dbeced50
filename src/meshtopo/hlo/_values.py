"""Typed readers of attribute values, on the raw text the reader kept.

A value's text may hold line breaks and comments (XLA reads them as white space):
``flat_value`` turns them into spaces of the same length before a typed reader runs, and
``relocate`` moves an error's column back to the physical line. Errors are ``HloParseError``
with the 1-based line and column of the offending character.

>>> parse_int_lists("{{0,1},{2,3}}", 1, 1)
[[0, 1], [2, 3]]
"""

from __future__ import annotations

import re

from .._errors import HloParseError
from ..groups._text import WHITESPACE, int64_value
from ._syntax import SyntaxFault, int64_at, skip
from ._token_values import unescape
from ._tokens import STRING as QUOTED

# A comment, or a string (either quote, as XLA's lexer quotes them), in which no comment
# starts.
_COMMENT_OR_STRING = re.compile(f"(?:{QUOTED})" + r"|/\*(?:[^*]|\*(?!/))*\*/|//[^\n\r]*")
# An element of a braced integer list, read by its characters (see ``int_list_at``), and a
# list as XLA prints it, which ``int_list_at`` takes whole: no white space, elements of at
# most 18 digits (so each is an int64 it reads).
_DIGITS = re.compile(r"-?[0-9]+")
_PRINTED_LIST = re.compile(r"\{(-?[0-9]{1,18}(?:,-?[0-9]{1,18})*)?\}")


def flat_value(text: str) -> str:
    """``text`` with comments and line breaks turned into spaces of the same length, so that
    the typed readers below see one line and their offsets still count into ``text``."""
    if "\n" not in text and "/" not in text and "\r" not in text:
        return text
    return without_comments(text, True).replace("\n", " ").replace("\r", " ")


def without_comments(text: str, same_length: bool) -> str:
    """``text`` with each comment outside strings (``"a//b"`` holds none) replaced by spaces
    of its length (``same_length``) or by one space."""
    if "/" not in text:
        return text

    def blank(found: re.Match[str]) -> str:
        written = found.group()
        if written[0] in "\"'":
            return written
        return " " * len(written) if same_length else " "

    return _COMMENT_OR_STRING.sub(blank, text)


def relocate(error: HloParseError, text: str, line: int, column: int) -> HloParseError:
    """``error`` raised at a column of ``text`` read as one line starting at ``line:column``,
    moved to the physical line and column where its offset falls."""
    offset = min(max(error.column - column, 0), len(text))
    newlines = text.count("\n", 0, offset)
    if newlines == 0 or error.line != line:
        return error
    return HloParseError(error.message, line + newlines, offset - text.rfind("\n", 0, offset),
                         error.source)


def parse_int(text: str, what: str, line: int, column: int) -> int:
    """The integer ``text`` holds (one kInt token, ``_syntax.int64_at``, white space around
    it); anything else is an ``HloParseError`` naming ``what``."""
    at = skip(text, 0)
    found = int64_at(text, at)
    if found is not None and skip(text, found[1]) == len(text):
        return found[0]
    digits = _DIGITS.fullmatch(text.strip(WHITESPACE))
    if digits is not None:  # a decimal out of range
        raise HloParseError(f"integer {digits.group()[:24]}... in {what} does not fit in int64",
                            line, column)
    raise HloParseError(f"expected an integer for {what} but found {text[:40]!r}", line, column)


def parse_bool(text: str, what: str, line: int, column: int) -> bool:
    """``true`` or ``false``."""
    if text in ("true", "false"):
        return text == "true"
    raise HloParseError(f"expected true or false for {what} but found {text[:40]!r}", line, column)


def int_list_at(text: str, at: int) -> tuple[list[int], int]:
    """The braced integer list ``{1, 2, 3}`` (may be empty) starting at ``at`` and the offset
    past its ``}``, as XLA reads one (``kBracedInt64List``, ``ParseInt64List``): each
    element read by its characters (``-?[0-9]+``, an int64 as ``groups._text.int64_value``
    gives it), then ``,`` or ``}``. The one reader of an integer list: errors are
    ``SyntaxFault`` in XLA's words at XLA's offset, "expects integer" where no element is,
    "expects a list to end with kRbrace" where neither ``,`` nor ``}`` follows one (a
    missing ``{`` is reported so too). ``text`` holds no comments (``flat_value``).

    >>> int_list_at("{1, -2,3} x", 0), int_list_at("{}", 0)
    (([1, -2, 3], 9), ([], 2))
    """
    printed = _PRINTED_LIST.match(text, at)
    if printed is not None:  # as XLA prints one: every element an int64, read at once
        body = printed.group(1)
        return ([int(item) for item in body.split(",")] if body else []), printed.end()
    if not text.startswith("{", at):
        raise SyntaxFault("expects a list to end with kRbrace", at)
    at = skip(text, at + 1)
    values: list[int] = []
    if text.startswith("}", at):
        return values, at + 1
    while True:
        found = _DIGITS.match(text, at)
        value = None if found is None else int64_value(found.group())
        if value is None:
            raise SyntaxFault("expects integer", at)
        values.append(value)
        at = skip(text, found.end())  # type: ignore[union-attr]
        if text.startswith("}", at):
            return values, at + 1
        if not text.startswith(",", at):
            raise SyntaxFault("expects a list to end with kRbrace", at)
        at = skip(text, at + 1)


def parse_int_list(text: str, line: int, column: int) -> list[int]:
    """``{1,2,3}`` (braces required, may be empty; white space around it) as a list of
    int64, read by ``int_list_at``; an ``HloParseError`` in XLA's words at the offending
    character of ``text``, which starts at ``line:column`` (a text over several lines is
    read flat, its error moved back to where it is)."""
    flat = flat_value(text)
    try:
        values, end = int_list_at(flat, skip(flat, 0))
        if skip(flat, end) != len(flat):
            raise SyntaxFault("expects the list to end at its '}'", skip(flat, end))
    except SyntaxFault as fault:
        raise relocate(HloParseError(fault.message, line, column + fault.offset), text, line,
                       column) from None
    return values


def check_int_list(value: str, line: int, column: int) -> None:
    """Refuse ``value`` (an attribute XLA reads as a braced integer list, ``dimensions``)
    as XLA refuses it (``parse_int_list``)."""
    parse_int_list(value, line, column)


def parse_int_lists(text: str, line: int, column: int) -> list[list[int]]:
    """``{{0,1},{2,3}}`` as a list of int64 lists (XLA's ``kBracedInt64ListList``), read as
    XLA's ``ParseList`` reads it: ``'{' [list (',' list)*] '}'``, each list by
    ``int_list_at``, where any other token in place of a list or the end (``{{0,1}{1,2}}``,
    ``{,{0,1}}``, ``{{0,1},}``) is refused at that token in XLA's words."""
    pos = skip(text, 0)
    if not text.startswith("{", pos):
        raise HloParseError("expects a list starting with kLbrace", line, column + pos)
    lists: list[list[int]] = []
    pos = skip(text, pos + 1)
    if text.startswith("}", pos) and skip(text, pos + 1) == len(text):
        return lists
    while True:
        if not text.startswith("{", pos):
            raise HloParseError("expects a list to end with kRbrace", line, column + pos)
        try:
            found, pos = int_list_at(text, pos)
        except SyntaxFault as fault:
            raise HloParseError(fault.message, line, column + fault.offset) from None
        lists.append(found)
        pos = skip(text, pos)
        if text.startswith(",", pos):
            pos = skip(text, pos + 1)
        elif text.startswith("}", pos):
            if skip(text, pos + 1) != len(text):
                raise HloParseError("expects the list to end at its '}'", line,
                                    column + skip(text, pos + 1))
            return lists
        else:
            raise HloParseError("expects a list to end with kRbrace", line, column + pos)


def check_int_lists(value: str, line: int, column: int) -> None:
    """Refuse ``value`` (an attribute XLA reads as a braced list of integer lists:
    ``source_target_pairs``, a permute's ``slice_sizes``, explicit ``replica_groups``) as XLA's
    reader of it refuses it (``parse_int_lists``), comments and line breaks in it read as
    white space, at its token."""
    try:
        parse_int_lists(flat_value(value), line, column)
    except HloParseError as error:
        raise relocate(error, value, line, column) from None


def unquote(text: str) -> str:
    """The value of a quoted string, its escapes decoded as XLA's lexer decodes them
    (``_token_values.unescape``; bytes that are no UTF-8 come back as surrogate escapes);
    unquoted text is returned as is. A string whose escapes XLA's lexer refuses is a
    ``SyntaxFault`` at its start."""
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        return text
    value = unescape(text[1:-1])
    if value is None:
        raise SyntaxFault(f"an escape in {text[:40]} is none XLA's lexer reads", 0)
    return value.decode("utf-8", "surrogateescape")


