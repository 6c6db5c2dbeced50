"""NCCL's tuner formulas, worked by hand from ``src/graph/tuning.cc``."""

from __future__ import annotations

import math

import pytest

import meshtopo as mt
from meshtopo.topology import nccl_best_time, nccl_time


def test_single_node_ring_simple_all_reduce():
    # busBw = 16 channels * 28.125 = 450; algBw = 450 * 8 / 14; latency 8.4 + 14 * 3.4.
    time = nccl_time("all-reduce", 2**30, 8, 1, 450 / 16, 450 / 16, 16, "ring", "simple")
    assert time == pytest.approx(8.4 + 14 * 3.4 + 2**30 / (1000 * 450 * 8 / 14))


def test_multi_node_ring_simple_all_reduce_has_the_plateau_factor():
    # 4 nodes x 8: 62 steps, 8 on the network; intra latency max(3.4, 3 * 1.0) = 3.4;
    # bandwidth from the inter graph (nodes > 2); latency * 1.4 once a channel has >= 64 B/rank.
    bw = 400 / 16
    time = nccl_time("all-reduce", 2**30, 32, 4, bw, bw, 16, "ring", "simple", sm=90)
    latency = (8.4 + 54 * 3.4 + 8 * 14.0) * 1.4
    assert time == pytest.approx(latency + 2**30 / (1000 * 400 * 32 / 62))


def test_tree_all_reduce_caps_and_corrects():
    # busBw = min(400 * 0.92, 16 * 36.0) = 368; algBw = 184; 1 MiB: log2(2**20 >> 6) = 14 -> 0.5.
    bw = 400 / 16
    time = nccl_time("all-reduce", 2**20, 32, 4, bw, bw, 16, "tree", "simple", sm=90)
    latency = 0.0 + 2 * ((32 // 4 - 1) * 28.0 + 2 * 28.0)
    assert time == pytest.approx(latency + 2**20 / (1000 * 184 * 0.5))


def test_ring_ll_and_ll128_refinements():
    bw = 450 / 16
    ll = nccl_time("all-gather", 2**20, 8, 1, bw, bw, 16, "ring", "ll", sm=90)
    # LL on one node for a gather: busBw * 1/3 capped by llMaxBw (Hopper N1: 87.7).
    assert ll == pytest.approx(6.6 + 7 * 0.6 + 2**20 / (1000 * 87.7 * 8 / 7))
    ll128 = nccl_time("all-gather", 2**20, 8, 1, bw, bw, 16, "ring", "ll128", sm=90)
    assert ll128 == pytest.approx(14.0 + 7 * 1.9 + 2**20 / (1000 * 414.0 * 8 / 7))


def test_tree_only_for_all_reduce_and_none_for_point_to_point():
    assert math.isinf(nccl_time("all-gather", 1e6, 8, 1, 10, 10, 8, "tree", "simple"))
    with pytest.raises(mt.InvalidArgumentError, match="no model for 'all-to-all'"):
        nccl_time("all-to-all", 1e6, 8, 1, 10, 10, 8)


def test_best_choice_moves_from_ll_to_simple_with_size():
    small = nccl_best_time("all-reduce", 1024, 8, 1, 450 / 16, 450 / 16, 16, sm=90)
    large = nccl_best_time("all-reduce", 2**30, 8, 1, 450 / 16, 450 / 16, 16, sm=90)
    assert small[2] == "ll" and large[2] in ("simple", "ll128")
