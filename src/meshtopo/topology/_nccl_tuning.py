"""NCCL's own time model: ``ncclTopoTuneModel``, ``ncclTopoGetAlgoTime`` and the choice in
``topoGetAlgoInfo`` (``src/graph/tuning.cc``, ``src/enqueue.cc``, NCCL 2.28-2.30), for every
algorithm NCCL has: tree, ring, CollNet Direct and Chain, NVLS, NVLS Tree and PAT.

NCCL predicts ``time = latency + bytes / (1000 * bandwidth)`` microseconds from tables it fills
once per communicator from its searched graphs (``NcclGraph``: channels, per-channel bandwidth
inside a node and across nodes, GB/s) and the constants in ``_nccl_tables``:

- bus bandwidth ``channels * bw`` (``bw`` the intra graph bandwidth up to two nodes and for
  CollNet, the inter one beyond), refined per algorithm: ring LL ``* 0.5`` up to ``llMaxBw``,
  ring LL128 ``* 0.92``, tree ``* 0.92`` (and LL ``/ 3.8``, LL128 ``* 7/9`` or ``120/128``), each
  up to its per-channel cap; NVLS and NVLS Tree ``bw = min(bwIntra * nvlsEfficiency *
  (channels-1)/channels * (2 for all-reduce, else (ppn-1)/ppn), bwInter)`` (NVLS Tree also
  capped per channel, its inter bandwidth doubled on two nodes); CollNet Direct divided by
  ``f - (f-1)/2`` with ``f = ppn / channels`` (``* 0.85`` from SM90), for gathers
  ``ppn * min(bwIntra, 0.9 * bwInter)``; PAT ``* 0.75``;
- then to algorithm bandwidth: rings, NVLS and NVLS Tree ``* ranks / nsteps``, tree and CollNet
  ``* 0.5``; gathers off the ring keep their bus bandwidth;
- latency: ring ``base + (nsteps - inter) * intra + inter * net`` with ``inter = 2(nodes-1)``
  for all-reduce, ``nodes-1`` for gathers, the intra step at least 3 x the CPU's network
  overhead across nodes; tree ``base + 2((ppn-1) intra + log2(nodes) net)``; NVLS ``intra (+
  net)``; NVLS Tree ``intra + 2 log2(nodes) net``; CollNet Direct ``2(min(1, ppn-1) intra +
  0.4 (ppn-1)) + net``; CollNet Chain ``2 (ppn-1) intra + net``; PAT ``8 + log2(nodes) net /
  3.5 + 2.8 ranks``; a multi-node ring all-reduce with >= 64 B per channel and rank has its
  latency ``* 1.4`` (1.9 before SM80); trees (and NVLS Tree on SM100) scale their bandwidth by
  a measured correction per power-of-two size.

NCCL disables, and so do we: NVLS Tree on one node; CollNet, and NVLS across nodes, without a
CollNet network (SHARP); NVLS without NVLS support or with fewer than 2 channels; CollNet
Direct beyond 8 ranks per node; CollNet and NVLS gathers across nodes with more ranks per node
than heads; PAT unless one rank per node; LL128 off NVLink or before SM70; tree, NVLS Tree and
CollNet Chain for gathers; everything but rings for broadcast and reduce.

Assumptions where NCCL reads its searched graph: broadcast and reduce rings share channels
(``sameChannels``), trees are balanced (no 0.85 split-tree factor), the NIC reports no latency
(``latencyInter``), an x86 CPU (Intel by default: 1 us network overhead, AMD 2 us), GPUs of one
compute capability, GPU-NIC paths within PXN, and the CollNet plugin reduces gathers as well.

>>> ring = NcclGraph(16, 45.0, 45.0)
>>> round(nccl_time("all-reduce", 2**30, 8, 1, 45.0, 45.0, 16, "ring", "simple", sm=100), 1)
2665.8
>>> nccl_best_time("all-reduce", 2**30, 8, 1, 45.0, 45.0, 16, sm=100, nvls=True,
...                graphs={"ring": ring, "tree": ring, "nvls": NcclGraph(8, 80.0, 90.0)})[1:]
('nvls', 'simple')
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from .._errors import InvalidArgumentError
from ._nccl_tables import (
    ALGORITHMS,
    BASE_LATENCY,
    HW_LATENCY,
    LL_MAX_BW,
    MAX_DIRECT_ARITY,
    MAX_NVLS_ARITY,
    NVLS_EFFICIENCY,
    NVLS_TREE_MAX_BW,
    PROTOCOLS,
    RING_LL128_MAX_BW,
    TREE_CORRECTION,
    TREE_LL128_MAX_BW,
    TREE_MAX_BW,
    arch,
)

_FUNCTIONS = {
    "all-reduce": "allreduce", "all-gather": "allgather", "reduce-scatter": "reducescatter",
    "collective-broadcast": "broadcast", "broadcast": "broadcast", "reduce": "reduce",
}  # fmt: skip
_GATHERS = ("allgather", "reducescatter")


@dataclass(frozen=True)
class NcclGraph:
    """One graph NCCL searched: ``channels`` and the per-channel bandwidth inside a node
    (``bw_intra``) and across nodes (``bw_inter``), GB/s. No channels: no such graph."""

    channels: int
    bw_intra: float
    bw_inter: float


def nccl_function(opcode: str) -> str | None:
    """NCCL's collective for an HLO opcode or NCCL name (``allreduce`` ...), or None when NCCL
    runs it as point-to-point sends (all-to-all, permutes), which its tuner does not model."""
    base = opcode.removesuffix("-start").removesuffix("-done")
    return _FUNCTIONS.get(base, base if base in _FUNCTIONS.values() else None)


def _log2i(value: int) -> int:
    return value.bit_length() - 1 if value > 0 else -1


def _nsteps(function: str, ranks: int) -> int:
    if function == "allreduce":
        return 2 * (ranks - 1)
    return ranks - 1 if function in _GATHERS else ranks


def _considered(function: str, algorithm: str, protocol: str, ranks: int, nodes: int) -> bool:
    """Whether ``ncclTopoTuneModel`` fills this entry at all."""
    if function in ("broadcast", "reduce") and algorithm != "ring":
        return False
    if function in _GATHERS and algorithm not in ("pat", "ring", "nvls", "collnet_direct"):
        return False
    if function == "allreduce" and algorithm == "pat":
        return False
    if algorithm in ("nvls", "nvls_tree") and protocol != "simple":
        return False
    return not (algorithm == "pat" and (protocol != "simple" or nodes != ranks))


def _bus_bandwidth(
    function: str, algorithm: str, protocol: str, graph: NcclGraph, ranks: int, nodes: int,
    sm: int, amd: bool, heads: int, collnet: bool,
) -> float:  # fmt: skip
    """``ncclTopoTuneModel``'s bandwidth entry (algorithm bandwidth, GB/s) before enabling."""
    cc, index2 = arch(sm), (nodes - 1 if nodes <= 2 else 2)
    ll_max = LL_MAX_BW[cc if nodes == 1 else int(amd)][index2]
    ppn = ranks / nodes
    channels = graph.channels
    uses_collnet = algorithm in ("collnet_direct", "collnet_chain")
    bw = graph.bw_intra if nodes <= 2 or uses_collnet else graph.bw_inter
    if algorithm in ("nvls", "nvls_tree"):
        if channels < 2:
            return 0.0
        intra = graph.bw_intra * NVLS_EFFICIENCY[cc] * (channels - 1) / channels
        intra *= 2.0 if function == "allreduce" else (ppn - 1) / ppn
        inter = graph.bw_inter * (2 if nodes <= 2 and algorithm == "nvls_tree" else 1)
        cap = NVLS_TREE_MAX_BW[cc][index2] if algorithm == "nvls_tree" else math.inf
        bw = min(intra, inter, cap)
    bus = channels * bw
    if algorithm == "ring" and protocol == "ll":
        bus = min(ll_max, bus * 0.5)
    if algorithm == "ring" and protocol == "ll128":
        bus = min(bus * 0.92, channels * RING_LL128_MAX_BW[cc][index2])
    if algorithm == "tree" and function == "allreduce":
        bus = min(bus * 0.92, channels * TREE_MAX_BW[cc][index2])
    if algorithm == "tree" and protocol == "ll":
        bus = min(bus / 3.8, ll_max)
    if algorithm == "tree" and protocol == "ll128":
        bus = min(bus * (7.0 / 9.0 if nodes == 1 else 120.0 / 128.0), channels * TREE_LL128_MAX_BW[cc][index2])
    if algorithm == "pat":
        bus *= 0.75
    if uses_collnet and protocol != "simple":
        bus = 0.0
    if algorithm == "collnet_direct" and protocol == "simple":
        if function in _GATHERS:
            bus = ppn * min(graph.bw_intra, graph.bw_inter * 0.9)
        else:
            factor = ppn / channels
            bus /= factor - (factor - 1) / 2
            if sm >= 90:
                bus *= 0.85
    gathers_across = algorithm in ("nvls", "collnet_direct") and function in _GATHERS and nodes > 1
    if gathers_across and (not collnet or math.ceil(ppn) > heads):
        bus = 0.0
    if not (algorithm != "ring" and function in _GATHERS):
        ring_like = algorithm in ("ring", "nvls", "nvls_tree")
        bus *= ranks / _nsteps(function, ranks) if ring_like else 0.5
    return bus


