"""``result_accuracy={...}``: checked token by token as XLA's parser reads it
(``ParseResultAccuracy``), refused in XLA's words at XLA's token.

Grammar: ``'{' ( 'mode=' MODE | 'tolerance=' '{' [ KEY '=' NUMBER ( ',' KEY '=' NUMBER )* ]
'}' ) '}'``, MODE ``default`` or ``highest`` in any case, KEY ``atol``, ``rtol`` or ``ulps``,
NUMBER a decimal, an integer or ``inf``.

>>> check_result_accuracy("{mode=HIGHEST}", 1, 1)
>>> check_result_accuracy("{mode=high}", 3, 40)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 3:46: expects ResultAccuracy type but sees: high, error: Unknown accuracy mode
"""

from __future__ import annotations

from ._token_cursor import TokenCursor, value_check
from ._tokens import TokKind

K = TokKind
_MODES = frozenset({"default", "highest"})
_TOLERANCES = frozenset({"atol", "rtol", "ulps"})


def _accuracy(c: TokenCursor) -> None:
    c.expect(K.kLbrace, "expected '{' to start result precision list")
    name = c.attribute_name()
    if name == "mode":
        if c.kind != K.kIdent:
            raise c.error("expects ResultAccuracy type")
        if c.word.lower() not in _MODES:
            raise c.error(f"expects ResultAccuracy type but sees: {c.word}, error: Unknown "
                          "accuracy mode")
        c.lex()
    elif name == "tolerance":
        _tolerance(c)
    else:
        raise c.error(f"invalid attribute name: {name}")
    c.expect(K.kRbrace, "expected '}' to end result_accuracy")


def _tolerance(c: TokenCursor) -> None:
    """``{atol=..., rtol=..., ulps=...}``, joined by ',' (maybe none)."""
    c.expect(K.kLbrace, "expected '{' to start result accuracy list")
    if c.kind != K.kRbrace:
        while True:
            name = c.attribute_name()
            if name not in _TOLERANCES:
                raise c.error(f"invalid attribute name: {name}")
            if c.kind in (K.kDecimal, K.kInt, K.kw_inf):
                c.lex()
            else:  # XLA records it and reads on
                c.record("expects decimal or integer")
            if not c.eat(K.kComma):
                break
    c.expect(K.kRbrace, "expects '}' at the end of result precision")


check_result_accuracy = value_check(_accuracy, "a ``result_accuracy``")
