"""NCCL's tuner and topology search, worked by hand from ``src/graph/tuning.cc`` and
``src/graph/search.cc`` (NCCL 2.28-2.30): every figure below is NCCL's formula evaluated on
paper, not a value read back from our code."""

from __future__ import annotations

import math

import pytest

import meshtopo as mt
from meshtopo.topology import estimate, nccl_best_time, nccl_time, preset
from meshtopo.topology._nccl_graph import nccl_graphs
from meshtopo.topology._nccl_tuning import NcclGraph, nccl_tuning

B200_NVLINK = 18 * 40.1  # ncclTopoNVLinkBw(SM100) per link x 18 links
H100_NVLINK = 18 * 20.6


def test_single_node_ring_simple_all_reduce():
    # busBw = 16 channels * 45 = 720; algBw = 720 * 8 / 14; latency 8.4 + 14 * 3.4.
    time = nccl_time("all-reduce", 2**30, 8, 1, 45.0, 45.0, 16, "ring", "simple", sm=100)
    assert time == pytest.approx(8.4 + 14 * 3.4 + 2**30 / (1000 * 720 * 8 / 14))


def test_multi_node_ring_simple_all_reduce_has_the_plateau_factor():
    # 4 nodes x 8: 62 steps, 2 * (4 - 1) = 6 on the network; intra step max(3.4, 3 * 1.0);
    # bandwidth from the inter graph (nodes > 2); latency * 1.4 once a channel has >= 64 B/rank.
    time = nccl_time("all-reduce", 2**30, 32, 4, 48.0, 48.0, 8, "ring", "simple", sm=100)
    latency = (8.4 + 56 * 3.4 + 6 * 14.0) * 1.4
    assert time == pytest.approx(latency + 2**30 / (1000 * 384 * 32 / 62))


