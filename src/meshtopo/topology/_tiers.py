"""Which parts of a cluster each device group spans, from the real device order.

For every group (devices in rank order, as XLA runs them): how many hosts and domains it
touches, the most members it has on one host, the slowest tier it crosses, and on a TPU torus
the number of torus axes it varies along and the largest hop count between ring neighbours
(rank i and i+1, the last rank back to the first), with the slice's wraparound and without.
All of it is numpy over the whole group list: one gather per device property, one sort of
host ids per group, reductions per group.

>>> from meshtopo.topology import preset
>>> t = group_tiers(preset("h100-8x", hosts=2), [[0, 1, 2, 3], [4, 12, 5, 13]])
>>> [str(x) for x in t.tier_values], t.hosts.tolist(), t.max_per_host.tolist()
(['host', 'network'], [1, 2], [4, 2])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._device_list import CollectiveDeviceList
from .._errors import InvalidArgumentError
from .._limits import check_size
from .._mesh import Mesh
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
        rows = [list(row) for row in groups]
        sizes = np.array([len(row) for row in rows], dtype=np.int64)
        check_size(int(sizes.sum()), "the device groups")
        flat = [v for row in rows for v in row]
        if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in flat):
            raise InvalidArgumentError("device groups must hold int device ids")
        return np.array(flat, dtype=np.int64), sizes
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


def _sorted_within(values: np.ndarray, sizes: np.ndarray, starts: np.ndarray) -> np.ndarray:
    if sizes.size and (sizes == sizes[0]).all():
        return np.sort(values.reshape(sizes.size, -1), axis=1).reshape(-1)
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


def group_tiers(cluster: Cluster, groups: object) -> GroupTiers:
    """Tiers, hosts and torus hops of every group in ``groups`` (see ``as_group_arrays``) on
    ``cluster``. Device ids must be below ``cluster.num_devices``."""
    flat, sizes = as_group_arrays(groups)
    if (sizes < 1).any():
        raise InvalidArgumentError("device groups must not be empty")
    if flat.size and (flat.min() < 0 or flat.max() >= cluster.num_devices):
        raise InvalidArgumentError(
            f"device id {int(flat.max() if flat.max() >= cluster.num_devices else flat.min())} "
            f"is not in the cluster {cluster.name!r} of {cluster.num_devices} devices"
        )
    count = sizes.size
    empty = np.zeros(0, dtype=np.int64)
    if count == 0:
        return GroupTiers(empty, empty.astype(np.int8), empty, empty, empty, empty,
                          None, None, None, None)  # fmt: skip
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    hosts_of = cluster.device_hosts[flat]
    sorted_hosts = _sorted_within(hosts_of, sizes, starts)
    hosts, max_per_host = _segments(sorted_hosts, starts)
    domains, _ = _segments(sorted_hosts // cluster.hosts_per_domain, starts)
    tier = np.full(count, Tier.NETWORK, dtype=np.int8)
    tier[domains == 1] = Tier.DOMAIN
    tier[hosts == 1] = Tier.HOST
    tier[sizes == 1] = Tier.DEVICE
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


def mesh_axis_tiers(cluster: Cluster, mesh: Mesh, over: object) -> GroupTiers:
    """``group_tiers`` of the groups of a collective over mesh axes ``over``."""
    return group_tiers(cluster, mesh.group_array(over))
