from typing import Any

def scan(data: bytes, event_keys: tuple[str, ...], arg_keys: tuple[str, ...], cut_when: int,
         absent: Any, /) -> tuple[list[list[Any]], bytes | None, bytes | None] | None: ...
