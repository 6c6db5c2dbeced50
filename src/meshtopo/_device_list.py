"""``CollectiveDeviceList``: a collective's replica groups in any of XLA's three encodings.

The list holds explicit groups (``{{0,1},{2,3}}``), an iota list (``[2,2]<=[4]``) or mesh axes
(``mesh['x'=2,'y'=2] {'y'}``). The explicit groups of a compact form are expanded on first use
and cached; equality and hashing compare the expanded groups, so the same groups in two
encodings are equal, as in XLA.

A device list is a frozen value: one immutable form is chosen and validated at construction
(an iota list, a mesh-axes list, the explicit ids and group sizes as read-only arrays, or
explicit groups as written in a text a reader already checked), nothing can be assigned to
it, and it is hashable.

>>> d = CollectiveDeviceList.parse("{{0,4},{1,5},{2,6},{3,7}}")
>>> d.compact()
CollectiveDeviceList('[4,2]<=[2,4]T(1,0)')
>>> d == CollectiveDeviceList.parse("mesh['data'=2,'model'=4] {'data'}")
True
>>> CollectiveDeviceList.parse("[2,10]<=[4,5]T(1,0)").to_text(full=True)
'{{0,5,10,15,1,6,11,16,2,7},{12,17,3,8,13,18,4,9,14,19}}'
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ._checks import is_int
from ._errors import InvalidArgumentError
from ._iota import IotaReplicaGroupList, find_iota, read_iota
from ._limits import check_size
from ._mesh_grid import MeshAxesReplicaGroupList, read_mesh_axes
from ._text import Scanner

if TYPE_CHECKING:  # numpy.typing costs start-up time; annotations only
    from numpy.typing import ArrayLike

# An explicit list of int lists with numbers of at most 18 digits (so they fit in int64).
_GROUP = r"\{\s*(?:-?[0-9]{1,18}\s*(?:,\s*-?[0-9]{1,18}\s*)*)?\}"
_EXPLICIT = re.compile(rf"\{{\s*(?:{_GROUP}\s*(?:,\s*{_GROUP}\s*)*)?\}}\s*\Z")
_GROUP_BODY = re.compile(r"\{([^{}]*)\}")
_DIGITS = re.compile(r"[0-9]+")


# (all ids concatenated, each group's size) from explicit groups written in ``text[start:stop]``.
Converter = Callable[[str, int, int], "tuple[np.ndarray, np.ndarray]"]


class _Arrays(NamedTuple):
    """Explicit groups: all ids concatenated and each group's size (read-only int64)."""

    flat: np.ndarray
    sizes: np.ndarray


class _Written(NamedTuple):
    """Explicit groups as written in ``text[start:stop]``, already checked well formed by a
    reader, that ``convert(text, start, stop)`` turns into ``_Arrays``' two arrays."""

    text: str
    start: int
    stop: int
    convert: Converter


_Form = IotaReplicaGroupList | MeshAxesReplicaGroupList | _Arrays | _Written


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
        if isinstance(groups, CollectiveDeviceList):
            form = groups._form
            expanded = groups._expanded_once
        else:
            expanded = None
            if isinstance(groups, IotaReplicaGroupList | MeshAxesReplicaGroupList | _Arrays
                          | _Written):
                form = groups
            else:
                form = _Arrays(*_explicit_arrays(groups))
        object.__setattr__(self, "_form", form)
        object.__setattr__(self, "_expanded_once", expanded)

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
        stripped = text.strip()
        if stripped.startswith("{") and _EXPLICIT.match(stripped):
            return cls._from_explicit_text(stripped)
        scanner = Scanner(text, "replica groups", line, column)
        if scanner.peek("{"):
            result = cls(_read_explicit(scanner))
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
    def _from_explicit_text(cls, text: str) -> CollectiveDeviceList:
        """Fast path for well-formed explicit text: one regex check, then numpy conversion."""
        bodies = _GROUP_BODY.findall(text[1:-1] if text.endswith("}") else text)
        sizes = np.fromiter(
            (body.count(",") + 1 if _DIGITS.search(body) else 0 for body in bodies),
            dtype=np.int64,
            count=len(bodies),
        )
        total = check_size(int(sizes.sum()), "the replica groups")
        joined = ",".join(body for body, size in zip(bodies, sizes, strict=True) if size)
        flat = np.array(joined.split(","), dtype=np.int64) if total else np.empty(0, np.int64)
        return cls(_Arrays(_read_only(flat), _read_only(sizes)))

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
        return cls(_Arrays(_read_only_copy(flat), _read_only_copy(sizes)))

    @classmethod
    def from_written(cls, text: str, start: int, stop: int,
                     convert: Converter) -> CollectiveDeviceList:
        """Explicit groups as written in ``text[start:stop]``, text a reader has checked to be
        well formed, that ``convert(text, start, stop)`` (a pure function) turns into (all
        ids concatenated, each group's size) on first use: converting it costs nothing until
        the ids are asked for."""
        return cls(_Written(text, start, stop, convert))

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
        if isinstance(form, _Arrays):
            return form
        found = self._expanded_once
        if found is None:
            found = self._expand(form)
            object.__setattr__(self, "_expanded_once", found)
        return found

    def _expand(self, form: IotaReplicaGroupList | MeshAxesReplicaGroupList | _Written
                ) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(form, _Written):
            flat, sizes = form.convert(form.text, form.start, form.stop)
            return _read_only(flat), _read_only(sizes)
        check_size(form.num_replica_groups * form.num_devices_per_group,
                   f"the replica groups {self}")
        flat = np.ascontiguousarray(form.to_array()).reshape(-1)
        sizes = np.full(form.num_replica_groups, form.num_devices_per_group, dtype=np.int64)
        return _read_only(flat), _read_only(sizes)

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


