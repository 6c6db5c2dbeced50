"""Named device meshes (``Mesh``) and the one group algebra every framework shares.

A collective over some mesh axes groups the devices that agree on every other coordinate: take
the mesh's device array, move the collective's (sub-)axes to the end in the order named, and
reshape to ``[num_groups, group_size]``. JAX's ``_axis_groups``, Shardy's ``getReplicaGroups``
and XLA's mesh-axes replica groups are all this; meshtopo implements it once, here.

>>> mesh = Mesh({"data": 2, "model": 4})
>>> mesh.group_array(over="data").tolist()
[[0, 4], [1, 5], [2, 6], [3, 7]]
>>> mesh.group_array(over="model").tolist()
[[0, 1, 2, 3], [4, 5, 6, 7]]
>>> str(MeshAxesReplicaGroupList(mesh, ["model"]))
"mesh['data'=2,'model'=4] {'model'}"
>>> mesh.replica_groups(over="model").replica_groups
[[0, 1, 2, 3], [4, 5, 6, 7]]

A mesh holds mesh-axes replica groups' meshes and gives device lists
(``Mesh.replica_groups``), and a device list holds mesh-axes lists: ``_device_list`` imports
this module, and the two device-list views of ``Mesh`` import ``_device_list`` when called.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ._checks import is_int
from ._errors import InvalidArgumentError
from ._iota import (
    IotaReplicaGroupList,
    IotaTileAssignment,
    find_iota,
    read_iota_array,
)
from ._limits import checked_product
from ._text import Scanner

if TYPE_CHECKING:  # a device list holds meshes: imported when a view is asked for
    from ._device_list import CollectiveDeviceList

_SUB_AXIS = re.compile(r"^\s*'?([^':()]+)'?\s*:\s*\(\s*([0-9]+)\s*\)\s*([0-9]+)\s*$")


@dataclass(frozen=True)
class SubAxis:
    """Shardy's sub-axis ``name:(pre_size)size``: split axis ``name`` (size n) into
    ``[pre_size, size, n / (pre_size * size)]`` and take the middle factor."""

    name: str
    pre_size: int
    size: int

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not all(
            is_int(v) for v in (self.pre_size, self.size)
        ):
            raise InvalidArgumentError(
                f"a sub-axis needs a name and int pre_size and size, got {self.name!r}, "
                f"{self.pre_size!r}, {self.size!r}"
            )
        if self.pre_size < 1 or self.size < 2:
            raise InvalidArgumentError(
                f"sub-axis {self.name}:({self.pre_size}){self.size} needs pre_size >= 1 and size >= 2"
            )

    @property
    def next_pre_size(self) -> int:
        """``pre_size * size``: the pre-size of the sub-axis just above this one."""
        return self.pre_size * self.size

    def __str__(self) -> str:
        return f"{self.name}:({self.pre_size}){self.size}"

    @classmethod
    def parse(cls, text: str) -> SubAxis:
        """Read ``x:(2)4`` (the name may be quoted)."""
        match = _SUB_AXIS.match(text)
        if not match:
            raise InvalidArgumentError(f"expected a sub-axis like 'x:(2)4', got {text!r}")
        return cls(match.group(1), int(match.group(2)), int(match.group(3)))


AxisRef = str | SubAxis


def _axis_ref(axis: object) -> AxisRef:
    if isinstance(axis, SubAxis):
        return axis
    if isinstance(axis, str):
        return SubAxis.parse(axis) if ":" in axis else axis.strip().strip("'\"")
    raise InvalidArgumentError(f"a mesh axis must be a name or a SubAxis, got {axis!r}")


def axis_refs(over: object) -> tuple[AxisRef, ...]:
    """``over`` (a name, ``"x:(2)2"``, a SubAxis, or a sequence of them) as a tuple of axis refs."""
    if isinstance(over, str | SubAxis):
        return (_axis_ref(over),)
    if isinstance(over, Sequence):
        return tuple(_axis_ref(axis) for axis in over)
    raise InvalidArgumentError(f"axes must be a name or a sequence of names, got {over!r}")


def _quote(name: str) -> str:
    return f"'{name}'"


class Mesh:
    """Named axes with sizes (major to minor) and the device id at every mesh position.

    ``devices`` is an int array in the mesh's shape (or flat) holding distinct non-negative
    device ids, like a JAX ``Mesh``'s devices; by default position i holds device i.
    Meshes are immutable (validated once, here; the device array is read-only; the device
    order and the id lookup are cached on first use), hashable, and compare by axes and
    devices.
    """

    def __init__(
        self,
        axes: Mapping[str, int] | Sequence[tuple[str, int]],
        devices: object = None,
    ) -> None:
        if isinstance(axes, Mapping):
            items = list(axes.items())
        elif isinstance(axes, Sequence) and not isinstance(axes, str):
            items = list(axes)
        else:
            raise InvalidArgumentError(
                f"mesh axes must be a mapping like {{'data': 2}} or (name, size) pairs, got {axes!r}"
            )
        if not items:
            raise InvalidArgumentError("a mesh needs at least one axis")
        names, sizes = [], []
        for item in items:
            if not (isinstance(item, tuple | list) and len(item) == 2):
                raise InvalidArgumentError(f"mesh axes must be (name, size) pairs, got {item!r}")
            name, size = item
            if not isinstance(name, str) or not name or any(c in name for c in "'\":=,{}[]()"):
                raise InvalidArgumentError(
                    f"mesh axis name {name!r} must be a plain non-empty name"
                )
            if not is_int(size) or size < 1:
                raise InvalidArgumentError(
                    f"mesh axis {name!r} must have a positive int size, got {size!r}"
                )
            names.append(name)
            sizes.append(int(size))
        if len(set(names)) != len(names):
            raise InvalidArgumentError(f"mesh has duplicate axis names: {names}")
        self._names = tuple(names)
        self._sizes = tuple(sizes)
        count = checked_product(sizes, f"the mesh {self._axes_text()}")
        if devices is None:
            array = np.arange(count, dtype=np.int64)
        else:
            array = np.asarray(devices)
            if array.dtype == object or not np.issubdtype(array.dtype, np.integer):
                raise InvalidArgumentError(f"mesh devices must be ints, got {devices!r}")
            if array.size != count:
                raise InvalidArgumentError(
                    f"mesh {self._axes_text()} has {count} positions but devices has {array.size} ids"
                )
            if array.ndim != 1 and tuple(array.shape) != tuple(sizes):
                raise InvalidArgumentError(
                    f"mesh devices have shape {list(array.shape)}, expected {sizes} or flat"
                )
            array = array.astype(np.int64).reshape(-1)
            if (array < 0).any():
                raise InvalidArgumentError(
                    f"mesh device ids must be non-negative, got {array.min()}"
                )
            if np.unique(array).size != array.size:
                raise InvalidArgumentError("mesh device ids must be distinct")
        array = array.reshape(sizes)
        array.setflags(write=False)
        self._devices = array

    @property
    def axis_names(self) -> tuple[str, ...]:
        """Axis names, major to minor."""
        return self._names

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        """Axis sizes, major to minor."""
        return self._sizes

    @property
    def shape(self) -> dict[str, int]:
        """``{name: size}`` in axis order."""
        return dict(zip(self._names, self._sizes, strict=True))

    @property
    def size(self) -> int:
        """The number of devices."""
        return int(self._devices.size)

    @property
    def devices(self) -> np.ndarray:
        """The device id at each mesh position (read-only int64 array in the mesh's shape)."""
        return self._devices

    @functools.cached_property
    def device_order(self) -> IotaTileAssignment | None:
        """The device ids as an iota tile over the mesh shape, or None when no iota fits."""
        found = find_iota(self._devices)
        if found is None:
            return None
        return IotaTileAssignment(self._sizes, *found)

    def axis_size(self, name: str) -> int:
        """The size of axis ``name``."""
        if name not in self._names:
            raise InvalidArgumentError(f"mesh {self._axes_text()} has no axis {name!r}")
        return self._sizes[self._names.index(name)]

    def _axes_text(self) -> str:
        return (
            "["
            + ",".join(f"{_quote(n)}={s}" for n, s in zip(self._names, self._sizes, strict=True))
            + "]"
        )

    def __str__(self) -> str:
        text = "mesh" + self._axes_text()
        order = self.device_order
        if order is not None and len(order.reshape_dims) == 1:
            return text
        if order is not None:
            return f"{text}, device_ids=({order.array_to_string()})"
        return f"{text}, device_ids=({','.join(map(str, self._devices.reshape(-1).tolist()))})"

    def __repr__(self) -> str:
        if self.device_order is not None and len(self.device_order.reshape_dims) == 1:
            return f"{type(self).__name__}({self.shape!r})"
        return f"{type(self).__name__}({self.shape!r}, devices={self._devices.tolist()!r})"

    def __setattr__(self, name: str, value: object) -> None:
        if name in ("_names", "_sizes", "_devices") and not hasattr(self, name):
            object.__setattr__(self, name, value)
            return
        raise AttributeError(f"Mesh is immutable; cannot set {name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mesh):
            return NotImplemented
        return (self._names, self._sizes) == (other._names, other._sizes) and bool(
            np.array_equal(self._devices, other._devices)
        )

    def __hash__(self) -> int:
        return hash((self._names, self._sizes, self._devices.tobytes()))

    @classmethod
    def of(cls, mesh: Mesh) -> Mesh:
        """``mesh`` itself: kept for one release from when a mesh-axes list held a
        ``MeshGrid`` that ``of`` turned into a ``Mesh``."""
        return mesh

    def replica_groups(self, over: object) -> CollectiveDeviceList:
        """The groups of a collective over ``over`` as a device list, compact whenever possible.

        >>> Mesh({"data": 2, "model": 4}).replica_groups(over="data")
        CollectiveDeviceList('[4,2]<=[2,4]T(1,0)')
        """
        from ._device_list import CollectiveDeviceList

        return CollectiveDeviceList(MeshAxesReplicaGroupList(self, axis_refs(over))).compact()

    def axes_for(self, groups: object) -> tuple[str, ...] | None:
        """The mesh axes (in order) whose collective has exactly ``groups``, or None.

        ``groups`` is anything ``CollectiveDeviceList`` accepts; only whole axes are tried.

        >>> Mesh({"data": 2, "model": 4}).axes_for([[0, 4], [1, 5], [2, 6], [3, 7]])
        ('data',)
        """
        from ._device_list import CollectiveDeviceList

        device_list = (
            groups if isinstance(groups, CollectiveDeviceList) else CollectiveDeviceList(groups)
        )
        if not device_list.is_uniform or 0 in (
            device_list.num_replica_groups,
            device_list.num_devices_per_group,
        ):
            return None
        array = device_list.to_array()
        positions = self.positions_of(array[0])
        if (positions < 0).any():
            return None
        coords = np.stack(np.unravel_index(positions, self._sizes), axis=1)
        changes = coords != coords[0]
        first_change = changes.argmax(axis=0)
        varying = np.flatnonzero(changes.any(axis=0)).tolist()
        # An axis that changes later between ranks is more major in the collective's order.
        axes = tuple(
            self._names[axis] for axis in sorted(varying, key=lambda axis: -first_change[axis])
        )
        return axes if np.array_equal(self.group_array(axes), array) else None

    def group_array(self, over: object) -> np.ndarray:
        """Device ids of the groups of a collective over ``over``, shape ``[groups, size]``.

        Groups hold the devices that agree on every coordinate outside ``over``; inside a group
        the collective axes run in the order named, the last one fastest.
        """
        sizes, grouped = self._reindexed_axes(axis_refs(over))
        rest = [axis for axis in range(len(sizes)) if axis not in grouped]
        group_size = math.prod(sizes[axis] for axis in grouped)
        return self._devices.reshape(sizes).transpose(rest + grouped).reshape(-1, group_size)

    @functools.cached_property
    def _device_lookup(self) -> tuple[np.ndarray, np.ndarray]:
        flat = self._devices.reshape(-1)
        order = np.argsort(flat)
        return flat[order], order

    def positions_of(self, device_ids: object) -> np.ndarray:
        """The flat mesh position of each device id (-1 for ids the mesh does not hold)."""
        ids = np.asarray(device_ids, dtype=np.int64)
        sorted_ids, order = self._device_lookup
        where = np.minimum(np.searchsorted(sorted_ids, ids), sorted_ids.size - 1)
        return np.where(sorted_ids[where] == ids, order[where], -1)

    def _reindexed_axes(self, axes: tuple[AxisRef, ...]) -> tuple[list[int], list[int]]:
        """XLA's ``ComputeReindexedAxes``: mesh dims split by the sub-axes used, and the
        positions of the grouped (sub-)axes in the order named."""
        by_dim: dict[int, list[tuple[int, AxisRef]]] = {}
        for position, axis in enumerate(axes):
            name = axis.name if isinstance(axis, SubAxis) else axis
            dim = self._names.index(name) if name in self._names else -1
            if dim < 0:
                raise InvalidArgumentError(
                    f"collective axis {str(axis)!r} is not an axis of the mesh {self._axes_text()}"
                )
            by_dim.setdefault(dim, []).append((position, axis))
        sizes: list[int] = []
        grouped = [0] * len(axes)
        for dim, full in enumerate(self._sizes):
            refs = by_dim.get(dim)
            if refs is None:
                sizes.append(full)
                continue
            offset = len(sizes)
            dim_sizes, aggregate = _split_dim(full, refs, self._names[dim])
            sizes.extend(dim_sizes)
            for position, index in aggregate:
                grouped[position] = offset + index
        return sizes, grouped


# The former name of ``Mesh``, when the device-list views lived on a subclass: kept for one
# release.
MeshGrid = Mesh


def _split_dim(
    full: int, refs: list[tuple[int, AxisRef]], name: str
) -> tuple[list[int], list[tuple[int, int]]]:
    """Split one mesh dim of size ``full`` for the axis refs that use it.

    Returns the sub-dim sizes and, per ref, (its position in the named order, its sub-dim).
    """
    if len(refs) == 1 and not isinstance(refs[0][1], SubAxis):
        return [full], [(refs[0][0], 0)]
    if any(not isinstance(axis, SubAxis) for _, axis in refs):
        raise InvalidArgumentError(f"axis {name!r} is named twice in the collective's axes")
    subs = sorted(
        ((axis, position) for position, axis in refs if isinstance(axis, SubAxis)),
        key=lambda item: item[0].pre_size,
    )
    sizes: list[int] = []
    aggregate: list[tuple[int, int]] = []
    prefix = 1
    for sub, position in subs:
        if full % sub.next_pre_size or sub.size >= full:
            raise InvalidArgumentError(
                f"sub-axis {sub} does not fit axis {name!r} of size {full}: its size must be "
                f"smaller than {full} and {sub.pre_size}*{sub.size} must divide {full}"
            )
        if sub.pre_size % prefix:
            raise InvalidArgumentError(f"sub-axes of {name!r} overlap: {sub} starts inside another")
        if sub.pre_size != prefix:
            sizes.append(sub.pre_size // prefix)
            prefix = sub.pre_size
        aggregate.append((position, len(sizes)))
        sizes.append(sub.size)
        prefix *= sub.size
    if prefix != full:
        sizes.append(full // prefix)
    return sizes, aggregate


@dataclass(frozen=True)
class MeshAxesReplicaGroupList:
    """XLA's mesh-axes replica groups: a mesh and the (sub-)axes a collective spans.

    The groups hold the mesh's device ids; see ``Mesh.group_array``.
    """

    mesh: Mesh
    axes: tuple[AxisRef, ...]

    def __post_init__(self) -> None:
        refs = axis_refs(self.axes)
        object.__setattr__(self, "axes", refs)
        self.mesh._reindexed_axes(refs)  # validates names and sub-axes

    @functools.cached_property
    def num_devices_per_group(self) -> int:
        """The product of the spanned (sub-)axis sizes."""
        return math.prod(
            axis.size if isinstance(axis, SubAxis) else self.mesh.axis_size(axis)
            for axis in self.axes
        )

    @property
    def num_replica_groups(self) -> int:
        """The number of groups, ``mesh.size / num_devices_per_group``."""
        return self.mesh.size // self.num_devices_per_group

    def to_array(self) -> np.ndarray:
        """The groups as device ids, shape ``[num_replica_groups, num_devices_per_group]``."""
        return self.mesh.group_array(self.axes)

    def to_iota(self) -> IotaReplicaGroupList | None:
        """The same groups as an iota list, or None when the mesh's device order has no iota."""
        order = self.mesh.device_order
        if order is None:
            return None
        sizes, grouped = self.mesh._reindexed_axes(self.axes)
        rest = [axis for axis in range(len(sizes)) if axis not in grouped]
        reshaped = IotaTileAssignment(tuple(sizes), order.reshape_dims, order.transpose_perm)
        transposed = reshaped.transpose(rest + grouped)
        if transposed is None:
            found = find_iota(reshaped.to_array().transpose(rest + grouped))
            if found is None:
                return None
            return IotaReplicaGroupList(self.num_replica_groups, self.num_devices_per_group, *found)
        return IotaReplicaGroupList(
            self.num_replica_groups,
            self.num_devices_per_group,
            transposed.reshape_dims,
            transposed.transpose_perm,
        )

    def __str__(self) -> str:
        axes = ",".join(
            f"{_quote(a.name)}:({a.pre_size}){a.size}" if isinstance(a, SubAxis) else _quote(a)
            for a in self.axes
        )
        return f"{self.mesh} {{{axes}}}"

    @classmethod
    def parse(cls, text: str) -> MeshAxesReplicaGroupList:
        """Read ``mesh['x'=2,'y'=4] {'y'}`` with optional ``, device_ids=(...)`` and sub-axes."""
        scanner = Scanner(text, "mesh-axes replica groups")
        groups = read_mesh_axes(scanner)
        scanner.finish()
        return groups


def read_mesh_axes(scanner: Scanner) -> MeshAxesReplicaGroupList:
    """Read a mesh-axes replica group list from ``scanner``; errors point at the bad token."""
    start = scanner.pos
    scanner.expect("mesh")
    scanner.expect("[")
    axes: list[tuple[str, int]] = []
    while True:
        name = scanner.name()
        scanner.expect("=")
        axes.append((name, scanner.integer(minimum=1)))
        if scanner.accept("]"):
            break
        scanner.expect(",")
    checked_product([size for _, size in axes], "the mesh")
    devices: object = None
    devices_start = scanner.pos
    if scanner.accept(","):
        scanner.expect("device_ids")
        scanner.expect("=")
        scanner.expect("(")
        devices_start = scanner.pos
        if scanner.peek("["):
            reshape, perm = read_iota_array(scanner)
            try:
                tile = IotaTileAssignment(
                    tuple(size for _, size in axes), tuple(reshape), tuple(perm)
                )
            except InvalidArgumentError as error:
                raise scanner.error(str(error), devices_start) from None
            devices = tile.to_array()
            scanner.expect(")")
        else:
            ids = [scanner.integer(minimum=0)]
            while scanner.accept(","):
                ids.append(scanner.integer(minimum=0))
            scanner.expect(")")
            devices = ids
    try:
        mesh = Mesh(axes, devices)
    except InvalidArgumentError as error:
        raise scanner.error(str(error), devices_start if devices is not None else start) from None
    axes_start = scanner.pos
    scanner.expect("{")
    refs: list[AxisRef] = []
    if not scanner.accept("}"):
        while True:
            name = scanner.name()
            if scanner.accept(":"):
                scanner.expect("(")
                pre_size = scanner.integer(minimum=1)
                scanner.expect(")")
                refs.append(SubAxis(name, pre_size, scanner.integer(minimum=1)))
            else:
                refs.append(name)
            if scanner.accept("}"):
                break
            scanner.expect(",")
    try:
        return MeshAxesReplicaGroupList(mesh, tuple(refs))
    except InvalidArgumentError as error:
        raise scanner.error(str(error), axes_start) from None
