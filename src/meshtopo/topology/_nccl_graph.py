"""The graphs NCCL's topology search finds on the hosts a ``Cluster`` describes, in closed form:
``ncclTopoCompute`` (``src/graph/search.cc``, NCCL 2.28-2.30) on switched hosts (every GPU one
NVLink bundle to the NVSwitch, or one PCIe link) with the NICs spread over the GPUs.

NCCL counts a GPU's fabric as ``links x`` its per-link NVLink figure (``ncclTopoNVLinkBw``:
SM80 20, SM90 20.6, SM100 40.1 GB/s, the data rate it can drive, not the signalling rate) and
a NIC as its speed / 8000. It then tries per-channel speeds from a per-arch table, fastest
first (one node: ``speedArrayIntra``, SM90 and SM100 tables of their own; several nodes:
``speedArrayInter``), keeps the speed whose channels x speed is largest, and stops lowering the
speed once a step would fall below 0.49 of the best:

- **ring** (also tree, CollNet Chain and PAT here): on one node a channel takes ``speed`` out
  of and into every GPU's fabric, ``floor(fabric / speed)`` channels (at most 32); across
  nodes it enters at one GPU from a NIC and leaves at another, so a GPU's fabric carries
  ``(gpus-1)/gpus`` of the channels, and each NIC ``floor(nic / speed)`` of them; then ``ncclTopoDupChannels`` doubles the channels at half the
  speed (unless the speed is below 25, or below 50 with more than 4 channels after SM80) and
  the second pass raises the speed while as many channels still fit;
- **NVLS**: one channel per GPU head (across nodes, per NIC with a GPU of its own, at most 32),
  each pulling ``speed`` through the switch from every GPU and twice from its head, so
  ``(heads + 1) * speed <= fabric``; on one node every GPU must be a head; the second pass
  raises the inter speed up to twice the intra one (on one node nothing limits it but the
  table); NVLS Tree uses the same graph;
- **CollNet Direct**: one head per NIC with a GPU (at most 8), the same per-channel rule as
  NVLS.

>>> ring = nccl_graphs(18 * 40.1, "nvlink", gpus=8, nodes=1, nics=8, nic_gbps=50.0, sm=100,
...                    nvls=True, collnet=False)
>>> ring["ring"], ring["nvls"]
(NcclGraph(channels=16, bw_intra=45.0, bw_inter=45.0), NcclGraph(channels=8, bw_intra=80.0, bw_inter=90.0))
>>> nccl_graphs(18 * 40.1, "nvlink", 8, 4, 8, 50.0, 100, nvls=True, collnet=False)["ring"]
NcclGraph(channels=8, bw_intra=48.0, bw_inter=48.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ._nccl_tuning import NcclGraph

_INTRA = {
    0: (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
    90: (60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
    100: (90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0),
}
_INTER = {
    0: (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4,
        1.2, 0.24, 0.12),
    90: (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2,
         0.24, 0.12),
    100: (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0,
          6.0, 3.0, 2.4, 1.2, 0.24, 0.12),
}  # fmt: skip
_RING_MAX_CHANNELS = 32  # MAXCHANNELS / 2
_NVLS_MAX_HEADS = 32
_DIRECT_MAX_HEADS = 8


def speed_array(sm: int, multi_node: bool) -> tuple[float, ...]:
    """NCCL's per-channel speeds (GB/s, fastest first) for this arch and node count."""
    table = _INTER if multi_node else _INTRA
    return table[100 if sm >= 100 else 90 if sm >= 90 else 0]


def _search(
    speeds: tuple[float, ...], start_limit: float, total: float, min_channels: int,
    max_channels: int, fits: Callable[[float], int],
) -> tuple[int, float, int]:  # fmt: skip
    """Pass one of ``ncclTopoCompute``: (channels, speed, speed index) of the best graph, or
    (0, 0, 0) when none is found."""
    index = 0
    while index < len(speeds) - 1 and (speeds[index] > start_limit or speeds[index] * min_channels > total):
        index += 1
    best = (0, 0.0, 0)
    while True:
        channels = min(fits(speeds[index]), max_channels)
        if channels >= min_channels and channels * speeds[index] > best[0] * best[1]:
            best = (channels, speeds[index], index)
            if channels == max_channels or channels * speeds[index] >= total:
                return best
        following = index + 1 < len(speeds)
        if following and (best[0] == 0 or speeds[index + 1] / best[1] > 0.49):
            index += 1
            continue
        return best


