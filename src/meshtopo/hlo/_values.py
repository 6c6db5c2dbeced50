"""Typed readers of attribute values, on the raw text the reader kept.

A value's text may hold line breaks and comments (XLA reads them as white space):
``flat_value`` turns them into spaces of the same length before a typed reader runs, and
``relocate`` moves an error's column back to the physical line. Errors are ``HloParseError``
with the 1-based line and column of the offending character.

>>> parse_int("42", "index", 1, 1)
42
"""

from __future__ import annotations

import re

from .._errors import HloParseError
from ..groups._text import WHITESPACE
from ._pure_lexer import next_token
from ._syntax import SyntaxFault
from ._token_values import int_value, unescape
from ._tokens import STRING as QUOTED
from ._tokens import TokKind

# A comment, or a string (either quote, as XLA's lexer quotes them), in which no comment
# starts.
_COMMENT_OR_STRING = re.compile(f"(?:{QUOTED})" + r"|/\*(?:[^*]|\*(?!/))*\*/|//[^\n\r]*")
# A decimal integer of any length (``parse_int``'s, to say one is out of range).
_DIGITS = re.compile(r"-?[0-9]+")


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
    """The integer ``text`` holds (one kInt token, white space and comments around it);
    anything else is an ``HloParseError`` naming ``what``."""
    kind, start, end, _ = next_token(text, 0)
    if kind == TokKind.kInt and next_token(text, end)[0] == TokKind.kEof:
        return int_value(text, start, end)
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


def unquote(text: str) -> str:
    """The value of a quoted string, its escapes decoded as XLA's lexer decodes them
    (``_token_values.unescape``; bytes that are no UTF-8 come back as surrogate escapes);
    unquoted text is returned as is. A string whose escapes XLA's lexer refuses is a
    ``SyntaxFault`` at its start."""
    if len(text) < 2 or text[0] not in "\"'" or text[-1] != text[0]:
        return text
    value = unescape(text[1:-1])
    if value is None:
        raise SyntaxFault(f"an escape in {text[:40]} is none XLA's lexer reads", 0)
    return value.decode("utf-8", "surrogateescape")


