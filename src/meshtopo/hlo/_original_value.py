"""``origin={...}``, an instruction's original value, and the module header's
``origin_recovery_table={...}``: checked token by token as XLA's parser reads them
(``ParseOriginalValue``, ``ParseOriginalValueRecoveryTable``), refused in XLA's words at
XLA's token.

Grammar::

    origin  := '{' ( '[' 'synthetic_call' ']' | items ) '}'
    items   := ( [','] item )*
    item    := '(' items ')' | array
    array   := '{' [ STRING [ index ] ] '}'
    index   := '{' [ INT ( ',' INT )* [','] ] '}'
    table   := '{' ( array ':' array [ ',' STRING ] )* '}'

A table's string is a module, which XLA's parser reads; where it refuses the module, it gives
the attribute up (``error parsing attribute origin_recovery_table``).

>>> check_original_value('{({"p0" {0}}, {"p1"})}', 1, 1)
>>> check_original_value('{({"v1"}, {"v2")}', 3, 40)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 3:55: Expects '} at end of OriginalArray'
"""

from __future__ import annotations

from collections.abc import Callable

from .._errors import HloParseError
from ._token_cursor import GiveUp, TokenCursor, value_check
from ._token_values import string_value
from ._tokens import TokKind

K = TokKind
_TABLE_ENTRY = "Expected format: <original_array>: <original_array>, <HloModule>"


def _original_value(c: TokenCursor) -> None:
    c.expect(K.kLbrace, "Expects '{' to start original value")
    if c.eat(K.kLsquare):
        if c.kind != K.kIdent or c.word != "synthetic_call":
            raise c.error("Expects 'synthetic_call' after '[' for a synthetic_call value.")
        c.lex()
        c.expect(K.kRsquare, "Expects ']' to end '[synthetic_call]'")
        c.expect(K.kRbrace, "Expects '}' to end original value")
        return
    _items(c, K.kRbrace)
    c.lex()


def _items(c: TokenCursor, close: int) -> None:
    """Items up to the ``close`` token (left current)."""
    while True:
        c.eat(K.kComma)
        if c.kind == close:
            return
        if c.eat(K.kLparen):
            _items(c, K.kRparen)
            c.lex()
        elif c.kind == K.kLbrace:
            _original_array(c)
        else:
            raise c.error("Expects '[synthetic]' or a tuple tree of original arrays in "
                          "original_value field.")


def _original_array(c: TokenCursor) -> None:
    """XLA's ``ParseOriginalArray``."""
    c.expect(K.kLbrace, "Expects '{'")
    if c.eat(K.kString) and c.kind == K.kLbrace:
        _shape_index(c)
    c.expect(K.kRbrace, "Expects '} at end of OriginalArray'")


def check_recovery_table(read_module: Callable[[str], object]
                         ) -> Callable[[str, int, int], HloParseError | None]:
    """The check of a header's ``origin_recovery_table`` value, whose module texts
    ``read_module`` reads (an ``HloParseError`` where XLA's parser refuses one)."""

    def check(value: str, line: int, column: int) -> HloParseError | None:
        def table(c: TokenCursor) -> None:
            c.expect(K.kLbrace, "Expects '{'")
            while c.kind != K.kRbrace:
                _original_array(c)
                c.expect(K.kColon, _TABLE_ENTRY)
                _original_array(c)
                if c.eat(K.kComma):
                    if c.kind != K.kString:
                        raise c.error("expects string")
                    module = string_value(value, c.start, c.end)  # its line breaks kept
                    try:
                        read_module(module)
                    except HloParseError:
                        raise GiveUp from None
                    c.lex()
            c.lex()

        return value_check(table, "an ``origin_recovery_table``", "origin_recovery_table")(
            value, line, column)

    return check


def _shape_index(c: TokenCursor) -> None:
    """XLA's ``ParseShapeIndex``."""
    c.lex()
    while c.kind != K.kRbrace:
        c.integer()
        if not c.eat(K.kComma):
            break
    c.expect(K.kRbrace, "Expects '}' at the end of ShapeIndex")


check_original_value = value_check(_original_value, "an ``origin``")