def _ring(
    speeds: tuple[float, ...], fabric: float, gpus: int, nodes: int, nics: int, nic: float, sm: int
) -> NcclGraph:
    def fits(speed: float) -> int:
        if nodes == 1:
            return math.floor(fabric / speed + 1e-9)
        by_nic = nics * math.floor(nic / speed + 1e-9)
        if gpus == 1:
            return by_nic
        return min(by_nic, math.floor(fabric / speed * gpus / (gpus - 1) + 1e-9))

    limit = fabric if nodes == 1 else min(fabric, nic)
    channels, speed, _ = _search(speeds, limit, fabric, 1, _RING_MAX_CHANNELS, fits)
    if channels == 0:
        return NcclGraph(1, 0.1, 0.1)  # NCCL's fallback "simple order"
    if speed >= 25.0 and not (sm > 80 and speed < 50.0 and channels > 4):
        doubled = min(2 * channels, _RING_MAX_CHANNELS)
        speed /= math.ceil(doubled / channels)
        channels = doubled
    index = next((i for i, s in enumerate(speeds) if s <= speed), len(speeds) - 1)
    for higher in range(index - 1, -1, -1):
        if fits(speeds[higher]) >= channels:
            speed = speeds[higher]
    return NcclGraph(channels, speed, speed)


def _heads(
    speeds: tuple[float, ...], fabric: float, gpus: int, nodes: int, nics: int, nic: float,
    max_heads: int, raise_inter: bool,
) -> NcclGraph:  # fmt: skip
    heads = min(max_heads, gpus if nodes == 1 else min(nics, gpus))
    if heads == 0:
        return NcclGraph(0, 0.0, 0.0)

    def fits(speed: float) -> int:
        if nodes > 1 and speed > nic + 1e-9:
            return 0
        return heads if (heads + 1) * speed <= fabric + 1e-9 else 0

    total = fabric * gpus / (gpus - 1) if gpus > 1 else fabric
    channels, speed, index = _search(speeds, fabric, total, heads if nodes == 1 else 1, heads, fits)
    if channels == 0:
        return NcclGraph(0, 0.0, 0.0)
    inter = speed
    while raise_inter and index > 0 and inter < 2 * speed:
        index -= 1
        if nodes == 1 or speeds[index] <= nic + 1e-9:
            inter = speeds[index]
    return NcclGraph(channels, speed, inter)


def nccl_graphs(
    fabric_gbps: float, intra: str, gpus: int, nodes: int, nics: int, nic_gbps: float, sm: int,
    *, nvls: bool, collnet: bool,
) -> dict[str, NcclGraph]:  # fmt: skip
    """The graphs NCCL finds for ``gpus`` GPUs per node on ``nodes`` nodes, each GPU with
    ``fabric_gbps`` of NVLink (``intra="nvlink"``) or PCIe, each node with ``nics`` NICs of
    ``nic_gbps``: ``ring``, ``tree``, ``pat``, and ``nvls``/``nvls_tree`` when ``nvls``,
    ``collnet_chain``/``collnet_direct`` when ``collnet`` (Direct on NVLink hosts only)."""
    multi = nodes > 1
    speeds = speed_array(sm, multi)
    ring = _ring(speeds, fabric_gbps, gpus, nodes, nics, nic_gbps, sm)
    graphs = {"ring": ring, "tree": ring, "pat": ring}
    if nvls:
        graph = _heads(speeds, fabric_gbps, gpus, nodes, nics, nic_gbps, _NVLS_MAX_HEADS, True)
        graphs["nvls"] = graphs["nvls_tree"] = graph
    if collnet and multi:
        graphs["collnet_chain"] = ring
        if intra == "nvlink":
            graphs["collnet_direct"] = _heads(speeds, fabric_gbps, gpus, nodes, nics, nic_gbps,
                                              _DIRECT_MAX_HEADS, False)  # fmt: skip
    return graphs
