"""Opening HLO input: the one place that decides how a path, ``'-'`` or an open file is read.

A path is opened in binary; ``'-'`` is stdin's bytes; an open file is used as it is (a text
file as text). Bytes starting with gzip's magic number are decompressed as they are read,
whichever of the three they come from, and decoded as UTF-8 (bad bytes replaced). Every
failure is an ``InvalidArgumentError`` naming the input: ``cannot read HLO file NAME: ...``
when it cannot be opened or read, ``NAME is not a readable gzip file: ...`` when its gzip
stream is broken or cut short. ``load`` reads the whole text this way and
``iter_collectives`` reads it block by block, so both accept and refuse the same inputs with
the same words.

>>> import gzip, io
>>> with open_input(io.BytesIO(gzip.compress(b"HloModule m"))) as hlo:
...     hlo.read(), hlo.name
('HloModule m', '<stream>')
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from typing import IO

from .._errors import InvalidArgumentError

GZIP_MAGIC = b"\x1f\x8b"


class HloInput:
    """An opened HLO input: ``read`` gives text, ``name`` names it in messages, ``size`` is
    the byte count for progress (None when unknown or compressed). Close it (or use it as a
    context manager) to close what was opened here; a caller's open file stays open."""

    def __init__(self, handle: IO[str], name: str, size: int | None, compressed: bool,
                 closers: list[IO[bytes]], borrowed: bool = False) -> None:
        self.handle = handle
        self.name = name
        self.size = size
        self.compressed = compressed
        self._closers = closers
        self._borrowed = borrowed  # the text handle wraps a stream that is not ours to close

    def read(self, size: int = -1) -> str:
        """Up to ``size`` characters (all that is left when negative); '' at the end."""
        try:
            return self.handle.read(size)
        except (OSError, EOFError, zlib.error) as error:
            raise self._failure(error) from None

    def _failure(self, error: BaseException) -> InvalidArgumentError:
        if self.compressed and isinstance(error, (EOFError, zlib.error, gzip.BadGzipFile)):
            return InvalidArgumentError(f"{self.name} is not a readable gzip file: {error}")
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        return InvalidArgumentError(f"cannot read HLO file {self.name}: {reason}")

    def close(self) -> None:
        """Close what ``open_input`` opened; stdin and a file the caller passed in stay open."""
        if self._borrowed and isinstance(self.handle, io.TextIOWrapper) and not self.handle.closed:
            self.handle.detach()
        for closer in self._closers:
            closer.close()

    def __enter__(self) -> HloInput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_input(source: str | os.PathLike[str] | IO[bytes] | IO[str]) -> HloInput:
    """``source`` opened for reading as HLO text (see the module docstring)."""
    if not isinstance(source, (str, os.PathLike)):
        name = str(getattr(source, "name", "<stream>"))
        if isinstance(source, io.TextIOBase):
            return HloInput(source, name, None, False, [])
        binary, compressed = _unzipped(source)  # type: ignore[arg-type]
        return HloInput(_text(binary), name, None, compressed, [binary] if compressed else [],
                        borrowed=True)
    path = os.fspath(source)
    if path == "-":
        binary, compressed = _unzipped(sys.stdin.buffer)
        return HloInput(_text(binary), "<stdin>", None, compressed, [], borrowed=True)
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed by HloInput.close
    except OSError as error:
        raise InvalidArgumentError(f"cannot read HLO file {path}: {error.strerror}") from None
    binary, compressed = _unzipped(raw)
    size = None if compressed else os.fstat(raw.fileno()).st_size
    return HloInput(_text(binary), path, size, compressed, [binary, raw])


def _text(binary: IO[bytes]) -> IO[str]:
    return io.TextIOWrapper(binary, encoding="utf-8", errors="replace")


def _unzipped(binary: IO[bytes]) -> tuple[IO[bytes], bool]:
    """``binary``, decompressed as read when it starts with gzip's magic number (looked at
    without consuming it: peeked, or read and put back in front)."""
    peek = getattr(binary, "peek", None)
    if peek is not None:
        head = peek(2)[:2]
    else:
        head = binary.read(2)
        binary = io.BufferedReader(_Prefixed(head, binary))
    if head != GZIP_MAGIC:
        return binary, False
    return gzip.GzipFile(fileobj=binary), True  # type: ignore[return-value]


class _Prefixed(io.RawIOBase):
    """The bytes ``head`` then the rest of ``rest``: a stream that cannot peek, with the
    bytes already read from it put back."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._head:
            count = min(len(buffer), len(self._head))
            buffer[:count] = self._head[:count]
            self._head = self._head[count:]
            return count
        data = self._rest.read(len(buffer)) or b""
        buffer[: len(data)] = data
        return len(data)
