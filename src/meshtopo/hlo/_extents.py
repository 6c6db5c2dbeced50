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

import itertools
import re

import numpy as np

from . import _native
from ._syntax import MAX_DEPTH, SyntaxFault
from ._token_cursor import TokenCursor
from ._tokens import TokKind

K = TokKind
_CLOSING: dict[int, int] = {K.kLbrace: K.kRbrace, K.kLparen: K.kRparen, K.kLsquare: K.kRsquare}
_CLOSERS = frozenset(_CLOSING.values())
_SPELLING: dict[int, str] = {K.kLbrace: "{", K.kRbrace: "}", K.kLparen: "(", K.kRparen: ")",
             K.kLsquare: "[", K.kRsquare: "]"}
_OPENS = np.zeros(256, bool)
_OPENS[list(_CLOSING)] = True
_CLOSES = np.zeros(256, bool)
_CLOSES[list(_CLOSERS)] = True
_CLOSER_OF = np.zeros(256, np.uint8)
_CLOSER_OF[list(_CLOSING)] = list(_CLOSING.values())
_NATIVE = _native.TOKENIZER == "native"
_FIRST_TOKENS = 64  # a group's tokens walked first; sixteen times more lexed each time after,
_ALL_TOKENS = 1 << 20  # then all
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
    """Past the group opening at the cursor: where its closing bracket ends. Its first
    tokens are walked; a group that goes on past them has its tokens lexed at once, more
    each time it goes on past those, and its brackets matched with numpy; where they do not
    show it closed and well formed, the walk goes on to say what is wrong."""
    start = c.start
    end = _walk(c, _FIRST_TOKENS if _NATIVE else None)
    if end is not None:
        return end
    most = _FIRST_TOKENS * 16
    while True:
        kinds, _, ends = _native.lex(c.text, start, most)
        closing = _closing_index(np.frombuffer(kinds, np.uint8))
        if closing is not None and closing >= 0:
            end = memoryview(ends).cast("q")[closing]
            c.jump(end)
            return end
        if closing is not None or len(kinds) < most or most == 0:
            break  # not well formed, or the text ends in it
        most = most * 16 if most < _ALL_TOKENS else 0
    c.jump(start)
    return _walk(c, None)  # type: ignore[return-value]  # unbounded: it ends or refuses


def _closing_index(kinds: np.ndarray) -> int | None:
    """The index of the token that closes the group opening at token 0 of ``kinds``; -1
    when a bracket is closed by another kind, one is nested past ``MAX_DEPTH`` or an error
    token comes first; None when none of them closes it."""
    opens, closes = _OPENS[kinds], _CLOSES[kinds]
    depth = np.cumsum(opens.astype(np.int32) - closes)  # after each token
    zero = np.flatnonzero(depth == 0)
    if zero.size == 0:
        return None
    last = int(zero[0])
    if (kinds[:last] == K.kError).any() or depth[:last].max() > MAX_DEPTH:
        return -1
    brackets = np.flatnonzero(opens[:last + 1] | closes[:last + 1])
    # An opener's level is the depth before it, a closer's the depth after it: in text order
    # within one level, each opener is followed by its closer.
    level = depth[brackets] - opens[brackets]
    pairs = kinds[brackets[np.argsort(level, kind="stable")]].reshape(-1, 2)
    return last if (_CLOSER_OF[pairs[:, 0]] == pairs[:, 1]).all() else -1


def _walk(c: TokenCursor, most: int | None) -> int | None:
    """Past the group opening at the cursor, token by token, refusing what is wrong with
    it; None (the cursor moved on) when it is not closed within its first ``most`` tokens."""
    opened = [(c.kind, c.start)]
    c.lex()
    for _ in itertools.repeat(None) if most is None else range(most - 1):
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
    return None


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
