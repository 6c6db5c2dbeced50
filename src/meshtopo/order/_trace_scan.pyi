def scan(data: bytes | bytearray | memoryview, event_keys: tuple[str, ...],
         arg_keys: tuple[str, ...], cut_when: int, /
         ) -> tuple[int, bytes, bytes, bytes, bytes, tuple[int, int] | None,
                    tuple[int, int] | None] | None: ...
