"""``Finding``, one failed verifier check, and the instruction texts XLA appends to messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._collective import Collective


@dataclass(frozen=True)
class Finding:
    """One failed verifier check on one instruction.

    ``message`` is XLA's text for the failure; ``instruction`` the instruction's name (no
    ``%``), ``opcode`` its opcode, ``line``/``column`` (1-based) the position of its name.
    ``check`` names the family of checks: ``"async_pairs"``, ``"channels"``,
    ``"group_mode"``, ``"replica_groups"``, ``"shapes"``, ``"source_target_pairs"``,
    ``"channel_id"``, ``"deadlock"``, ``"layout"``. ``severity`` is ``"error"`` (XLA rejects
    the module) for every check meshtopo runs today.
    """

    message: str
    instruction: str
    opcode: str
    line: int
    column: int
    check: str
    severity: str = "error"


class SourceText:
    """The module text split into lines on first use, for quoting instructions in messages."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._lines: list[str] | None = None

    def instruction_text(self, line: int) -> str:
        """The instruction starting at ``line`` as written (joined when it spans lines: while
        a bracket or a trailing comma leaves it open, or the next line starts with a comma)."""
        if self._lines is None:
            self._lines = self._text.split("\n")
        lines = self._lines
        if not 1 <= line <= len(lines):
            return ""
        chunk = lines[line - 1].strip()
        index = line
        while index < len(lines) and index - line < 1000:
            nxt = lines[index].strip()
            if nxt in ("", "}") or not (_is_open(chunk) or nxt.startswith(",")):
                break
            chunk += ("" if nxt.startswith(",") else " ") + nxt
            index += 1
        if chunk.startswith("ROOT ") or chunk.startswith("ROOT\t"):
            chunk = chunk[5:].lstrip()
        return chunk


def _is_open(text: str) -> bool:
    depth = 0
    quoted = False
    previous = ""
    for char in text:
        if quoted:
            quoted = not (char == '"' and previous != "\\")
        elif char == '"':
            quoted = True
        elif char in "{([":
            depth += 1
        elif char in "})]":
            depth -= 1
        previous = char
    return depth > 0 or text.rstrip().endswith(",")


def short_text(collective: Collective) -> str:
    """XLA's ``ToShortString``: ``%name = shape opcode(%operand, ...)``."""
    operands = ", ".join(f"%{name}" for name in collective.operands)
    return f"%{collective.name} = {collective.shape_text} {collective.opcode}({operands})"
