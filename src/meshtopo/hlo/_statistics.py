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

from ._token_cursor import GiveUp, TokenCursor, value_check
from ._tokens import TokKind

K = TokKind


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
        raise GiveUp
    c.lex()


check_statistics = value_check(_statistics, "a ``statistics``", "statistics")
