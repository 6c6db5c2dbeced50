"""``iter_collectives``: the collectives of a big dump, read block by block.

The file is read in blocks of whole lines (default 8 MB); each block goes through the same
fast scanner as ``parse_module``. Memory is bounded by one block plus what the collectives
themselves hold (their strings, decoded values shared per distinct text, the starts still
waiting for their done, one root per computation): proportional to the collectives found,
not to the file. Differences from ``parse_module``, all documented on the collective:

- an operand's shape is known when written inline or defined in the same or previous block
  (otherwise ``operand_shapes`` has None there and ``bytes`` uses the result where the sizes
  agree);
- an ``async-start`` is linked to its wrapped collective when the called computation came
  earlier in the file (XLA prints callees first), and a ``-done`` to a start seen earlier.

When ``progress`` is None a rich progress bar is drawn on stderr if stderr is a terminal.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import sys
import zlib
from collections.abc import Callable, Generator, Iterator
from typing import IO

from .._errors import HloParseError, InvalidArgumentError
from ._collective import Collective
from ._context import ROOT_LINE, SHAPE_PATTERN, ScanContext
from ._link import Linker
from ._module import ModuleHeader, parse_header, resolve_counts
from ._scan import scan_collectives

BLOCK_SIZE = 8 << 20


class CollectiveStream(Iterator[Collective]):
    """The iterator ``iter_collectives`` returns: the collectives, and the module header once
    it has been read (after the first ``next()``, or at the end for a dump without
    collectives).

    ``header`` is the ``ModuleHeader`` as written; ``replica_count``/``num_partitions`` are
    the counts the collectives use (the header's, or the overrides), None until the header
    has been read.
    """

    def __init__(
        self, collectives: Callable[[CollectiveStream], Generator[Collective, None, None]]
    ) -> None:
        self.header: ModuleHeader | None = None
        self.replica_count: int | None = None
        self.num_partitions: int | None = None
        self._collectives = collectives(self)

    def __iter__(self) -> CollectiveStream:
        return self

    def __next__(self) -> Collective:
        return next(self._collectives)

    def close(self) -> None:
        """Stop reading and close the input (also done at the end and on garbage collection)."""
        self._collectives.close()


def iter_collectives(
    source: str | os.PathLike[str] | IO[bytes] | IO[str],
    replica_count: int | None = None,
    num_partitions: int | None = None,
    progress: bool | None = None,
    block_size: int = BLOCK_SIZE,
) -> CollectiveStream:
    """Yield every collective of an HLO dump in text order, reading it block by block.

    ``source`` is a path (plain or gzip), ``'-'`` for stdin, or an open file (bytes or text).
    Counts default to the header's; keyword overrides win. Errors as in ``parse_module``.
    The returned ``CollectiveStream`` also tells the header and the counts once read; each
    collective tells them too (``replica_count``, ``num_partitions``).
    """
    handle, name, total, closers = _open(source)

    def collectives(stream: CollectiveStream) -> Generator[Collective, None, None]:
        bar = _Bar(name, total) if (progress or (progress is None and sys.stderr.isatty())) else None
        try:
            yield from _blocks(handle, name, replica_count, num_partitions, block_size, bar,
                               stream)
        finally:
            if bar is not None:
                bar.stop()
            for closer in closers:
                closer.close()

    return CollectiveStream(collectives)


def _blocks(
    handle: IO[str],
    name: str,
    replica_count: int | None,
    num_partitions: int | None,
    block_size: int,
    bar: _Bar | None,
    stream: CollectiveStream,
) -> Iterator[Collective]:
    buffer = ""
    line = 0  # the line number of the newline that starts the next block
    context: ScanContext | None = None
    linker: Linker | None = None
    computation: str | None = None
    previous = ""
    done = False
    while not done:
        try:
            chunk = handle.read(block_size)
        except (OSError, EOFError, zlib.error) as error:
            raise InvalidArgumentError(f"cannot read {name}: {error}") from None
        done = not chunk
        buffer += chunk
        cut = len(buffer) if done else _cut(buffer)
        if cut <= 0 and not done:
            continue
        block, buffer = "\n" + buffer[:cut], buffer[cut + 1:] if not done else ""
        try:
            if context is None or linker is None:
                header, _ = parse_header(block[1:])
                r, p = resolve_counts(header, replica_count, num_partitions)
                stream.header, stream.replica_count, stream.num_partitions = header, r, p
                context = ScanContext(replica_count=r, num_partitions=p)
                linker = Linker(context)
            headers: list[tuple[int, str, bool]] = []
            found = scan_collectives(block, context, first_line=line, computation=computation,
                                     headers=headers)
            for match in ROOT_LINE.finditer(block):
                root_name = _computation_before(headers, match.start(), computation)
                if root_name is not None:
                    shape = match.group(1)
                    context.roots[root_name] = (match.group(2), shape[: shape.find("[")])
        except HloParseError as error:
            raise HloParseError(error.message, error.line, error.column, name) from None
        if headers:
            computation = headers[-1][1]
        _resolve_operands(found, previous, block)
        for c in found:
            c.keep_text(block)
        yield from linker.link(found)
        line += block.count("\n")
        previous = block[-(1 << 20):]
        if bar is not None:
            bar.advance(len(block.encode("utf-8", "replace")))
    if context is None:
        raise HloParseError("expected 'HloModule <name>' but the input is empty", 1, 1, name)


def _cut(buffer: str) -> int:
    """The last newline that ends a complete instruction (not a line ending in ',')."""
    cut = buffer.rfind("\n")
    for _ in range(100):
        if cut <= 0:
            return cut
        start = buffer.rfind("\n", 0, cut) + 1
        if not buffer[start:cut].rstrip().endswith(","):
            return cut
        cut = start - 1
    return cut


def _computation_before(headers: list[tuple[int, str, bool]], offset: int,
                        current: str | None) -> str | None:
    name = current
    for start, header_name, _ in headers:
        if start > offset:
            break
        name = header_name
    return name


def _resolve_operands(collectives: list[Collective], previous: str, block: str) -> None:
    """Record operand shapes from their definitions while the text is in memory: searched
    backwards from each collective through this block and the tail of the previous one."""
    for c in collectives:
        # Until ``keep_text``, a collective read from the block knows its line's offset.
        offset = c._source
        if not c.operands or c.inline_shapes or not isinstance(offset, int):
            continue
        shapes: list[str | None] = []
        for operand in c.operands:
            shapes.append(_definition_before(block, offset, operand)
                          or _definition_before(previous, len(previous), operand))
        c.inline_shapes = tuple(shapes)


def _definition_before(text: str, end: int, name: str) -> str | None:
    for needle in (f"%{name} = ", f" {name} = "):
        at = text.rfind(needle, 0, end)
        if at >= 0:
            match = _SHAPE_AT.match(text, at + len(needle))
            return match.group(1) if match else None
    return None


_SHAPE_AT = re.compile(r"[ \t]*(" + SHAPE_PATTERN + r")[ \t]")


def _open(
    source: str | os.PathLike[str] | IO[bytes] | IO[str],
) -> tuple[IO[str], str, int | None, list[IO[bytes]]]:
    """A text handle, a name for messages, the byte size for progress, what to close."""
    if not isinstance(source, (str, os.PathLike)):
        name = str(getattr(source, "name", "<stream>"))
        if isinstance(source, io.TextIOBase):
            return source, name, None, []
        binary: IO[bytes] = source  # type: ignore[assignment]
        return io.TextIOWrapper(binary, encoding="utf-8", errors="replace"), name, None, []
    path = os.fspath(source)
    if path == "-":
        return (io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"),
                "<stdin>", None, [])
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed by iter_collectives
    except OSError as error:
        raise InvalidArgumentError(f"cannot read HLO file {path}: {error.strerror}") from None
    size: int | None = os.fstat(raw.fileno()).st_size
    binary = raw
    if raw.peek(2)[:2] == b"\x1f\x8b":
        binary = gzip.GzipFile(fileobj=raw)  # type: ignore[assignment]
        size = None
    return io.TextIOWrapper(binary, encoding="utf-8", errors="replace"), path, size, [binary, raw]


class _Bar:
    """A rich progress bar on stderr, advanced by bytes read."""

    def __init__(self, name: str, total: int | None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

        self._progress = Progress(
            "[progress.description]{task.description}", BarColumn(), DownloadColumn(),
            TransferSpeedColumn(), transient=True, console=Console(stderr=True))
        self._task = self._progress.add_task(f"reading {os.path.basename(name)}", total=total)
        self._progress.start()

    def advance(self, amount: int) -> None:
        self._progress.advance(self._task, amount)

    def stop(self) -> None:
        self._progress.stop()
