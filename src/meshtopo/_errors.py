"""The one error hierarchy: every failure meshtopo raises is a ``MeshtopoError``.

The subclasses mirror XLA's status codes where XLA has one (``InvalidArgumentError`` for
INVALID_ARGUMENT, ``InternalError`` for a failed RET_CHECK), plus ``HloParseError`` for text that
does not parse (with a 1-based ``line`` and ``column``) and ``LimitError`` for inputs that ask for
more devices than the configured limit.
"""

from __future__ import annotations


class MeshtopoError(Exception):
    """Base class of every error meshtopo raises on bad input or failed checks."""


class InvalidArgumentError(MeshtopoError, ValueError):
    """The input breaks a rule XLA reports as INVALID_ARGUMENT (or one meshtopo adds).

    ``location``, when the fault lies in one instruction of a module's text, is ``(source,
    instruction, line, column)``: the module's input (None for a string), the instruction's
    name and the 1-based position of its name, for front ends to print as they print the
    verifier's findings; None otherwise."""

    location: tuple[str | None, str, int, int] | None = None


class InternalError(MeshtopoError):
    """The input trips a check XLA makes with RET_CHECK (status INTERNAL)."""


class LimitError(MeshtopoError, ValueError):
    """The input asks for more devices (or elements) than the configured limit allows."""


class HloParseError(MeshtopoError, ValueError):
    """Text that does not parse; ``line`` and ``column`` are 1-based positions in the input
    (the column in characters, where XLA counts bytes)."""

    def __init__(self, message: str, line: int, column: int, source: str | None = None) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.source = source
        where = f"{source}:" if source else ""
        super().__init__(f"{where}{line}:{column}: {message}")
