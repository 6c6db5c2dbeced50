"""An operand list's plain operands, token by token as XLA's ``ParseOperands`` reads them.

XLA tries each operand first as a name: an optional shape (``CanBeShape``: '(', an element
type, or the ``b(`` of a buffer shape) read by the one shape reader, then one name token
(``%a``, ``a`` or ``a:``), then ',' or ')'. Whatever is not read so is tried as an
instruction written in place (the reader's), and refused at the operand's first token
(``NOT_AN_OPERAND``) when it is neither.

>>> split_operands("f32[8]{0} %x, /*index=1*/ %y")
[('x', 'f32[8]{0}', 0), ('y', None, 26)]
>>> split_operands("p0:, (s32[], f32[2]) q")
[('p0', None, 0), ('q', '(s32[], f32[2])', 5)]
>>> split_operands("s8[10] a b")
Traceback (most recent call last):
...
meshtopo.hlo._syntax.SyntaxFault: cannot parse as an instruction name or as a nested instruction:
"""

from __future__ import annotations

import re

from ._pure_lexer import next_token
from ._shape_syntax import read_shape
from ._syntax import SyntaxFault
from ._token_cursor import TokenCursor
from ._tokens import TokKind

# XLA's first words where an operand is neither a name nor an instruction.
NOT_AN_OPERAND = "cannot parse as an instruction name or as a nested instruction:"

# An operand list as XLA prints it with operand shapes: array shapes with a plain layout (or a
# tuple of them) and names, items joined by ", " with an optional "/*index=N*/" comment; read
# in one match.
_ARRAY = r"[a-z][a-z0-9]*\[[0-9,]*\](?:\{[0-9,]*\})?"
_NEXT = r", (?:/\*index=[0-9]+\*/)?"
_PRINTED_OPERAND = re.compile(
    r"(?:(" + _ARRAY + r"|\((?:" + _ARRAY + r"(?:" + _NEXT + _ARRAY + r")*)?\)) )?"
    r"(%[A-Za-z_][A-Za-z0-9_.\-]*)")
_PRINTED_OPERANDS = re.compile(
    _PRINTED_OPERAND.pattern + "(?:" + _NEXT + _PRINTED_OPERAND.pattern + ")*")


def can_be_shape(text: str, pos: int) -> bool:
    """True when the token at ``pos`` starts a shape (XLA's ``CanBeShape``: '(', an element
    type, or ``b`` and '(' of a buffer), so that an instruction without one is read as such."""
    kind, start, end, _ = next_token(text, pos)
    if kind in (TokKind.kLparen, TokKind.kPrimitiveType):
        return True
    return kind == TokKind.kIdent and text[start:end] == "b" and (
        next_token(text, end)[0] == TokKind.kLparen)


def name_at(text: str, pos: int) -> tuple[str, int] | None:
    """The name XLA's ``ParseName`` reads at ``pos`` (``TokenCursor.name``) and the offset
    past its token, or None where another token stands."""
    cursor = TokenCursor(text, 1, 0, pos)
    if cursor.start != pos or cursor.kind not in (TokKind.kIdent, TokKind.kName):
        return None
    end = cursor.end
    return cursor.name(), end


def _whole_shape(text: str) -> bool:
    """True when ``text`` is one shape XLA takes (what it records in it aside)."""
    end, refused = read_shape(text, 0, len(text))
    return refused is None and end == len(text)


def split_operands(text: str, check_shapes: bool = True) -> list[tuple[str, str | None, int]]:
    """``(name, inline shape text or None, offset where the operand starts)`` of each operand
    of an operand list's text (between its brackets; comments and line breaks are white
    space) when every operand is a plain one; a ``SyntaxFault`` (``NOT_AN_OPERAND``, at the
    operand) at the first that is not. Without ``check_shapes``, operands as XLA prints
    them are taken whatever their shapes (to find where each is written)."""
    if _PRINTED_OPERANDS.fullmatch(text) is not None:
        printed = [(found.group(2)[1:], found.group(1), found.start())
                   for found in _PRINTED_OPERAND.finditer(text)]
        if not check_shapes or all(shape is None or _whole_shape(shape)
                                   for _, shape, _ in printed):
            return printed
    operands: list[tuple[str, str | None, int]] = []
    c = TokenCursor(text, 1, 0)
    while True:
        operand = c.start
        shape = operand_shape(c, len(text))
        if c.kind not in (TokKind.kIdent, TokKind.kName):
            raise SyntaxFault(NOT_AN_OPERAND, operand)
        operands.append((c.name(), shape, operand))
        if c.kind == TokKind.kEof:
            return operands
        if c.kind != TokKind.kComma:
            raise SyntaxFault(NOT_AN_OPERAND, operand)
        c.lex()


def operand_shape(c: TokenCursor, stop: int) -> str | None:
    """The text of the shape an operand starts with (XLA's ``CanBeShape``, then
    ``ParseShape``, ending by ``stop``), the cursor moved past it; None, the cursor where it
    is, where no shape starts. A shape XLA refuses makes the operand neither a name nor an
    instruction to XLA: a ``SyntaxFault`` (``NOT_AN_OPERAND``) at it."""
    start = c.start
    if not can_be_shape(c.text, start):
        return None
    end, refused = read_shape(c.text, start, stop)  # (what XLA records in it is not reported)
    if refused is not None:
        raise SyntaxFault(NOT_AN_OPERAND, start)
    c.jump(end)
    return c.text[start:end]
