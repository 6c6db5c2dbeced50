"""Tiers, hosts and torus hops per group, from the real device order, against a plain-Python
reading of the same definitions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import meshtopo as mt
from meshtopo.topology import Tier, group_tiers, mesh_axis_tiers, preset


def distance(cluster, a, b, use_wrap):
    """Torus hops between devices a and b, one axis at a time."""
    total = 0
    for axis, size in enumerate(cluster.torus.shape):
        delta = abs(int(cluster.device_coords[a][axis]) - int(cluster.device_coords[b][axis]))
        total += min(delta, size - delta) if use_wrap and cluster.torus.wraparound[axis] else delta
    return total


def reference(cluster, groups):
    """Per group: (tier, hosts, domains, max per host, ring hops with wrap, without)."""
    out = []
    for group in groups:
        hosts = [int(cluster.device_hosts[d]) for d in group]
        domains = {h // cluster.hosts_per_domain for h in hosts}
        tier = (Tier.DEVICE if len(group) == 1 else Tier.HOST if len(set(hosts)) == 1
                else Tier.DOMAIN if len(domains) == 1 else Tier.NETWORK)  # fmt: skip
        hops = line = None
        if cluster.torus is not None:
            pairs = [(group[i], group[(i + 1) % len(group)]) for i in range(len(group))]
            one = len(domains) == 1
            hops = max(distance(cluster, a, b, True) for a, b in pairs) if one else -1
            line = max(distance(cluster, a, b, False) for a, b in pairs) if one else -1
        out.append((tier, len(set(hosts)), len(domains), max(hosts.count(h) for h in hosts), hops, line))
    return out


def flatten(tiers):
    hops = tiers.ring_hops if tiers.ring_hops is not None else [None] * tiers.num_groups
    line = tiers.ring_hops_no_wrap if tiers.ring_hops_no_wrap is not None else [None] * tiers.num_groups
    return [
        (Tier(int(t)), int(h), int(d), int(m), None if r is None else int(r), None if w is None else int(w))
        for t, h, d, m, r, w in zip(tiers.tier, tiers.hosts, tiers.domains, tiers.max_per_host, hops, line,
                                    strict=True)
    ]  # fmt: skip


CLUSTERS = {
    "h100x4": preset("h100-8x", hosts=4),
    "nvl72x2": preset("gb200-nvl72", hosts=36),
    "v4": preset("tpu-v4", shape=(4, 4, 4)),
    "v5e-2slices": preset("tpu-v5e", shape=(4, 8), slices=2),
}


@given(data=st.data(), name=st.sampled_from(sorted(CLUSTERS)))
def test_vectorised_tiers_match_the_definitions(data, name):
    cluster = CLUSTERS[name]
    perm = data.draw(st.permutations(range(cluster.num_devices)))
    sizes = data.draw(st.lists(st.integers(1, 9), min_size=1, max_size=6))
    groups, start = [], 0
    for size in sizes:
        if start + size > len(perm):
            break
        groups.append(list(perm[start:start + size]))
        start += size
    if not groups:
        groups = [perm[:1]]
    assert flatten(group_tiers(cluster, groups)) == reference(cluster, groups)


@given(data=st.data(), name=st.sampled_from(sorted(CLUSTERS)))
def test_uniform_groups_match_the_definitions(data, name):
    cluster = CLUSTERS[name]
    size = data.draw(st.sampled_from([d for d in (1, 2, 3, 4, 8, 16, 24, 32, 36, 48, 64)
                                      if cluster.num_devices % d == 0]))  # fmt: skip
    perm = np.array(data.draw(st.permutations(range(cluster.num_devices))))
    if data.draw(st.booleans()):  # hosts in order inside each group, as a mesh axis has them
        perm = np.sort(perm.reshape(-1, size), axis=1).reshape(-1)
    groups = perm.reshape(-1, size)
    assert flatten(group_tiers(cluster, groups)) == reference(cluster, groups.tolist())


FIELDS = ("sizes", "tier", "hosts", "domains", "max_per_host", "network_sharers", "axes",
          "axis_bits", "ring_hops", "ring_hops_no_wrap")  # fmt: skip


@given(data=st.data(), name=st.sampled_from(sorted(CLUSTERS)))
def test_distinct_groups_are_numpys_distinct_rows(data, name):
    cluster = CLUSTERS[name]
    perm = data.draw(st.permutations(range(cluster.num_devices)))
    size = data.draw(st.sampled_from([d for d in (1, 2, 4, 8) if cluster.num_devices % d == 0]))
    tiers = group_tiers(cluster, np.array(perm).reshape(-1, size))
    unique, rows = tiers.distinct
    present = [name for name in FIELDS if getattr(tiers, name) is not None]
    for field in present:
        np.testing.assert_array_equal(getattr(unique, field)[rows], getattr(tiers, field))
    table = np.stack([getattr(tiers, field) for field in present], axis=1)
    assert unique.num_groups == len(np.unique(table, axis=0))


def test_uniform_array_and_ragged_lists_agree():
    cluster = CLUSTERS["v4"]
    array = np.random.default_rng(0).permutation(64).reshape(16, 4)
    ragged = [*array.tolist(), [0]]
    assert flatten(group_tiers(cluster, array)) == flatten(group_tiers(cluster, ragged))[:16]


def test_tp_inside_a_host_and_across():
    cluster = CLUSTERS["h100x4"]
    inside = mesh_axis_tiers(cluster, mt.Mesh({"dp": 4, "tp": 8}), "tp")
    across = mesh_axis_tiers(cluster, mt.Mesh({"tp": 8, "dp": 4}), "tp")
    assert (inside.slowest, inside.hosts.tolist()) == (Tier.HOST, [1] * 4)
    assert (across.slowest, across.hosts.tolist(), across.max_per_host.tolist()) == (
        Tier.NETWORK, [4] * 4, [2] * 4)  # fmt: skip
    assert across.network_sharers.tolist() == [8] * 4


def test_nvl72_groups_stay_in_their_nvlink_domain():
    cluster = CLUSTERS["nvl72x2"]
    tiers = group_tiers(cluster, [list(range(0, 72, 4)), [0, 72]])
    assert tiers.tier_values == [Tier.DOMAIN, Tier.NETWORK]
    assert tiers.hosts.tolist() == [18, 2]


def test_device_list_resolved_through_mode_and_assignment():
    cluster = preset("h100-8x", hosts=2)
    assignment = mt.DeviceAssignment.default(replica_count=2, computation_count=8)
    groups = mt.participating_device_groups(
        mt.CollectiveDeviceList.parse("{{0,1}}"), mode=mt.CollectiveOpGroupMode.CROSS_REPLICA, device_assignment=assignment
    )
    tiers = group_tiers(cluster, groups)
    assert groups[0] == [0, 1] and tiers.tier_values == [Tier.HOST] * 8
    direct = mt.topology.device_list_tiers(
        cluster, mt.CollectiveDeviceList.parse("{{0,1}}"), "kCrossReplica", assignment
    )
    assert flatten(direct) == flatten(tiers)
    ragged = mt.topology.device_list_tiers(
        cluster, mt.CollectiveDeviceList.parse("{{0},{7,8,9}}"), "kFlattenedID",
        mt.DeviceAssignment.default(replica_count=1, computation_count=16),
    )  # fmt: skip
    assert ragged.tier_values == [Tier.DEVICE, Tier.NETWORK]


def test_dump_collective_groups_under_its_placement():
    text = """HloModule m, replica_count=1, num_partitions=16

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[1024] parameter(0)
  ROOT ar = f32[1024] all-reduce(p), channel_id=1, replica_groups=[2,8]<=[8,2]T(1,0), use_global_device_ids=true, to_apply=add
}
"""
    module = mt.hlo.parse_module(text)
    (collective,) = module.collectives
    costs = mt.topology.collective_costs(collective, preset("h100-8x", hosts=2))
    assert costs["tier"] == "network" and costs["hosts"] == 2
    assert costs["link_bytes"] == pytest.approx(2 * 1 / 2 * 4096 / 4)
    assert set(costs["seconds"]) == {"busbw", "hierarchical", "nccl"}


def test_ids_outside_the_cluster_are_refused():
    with pytest.raises(mt.InvalidArgumentError, match="device id 16 is not in the cluster"):
        group_tiers(preset("h100-8x", hosts=2), [[0, 16]])


@given(st.lists(st.lists(st.integers(0, 63), min_size=1, max_size=8, unique=True),
                min_size=1, max_size=12))
def test_network_shapes_are_numpys_distinct_rows(groups: list[list[int]]) -> None:
    tiers = group_tiers(preset("h100-8x", hosts=8), groups)
    crossing = tiers.tier == Tier.NETWORK
    nodes = np.where(crossing, tiers.domains, 1)
    share = np.where(crossing, np.maximum(tiers.max_per_host, 1)
                     / np.maximum(tiers.network_sharers, 1), 1.0)
    rows = np.stack([tiers.sizes, nodes, -(-tiers.sizes // nodes), share], 1).astype(float)
    expected, expected_inverse = np.unique(rows, axis=0, return_inverse=True)
    shapes, inverse = tiers.network_shapes
    np.testing.assert_array_equal(shapes[inverse], rows)
    assert len(shapes) == len(expected)
    np.testing.assert_array_equal(shapes[inverse], expected[expected_inverse.reshape(-1)])
