"""The rows of ``meshtopo inspect``: one per collective, device groups shared per pattern.

Collectives are read with ``mt.hlo.iter_collectives`` (block by block, so a big dump costs
memory in proportion to its collectives, not its size). What a collective resolves to depends
only on its group mode and its groups (or pairs) as written, so the resolution is computed once
per distinct ``(mode, groups)`` and shared: a ``Pattern``. A ``Row`` is the per-instruction part
(name, opcode, line, bytes) and a reference to its pattern.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from typing import IO

import numpy as np

from .._errors import MeshtopoError
from .._placement import DeviceAssignment
from ..hlo import Collective, iter_collectives, parse_module
from ._options import device_assignment, int_list


@dataclass(frozen=True, slots=True)
class Pattern:
    """The resolution of one ``(mode, groups as written)``, shared by every collective with it.

    ``device_groups`` are global device ids in XLA's order (rank order inside a group); for
    permutes and send/recv one ``[source, target]`` group per device pair (``is_pairs``).
    ``ids_differ``: some participating cell's flattened id (``r * P + p``) differs from its
    device id. ``ascending``: every group lists its devices in ascending order (None for
    pairs, where order means direction, not rank). ``error`` is XLA's complaint, if any.
    """

    index: int
    mode: str | None
    written: str | None
    is_pairs: bool
    device_groups: list[list[int]]
    group_count: int
    group_size: int | None
    ids_differ: bool
    ascending: bool | None
    error: str | None


@dataclass(frozen=True, slots=True)
class Row:
    """One collective instruction and the pattern it resolves to."""

    name: str
    opcode: str
    line: int
    column: int
    computation: str | None
    channel_id: int | None
    use_global_device_ids: bool | None
    bytes: int | None
    pattern: Pattern


@dataclass
class Inspection:
    """Everything ``inspect`` prints: the grid, the placement, the rows and their patterns."""

    source: str
    replica_count: int
    num_partitions: int
    assignment: DeviceAssignment
    assignment_spec: str
    rows: list[Row]
    patterns: list[Pattern]

    @property
    def ids_differ_count(self) -> int:
        """How many collectives have cells whose flattened id and device id differ."""
        return sum(1 for row in self.rows if row.pattern.ids_differ)

    @property
    def descending_count(self) -> int:
        """How many collectives have a group not in ascending device order."""
        return sum(1 for row in self.rows if row.pattern.ascending is False)

    @property
    def error_count(self) -> int:
        """How many collectives XLA would reject (the error is on their pattern)."""
        return sum(1 for row in self.rows if row.pattern.error is not None)


def inspect_file(
    source: str | os.PathLike[str] | IO[bytes] | IO[str],
    assignment_spec: str = "default",
    replica_count: int | None = None,
    num_partitions: int | None = None,
    progress: bool | None = None,
    block_size: int | None = None,
) -> Inspection:
    """Read every collective of an HLO dump (path, ``'-'`` for stdin, or open file) and resolve
    its device groups under the given placement (an ``--device-assignment`` spec).

    ``progress`` and ``block_size`` go to ``iter_collectives`` (None: its defaults).
    """
    rows: list[Row] = []
    patterns: dict[tuple[object, ...], Pattern] = {}
    assignment: DeviceAssignment | None = None
    counts = (0, 0)
    name = source if isinstance(source, str) else str(getattr(source, "name", "<stream>"))
    options = {} if block_size is None else {"block_size": block_size}
    stream = iter_collectives(source, replica_count, num_partitions, progress=progress, **options)
    for collective in stream:
        if assignment is None:
            counts = _module_counts(collective)
            assignment = device_assignment(assignment_spec, *counts)
        rows.append(
            Row(
                collective.name,
                collective.opcode,
                collective.line,
                collective.column,
                collective.computation,
                collective.channel_id,
                collective.use_global_device_ids,
                _bytes(collective),
                _pattern_of(collective, assignment, patterns),
            )
        )
    if assignment is None:
        replica_count, num_partitions = _header_counts(source, replica_count, num_partitions)
        assignment = _assignment_without_collectives(assignment_spec, replica_count, num_partitions)
        counts = (assignment.replica_count, assignment.computation_count)
    return Inspection(
        "<stdin>" if name == "-" else name,
        counts[0],
        counts[1],
        assignment,
        assignment_spec,
        rows,
        list(patterns.values()),
    )


def _header_counts(
    source: object, replica_count: int | None, num_partitions: int | None
) -> tuple[int | None, int | None]:
    """The header's counts of a dump file that had no collectives (overrides win); unknown
    (None) for streams, where the header has been read already."""
    if not isinstance(source, (str, os.PathLike)) or os.fspath(source) == "-":
        return replica_count, num_partitions
    try:
        with open(source, "rb") as raw:
            handle = gzip.GzipFile(fileobj=raw) if raw.peek(2)[:2] == b"\x1f\x8b" else raw
            for _, line in zip(range(1000), handle, strict=False):
                text = line.decode("utf-8", "replace").strip()
                if text.startswith("HloModule"):
                    module = parse_module(text + "\n", replica_count, num_partitions)
                    return module.replica_count, module.num_partitions
    except (OSError, EOFError, MeshtopoError):
        pass
    return replica_count, num_partitions


def _assignment_without_collectives(
    spec: str, replica_count: int | None, num_partitions: int | None
) -> DeviceAssignment:
    """The placement shown for a dump with no collectives, whose header counts the reader does
    not report: the overrides when given, else a table's own shape, else 1 x 1."""
    if replica_count is None and num_partitions is None and spec not in ("default", "row-major"):
        rows = [int_list(row, "--device-assignment") for row in spec.split(";")]
        return device_assignment(spec, len(rows), len(rows[0]))
    return device_assignment(spec, replica_count or 1, num_partitions or 1)


