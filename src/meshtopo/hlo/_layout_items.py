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

The values read are kept (``LayoutItems``) for the check XLA makes of a layout in a tuple
shape (``layout_problem``).

>>> from meshtopo.hlo._shape_syntax import read_shape
>>> end, recorded, items = layout_items("T(8,128)L(1024)}", 0, read_shape)
>>> end, recorded, items.tiles, items.tail_padding
(15, None, ((8, 128),), 1024)
>>> layout_items("T(8,128}", 0, read_shape)[:2]  # XLA records the tile list's error, reads on
(7, ('expects a list to end with kRparen', 7))
>>> layout_items("#(f32)}", 0, read_shape)[:2]
(6, ('expecting an unsigned integer type', 5))
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import NamedTuple, TypeVar

from ._token_cursor import TokenCursor
from ._token_values import int_value
from ._tokens import PRIMITIVE_TYPES, TokKind

K = TokKind
_T = TypeVar("_T")
_LEVELS = frozenset({"D", "C", "S", "H"})
UNSIGNED_TYPES = frozenset(t for t in PRIMITIVE_TYPES if re.fullmatch(r"u[0-9]+", t))


class _Stopped(Exception):  # an item's parser returned false
    """One item's parser stopped (what it says is recorded)."""


# A tile dimension written '*' (XLA's ``Tile::kCombineDimension``).
COMBINE = -(1 << 63)


class LayoutItems(NamedTuple):
    """The items of a layout read (those whose parser stopped keep their defaults): tiles
    (``COMBINE`` for '*'), ``L`` (tail padding alignment in elements), whether ``#``
    (index type) and ``*`` (pointer type) are written, ``E`` (element size in bits), each
    ``SC`` (split config: physical dimension and split indices), whether ``P`` (a
    physical shape, which XLA takes on sparse arrays alone) is written."""

    tiles: tuple[tuple[int, ...], ...] = ()
    tail_padding: int = 1
    index_type: bool = False
    pointer_type: bool = False
    element_bits: int = 0
    split_configs: tuple[tuple[int, tuple[int, ...]], ...] = ()
    physical: bool = False


def layout_problem(minor_to_major: list[int], items: LayoutItems,
                   dimensions: tuple[int, ...]) -> str | None:
    """What XLA's ``ValidateLayoutForShape`` finds wrong with a layout of an array of
    ``dimensions`` (its minor-to-major list as long as the rank: the reader checks that
    first), or None. XLA's parser checks it of the layouts in a tuple shape."""
    rank = len(dimensions)
    written = ", ".join(map(str, minor_to_major))
    if any(not 0 <= d < rank for d in minor_to_major):
        return f"layout minor_to_major field has out-of-bounds value: {{{written}}}"
    if len(set(minor_to_major)) != rank:
        return f"layout minor_to_major field has duplicate values: {{{written}}}"
    if items.tail_padding <= 0:
        return ("layout tail_padding_alignment_in_elements field is <= 0: "
                f"{{{items.tail_padding}}}")
    for present, field in ((items.index_type, "index_primitive_type"),
                           (items.pointer_type, "pointer_primitive_type")):
        if present:
            return f"layout has a {field}, but is not a sparse array"
    for tile in items.tiles:
        if not tile or any(d <= 0 and d != COMBINE for d in tile):
            return "layout has invalid tiles"
    if items.element_bits < 0:
        return f"layout element_size_in_bits field is negative: {items.element_bits}"
    split: set[int] = set()
    for physical, indices in items.split_configs:
        if not 0 <= physical < rank or physical in split:
            return f"split config has an out-of-bounds or duplicate physical dimension: {physical}"
        split.add(physical)
        size = dimensions[minor_to_major[rank - 1 - physical]]
        if any(b <= a for a, b in zip((0, *indices), indices, strict=False)) or any(
                index >= size for index in indices):
            return (f"split config split indices must be strictly increasing, positive "
                    f"and below {size}: {{{', '.join(map(str, indices))}}}")
    return None


# The shape reader's ``read_shape(text, start, stop, signature, recorded)``.
ShapeReader = Callable[[str, int, int, bool, "list[tuple[str, int]]"],
                       tuple[int, "tuple[str, int] | None"]]


