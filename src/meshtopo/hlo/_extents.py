"""Where a bracketed group and an attribute's value end, found on XLA's tokens: brackets,
strings (either quote) and comments are what XLA's lexer says they are.

Errors are ``SyntaxFault`` at an offset of the text: a group whose brackets do not balance
(never closed, or closed by another kind), nested deeper than any value may be, or holding a
string or comment XLA's lexer cannot end; a value that is no token at all.

>>> text = "x = {a, /* } */ '}' b}, y"
>>> group_end(text, 4), value_end(text, 4)
(22, 22)
>>> value_end("[4,2] <= [2,4] T(1,0), next", 0)
21
>>> value_end("[4,2] <= [2,4] T(1,0), next", 0, continued=False)
5
"""

from __future__ import annotations

import re

from ._syntax import MAX_DEPTH, SyntaxFault
from ._token_cursor import TokenCursor
from ._tokens import TokKind

K = TokKind
_CLOSING: dict[int, int] = {K.kLbrace: K.kRbrace, K.kLparen: K.kRparen, K.kLsquare: K.kRsquare}
_CLOSERS = frozenset(_CLOSING.values())
_SPELLING: dict[int, str] = {K.kLbrace: "{", K.kRbrace: "}", K.kLparen: "(", K.kRparen: ")",
             K.kLsquare: "[", K.kRsquare: "]"}
# Tokens no value starts with: what ends a value, and the next attribute's name.
_NO_VALUE = frozenset({K.kEof, K.kComma, K.kEqual, K.kAttributeName}) | _CLOSERS
# The characters an error token's run goes on through, for the value's reader to say what is
# wrong with it (white space, brackets, quotes, ',', '=' and the start of a comment end it).
_ERROR_RUN = re.compile(r"(?:[^ \t\r\n\f\v,{}()\[\]\"'=/<]++|<=?|/(?![*/]))++")


def group_end(text: str, pos: int) -> int:
    """The offset just past the bracketed group (``{}``, ``()`` or ``[]``) opening at
    ``pos``."""
    return _group(TokenCursor(text, 1, 0, pos))


def value_end(text: str, pos: int, continued: bool = True) -> int:
    """The offset just past the attribute value starting at ``pos``: an atom (a bracketed
    group or one token) and, for a value of several tokens (``continued``: a custom call's
    literal, a shape and its value), each atom after it that continues it (an opening
    bracket, ``<=``, or ``T`` and ``(``). Anything else after an atom, even written against
    it (``channel_id=1q``, ``{{0,1}}q``), ends the value, where XLA's parser of the value
    stops; so does the end of the text."""
    c = TokenCursor(text, 1, 0, pos)
    end = _atom(c)
    while continued and (c.kind in _CLOSING or c.kind == K.kLeq or (
            c.kind == K.kIdent and c.word == "T" and c.look_ahead() == K.kLparen)):
        end = _atom(c)
    return end


def _atom(c: TokenCursor) -> int:
    """Past the group or token at the cursor: where it ends. An error token is taken with
    the characters after it up to white space or punctuation."""
    kind = c.kind
    if kind in _CLOSING:
        return _group(c)
    if kind in _NO_VALUE:
        raise SyntaxFault("expects a value", c.start)
    if kind == K.kError:
        _refuse_unended(c)
        run = _ERROR_RUN.match(c.text, c.start)
        c.jump(c.end if run is None else max(run.end(), c.end))
        return c.previous_end
    end = c.end
    c.lex()
    return end


def _group(c: TokenCursor) -> int:
    """Past the group opening at the cursor: where its closing bracket ends."""
    opened = [(c.kind, c.start)]
    c.lex()
    while True:
        kind = c.kind
        if kind in _CLOSING:
            if len(opened) >= MAX_DEPTH:
                raise SyntaxFault(f"values nested more than {MAX_DEPTH} deep", c.start)
            opened.append((kind, c.start))
        elif kind in _CLOSERS:
            opener, at = opened.pop()
            if _CLOSING[opener] != kind:
                raise SyntaxFault(
                    f"'{_SPELLING[opener]}' is never closed: '{_SPELLING[kind]}' comes before "
                    f"the '{_SPELLING[_CLOSING[opener]]}' it needs", at)
            if not opened:
                end = c.end
                c.lex()
                return end
        elif kind == K.kEof:
            opener, at = opened[-1]
            raise SyntaxFault(f"'{_SPELLING[opener]}' is never closed (expected "
                              f"'{_SPELLING[_CLOSING[opener]]}')", at)
        elif kind == K.kError:
            _refuse_unended(c)
        c.lex()


def _refuse_unended(c: TokenCursor) -> None:
    """Refuse the error token at the cursor when it is a string or comment XLA's lexer
    cannot end, or a string whose escapes it refuses (a group or value goes no further)."""
    text, start = c.text, c.start
    if text.startswith(("/*", "//"), start):
        raise SyntaxFault("unterminated comment", start)
    if text[start] in "\"'":
        message = ("unterminated string" if c.end - start == 1 else
                   "an escape in the string is none XLA's lexer reads")
        raise SyntaxFault(message, start)
