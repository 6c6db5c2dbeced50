"""The module header's ``entry_computation_layout={(shape, ...)->shape}``: checked token by
token as XLA's parser reads it (``ParseComputationLayout``, each shape by the one shape
reader), refused in XLA's words at XLA's token. Whether the layout fits the entry
computation is XLA's module check, not its parser's.

>>> check_computation_layout("{(f32[8]{0}, s32[])->(f32[8]{0}, s32[])}", 1, 40)
>>> check_computation_layout("{(f32[8]{0}) f32[8]}", 1, 40)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 1:53: Expects -> before result shape
"""

from __future__ import annotations

import re

from .._errors import HloParseError
from ._shape_syntax import PRINTED_ARRAY, read_shape
from ._token_cursor import TokenCursor, recorded_reading
from ._tokens import TokKind

K = TokKind
# Layouts read to their end without an error recorded, as written (a header's is read to
# find its end, then checked: read once).
_READ_CLEAN: set[str] = set()
_CLEAN_KEPT = 16
# Parameter shapes as XLA prints them, each an array XLA takes followed by ', ' and, every
# fifth, an index comment: stepped over at once (the token reader reads on from what stops it).
_PRINTED_PARAMETERS = re.compile(rf"(?:{PRINTED_ARRAY}, (?:/\*index=[0-9]+\*/)?)+")


def check_computation_layout(value: str, line: int, column: int) -> HloParseError | None:
    """Refuse ``value`` (an ``entry_computation_layout`` written at ``line``/``column``) as
    XLA's parser refuses it, with an ``HloParseError`` at the token XLA points at; the first
    error XLA records reading it and reads on past (a layout's item), or None."""
    if value in _READ_CLEAN:  # the reader found its end reading it: nothing to record
        return None
    return recorded_reading(_layout, value, line, column)


def computation_layout_end(text: str, start: int) -> int | None:
    """Where the computation layout at ``start`` ends, as XLA's reader of it stops (past its
    '}', whatever brackets the errors it reads past leave open), or None where it refuses
    it."""
    c = TokenCursor(text, 1, 0, start)
    try:
        _layout(c)
    except HloParseError:
        return None
    if c.recorded is None:
        if len(_READ_CLEAN) >= _CLEAN_KEPT:
            _READ_CLEAN.clear()
        _READ_CLEAN.add(text[start:c.previous_end])
    return c.previous_end


def _layout(c: TokenCursor) -> None:
    c.expect(K.kLbrace, "Expects '{' at the start of aliasing description")
    c.expect(K.kLparen, "Expects ( before parameter shape list")
    if (printed := _PRINTED_PARAMETERS.match(c.text, c.start)) is not None:
        c.jump(printed.end())
    while c.kind != K.kRparen:
        _shape(c)
        if c.kind == K.kRparen:
            break
        c.expect(K.kComma, "Expects , between parameter shapes")
    c.expect(K.kRparen, "Expects ) at end of parameter shape list")
    c.expect(K.kArrow, "Expects -> before result shape")
    _shape(c)
    c.expect(K.kRbrace, "Expects '}' at the end of computation layouts")


def _shape(c: TokenCursor) -> None:
    """XLA's ``ParseShape`` at the current token, by the one shape reader."""
    recorded: list[tuple[str, int]] = []
    end, refused = read_shape(c.text, c.start, len(c.text), signature=True, recorded=recorded)
    if refused is not None:
        raise c.error(*refused)
    if recorded:  # XLA reads on
        c.record(*recorded[0])
    c.jump(end)
