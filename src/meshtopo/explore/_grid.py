"""The device grid a request dials: replicas x partitions, an optional named mesh, a placement.

``build_grid`` turns the ``replicas``/``partitions``/``mesh``/``device_assignment`` fields of a
request into a ``Grid`` (the library's ``Mesh`` and ``DeviceAssignment`` plus the display
layout), refusing grids above the explorer's device limit before anything is allocated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

import meshtopo as mt

from ._schema import Fields, RequestError, int_list, int_table


@dataclass(frozen=True)
class Grid:
    """A dialed grid: ``replicas`` x ``partitions`` devices placed by ``assignment``."""

    replicas: int
    partitions: int
    assignment: mt.DeviceAssignment
    assignment_kind: str
    mesh: mt.Mesh | None
    mesh_axes: tuple[tuple[str, int], ...]
    mesh_order: str
    mesh_devices: np.ndarray | None

    @property
    def devices(self) -> int:
        """The number of devices, replicas * partitions."""
        return self.replicas * self.partitions

    @property
    def table(self) -> np.ndarray:
        """The device assignment as an int64 array ``[replica][partition]``."""
        return np.asarray(self.assignment.array, dtype=np.int64)

    def layout(self) -> dict[str, Any]:
        """Rows and columns for drawing the cells in flattened-id order (row-major), for
        clients that draw one view; the page places cells itself (by mesh position, flattened
        id and device id).

        A mesh is drawn in its own shape (last axis across); a grid with one replica or one
        partition is wrapped into a near-square block; otherwise replicas go down, partitions
        across.
        """
        n = self.devices
        if self.mesh is not None and len(self.mesh_axes) > 1:
            cols = self.mesh_axes[-1][1]
            return {"rows": n // cols, "cols": cols, "by": "mesh"}
        if min(self.replicas, self.partitions) > 1 or n <= 32:
            return {"rows": self.replicas, "cols": self.partitions, "by": "grid"}
        cols = _near_square_columns(n)
        return {"rows": math.ceil(n / cols), "cols": cols, "by": "wrapped"}

    def to_json(self) -> dict[str, Any]:
        """The ``grid`` part of a response."""
        return {
            "replicas": self.replicas,
            "partitions": self.partitions,
            "devices": self.devices,
            "layout": self.layout(),
        }

    def mesh_json(self) -> dict[str, Any] | None:
        """The ``mesh`` part of a response, or None when no mesh was dialed."""
        if self.mesh is None or self.mesh_devices is None:
            return None
        return {
            "axes": [{"name": name, "size": size} for name, size in self.mesh_axes],
            "device_order": self.mesh_order,
            "devices": self.mesh_devices.ravel().tolist(),
        }

    def mesh_positions(self) -> np.ndarray | None:
        """For each cell (flattened-id order), the row-major mesh position of its device, -1
        where the device is not in the mesh; None without a mesh. With the mesh's own device
        assignment (``"mesh"``) position f holds cell f."""
        if self.mesh_devices is None:
            return None
        order = self.mesh_devices.ravel()
        inverse = np.full(order.size, -1, dtype=np.int64)
        inverse[order] = np.arange(order.size, dtype=np.int64)
        flat = self.table.ravel()
        inside = (flat >= 0) & (flat < order.size)
        return np.where(inside, inverse[np.clip(flat, 0, order.size - 1)], -1)

    def assignment_json(self) -> dict[str, Any]:
        """The ``device_assignment`` part of a response: its kind, its table and ``shuffle``,
        the sentence saying why a flattened id is another device (None where none is)."""
        return {"kind": self.assignment_kind, "table": self.table.tolist(),
                "shuffle": self.shuffle_sentence()}

    def shuffle_sentence(self) -> str | None:
        """One sentence naming the first cell whose flattened id ``r·P + p`` is not its device
        id, and what put the device there; None when every flattened id is its device id.

        >>> grid = Grid(1, 2, mt.DeviceAssignment([[1, 0]]), "custom", None, (), "default", None)
        >>> grid.shuffle_sentence()
        'replica 0, partition 0 has flattened id 0 (r·P + p) but is device 1, because the device table puts it there'
        """
        flat = self.table.ravel()
        moved = np.flatnonzero(flat != np.arange(flat.size))
        if moved.size == 0:
            return None
        first = int(moved[0])
        replica, partition = divmod(first, self.partitions)
        why = {
            "default": "XLA's default placement DA[r][p] = p·R + r puts it there",
            "row_major": "the row-major table puts it there",
            "mesh": "the mesh's device order puts it there (JAX runs flattened id f on the "
                    "device at mesh position f)",
        }.get(self.assignment_kind, "the device table puts it there")
        return (f"replica {replica}, partition {partition} has flattened id {first} (r·P + p) "
                f"but is device {int(flat[first])}, because {why}")


def _near_square_columns(n: int) -> int:
    """The divisor of ``n`` nearest above sqrt(n), or ceil(sqrt(n)) when that is too wide."""
    root = math.isqrt(n)
    for cols in range(max(root, 1), min(n, 2 * root + 1) + 1):
        if n % cols == 0:
            return cols
    return math.ceil(math.sqrt(n))


def _check_devices(count: int, what: str, limit: int) -> None:
    if count > limit:
        raise RequestError(
            413,
            f"{what} has {count} devices, more than the explorer's device limit of {limit}; "
            "dial a smaller grid or restart the explorer with --device-limit N",
            kind="LimitError",
        )


def build_grid(fields: Fields, limit: int) -> Grid:
    """The grid described by a request's ``replicas``, ``partitions``, ``mesh`` and
    ``device_assignment`` fields; 4xx ``RequestError`` for anything malformed or too large."""
    mesh_fields = fields.object("mesh")
    mesh_axes: tuple[tuple[str, int], ...] = ()
    if mesh_fields is not None:
        mesh_axes = _mesh_axes(mesh_fields, limit)
        size = math.prod(size for _, size in mesh_axes)
        _check_devices(size, "the mesh " + _mesh_text(mesh_axes), limit)
        replicas = fields.integer("replicas", default=1)
        if size % replicas:
            raise RequestError(
                400,
                f"the mesh {_mesh_text(mesh_axes)} has {size} devices, which {replicas} replicas "
                "do not divide; pick a replica count that divides the mesh size",
            )
        partitions = fields.integer("partitions", default=size // replicas)
        if replicas * partitions != size:
            raise RequestError(
                400,
                f"replicas x partitions = {replicas} x {partitions} = {replicas * partitions}, "
                f"but the mesh {_mesh_text(mesh_axes)} has {size} devices; they must be equal",
            )
    else:
        replicas = fields.integer("replicas", default=1)
        partitions = fields.integer("partitions", default=1)
    _check_devices(replicas * partitions, f"the grid {replicas} x {partitions}", limit)
    mesh, order, mesh_devices = None, "default", None
    if mesh_fields is not None:
        order, mesh_devices = _mesh_devices(mesh_fields, mesh_axes)
        mesh = mt.Mesh(dict(mesh_axes), devices=mesh_devices)
    kind, assignment = _assignment(fields, replicas, partitions, limit, mesh_devices)
    return Grid(replicas, partitions, assignment, kind, mesh, mesh_axes, order, mesh_devices)


def _mesh_text(axes: tuple[tuple[str, int], ...]) -> str:
    return "mesh[" + ",".join(f"'{name}'={size}" for name, size in axes) + "]"


def _mesh_axes(mesh: Fields, limit: int) -> tuple[tuple[str, int], ...]:
    mesh.check_known(("axes", "device_order"))
    raw = mesh.raw("axes")
    if not isinstance(raw, list) or not raw:
        raise RequestError(400, "field 'mesh.axes' must be a non-empty array of {name, size}")
    if len(raw) > 16:
        raise RequestError(400, f"field 'mesh.axes' has {len(raw)} axes, more than 16")
    axes: list[tuple[str, int]] = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise RequestError(400, f"field 'mesh.axes[{index}]' must be an object {{name, size}}")
        axis = Fields(item, f"mesh.axes[{index}].")
        axis.check_known(("name", "size"))
        name = axis.string("name", max_length=64)
        if not name:
            raise RequestError(400, f"field 'mesh.axes[{index}].name' must not be empty")
        size = axis.integer("size")
        _check_devices(size, f"mesh axis {name!r}", limit)
        axes.append((name, size))
    names = [name for name, _ in axes]
    for name in names:
        if names.count(name) > 1:
            raise RequestError(400, f"mesh axis name {name!r} appears twice; names must differ")
    return tuple(axes)


def _mesh_devices(mesh: Fields, axes: tuple[tuple[str, int], ...]) -> tuple[str, np.ndarray]:
    shape = tuple(size for _, size in axes)
    n = math.prod(shape)
    raw = mesh.raw("device_order")
    if raw is None or raw == "default":
        return "default", np.arange(n, dtype=np.int64).reshape(shape)
    if raw == "reversed":
        return "reversed", np.arange(n - 1, -1, -1, dtype=np.int64).reshape(shape)
    if isinstance(raw, str):
        raise RequestError(
            400,
            f"field 'mesh.device_order' must be 'default', 'reversed' or an array, got {raw!r}",
        )
    order = np.asarray(int_list(raw, "mesh.device_order", n + 1), dtype=np.int64)
    rule = f"it must be a permutation of 0..{n - 1} ({n} distinct ids, one per mesh position)"
    if order.size != n:
        raise RequestError(
            400, f"field 'mesh.device_order' has {order.size} ids for {n} mesh positions; {rule}"
        )
    outside = np.flatnonzero((order < 0) | (order >= n))
    if outside.size:
        raise RequestError(
            400,
            f"field 'mesh.device_order' entry {outside[0]} is {order[outside[0]]}, outside "
            f"0..{n - 1}; {rule}",
        )
    counts = np.bincount(order, minlength=n)
    if counts.max() > 1:
        twice = int(np.argmax(counts > 1))
        where = np.flatnonzero(order == twice)[:2].tolist()
        raise RequestError(
            400,
            f"field 'mesh.device_order' lists id {twice} twice (entries {where[0]} and "
            f"{where[1]}); {rule}",
        )
    return "custom", order.reshape(shape)


def _assignment(
    fields: Fields, replicas: int, partitions: int, limit: int, mesh_devices: np.ndarray | None
) -> tuple[str, mt.DeviceAssignment]:
    """The device assignment a request names. With a mesh it defaults to the mesh's device
    order read row-major into ``[replica][partition]`` (``"mesh"``: flattened id f runs on the
    device at mesh position f, as JAX places a mesh's devices)."""
    raw = fields.raw("device_assignment")
    if raw == "mesh" or (raw is None and mesh_devices is not None):
        if mesh_devices is None:
            raise RequestError(400, "field 'device_assignment' is 'mesh' but no 'mesh' is given")
        return "mesh", mt.DeviceAssignment(mesh_devices.reshape(replicas, partitions))
    if raw is None or raw == "default":
        return "default", mt.DeviceAssignment.default(
            replica_count=replicas, computation_count=partitions
        )
    if raw == "row_major":
        table = np.arange(replicas * partitions, dtype=np.int64).reshape(replicas, partitions)
        return "row_major", mt.DeviceAssignment(table)
    if isinstance(raw, str):
        raise RequestError(
            400,
            "field 'device_assignment' must be 'default', 'row_major', 'mesh' or a table "
            f"[replica][partition] of device ids, got {raw!r}",
        )
    rows = int_table(raw, "device_assignment", limit)
    if len(rows) != replicas or any(len(row) != partitions for row in rows):
        shape = f"{len(rows)} rows" if rows else "no rows"
        raise RequestError(
            400,
            f"field 'device_assignment' must be a {replicas} x {partitions} table "
            f"(one row per replica, one device id per partition), got {shape}",
        )
    return "custom", mt.DeviceAssignment(rows)
