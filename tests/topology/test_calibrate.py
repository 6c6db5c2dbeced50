"""Alpha and beta fitted from an nccl-tests log, and the cluster they calibrate."""

from __future__ import annotations

from pathlib import Path

import pytest

import meshtopo as mt
from meshtopo.topology import (
    calibrated,
    estimate,
    fit_nccl_tests,
    fit_tiers,
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
    tiers = fit_tiers(preset("h100-8x", hosts=2), fit)
    assert cluster.network.bandwidth == pytest.approx(tiers.network_bandwidth)  # 8 GPUs, 8 NICs
    # The hierarchical model on the calibrated cluster is the fitted line, and at 8 GiB the
    # measurement (47535 us) within 1 %.
    for size in (8, 2**20, 2**33):
        result = estimate(cluster, [list(range(16))], "all-reduce", size)
        assert result.time("hierarchical") == pytest.approx(fit.alpha + fit.beta * size, rel=1e-9)
    assert estimate(cluster, [list(range(16))], "all-reduce", 2**33).time("hierarchical") == (
        pytest.approx(47535e-6, rel=0.01))  # fmt: skip


def test_two_host_log_splits_over_host_and_network_tiers():
    fit = fit_nccl_tests(LOG.read_text())
    tiers = fit_tiers(preset("h100-8x", hosts=2), fit)
    # NCCL's ring of 16 ranks on 2 hosts: 30 steps, 2 * (2 - 1) on the network; the host tier
    # keeps the preset's 3.4 us and 450 GB/s, the network takes the rest of alpha and beta.
    assert (tiers.steps, tiers.inter_steps) == (30, 2)
    assert (tiers.host_alpha, tiers.host_bandwidth) == (3.4e-6, 4.5e11)
    assert tiers.network_alpha == pytest.approx((123.0e-6 - 28 * 3.4e-6) / 2)
    c_host, c_network = 2 * 7 / 8, 2 * 1 / 2 / 8
    assert (tiers.c_host, tiers.c_network) == (c_host, c_network)
    assert c_host / 4.5e11 + c_network / tiers.network_bandwidth == pytest.approx(fit.beta)
    terms = tiers.terms()
    assert all(t["fitted"] == pytest.approx(fit.alpha + fit.beta * t["size"]) for t in terms)
    dominant = [t["dominant"] for t in terms]
    # Host-step latency (95.2 us) up to 16 MiB, host bandwidth (3.89 ps/B: 130 us at 32 MiB)
    # from 32 MiB; the network's 1.69 ps/B and 27.8 us never dominate.
    assert dominant.index("host_bandwidth") == 22 and set(dominant) == {"host_latency", "host_bandwidth"}


def test_one_host_fit_then_two_host_fit_use_each_other(tmp_path):
    host_fit = fit_nccl_tests(synthetic_log(20e-6, 3.6e11, 8, 1))
    host = calibrated(preset("h100-8x", hosts=2), host_fit)
    path = tmp_path / "host.json"
    save_cluster(host, path)
    reused = load_cluster(path)
    assert reused == host and reused.host_link.links == 0  # a measurement: no NVLS re-pricing
    tiers = fit_tiers(reused, fit_nccl_tests(LOG.read_text()))
    assert tiers.host_bandwidth == pytest.approx(3.6e11, rel=0.01)
    assert tiers.host_alpha == pytest.approx(host_fit.alpha / 14)
    both = calibrated(reused, fit_nccl_tests(LOG.read_text()))
    assert both.host_link == host.host_link
    one_host = estimate(both, [list(range(8))], "all-reduce", 2**30, sm=90)
    assert one_host.time("hierarchical") == pytest.approx(host_fit.alpha + host_fit.beta * 2**30, rel=1e-9)


def test_a_log_faster_than_the_host_link_alone_is_refused():
    fit = fit_nccl_tests(LOG.read_text())
    slow = calibrated(preset("h100-8x", hosts=2), fit_nccl_tests(synthetic_log(20e-6, 2.0e11, 8, 1)))
    with pytest.raises(mt.InvalidArgumentError, match="as fast as 'h100-8x\\+calibrated'"):
        fit_tiers(slow, fit)


def test_log_without_results_is_refused():
    with pytest.raises(mt.InvalidArgumentError, match="has 0 result lines"):
        fit_nccl_tests("# nothing here\n")
    with pytest.raises(mt.InvalidArgumentError, match="names no ranks"):
        fit_nccl_tests("  1024 256 float sum -1 10.0 0.1 0.1 0\n  2048 512 float sum -1 12.0 0.1 0.1 0\n")


def _logged_rows(text: str) -> list[tuple[int, float]]:
    """(size in bytes, out-of-place time in seconds) of each result line of an nccl-tests
    log, read here from its columns (size count type redop root time ...; time in us)."""
    rows = []
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0].isdigit() and len(fields) > 6:
            rows.append((int(fields[0]), float(fields[5]) * 1e-6))
    return rows


def test_residuals_and_fit_error_against_the_logged_times() -> None:
    fit = fit_nccl_tests(LOG.read_text())
    logged = _logged_rows(LOG.read_text())
    assert [t["size"] for t in fit.terms()] == [size for size, _ in logged]
    expected = [(fit.alpha + fit.beta * size) / time - 1 for size, time in logged]
    assert [t["residual"] for t in fit.terms()] == pytest.approx(expected, rel=1e-12)
    assert fit.fit_error == pytest.approx(
        (sum(r * r for r in expected) / len(expected)) ** 0.5, rel=1e-12)


def test_a_bandwidth_past_the_line_rate_is_a_warning() -> None:
    fit = fit_nccl_tests(LOG.read_text())
    cluster = preset("h100-8x", 2)
    tiers = fit_tiers(cluster, fit)
    nic = tiers.network_bandwidth * 8 / cluster.nics_per_host  # type: ignore[operator]
    assert nic > cluster.network.bandwidth
    assert tiers.warnings == (
        f"the fitted bandwidth per NIC, {nic / 1e9:.1f} GB/s, exceeds h100-8x's line rate of "
        f"{cluster.network.bandwidth / 1e9:.1f} GB/s: the straight line does not describe "
        f"these measurements (fit error {fit.fit_error:.0%})",)
