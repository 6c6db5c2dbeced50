"""HLO's lexical rules on offsets of a text: white space, comments, names, strings, values.

XLA's lexer (``xla/hlo/parser/hlo_lexer.cc``) skips white space (newlines included),
``/* ... */`` comments and ``// ...`` comments to the end of the line (``\n`` or ``\r``) between
any two tokens, and reads strings across lines, so nothing here treats a line break as special. Every function takes the text and an offset
and returns an offset; errors are ``SyntaxFault`` with the offset where the text goes wrong,
turned into line:column by the reader that owns the text (``_reader``).

The patterns are also spelled out as strings (``STRING``, ``BARE``, ``group_pattern``) so that
the reader's one-line fast path is built from the same lexical rules.

>>> text = "x = {a, /* } */ b}, y"
>>> group_end(text, 4), value_end(text, 4), skip(text, 2)
(18, 18, 2)
>>> value_end("[4,2] <= [2,4] T(1,0), next", 0)
21
"""

from __future__ import annotations

import re

from ..groups._text import int64_value
from ._pure_lexer import next_token
from ._token_values import unescape
from ._tokens import DIM_LABELS, DOUBLE_QUOTED, DXD, FLOAT, INT, PAD, WHITESPACE, TokKind

# White space (XLA's lexer's: no form feed or vertical tab) and both kinds of comment, any
# number of them.
_GAP = f"(?:[{WHITESPACE}]+|" + r"/\*(?:[^*]|\*(?!/))*\*/|//[^\n\r]*)*"
SKIP = re.compile(_GAP)
# A string may span lines (XLA's lexer's); the fast path reads strings on one line.
STRING = DOUBLE_QUOTED
_STRING = re.compile(STRING)
# A run of characters that is no bracket, string, separator, '=' (but '<=') or comment.
BARE = r"(?:[^ \t\r\n\f\v,{}()\[\]\"=/<]++|<=?|/(?![*/]))++"
_BARE = re.compile(BARE)
NAME = re.compile(r"%[A-Za-z_][A-Za-z0-9_.\-]*|[A-Za-z_][A-Za-z0-9_.\-]*")
KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
# After a value and white space, text that continues the same value of several tokens (a
# custom call's literal: its shape's brackets, and its value's).
CONTINUATION = re.compile(r"[{(\[]|<=|T" + _GAP + r"\(")
_SPECIAL = re.compile(r'[{}()\[\]"/]')
_CLOSER = {"{": "}", "(": ")", "[": "]"}
MAX_DEPTH = 256


