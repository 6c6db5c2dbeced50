"""A cursor over XLA's tokens in one attribute value, for the readers that parse a value as
XLA's parser does: its current token (``kind``, ``start``, ``end``), moved by ``lex``, and
XLA's ``ParseToken``, ``EatIfPresent``, ``ParseInt64``, ``ParseString`` and
``ParseAttributeName`` over it, each refusing in XLA's words at XLA's token.

Errors XLA's parser records without stopping (``record``) are kept: the first one is what
XLA reports if the text is refused later, in this value or after it.

>>> cursor = TokenCursor('{ x=3 }', 1, 10)
>>> cursor.expect(TokKind.kLbrace, "expects '{'"); cursor.attribute_name(), cursor.integer()
('x', 3)
>>> cursor.integer()
Traceback (most recent call last):
...
meshtopo._errors.HloParseError: 1:16: expects integer
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Mapping
from typing import TypeVar

from .._errors import HloParseError
from ..groups._text import int64_value
from . import _native
from ._pure_lexer import next_token
from ._token_values import int_value, string_value
from ._tokens import INT, TokKind
from ._values import flat_value, relocate

_RUN = 64  # tokens lexed at once
_NATIVE = _native.TOKENIZER == "native"
_MASKED = frozenset({TokKind.kDecimal, TokKind.kDxD, TokKind.kPad, TokKind.kDimLabels})
_INTEGER = re.compile(INT)
_T = TypeVar("_T")


def read_value(read: Callable[[TokenCursor], _T], value: str, line: int, column: int) -> _T:
    """``read`` run on a cursor over the attribute value ``value`` (written at
    ``line:column``, comments and line breaks in it read as white space); its refusal moved
    to the physical line and column where it falls."""
    try:
        return read(TokenCursor(flat_value(value), line, column))
    except HloParseError as error:
        raise relocate(error, value, line, column) from None


def value_check(read: Callable[[TokenCursor], object], what: str, key: str | None = None
                ) -> Callable[[str, int, int], HloParseError | None]:
    """The check of an attribute value (``what``) that XLA's parser reads as ``read``
    does: ``check(value, line, column)`` refuses it as XLA does, at XLA's token, and gives
    the first error XLA records and reads on past, if any (``recorded_reading``); with the
    attribute's ``key``, the reader may give the attribute up (``read_attribute``)."""

    def check(value: str, line: int, column: int) -> HloParseError | None:
        try:
            return recorded_reading(read, value, line, column)
        except GiveUp:  # (a reader that gives up is given its attribute's key)
            raise UnparsedAttribute(key or what, line, column) from None

    check.__doc__ = (f"Refuse ``value`` ({what} written at ``line``/``column``) as XLA's "
                     "parser refuses it, with an ``HloParseError`` at the token XLA points "
                     "at; the first error XLA records reading it and reads on past, or None.")
    return check


def recorded_reading(read: Callable[[TokenCursor], object], value: str, line: int,
                     column: int) -> HloParseError | None:
    """``read_value`` of a value XLA's parser may read on past an error in: the first
    error it recorded (reported if the text is refused later), moved as ``read_value``
    moves a refusal, or None."""

    def reading(c: TokenCursor) -> HloParseError | None:
        read(c)
        return c.recorded

    recorded = read_value(reading, value, line, column)
    return None if recorded is None else relocate(recorded, value, line, column)


def to_the_end(read: Callable[[TokenCursor], _T], message: str) -> Callable[[TokenCursor], _T]:
    """``read``, which must take the whole value: a token after what it read is refused with
    ``message`` (a value its reader cut off is one)."""

    def whole(c: TokenCursor) -> _T:
        found = read(c)
        if c.kind != TokKind.kEof:
            raise c.error(message)
        return found

    return whole


class UnparsedAttribute(HloParseError):
    """What a value's reader raises where XLA's parser gives the attribute up without words
    of its own: XLA says ``error parsing attribute <key>`` at the attribute's name, which the
    reader of the attribute list knows and points at (for a caller reading the value alone,
    the position is reckoned back from the value's)."""

    def __init__(self, key: str, line: int, column: int) -> None:
        super().__init__(f"error parsing attribute {key}", line, max(column - len(key) - 1, 1))


class GiveUp(Exception):
    """Raised by a value's reader where XLA's parser gives the attribute up without words of
    its own (``read_attribute`` makes it an ``UnparsedAttribute``)."""


