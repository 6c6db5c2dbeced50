"""Mesh order on a mocked TPU v4 4x4x4: jax's ``mesh_utils.create_device_mesh`` against a
naive reshape in process order, read by meshtopo from the two device orders.

Mock devices carry what ``create_device_mesh`` reads (platform, device_kind, id, coords,
core_on_chip, process_index, slice_index), as JAX's own mesh_utils tests mock them; hosts hold
2x2x1 chips and number the chips they hold in process order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import meshtopo as mt
from meshtopo.topology import Tier, mesh_axis_tiers, preset

pytestmark = pytest.mark.jax


@dataclass(frozen=True)
class MockTpuDevice:
    id: int
    coords: tuple[int, int, int]
    process_index: int
    platform: str = "tpu"
    device_kind: str = "TPU v4"
    core_on_chip: int = 0
    slice_index: int = 0


def v4_devices() -> list[MockTpuDevice]:
    """64 chips, process p on the host block p (x fastest over the 2x2x4 host grid), ids in
    process order."""
    devices = []
    for process in range(16):
        hx, hy, hz = process % 2, (process // 2) % 2, process // 4
        for local in range(4):
            coords = (2 * hx + local % 2, 2 * hy + local // 2, hz)
            devices.append(MockTpuDevice(len(devices), coords, process))
    return devices


def test_create_device_mesh_against_a_naive_reshape():
    from jax.experimental import mesh_utils

    devices = v4_devices()
    cluster = preset("tpu-v4", shape=(4, 4, 4)).with_placement(
        [d.process_index for d in devices], [d.coords for d in devices]
    )
    physical = mesh_utils.create_device_mesh((16, 4), devices)
    ordered = mt.Mesh({"data": 16, "model": 4}, np.vectorize(lambda d: d.id)(physical))
    naive = mt.Mesh({"data": 16, "model": 4}, [d.id for d in sorted(devices, key=lambda d: d.process_index)])

    model = mesh_axis_tiers(cluster, ordered, "model")
    data = mesh_axis_tiers(cluster, ordered, "data")
    assert (model.axes.tolist(), model.ring_hops.tolist()) == ([1] * 16, [1] * 16)
    assert (data.axes.tolist(), data.ring_hops.tolist()) == ([2] * 4, [2] * 4)

    naive_data = mesh_axis_tiers(cluster, naive, "data")
    assert naive_data.hosts.tolist() == [16] * 4
    assert (naive_data.axes.tolist(), naive_data.ring_hops.tolist()) == ([3] * 4, [5] * 4)
    assert mesh_axis_tiers(cluster, naive, "model").tier_values == [Tier.HOST] * 16

    size = 2**28
    fast = mt.topology.estimate(cluster, ordered.group_array("data"), "all-reduce", size)
    slow = mt.topology.estimate(cluster, naive.group_array("data"), "all-reduce", size)
    assert slow.time("hierarchical") > fast.time("hierarchical")
