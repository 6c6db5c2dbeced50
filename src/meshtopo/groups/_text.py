"""A small scanner for the compact texts XLA prints: group lists, iota tiles, mesh-axes lists.

Every error it raises is an ``HloParseError`` whose 1-based line and column point into the text
being read (offset by ``line``/``column`` when the text is a slice of a larger file).
"""

from __future__ import annotations

import re

from .._errors import HloParseError, InvalidArgumentError

_INT = re.compile(r"-?[0-9]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
# XLA's lexer's white space (the HLO token table, ``hlo._tokens``, takes it from here, the
# lowest layer that reads XLA's text): a form feed or vertical tab is none.
WHITESPACE = " \t\n\r"
_SPACE = re.compile(f"[{WHITESPACE}]*")
# XLA's lexer reads a decimal integer (kInt) from int64's minimum to uint64's maximum, the
# upper half as the int64 of the same bits.
_KINT_MIN, _KINT_MAX = -(1 << 63), (1 << 64) - 1


def int64_value(digits: str) -> int | None:
    """The int64 XLA's lexer holds for the decimal ``digits`` (``-?[0-9]+``) of a kInt token:
    a value past int64's maximum, up to uint64's, is the int64 of the same bits; None when
    the value is outside that range (XLA's lexer reads no integer there). The one rule for
    an integer's value: the HLO lexer's integers (``hlo._token_values.int_value``) use it too.

    >>> int64_value("-12"), int64_value("18446744073709551615"), int64_value("18446744073709551616")
    (-12, -1, None)
    """
    if len(digits) < 19:  # 18 digits or fewer: an int64
        return int(digits)
    significant = digits.lstrip("-").lstrip("0")
    if len(significant) > 20:  # past the range: no long conversion
        return None
    value = -int(significant or "0") if digits.startswith("-") else int(significant or "0")
    if not _KINT_MIN <= value <= _KINT_MAX:
        return None
    return value - (1 << 64) if value >= 1 << 63 else value


class Scanner:
    """Reads tokens left to right from ``text``; positions are reported as (line, column).

    ``line`` and ``column`` give the position of ``text[0]`` in a larger input, so that errors
    found while reading an attribute value point into the whole file.
    """

    def __init__(self, text: str, what: str, line: int = 1, column: int = 1) -> None:
        if not isinstance(text, str):
            raise InvalidArgumentError(f"{what} must be given as text, got {text!r}")
        self.text = text
        self.what = what
        self.pos = 0
        self._line = line
        self._column = column

    def position(self, pos: int | None = None) -> tuple[int, int]:
        """The (line, column) of offset ``pos`` (default: the current offset)."""
        pos = self.pos if pos is None else pos
        before = self.text[:pos]
        newlines = before.count("\n")
        if newlines == 0:
            return self._line, self._column + pos
        return self._line + newlines, pos - before.rfind("\n")

    def error(self, message: str, pos: int | None = None) -> HloParseError:
        """An ``HloParseError`` naming what is being read, at ``pos`` (default: here)."""
        line, column = self.position(pos)
        return HloParseError(f"{message} in {self.what}", line, column)

    def skip_space(self) -> None:
        """Move past white space."""
        match = _SPACE.match(self.text, self.pos)
        if match:
            self.pos = match.end()

    def at_end(self) -> bool:
        """True when only white space is left."""
        self.skip_space()
        return self.pos >= len(self.text)

    def peek(self, token: str) -> bool:
        """True when the next token (after white space) starts with ``token``."""
        self.skip_space()
        return self.text.startswith(token, self.pos)

    def accept(self, token: str) -> bool:
        """Consume ``token`` if it is next; say whether it was."""
        if self.peek(token):
            self.pos += len(token)
            return True
        return False

    def expect(self, token: str) -> None:
        """Consume ``token`` or raise an error saying what was found instead."""
        if not self.accept(token):
            raise self.error(f"expected '{token}' but found {self.describe_next()}")

    def describe_next(self) -> str:
        """A short quote of what comes next, for error messages."""
        self.skip_space()
        if self.pos >= len(self.text):
            return "the end of the text"
        return repr(self.text[self.pos : self.pos + 12])

    def integer(self, minimum: int | None = None) -> int:
        """Read a decimal integer as XLA's lexer reads it (``int64_value``); ``minimum`` (if
        given) is the smallest accepted value."""
        self.skip_space()
        start = self.pos
        match = _INT.match(self.text, self.pos)
        if not match:
            raise self.error(f"expected an integer but found {self.describe_next()}")
        digits = match.group()
        value = int64_value(digits)
        if value is None:
            shown = digits if len(digits) <= 24 else f"{digits[:20]}... ({len(digits)} digits)"
            raise self.error(f"integer {shown} does not fit in int64", start)
        if minimum is not None and value < minimum:
            raise self.error(f"expected an integer >= {minimum} but found {value}", start)
        self.pos = match.end()
        return value

    def integer_list(self, open_: str, close: str, minimum: int | None = None) -> list[int]:
        """Read ``open_ INT (',' INT)* close``, allowing the empty list."""
        self.expect(open_)
        values: list[int] = []
        if self.accept(close):
            return values
        while True:
            values.append(self.integer(minimum))
            if self.accept(close):
                return values
            self.expect(",")

    def name(self) -> str:
        """Read a name, quoted with ' or " or bare (letters, digits, _ . -)."""
        self.skip_space()
        quote = self.text[self.pos : self.pos + 1]
        if quote in ("'", '"'):
            end = self.text.find(quote, self.pos + 1)
            if end < 0:
                raise self.error(f"unterminated name starting with {quote}")
            value = self.text[self.pos + 1 : end]
            self.pos = end + 1
            return value
        match = _NAME.match(self.text, self.pos)
        if not match:
            raise self.error(f"expected a name but found {self.describe_next()}")
        self.pos = match.end()
        return match.group()

    def finish(self) -> None:
        """Raise unless only white space is left."""
        if not self.at_end():
            raise self.error(f"unexpected {self.describe_next()} after the end")
