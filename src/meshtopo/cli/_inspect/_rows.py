"""The rows of ``meshtopo inspect``: one per collective, device groups shared per pattern.

Collectives are read with ``mt.hlo.iter_collectives`` (block by block, so a big dump costs
memory in proportion to its collectives, not its size). What a collective resolves to depends
only on its group mode and its groups (or pairs) as written, so the resolution is computed once
per distinct ``(mode, groups)`` and shared: a ``Pattern``. A ``Row`` is the per-instruction part
(name, opcode, line, bytes, op_name) and a reference to its pattern.

Mesh axes: when a mesh is known (given, or the mesh of the first mesh-axes replica group list
in the module), each pattern with replica groups names the axes it spans: without a given mesh
the axes written in a mesh-axes list, else ``Mesh.axes_for`` of the groups as written on the
mesh (None when no set of whole axes gives them). A given mesh thus names the axes in the
user's words even where the module writes its own (JAX writes ``axis_0``, ``axis_1``, ...).
A mesh given with its device ids (``--mesh-devices``) holds devices, not the ids groups are
written in: its axes are found from each pattern's device groups (after the placement), as
``meshtopo groups --devices ... --find`` finds them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import IO

import numpy as np

from ..._errors import InvalidArgumentError, MeshtopoError
from ...groups._device_list import CollectiveDeviceList, Mesh
from ...groups._mesh_grid import SubAxis
from ...groups._placement import DeviceAssignment
from ...hlo import (
    Collective,
    CollectiveStream,
    describe_placement,
    iter_collectives,
    printed_groups,
    replica_groups_problem,
)
from .._options import device_assignment
from .._render import plural


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
    device_list: CollectiveDeviceList | None = None


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
    op_name: str | None = None
    underlying_opcode: str = ""


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
    mesh: Mesh | None = None
    mesh_source: str | None = None
    axes: dict[int, str | None] | None = None
    assignment_source: str = "given"
    assignment_note: str = ""

    def mesh_axes(self, pattern: Pattern) -> str | None:
        """The mesh axes the pattern's groups span (``data,model``), None when unknown."""
        return None if self.axes is None else self.axes.get(pattern.index)

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
    assignment_spec: str = "auto",
    replica_count: int | None = None,
    num_partitions: int | None = None,
    progress: bool | None = None,
    block_size: int | None = None,
    mesh: Mesh | None = None,
    mesh_of_devices: bool = False,
) -> Inspection:
    """Read every collective of an HLO dump (path, ``'-'`` for stdin, or open file) and resolve
    its device groups under the given placement (an ``--device-assignment`` spec; ``auto``:
    the dump's own table when XLA wrote one beside the file, else XLA's default); name the
    mesh axes of each pattern under ``mesh`` (else the module's own mesh, if it writes one).
    ``mesh_of_devices``: ``mesh`` holds device ids (``--mesh-devices``), so the axes are those
    of each pattern's device groups rather than of its groups as written.

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
            counts = (collective.replica_count, collective.num_partitions)
            assignment = _placement(assignment_spec, stream, counts)
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
                _op_name(collective),
                collective.underlying_opcode,
            )
        )
    if assignment is None:
        # No collectives: the stream has still read the header (or raised).
        counts = (stream.replica_count or 1, stream.num_partitions or 1)
        assignment = _placement(assignment_spec, stream, counts)
    found = list(patterns.values())
    if mesh is not None and mesh.size not in (counts[0], counts[1], counts[0] * counts[1]):
        raise InvalidArgumentError(
            f"--mesh {mesh} has {plural(mesh.size, 'device')}, but {name} has {counts[0]} x {counts[1]} "
            "(replicas x partitions); a mesh must span the replicas, the partitions or both")
    mesh_source = "--mesh" if mesh is not None else None
    if mesh is None:
        mesh = next((p.device_list.mesh_axes.mesh for p in found if p.device_list is not None
                     and p.device_list.mesh_axes is not None), None)
        mesh_source = None if mesh is None else "module"
    return Inspection(
        "<stdin>" if name == "-" else name,
        counts[0],
        counts[1],
        assignment,
        assignment_spec,
        rows,
        found,
        mesh,
        mesh_source,
        None if mesh is None else {
            p.index: _axes(p, mesh, mesh_source == "module", mesh_of_devices) for p in found},
        stream.device_assignment_source if assignment_spec == "auto" else "given",
        (describe_placement(stream.device_assignment_source, stream.compile_options)
         if assignment_spec == "auto" else f"device assignment {assignment_spec}"),
    )


def _placement(spec: str, stream: CollectiveStream, counts: tuple[int, int]) -> DeviceAssignment:
    """``--device-assignment``: ``auto`` takes the stream's (the dump's or XLA's default)."""
    if spec == "auto" and stream.device_assignment is not None:
        return stream.device_assignment
    return device_assignment("default" if spec == "auto" else spec, *counts)


def _op_name(collective: Collective) -> str | None:
    try:
        return collective.metadata.get("op_name")
    except MeshtopoError:
        return None


def _axes(pattern: Pattern, mesh: Mesh, use_written: bool, of_devices: bool) -> str | None:
    """The mesh axes of one pattern: as written in a mesh-axes list (``use_written``: the mesh
    is the module's), else found by ``axes_for`` on ``mesh`` (so ``--mesh`` names them): of
    the device groups when the mesh holds device ids (``of_devices``), else of the groups as
    written."""
    groups = pattern.device_list
    if groups is None or pattern.is_pairs:
        return None
    written = groups.mesh_axes
    if written is not None and use_written:
        return ",".join(
            f"{a.name}:({a.pre_size}){a.size}" if isinstance(a, SubAxis) else str(a)
            for a in written.axes)
    if of_devices and pattern.error is not None:
        return None
    try:
        axes = mesh.axes_for(pattern.device_groups if of_devices else groups)
    except MeshtopoError:
        return None
    return None if axes is None else ",".join(axes) or "(none)"


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
    elif collective.replica_groups is None:  # an error that names the collective: its own
        key = (mode, "unread", collective.name)
    else:
        key = (mode, "groups", _written(collective))
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
        written = _written(collective)
    groups: list[list[int]] = []
    if error is None:
        try:
            groups = collective.device_groups(assignment)
        except MeshtopoError as failure:
            error = str(failure)
    if error is None and not is_pairs:
        error = _empty_group_problem(collective)
        if error is not None:
            groups = []
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
        None if is_pairs else collective.replica_groups,
    )


def _empty_group_problem(collective: Collective) -> str | None:
    """XLA's refusal of written groups with an empty group among them (its devices would
    form no clique; XLA's verifier rejects the module), or None."""
    written = collective.replica_groups
    if written is None or written.encoding != "explicit" or written.is_empty:
        return None
    if written.group_sizes.min() > 0:
        return None
    return replica_groups_problem(written, collective.mode, collective.replica_count,
                                  collective.num_partitions)


def _written(collective: Collective) -> str | None:
    """The collective's ``replica_groups`` on one line as XLA prints them (no comments)."""
    text = collective.groups_text
    return None if text is None else printed_groups(text)


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
    steps[starts[(starts >= 0) & (starts < steps.size)]] = True
    return ids_differ, bool(steps.all())
