# end, root column, column, name, opcode, shape, operands (None: the names as XLA prints
# them), operand names, operand shapes, attributes, channel, explicit groups, rest, metadata,
# written, callees (see _line_scan.c).
ScannedLine = tuple[int, int, int, str, str, str, str | None, tuple[str, ...] | None,
                    tuple[str | None, ...], int, str | None, tuple[int, int] | None, str | None,
                    str | None, str, tuple[str, ...] | None]

def scan_lines(text: str, pos: int, most: int, /) -> list[ScannedLine]: ...

# end, ENTRY, name, name end, signature, result, result end (-1: none), parameter shapes (see
# _line_scan.c).
ScannedHead = tuple[int, int, int, int, int, int, int, tuple[str, ...]]

def scan_head(text: str, pos: int, /) -> ScannedHead | None: ...