def read_attribute(key: str, read: Callable[[TokenCursor], _T], value: str, line: int,
                   column: int) -> _T:
    """``read_value`` of attribute ``key``'s ``value``, where the reader's ``GiveUp`` is
    XLA's ``error parsing attribute <key>``."""
    try:
        return read_value(read, value, line, column)
    except GiveUp:
        raise UnparsedAttribute(key, line, column) from None


def sub_attributes(c: TokenCursor, readers: Mapping[str, Callable[[TokenCursor], _T]],
                   required: bool = True) -> dict[str, _T]:
    """XLA's ``ParseSubAttributes`` at the cursor's ``{``, every one of them ``required`` or
    none: each ``name=value`` (a ``,`` before it optional) read by ``readers[name]``, through
    the ``}``; refused in XLA's words at its token (a name not in ``readers``, one written
    twice, one missing)."""
    opened = c.start
    c.expect(TokKind.kLbrace, "expects '{' to start sub attributes")
    found: dict[str, _T] = {}
    while c.kind != TokKind.kRbrace:
        c.eat(TokKind.kComma)
        at = c.start
        name = c.attribute_name()
        if name in found:
            raise c.error(f"attribute {name} already exists", at)
        read = readers.get(name)
        if read is None:
            raise c.error(f'unexpected attribute "{name}". Allowed attributes: '
                          + ", ".join(sorted(readers)), at)
        try:
            found[name] = read(c)
        except GiveUp:  # XLA's words for a value it gives up
            raise c.error(f"error parsing attribute {name}", at) from None
    missing = sorted(set(readers) - set(found)) if required else []
    if missing:
        raise c.error(f"sub-attribute {missing[0]} is expected but not seen", opened)
    c.expect(TokKind.kRbrace, "expects '}' to end sub attributes")
    return found


