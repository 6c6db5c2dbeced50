"""``result_accuracy={...}``: checked token by token as XLA's parser reads it
(``ParseResultAccuracy``), refused in XLA's words at XLA's token.

Grammar: ``'{' ( 'mode=' MODE | 'tolerance=' '{' [ KEY '=' NUMBER ( ',' KEY '=' NUMBER )* ]
'}' ) '}'``, MODE ``default`` or ``highest`` in any case, KEY ``atol``, ``rtol`` or ``ulps``.

>>> check_result_accuracy("{mode=HIGHEST}", 1, 1)
>>> check_result_accuracy("{mode=high}", 3, 40)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 3:46: expects ResultAccuracy type but sees: high, error: Unknown accuracy mode
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .._errors import HloParseError
from ._syntax import skip
from ._values import flat_value, relocate

_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_.\-]*)=")  # XLA's lexer: a name and '=' are one token
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_NUMBER = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_MODES = frozenset({"default", "highest"})
_TOLERANCES = frozenset({"atol", "rtol", "ulps"})


def check_result_accuracy(value: str, line: int, column: int) -> None:
    """Refuse ``value`` (a ``result_accuracy`` written at ``line``/``column``) as XLA's parser
    refuses it, with an ``HloParseError`` at the token XLA points at."""
    try:
        _check(flat_value(value), line, column)
    except HloParseError as error:
        raise relocate(error, value, line, column) from None


def _check(text: str, line: int, column: int) -> None:
    def refuse(message: str, at: int) -> HloParseError:
        return HloParseError(message, line, column + at)

    at = skip(text, 0)
    if not text.startswith("{", at):
        raise refuse("expected '{' to start result precision list", at)
    at = skip(text, at + 1)
    name = _NAME.match(text, at)
    if name is None:
        raise refuse("expects attribute name", at)
    at = skip(text, name.end())
    if name.group(1) == "mode":
        word = _WORD.match(text, at)
        seen = word.group() if word else text[at:at + 1]
        if word is None or seen.lower() not in _MODES:
            raise refuse(f"expects ResultAccuracy type but sees: {seen}, error: Unknown "
                         "accuracy mode", at)
        at = skip(text, word.end())
    elif name.group(1) == "tolerance":
        at = _tolerance(text, at, refuse)
    else:
        raise refuse(f"invalid attribute name: {name.group(1)}", at)
    if not text.startswith("}", at):
        raise refuse("expected '}' to end result_accuracy", at)


def _tolerance(text: str, at: int, refuse: Callable[[str, int], HloParseError]) -> int:
    """Past the ``{atol=..., rtol=..., ulps=...}`` starting at ``at``."""
    if not text.startswith("{", at):
        raise refuse("expects '{' to start sub attributes", at)
    at = skip(text, at + 1)
    while not text.startswith("}", at):
        name = _NAME.match(text, at)
        if name is None:
            raise refuse("expects attribute name", at)
        at = skip(text, name.end())
        if name.group(1) not in _TOLERANCES:
            raise refuse(f"invalid attribute name: {name.group(1)}", at)
        number = _NUMBER.match(text, at)
        if number is None:
            raise refuse("expects decimal or integer", at)
        at = skip(text, number.end())
        if text.startswith(",", at):
            at = skip(text, at + 1)
    return skip(text, at + 1)
