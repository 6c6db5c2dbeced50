"""The cost models against the real thing: nccl-tests' bus-bandwidth arithmetic, published
all-reduce measurements on P6-B200, and the scaling book's TPU v5e all-gather."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import meshtopo as mt
from meshtopo.topology import busbw_factor, estimate, parse_nccl_tests, preset

LOG = Path(__file__).parent / "data" / "a3mega_all_reduce_16.txt"


def nccl_tests_bw(test: str, count: int, typesize: int, sec: float, nranks: int) -> tuple[float, float]:
    """nccl-tests' ``<Test>GetBw`` (src/*.cu), transcribed: (algBw, busBw) in GB/s."""
    scaled = {"all_gather": nranks, "reduce_scatter": nranks, "alltoall": nranks}.get(test, 1)
    base = count * typesize * scaled / 1.0e9 / sec
    factor = {
        "all_reduce": 2 * (nranks - 1) / nranks,
        "all_gather": (nranks - 1) / nranks,
        "reduce_scatter": (nranks - 1) / nranks,
        "alltoall": (nranks - 1) / nranks,
        "broadcast": 1.0, "reduce": 1.0, "sendrecv": 1.0,
    }[test]  # fmt: skip
    return base, base * factor


OPCODE = {"all_reduce": "all-reduce", "all_gather": "all-gather",
          "reduce_scatter": "reduce-scatter", "alltoall": "all-to-all",
          "broadcast": "broadcast", "reduce": "reduce", "sendrecv": "sendrecv"}  # fmt: skip


@pytest.mark.parametrize("test", sorted(OPCODE))
@pytest.mark.parametrize("nranks", [2, 3, 8, 16, 1024])
def test_busbw_factor_is_nccl_tests_factor(test, nranks):
    count, typesize, sec = 1 << 20, 4, 1.25e-3
    alg, bus = nccl_tests_bw(test, count, typesize, sec, nranks)
    scaled = nranks if test in ("all_gather", "reduce_scatter", "alltoall") else 1
    size = count * typesize * scaled  # our S: the size nccl-tests prints in its first column
    assert float(busbw_factor(OPCODE[test], nranks)) * size / sec / 1e9 == pytest.approx(bus, rel=1e-12)
    assert size / sec / 1e9 == pytest.approx(alg, rel=1e-12)


def test_busbw_factor_reproduces_a_published_log_to_its_printed_digits():
    rows, ranks, hosts = parse_nccl_tests(LOG.read_text())
    assert (len(rows), ranks, hosts) == (31, 16, 2)
    for row in rows:
        busbw = float(busbw_factor("all-reduce", ranks)) * row.size / row.time
        assert round(busbw / 1e9, 2) == pytest.approx(row.busbw / 1e9, abs=0.0101), row
        assert round(row.size / row.time / 1e9, 2) == pytest.approx(row.algbw / 1e9, abs=0.0101)


GIB, MIB = 2**30, 2**20
# Stas Bekman, "Machine Learning Engineering Open Book", network/README.md, "Inter-node speed
# depends on intra-node speed" (github.com/stas00/ml-engineering): all_reduce_bench.py on 1 and
# 4 AWS P6-B200 nodes (8 x B200 per node, NVLink5 900 GB/s per GPU one way, 8 x EFA at 50 GB/s
# per GPU; torch 2.9.1+cu130, NCCL 2.27.7), bus bandwidth in GB/s. The book's todo.md records
# NCCL's choice on one node: "Algo NVLS" at 4 GiB (740.45 GB/s on a rerun).
P6_B200 = [(1, 4 * GIB, 740.64), (1, 16 * GIB, 845.67), (4, 4 * GIB, 377.34),
           (4, 16 * GIB, 381.80), (4, 64 * MIB, 156.74)]  # fmt: skip


def _p6(nodes: int, size: int, busbw: float) -> tuple[float, mt.topology.Estimate]:
    n = 8 * nodes
    measured = size * 2 * (n - 1) / n / (busbw * 1e9)
    return measured, estimate(preset("p6-b200", hosts=nodes), [list(range(n))], "all-reduce", size, sm=100)


