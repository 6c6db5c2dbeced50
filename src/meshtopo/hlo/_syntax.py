"""HLO's lexical rules on offsets of a text: white space, comments and names.

XLA's lexer (``xla/hlo/parser/hlo_lexer.cc``) skips white space (newlines included),
``/* ... */`` comments and ``// ...`` comments to the end of the line (``\n`` or ``\r``)
between any two tokens, and reads strings across lines, so nothing here treats a line break
as special. Every function takes the text and an offset and returns an offset; errors are
``SyntaxFault`` with the offset where the text goes wrong, turned into line:column by the
reader that owns the text (``_reader``). Where a group or a value ends is found on the
tokens themselves (``_extents``).

>>> skip("x  /* c */ y", 1)
11
"""

from __future__ import annotations

import re

from ._tokens import WHITESPACE

# White space (XLA's lexer's: no form feed or vertical tab) and both kinds of comment, any
# number of them.
_GAP = f"(?:[{WHITESPACE}]+|" + r"/\*(?:[^*]|\*(?!/))*\*/|//[^\n\r]*)*"
SKIP = re.compile(_GAP)
NAME = re.compile(r"%[A-Za-z_][A-Za-z0-9_.\-]*|[A-Za-z_][A-Za-z0-9_.\-]*")
MAX_DEPTH = 256


class SyntaxFault(Exception):
    """A lexical or grammatical error at ``offset`` of the text being read."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


def skip(text: str, pos: int) -> int:
    """The offset of the next token at or after ``pos`` (past white space and comments); an
    unterminated ``/*`` is XLA's lexer's error token there, refused by whatever reads it as
    the token it expects."""
    return SKIP.match(text, pos).end()  # type: ignore[union-attr]


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
