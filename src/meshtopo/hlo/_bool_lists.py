"""Lists of booleans, read token by token as XLA's parser reads them, refusing in XLA's words
at XLA's token:

- ``parameter_replication={true, false}`` (``ParseParameterReplication``): '{', booleans
  joined by ',' (maybe none), '}';
- the header's ``allow_spmd_sharding_propagation_to_parameters`` and ``..._to_output``
  (``ParseBooleanListOrSingleBoolean``): one boolean, or such a braced list.

An item that is no ``true`` or ``false`` XLA refuses without words of its own: it says it
cannot parse the attribute, at its name.

>>> parameter_replication("{true, false}", 1, 1)
[True, False]
>>> check_bool_list_or_bool("allow_spmd_sharding_propagation_to_output")("{true true}", 1, 50)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 1:56: expected '}' to end boolean list attribute
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ._token_cursor import GiveUp, TokenCursor, read_attribute
from ._tokens import TokKind

K = TokKind
_BOOLEANS = {K.kw_true: True, K.kw_false: False}
# The items and '}' of a list as XLA prints it (read at once; any other, token by token).
_PRINTED_ITEMS = re.compile(r"((?:true|false)(?:, ?(?:true|false))*)?\}")


def _items(c: TokenCursor, end_message: str) -> list[bool]:
    """The booleans of a list whose '{' was read, and its '}'."""
    if (printed := _PRINTED_ITEMS.match(c.text, c.start)) is not None:
        c.jump(printed.end())
        items = printed.group(1)
        return [word == "true" for word in items.replace(" ", "").split(",")] if items else []
    found: list[bool] = []
    if c.kind != K.kRbrace:
        while True:
            if c.kind not in _BOOLEANS:
                raise GiveUp
            found.append(_BOOLEANS[K(c.kind)])
            c.lex()
            if not c.eat(K.kComma):
                break
    c.expect(K.kRbrace, end_message)
    return found


def _replication(c: TokenCursor) -> list[bool]:
    c.expect(K.kLbrace, "expected '{' to start parameter_replication attribute")
    return _items(c, "expected '}' to end parameter_replication attribute")


def _list_or_one(c: TokenCursor) -> list[bool]:
    if c.kind in _BOOLEANS:
        found = [_BOOLEANS[K(c.kind)]]
        c.lex()
        return found
    if c.kind != K.kLbrace:
        raise c.error("Expected list of booleans or true/false value")
    c.lex()
    return _items(c, "expected '}' to end boolean list attribute")


def parameter_replication(value: str, line: int, column: int) -> list[bool]:
    """The booleans of a ``parameter_replication`` value written at ``line:column``."""
    return read_attribute("parameter_replication", _replication, value, line, column)


def check_parameter_replication(value: str, line: int, column: int) -> None:
    """Refuse a ``parameter_replication`` value as XLA's parser refuses it."""
    parameter_replication(value, line, column)


def check_bool_list_or_bool(key: str) -> Callable[[str, int, int], None]:
    """The check of the header's boolean-or-list attribute ``key``."""

    def check(value: str, line: int, column: int) -> None:
        read_attribute(key, _list_or_one, value, line, column)

    return check