class TokenCursor:
    """The tokens of ``text`` (one line; its offset 0 at ``line:column``) from ``at`` on."""

    __slots__ = ("_ends", "_index", "_kinds", "_starts", "column", "end", "kind", "line",
                 "previous_end", "recorded", "resume", "start", "text")

    def __init__(self, text: str, line: int, column: int, at: int = 0) -> None:
        self.text, self.line, self.column = text, line, column
        self.recorded: HloParseError | None = None
        self.previous_end = at  # where the token moved past ends
        self._lex_from(at)

    def _lex_from(self, at: int) -> None:
        """Lex the next tokens from offset ``at`` at once (a run of ``_RUN``: a cursor over a
        module's text lexes only what its reader reads; one at a time without the compiled
        tokenizer), and move to the first."""
        if not _NATIVE:
            self._kinds, self._index = b"", 0
            self.kind, self.start, self.end, self.resume = next_token(self.text, at)
            return
        kinds, starts, ends = _native.lex(self.text, at, _RUN)
        self._kinds, self._starts, self._ends = (
            kinds, memoryview(starts).cast("q"), memoryview(ends).cast("q"))
        self._index = 0
        self.kind, self.start, self.end = kinds[0], self._starts[0], self._ends[0]
        self.resume = self.end

    def lex(self) -> None:
        """Move to the next token."""
        self.previous_end = self.end
        index = self._index + 1
        if index < len(self._kinds) and self.resume == self._ends[self._index]:
            self._index = index  # the next of the tokens lexed at once
            self.kind, self.start, self.end = (
                self._kinds[index], self._starts[index], self._ends[index])
            self.resume = self.end
        else:  # past them, or a reader moved elsewhere (``lex_integer_first``)
            self._lex_from(self.resume)

    def lex_integer_first(self) -> None:
        """Move to the next token as XLA's lexer does where only an integer or punctuation
        may come (``kDimLabelsDxDPadDecimalMask``, in integer lists): a decimal, ``NxM``,
        pad or dimension labels token that starts with an integer is that integer."""
        self.lex()
        if self.kind in _MASKED and (found := _INTEGER.match(self.text, self.start)):
            if int64_value(found.group()) is None:  # past uint64: XLA's lexer errs there
                self.kind, self.end, self.resume = TokKind.kError, self.start + 1, self.start + 1
            else:
                self.kind, self.end, self.resume = TokKind.kInt, found.end(), found.end()

    def jump(self, at: int) -> None:
        """Move to the token at or after offset ``at`` (where another reader stopped): the
        one after a token lexed before that ends at ``at``, or those lexed from there."""
        self.previous_end = at
        ends = self._ends if self._kinds else ()
        index = bisect.bisect_left(ends, at, self._index)
        if index + 1 < len(ends) and ends[index] == at:
            self._index = index = index + 1
            self.kind, self.start, self.end = (
                self._kinds[index], self._starts[index], ends[index])
            self.resume = self.end
        else:
            self._lex_from(at)

    def look_ahead(self) -> int:
        """The kind of the token after the current one."""
        index = self._index + 1
        if index < len(self._kinds) and self.resume == self._ends[self._index]:
            return self._kinds[index]
        return next_token(self.text, self.resume)[0]

    @property
    def word(self) -> str:
        """The current token's text."""
        return self.text[self.start:self.end]

    def error(self, message: str, at: int | None = None) -> HloParseError:
        """What XLA reports when it stops with ``message`` at offset ``at`` (the current
        token's by default): the first error recorded before, if any."""
        return self.recorded or HloParseError(
            message, self.line, self.column + (self.start if at is None else at))

    def record(self, message: str, at: int | None = None) -> None:
        """Note ``message`` at offset ``at`` (the current token's by default) as XLA's parser
        does when it reads on; the first one noted is kept."""
        if self.recorded is None:
            self.recorded = HloParseError(
                message, self.line, self.column + (self.start if at is None else at))

    def expect(self, kind: int, message: str) -> None:
        """XLA's ``ParseToken``: step over a token of ``kind``, else refuse with ``message``."""
        if self.kind != kind:
            raise self.error(message)
        self.lex()

    def eat(self, kind: int) -> bool:
        """XLA's ``EatIfPresent``: step over a token of ``kind`` if it is the current one."""
        if self.kind != kind:
            return False
        self.lex()
        return True

    def integer(self) -> int:
        """XLA's ``ParseInt64``: the current kInt token's value."""
        if self.kind != TokKind.kInt:
            raise self.error("expects integer")
        value = int_value(self.text, self.start, self.end)
        self.lex()
        return value

    def int_list(self) -> list[int]:
        """XLA's ``ParseInt64List`` of a braced list, ``{1, 2, 3}`` (may be empty), where an
        element is lexed as an integer first (``lex_integer_first``); refused in XLA's words,
        "expects a list to end with kRbrace" where the ``{`` or the ``}`` is missing."""
        if self.kind != TokKind.kLbrace:
            raise self.error("expects a list to end with kRbrace")
        self.lex_integer_first()
        values: list[int] = []
        if self.kind != TokKind.kRbrace:
            values.append(self.integer())
            while self.kind == TokKind.kComma:
                self.lex_integer_first()
                values.append(self.integer())
        self.expect(TokKind.kRbrace, "expects a list to end with kRbrace")
        return values

    def int_lists(self) -> list[list[int]]:
        """XLA's ``ParseInt64ListList``: ``{`` [``int_list`` (``,`` ``int_list``)*] ``}``."""
        self.expect(TokKind.kLbrace, "expects a list starting with kLbrace")
        lists: list[list[int]] = []
        if self.kind != TokKind.kRbrace:
            lists.append(self.int_list())
            while self.eat(TokKind.kComma):
                lists.append(self.int_list())
        self.expect(TokKind.kRbrace, "expects a list to end with kRbrace")
        return lists

    def string(self) -> str:
        """XLA's ``ParseString``: the current string token's value."""
        if self.kind != TokKind.kString:
            raise self.error("expects string")
        value = string_value(self.text, self.start, self.end)
        self.lex()
        return value

    def name(self) -> str:
        """XLA's ``ParseName``: the name of the current kIdent, or kName without its ``%``
        or ``:``."""
        if self.kind == TokKind.kIdent:
            name = self.word
        elif self.kind == TokKind.kName:
            word = self.word
            name = word[1:] if word.startswith("%") else word[:-1]
        else:
            raise self.error("expects name")
        self.lex()
        return name

    def attribute_name(self) -> str:
        """XLA's ``ParseAttributeName``: the name of the current ``name=`` token."""
        if self.kind != TokKind.kAttributeName:
            raise self.error("expects attribute name")
        name = self.text[self.start:self.end - 1]
        self.lex()
        return name
