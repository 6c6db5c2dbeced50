from typing import Any

TABLE: dict[str, Any]

def lex(text: str, pos: int, most: int = 0, /) -> tuple[bytes, bytes, bytes]: ...