def test_tree_all_reduce_caps_and_corrects():
    # busBw = min(400 * 0.92, 16 * 36.0) = 368; algBw = 184; 1 MiB: log2(2**20 >> 6) = 14 -> 0.5.
    bw = 400 / 16
    time = nccl_time("all-reduce", 2**20, 32, 4, bw, bw, 16, "tree", "simple", sm=90)
    latency = 8.4 + 2 * ((32 // 4 - 1) * 4.0 + 2 * 14.0)
    assert time == pytest.approx(latency + 2**20 / (1000 * 184 * 0.5))


def test_ring_ll_and_ll128_refinements():
    bw = 450 / 16
    ll = nccl_time("all-gather", 2**20, 8, 1, bw, bw, 16, "ring", "ll", sm=90)
    # LL: min(llMaxBw Hopper N1 141, 450 * 0.5); algBw * 8 / 7 for a gather.
    assert ll == pytest.approx(6.6 + 7 * 0.6 + 2**20 / (1000 * 141.0 * 8 / 7))
    ll128 = nccl_time("all-gather", 2**20, 8, 1, bw, bw, 16, "ring", "ll128", sm=90)
    assert ll128 == pytest.approx(14.0 + 7 * 1.9 + 2**20 / (1000 * 414.0 * 8 / 7))


def test_nvls_one_node_blackwell_and_hopper():
    # bw = min(bwIntra * nvlsEfficiency * (ch-1)/ch * 2, bwInter); busBw = ch * bw;
    # algBw = busBw * n / (2(n-1)); latency = NVLink NVLS 25 us.
    graphs = {"nvls": NcclGraph(8, 80.0, 90.0)}
    table = nccl_tuning("all-reduce", 8, 1, graphs, sm=100, nvls=True)
    assert table[("nvls", "simple")] == pytest.approx((25.0, 8 * min(80 * 0.74 * 7 / 8 * 2, 90) * 8 / 14))
    hopper = nccl_tuning("all-reduce", 8, 1, {"nvls": NcclGraph(8, 40.0, 60.0)}, sm=90, nvls=True)
    assert hopper[("nvls", "simple")] == pytest.approx((25.0, 8 * 40 * 0.85 * 7 / 8 * 2 * 8 / 14))
    # A gather keeps its bus bandwidth: ch * bwIntra * eff * (ch-1)/ch * (ppn-1)/ppn.
    gather = nccl_tuning("all-gather", 8, 1, {"nvls": NcclGraph(8, 40.0, 60.0)}, sm=90, nvls=True)
    assert gather[("nvls", "simple")][1] == pytest.approx(8 * 40 * 0.85 * 7 / 8 * 7 / 8)
    # Without NVLS support, or with one channel, NCCL leaves it out.
    assert nccl_tuning("all-reduce", 8, 1, graphs, sm=100)[("nvls", "simple")][1] == 0.0
    one = nccl_tuning("all-reduce", 8, 1, {"nvls": NcclGraph(1, 80.0, 90.0)}, sm=100, nvls=True)
    assert one[("nvls", "simple")][1] == 0.0
    assert ("nvls", "ll") not in table


def test_nvls_tree_across_nodes_and_nvls_only_with_collnet():
    graphs = {"nvls": NcclGraph(8, 48.0, 48.0), "nvls_tree": NcclGraph(8, 48.0, 48.0)}
    table = nccl_tuning("all-reduce", 32, 4, graphs, sm=100, nvls=True)
    # NVLS Tree: min(48 * 0.74 * 7/8 * 2, 48, perChMaxNVLSTreeBw Blackwell N4 80) = 48 per
    # channel, 384 bus, * 32/62; latency 25 + 2 * log2(4) * 20.9.
    assert table[("nvls_tree", "simple")] == pytest.approx((25 + 4 * 20.9, 384 * 32 / 62))
    assert table[("nvls", "simple")][1] == 0.0  # NVLS across nodes needs CollNet
    with_collnet = nccl_tuning("all-reduce", 32, 4, graphs, sm=100, nvls=True, collnet=True)
    assert with_collnet[("nvls", "simple")] == pytest.approx((25 + 18.0, 384 * 32 / 62))
    # Two nodes double NVLS Tree's inter bandwidth and take the N2 cap (96).
    two = nccl_tuning("all-reduce", 16, 2, graphs, sm=100, nvls=True)
    assert two[("nvls_tree", "simple")][1] == pytest.approx(8 * min(62.16, 96.0, 96.0) * 16 / 30)
    single = nccl_tuning("all-reduce", 8, 1, graphs, sm=100, nvls=True)
    assert single[("nvls_tree", "simple")][1] == 0.0  # disabled on one node
    # NVLS Tree on SM100 takes the tree correction: 1 MiB -> log2(2**14) = 14 -> 0.5.
    small = nccl_time("all-reduce", 2**20, 32, 4, 48, 48, 8, "nvls_tree", "simple", sm=100,
                      graphs=graphs, nvls=True)  # fmt: skip
    assert small == pytest.approx(25 + 4 * 20.9 + 2**20 / (1000 * 384 * 32 / 62 * 0.5))


def test_collnet_direct_and_chain():
    direct = NcclGraph(8, 48.0, 48.0)
    graphs = {"collnet_direct": direct, "collnet_chain": NcclGraph(8, 48.0, 48.0)}
    table = nccl_tuning("all-reduce", 32, 4, graphs, sm=90, collnet=True)
    # Direct: factor = ppn / heads = 1 -> busBw 384, * 0.85 (SM90), * 0.5; latency
    # 2 * (min(1, 7) * 3.7 + 7 * 0.4) + 31.
    assert table[("collnet_direct", "simple")] == pytest.approx((2 * (3.7 + 7 * 0.4) + 31, 384 * 0.85 * 0.5))
    # Chain: 384 * 0.5; latency 2 * 7 * 2.8 + 30.
    assert table[("collnet_chain", "simple")] == pytest.approx((2 * 7 * 2.8 + 30, 192.0))
    assert table[("collnet_direct", "ll")][1] == 0.0
    # Four heads for eight GPUs: factor 2 - (2 - 1) / 2 = 1.5.
    half = nccl_tuning("all-reduce", 32, 4, {"collnet_direct": NcclGraph(4, 48.0, 48.0)}, sm=90, collnet=True)
    assert half[("collnet_direct", "simple")][1] == pytest.approx(4 * 48 / 1.5 * 0.85 * 0.5)
    # Gathers: ppn * min(bwIntra, 0.9 * bwInter), and only with a head per local rank.
    gather = nccl_tuning("all-gather", 32, 4, graphs, sm=90, collnet=True)
    assert gather[("collnet_direct", "simple")][1] == pytest.approx(8 * 0.9 * 48)
    few = nccl_tuning("all-gather", 32, 4, {"collnet_direct": NcclGraph(4, 48.0, 48.0)}, sm=90, collnet=True)
    assert few[("collnet_direct", "simple")][1] == 0.0
    # Without a CollNet network NCCL disables both.
    assert nccl_tuning("all-reduce", 32, 4, graphs, sm=90)[("collnet_chain", "simple")][1] == 0.0


def test_pat_for_one_rank_per_node_gathers():
    ring = NcclGraph(4, 24.0, 24.0)
    table = nccl_tuning("all-gather", 8, 8, {"pat": ring, "ring": ring}, sm=90)
    # busBw = 4 * 24 * 0.75 (no conversion for gathers off the ring); latency
    # 8 + log2(8) * 14 / 3.5 + 8 * 2.8.
    assert table[("pat", "simple")] == pytest.approx((8 + 3 * 14 / 3.5 + 8 * 2.8, 72.0))
    assert ("pat", "simple") not in nccl_tuning("all-gather", 16, 8, {"pat": ring}, sm=90)
    assert ("pat", "simple") not in nccl_tuning("all-reduce", 8, 8, {"pat": ring}, sm=90)


def test_tree_only_for_all_reduce_and_none_for_point_to_point():
    assert math.isinf(nccl_time("all-gather", 1e6, 8, 1, 10, 10, 8, "tree", "simple"))
    with pytest.raises(mt.InvalidArgumentError, match="no model for 'all-to-all'"):
        nccl_time("all-to-all", 1e6, 8, 1, 10, 10, 8)


def test_best_choice_moves_from_ll_to_simple_with_size():
    small = nccl_best_time("all-reduce", 1024, 8, 1, 450 / 16, 450 / 16, 16, sm=90)
    large = nccl_best_time("all-reduce", 2**30, 8, 1, 450 / 16, 450 / 16, 16, sm=90)
    assert small[2] == "ll" and large[2] in ("simple", "ll128")


def test_graph_search_on_b200_and_h100_hosts():
    # One B200 node: 18 x 40.1 = 721.8 GB/s per GPU. Rings: 8 channels fit at 90 (720), the
    # duplication gives 16 x 45 and 16 channels do not fit at 50. NVLS: 8 heads need
    # 9 x speed <= 721.8, so 80; the second pass raises the inter speed to 90.
    b200 = nccl_graphs(B200_NVLINK, "nvlink", 8, 1, 8, 50.0, 100, nvls=True, collnet=False)
    assert b200["ring"] == NcclGraph(16, 45.0, 45.0)
    assert b200["nvls"] == NcclGraph(8, 80.0, 90.0)
    # One H100 node: 370.8 GB/s. Rings 6 x 60 -> 12 x 30; NVLS starts at 50 (60 x 8 > 370.8 x
    # 8/7), needs 9 x 40 <= 370.8, and raises the inter speed 50, 60.
    h100 = nccl_graphs(H100_NVLINK, "nvlink", 8, 1, 8, 50.0, 90, nvls=True, collnet=False)
    assert h100["ring"] == NcclGraph(12, 30.0, 30.0)
    assert h100["nvls"] == NcclGraph(8, 40.0, 60.0)
    # Four nodes, 8 NICs of 50 GB/s: one channel per NIC at 48 (16 x 24 is no better), no
    # duplication below 50 on SM90+; NVLS heads one per NIC at 48.
    four = nccl_graphs(B200_NVLINK, "nvlink", 8, 4, 8, 50.0, 100, nvls=True, collnet=True)
    assert four["ring"] == NcclGraph(8, 48.0, 48.0)
    assert four["nvls"] == NcclGraph(8, 48.0, 48.0)
    assert four["collnet_direct"] == NcclGraph(8, 48.0, 48.0)


def test_estimate_reports_nccl_choice():
    one = estimate(preset("p6-b200"), [list(range(8))], "all-reduce", 2**32, sm=100)
    assert one.nccl_algorithm == "nvls/simple"  # tied with the ring at 720, lower latency
    assert one.time("nccl") == pytest.approx((25 + 2**32 / (1000 * 720 * 8 / 14)) * 1e-6)
    hopper = estimate(preset("h100-8x", hosts=2), [list(range(16))], "all-reduce", 2**30)
    assert hopper.nccl_algorithm == "nvls_tree/simple"
    ampere = estimate(preset("a100-8x", hosts=2), [list(range(16))], "all-reduce", 2**30, sm=80)
    assert ampere.nccl_algorithm == "ring/simple"  # no NVLS before SM90
    sharp = mt.topology.Cluster.from_dict({**preset("h100-8x", hosts=4).to_dict(), "collnet": True})
    assert sharp.collnet and sharp.to_dict()["collnet"] is True
    # With SHARP, NVLS across nodes: 8 heads x min(48 * 0.85 * 7/8 * 2, 48) = 384 bus, and
    # latency 25 + 18 against NVLS Tree's 25 + 2 * 2 * 20.9.
    sharp_choice = estimate(sharp, [list(range(32))], "all-reduce", 2**30)
    assert sharp_choice.nccl_algorithm == "nvls/simple"
    assert sharp_choice.time("nccl") == pytest.approx((43 + 2**30 / (1000 * 384 * 32 / 62)) * 1e-6)
    assert estimate(preset("h100-8x"), [[0, 1]], "all-to-all", 2**20).nccl_algorithm is None


def test_presets_and_nccl_xml_carry_their_compute_capability(tmp_path):
    assert [preset(name).sm for name in ("a100-8x", "h100-8x", "p6-b200", "gb200-nvl72")] == [80, 90, 100, 100]
    groups = [list(range(8))]
    default = estimate(preset("p6-b200"), groups, "all-reduce", 2**32)
    assert default.times() == estimate(preset("p6-b200"), groups, "all-reduce", 2**32, sm=100).times()
    assert default.times() != estimate(preset("p6-b200"), groups, "all-reduce", 2**32, sm=90).times()
    path = tmp_path / "c.json"
    mt.topology.save_cluster(preset("p6-b200", hosts=2), path)
    assert mt.topology.load_cluster(path).sm == 100
    with pytest.raises(mt.InvalidArgumentError, match="cluster sm must be an int"):
        mt.topology.Cluster.from_dict({**preset("h100-8x").to_dict(), "sm": "hopper"})
