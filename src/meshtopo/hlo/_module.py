"""``Module``: an HLO module read from text; ``parse_module`` and ``load``.

Reading is two-speed. ``parse_module`` reads the header, every computation header and every
collective at once (the fast path of ``_scan``: one regex pass, decoded values cached per
distinct text). The full structural model (``module.computations``: every instruction of
every computation, with operands, attributes and called computations) is built from the same
text the first time it is asked for, so structural errors in non-collective lines surface
then, as ``HloParseError`` with line and column.

Memory: the module keeps the text (for the lazy structural model), so ``load`` of a 200 MB
dump holds those 200 MB plus the model. For big files use ``iter_collectives``, which reads
block by block in memory proportional to the collectives found.
"""

from __future__ import annotations

import functools
import gc
import gzip
import io
import os
import re
import sys
import zlib
from typing import IO, TYPE_CHECKING

from numpy.typing import ArrayLike

from .._errors import HloParseError, InvalidArgumentError
from .._placement import DeviceAssignment
from ._assignment import as_assignment, check_assignment, count
from ._collective import Collective
from ._context import TextContext
from ._lexer import parse_bool, parse_int, split_attributes
from ._link import Linker
from ._scan import scan_collectives

if TYPE_CHECKING:
    from ._structure import Computation

_HEADER = re.compile(r"[ \t]*HloModule[ \t]+(\"(?:[^\"\\]|\\.)*\"|[^\s,]+)")
_SKIPPABLE = re.compile(r"(?:[ \t]*(?://[^\n]*)?\r?\n)*")


class ModuleHeader:
    """The ``HloModule name, key=value, ...`` line: name, counts, scheduling and raw attributes."""

    def __init__(self, name: str, attributes: dict[str, str], line: int) -> None:
        self.name = name
        self.attributes = attributes
        self.line = line
        self.replica_count = 1
        self.num_partitions = 1
        self.is_scheduled = False


def parse_header(text: str, offset: int = 0) -> tuple[ModuleHeader, int]:
    """Read the module header at or after ``offset`` (blank and ``//`` lines skipped).

    Returns the header and the offset of the newline that ends it.
    """
    skipped = _SKIPPABLE.match(text, offset)
    start = skipped.end() if skipped else offset
    line = 1 + text.count("\n", 0, start)
    match = _HEADER.match(text, start)
    if match is None:
        found = text[start:start + 20].split("\n")[0]
        raise HloParseError(f"expected 'HloModule <name>' but found {found!r}", line, 1)
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    header_text = text[start:end].rstrip("\r")
    attributes: dict[str, str] = {}
    for key, value, column in split_attributes(header_text, line, 1, match.end() - start):
        attributes[key] = value
        if key in ("replica_count", "num_partitions"):
            number = parse_int(value, key, line, column)
            if number < 1:
                raise HloParseError(f"{key} must be at least 1, got {number}", line, column)
    header = ModuleHeader(match.group(1).strip('"'), attributes, line)
    if "replica_count" in attributes:
        header.replica_count = int(attributes["replica_count"])
    if "num_partitions" in attributes:
        header.num_partitions = int(attributes["num_partitions"])
    if "is_scheduled" in attributes:
        header.is_scheduled = parse_bool(attributes["is_scheduled"], "is_scheduled", line, 1)
    return header, end


def resolve_counts(
    header: ModuleHeader, replica_count: int | None, num_partitions: int | None
) -> tuple[int, int]:
    """The header's counts, with the keyword overrides winning when given (any integral value
    but a bool, at least 1; else ``InvalidArgumentError``)."""
    r = header.replica_count if replica_count is None else count(replica_count, "replica_count")
    p = (header.num_partitions if num_partitions is None
         else count(num_partitions, "num_partitions"))
    return r, p


