"""``statistics={...}``: checked token by token as XLA's parser reads it
(``ParseStatisticsViz``), refused in XLA's words at XLA's token.

Grammar: ``'{' [ NAME= INT ( ',' NAME= ( INT | DECIMAL ) )* ] '}'``, the first the index of
the statistic to show. A number of another kind XLA refuses without words of its own: it
says it cannot parse the attribute, at its name.

>>> check_statistics("{visualizing_index=1,stat-1=33,stat-2=4.5}", 1, 1)
>>> check_statistics("{visualizing_index=1 stat-1=33}", 3, 40)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 3:61: expects '}' at the end of statistics
"""

from __future__ import annotations

from ._token_cursor import TokenCursor, UnparsedAttribute, read_value
from ._tokens import TokKind

K = TokKind


class _Silent(Exception):
    """Where XLA's reader gives the value up without words of its own."""


def check_statistics(value: str, line: int, column: int) -> None:
    """Refuse ``value`` (a ``statistics`` written at ``line``/``column``) as XLA's parser
    refuses it, with an ``HloParseError`` at the token XLA points at."""
    try:
        read_value(_statistics, value, line, column)
    except _Silent:
        raise UnparsedAttribute("statistics", line, column) from None


def _statistics(c: TokenCursor) -> None:
    c.expect(K.kLbrace, "expected '{' to start statistics")
    if c.kind != K.kRbrace:
        _statistic(c, (K.kInt,))  # the index to show
        while c.eat(K.kComma):
            _statistic(c, (K.kInt, K.kDecimal))
    c.expect(K.kRbrace, "expects '}' at the end of statistics")


def _statistic(c: TokenCursor, kinds: tuple[int, ...]) -> None:
    c.attribute_name()
    if c.kind not in kinds:
        raise _Silent
    c.lex()
