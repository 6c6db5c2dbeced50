"""Alpha and beta fitted from an nccl-tests log, and the cluster they calibrate."""

from __future__ import annotations

from pathlib import Path

import pytest

import meshtopo as mt
from meshtopo.topology import (
    calibrated,
    estimate,
    fit_nccl_tests,
    load_cluster,
    preset,
    save_cluster,
)

LOG = Path(__file__).parent / "data" / "a3mega_all_reduce_16.txt"


def synthetic_log(alpha: float, busbw: float, ranks: int, hosts: int) -> str:
    lines = [f"#  Rank {r:2d} Group  0 Pid {100 + r} on host{r * hosts // ranks} device {r} [0x0] GPU"
             for r in range(ranks)]  # fmt: skip
    factor = 2 * (ranks - 1) / ranks
    for power in range(10, 34, 2):
        size = 2**power
        time = alpha + factor * size / busbw
        bus = factor * size / time / 1e9
        lines.append(f"  {size:>12d} {size // 4:>12d} float sum -1 {time * 1e6:10.1f} "
                     f"{size / time / 1e9:7.2f} {bus:7.2f} 0 {time * 1e6:10.1f} 0 0 0")  # fmt: skip
    return "\n".join(lines)


def test_fit_recovers_alpha_and_bus_bandwidth():
    fit = fit_nccl_tests(synthetic_log(25e-6, 3.0e11, 8, 1))
    assert (fit.ranks, fit.hosts) == (8, 1)
    assert fit.alpha == pytest.approx(25e-6, rel=0.05)
    assert fit.bus_bandwidth == pytest.approx(3.0e11, rel=0.01)
    terms = fit.terms()
    assert terms[0]["dominant"] == "latency" and terms[-1]["dominant"] == "bandwidth"


def test_published_log_fits_and_calibrates_the_network():
    fit = fit_nccl_tests(LOG.read_text())
    assert (fit.ranks, fit.hosts, fit.alpha) == (16, 2, pytest.approx(123.0e-6))
    assert fit.bus_bandwidth == pytest.approx(336.4e9, rel=0.001)
    dominant = [t["dominant"] for t in fit.terms()]
    assert dominant.index("bandwidth") == 22  # 32 MiB: first size where beta * S > alpha
    cluster = calibrated(preset("h100-8x", hosts=2), fit)
    assert cluster.network.bandwidth == pytest.approx(fit.bus_bandwidth / 8)
    result = estimate(cluster, [list(range(16))], "all-reduce", 2**33)
    assert result.time("busbw") == pytest.approx(47535e-6, rel=0.02)


def test_one_host_log_calibrates_the_host_link(tmp_path):
    fit = fit_nccl_tests(synthetic_log(20e-6, 4.0e11, 8, 1))
    cluster = calibrated(preset("h100-8x"), fit)
    assert cluster.host_link.bandwidth == pytest.approx(4.0e11, rel=0.01)
    assert cluster.host_link.latency == pytest.approx(fit.alpha / 14)
    path = tmp_path / "fitted.json"
    save_cluster(cluster, path)
    assert load_cluster(path) == cluster


def test_log_without_results_is_refused():
    with pytest.raises(mt.InvalidArgumentError, match="has 0 result lines"):
        fit_nccl_tests("# nothing here\n")
    with pytest.raises(mt.InvalidArgumentError, match="names no ranks"):
        fit_nccl_tests("  1024 256 float sum -1 10.0 0.1 0.1 0\n  2048 512 float sum -1 12.0 0.1 0.1 0\n")
