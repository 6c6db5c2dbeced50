"""The constants of NCCL's tuner, transcribed from ``src/graph/tuning.cc`` (NCCL 2.28-2.30,
``ncclTunerConstantsDefaults``, ``nvlsEfficiency``, ``treeCorrectionFactor``).

Indexing follows NCCL's: algorithms in ``ALGORITHMS`` order (NCCL's ``NCCL_ALGO_*`` ids),
protocols in ``PROTOCOLS`` order, compute-capability rows Volta, Ampere, Hopper, Blackwell
(``ARCH``), node-count columns one node, two nodes, more (``index2``). Latencies are in
microseconds, bandwidths in GB/s per channel.

>>> BASE_LATENCY["ring"], HW_LATENCY["net"]["nvls_tree"], NVLS_EFFICIENCY
((6.6, 14.0, 8.4), (0.0, 0.0, 20.9), (0.0, 0.0, 0.85, 0.74))
"""

from __future__ import annotations

ALGORITHMS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
"""NCCL's algorithms, in its ``NCCL_ALGO_*`` order."""
PROTOCOLS = ("ll", "ll128", "simple")
"""NCCL's protocols, in its ``NCCL_PROTO_*`` order."""


def arch(sm: int) -> int:
    """NCCL's compute-capability row: 0 Volta and older, 1 Ampere, 2 Hopper, 3 Blackwell."""
    return 3 if sm >= 100 else 2 if sm >= 90 else 1 if sm >= 80 else 0


BASE_LATENCY = {
    "tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4),
    "collnet_direct": (0.0, 0.0, 0.0), "collnet_chain": (0.0, 0.0, 0.0),
    "nvls": (0.0, 0.0, 0.0), "nvls_tree": (0.0, 0.0, 0.0), "pat": (8.0, 8.0, 8.0),
}  # fmt: skip
HW_LATENCY = {
    "nvlink": {
        "tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4),
        "collnet_direct": (0.0, 0.0, 3.7), "collnet_chain": (0.0, 0.0, 2.8),
        "nvls": (0.0, 0.0, 25.0), "nvls_tree": (0.0, 0.0, 25.0), "pat": (0.0, 0.0, 4.0),
    },
    "pcie": {
        "tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7),
        "collnet_direct": (0.0, 0.0, 3.7), "collnet_chain": (0.0, 0.0, 2.8),
        "nvls": (0.0, 0.0, 0.0), "nvls_tree": (0.0, 0.0, 0.0), "pat": (0.0, 0.0, 4.0),
    },
    "net": {
        "tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0),
        "collnet_direct": (0.0, 0.0, 31.0), "collnet_chain": (0.0, 0.0, 30.0),
        "nvls": (0.0, 0.0, 18.0), "nvls_tree": (0.0, 0.0, 20.9), "pat": (0.0, 0.0, 14.0),
    },
}  # fmt: skip
"""``hwLatencies``: per-step latency of the fabric (NVLink, PCIe, network) per algorithm."""

LL_MAX_BW = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0))
"""``llMaxBws``: one node indexes by GPU arch; several by CPU (row 0 Intel, 1 AMD)."""
RING_LL128_MAX_BW = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 36.7), (40.0, 40.0, 40.0))
TREE_LL128_MAX_BW = ((20.0, 20.0, 20.0), (20.0, 20.0, 20.0), (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))
TREE_MAX_BW = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))
NVLS_TREE_MAX_BW = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 80.0))
NVLS_EFFICIENCY = (0.0, 0.0, 0.85, 0.74)
"""``nvlsEfficiency``: the share of an NVLS graph's bandwidth its kernels reach, per arch."""

TREE_CORRECTION = (
    (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)  # fmt: skip
"""``treeCorrectionFactor`` per protocol and ``log2(bytes >> 6)`` (64 B .. 512 MiB)."""

MAX_DIRECT_ARITY = 7
"""``NCCL_MAX_DIRECT_ARITY``: CollNet Direct serves at most 8 ranks per node."""
MAX_NVLS_ARITY = 32
"""``NCCL_MAX_NVLS_ARITY``: NVLS heads (and gather/scatter ranks per node) at most."""
