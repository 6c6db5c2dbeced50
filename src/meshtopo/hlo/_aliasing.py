"""Aliasing values, checked token by token as XLA's parser reads them (``ParseAliasing``,
``ParseBufferDonor``, ``ParseInstructionOutputOperandAliasing``, ``ParseShapeIndex``),
refused in XLA's words at XLA's token: the module header's ``input_output_alias`` and
``buffer_donor``, and an instruction's ``output_to_operand_aliasing``.

Grammar::

    input_output_alias         := '{' [ alias ( ',' alias )* [ ','] ] '}'
    alias                      := index ':' '(' INT ',' index [ ',' kind ] ')'
    buffer_donor               := '{' [ '(' INT ',' index ')' ( ',' ... )* [ ','] ] '}'
    output_to_operand_aliasing := '{' [ index ':' '(' INT ',' index ')' ( ',' ... )* ] '}'
    index                      := '{' [ INT ( ',' INT )* ] '}'

XLA reads on past a parameter or operand number that is no integer (it records the error
and reports it first if the text is refused later). Whether an index names a leaf of the
shapes is XLA's module check, not its parser's.

>>> check_aliasing("{ {0}: (0, {1}, must-alias) }", 1, 1)
>>> check_buffer_donor("{ (0, {0, a}) }", 1, 30)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 1:40: expects integer
>>> check_output_operand_aliasing("{{}: (0 0, {})}", 3, 10)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 3:18: Expected format: <output_shape_index>: \
(<operand_index>, <operand_shape_index>)
"""

from __future__ import annotations

from .._errors import HloParseError
from ._token_cursor import TokenCursor, recorded_reading
from ._tokens import TokKind

K = TokKind
_ALIAS_FORMAT = ("Expected format: <output_shape_index>: (<input_param>, "
                 "<input_param_shape_index>) OR <output_shape_index>: <input_param>")
_DONOR_FORMAT = "Expected format: (<input_param>, <input_param_shape_index>)"
_OPERAND_FORMAT = ("Expected format: <output_shape_index>: (<operand_index>, "
                   "<operand_shape_index>)")
_KINDS = frozenset({"must-alias", "may-alias"})


def check_aliasing(value: str, line: int, column: int) -> HloParseError | None:
    """Refuse ``value`` (``input_output_alias`` written at ``line``/``column``) as XLA's
    parser refuses it, with an ``HloParseError`` at the token XLA points at; else the error
    it recorded reading on, or None."""
    return recorded_reading(_aliasing, value, line, column)


def check_buffer_donor(value: str, line: int, column: int) -> HloParseError | None:
    """``check_aliasing`` of ``buffer_donor``."""
    return recorded_reading(_buffer_donor, value, line, column)


def check_output_operand_aliasing(value: str, line: int, column: int) -> HloParseError | None:
    """``check_aliasing`` of an instruction's ``output_to_operand_aliasing``."""
    return recorded_reading(_output_operand_aliasing, value, line, column)


def _number(c: TokenCursor) -> None:
    """XLA's ``ParseInt64`` whose answer is not looked at: a number that is no integer is
    recorded, and reading goes on at the same token."""
    if c.kind == K.kInt:
        c.integer()
    else:
        c.record("expects integer")


def _index(c: TokenCursor) -> None:
    """XLA's ``ParseShapeIndex``."""
    c.expect(K.kLbrace, "Expects '{' at the start of ShapeIndex")
    while c.kind != K.kRbrace:
        c.integer()
        if not c.eat(K.kComma):
            break
    c.expect(K.kRbrace, "Expects '}' at the end of ShapeIndex")


def _aliasing(c: TokenCursor) -> None:
    _index_pairs(c, "aliasing description", _ALIAS_FORMAT, with_kind=True)


def _output_operand_aliasing(c: TokenCursor) -> None:
    _index_pairs(c, "instruction aliasing description", _OPERAND_FORMAT, with_kind=False)


def _index_pairs(c: TokenCursor, description: str, message: str, with_kind: bool) -> None:
    """``'{' [ index ':' '(' INT ',' index [ ',' kind ] ')' ( ',' ... )* ] '}'``, refused
    with ``message`` inside a pair and naming the ``description`` at its braces; a kind
    (``must-alias``, ``may-alias``) only ``with_kind``."""
    c.expect(K.kLbrace, f"Expects '{{' at the start of {description}")
    while c.kind != K.kRbrace:
        _index(c)
        c.expect(K.kColon, message)
        c.expect(K.kLparen, message)
        _number(c)
        c.expect(K.kComma, message)
        _index(c)
        if with_kind and c.eat(K.kComma):
            if c.kind not in (K.kIdent, K.kName):  # XLA's ParseName, its answer not looked at
                raise c.error("expects name")
            kind = c.word.lstrip("%").removesuffix(":")
            c.lex()
            if kind not in _KINDS:
                raise c.error("Unexpected aliasing kind; expected SYSTEM or USER")
        c.expect(K.kRparen, message)
        if not c.eat(K.kComma):
            break
    c.expect(K.kRbrace, f"Expects '}}' at the end of {description}")


def _buffer_donor(c: TokenCursor) -> None:
    c.expect(K.kLbrace, "Expects '{' at the start of buffer donor description")
    while c.kind != K.kRbrace:
        c.expect(K.kLparen, _DONOR_FORMAT)
        _number(c)
        c.expect(K.kComma, _DONOR_FORMAT)
        _index(c)
        c.expect(K.kRparen, _DONOR_FORMAT)
        if not c.eat(K.kComma):
            break
    c.expect(K.kRbrace, "Expects '}' at the end of buffer donor description")
