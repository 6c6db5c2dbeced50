from typing import Any

TABLE: dict[str, Any]

def lex(text: str, pos: int, /) -> tuple[bytes, bytes, bytes]: ...
