"""``POST /api/groups``: one dialed collective, multiplied out against one grid by the library.

The groups come from the library's own functions (``CollectiveDeviceList.parse``,
``Mesh.replica_groups``, ``group_mode``/``group_mode_for_opcode``,
``participating_device_groups``); this module only reshapes their answers for the page:
per-cell arrays, the compact form, the expansion steps and the four modes side by side;
``_tiers`` places them on a ``cluster`` when the request names one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import meshtopo as mt

from . import _findings, _tiers
from ._grid import Grid, build_grid
from ._schema import OPCODES, Fields, RequestError

DeviceList = mt.CollectiveDeviceList
Mode = mt.CollectiveOpGroupMode

GROUP_FIELDS = (
    "replicas",
    "partitions",
    "mesh",
    "device_assignment",
    "opcode",
    "channel_id",
    "use_global_device_ids",
    "groups",
    "over",
    "include",
    "shapes",
    "cluster",
)
SECTIONS = ("cells", "steps", "modes", "findings")
PERMUTE_OPCODES = ("collective-permute", "collective-permute-start")
# Ops that hold use_global_device_ids as a plain bool (absent reads as false); the others
# ignore the field (XLA's per-instruction rule).
PLAIN_BOOL_OPCODES = (
    "all-reduce",
    "all-reduce-start",
    "all-gather",
    "all-gather-start",
    "reduce-scatter",
)

# The loop XLA's GetParticipatingDevicesGroups runs inside each written group, per mode:
# (what the inner loop walks, a sentence for the page).
_LOOPS = {
    "kCrossReplica": (
        "partition",
        "ids are replica ids; each written group is read once per partition p, giving "
        "[DA[r][p] for r in group]",
    ),
    "kCrossPartition": (
        "replica",
        "ids are partition ids; each written group is read once per replica r, giving "
        "[DA[r][p] for p in group]",
    ),
    "kCrossReplicaAndPartition": (
        "none",
        "ids are replica ids; each written group becomes one device group sweeping every "
        "partition: [DA[r][q] for r in group for q in 0..P-1]",
    ),
    "kFlattenedID": (
        "none",
        "ids are flattened ids f = r*P + p; each written group becomes one device group "
        "[DA[f div P][f mod P] for f in group]",
    ),
}
# The field values that select each mode (channel_id present, use_global_device_ids).
_MODE_FIELDS = {
    "kCrossReplica": (False, None),
    "kCrossPartition": (True, None),
    "kCrossReplicaAndPartition": (True, False),
    "kFlattenedID": (True, True),
}


@dataclass(frozen=True)
class Dial:
    """One request read and multiplied out: what every section of the answer is drawn from."""

    grid: Grid
    opcode: str | None
    has_channel: bool
    global_ids: bool | None
    written: DeviceList
    pairs: list[tuple[int, int]] | None  # set when a permute reads its groups as pairs
    mode: Mode | None
    mode_json: dict[str, Any]
    shapes: _findings.Shapes | None
    groups: DeviceList | None  # the device groups, None when they cannot be formed
    error: str | None  # why they cannot be formed
    limit: int

    @property
    def check_opcode(self) -> str:
        """The opcode the dial is written as: the given one, else an op whose rule gives the
        same mode (all-to-all for kCrossPartition, which an all-reduce cannot express)."""
        if self.opcode:
            return self.opcode
        return "all-to-all" if self.mode is Mode.CROSS_PARTITION else "all-reduce"


def read_dial(body: dict[str, Any], limit: int) -> Dial:
    """Check a ``POST /api/groups`` body and multiply its groups out; 4xx ``RequestError``
    (or the library's error) for malformed input."""
    fields = Fields(body)
    fields.check_known(GROUP_FIELDS)
    grid = build_grid(fields, limit)
    opcode = fields.raw("opcode")
    if opcode is not None and opcode not in OPCODES:
        raise RequestError(
            400, f"field 'opcode' must be null or one of {', '.join(OPCODES)}, got {opcode!r}"
        )
    # A named mesh is dialed as JAX writes its collectives: a channel and global device ids,
    # unless the request says otherwise (null: the flag absent).
    jax = grid.mesh is not None
    has_channel = fields.boolean("channel_id", jax)
    global_ids = (
        fields.optional_boolean("use_global_device_ids")
        if "use_global_device_ids" in body or not jax
        else True
    )
    written = _written_groups(fields, grid, limit)
    pairs = _pairs(written) if opcode in PERMUTE_OPCODES else None
    mode, mode_json = _mode(opcode, has_channel, global_ids)
    shapes = _findings.read_shapes(fields.object("shapes"))
    groups, error = (None, None)
    if mode is not None:
        groups, error = _expand(written, mode, grid, limit, pairs)
    if error is not None:
        mode_json["expansion_error"] = error
    return Dial(
        grid,
        opcode,
        has_channel,
        global_ids,
        written,
        pairs,
        mode,
        mode_json,
        shapes,
        groups,
        error,
        limit,
    )


def groups_response(body: dict[str, Any], limit: int) -> dict[str, Any]:
    """Answer one ``POST /api/groups`` body (see docs/explorer-api.md for the schema)."""
    include = _include(Fields(body))
    dial = read_dial(body, limit)
    grid = dial.grid
    placed = _tiers.read_cluster(Fields(body), grid, limit)
    module = _findings.module_text(
        grid.replicas,
        grid.partitions,
        dial.check_opcode,
        dial.has_channel,
        dial.global_ids,
        dial.written,
        dial.shapes,
    )
    result: dict[str, Any] = {
        "grid": grid.to_json(),
        "mesh": grid.mesh_json(),
        "device_assignment": grid.assignment_json(),
        "mode": dial.mode_json,
        "written_groups": _written_json(dial.written),
        "pairs": dial.pairs is not None,
        "hlo_instruction": _findings.instruction_text(module),
        "shapes": "given" if dial.shapes is not None else "fitted",
        "device_groups": None if dial.groups is None else _groups_json(dial.groups),
    }
    if "cells" in include:
        result["cells"] = _cells(grid, dial.groups)
    if placed is not None:
        spec, cluster = placed
        result["cluster"] = _tiers.cluster_json(spec, cluster)
        result["tiers"] = _tiers.group_tiers_json(cluster, dial.groups)
        if "cells" in include:
            result["cells"].update(_tiers.cell_places(cluster, grid))
    if "steps" in include:
        result["steps"] = _steps(dial)
    if "modes" in include:
        result["modes"] = [_mode_column(dial, mode) for mode in Mode]
    if "findings" in include:
        result["findings"] = _dial_findings(dial, module)
    return result


def _dial_findings(dial: Dial, module: str) -> list[dict[str, Any]]:
    mode_error = dial.mode_json.get("error")
    grid = dial.grid
    if dial.pairs is not None:
        return _findings.pair_findings(
            dial.pairs, grid.replicas, grid.partitions, dial.has_channel, mode_error, dial.error
        )
    return _findings.findings(module, mode_error, dial.error)


def _include(fields: Fields) -> tuple[str, ...]:
    raw = fields.raw("include")
    if raw is None:
        return SECTIONS
    if not isinstance(raw, list) or any(item not in SECTIONS for item in raw):
        raise RequestError(
            400, f"field 'include' must be an array drawn from {', '.join(map(repr, SECTIONS))}"
        )
    return tuple(raw)


def _written_groups(fields: Fields, grid: Grid, limit: int) -> DeviceList:
    """The written groups as a ``CollectiveDeviceList``, from ``groups`` text or ``over`` axes."""
    if fields.has("over"):
        if fields.has("groups"):
            raise RequestError(400, "give either 'groups' (text) or 'over' (mesh axes), not both")
        if grid.mesh is None:
            raise RequestError(400, "field 'over' needs a 'mesh' to pick axes from")
        over = fields.raw("over")
        axes = [over] if isinstance(over, str) else over
        names = {name for name, _ in grid.mesh_axes}
        if not isinstance(axes, list) or not all(isinstance(a, str) for a in axes):
            raise RequestError(400, "field 'over' must be an axis name or an array of axis names")
        for axis in axes:
            base = axis.split(":", 1)[0].strip().strip("'\"")  # a sub-axis 'x:(2)4' names x
            if base not in names:
                raise RequestError(
                    400,
                    f"field 'over' names axis {axis!r}, which the mesh does not have; "
                    f"its axes are {', '.join(map(repr, sorted(names)))}",
                )
        # Written ids are mesh positions (flattened ids); the device assignment places them.
        return mt.Mesh(dict(grid.mesh_axes)).replica_groups(over=axes)
    text = fields.string("groups", default="{}", max_length=1 << 20)
    written = mt.CollectiveDeviceList.parse(text if text.strip() else "{}")
    if written.encoding == "explicit":
        count = int(written.group_sizes.sum())
    else:
        count = written.num_replica_groups * written.num_devices_per_group
    if count > limit:
        raise RequestError(
            413,
            f"the replica groups {_short(text)} hold {count} ids, more than the explorer's "
            f"device limit of {limit}",
            kind="LimitError",
        )
    return written


def _short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _mode(
    opcode: str | None, has_channel: bool, global_ids: bool | None
) -> tuple[Mode | None, dict[str, Any]]:
    """The mode (or None) and its JSON: by the two fields, and by the opcode's rule if given."""
    out: dict[str, Any] = {
        "name": None,
        "by": "opcode" if opcode else "fields",
        "fields_mode": None,
        "error": None,
    }
    try:
        out["fields_mode"] = str(mt.group_mode(has_channel, global_ids))
    except mt.MeshtopoError as error:
        out["fields_mode_error"] = str(error)
    try:
        if opcode:
            mode = mt.group_mode_for_opcode(opcode, has_channel, global_ids)
        else:
            mode = mt.group_mode(has_channel, global_ids)
    except mt.MeshtopoError as error:
        out["error"] = str(error)
        return None, out
    out["name"] = str(mode)
    out["loop"], out["explanation"] = _LOOPS[str(mode)]
    if opcode:
        out["flag_reading"] = "plain_bool" if opcode in PLAIN_BOOL_OPCODES else "ignored"
    return mode, out


def _written_json(written: DeviceList) -> dict[str, Any]:
    compact = written.compact()
    return {
        "text": str(written),
        "encoding": written.encoding,
        "compact": str(compact) if compact.iota is not None else None,
        "groups": written.replica_groups,
        "count": written.num_replica_groups,
        "ids": int(written.group_sizes.sum()),
    }


def _pairs(written: DeviceList) -> list[tuple[int, int]]:
    """The groups text of a permute read as its source-target pairs (each group two ids)."""
    groups = written.replica_groups
    for index, group in enumerate(groups):
        if len(group) != 2:
            raise RequestError(
                400,
                "collective-permute takes source-target pairs, written as groups of two ids "
                f"({{{{0,1}},{{1,2}}}}); group {index} {{{','.join(map(str, group))}}} has "
                f"{len(group)} ids",
            )
    return [(group[0], group[1]) for group in groups]


def _expand(
    written: DeviceList,
    mode: Mode,
    grid: Grid,
    limit: int,
    pairs: list[tuple[int, int]] | None = None,
) -> tuple[DeviceList | None, str | None]:
    """XLA's device groups for ``written`` under ``mode`` as a ``CollectiveDeviceList``, or
    None and the library's error message. For a permute, one two-member group per device
    pair, in the library's order (``participating_device_pairs``).

    Groups that list ids more than once can multiply out to far more ids than the grid has
    devices; past ``limit`` ids the expansion is not attempted and the message says why.
    """
    ids = 2 * len(pairs) if pairs is not None else int(written.group_sizes.sum())
    if written.is_empty and pairs is None:
        ids = _empty_group_size(mode, grid)
    copies = mt.expansion_factor(mode, grid.replicas, grid.partitions)
    if ids * copies > limit:
        return None, (
            f"the device groups would list {ids * copies} device ids ({ids} written ids x "
            f"{copies}), more than the explorer's device limit of {limit}; each device can "
            "appear at most once in valid groups"
        )
    try:
        if pairs is not None:
            found = mt.participating_device_pairs(pairs, mode=mode, device_assignment=grid.assignment)
            array = np.array(found, dtype=np.int64).reshape(-1, 2)
            return mt.CollectiveDeviceList(array), None
        if written.is_uniform:
            array = mt.participating_device_groups_array(written, mode=mode, device_assignment=grid.assignment)
            return mt.CollectiveDeviceList(array), None
        groups = mt.participating_device_groups(written, mode=mode, device_assignment=grid.assignment)
    except mt.MeshtopoError as error:
        return None, str(error)
    return mt.CollectiveDeviceList(groups), None


def _empty_group_size(mode: Mode, grid: Grid) -> int:
    """The size of the one group XLA reads ``{}`` as: every partition in kCrossPartition, every
    replica otherwise (kFlattenedID refuses ``{}``; the library says so when expanding)."""
    return grid.partitions if mode is Mode.CROSS_PARTITION else grid.replicas


def _groups_json(groups: DeviceList) -> dict[str, Any]:
    listed = groups.replica_groups
    compact = None
    if listed and groups.is_uniform and groups.num_devices_per_group > 0:
        found = groups.compact()
        compact = str(found) if found.iota is not None else None
    return {"groups": listed, "count": len(listed), "compact": compact}


def _cell_groups(
    table: np.ndarray, groups: DeviceList | None
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """For each cell (flattened-id order): its device group (-1: none), its rank in that group,
    and the cells whose device is listed more than once."""
    flat_table = table.ravel()
    if groups is None or groups.is_empty:
        missing = np.full(flat_table.size, -1, dtype=np.int64)
        return missing, missing.copy(), []
    group_of, rank_of = groups.group_of(flat_table)
    members = groups.flattened_replica_groups()
    values, counts = np.unique(members, return_counts=True)
    repeated = values[counts > 1]
    overlaps = np.flatnonzero(np.isin(flat_table, repeated)).tolist() if repeated.size else []
    return group_of, rank_of, overlaps


def _cells(grid: Grid, groups: DeviceList | None) -> dict[str, Any]:
    table = grid.table
    flat_table = table.ravel()
    group_of, rank_of, overlaps = _cell_groups(table, groups)
    mismatched = np.flatnonzero(flat_table != np.arange(flat_table.size))
    positions = grid.mesh_positions()
    flat_ids = np.arange(flat_table.size)
    return {
        "mesh_position": None if positions is None else positions.tolist(),
        "mesh_coordinates": _mesh_coordinates(grid, positions),
        "replica": (flat_ids // grid.partitions).tolist(),
        "partition": (flat_ids % grid.partitions).tolist(),
        "device_id": flat_table.tolist(),
        "group": group_of.tolist(),
        "rank": rank_of.tolist(),
        "overlaps": overlaps,
        "mismatched": mismatched.tolist(),
    }


def _mesh_coordinates(grid: Grid, positions: np.ndarray | None) -> list[list[int]] | None:
    """Per mesh axis (major first), each cell's index along it; -1 where the cell's device is
    not in the mesh; None without a mesh."""
    if positions is None:
        return None
    sizes = [size for _, size in grid.mesh_axes]
    inside = positions >= 0
    coordinates = np.unravel_index(np.where(inside, positions, 0), sizes)
    return [np.where(inside, axis, -1).tolist() for axis in coordinates]


def _steps(dial: Dial) -> dict[str, Any] | None:
    """The multiplying-out loop. With ``outer`` = "written", step i read written group
    i // per_group at loop index i % per_group (a partition for kCrossReplica, a replica for
    kCrossPartition); with ``outer`` = "loop" (permute pairs), loop index i // len(written)
    and written pair i % len(written)."""
    mode, grid, groups = dial.mode, dial.grid, dial.groups
    if mode is None or groups is None:
        return None
    if dial.pairs is not None:
        loop = "partition" if mode is Mode.CROSS_REPLICA else "replica"
        per = grid.partitions if loop == "partition" else grid.replicas
        return {
            "loop": loop,
            "outer": "loop",
            "per_group": per,
            "count": groups.num_replica_groups,
            "written_groups": [list(pair) for pair in dial.pairs],
            "substituted_empty": False,
        }
    name = str(mode)
    loop = _LOOPS[name][0]
    listed = dial.written.replica_groups
    substituted = not listed
    if substituted:
        listed = [list(range(_empty_group_size(mode, grid)))]
    per_group = {"partition": grid.partitions, "replica": grid.replicas}.get(loop, 1)
    if groups.num_replica_groups != len(listed) * per_group:
        return None
    return {
        "loop": loop,
        "outer": "written",
        "per_group": per_group,
        "count": groups.num_replica_groups,
        "written_groups": listed,
        "substituted_empty": substituted,
    }


def _mode_column(dial: Dial, mode: Mode) -> dict[str, Any]:
    """The same written groups under ``mode``: its selecting fields, its groups per cell."""
    channel, global_ids = _MODE_FIELDS[str(mode)]
    groups, error = _expand(dial.written, mode, dial.grid, dial.limit, dial.pairs)
    column: dict[str, Any] = {
        "name": str(mode),
        "channel_id": channel,
        "use_global_device_ids": global_ids,
        "error": error,
        "count": None if groups is None else groups.num_replica_groups,
        "sizes": None if groups is None else np.unique(groups.group_sizes).tolist(),
        "group": _cell_groups(dial.grid.table, groups)[0].tolist(),
    }
    return column
