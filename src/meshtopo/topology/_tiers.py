"""Which parts of a cluster each device group spans, from the real device order.

For every group (devices in rank order, as XLA runs them): how many hosts and domains it
touches, the most members it has on one host, the slowest tier it crosses, and on a TPU torus
the number of torus axes it varies along and the largest hop count between ring neighbours
(rank i and i+1, the last rank back to the first), with the slice's wraparound and without.
All of it is numpy over the whole group list. Uniform groups of up to 16 ranks are laid out
``[rank, group]`` so that every step is a pass over long rows: one gather per device property,
host ids sorted per group by a sorting network of row-wise min/max (skipped when already in
order), run lengths row by row; wider groups keep ``[group, rank]``, each group's host ids
one contiguous row sorted by ``np.sort``; ragged lists go through one lexsort and
``reduceat``. ``GroupTiers.distinct`` gives the few kinds of group a collective has, which the
cost models price once each.

>>> from meshtopo.topology import preset
>>> t = group_tiers(preset("h100-8x", hosts=2), [[0, 1, 2, 3], [4, 12, 5, 13]])
>>> [str(x) for x in t.tier_values], t.hosts.tolist(), t.max_per_host.tolist()
(['host', 'network'], [1, 2], [4, 2])
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import InvalidArgumentError
from .._limits import check_size
from ..groups._device_list import CollectiveDeviceList, Mesh
from ..groups._modes import CollectiveOpGroupMode
from ..groups._placement import DeviceAssignment, device_group_arrays
from ._cluster import Cluster, Tier


@dataclass(frozen=True, eq=False)
class GroupTiers:
    """Per group (arrays of length ``num_groups``): ``sizes``, ``tier`` (``Tier`` values as
    int8), ``hosts`` and ``domains`` touched, ``max_per_host`` (most members on one host),
    ``network_sharers`` (the most devices, over the group's hosts, that use the network at
    once when every group of the collective runs together; 0 below the network tier), and
    on a torus ``axes`` (how many axes the group varies along), ``axis_bits`` (bit d set when
    it varies along axis d), ``ring_hops`` and
    ``ring_hops_no_wrap`` (largest hop count between ring neighbours; -1 across slices).
    Without a torus the last four are None."""

    sizes: np.ndarray
    tier: np.ndarray
    hosts: np.ndarray
    domains: np.ndarray
    max_per_host: np.ndarray
    network_sharers: np.ndarray
    axes: np.ndarray | None
    axis_bits: np.ndarray | None
    ring_hops: np.ndarray | None
    ring_hops_no_wrap: np.ndarray | None

    @property
    def num_groups(self) -> int:
        """How many groups."""
        return int(self.sizes.size)

    @property
    def tier_values(self) -> list[Tier]:
        """``tier`` as ``Tier`` members."""
        return [Tier(int(t)) for t in self.tier]

    @property
    def slowest(self) -> Tier:
        """The slowest tier any group crosses (``DEVICE`` for no groups)."""
        return Tier(int(self.tier.max())) if self.tier.size else Tier.DEVICE

    @functools.cached_property
    def distinct(self) -> tuple[GroupTiers, np.ndarray]:
        """The distinct groups as every field describes them: a ``GroupTiers`` of one row per
        distinct combination of the per-group values (in no particular order), and each
        group's row in it (``distinct[0].hosts[distinct[1]]`` is ``hosts``, and so on). The
        cost models are evaluated once per row; a mesh axis usually has one."""
        fields = [getattr(self, name) for name in _FIELDS]
        keys: list[np.ndarray] = []  # tier follows from sizes, hosts and domains, axes from axis_bits
        for name, field in zip(_FIELDS, fields, strict=True):
            if field is not None and name not in ("tier", "axes") and all(field is not k for k in keys):
                keys.append(field)
        first, rows = _distinct_rows(keys)
        if first.size == self.num_groups:
            return self, np.arange(self.num_groups)
        unique = _tiers_of([None if field is None else field[first] for field in fields])
        unique.__dict__["distinct"] = (unique, np.arange(first.size))  # its rows are distinct
        return unique, rows

    @functools.cached_property
    def network_shapes(self) -> tuple[np.ndarray, np.ndarray]:
        """What a network cost model sees of each group: the distinct rows (ranks, nodes,
        ranks per node, NIC share) -- a node is a domain when the group crosses the network,
        else the whole group is one node, and the share is ``max_per_host /
        network_sharers`` (1 off the network) -- as float64 ``[distinct, 4]``, and each
        group's row index. Found among the ``distinct`` groups, the share keyed by its
        fraction in lowest terms (equal shares, equal fractions)."""
        unique, rows = self.distinct
        n = unique.sizes
        crossing = unique.tier == Tier.NETWORK
        nodes = np.where(crossing, unique.domains, 1)
        per_node = -(-n // np.maximum(nodes, 1))
        members = np.where(crossing, np.maximum(unique.max_per_host, 1), 1)
        sharers = np.where(crossing, np.maximum(unique.network_sharers, 1), 1)
        common = np.gcd(members, sharers)
        first, shape = _distinct_rows([n, nodes, per_node, members // common, sharers // common])
        keys = np.stack([n, nodes, per_node, members / sharers], axis=1).astype(np.float64)
        return keys[first], shape[rows]


def concatenate_tiers(parts: list[GroupTiers]) -> GroupTiers:
    """The groups of every ``GroupTiers`` in ``parts`` (all on one cluster), in order."""
    if len(parts) == 1:
        return parts[0]
    fields = [[getattr(part, name) for part in parts] for name in _FIELDS]
    return _tiers_of([None if arrays[0] is None else np.concatenate(arrays) for arrays in fields])


_FIELDS = ("sizes", "tier", "hosts", "domains", "max_per_host", "network_sharers", "axes",
           "axis_bits", "ring_hops", "ring_hops_no_wrap")  # fmt: skip

_CODE_LIMIT = 1 << 62


def _tiers_of(values: list[np.ndarray | None]) -> GroupTiers:
    """A ``GroupTiers`` of its fields' arrays in ``_FIELDS`` order."""
    fields: dict[str, Any] = dict(zip(_FIELDS, values, strict=True))
    return GroupTiers(**fields)