def _module_counts(collective: Collective) -> tuple[int, int]:
    """The module's replica and partition counts (header values or overrides) as the reader
    resolved them; the streaming reader keeps them on the collectives' shared context."""
    context = collective._context
    return int(context.replica_count), int(context.num_partitions)


def _bytes(collective: Collective) -> int | None:
    try:
        return collective.bytes
    except MeshtopoError:
        return None


def _pattern_of(
    collective: Collective,
    assignment: DeviceAssignment,
    patterns: dict[tuple[object, ...], Pattern],
) -> Pattern:
    try:
        mode: str | None = str(collective.mode)
        mode_error = None
    except MeshtopoError as error:
        mode, mode_error = None, str(error)
    pairs = collective.source_target_pairs
    if collective.replica_groups is None and pairs is not None:
        key: tuple[object, ...] = (mode, "pairs", tuple(pairs))
    else:
        key = (mode, "groups", collective.groups_text)
    if mode is None:
        key = (collective.opcode, *key)
    found = patterns.get(key)
    if found is not None:
        return found
    pattern = _resolve(collective, assignment, len(patterns), mode, mode_error)
    patterns[key] = pattern
    return pattern


def _resolve(
    collective: Collective,
    assignment: DeviceAssignment,
    index: int,
    mode: str | None,
    error: str | None,
) -> Pattern:
    pairs = collective.source_target_pairs
    is_pairs = collective.replica_groups is None
    if is_pairs:
        written = None if pairs is None else "{" + ",".join(f"{{{a},{b}}}" for a, b in pairs) + "}"
    else:
        written = collective.groups_text
    groups: list[list[int]] = []
    if error is None:
        try:
            groups = collective.device_groups(assignment)
        except MeshtopoError as failure:
            error = str(failure)
    sizes = {len(g) for g in groups}
    ids_differ, ascending = _order_facts(groups, assignment, is_pairs)
    if error is not None:
        ascending = None
    return Pattern(
        index,
        mode,
        written,
        is_pairs,
        groups,
        len(groups),
        sizes.pop() if len(sizes) == 1 else None,
        ids_differ,
        ascending,
        error,
    )


def _order_facts(
    groups: list[list[int]], assignment: DeviceAssignment, is_pairs: bool
) -> tuple[bool, bool | None]:
    """(some flattened id != device id, every group ascending) for the resolved groups."""
    if not groups:
        return False, None if is_pairs else True
    flat = np.fromiter((d for g in groups for d in g), dtype=np.int64)
    replica, partition = assignment.logical_ids(flat)
    ids_differ = bool((replica * assignment.computation_count + partition != flat).any())
    if is_pairs:
        return ids_differ, None
    sizes = np.fromiter((len(g) for g in groups), dtype=np.int64, count=len(groups))
    steps = np.diff(flat) > 0
    # A step crosses into the next group at each group start: ignore those.
    starts = np.cumsum(sizes)[:-1] - 1
    steps[starts[starts < steps.size]] = True
    return ids_differ, bool(steps.all())