class SyntaxFault(Exception):
    """A lexical or grammatical error at ``offset`` of the text being read."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


def skip(text: str, pos: int) -> int:
    """The offset of the next token at or after ``pos`` (past white space and comments); an
    unterminated ``/*`` is an error."""
    end = SKIP.match(text, pos).end()  # type: ignore[union-attr]
    if text.startswith("/*", end):
        raise SyntaxFault("unterminated comment", end)
    return end


# XLA's number rules in its order (``_tokens.NUMBER_RULES``): group 1 is a kInt; a decimal,
# dim labels, a DxD or a pad matched first is no integer.
_NUMBER = re.compile(f"(?:{FLOAT})|(?:{DIM_LABELS})|(?:{DXD})|(?:{PAD})|({INT})")


def int64_at(text: str, pos: int, stop: int | None = None) -> tuple[int, int] | None:
    """The value and end of the integer token (kInt) XLA's lexer reads at ``pos`` (before
    ``stop``), or None when it reads none there (another token, or a decimal out of kInt's
    range): the one reader of an integer in HLO text. Its value is XLA's int64
    (``groups._text.int64_value``: past int64's maximum, the int64 of the same bits).

    >>> int64_at("x=-12,", 2), int64_at("18446744073709551615", 0), int64_at("1.5", 0)
    ((-12, 5), (-1, 20), None)
    """
    found = _NUMBER.match(text, pos, len(text) if stop is None else stop)
    if found is None or found.group(1) is None:
        return None
    value = int64_value(found.group(1))
    return None if value is None else (value, found.end())


def string_end(text: str, pos: int) -> int:
    """The offset just past the string literal starting at ``pos``: the one reader of a
    string, which refuses one whose escapes XLA's lexer refuses (``_token_values.unescape``:
    absl's ``CUnescape``)."""
    match = _STRING.match(text, pos)
    if match is None:
        raise SyntaxFault("unterminated string", pos)
    end = match.end()
    if text.find("\\", pos, end) >= 0 and unescape(text[pos + 1:end - 1]) is None:
        raise SyntaxFault("an escape in the string is none XLA's lexer reads", pos)
    return end


def group_end(text: str, pos: int) -> int:
    """The offset just past the bracketed group (``{}``, ``()`` or ``[]``) opening at ``pos``:
    brackets must balance in kind, strings and comments inside are skipped."""
    stack = [text[pos]]
    opened = [pos]
    at = pos + 1
    search = _SPECIAL.search
    while True:
        found = search(text, at)
        if found is None:
            raise SyntaxFault(f"'{stack[-1]}' is never closed (expected '{_CLOSER[stack[-1]]}')",
                              opened[-1])
        char, at = found.group(), found.start()
        if char == '"':
            at = string_end(text, at)
        elif char == "/":
            if text.startswith("/*", at) or text.startswith("//", at):
                at = skip(text, at)
            else:
                at += 1
        elif char in "{([":
            if len(stack) >= MAX_DEPTH:
                raise SyntaxFault(f"values nested more than {MAX_DEPTH} deep", at)
            stack.append(char)
            opened.append(at)
            at += 1
        elif _CLOSER[stack[-1]] != char:
            raise SyntaxFault(f"'{stack[-1]}' is never closed: '{char}' comes before the "
                              f"'{_CLOSER[stack[-1]]}' it needs", opened[-1])
        else:
            stack.pop()
            opened.pop()
            at += 1
            if not stack:
                return at


def value_end(text: str, pos: int, continued: bool = True) -> int:
    """The offset just past the attribute value starting at ``pos``: an atom (a bracketed
    group, a string or one of XLA's tokens) and, for a value of several tokens
    (``continued``: a custom call's literal), each atom after it that continues it
    (``CONTINUATION``), with or without white space between. Anything else after an
    atom, even written against it (``channel_id=1q``, ``{{0,1}}q``), ends the value, where
    XLA's parser of the value stops. The text holds whole statements (``_statements``), so
    its end ends the value."""
    end = _atom_end(text, pos)
    if end == pos:
        raise SyntaxFault("expects a value", pos)
    while continued:
        after = skip(text, end)
        if after >= len(text) or CONTINUATION.match(text, after) is None:
            return end
        end = _atom_end(text, after)
    return end


def _atom_end(text: str, pos: int) -> int:
    """The offset just past the group, string or token of XLA's lexer (``next_token``) at
    ``pos``; ``pos`` when punctuation other than ``<=``, or an attribute's name (``key=``),
    is there. Text XLA's lexer refuses is taken to the end of its run, for the value's
    reader to say what is wrong."""
    if pos >= len(text):
        return pos
    char = text[pos]
    if char in "{([":
        return group_end(text, pos)
    if char == '"':
        return string_end(text, pos)
    bare = _BARE.match(text, pos)
    if bare is None:
        return pos
    kind, _, end, _ = next_token(text, pos)
    if kind == TokKind.kAttributeName:
        return pos  # the next attribute's name: no value (its reader refuses that token)
    return bare.end() if kind == TokKind.kError else end


_LEADING_CHANNEL = re.compile(r",[ \t]*channel_id=[ \t]*([0-9]{1,18})[ \t]*(?=,|$)")


def leading_channel(attribute_text: str) -> tuple[str | None, int, str]:
    """``(channel_id digits, their offset, the attributes after them)`` when an attribute list
    written on one line starts with ``, channel_id=N`` (as XLA prints collectives), else
    ``(None, 0, text)``: the rest is what lines of one collective share, so readers key their
    caches on it."""
    found = _LEADING_CHANNEL.match(attribute_text)
    if found is None:
        return None, 0, attribute_text
    return found.group(1), found.start(1), attribute_text[found.end():]


def group_items(depth: int) -> str:
    """A regex for the inside of a bracketed group on one line, nested at most ``depth``
    deep, with the same strings and comments as ``group_end`` (the fast path's groups)."""
    inner = r'[^{}()\[\]"/\n]++|' + STRING + r"|/\*(?:[^*\n]|\*(?!/))*\*/|/(?![*/])"
    for _ in range(depth):
        item = f"(?:{inner})*+"
        inner = inner + r"|\{" + item + r"\}|\(" + item + r"\)|\[" + item + r"\]"
    return f"(?:{inner})*+"


def group_pattern(depth: int) -> str:
    """A regex for a whole bracketed group on one line (see ``group_items``)."""
    item = group_items(depth - 1)
    return r"\{" + item + r"\}|\(" + item + r"\)|\[" + item + r"\]"
