"""NCCL's own time model: ``ncclTopoTuneModel`` and ``ncclTopoGetAlgoTime`` from
``src/graph/tuning.cc`` (NCCL 2.19-2.21 tables), for the ring and tree algorithms.

NCCL predicts ``time = latency + bytes / (1000 * algbw)`` microseconds, where per collective,
algorithm and protocol (LL, LL128, Simple):

- ``busbw = channels * bw`` with ``bw`` the per-channel bandwidth of the graph NCCL searched
  (intra-node when ``nodes <= 2``, inter-node beyond), then capped: ring LL ``* 1/4`` (1/3 for
  single-node gathers), ring LL128 ``* 0.92`` (0.7 with one rank per node) up to
  ``channels * perChMaxRingLL128Bw``, tree ``* 0.92`` up to ``channels * perChMaxTreeBw``,
  tree LL ``/ 3.8``, tree LL128 ``* 7/9`` on one node (``120/128`` beyond);
- ``algbw = busbw * ranks / nsteps`` for rings (``nsteps`` = 2(n-1) for all-reduce, n-1 for
  all-gather and reduce-scatter, n otherwise), ``busbw * 0.5`` for trees;
- ring latency ``baseLat + (nsteps - interSteps) * intraLat + interSteps * interLat``
  (``interSteps`` = 2 * nodes for multi-node all-reduce, nodes - 1 for gathers), tree latency
  ``baseLat + 2 * ((ranks / nodes - 1) * intraLat + log2(nodes) * interLat)``; the multi-node
  ring all-reduce latency is multiplied by 1.4 (1.9 before SM80) once a channel carries at
  least 64 bytes per rank (the "plateau effect"), trees scale their bandwidth by a measured
  correction per power-of-two size below 256 MiB.

Assumptions where NCCL reads its searched graph: broadcast and reduce rings share channels
(``sameChannels``), trees are balanced (no 0.85 split-tree factor), the network latency
reported by the NIC (``latencyInter``) is 0, and the CPU is Intel (1 us network overhead).
CollNet and NVLS are not modelled.

>>> round(nccl_time("all-reduce", 2**30, ranks=8, nodes=1, bw_intra=450 / 16,
...                 bw_inter=450 / 16, channels=16, algorithm="ring", protocol="simple"), 1)
4231.7
"""

from __future__ import annotations

import math

from .._errors import InvalidArgumentError

ALGORITHMS = ("tree", "ring")
PROTOCOLS = ("ll", "ll128", "simple")

_BASE_LAT = {"tree": (6.8, 14.0, 0.0), "ring": (6.6, 14.0, 8.4)}
_HW_LAT = {
    "nvlink": {"tree": (0.6, 1.25, 28.0), "ring": (0.6, 1.9, 3.4)},
    "pcie": {"tree": (1.0, 1.9, 28.0), "ring": (1.0, 2.5, 5.7)},
    "net": {"tree": (5.0, 8.5, 28.0), "ring": (2.7, 4.0, 14.0)},
}
_LL_MAX_BW = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (87.7, 22.5, 19.0))
_RING_LL128_MAX = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7))
_TREE_LL128_MAX = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0))
_TREE_MAX = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0))
_TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9),
)  # fmt: skip
_FUNCTIONS = {
    "all-reduce": "allreduce", "all-gather": "allgather", "reduce-scatter": "reducescatter",
    "collective-broadcast": "broadcast", "broadcast": "broadcast", "reduce": "reduce",
}  # fmt: skip
_LL128_PER_FUNCTION_OK = {70, 80, 90}


def nccl_function(opcode: str) -> str | None:
    """NCCL's collective for an HLO opcode or NCCL name (``allreduce`` ...), or None when NCCL
    runs it as point-to-point sends (all-to-all, permutes), which its tuner does not model."""
    base = opcode.removesuffix("-start").removesuffix("-done")
    return _FUNCTIONS.get(base, base if base in _FUNCTIONS.values() else None)