def _read_only(array: np.ndarray) -> np.ndarray:
    """``array`` (made here, shared with no caller) marked read-only."""
    array.setflags(write=False)
    return array


def _read_only_copy(array: np.ndarray) -> np.ndarray:
    """``array`` when already read-only, else a read-only copy (a caller's array stays
    writable and cannot change the list)."""
    return array if not array.flags.writeable else _read_only(array.copy())


def _explicit_arrays(groups: object) -> tuple[np.ndarray, np.ndarray]:
    """(flat ids, sizes) from a list of int lists or a 2-D int array, validated."""
    if isinstance(groups, np.ndarray):
        if groups.ndim != 2 or not np.issubdtype(groups.dtype, np.integer):
            raise InvalidArgumentError(
                f"replica groups as an array must be 2-D ints, got shape {list(groups.shape)} "
                f"of {groups.dtype}"
            )
        check_size(int(groups.size), "the replica groups")
        flat = _read_only(groups.astype(np.int64).reshape(-1))  # astype copies
        return flat, _read_only(np.full(groups.shape[0], groups.shape[1], dtype=np.int64))
    if isinstance(groups, str | bytes) or not hasattr(groups, "__iter__"):
        raise InvalidArgumentError(
            f"replica groups must be a list of int lists, got {groups!r}; "
            "use CollectiveDeviceList.parse for text"
        )
    parts: list[list[object] | tuple[object, ...]] = []
    for group in groups:  # type: ignore[attr-defined,unused-ignore]
        if isinstance(group, str | bytes) or not hasattr(group, "__iter__"):
            raise InvalidArgumentError(f"each replica group must be a list of ints, got {group!r}")
        parts.append(group if isinstance(group, list | tuple) else list(group))
    sizes = [len(ids) for ids in parts]
    total = check_size(sum(sizes), "the replica groups")
    # One pass over the element types (in C), not an isinstance per id.
    if not all(kind is int or (kind is not bool and issubclass(kind, np.integer))
               for kind in set(map(type, itertools.chain.from_iterable(parts)))):
        for ids in parts:
            for value in ids:
                if not is_int(value):
                    raise InvalidArgumentError(
                        f"replica group {list(ids)!r} must hold ints, got {value!r}")
    try:
        flat = np.fromiter(itertools.chain.from_iterable(parts), dtype=np.int64, count=total)
    except OverflowError:
        raise InvalidArgumentError(f"replica group ids must fit in int64, got {groups!r}") from None
    return _read_only(flat), _read_only(np.array(sizes, dtype=np.int64))


def _read_explicit(scanner: Scanner) -> list[list[int]]:
    """Read ``{{a,b},{c}}`` with exact error positions (the slow path for unusual text)."""
    scanner.expect("{")
    groups: list[list[int]] = []
    total = 0
    if scanner.accept("}"):
        return groups
    while True:
        if not scanner.peek("{"):
            raise scanner.error(
                f"expected '{{' to start a replica group but found {scanner.describe_next()}"
            )
        groups.append(scanner.integer_list("{", "}"))
        total += len(groups[-1])
        check_size(total, "the replica groups")
        if scanner.accept("}"):
            return groups
        scanner.expect(",")