@pytest.mark.parametrize(("nodes", "size", "busbw"), [c for c in P6_B200 if c[1] >= GIB])
def test_hierarchical_model_within_15_percent_at_a_gib_and_more(nodes, size, busbw):
    measured, result = _p6(nodes, size, busbw)
    assert result.time("hierarchical") == pytest.approx(measured, rel=0.15)


def test_plain_intra_then_inter_is_11_and_12_percent_slow_on_four_nodes():
    for size, busbw, expected in ((4 * GIB, 377.34, 0.108), (16 * GIB, 381.80, 0.122)):
        measured, result = _p6(4, size, busbw)
        latency = 56 * 3.4e-6 + 6 * 14e-6  # NCCL's 62 ring steps, 2 * (4 - 1) on the network
        plain = result.time("hierarchical") - latency
        assert plain / measured - 1 == pytest.approx(expected, abs=0.005)


def test_one_node_is_nvls_at_nccls_nvlink_figure():
    """NVLink5's 900 GB/s is the signalling rate; NCCL counts an SM100 link at 40.1 GB/s
    (``SM100_NVLINK_BW``, src/graph/topo.h), 721.8 GB/s for 18 links, and runs the one-node
    all-reduce as NVLS, each GPU moving S (n+1)/n each way at ``nvlsEfficiency`` 0.74
    (Blackwell, src/graph/tuning.cc): 721.8 * 0.74 * 8/9 = 474.8 GB/s of algorithm bandwidth,
    831 GB/s of bus bandwidth, against 740.64 (4 GiB) and 845.67 (16 GiB) measured. A ring at
    the signalling rate would be 17.7 % fast at 4 GiB."""
    algbw = 18 * 40.1e9 * 0.74 * 8 / 9
    for size, busbw, expected in ((4 * GIB, 740.64, -0.106), (16 * GIB, 845.67, 0.019)):
        measured, result = _p6(1, size, busbw)
        assert result.time("hierarchical") == pytest.approx(size / algbw + 25e-6, rel=1e-12)
        assert result.time("hierarchical") / measured - 1 == pytest.approx(expected, abs=0.005)
    measured, result = _p6(1, 4 * GIB, 740.64)
    assert result.time("busbw") / measured - 1 == pytest.approx(-0.177, abs=0.005)


def test_nccl_model_reproduces_its_own_graphs_on_p6():
    """NCCL's tuner over its searched graphs: one node NVLS, 8 heads at 80 GB/s (9 x 80 <=
    721.8) with the inter speed at the top of the SM100 table (90), bw = min(80 * 0.74 * 7/8 *
    2, 90), bus 720 GB/s, tied with the ring's 16 x 45, so within 3 % at 4 GiB and 17.5 % slow
    at 16 GiB, where the measurement exceeds NCCL's own bound. Four nodes: one channel per
    50 GB/s NIC at 48 GB/s, 384 GB/s, NVLS Tree by its lower latency: within 1.5 %.
    (The tables are NCCL 2.28-2.30's; 2.27.7, which measured these, had no NVLS efficiency
    and converted NVLS bus bandwidth by 5/6: 8 x 80 x 5/6 = 533 GB/s of algorithm bandwidth,
    20 % fast at 4 GiB.)"""
    expected = {(1, 4 * GIB): (0.031, "nvls/simple"), (1, 16 * GIB): (0.175, "nvls/simple"),
                (4, 4 * GIB): (-0.012, "nvls_tree/simple"), (4, 16 * GIB): (-0.005, "nvls_tree/simple")}  # fmt: skip
    for (nodes, size), (error, algorithm) in expected.items():
        busbw = next(b for n, s, b in P6_B200 if (n, s) == (nodes, size))
        measured, result = _p6(nodes, size, busbw)
        assert result.time("nccl") / measured - 1 == pytest.approx(error, abs=0.005)
        assert result.nccl_algorithm == algorithm


def test_latency_term_brings_64mib_within_30_percent():
    measured, result = _p6(4, 64 * MIB, 156.74)
    assert result.time("hierarchical") == pytest.approx(measured, rel=0.30)
    bandwidth_only = result.time("busbw")
    assert bandwidth_only / measured - 1 < -0.5


def test_models_side_by_side_on_four_nodes():
    measured, result = _p6(4, 16 * GIB, 381.80)
    times = result.times()
    assert times["busbw"] == pytest.approx(measured, rel=0.06)
    assert times["nccl"] == pytest.approx(measured, rel=0.06)


