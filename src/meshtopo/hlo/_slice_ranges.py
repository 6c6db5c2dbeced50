"""A slice's ``slice={[start:limit:step], ...}``: checked token by token as XLA's parser reads
it (``ParseSliceRanges``, each range by ``ParseInt64List`` with ':' between its integers),
refused in XLA's words at XLA's token. Whether the ranges fit the operand is XLA's verifier's.

>>> check_slice_ranges("{[0:4], [0:8:2]}", 1, 10)
>>> check_slice_ranges("{[0:4:1:1]}", 2, 10)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 2:11: expects [start:limit:step] or [start:limit], but sees 4 \
elements.
"""

from __future__ import annotations

from ._token_cursor import TokenCursor, value_check
from ._tokens import TokKind

K = TokKind


def _ranges(c: TokenCursor) -> None:
    c.expect(K.kLbrace, "expects '{' to start ranges")
    if c.kind != K.kRbrace:
        while True:
            at = c.start
            count = _int64_list(c)
            if count not in (2, 3):
                raise c.error("expects [start:limit:step] or [start:limit], but sees "
                              f"{count} elements.", at)
            if not c.eat(K.kComma):
                break
    c.expect(K.kRbrace, "expects '}' to end ranges")


def _int64_list(c: TokenCursor) -> int:
    """XLA's ``ParseInt64List('[', ']', ':')``: how many integers the range holds."""
    if c.kind != K.kLsquare:
        raise c.error("expects a list to end with kRsquare")  # (XLA's words for '[')
    c.lex_integer_first()
    count = 0
    if c.kind != K.kRsquare:
        while True:
            c.integer()
            count += 1
            if c.kind != K.kColon:
                break
            c.lex_integer_first()
    c.expect(K.kRsquare, "expects a list to end with kRsquare")
    return count


check_slice_ranges = value_check(_ranges, "a slice's ``slice``")
