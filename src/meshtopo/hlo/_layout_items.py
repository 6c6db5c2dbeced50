"""What follows the ':' of a shape's layout, read token by token as XLA's ``ParseLayout``
reads it: each item optional, in this order, each read by its own parser whose failure XLA
records and reads on from (the layout is refused only at its '}', with the first error
recorded)::

    'D' '(' level ( ',' level )* ')'       level := ( 'D' | 'C' | 'S' | 'H' ) [ '+' ] [ '~' ]
    ( 'T' '(' [ dim ( ',' dim )* ] ')' )+  dim := INT | '*'
    'L' '(' INT ')'
    '#' '(' unsigned type ')'   '*' '(' unsigned type ')'
    'E' '(' INT ')'   'S' '(' INT ')'
    ( 'SC' '(' INT ':' [ INT ( ',' INT )* ] ')' )+
    'P' '(' shape ')'
    'M' '(' INT ')'

>>> from meshtopo.hlo._shape_syntax import read_shape
>>> layout_items("T(8,128)L(1024)}", 0, read_shape)
(15, None)
>>> layout_items("T(8,128}", 0, read_shape)  # XLA records the tile list's error, reads on
(7, ('expects a list to end with kRparen', 7))
>>> layout_items("#(f32)}", 0, read_shape)
(6, ('expecting an unsigned integer type', 5))
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable

from ._token_cursor import TokenCursor
from ._tokens import PRIMITIVE_TYPES, TokKind

K = TokKind
_LEVELS = frozenset({"D", "C", "S", "H"})
UNSIGNED_TYPES = frozenset(t for t in PRIMITIVE_TYPES if re.fullmatch(r"u[0-9]+", t))


class _Stopped(Exception):  # an item's parser returned false
    """One item's parser stopped (what it says is recorded)."""


# The shape reader's ``read_shape(text, start, stop, signature, recorded)``.
ShapeReader = Callable[[str, int, int, bool, "list[tuple[str, int]]"],
                       tuple[int, "tuple[str, int] | None"]]


def layout_items(text: str, at: int, read_shape: ShapeReader
                 ) -> tuple[int, tuple[str, int] | None]:
    """The offset of the token after the layout items that start at offset ``at`` of
    ``text`` (just past the layout's ':'; XLA wants the layout's '}' there), and the first
    error XLA's parser records in them, ``(message, offset)``, or None. A physical shape is
    read by ``read_shape`` (the shape reader's: ``(text, start, stop, signature)`` to its
    end and refusal)."""
    c = TokenCursor(text, 1, 0, at)
    _item(c, "D", _dim_level_types)
    if _is(c, "T"):
        c.lex()
        _stopping(c, _tiles)
    _item(c, "L", lambda c: _int_attribute(c, "multiple padded to in elements"))
    for kind, what in ((K.kOctothorp, "index"), (K.kAsterisk, "pointer")):
        if c.kind == kind:
            c.lex()
            _stopping(c, functools.partial(_integer_type, kind=kind, what=what))
    _item(c, "E", lambda c: _int_attribute(c, "element size in bits"))
    _item(c, "S", lambda c: _int_attribute(c, "memory space"))
    _item(c, "SC", _split_configs)
    _item(c, "P", lambda c: _physical_shape(c, read_shape))
    _item(c, "M", lambda c: _int_attribute(c, "dynamic shape metadata prefix bytes"))
    recorded = c.recorded
    return c.start, None if recorded is None else (recorded.message, recorded.column)


def _is(c: TokenCursor, word: str) -> bool:
    return c.kind == K.kIdent and c.word == word


def _item(c: TokenCursor, word: str, parse: Callable[[TokenCursor], None]) -> None:
    if _is(c, word):
        c.lex()
        _stopping(c, parse)


def _stopping(c: TokenCursor, parse: Callable[[TokenCursor], None]) -> None:
    """Run ``parse``; where it stops, what it says is recorded and reading goes on."""
    with contextlib.suppress(_Stopped):
        parse(c)


def _fail(c: TokenCursor, message: str) -> _Stopped:
    c.record(message)
    return _Stopped()


def _expect(c: TokenCursor, kind: int, message: str) -> None:
    if c.kind != kind:
        raise _fail(c, message)
    c.lex()


def _integer(c: TokenCursor) -> None:
    if c.kind != K.kInt:
        raise _fail(c, "expects integer")
    c.lex()


def _list(c: TokenCursor, start: int, item: Callable[[TokenCursor], None]) -> None:
    """XLA's ``ParseList(start, ')', ',')``."""
    _expect(c, start, f"expects a list starting with {K(start).name}")
    if c.kind != K.kRparen:
        while True:
            item(c)
            if not c.eat(K.kComma):
                break
    _expect(c, K.kRparen, "expects a list to end with kRparen")


def _dim_level_types(c: TokenCursor) -> None:
    def level(c: TokenCursor) -> None:
        if c.kind != K.kIdent or c.word not in _LEVELS:
            raise _fail(c, "expected a DimLevelType abbreviation (D, C, or S)")
        c.lex()
        c.eat(K.kPlus)
        c.eat(K.kTilde)

    _list(c, K.kLparen, level)


def _tiles(c: TokenCursor) -> None:
    def dimension(c: TokenCursor) -> None:
        if c.kind == K.kInt:
            c.lex()
            return
        c.record("expects integer")  # XLA tries an integer first, then '*'
        if c.kind != K.kAsterisk:
            raise _Stopped
        c.lex()

    while True:
        _list(c, K.kLparen, dimension)
        if c.kind != K.kLparen:
            return


def _int_attribute(c: TokenCursor, what: str) -> None:
    _expect(c, K.kLparen, f"expects {what} to start with kLparen")
    _integer(c)
    _expect(c, K.kRparen, f"expects {what} to end with kRparen")


def _integer_type(c: TokenCursor, kind: int, what: str) -> None:
    """``(`` type ``)``: XLA reads each of the three on whatever the one before says."""
    _stopping(c, lambda c: _expect(
        c, K.kLparen, f"expects {K(kind).name} to be followed by kLparen"))
    _stopping(c, _unsigned_type)
    _expect(c, K.kRparen, f"expects {what} primitive type to be followed by kRparen")


def _unsigned_type(c: TokenCursor) -> None:
    if c.kind != K.kPrimitiveType:
        raise _fail(c, f"expected primitive type, saw {K(c.kind).name}")
    unsigned = c.word in UNSIGNED_TYPES
    c.lex()
    if not unsigned:
        raise _fail(c, "expecting an unsigned integer type")


def _split_configs(c: TokenCursor) -> None:
    while True:
        _expect(c, K.kLparen, "expects split configs to start with kLparen")
        _integer(c)
        _list(c, K.kColon, _integer)
        if c.kind != K.kLparen:
            return


def _physical_shape(c: TokenCursor, read_shape: ShapeReader) -> None:
    _expect(c, K.kLparen, "expects physical shape to start with kLparen")
    recorded: list[tuple[str, int]] = []
    end, refused = read_shape(c.text, c.start, len(c.text), True, recorded)
    if refused is not None:  # XLA reads on (ParseShape's answer is not looked at)
        c.jump(refused[1])
    else:
        c.jump(end)
    if refused or recorded:
        c.record(*(refused or recorded[0]))
    _expect(c, K.kRparen, "expects physical shape to end with kRparen")
