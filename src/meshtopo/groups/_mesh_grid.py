"""The one group algebra every framework shares, on a mesh's axes and device array.

A collective over some mesh axes groups the devices that agree on every other coordinate: take
the mesh's device array, move the collective's (sub-)axes to the end in the order named, and
reshape to ``[num_groups, group_size]``. JAX's ``_axis_groups``, Shardy's ``getReplicaGroups``
and XLA's mesh-axes replica groups are all this; meshtopo implements it once, here
(``axis_groups``), with Shardy's sub-axes (``SubAxis``) and XLA's ``ComputeReindexedAxes``
(``reindexed_axes``). ``Mesh`` and the mesh-axes replica groups (``_device_list``) are built
on these functions.

>>> import numpy as np
>>> devices = np.arange(8).reshape(2, 4)
>>> axis_groups(devices, ["data", "model"], "data").tolist()
[[0, 4], [1, 5], [2, 6], [3, 7]]
>>> axis_groups(devices, ["data", "model"], "model").tolist()
[[0, 1, 2, 3], [4, 5, 6, 7]]
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .._checks import is_int
from .._errors import InvalidArgumentError
from .._limits import checked_product

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


def quote(name: str) -> str:
    """An axis name as XLA's text writes it: ``'data'``."""
    return f"'{name}'"


def axes_text(names: Sequence[str], sizes: Sequence[int]) -> str:
    """A mesh's axes as XLA's text writes them: ``['data'=2,'model'=4]``."""
    return "[" + ",".join(f"{quote(n)}={s}" for n, s in zip(names, sizes, strict=True)) + "]"


def reindexed_axes(
    names: Sequence[str], sizes: Sequence[int], axes: tuple[AxisRef, ...]
) -> tuple[list[int], list[int]]:
    """XLA's ``ComputeReindexedAxes``: the mesh's dims split by the sub-axes used, and the
    positions of the grouped (sub-)axes in the order named.

    >>> reindexed_axes(["x"], [8], (SubAxis("x", 2, 2),))
    ([2, 2, 2], [1])
    """
    by_dim: dict[int, list[tuple[int, AxisRef]]] = {}
    for position, axis in enumerate(axes):
        name = axis.name if isinstance(axis, SubAxis) else axis
        if name not in names:
            raise InvalidArgumentError(
                f"collective axis {str(axis)!r} is not an axis of the mesh {axes_text(names, sizes)}"
            )
        by_dim.setdefault(list(names).index(name), []).append((position, axis))
    split: list[int] = []
    grouped = [0] * len(axes)
    for dim, full in enumerate(sizes):
        refs = by_dim.get(dim)
        if refs is None:
            split.append(full)
            continue
        offset = len(split)
        dim_sizes, aggregate = _split_dim(full, refs, names[dim])
        split.extend(dim_sizes)
        for position, index in aggregate:
            grouped[position] = offset + index
    return split, grouped


def axis_groups(devices: np.ndarray, names: Sequence[str], over: object) -> np.ndarray:
    """Device ids of the groups of a collective over ``over`` on the mesh whose axes are
    ``names`` and whose device array is ``devices`` (in the mesh's shape), shape
    ``[groups, size]``.

    Groups hold the devices that agree on every coordinate outside ``over``; inside a group
    the collective axes run in the order named, the last one fastest.
    """
    sizes, grouped = reindexed_axes(names, devices.shape, axis_refs(over))
    rest = [axis for axis in range(len(sizes)) if axis not in grouped]
    group_size = math.prod(sizes[axis] for axis in grouped)
    return devices.reshape(sizes).transpose(rest + grouped).reshape(-1, group_size)




def mesh_grid(
    axes: Mapping[str, int] | Sequence[tuple[str, int]], devices: object = None
) -> tuple[tuple[str, ...], tuple[int, ...], np.ndarray]:
    """A mesh's axis names, axis sizes and device array (read-only int64 in the mesh's shape),
    validated: ``axes`` a mapping or (name, size) pairs, ``devices`` distinct non-negative
    ids in the mesh's shape or flat (by default position i holds device i).

    >>> mesh_grid({"data": 2, "model": 2}, [3, 2, 1, 0])[2].tolist()
    [[3, 2], [1, 0]]
    """
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
    count = checked_product(sizes, f"the mesh {axes_text(names, sizes)}")
    if devices is None:
        array = np.arange(count, dtype=np.int64)
    else:
        array = np.asarray(devices)
        if array.dtype == object or not np.issubdtype(array.dtype, np.integer):
            raise InvalidArgumentError(f"mesh devices must be ints, got {devices!r}")
        if array.size != count:
            raise InvalidArgumentError(
                f"mesh {axes_text(names, sizes)} has {count} positions but devices has {array.size} ids"
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
    return tuple(names), tuple(sizes), array


def axes_of_groups(
    devices: np.ndarray, names: Sequence[str], groups: np.ndarray, positions: np.ndarray
) -> tuple[str, ...] | None:
    """The mesh axes (in order) whose collective has exactly the groups ``groups`` (a
    ``[groups, size]`` array), or None; ``positions`` are the flat mesh positions of the
    first group's devices (-1 where the mesh does not hold one)."""
    if (positions < 0).any():
        return None
    coords = np.stack(np.unravel_index(positions, devices.shape), axis=1)
    changes = coords != coords[0]
    first_change = changes.argmax(axis=0)
    varying = np.flatnonzero(changes.any(axis=0)).tolist()
    # An axis that changes later between ranks is more major in the collective's order.
    axes = tuple(names[axis] for axis in sorted(varying, key=lambda axis: -first_change[axis]))
    return axes if np.array_equal(axis_groups(devices, names, axes), groups) else None


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