def _log2i(value: int) -> int:
    return value.bit_length() - 1 if value > 0 else -1


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
) -> float:
    """NCCL's predicted time in microseconds for ``nbytes`` (the collective's size as
    nccl-tests counts it) over ``ranks`` ranks on ``nodes`` nodes, with per-channel graph
    bandwidths ``bw_intra`` and ``bw_inter`` in GB/s; ``inf`` where NCCL disables the
    combination (tree for anything but all-reduce)."""
    function = nccl_function(opcode)
    if function is None:
        raise InvalidArgumentError(f"NCCL's tuner has no model for {opcode!r}")
    if algorithm not in ALGORITHMS or protocol not in PROTOCOLS or intra not in ("nvlink", "pcie"):
        raise InvalidArgumentError(
            f"algorithm must be one of {ALGORITHMS}, protocol one of {PROTOCOLS}, intra nvlink or pcie"
        )
    if ranks < 2:
        return 0.0
    if algorithm == "tree" and function != "allreduce":
        return math.inf
    p = PROTOCOLS.index(protocol)
    cap = 2 if sm >= 90 else 1 if sm >= 80 else 0
    index2 = nodes - 1 if nodes <= 2 else 2
    ll_max = _LL_MAX_BW[cap if nodes == 1 else 0][index2]
    ppn = ranks / nodes
    nsteps = 2 * (ranks - 1) if function == "allreduce" else (
        ranks - 1 if function in ("allgather", "reducescatter") else ranks)  # fmt: skip
    if function == "allreduce":
        inter_steps = 2 * nodes if nodes > 1 else 0
    else:
        inter_steps = nodes - 1 if function in ("allgather", "reducescatter") else nodes
    bus = channels * (bw_intra if nodes <= 2 else bw_inter)
    if algorithm == "ring":
        if protocol == "ll":
            single_gather = nodes == 1 and function not in ("allreduce", "reduce")
            bus = min(ll_max, bus * (1 / 3 if single_gather else 1 / 4))
        elif protocol == "ll128":
            bus = min(bus * (0.7 if ppn < 2 else 0.92), channels * _RING_LL128_MAX[cap][index2])
        algbw = bus * ranks / nsteps
    else:
        bus = min(bus * 0.92, channels * _TREE_MAX[cap][index2])
        if protocol == "ll":
            bus = min(bus / 3.8, ll_max)
        elif protocol == "ll128":
            bus = min(bus * (7 / 9 if nodes == 1 else 120 / 128), channels * _TREE_LL128_MAX[cap][index2])
        algbw = bus * 0.5
    intra_lat = _HW_LAT[intra][algorithm][p]
    inter_lat = _HW_LAT["net"][algorithm][p]
    latency = _BASE_LAT[algorithm][p]
    if algorithm == "ring":
        if function in ("broadcast", "reduce"):
            latency += _HW_LAT[intra if nodes == 1 else "net"][algorithm][p]
        else:
            overhead = (3.0 if protocol == "simple" else 1.0) if nodes > 1 else 0.0
            intra_lat = max(intra_lat, overhead)
            latency += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat
        if (protocol == "simple" and nodes > 1 and function == "allreduce"
                and nbytes / (channels * ranks) >= 64):  # fmt: skip
            latency *= 1.9 if sm < 80 else 1.4
    else:
        latency += 2 * ((ranks // nodes - 1) * intra_lat + _log2i(nodes) * inter_lat)
        log_size = max(_log2i(int(nbytes) >> 6), 0)
        if log_size < 23:
            algbw *= _TREE_CORRECTION[p][log_size]
    if algbw <= 0:
        return math.inf
    return latency + nbytes / (1000.0 * algbw)


def nccl_best_time(
    opcode: str, nbytes: float, ranks: int, nodes: int, bw_intra: float, bw_inter: float,
    channels: int, sm: int = 90, intra: str = "nvlink",
) -> tuple[float, str, str]:  # fmt: skip
    """NCCL's choice: the fastest (time in us, algorithm, protocol) among those enabled by
    default (LL128 only with NVLink on SM70, SM80 and SM90, as ``tuning.cc`` enables it)."""
    options = []
    for algorithm in ALGORITHMS:
        for protocol in PROTOCOLS:
            if protocol == "ll128" and not (intra == "nvlink" and sm in _LL128_PER_FUNCTION_OK):
                continue
            time = nccl_time(opcode, nbytes, ranks, nodes, bw_intra, bw_inter, channels,
                             algorithm, protocol, sm, intra)  # fmt: skip
            options.append((time, algorithm, protocol))
    return min(options)