def _distinct_rows(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(one index per distinct row, each row's distinct row) of equal-length int ``columns``.
    Each varying column is folded into one int64 code as a mixed-radix digit (its value
    less its minimum); the codes are then numbered densely by a presence table when they
    span little more than the rows, else by ``np.unique``."""
    count = columns[0].size
    if count == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    code = np.zeros(count, dtype=np.int64)
    span = 1
    for column in columns:
        low, high = int(column.min()), int(column.max())
        if low == high:
            continue
        width = high - low + 1
        if span * width >= _CODE_LIMIT:  # number the codes so far densely first
            code = np.unique(code, return_inverse=True)[1].reshape(-1)
            span = int(code.max()) + 1
        code *= width
        code += np.subtract(column, low, dtype=np.int64)
        span *= width
    if span == 1:
        return np.zeros(min(count, 1), dtype=np.int64), np.zeros(count, dtype=np.int64)
    if span > 4 * count:
        _, first, rows = np.unique(code, return_index=True, return_inverse=True)
        return first, rows.reshape(-1)
    present = np.zeros(span, dtype=bool)
    present[code] = True
    number = np.cumsum(present, dtype=np.int64) - 1
    rows = number[code]
    first = np.empty(int(number[-1]) + 1, dtype=np.int64)
    first[rows] = np.arange(count)  # any member of a row will do: its values are the row's
    return first, rows


def as_group_arrays(groups: object) -> tuple[np.ndarray, np.ndarray]:
    """(all device ids concatenated in rank order, group sizes) of ``groups``: a 2-D int
    array, a list of int lists (ragged allowed), or a ``CollectiveDeviceList`` read as
    device ids."""
    if isinstance(groups, CollectiveDeviceList):
        return groups.flattened_replica_groups().astype(np.int64), groups.group_sizes
    if isinstance(groups, np.ndarray):
        if groups.ndim != 2 or not np.issubdtype(groups.dtype, np.integer):
            raise InvalidArgumentError(
                f"device groups must be a 2-D int array [groups, size], got shape {groups.shape}"
            )
        return groups.astype(np.int64, copy=False).reshape(-1), np.full(
            groups.shape[0], groups.shape[1], dtype=np.int64
        )
    if isinstance(groups, list | tuple):
        if groups and all(isinstance(row, list | tuple) for row in groups):
            widths = {len(row) for row in groups}
            if len(widths) == 1:
                check_size(len(groups) * widths.pop(), "the device groups")
                array = np.asarray(groups)
                if np.issubdtype(array.dtype, np.integer):
                    return as_group_arrays(array)
        rows = [np.asarray(row) for row in groups]
        sizes = np.array([row.size for row in rows], dtype=np.int64)
        check_size(int(sizes.sum()), "the device groups")
        if any(row.ndim != 1 or (row.size and not np.issubdtype(row.dtype, np.integer))
               for row in rows):  # fmt: skip
            raise InvalidArgumentError("device groups must be lists of int device ids")
        flat = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, dtype=np.int64)
        return flat, sizes
    raise InvalidArgumentError(
        f"device groups must be an array, a list of lists or a CollectiveDeviceList, got {type(groups).__name__}"
    )


def _segments(keys: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ``keys`` sorted inside each segment: (distinct keys, longest run) per segment."""
    total = keys.size
    new = np.empty(total, dtype=bool)
    new[0] = True
    np.not_equal(keys[1:], keys[:-1], out=new[1:])
    new[starts] = True
    distinct = np.add.reduceat(new, starts)
    run_starts = np.flatnonzero(new)
    runs = np.diff(np.append(run_starts, total))
    first = np.searchsorted(run_starts, starts)
    return distinct.astype(np.int64), np.maximum.reduceat(runs, first).astype(np.int64)


def _sorted_within(values: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    group = np.repeat(np.arange(sizes.size), sizes)
    return values[np.lexsort((values, group))]


def _hops(
    cluster: Cluster, flat: np.ndarray, sizes: np.ndarray, starts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    torus = cluster.torus
    coords = cluster.device_coords
    if torus is None or coords is None:
        raise InvalidArgumentError("torus hops need a torus")
    c = coords[flat]
    following = np.arange(1, flat.size + 1)
    following[starts + sizes - 1] = starts
    delta = np.abs(c[following] - c)
    shape = np.asarray(torus.shape)
    wrapped = np.where(np.asarray(torus.wraparound), np.minimum(delta, shape - delta), delta)
    ring = np.maximum.reduceat(wrapped.sum(axis=1), starts)
    line = np.maximum.reduceat(delta.sum(axis=1), starts)
    first = np.repeat(c[starts], sizes, axis=0)
    varied = np.logical_or.reduceat(c != first, starts, axis=0)
    bits = (varied * (1 << np.arange(shape.size))).sum(axis=1)
    return (varied.sum(axis=1).astype(np.int64), bits.astype(np.int64), ring.astype(np.int64),
            line.astype(np.int64))  # fmt: skip


def _check_ids(cluster: Cluster, flat: np.ndarray) -> None:
    if flat.size and (flat.min() < 0 or flat.max() >= cluster.num_devices):
        bad = int(flat.max() if flat.max() >= cluster.num_devices else flat.min())
        raise InvalidArgumentError(
            f"device id {bad} is not in the cluster {cluster.name!r} of {cluster.num_devices} devices"
        )


def _tier_of(sizes: np.ndarray, hosts: np.ndarray, domains: np.ndarray) -> np.ndarray:
    tier = np.full(sizes.size, Tier.NETWORK, dtype=np.int8)
    tier[domains == 1] = Tier.DOMAIN
    tier[hosts == 1] = Tier.HOST
    tier[sizes == 1] = Tier.DEVICE
    return tier


def _rank_major(table: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``table[groups].T`` as a C-contiguous ``[size, groups]`` array, gathered along the ids'
    memory order (a transposed view is read as it lies; a row-major array is gathered row by
    row, then transposed)."""
    if groups.T.flags.c_contiguous:
        return np.take(table, groups.T)
    return np.ascontiguousarray(np.take(table, groups).T)


def _uniform_hops(
    cluster: Cluster, groups: np.ndarray, domains: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(axes, axis bits, ring hops, line hops) on a torus of the ids ``groups[group, rank]``:
    one int32 gather of packed coordinates into ``[size, groups]`` order, then per axis its
    coordinates and hops between ring neighbours as int16 (below 1024 per axis, below 3,072
    summed over three), written into buffers allocated once."""
    torus = cluster.torus
    packed = cluster.coord_index
    if torus is None or packed is None:
        raise InvalidArgumentError("torus hops need a torus")
    p = _rank_major(packed, groups)
    shape, count = p.shape, p.shape[1]
    ring = np.zeros(shape, dtype=np.int16)
    line = np.zeros(shape, dtype=np.int16)
    shifted = np.empty(shape, dtype=np.int32)
    c = np.empty(shape, dtype=np.int16)
    delta = np.empty(shape, dtype=np.int16)
    wrapped = np.empty(shape, dtype=np.int16)
    bits = np.zeros(count, dtype=np.int64)
    axes = np.zeros(count, dtype=np.int64)
    for axis, (size, wraps) in enumerate(zip(torus.shape, torus.wraparound, strict=True)):
        np.right_shift(p, 10 * axis, out=shifted)
        np.bitwise_and(shifted, 1023, out=c, casting="unsafe")
        np.subtract(c[1:], c[:-1], out=delta[:-1])  # rank i to i+1, the last back to the first
        np.subtract(c[0], c[-1], out=delta[-1])
        np.abs(delta, out=delta)
        line += delta
        if wraps:
            np.subtract(size, delta, out=wrapped)
            np.minimum(delta, wrapped, out=wrapped)
            ring += wrapped
        else:
            ring += delta
        varied = c.max(axis=0) != c.min(axis=0)
        axes += varied
        bits |= varied.astype(np.int64) << axis
    ring_max = ring.max(axis=0).astype(np.int64)
    line_max = line.max(axis=0).astype(np.int64)
    ring_max[domains > 1] = -1
    line_max[domains > 1] = -1
    return axes, bits, ring_max, line_max


@functools.cache
def _sorting_network(size: int) -> tuple[tuple[int, int], ...]:
    """Batcher's odd-even merge sort comparators for ``size`` inputs (those reaching past the
    end dropped, which is sorting with +inf padding)."""
    pairs = []
    p = 1
    while p < size:
        k = p
        while k >= 1:
            for j in range(k % p, size - k, 2 * k):
                for i in range(min(k, size - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p):
                        pairs.append((i + j, i + j + k))
            k //= 2
        p *= 2
    return tuple(pairs)


_SORTING_NETWORK_RANKS = 16
"""The widest groups whose host ids are sorted by a sorting network (wider ones row by row)."""


def _sort_ranks(h: np.ndarray, bound: int) -> np.ndarray:
    """``h[rank, group]`` (ids below ``bound``) sorted along the ranks into a new array by a
    sorting network of whole-row min/max, for small groups; int16 when the ids fit (half the
    memory each pass reads). Each comparator is two passes over ``groups`` values: the
    minimum goes to a spare row, which then takes the place of row ``a`` (whose buffer
    becomes the spare) rather than being copied into it."""
    rows = list(h.astype(np.int16 if bound <= np.iinfo(np.int16).max + 1 else h.dtype))
    spare = np.empty_like(rows[0])
    for a, b in _sorting_network(h.shape[0]):
        np.minimum(rows[a], rows[b], out=spare)
        np.maximum(rows[a], rows[b], out=rows[b])
        rows[a], spare = spare, rows[a]
    return np.stack(rows)


def _longest_runs(change: np.ndarray) -> np.ndarray:
    """Per column of sorted host ids, the longest run of one host, from ``change[i]`` (rank
    i+1 starts a new host): row by row for small groups, by one accumulate otherwise."""
    size, count = change.shape[0] + 1, change.shape[1]
    if size <= 64:
        run = np.ones(count, dtype=np.int32)
        best = np.ones(count, dtype=np.int32)
        for row in change:
            run += 1
            run[row] = 1
            np.maximum(best, run, out=best)
        return best.astype(np.int64)
    position = np.arange(size, dtype=np.int32)[:, None]
    run_start = np.zeros((size, count), dtype=np.int32)
    run_start[1:] = np.where(change, position[1:], 0)
    np.maximum.accumulate(run_start, axis=0, out=run_start)
    return (position - run_start).max(axis=0).astype(np.int64) + 1


def _network_sharers(cluster: Cluster, h: np.ndarray, network: np.ndarray) -> np.ndarray:
    """Per group, the most network-crossing members of all groups on one of its hosts
    (``h`` is ``[size, groups]`` host ids). When every touched host has the same count (a
    mesh filling its hosts), that count is the answer without a gather."""
    count = h.shape[1]
    if not bool(network.any()):
        return np.zeros(count, dtype=np.int64)
    every = bool(network.all())
    crossing = h if every else h[:, network]
    counts = np.bincount(crossing.ravel(order="K"), minlength=cluster.num_hosts)
    most = int(counts.max())
    if bool(((counts == 0) | (counts == most)).all()):
        per_group = np.full(crossing.shape[1], most, dtype=np.int64)
    else:
        per_group = np.take(counts.astype(np.int32), crossing).max(axis=0).astype(np.int64)
    if every:
        return per_group
    sharers = np.zeros(count, dtype=np.int64)
    sharers[network] = per_group
    return sharers


def _host_runs(cluster: Cluster, h: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(hosts, most ranks on one host, domains) per group of host ids ``h``, a group's ranks
    along ``axis``: 0 for ``[size, groups]`` (small groups, sorted by a sorting network into
    a copy), 1 for ``[groups, size]`` (wide groups, each one contiguous row sorted in place:
    a column sort strides through memory). Nothing is sorted when every group is in order."""
    size, count = h.shape[axis], h.shape[1 - axis]
    later = (slice(None),) * axis + (slice(1, None),)
    earlier = (slice(None),) * axis + (slice(None, -1),)
    if size > 1 and not bool((h[later] >= h[earlier]).all()):
        if axis == 0:
            h = _sort_ranks(h, cluster.num_hosts)
        else:
            h.sort(axis=1)
    change = h[later] != h[earlier]
    hosts = 1 + change.view(np.int8).sum(axis=axis, dtype=np.int64)
    if bool((hosts == 1).all()):
        max_per_host = np.full(count, size, dtype=np.int64)
    elif bool((hosts == size).all()):
        max_per_host = np.ones(count, dtype=np.int64)
    elif axis == 0:
        # Only groups with a host holding two ranks have a run longer than 1.
        max_per_host = np.ones(count, dtype=np.int64)
        shared = np.flatnonzero(hosts < size)
        max_per_host[shared] = _longest_runs(change[:, shared])
    else:
        max_per_host = _longest_row_runs(h)
    if cluster.hosts_per_domain == 1:
        return hosts, max_per_host, hosts
    block = h // cluster.hosts_per_domain
    return hosts, max_per_host, 1 + (block[later] != block[earlier]).view(np.int8).sum(axis=axis, dtype=np.int64)


def _longest_row_runs(rows: np.ndarray) -> np.ndarray:
    """Per row of sorted ids, the longest run of one id: a row has a run of ``k`` when some
    id equals the id ``k - 1`` places on, so ``k`` rises while any row still has one, each
    pass over those rows only (as many passes as the longest run, short in practice: a
    host holds a few of a group's ranks)."""
    count, size = rows.shape
    best = np.ones(count, dtype=np.int64)
    alive = np.arange(count)
    for lag in range(1, size):
        candidates = rows[alive]
        alive = alive[(candidates[:, lag:] == candidates[:, :-lag]).any(axis=1)]
        if not alive.size:
            break
        best[alive] = lag + 1
    return best


def _uniform_tiers(cluster: Cluster, groups: np.ndarray) -> GroupTiers:
    """``group_tiers`` of ``[groups, size]`` ids. Work is done on ``[size, groups]`` arrays,
    so each reduction over a group's ranks is a handful of long element-wise passes."""
    count, size = groups.shape
    if size > _SORTING_NETWORK_RANKS:
        rows = np.take(cluster.host_index, groups)
        hosts, max_per_host, domains = _host_runs(cluster, rows, axis=1)
        h = rows.T
    else:
        h = _rank_major(cluster.host_index, groups)
        hosts, max_per_host, domains = _host_runs(cluster, h, axis=0)
    sizes = np.full(count, size, dtype=np.int64)
    tier = _tier_of(sizes, hosts, domains)
    sharers = _network_sharers(cluster, h, tier == Tier.NETWORK)
    axes = bits = ring = line = None
    if cluster.torus is not None:
        axes, bits, ring, line = _uniform_hops(cluster, groups, domains)
    return GroupTiers(sizes, tier, hosts, domains.astype(np.int64, copy=False), max_per_host, sharers,
                      axes, bits, ring, line)  # fmt: skip


def group_tiers(cluster: Cluster, groups: object) -> GroupTiers:
    """Tiers, hosts and torus hops of every group in ``groups`` (see ``as_group_arrays``) on
    ``cluster``. Device ids must be below ``cluster.num_devices``."""
    if isinstance(groups, np.ndarray) and groups.ndim == 2 and groups.size and np.issubdtype(groups.dtype, np.integer):
        _check_ids(cluster, groups)  # a 2-D array is read in place, whatever its strides
        return _uniform_tiers(cluster, groups)
    flat, sizes = as_group_arrays(groups)
    if (sizes < 1).any():
        raise InvalidArgumentError("device groups must not be empty")
    _check_ids(cluster, flat)
    count = sizes.size
    if count and (sizes == sizes[0]).all():
        return _uniform_tiers(cluster, flat.reshape(count, -1))
    empty = np.zeros(0, dtype=np.int64)
    if count == 0:
        return GroupTiers(empty, empty.astype(np.int8), empty, empty, empty, empty,
                          None, None, None, None)  # fmt: skip
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    hosts_of = cluster.device_hosts[flat]
    sorted_hosts = _sorted_within(hosts_of, sizes)
    hosts, max_per_host = _segments(sorted_hosts, starts)
    domains, _ = _segments(sorted_hosts // cluster.hosts_per_domain, starts)
    tier = _tier_of(sizes, hosts, domains)
    on_network = np.repeat(tier == Tier.NETWORK, sizes)
    sharers = np.bincount(hosts_of[on_network], minlength=cluster.num_hosts)
    network_sharers = np.maximum.reduceat(sharers[hosts_of], starts) * (tier == Tier.NETWORK)
    axes = bits = ring = line = None
    if cluster.torus is not None:
        axes, bits, ring, line = _hops(cluster, flat, sizes, starts)
        ring[domains > 1] = -1
        line[domains > 1] = -1
    return GroupTiers(sizes, tier, hosts, domains, max_per_host, network_sharers.astype(np.int64),
                      axes, bits, ring, line)  # fmt: skip


def device_list_tiers(
    cluster: Cluster,
    device_list: object,
    mode: object,
    device_assignment: DeviceAssignment,
) -> GroupTiers:
    """``group_tiers`` of written replica groups resolved through the group ``mode`` and
    ``device_assignment`` (the math layer's ``participating_device_groups``, kept as arrays)."""
    flat, sizes = device_group_arrays(device_list, mode=CollectiveOpGroupMode.coerce(mode), device_assignment=device_assignment)
    if sizes.size and (sizes == sizes[0]).all():
        return group_tiers(cluster, flat.reshape(sizes.size, -1))
    return group_tiers(cluster, np.split(flat, np.cumsum(sizes)[:-1]))


def mesh_axis_tiers(cluster: Cluster, mesh: Mesh, over: object) -> GroupTiers:
    """``group_tiers`` of the groups of a collective over mesh axes ``over``."""
    return group_tiers(cluster, mesh.group_array(over))
