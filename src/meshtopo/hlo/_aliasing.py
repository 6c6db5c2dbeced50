"""The module header's ``input_output_alias`` and ``buffer_donor``: checked token by token as
XLA's parser reads them (``ParseAliasing``, ``ParseBufferDonor``, ``ParseShapeIndex``),
refused in XLA's words at XLA's token.

Grammar::

    input_output_alias := '{' [ alias ( ',' alias )* [ ','] ] '}'
    alias              := index ':' '(' INT ',' index [ ',' ( 'must-alias' | 'may-alias' ) ] ')'
    buffer_donor       := '{' [ '(' INT ',' index ')' ( ',' ... )* [ ','] ] '}'
    index              := '{' [ INT ( ',' INT )* ] '}'

Whether an index names a leaf of the entry's shapes is XLA's module check, not its parser's.

>>> check_aliasing("{ {0}: (0, {1}, must-alias) }", 1, 1)
>>> check_buffer_donor("{ (0, {0, a}) }", 1, 30)
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 1:40: expects integer
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .._errors import HloParseError
from ._syntax import int64_at, skip
from ._values import flat_value, relocate

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_ALIAS_FORMAT = ("Expected format: <output_shape_index>: (<input_param>, "
                 "<input_param_shape_index>) OR <output_shape_index>: <input_param>")
_DONOR_FORMAT = "Expected format: (<input_param>, <input_param_shape_index>)"
_KINDS = frozenset({"must-alias", "may-alias"})


def check_aliasing(value: str, line: int, column: int) -> None:
    """Refuse ``value`` (``input_output_alias`` written at ``line``/``column``) as XLA's
    parser refuses it, with an ``HloParseError`` at the token XLA points at."""
    _checked(_aliasing, value, line, column)


def check_buffer_donor(value: str, line: int, column: int) -> None:
    """Refuse ``value`` (``buffer_donor`` written at ``line``/``column``) as XLA's parser
    refuses it, with an ``HloParseError`` at the token XLA points at."""
    _checked(_buffer_donor, value, line, column)


_Refuse = Callable[[str, int], HloParseError]


def _checked(read: Callable[[str, _Refuse], None], value: str, line: int, column: int) -> None:
    def refuse(message: str, at: int) -> HloParseError:
        return HloParseError(message, line, column + at)

    try:
        read(flat_value(value), refuse)
    except HloParseError as error:
        raise relocate(error, value, line, column) from None


def _expect(text: str, at: int, token: str, message: str, refuse: _Refuse) -> int:
    if not text.startswith(token, at):
        raise refuse(message, at)
    return skip(text, at + len(token))


def _integer(text: str, at: int, refuse: _Refuse) -> int:
    found = int64_at(text, at)
    if found is None:
        raise refuse("expects integer", at)
    return skip(text, found[1])


def _index(text: str, at: int, refuse: _Refuse) -> int:
    at = _expect(text, at, "{", "Expects '{' at the start of ShapeIndex", refuse)
    while not text.startswith("}", at):
        at = _integer(text, at, refuse)
        if not text.startswith(",", at):
            break
        at = skip(text, at + 1)
    return _expect(text, at, "}", "Expects '}' at the end of ShapeIndex", refuse)


def _aliasing(text: str, refuse: _Refuse) -> None:
    at = _expect(text, skip(text, 0), "{", "Expects '{' at the start of aliasing description",
                 refuse)
    while not text.startswith("}", at):
        at = _index(text, at, refuse)
        at = _expect(text, at, ":", _ALIAS_FORMAT, refuse)
        at = _expect(text, at, "(", _ALIAS_FORMAT, refuse)
        at = _integer(text, at, refuse)
        at = _expect(text, at, ",", _ALIAS_FORMAT, refuse)
        at = _index(text, at, refuse)
        if text.startswith(",", at):
            at = skip(text, at + 1)
            kind = _WORD.match(text, at)
            if kind is None:
                raise refuse("expects name", at)
            at = skip(text, kind.end())
            if kind.group() not in _KINDS:
                raise refuse("Unexpected aliasing kind; expected SYSTEM or USER", at)
        at = _expect(text, at, ")", _ALIAS_FORMAT, refuse)
        if not text.startswith(",", at):
            break
        at = skip(text, at + 1)
    _expect(text, at, "}", "Expects '}' at the end of aliasing description", refuse)


def _buffer_donor(text: str, refuse: _Refuse) -> None:
    at = _expect(text, skip(text, 0), "{",
                 "Expects '{' at the start of buffer donor description", refuse)
    while not text.startswith("}", at):
        at = _expect(text, at, "(", _DONOR_FORMAT, refuse)
        at = _integer(text, at, refuse)
        at = _expect(text, at, ",", _DONOR_FORMAT, refuse)
        at = _index(text, at, refuse)
        at = _expect(text, at, ")", _DONOR_FORMAT, refuse)
        if not text.startswith(",", at):
            break
        at = skip(text, at + 1)
    _expect(text, at, "}", "Expects '}' at the end of buffer donor description", refuse)
