"""``origin={...}``, an instruction's original value: checked token by token as XLA's parser
reads it (``ParseOriginalValue``), refused in XLA's words at XLA's token.

Grammar::

    origin  := '{' ( '[' 'synthetic_call' ']' | items ) '}'
    items   := ( [','] item )*
    item    := '(' items ')' | '{' [ STRING [ index ] ] '}'
    index   := '{' [ INT ( ',' INT )* [','] ] '}'

>>> check_original_value('{({"p0" {0}}, {"p1"})}', 1, 1)
>>> check_original_value('{({"v1"}, {"v2")}', 3, 40)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 3:55: Expects '} at end of OriginalArray'
"""

from __future__ import annotations

from ._token_cursor import TokenCursor, value_check
from ._tokens import TokKind

K = TokKind


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
        elif c.eat(K.kLbrace):
            if c.eat(K.kString) and c.kind == K.kLbrace:
                _shape_index(c)
            c.expect(K.kRbrace, "Expects '} at end of OriginalArray'")
        else:
            raise c.error("Expects '[synthetic]' or a tuple tree of original arrays in "
                          "original_value field.")


def _shape_index(c: TokenCursor) -> None:
    """XLA's ``ParseShapeIndex``."""
    c.lex()
    while c.kind != K.kRbrace:
        c.integer()
        if not c.eat(K.kComma):
            break
    c.expect(K.kRbrace, "Expects '}' at the end of ShapeIndex")


check_original_value = value_check(_original_value, "an ``origin``")
