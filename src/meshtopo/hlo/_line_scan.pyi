from collections.abc import Container
from typing import Any

# end, root column, column, name, opcode, shape, operands, operand names, attributes, channel,
# explicit groups, rest, metadata tail, written (see _line_scan.c).
ScannedLine = tuple[int, int, int, str, str, str, str, tuple[str, ...] | None, int, str | None,
                    tuple[int, int] | None, str | None, str | None, str]

def scan_line(text: str, pos: int, last: tuple[int, int] | None, /) -> ScannedLine | None: ...
def read_lines(text: str, pos: int, line: int, reader: object, computation: object, most: int,
               kept: Container[str], /) -> tuple[list[Any], int, int]: ...
def configure(instruction: type, fields: tuple[str, ...], opcodes: frozenset[str],
              type_names: Container[str],
              literal_opcodes: frozenset[str], no_layout: object, syntax_fault: type,
              operand_counts: dict[str, int], /) -> None: ...