def _latency(
    function: str, algorithm: str, protocol: str, ranks: int, nodes: int, intra: str, amd: bool,
) -> float:  # fmt: skip
    """``ncclTopoTuneModel``'s latency entry in microseconds."""
    p = PROTOCOLS.index(protocol)
    ppn = ranks / nodes
    local = ranks // nodes
    latency = BASE_LATENCY[algorithm][p]
    intra_lat = HW_LATENCY[intra][algorithm][p]
    inter_lat = HW_LATENCY["net"]["tree" if ppn == 1 else algorithm][p]
    log_nodes = _log2i(nodes)
    if algorithm == "ring":
        if function in ("broadcast", "reduce"):
            return latency + HW_LATENCY[intra if nodes == 1 else "net"]["ring"][p]
        overhead = (2.0 if amd else 1.0) * (3 if protocol == "simple" else 1) if nodes > 1 else 0.0
        intra_lat = max(intra_lat, overhead)
        nsteps = _nsteps(function, ranks)
        inter_steps = 0 if nodes == 1 else 2 * (nodes - 1) if function == "allreduce" else nodes - 1
        return latency + (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat
    if algorithm == "tree":
        extra = 2 * ((local - 1) * intra_lat + log_nodes * inter_lat)
        return latency + (extra if function == "allreduce" else 0.0)
    if algorithm == "collnet_direct":
        return latency + 2 * (min(1, local - 1) * intra_lat + (local - 1) * 0.4) + inter_lat
    if algorithm == "collnet_chain":
        return latency + 2 * (local - 1) * intra_lat + inter_lat
    if algorithm == "nvls":
        return intra_lat + (inter_lat if nodes > 1 else 0.0)
    if algorithm == "nvls_tree":
        return latency + intra_lat + 2 * log_nodes * inter_lat
    return latency + log_nodes * (inter_lat / 3.5) + ranks * 2.8  # pat


def _enabled(
    function: str, algorithm: str, protocol: str, ranks: int, nodes: int, sm: int, intra: str,
    collnet: bool, nvls: bool,
) -> bool:  # fmt: skip
    """NCCL's default enables: ``ncclTopoTuneModel``'s algorithm and LL128 rules and
    ``updateCollCostTable``'s skips."""
    local = math.ceil(ranks / nodes)
    if protocol == "ll128" and not (intra == "nvlink" and sm >= 70):
        return False
    if algorithm == "nvls_tree" and nodes == 1:
        return False
    if not collnet and (algorithm in ("collnet_direct", "collnet_chain") or (algorithm == "nvls" and nodes > 1)):
        return False
    if algorithm == "collnet_direct" and (intra != "nvlink" or local > MAX_DIRECT_ARITY + 1):
        return False
    if algorithm in ("nvls", "nvls_tree"):
        return nvls and (function == "allreduce" or local <= MAX_NVLS_ARITY)
    return not (algorithm == "pat" and sm < 60)


def nccl_tuning(
    opcode: str, ranks: int, nodes: int, graphs: Mapping[str, NcclGraph], sm: int = 90,
    intra: str = "nvlink", *, collnet: bool = False, nvls: bool = False, amd: bool = False,
) -> dict[tuple[str, str], tuple[float, float]]:  # fmt: skip
    """NCCL's tables for one collective: ``{(algorithm, protocol): (latency us, bandwidth
    GB/s)}`` for every pair NCCL considers, bandwidth 0 where it is disabled or its graph
    (``graphs[algorithm]``) is missing."""
    function = nccl_function(opcode)
    if function is None:
        raise InvalidArgumentError(f"NCCL's tuner has no model for {opcode!r}")
    if intra not in ("nvlink", "pcie"):
        raise InvalidArgumentError(f"intra must be nvlink or pcie, got {intra!r}")
    if not 1 <= nodes <= ranks:
        raise InvalidArgumentError(f"NCCL's tuner needs 1 <= nodes <= ranks, got {nodes} and {ranks}")
    heads = graphs["collnet_direct"].channels if "collnet_direct" in graphs else 0
    table = {}
    for algorithm in ALGORITHMS:
        for protocol in PROTOCOLS:
            if not _considered(function, algorithm, protocol, ranks, nodes):
                continue
            graph = graphs.get(algorithm)
            bandwidth = 0.0
            if graph is not None and graph.channels > 0 and _enabled(
                function, algorithm, protocol, ranks, nodes, sm, intra, collnet, nvls
            ):
                bandwidth = _bus_bandwidth(function, algorithm, protocol, graph, ranks, nodes, sm,
                                           amd, heads, collnet)  # fmt: skip
            latency = _latency(function, algorithm, protocol, ranks, nodes, intra, amd)
            table[(algorithm, protocol)] = (latency, bandwidth)
    return table


def _algo_time(
    function: str, algorithm: str, protocol: str, nbytes: float, entry: tuple[float, float],
    ranks: int, nodes: int, ring_channels: int, sm: int,
) -> float:  # fmt: skip
    """``ncclTopoGetAlgoTime`` for one operation: microseconds, ``inf`` when disabled."""
    latency, bandwidth = entry
    if bandwidth <= 0:
        return math.inf
    size = int(nbytes)
    log_size = _log2i(size >> 6)
    correct = 0 <= log_size < 23 and algorithm == "tree"
    correct |= 0 <= log_size < 24 and algorithm == "nvls_tree" and sm >= 100
    if correct and function == "allreduce":
        bandwidth *= TREE_CORRECTION[PROTOCOLS.index(protocol)][log_size]
    if (algorithm == "ring" and protocol == "simple" and nodes > 1 and function == "allreduce"
            and size // (max(ring_channels, 1) * ranks) >= 64):  # fmt: skip
        latency *= 1.9 if sm < 80 else 1.4
    return latency + nbytes / (1000.0 * bandwidth)


def _graphs(
    graphs: Mapping[str, NcclGraph] | None, channels: int, bw_intra: float, bw_inter: float
) -> Mapping[str, NcclGraph]:
    if graphs is not None:
        return graphs
    same = NcclGraph(channels, bw_intra, bw_inter)
    return dict.fromkeys(ALGORITHMS, same)


def nccl_time(
    opcode: str,
    nbytes: float,
    ranks: int,
    nodes: int,
    bw_intra: float,
    bw_inter: float,
    channels: int,
    algorithm: str = "ring",
    protocol: str = "simple",
    sm: int = 90,
    intra: str = "nvlink",
    *,
    graphs: Mapping[str, NcclGraph] | None = None,
    collnet: bool = False,
    nvls: bool = False,
    amd: bool = False,
) -> float:
    """NCCL's predicted time in microseconds for ``nbytes`` (the collective's size as
    nccl-tests counts it) over ``ranks`` ranks on ``nodes`` nodes with ``algorithm`` and
    ``protocol``; every graph is ``channels`` x (``bw_intra``, ``bw_inter``) GB/s unless
    ``graphs`` gives them per algorithm; ``inf`` where NCCL disables the combination."""
    if algorithm not in ALGORITHMS or protocol not in PROTOCOLS:
        raise InvalidArgumentError(
            f"algorithm must be one of {', '.join(ALGORITHMS)}, protocol one of {', '.join(PROTOCOLS)}"
        )
    function = nccl_function(opcode)
    if function is None:
        raise InvalidArgumentError(f"NCCL's tuner has no model for {opcode!r}")
    if ranks < 2:
        return 0.0
    chosen = _graphs(graphs, channels, bw_intra, bw_inter)
    table = nccl_tuning(opcode, ranks, nodes, chosen, sm, intra, collnet=collnet, nvls=nvls, amd=amd)
    entry = table.get((algorithm, protocol))
    if entry is None:
        return math.inf
    ring = chosen.get("ring")
    return _algo_time(function, algorithm, protocol, nbytes, entry, ranks, nodes,
                      ring.channels if ring else 1, sm)  # fmt: skip


def nccl_best_time(
    opcode: str, nbytes: float, ranks: int, nodes: int, bw_intra: float, bw_inter: float,
    channels: int, sm: int = 90, intra: str = "nvlink", *,
    graphs: Mapping[str, NcclGraph] | None = None, collnet: bool = False, nvls: bool = False,
    amd: bool = False,
) -> tuple[float, str, str]:  # fmt: skip
    """NCCL's choice: the fastest (time in us, algorithm, protocol) among the enabled pairs,
    the first in NCCL's order on a tie (``topoGetAlgoInfo``)."""
    function = nccl_function(opcode)
    if function is None:
        raise InvalidArgumentError(f"NCCL's tuner has no model for {opcode!r}")
    if ranks < 2:
        return (0.0, "ring", "simple")
    chosen = _graphs(graphs, channels, bw_intra, bw_inter)
    table = nccl_tuning(opcode, ranks, nodes, chosen, sm, intra, collnet=collnet, nvls=nvls, amd=amd)
    ring = chosen.get("ring")
    best = (math.inf, "ring", "simple")
    for (algorithm, protocol), entry in table.items():
        time = _algo_time(function, algorithm, protocol, nbytes, entry, ranks, nodes,
                          ring.channels if ring else 1, sm)  # fmt: skip
        if time < best[0]:
            best = (time, algorithm, protocol)
    return best
