"""XLA's compact device arrays: ``IotaTileAssignment`` and ``IotaReplicaGroupList``.

An iota tile assignment with tile ``dims``, ``reshape_dims`` and ``transpose_perm`` stands for
``arange(N).reshape(reshape_dims).transpose(transpose_perm).reshape(dims)``. Its reshape dims
and permutation are canonicalised on creation exactly as XLA's ``IotaTileAssignment::Create``
does (size-1 dims dropped, runs of consecutive axes merged); the tile dims are kept verbatim.

>>> t = IotaTileAssignment([4, 2], reshape_dims=[2, 4], transpose_perm=[1, 0])
>>> str(t), t.value_at([1, 0])
('[4,2]<=[2,4]T(1,0)', 1)
>>> t.to_array().tolist()
[[0, 4], [1, 5], [2, 6], [3, 7]]
>>> str(IotaTileAssignment([60], [3, 4, 5], [1, 2, 0]))
'[60]<=[3,20]T(1,0)'
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .._checks import as_int, is_int
from .._errors import InvalidArgumentError
from .._limits import checked_product
from ._text import Scanner

if TYPE_CHECKING:  # numpy.typing costs start-up time; annotations only
    from numpy.typing import ArrayLike

_NAME_CHAR = re.compile(r"[A-Za-z0-9_.\-]")  # a 'T' followed by one is a longer word


def as_int_tuple(values: object, what: str) -> tuple[int, ...]:
    """``values`` as a tuple of Python ints; anything that is not a sequence of ints is refused."""
    if isinstance(values, str | bytes) or not hasattr(values, "__iter__"):
        raise InvalidArgumentError(f"{what} must be a sequence of ints, got {values!r}")
    result = []
    for value in values:  # type: ignore[attr-defined,unused-ignore]
        if not is_int(value):
            raise InvalidArgumentError(f"{what} must be a sequence of ints, got {values!r}")
        result.append(int(value))
    return tuple(result)


def check_permutation(perm: Sequence[int], size: int, what: str) -> None:
    """Raise unless ``perm`` is a permutation of ``range(size)``."""
    if len(perm) != size:
        raise InvalidArgumentError(
            f"{what} {list(perm)} has {len(perm)} entries but must have {size} "
            "(one per reshape dim)"
        )
    if sorted(perm) != list(range(size)):
        raise InvalidArgumentError(f"{what} {list(perm)} is not a permutation of 0..{size - 1}")


def canonicalize(
    reshape_dims: Sequence[int], perm: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """XLA's ``CanonicalizeIotaDims``: drop size-1 reshape dims and merge runs of axes.

    The result stands for the same array. A list with everything dropped becomes ``[1]``/``[0]``.

    >>> canonicalize([1, 3, 1, 4, 1, 5], [4, 3, 2, 5, 1, 0])
    ((3, 20), (1, 0))
    """
    dims, order = list(reshape_dims), list(perm)
    if len(dims) <= 1:
        return tuple(dims), tuple(order)
    while True:
        kept = [i for i, size in enumerate(dims) if size != 1]
        if len(kept) != len(dims):
            renumber = {old: new for new, old in enumerate(kept)}
            order = [renumber[axis] for axis in order if axis in renumber]
            dims = [dims[i] for i in kept]
        changed = False
        base = 0
        for i in range(1, len(dims)):
            if order[base] + (i - base) == order[i]:
                dims[order[base]] *= dims[order[i]]
                dims[order[i]] = 1
                changed = True
            else:
                base = i
        if not changed:
            break
    if not dims:
        return (1,), (0,)
    return tuple(dims), tuple(order)


class IotaTileAssignment:
    """A device array stored as an iota reshaped, transposed and reshaped to ``dims``.

    Immutable and hashable. Equality compares ``dims`` and the canonical reshape dims and
    permutation, as XLA does. Without ``reshape_dims`` the array is the plain iota
    (``reshape_dims=[prod(dims)]``, not canonicalised, as XLA's one-argument ``Create``).
    """

    __slots__ = ("_dims", "_perm", "_reshape")

    def __init__(
        self,
        dims: Sequence[int],
        reshape_dims: Sequence[int] | None = None,
        transpose_perm: Sequence[int] | None = None,
    ) -> None:
        self._dims = as_int_tuple(dims, "tile dims")
        if not self._dims:
            raise InvalidArgumentError("tile dims must have at least one dim, got []")
        if any(size < 0 for size in self._dims):
            raise InvalidArgumentError(f"tile dims {list(self._dims)} must not be negative")
        count = checked_product(self._dims, f"the tile {list(self._dims)}")
        if reshape_dims is None:
            if transpose_perm is not None:
                raise InvalidArgumentError("transpose_perm needs reshape_dims")
            self._reshape: tuple[int, ...] = (count,)
            self._perm: tuple[int, ...] = (0,)
            return
        reshape = as_int_tuple(reshape_dims, "reshape dims")
        if not reshape:
            raise InvalidArgumentError("reshape dims must not be empty")
        if any(size < 0 for size in reshape):
            raise InvalidArgumentError(f"reshape dims {list(reshape)} must not be negative")
        if transpose_perm is None:
            perm = tuple(range(len(reshape)))
        else:
            perm = as_int_tuple(transpose_perm, "transpose perm")
            check_permutation(perm, len(reshape), "transpose perm")
        if math.prod(reshape) != count:
            raise InvalidArgumentError(
                f"reshape dims {list(reshape)} hold {math.prod(reshape)} elements but the "
                f"tile {list(self._dims)} holds {count}"
            )
        self._reshape, self._perm = canonicalize(reshape, perm)

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, name):
            raise AttributeError(f"IotaTileAssignment is immutable; cannot set {name}")
        object.__setattr__(self, name, value)

    @property
    def dims(self) -> tuple[int, ...]:
        """The tile shape, kept exactly as given."""
        return self._dims

    @property
    def reshape_dims(self) -> tuple[int, ...]:
        """The canonical reshape dims."""
        return self._reshape

    @property
    def transpose_perm(self) -> tuple[int, ...]:
        """The canonical transpose permutation (same length as ``reshape_dims``)."""
        return self._perm

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IotaTileAssignment):
            return NotImplemented
        return (self._dims, self._reshape, self._perm) == (other._dims, other._reshape, other._perm)

    def __hash__(self) -> int:
        return hash((self._dims, self._reshape, self._perm))

    @classmethod
    def parse(cls, text: str) -> IotaTileAssignment:
        """Read XLA's text ``[d0,d1]<=[r0,r1]T(p0,p1)`` (an optional ``devices=`` prefix is allowed)."""
        scanner = Scanner(text, "iota tile assignment")
        scanner.accept("devices=")
        tile = read_iota(scanner)
        scanner.finish()
        return tile

    @property
    def num_elements(self) -> int:
        """The number of devices in the tile, ``prod(dims)``."""
        return math.prod(self.dims)

    @property
    def ndims(self) -> int:
        """The number of tile dims."""
        return len(self.dims)

    def __str__(self) -> str:
        return "[" + ",".join(map(str, self.dims)) + "]<=" + self.array_to_string()

    def __repr__(self) -> str:
        return f"IotaTileAssignment.parse({str(self)!r})"

    def array_to_string(self) -> str:
        """XLA's ``ArrayToString``: the part after ``<=``, ``T(...)`` only with several dims."""
        text = "[" + ",".join(map(str, self._reshape)) + "]"
        if len(self._reshape) > 1:
            text += "T(" + ",".join(map(str, self._perm)) + ")"
        return text

    def value_at(self, index: Sequence[int]) -> int:
        """The device at tile coordinate ``index``, by XLA's three-step arithmetic.

        Linearise ``index`` row-major over ``dims``, peel coordinates off the reshape dims in
        reverse permutation order, and linearise those row-major over ``reshape_dims``.
        """
        index = as_int_tuple(index, "tile index")
        if len(index) != len(self.dims) or any(
            not 0 <= i < size for i, size in zip(index, self.dims, strict=True)
        ):
            raise InvalidArgumentError(
                f"tile index {list(index)} is outside the tile dims {list(self.dims)}"
            )
        linear = 0
        for i, size in zip(index, self.dims, strict=True):
            linear = linear * size + i
        coords = [0] * len(self._reshape)
        for axis in reversed(self._perm):
            linear, coords[axis] = divmod(linear, self._reshape[axis])
        value = 0
        for coord, size in zip(coords, self._reshape, strict=True):
            value = value * size + coord
        return value

    def to_array(self) -> np.ndarray:
        """The materialised int64 array of shape ``dims`` (a fresh, writable, C-ordered copy)."""
        return iota_values(self._reshape, self._perm).reshape(self.dims)

    def _reshape_in_perm_order(self) -> tuple[int, ...]:
        return tuple(self._reshape[axis] for axis in self._perm)

    def linear_index_of(self, values: ArrayLike) -> np.ndarray:
        """For device ids ``values``, their row-major positions in the tile (inverse of value_at).

        Pure stride arithmetic, O(number of reshape dims) per value; nothing is expanded.
        """
        ids = np.asarray(values, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.num_elements):
            bad = ids[(ids < 0) | (ids >= self.num_elements)].flat[0]
            raise InvalidArgumentError(
                f"device {int(bad)} is not in the tile {self} (ids run 0..{self.num_elements - 1})"
            )
        coords = np.unravel_index(ids, self._reshape)
        return np.ravel_multi_index(
            tuple(coords[axis] for axis in self._perm), self._reshape_in_perm_order()
        ).astype(np.int64)

    def transpose(self, perm: Sequence[int]) -> IotaTileAssignment | None:
        """The tile transposed by ``perm`` as an iota, or None where none exists: XLA's
        ``IotaTileAssignment::Transpose`` (an ``std::optional``). Where it gives none, XLA
        falls back to the explicit array, ``self.to_array().transpose(perm)``.

        >>> str(IotaTileAssignment([4, 2], [2, 4], [1, 0]).transpose([1, 0]))
        '[2,4]<=[8]'
        >>> IotaTileAssignment([2, 3], [2, 3], [1, 0]).transpose([1, 0]) is None
        True
        """
        perm = as_int_tuple(perm, "transpose perm")
        check_permutation(perm, len(self.dims), "transpose perm")
        return _transpose_iota(self, perm)


def iota_values(reshape_dims: Sequence[int], perm: Sequence[int]) -> np.ndarray:
    """``arange(N).reshape(reshape_dims).transpose(perm)`` flattened, as a fresh int64 array.

    Each value is a sum of per-axis terms ``coordinate * stride``; adding the terms axis by axis
    in the transposed order writes every element once, in memory order, instead of copying a
    strided transpose.

    >>> iota_values([2, 4], [1, 0]).tolist()
    [0, 4, 1, 5, 2, 6, 3, 7]
    """
    if len(reshape_dims) == 1:
        return np.arange(reshape_dims[0], dtype=np.int64)
    strides = [math.prod(reshape_dims[axis + 1 :]) for axis in range(len(reshape_dims))]
    terms = [np.arange(reshape_dims[axis], dtype=np.int64) * strides[axis] for axis in perm]
    flat = terms[-1]
    for term in reversed(terms[:-1]):
        flat = np.add.outer(term, flat).reshape(-1)
    return flat


def read_iota(scanner: Scanner, tile_rank: int | None = None) -> IotaTileAssignment:
    """Read ``[dims]<=[reshape]`` with ``T(perm)`` required when there are several reshape dims.

    ``tile_rank`` (if given) is the number of tile dims the context requires.
    """
    start = scanner.pos
    dims = scanner.integer_list("[", "]", minimum=0)
    if tile_rank is not None and len(dims) != tile_rank:
        raise scanner.error(f"expected {tile_rank} tile dims but found {len(dims)} ({dims})", start)
    checked_product(dims, f"the tile {dims}")
    scanner.expect("<=")
    reshape_start = scanner.pos
    reshape, perm = read_iota_array(scanner)
    try:
        return IotaTileAssignment(tuple(dims), tuple(reshape), tuple(perm))
    except InvalidArgumentError as error:
        raise scanner.error(str(error), reshape_start) from None


def read_iota_array(scanner: Scanner) -> tuple[list[int], list[int]]:
    """Read the array part ``[reshape]`` or ``[reshape]T(perm)``; ``T`` is required past one dim."""
    reshape_start = scanner.pos
    reshape = scanner.integer_list("[", "]", minimum=0)
    if not reshape:
        raise scanner.error("reshape dims must not be empty", reshape_start)
    if len(reshape) == 1:
        return reshape, [0]
    if not scanner.peek("T") or _NAME_CHAR.match(scanner.text, scanner.pos + 1):
        raise scanner.error("expected 'T(' to start the iota transpose perm")
    scanner.expect("T")  # a token of its own: white space may follow
    perm_start = scanner.pos
    perm = scanner.integer_list("(", ")", minimum=0)
    for value in perm:
        if value >= len(reshape):
            raise scanner.error(f"out of range iota transpose perm value {value}", perm_start)
    return reshape, perm


def _prime_factors(size: int) -> list[int]:
    """XLA's decanonicalisation order: all 2s, then odd factors ascending, leftover prime last."""
    factors = []
    while size % 2 == 0 and size > 0:
        factors.append(2)
        size //= 2
    odd = 3
    while odd * odd <= size:
        while size % odd == 0:
            factors.append(odd)
            size //= odd
        odd += 2
    if size > 1:
        factors.append(size)
    return factors


def _transpose_iota(tile: IotaTileAssignment, perm: tuple[int, ...]) -> IotaTileAssignment | None:
    """XLA's ``IotaTileAssignment::Transpose``: the iota form of the transposed tile, or None."""
    dims, reshape, old_perm = tile.dims, tile.reshape_dims, tile.transpose_perm
    kind = _transpose_kind(dims, perm)
    if kind == "noop":
        return tile
    new_dims = tuple(dims[axis] for axis in perm)
    if kind == "reshape":
        return IotaTileAssignment(new_dims, reshape, old_perm)
    if len(reshape) == 1:
        return IotaTileAssignment(new_dims, dims, perm)
    non_one = [size for size in dims if size != 1]
    one_to_non_one, position = [], 0
    for size in dims:
        one_to_non_one.append(position if size != 1 else -1)
        position += size != 1
    pure = len(non_one) == len(reshape) and all(
        reshape[old_perm[i]] == size for i, size in enumerate(non_one)
    )
    if pure:
        new_perm = [old_perm[one_to_non_one[axis]] for axis in perm if dims[axis] != 1]
        return IotaTileAssignment(new_dims, reshape, new_perm)
    return _regroup_transpose(tile, perm, new_dims, non_one, one_to_non_one)


def _transpose_kind(dims: tuple[int, ...], perm: tuple[int, ...]) -> str:
    """XLA's ``GetTransposeKind``: "noop", "reshape" (only size-1 dims move) or "transpose"."""
    kind = "noop"
    previous = -1
    for i, axis in enumerate(perm):
        if dims[axis] == 1:
            if axis != i and dims[i] != 1:
                kind = "reshape"
            continue
        if axis <= previous:
            return "transpose"
        previous = axis
    return kind


def _regroup_transpose(
    tile: IotaTileAssignment,
    perm: tuple[int, ...],
    new_dims: tuple[int, ...],
    non_one: list[int],
    one_to_non_one: list[int],
) -> IotaTileAssignment | None:
    """Split reshape dims into prime factors and regroup them under the tile dims (XLA's path)."""
    factors: list[int] = []
    first_factor = [0]
    for size in tile.reshape_dims:
        factors.extend(_prime_factors(size))
        first_factor.append(len(factors))
    factor_perm: list[int] = []
    origin: list[int] = []
    positions_of: list[list[int]] = [[] for _ in tile.reshape_dims]
    for old_axis in tile.transpose_perm:
        for factor in range(first_factor[old_axis], first_factor[old_axis + 1]):
            factor_perm.append(factor)
            origin.append(old_axis)
            positions_of[old_axis].append(len(factor_perm) - 1)

    def candidate(target: int, index: int) -> int | None:
        factor = factor_perm[index]
        if target % factors[factor] == 0:
            return factor
        for later in positions_of[origin[index]]:
            if later > index and target % factors[factor_perm[later]] == 0:
                other = factor_perm[later]
                factors[factor], factors[other] = factors[other], factors[factor]
                return factor
        return None

    groups: list[list[int]] = [[] for _ in non_one]
    index = 0
    for i, target in enumerate(non_one):
        if index >= len(factor_perm):
            break
        found = candidate(target, index)
        while found is not None:
            target //= factors[found]
            groups[i].append(found)
            index += 1
            if index >= len(factor_perm):
                break
            found = candidate(target, index)
        if target != 1:
            return None
    flat_perm = [
        f for axis in perm if one_to_non_one[axis] >= 0 for f in groups[one_to_non_one[axis]]
    ]
    if len(flat_perm) != len(factor_perm):
        return None
    return IotaTileAssignment(new_dims, factors, flat_perm)


class IotaReplicaGroupList:
    """``num_replica_groups`` groups of ``num_devices_per_group`` ids, stored as an iota tile.

    The groups are the rows of ``arange(N).reshape(reshape_dims).transpose(transpose_perm)
    .reshape(G, S)``. Without ``reshape_dims`` the groups are consecutive runs of the iota.
    Immutable; equal when (G, S, canonical reshape dims, canonical perm) are equal.

    >>> g = IotaReplicaGroupList(4, 2, reshape_dims=[2, 4], transpose_perm=[1, 0])
    >>> str(g), g.to_array().tolist()
    ('[4,2]<=[2,4]T(1,0)', [[0, 4], [1, 5], [2, 6], [3, 7]])
    """

    __slots__ = ("_tile",)

    def __init__(
        self,
        num_replica_groups: int,
        num_devices_per_group: int,
        reshape_dims: Sequence[int] | None = None,
        transpose_perm: Sequence[int] | None = None,
    ) -> None:
        groups = as_int(num_replica_groups, "num_replica_groups", minimum=0)
        size = as_int(num_devices_per_group, "num_devices_per_group", minimum=0)
        self._tile = IotaTileAssignment((groups, size), reshape_dims, transpose_perm)

    @property
    def tile(self) -> IotaTileAssignment:
        """The tile assignment of shape ``[num_replica_groups, num_devices_per_group]``."""
        return self._tile

    @property
    def num_replica_groups(self) -> int:
        """G, the number of groups."""
        return self._tile.dims[0]

    @property
    def num_devices_per_group(self) -> int:
        """S, the size of every group."""
        return self._tile.dims[1]

    @property
    def reshape_dims(self) -> tuple[int, ...]:
        """The canonical reshape dims."""
        return self._tile.reshape_dims

    @property
    def transpose_perm(self) -> tuple[int, ...]:
        """The canonical transpose permutation."""
        return self._tile.transpose_perm

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, IotaReplicaGroupList):
            return NotImplemented
        return self._tile == other._tile

    def __hash__(self) -> int:
        return hash(self._tile)

    @classmethod
    def from_tile(cls, tile: IotaTileAssignment) -> IotaReplicaGroupList:
        """The group list whose ``[G, S]`` tile is ``tile`` (which must have two dims)."""
        if tile.ndims != 2:
            raise InvalidArgumentError(f"a replica group tile needs 2 dims [G,S], got {tile}")
        return cls(tile.dims[0], tile.dims[1], tile.reshape_dims, tile.transpose_perm)

    @classmethod
    def parse(cls, text: str) -> IotaReplicaGroupList:
        """Read XLA's text ``[G,S]<=[r0,r1]T(p0,p1)``."""
        scanner = Scanner(text, "iota replica groups")
        groups = cls.from_tile(read_iota(scanner, tile_rank=2))
        scanner.finish()
        return groups

    @property
    def num_devices(self) -> int:
        """The number of ids across all groups, ``G * S``."""
        return self.num_replica_groups * self.num_devices_per_group

    def __str__(self) -> str:
        return str(self.tile)

    def __repr__(self) -> str:
        return f"IotaReplicaGroupList.parse({str(self)!r})"

    def to_array(self) -> np.ndarray:
        """The groups as an int64 array of shape ``[G, S]``."""
        return self.tile.to_array()

    def flattened_replica_groups(self) -> np.ndarray:
        """All groups concatenated, group-major and rank-minor (1-D int64)."""
        return self.to_array().reshape(-1)

    def group_of(self, device_ids: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(group index, rank in group) of each id, by stride arithmetic without expanding."""
        linear = self.tile.linear_index_of(device_ids)
        size = max(self.num_devices_per_group, 1)
        return linear // size, linear % size


def find_iota(flat: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """The canonical ``(reshape_dims, transpose_perm)`` whose iota transpose is ``flat``, or None.

    ``flat`` is read as a walk over positional axes (major to minor) with constant strides; the
    axes are found from the minor end, each the longest arithmetic run of block starts. The
    blocks grow at least twofold, so finding them is linear in ``len(flat)`` (no search over
    permutations). The strides must be the row-major strides of some reshape dims, which gives
    the permutation, and one comparison with that iota's values confirms the whole array.

    >>> find_iota(np.array([0, 4, 1, 5, 2, 6, 3, 7]))
    ((2, 4), (1, 0))
    >>> find_iota(np.array([0, 2, 1, 3, 5, 4])) is None
    True
    """
    values = np.asarray(flat, dtype=np.int64).reshape(-1)
    count = values.size
    if count == 0:
        return None
    if values[0] != 0:
        return None
    sizes: list[int] = []  # positional axes, minor first
    strides: list[int] = []
    block = 1
    while block < count:
        heads = values[::block]
        stride = int(heads[1])
        if stride <= 0:
            return None
        length = _run_length(heads, stride)
        if length < 2 or (count // block) % length:  # a run must end on an axis boundary
            return None
        sizes.append(length)
        strides.append(stride)
        block *= length
    by_stride = sorted(range(len(sizes)), key=lambda axis: strides[axis])
    expected_stride = 1
    for axis in by_stride:
        if strides[axis] != expected_stride:
            return None
        expected_stride *= sizes[axis]
    # Reshape dims run major to minor, i.e. by descending stride; positional axes likewise.
    reshape_axes = by_stride[::-1]
    reshape_dims = [sizes[axis] for axis in reshape_axes]
    position_of = {axis: index for index, axis in enumerate(reshape_axes)}
    perm = [position_of[axis] for axis in reversed(range(len(sizes)))]
    if not reshape_dims:
        return (1,), (0,)
    if not np.array_equal(iota_values(reshape_dims, perm), values):
        return None
    return canonicalize(reshape_dims, perm)


def _run_length(heads: np.ndarray, stride: int) -> int:
    """How many of ``heads`` from the start equal ``k * stride``, checked in doubling spans so
    that a short run costs little and a long one linear time."""
    checked, span = 1, 64
    while checked < heads.size:
        end = min(heads.size, checked + span)
        bad = np.flatnonzero(heads[checked:end] != np.arange(checked, end, dtype=np.int64) * stride)
        if bad.size:
            return checked + int(bad[0])
        checked, span = end, span * 2
    return int(heads.size)