def layout_items(text: str, at: int, read_shape: ShapeReader
                 ) -> tuple[int, tuple[str, int] | None, LayoutItems]:
    """The offset of the token after the layout items that start at offset ``at`` of
    ``text`` (just past the layout's ':'; XLA wants the layout's '}' there), the first
    error XLA's parser records in them, ``(message, offset)``, or None, and the items read.
    A physical shape is read by ``read_shape`` (the shape reader's: ``(text, start, stop,
    signature)`` to its end and refusal)."""
    c = TokenCursor(text, 1, 0, at)
    _item(c, "D", _dim_level_types)
    tiles = _item(c, "T", _tiles)
    tail_padding = _item(c, "L", lambda c: _int_attribute(c, "multiple padded to in elements"))
    index_type = _typed(c, K.kOctothorp, "index")
    pointer_type = _typed(c, K.kAsterisk, "pointer")
    element_bits = _item(c, "E", lambda c: _int_attribute(c, "element size in bits"))
    _item(c, "S", lambda c: _int_attribute(c, "memory space"))
    split_configs = _item(c, "SC", _split_configs)
    physical = _is(c, "P")
    _item(c, "P", lambda c: _physical_shape(c, read_shape))
    _item(c, "M", lambda c: _int_attribute(c, "dynamic shape metadata prefix bytes"))
    items = LayoutItems(tiles or (), 1 if tail_padding is None else tail_padding, index_type,
                        pointer_type, element_bits or 0, split_configs or (), physical)
    recorded = c.recorded
    return c.start, None if recorded is None else (recorded.message, recorded.column), items


def _typed(c: TokenCursor, kind: int, what: str) -> bool:
    """Whether the ``#`` or ``*`` item (``kind``: an ``index`` or ``pointer`` type) is
    written; it is read if so."""
    if not c.eat(kind):
        return False
    _stopping(c, functools.partial(_integer_type, kind=kind, what=what))
    return True


def _is(c: TokenCursor, word: str) -> bool:
    return c.kind == K.kIdent and c.word == word


def _item(c: TokenCursor, word: str, parse: Callable[[TokenCursor], _T]) -> _T | None:
    """The item ``word`` read by ``parse``, if written and read (else None)."""
    if _is(c, word):
        c.lex()
        return _stopping(c, parse)
    return None


def _stopping(c: TokenCursor, parse: Callable[[TokenCursor], _T]) -> _T | None:
    """Run ``parse``; where it stops, what it says is recorded and reading goes on (None)."""
    try:
        return parse(c)
    except _Stopped:
        return None


def _fail(c: TokenCursor, message: str) -> _Stopped:
    c.record(message)
    return _Stopped()


def _expect(c: TokenCursor, kind: int, message: str) -> None:
    if c.kind != kind:
        raise _fail(c, message)
    c.lex()


def _integer(c: TokenCursor) -> int:
    if c.kind != K.kInt:
        raise _fail(c, "expects integer")
    value = int_value(c.text, c.start, c.end)
    c.lex()
    return value


def _list(c: TokenCursor, start: int, item: Callable[[TokenCursor], _T]) -> list[_T]:
    """XLA's ``ParseList(start, ')', ',')``: the items."""
    _expect(c, start, f"expects a list starting with {K(start).name}")
    items: list[_T] = []
    if c.kind != K.kRparen:
        while True:
            items.append(item(c))
            if not c.eat(K.kComma):
                break
    _expect(c, K.kRparen, "expects a list to end with kRparen")
    return items


def _dim_level_types(c: TokenCursor) -> None:
    def level(c: TokenCursor) -> None:
        if c.kind != K.kIdent or c.word not in _LEVELS:
            raise _fail(c, "expected a DimLevelType abbreviation (D, C, or S)")
        c.lex()
        c.eat(K.kPlus)
        c.eat(K.kTilde)

    _list(c, K.kLparen, level)


def _tiles(c: TokenCursor) -> tuple[tuple[int, ...], ...]:
    def dimension(c: TokenCursor) -> int:
        if c.kind == K.kInt:
            return _integer(c)
        c.record("expects integer")  # XLA tries an integer first, then '*'
        if c.kind != K.kAsterisk:
            raise _Stopped
        c.lex()
        return COMBINE

    tiles = []
    while True:
        tiles.append(tuple(_list(c, K.kLparen, dimension)))
        if c.kind != K.kLparen:
            return tuple(tiles)


def _int_attribute(c: TokenCursor, what: str) -> int:
    _expect(c, K.kLparen, f"expects {what} to start with kLparen")
    value = _integer(c)
    _expect(c, K.kRparen, f"expects {what} to end with kRparen")
    return value


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


def _split_configs(c: TokenCursor) -> tuple[tuple[int, tuple[int, ...]], ...]:
    configs = []
    while True:
        _expect(c, K.kLparen, "expects split configs to start with kLparen")
        dimension = _integer(c)
        configs.append((dimension, tuple(_list(c, K.kColon, _integer))))
        if c.kind != K.kLparen:
            return tuple(configs)


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