def test_scaling_book_v5e_all_gather_without_wraparound():
    """v5e, all-gather of bf16[2048, 8192] (34 MB) over Y = 4 chips without wraparound.

    The book predicts 377 us from V / W_bidi (34e6 / 9e10) and 560 us once the missing
    wraparound is counted, against 680 us measured. The model gives the second: a line of 4
    chips has no ring, so the worst link carries (n-1)/n of V in one direction at 4.5e10 B/s,
    (3/4) * 33554432 / 4.5e10 = 559.2 us, plus 1 us per hop for 3 steps of up to 3 hops.
    """
    cluster = preset("tpu-v5e", shape=(4, 4))
    groups = mt.Mesh({"y": 4, "x": 4}).group_array("y")
    result = estimate(cluster, groups, "all-gather", 2048 * 8192 * 2)
    assert result.time("busbw") == pytest.approx(3 / 4 * 2048 * 8192 * 2 / 4.5e10, rel=1e-12)
    assert result.time("hierarchical") == pytest.approx(559.2e-6 + 9e-6, abs=0.1e-6)
    assert result.time("hierarchical") / 680e-6 - 1 == pytest.approx(-0.165, abs=0.005)
    assert np.isnan(result.time("nccl"))
    wrapped = preset("tpu-v5e", shape=(4, 16))  # Y = 16 wraps: a ring both ways
    ring = mt.Mesh({"y": 16, "x": 4}).group_array("y")
    assert estimate(wrapped, ring, "all-gather", 34e6).time("busbw") == pytest.approx(
        15 / 16 * 34e6 / 9e10)  # fmt: skip


@pytest.mark.parametrize(
    ("opcode", "factor"),
    [("all-reduce", 2.0), ("reduce-scatter", 1.0), ("all-to-all", 0.25)],
)
def test_torus_formulas_relative_to_all_gather(opcode, factor):
    cluster = preset("tpu-v4", shape=(4, 4, 4))
    groups = mt.Mesh({"z": 4, "y": 4, "x": 4}).group_array("x")
    gather = estimate(cluster, groups, "all-gather", 1e9).time("busbw")
    other = estimate(cluster, groups, opcode, 1e9)
    bandwidth = other.hierarchical.max() - 3 * (2 if opcode == "all-reduce" else 1) * 1e-6
    assert bandwidth == pytest.approx(factor * gather, rel=1e-9)


def test_torus_permute_uses_one_link_one_way():
    cluster = preset("tpu-v5e", shape=(16, 16))
    groups = mt.Mesh({"y": 16, "x": 16}).group_array("y")
    assert estimate(cluster, groups, "collective-permute", 1e9).time("busbw") == pytest.approx(1e9 / 4.5e10)


def test_groups_sharing_a_host_pair_share_its_nics():
    cluster = preset("h100-8x", hosts=2)  # 8 x 50 GB/s per host
    alone = [[0, 1, 2, 3, 8, 9, 10, 11]]
    shared = [*alone, [4, 5, 6, 7, 12, 13, 14, 15]]
    one = estimate(cluster, alone, "all-gather", 2**30)
    two = estimate(cluster, shared, "all-gather", 2**30)
    assert (one.tiers.network_sharers.tolist(), two.tiers.network_sharers.tolist()) == ([4], [8, 8])
    # busbw: the group's share of the host's 400 GB/s is 4/4 alone, 4/8 when shared.
    assert one.time("busbw") == pytest.approx(7 / 8 * 2**30 / 4e11)
    assert two.time("busbw") == pytest.approx(7 / 8 * 2**30 / 2e11)
    # hierarchical: the inter-host phase moves (k-1)/k * S/m per device at 400/4 or 400/8 GB/s.
    intra = 3 / 4 * 2**30 / 4.5e11
    latency = (7 - 1) * 3.4e-6 + 1 * 14e-6
    assert one.time("hierarchical") == pytest.approx(intra + 1 / 2 * 2**30 / 4 / 1e11 + latency)
    assert two.time("hierarchical") == pytest.approx(intra + 1 / 2 * 2**30 / 4 / 5e10 + latency)