class Module:
    """An HLO module: header values, computations and collectives.

    ``collectives`` lists every collective in text order (async wrappers and the collectives
    they call both appear, as in XLA where each is its own instruction). ``computations``
    (name -> ``Computation``, in text order) and ``entry`` are built on first use.
    """

    def __init__(
        self,
        header: ModuleHeader,
        text: str,
        context: TextContext,
        collectives: list[Collective],
        computation_headers: list[tuple[int, str, bool]],
        source: str | None,
    ) -> None:
        self.name = header.name
        self.header_attributes = header.attributes
        self.is_scheduled = header.is_scheduled
        self.replica_count = context.replica_count
        self.num_partitions = context.num_partitions
        self.collectives = collectives
        self.source = source
        self.text = text
        self._context = context
        self._headers = computation_headers
        entries = [name for _, name, is_entry in computation_headers if is_entry]
        self.entry_name: str | None = entries[0] if entries else (
            computation_headers[-1][1] if computation_headers else None)

    @property
    def device_assignment(self) -> DeviceAssignment:
        """``[replica][partition] -> device id`` used by ``device_groups()``/``device_pairs()``
        of the collectives: the one given to ``parse_module``/``load``, else XLA's default
        placement ``DeviceAssignment.default(replica_count, num_partitions)``."""
        return self._context.default_assignment()

    @property
    def entry_computation_layout(self) -> str | None:
        """The header's ``entry_computation_layout`` text, if written."""
        return self.header_attributes.get("entry_computation_layout")

    @functools.cached_property
    def computations(self) -> dict[str, Computation]:
        """Every computation, in text order, with its instructions (built on first use)."""
        from ._structure import parse_computations

        return parse_computations(self.text, self._headers, self)

    @property
    def entry(self) -> Computation:
        """The ENTRY computation (the last one when none is marked ENTRY)."""
        if self.entry_name is None or self.entry_name not in self.computations:
            raise InvalidArgumentError(f"module {self.name} has no computations")
        return self.computations[self.entry_name]

    @functools.cached_property
    def collectives_by_name(self) -> dict[str, Collective]:
        """``collectives`` keyed by instruction name."""
        return {c.name: c for c in self.collectives}

    def __repr__(self) -> str:
        return (f"<Module {self.name}: {len(self._headers)} computations, "
                f"{len(self.collectives)} collectives, replica_count={self.replica_count}, "
                f"num_partitions={self.num_partitions}>")


def parse_module(
    text: str,
    replica_count: int | None = None,
    num_partitions: int | None = None,
    device_assignment: DeviceAssignment | ArrayLike | None = None,
    source: str | None = None,
) -> Module:
    """Read HLO module text (as XLA prints it, before or after optimisation).

    ``replica_count``/``num_partitions`` override the header's values when given (the header
    defaults them to 1). ``device_assignment`` (a ``DeviceAssignment`` or a 2-D table
    ``[replica][partition] -> device id``) places the module on devices: it becomes
    ``module.device_assignment``, the default of every collective's ``device_groups()``, and
    must be ``replica_count x num_partitions`` (else ``InvalidArgumentError``). Errors are
    ``HloParseError`` with 1-based line and column (``source`` names the input in messages),
    or ``LimitError`` for groups past the device limit.
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(f"parse_module expects str text, got {type(text).__name__}")
    assignment = None if device_assignment is None else as_assignment(device_assignment)
    collecting = gc.isenabled()
    gc.disable()  # the scan creates many long-lived objects; cyclic GC passes only cost time
    try:
        header, _ = parse_header(text)
        r, p = resolve_counts(header, replica_count, num_partitions)
        if assignment is not None:
            check_assignment(assignment, r, p, f"module {header.name}")
        context = TextContext(text, r, p, assignment)
        headers: list[tuple[int, str, bool]] = []
        found = scan_collectives(text, context, first_line=1, headers=headers)
        context.set_computations([(offset, name) for offset, name, _ in headers])
        collectives = Linker(context).link(found)
    except HloParseError as error:
        if source and error.source is None:
            raise HloParseError(error.message, error.line, error.column, source) from None
        raise
    finally:
        if collecting:
            gc.enable()
    return Module(header, text, context, collectives, headers, source)


def read_text(path: str | os.PathLike[str] | IO[bytes] | IO[str]) -> tuple[str, str]:
    """The whole text of ``path`` (plain or gzip; ``'-'`` is stdin) and a name for messages."""
    if isinstance(path, (str, os.PathLike)):
        name = os.fspath(path)
        if name == "-":
            return _decode(sys.stdin.buffer.read(), "<stdin>"), "<stdin>"
        try:
            with open(name, "rb") as handle:
                data = handle.read()
        except OSError as error:
            raise InvalidArgumentError(f"cannot read HLO file {name}: {error.strerror}") from None
        return _decode(data, name), name
    content = path.read()
    name = str(getattr(path, "name", "<stream>"))
    return (content if isinstance(content, str) else _decode(content, name)), name


def _decode(data: bytes, name: str) -> str:
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            raise InvalidArgumentError(f"{name} is not a readable gzip file: {error}") from None
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace").read()


def load(
    path: str | os.PathLike[str] | IO[bytes] | IO[str],
    replica_count: int | None = None,
    num_partitions: int | None = None,
    device_assignment: DeviceAssignment | ArrayLike | None = None,
) -> Module:
    """``parse_module`` of a file (plain or gzip-compressed), an open file, or ``'-'`` (stdin)."""
    text, name = read_text(path)
    return parse_module(text, replica_count, num_partitions, device_assignment, source=name)
