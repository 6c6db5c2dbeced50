"""The ``cluster`` field of ``POST /api/groups``: the dialed devices placed on a preset cluster.

The cluster is a preset spec as ``meshtopo plan --cluster`` takes it (``h100-8x:2``,
``tpu-v5e:4x4``, ``tpu-v4:4x4x4:2``), built by ``mt.topology.preset``; files are not read
(the page is served to a browser). Each cell gets its device's host and domain from
``Cluster.device_hosts``/``device_domains`` and each device group its tier, hosts and domains
spanned, slowest link and ring hops from ``mt.topology.group_tiers``, all as whole arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import meshtopo as mt

from ._grid import Grid
from ._schema import Fields, RequestError

Cluster = mt.topology.Cluster

# name, then :HOSTS (GPU) or :AxB[xC] with an optional :SLICES (TPU); digits bounded so that
# no spec names a number the size check below cannot read.
TIER_NAMES = np.array([str(tier) for tier in mt.topology.Tier])


def read_cluster(fields: Fields, grid: Grid, limit: int) -> tuple[str, Cluster] | None:
    """The request's ``cluster`` spec and the preset it names, or None when the field is
    absent, null or empty; 400 for a malformed spec or one with fewer devices than the grid,
    413 for a cluster above the explorer's device limit."""
    spec = fields.string("cluster", default="", max_length=64).strip()
    if not spec:
        return None
    try:
        cluster = mt.topology.preset_spec(spec)
    except mt.LimitError as error:
        raise RequestError(413, f"field 'cluster' {spec!r}: {error}", kind="LimitError") from None
    except mt.MeshtopoError as error:
        raise RequestError(400, f"field 'cluster': {error}") from None
    if cluster.num_devices > limit:
        raise RequestError(
            413,
            f"field 'cluster' {spec!r} has {cluster.num_devices} devices, more than the "
            f"explorer's device limit of {limit}",
            kind="LimitError",
        )
    if cluster.num_devices < grid.devices:
        raise RequestError(
            400,
            f"field 'cluster' {spec!r} has {cluster.num_devices} devices, fewer than the "
            f"grid's {grid.devices}",
        )
    return spec, cluster


def cluster_json(spec: str, cluster: Cluster) -> dict[str, Any]:
    """The cluster as the page shows it: its shape, links and torus."""
    torus = cluster.torus
    return {
        "spec": spec,
        "name": cluster.name,
        "devices": cluster.num_devices,
        "hosts": cluster.num_hosts,
        "devices_per_host": cluster.devices_per_host,
        "domains": cluster.num_domains,
        "hosts_per_domain": cluster.hosts_per_domain,
        "host_link": cluster.host_link.to_dict(),
        "network": {**cluster.network.to_dict(), "per_host": cluster.nics_per_host},
        "torus": None
        if torus is None
        else {"shape": list(torus.shape), "wraparound": list(torus.wraparound)},
    }


def cell_places(cluster: Cluster, grid: Grid) -> dict[str, list[int]]:
    """Per cell (flattened-id order): the host and the domain of its device."""
    devices = grid.table.ravel()
    return {
        "host": cluster.device_hosts[devices].tolist(),
        "domain": cluster.device_domains[devices].tolist(),
    }


def group_tiers_json(cluster: Cluster, groups: mt.CollectiveDeviceList | None) -> dict[str, Any]:
    """Per device group: its tier, hosts and domains spanned, the slowest link it crosses
    (the host link inside a host or domain, the network across domains, none for a group on
    one device) and, on a torus, the largest hop count between ring neighbours; ``error``
    says why there are none."""
    if groups is None or groups.is_empty:
        return {"error": "no device groups to place", "groups": None, "counts": None}
    try:
        tiers = mt.topology.group_tiers(cluster, groups)
    except mt.MeshtopoError as error:
        return {"error": str(error), "groups": None, "counts": None}
    host, network = cluster.host_link, cluster.network
    kinds = np.array([None, host.kind, host.kind, network.kind], dtype=object)
    bandwidths = np.array([None, host.bandwidth, host.bandwidth, network.bandwidth], dtype=object)
    return {
        "error": None,
        "groups": {
            "tier": TIER_NAMES[tiers.tier].tolist(),
            "hosts": tiers.hosts.tolist(),
            "domains": tiers.domains.tolist(),
            "link": kinds[tiers.tier].tolist(),
            "link_bandwidth": bandwidths[tiers.tier].tolist(),
            "ring_hops": None if tiers.ring_hops is None else tiers.ring_hops.tolist(),
        },
        "counts": {
            str(name): int(count)
            for name, count in zip(
                TIER_NAMES, np.bincount(tiers.tier, minlength=TIER_NAMES.size), strict=True
            )
            if count
        },
    }
