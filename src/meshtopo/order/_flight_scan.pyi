from typing import Any

def scan(data: bytes, fields: tuple[str, ...], library: str, max_depth: int, /
         ) -> tuple[list[Any], bytes, Any, Any] | None: ...
