"""``CollectiveDeviceList``: a collective's replica groups in any of XLA's three encodings.

The list holds explicit groups (``{{0,1},{2,3}}``), an iota list (``[2,2]<=[4]``) or mesh axes
(``mesh['x'=2,'y'=2] {'y'}``). The explicit groups of a compact form are expanded on first use
and cached; equality and hashing compare the expanded groups, so the same groups in two
encodings are equal, as in XLA.

A device list is a frozen value: one immutable form is chosen and validated at construction
(an iota list, a mesh-axes list, the explicit ids and group sizes as read-only arrays, or
explicit groups as written in a text a reader already checked), nothing can be assigned to
it, and it is hashable.

``Mesh`` (named axes and the device at each position) and ``MeshAxesReplicaGroupList`` (a
mesh and the axes a collective spans) live here too: a mesh gives device lists
(``Mesh.replica_groups``), a device list holds mesh-axes lists, and a mesh-axes list holds a
mesh, so the three refer to each other and share one module. The group algebra they use is
``_mesh_grid``; explicit groups are ``_explicit_groups``.

>>> d = CollectiveDeviceList.parse("{{0,4},{1,5},{2,6},{3,7}}")
>>> d.compact()
CollectiveDeviceList('[4,2]<=[2,4]T(1,0)')
>>> d == CollectiveDeviceList.parse("mesh['data'=2,'model'=4] {'data'}")
True
>>> CollectiveDeviceList.parse("[2,10]<=[4,5]T(1,0)").to_text(full=True)
'{{0,5,10,15,1,6,11,16,2,7},{12,17,3,8,13,18,4,9,14,19}}'
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._errors import InvalidArgumentError
from .._limits import check_size, checked_product
from ._explicit_groups import (
    Converter,
    ExplicitArrays,
    WrittenGroups,
    explicit_arrays,
    explicit_text_arrays,
    is_explicit_text,
    read_explicit,
    read_only,
    read_only_copy,
)
from ._iota import (
    IotaReplicaGroupList,
    IotaTileAssignment,
    find_iota,
    read_iota,
    read_iota_array,
)
from ._mesh_grid import (
    AxisRef,
    SubAxis,
    axes_of_groups,
    axes_text,
    axis_groups,
    axis_refs,
    mesh_grid,
    quote,
    reindexed_axes,
)
from ._text import WHITESPACE, Scanner

if TYPE_CHECKING:  # numpy.typing costs start-up time; annotations only
    from numpy.typing import ArrayLike


_set = object.__setattr__  # (the list's own ``__setattr__`` refuses every name)


class CollectiveDeviceList:
    """Replica groups as written on a collective: explicit, iota or mesh-axes.

    Construct from a list of int lists (ragged allowed), a 2-D int array, an
    ``IotaReplicaGroupList``, a ``MeshAxesReplicaGroupList`` or another device list;
    ``CollectiveDeviceList.parse`` reads XLA's text in any encoding.

    Frozen and hashable: the form held is set once, here, and validated; assigning any
    attribute raises ``AttributeError``. The expanded groups of a compact or written form
    are computed on first use and kept in one private slot, set once; they are what the
    form held determines, so equality and hashing (which compare them) are the same before
    and after it is set.
    """

    __slots__ = ("_expanded_once", "_form")
    _form: _Form
    _expanded_once: tuple[np.ndarray, np.ndarray] | None

    def __init__(self, groups: object = ()) -> None:
        form: _Form
        expanded = None
        if type(groups) in _FORMS:  # (a reader makes one per collective: checked first)
            form = groups  # type: ignore[assignment]
        elif isinstance(groups, CollectiveDeviceList):
            form = groups._form
            expanded = groups._expanded_once
        elif isinstance(groups, _FORMS):  # (a subclass of one)
            form = groups
        else:
            form = ExplicitArrays(*explicit_arrays(groups))
        _set(self, "_form", form)
        _set(self, "_expanded_once", expanded)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"CollectiveDeviceList is immutable; cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"CollectiveDeviceList is immutable; cannot delete {name}")

    def __reduce__(self) -> tuple[type[CollectiveDeviceList], tuple[_Form]]:
        return CollectiveDeviceList, (self._form,)

    @classmethod
    def parse(cls, text: str, line: int = 1, column: int = 1) -> CollectiveDeviceList:
        """Read XLA's text for replica groups in any of the three encodings.

        ``line``/``column`` locate ``text`` in a larger input so that an ``HloParseError``
        points into that input.
        """
        if not isinstance(text, str):
            raise InvalidArgumentError(f"replica groups text must be a string, got {text!r}")
        stripped = text.strip(WHITESPACE)
        if is_explicit_text(stripped):
            return cls(explicit_text_arrays(stripped))
        scanner = Scanner(text, "replica groups", line, column)
        if scanner.peek("{"):
            result = cls(read_explicit(scanner))
        elif scanner.peek("["):
            result = cls(IotaReplicaGroupList.from_tile(read_iota(scanner, tile_rank=2)))
        elif scanner.peek("mesh"):
            result = cls(read_mesh_axes(scanner))
        else:
            raise scanner.error(
                f"expected '{{', '[' or 'mesh' to start replica groups but found {scanner.describe_next()}"
            )
        scanner.finish()
        return result

    @classmethod
    def from_flat(cls, flat: np.ndarray, sizes: np.ndarray) -> CollectiveDeviceList:
        """Explicit groups from all ids concatenated (int64) and each group's size (the list
        keeps read-only copies of writable arrays)."""
        flat = np.asarray(flat, dtype=np.int64).reshape(-1)
        sizes = np.asarray(sizes, dtype=np.int64).reshape(-1)
        if (sizes < 0).any() or int(sizes.sum()) != flat.size:
            raise InvalidArgumentError(
                f"group sizes {sizes.tolist()} do not add up to the {flat.size} ids given"
            )
        return cls(ExplicitArrays(read_only_copy(flat), read_only_copy(sizes)))

    @classmethod
    def from_written(cls, text: str, start: int, stop: int,
                     convert: Converter) -> CollectiveDeviceList:
        """Explicit groups as written in ``text[start:stop]``, text a reader has checked to be
        well formed, that ``convert(text, start, stop)`` (a pure function) turns into (all
        ids concatenated, each group's size) on first use: converting it costs nothing until
        the ids are asked for."""
        return cls(WrittenGroups(text, start, stop, convert))

    @classmethod
    def deferred(cls, expand: Callable[[], tuple[np.ndarray, np.ndarray]]) -> CollectiveDeviceList:
        """Explicit groups that ``expand()`` gives on first use. Kept for one release:
        ``from_written`` keeps the text itself."""
        return cls.from_written("", 0, 0, lambda text, start, stop: expand())

    @property
    def _iota(self) -> IotaReplicaGroupList | None:
        form = self._form
        return form if isinstance(form, IotaReplicaGroupList) else None

    @property
    def _mesh_axes(self) -> MeshAxesReplicaGroupList | None:
        form = self._form
        return form if isinstance(form, MeshAxesReplicaGroupList) else None

    # ---- what the list holds ------------------------------------------------------------

    @property
    def iota(self) -> IotaReplicaGroupList | None:
        """The iota list this device list holds, or None for explicit and mesh-axes lists."""
        return self._iota

    @property
    def mesh_axes(self) -> MeshAxesReplicaGroupList | None:
        """The mesh-axes list this device list holds, or None."""
        return self._mesh_axes

    @property
    def encoding(self) -> str:
        """ "explicit", "iota" or "mesh_axes": which text form ``str()`` prints."""
        if self._iota is not None:
            return "iota"
        if self._mesh_axes is not None:
            return "mesh_axes"
        return "explicit"

    @property
    def num_replica_groups(self) -> int:
        """The number of groups."""
        if self._iota is not None:
            return self._iota.num_replica_groups
        if self._mesh_axes is not None:
            return self._mesh_axes.num_replica_groups
        return int(self._expanded[1].size)

    @property
    def num_devices_per_group(self) -> int:
        """The size of the first group (0 for an empty list), as XLA reports it."""
        if self._iota is not None:
            return self._iota.num_devices_per_group
        if self._mesh_axes is not None:
            return self._mesh_axes.num_devices_per_group
        sizes = self._expanded[1]
        return int(sizes[0]) if sizes.size else 0

    @property
    def is_empty(self) -> bool:
        """True for ``{}``: no groups written, which means "everyone" in most modes."""
        return self.num_replica_groups == 0

    def __len__(self) -> int:
        return self.num_replica_groups

    # ---- expanded views -----------------------------------------------------------------

    @property
    def _expanded(self) -> tuple[np.ndarray, np.ndarray]:
        """(all ids concatenated, group sizes), read-only: the held arrays, or those of the
        held form computed once and kept."""
        form = self._form
        if isinstance(form, ExplicitArrays):
            return form
        found = self._expanded_once
        if found is None:
            found = self._expand(form)
            object.__setattr__(self, "_expanded_once", found)
        return found

    def _expand(self, form: IotaReplicaGroupList | MeshAxesReplicaGroupList | WrittenGroups
                ) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(form, WrittenGroups):
            flat, sizes = form.convert(form.text, form.start, form.stop)
            return read_only(flat), read_only(sizes)
        check_size(form.num_replica_groups * form.num_devices_per_group,
                   f"the replica groups {self}")
        flat = np.ascontiguousarray(form.to_array()).reshape(-1)
        sizes = np.full(form.num_replica_groups, form.num_devices_per_group, dtype=np.int64)
        return read_only(flat), read_only(sizes)

    @property
    def group_sizes(self) -> np.ndarray:
        """The size of every group (int64, one entry per group)."""
        return self._expanded[1]

    @property
    def is_uniform(self) -> bool:
        """True when every group has the same size (always for iota and mesh-axes lists)."""
        sizes = self._expanded[1] if self.encoding == "explicit" else None
        return sizes is None or sizes.size == 0 or bool((sizes == sizes[0]).all())

    def flattened_replica_groups(self) -> np.ndarray:
        """All groups concatenated, group-major and rank-minor (read-only 1-D int64)."""
        return self._expanded[0]

    def to_array(self) -> np.ndarray:
        """The groups as a read-only ``[num_replica_groups, num_devices_per_group]`` array.

        Ragged explicit lists have no such array and raise ``InvalidArgumentError``.
        """
        if not self.is_uniform:
            raise InvalidArgumentError(
                f"replica groups {self} have different sizes {self.group_sizes.tolist()}; "
                "use .replica_groups for ragged lists"
            )
        return self.flattened_replica_groups().reshape(
            self.num_replica_groups, self.num_devices_per_group
        )

    @property
    def replica_groups(self) -> list[list[int]]:
        """The groups as lists of ints: a fresh list each call, built from the cached arrays."""
        flat, sizes = self._expanded
        if sizes.size == 0:
            return []
        if self.is_uniform:
            return flat.reshape(sizes.size, -1).tolist()
        return [part.tolist() for part in np.split(flat, np.cumsum(sizes)[:-1])]

    def group_of(self, device_ids: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(group index, rank in group) of each id; -1 where an id is in no group.

        Iota lists answer by stride arithmetic without expanding. An id listed twice reports
        its first place.
        """
        ids = np.asarray(device_ids, dtype=np.int64)
        if self._iota is not None:
            inside = (ids >= 0) & (ids < self._iota.num_devices)
            group, rank = self._iota.group_of(np.where(inside, ids, 0))
            return np.where(inside, group, -1), np.where(inside, rank, -1)
        flat, sizes = self._expanded
        if flat.size == 0:
            missing = np.full(ids.shape, -1, dtype=np.int64)
            return missing, missing.copy()
        groups = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
        ranks = np.arange(flat.size, dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        order = np.argsort(flat, kind="stable")
        where = np.minimum(np.searchsorted(flat[order], ids), flat.size - 1)
        position = order[where]
        found = flat[position] == ids
        return np.where(found, groups[position], -1), np.where(found, ranks[position], -1)

    # ---- conversions --------------------------------------------------------------------

    def compact(self) -> CollectiveDeviceList:
        """The same groups in iota form where one exists, else this list unchanged.

        Linear in the number of ids (see ``find_iota``); mesh-axes lists convert through
        their device order when it is an iota.
        """
        if self._iota is not None:
            return self
        if self._mesh_axes is not None:
            iota = self._mesh_axes.to_iota()
            return CollectiveDeviceList(iota) if iota is not None else self
        if not self.is_uniform or self.num_replica_groups == 0 or self.num_devices_per_group == 0:
            return self
        found = find_iota(self._expanded[0])
        if found is None:
            return self
        return CollectiveDeviceList(
            IotaReplicaGroupList(self.num_replica_groups, self.num_devices_per_group, *found)
        )

    def to_explicit(self) -> CollectiveDeviceList:
        """The same groups in explicit form."""
        return CollectiveDeviceList.from_flat(*self._expanded)

    def to_text(self, full: bool = False) -> str:
        """XLA's text for the held form; ``full=True`` always prints the explicit groups."""
        if not full and self._iota is not None:
            return str(self._iota)
        if not full and self._mesh_axes is not None:
            return str(self._mesh_axes)
        flat, sizes = self._expanded
        ids = flat.astype(str)
        ends = np.cumsum(sizes)
        return (
            "{"
            + ",".join(
                "{" + ",".join(ids[end - size : end]) + "}"
                for size, end in zip(sizes.tolist(), ends.tolist(), strict=True)
            )
            + "}"
        )

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"CollectiveDeviceList({self.to_text()!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list | tuple):
            other = CollectiveDeviceList(other)
        if not isinstance(other, CollectiveDeviceList):
            return NotImplemented
        if self._iota is not None and other._iota is not None:
            return self._iota == other._iota
        (a_flat, a_sizes), (b_flat, b_sizes) = self._expanded, other._expanded
        return bool(np.array_equal(a_sizes, b_sizes) and np.array_equal(a_flat, b_flat))

    def __hash__(self) -> int:
        flat, sizes = self._expanded
        return hash((flat.tobytes(), sizes.tobytes()))


class Mesh:
    """Named axes with sizes (major to minor) and the device id at every mesh position.

    ``devices`` is an int array in the mesh's shape (or flat) holding distinct non-negative
    device ids, like a JAX ``Mesh``'s devices; by default position i holds device i.
    Meshes are immutable (validated once, at construction, by ``mesh_grid``; the device array
    is read-only; the device order and the id lookup are cached on first use), hashable, and
    compare by axes and devices.
    """

    def __init__(
        self,
        axes: Mapping[str, int] | Sequence[tuple[str, int]],
        devices: object = None,
    ) -> None:
        names, sizes, array = mesh_grid(axes, devices)
        self._names = names
        self._sizes = sizes
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
        return axes_text(self._names, self._sizes)

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
        return CollectiveDeviceList(MeshAxesReplicaGroupList(self, axis_refs(over))).compact()

    def axes_for(self, groups: object) -> tuple[str, ...] | None:
        """The mesh axes (in order) whose collective has exactly ``groups``, or None.

        ``groups`` is anything ``CollectiveDeviceList`` accepts; only whole axes are tried.

        >>> Mesh({"data": 2, "model": 4}).axes_for([[0, 4], [1, 5], [2, 6], [3, 7]])
        ('data',)
        """
        device_list = (
            groups if isinstance(groups, CollectiveDeviceList) else CollectiveDeviceList(groups)
        )
        if not device_list.is_uniform or 0 in (
            device_list.num_replica_groups,
            device_list.num_devices_per_group,
        ):
            return None
        array = device_list.to_array()
        return axes_of_groups(self._devices, self._names, array, self.positions_of(array[0]))

    def group_array(self, over: object) -> np.ndarray:
        """Device ids of the groups of a collective over ``over``, shape ``[groups, size]``
        (``axis_groups`` on this mesh)."""
        return axis_groups(self._devices, self._names, over)

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
        return reindexed_axes(self._names, self._sizes, axes)


# The former name of ``Mesh``, when the device-list views lived on a subclass: kept for one
# release.
MeshGrid = Mesh


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
            f"{quote(a.name)}:({a.pre_size}){a.size}" if isinstance(a, SubAxis) else quote(a)
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


# The forms a list holds (``CollectiveDeviceList.__init__``).
_FORMS = (IotaReplicaGroupList, MeshAxesReplicaGroupList, ExplicitArrays, WrittenGroups)


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


# The one form a device list holds, chosen at construction.
_Form = IotaReplicaGroupList | MeshAxesReplicaGroupList | ExplicitArrays | WrittenGroups
