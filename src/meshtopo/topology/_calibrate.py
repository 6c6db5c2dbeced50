"""Fit alpha and beta per tier from an nccl-tests log, and put them back into a cluster.

nccl-tests prints one line per size: ``size count type redop root time algbw busbw #wrong``
then the in-place columns (older versions omit ``root``); times are microseconds, bandwidths
GB/s. The ``#  Rank  r Group g Pid p on HOST device d`` header lines give the ranks and hosts.
The fit is ``t = alpha + beta * S`` from the out-of-place times: ``alpha`` is the smallest
time (the latency floor small sizes sit on), ``beta`` the least-squares slope of ``t - alpha``
over ``S`` (which the largest sizes decide: the bandwidth NCCL reaches). Then:

- the bus bandwidth ``B = f(n) / beta`` (nccl-tests' factor ``f``), and at each size which term
  dominates, ``alpha`` or ``beta * S``;
- ``fit_tiers`` splits the line over the tiers the test crossed, as the hierarchical model
  prices it: one host gives the host link (bandwidth ``B``, per-step latency ``alpha /
  nsteps``); several hosts keep the cluster's host tier (a preset's, or an earlier one-host
  fit) and give the network the rest of beta and alpha, so at each size the four terms (host
  and network latency and bandwidth) show which dominates;
- ``calibrated`` writes the fitted tier into the cluster, which ``save_cluster`` writes and
  ``load_cluster`` (``--cluster``) reads back; the hierarchical model then reproduces the
  fitted line.

>>> log = '''#  Rank  0 Group  0 Pid 1 on node-a device  0 [0x1] H100
... #  Rank  1 Group  0 Pid 2 on node-a device  1 [0x2] H100
...      1048576   262144  float  sum  -1   20.0  52.43  52.43  0   20.0  52.43  52.43  0
...    104857600 26214400  float  sum  -1  250.0 419.43 419.43  0  250.0 419.43 419.43  0'''
>>> fit = fit_nccl_tests(log)
>>> fit.ranks, fit.hosts, round(fit.alpha * 1e6, 2), round(fit.bus_bandwidth / 1e9, 1)
(2, 1, 20.0, 455.9)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from .._errors import InvalidArgumentError
from ._cluster import Cluster, Link
from ._cost import busbw_factor, collective_kind, ring_steps

_RANK = re.compile(r"^#\s*Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)")
_NUMBER = re.compile(r"^-?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?$")


@dataclass(frozen=True)
class NcclTestsRow:
    """One size of an nccl-tests log: bytes, out-of-place time (s), algbw and busbw (B/s)."""

    size: int
    time: float
    algbw: float
    busbw: float


def parse_nccl_tests(text: str) -> tuple[list[NcclTestsRow], int, int]:
    """(rows, ranks, hosts) of an nccl-tests log (ranks and hosts are 0 without the
    ``# Rank`` header lines)."""
    rows, ranks, hosts = [], set(), set()
    for line in text.splitlines():
        header = _RANK.match(line.strip())
        if header:
            ranks.add(int(header.group(1)))
            hosts.add(header.group(2))
            continue
        tokens = line.split()
        if len(tokens) < 7 or line.lstrip().startswith("#") or not tokens[0].isdigit():
            continue
        rest = tokens[3:]
        if not _NUMBER.match(rest[0]):
            rest = rest[1:]  # redop
        if len(rest) % 4 == 1:
            rest = rest[1:]  # root: then groups of time, algbw, busbw, #wrong
        try:
            time, algbw, busbw = (float(value) for value in rest[:3])
        except ValueError:
            continue
        if time > 0:
            rows.append(NcclTestsRow(int(tokens[0]), time * 1e-6, algbw * 1e9, busbw * 1e9))
    return rows, len(ranks), len(hosts)


@dataclass(frozen=True)
class Calibration:
    """A fitted ``t = alpha + beta * S`` for ``opcode`` over ``ranks`` ranks on ``hosts``
    hosts, the bus bandwidth it implies, and the log's rows."""

    opcode: str
    ranks: int
    hosts: int
    alpha: float
    beta: float
    rows: tuple[NcclTestsRow, ...]

    @property
    def fit_error(self) -> float:
        """The fit's overall error: the root mean square of the residuals (fitted / measured -
        1) over the log's sizes; 0.25 means the line is typically 25% off."""
        sizes = np.array([row.size for row in self.rows], dtype=np.float64)
        times = np.array([row.time for row in self.rows], dtype=np.float64)
        residuals = (self.alpha + self.beta * sizes) / times - 1.0
        return float(np.sqrt(np.mean(residuals * residuals)))

    @property
    def bus_bandwidth(self) -> float:
        """``f(n) / beta`` in bytes per second."""
        return float(busbw_factor(self.opcode, self.ranks)) / self.beta

    def terms(self) -> list[dict[str, object]]:
        """Per size: measured and fitted seconds, the ``residual`` (fitted / measured - 1),
        both terms, and the dominant one."""
        return [
            {
                "size": row.size,
                "measured": row.time,
                "fitted": self.alpha + self.beta * row.size,
                "residual": (self.alpha + self.beta * row.size) / row.time - 1.0,
                "latency": self.alpha,
                "bandwidth": self.beta * row.size,
                "dominant": "latency" if self.alpha > self.beta * row.size else "bandwidth",
            }
            for row in self.rows
        ]


def fit_nccl_tests(
    text: str, opcode: str = "all-reduce", ranks: int | None = None, hosts: int | None = None
) -> Calibration:
    """Fit an nccl-tests log (``all_reduce_perf`` by default; ``ranks`` and ``hosts`` override
    the header's)."""
    collective_kind(opcode)
    rows, found_ranks, found_hosts = parse_nccl_tests(text)
    if len(rows) < 2:
        raise InvalidArgumentError(f"the nccl-tests log has {len(rows)} result lines; a fit needs 2")
    ranks = ranks or found_ranks
    hosts = hosts or found_hosts or 1
    if ranks < 2:
        raise InvalidArgumentError(
            "the nccl-tests log names no ranks (no '# Rank' lines); give ranks"
        )
    sizes = np.array([row.size for row in rows], dtype=np.float64)
    times = np.array([row.time for row in rows])
    alpha = float(times.min())
    beta = float(np.sum(sizes * (times - alpha)) / np.sum(sizes * sizes))
    if beta <= 0:
        raise InvalidArgumentError("the nccl-tests times do not grow with size; no bandwidth to fit")
    return Calibration(opcode, int(ranks), int(hosts), float(alpha), float(beta), tuple(rows))


@dataclass(frozen=True)
class TierFit:
    """A fit split over the tiers its test crossed, as the hierarchical model prices an
    nccl-tests ring of ``n`` ranks, ``m`` per host, over ``k`` hosts:
    ``alpha = (steps - inter) * host_alpha + inter * network_alpha`` and ``beta = c_host /
    host_bandwidth + c_network / network_bandwidth`` (all-reduce: ``c_host = 2(m-1)/m``,
    ``c_network = 2(k-1)/k / m``; gathers half of both; NCCL's step counts). A one-host test
    fits the host tier alone; a multi-host one takes the host tier from the cluster (its
    preset, or an earlier one-host fit) and fits the network to the rest. Bandwidths are per
    device, one way; alphas per step."""

    calibration: Calibration
    steps: int
    inter_steps: int
    host_alpha: float
    host_bandwidth: float
    network_alpha: float | None
    network_bandwidth: float | None
    c_host: float
    c_network: float
    warnings: tuple[str, ...] = ()
    """What makes the fit implausible: a bandwidth past the cluster's line rate, a latency
    that came out negative (taken as 0)."""

    def terms(self) -> list[dict[str, object]]:
        """Per size: measured and fitted seconds, the four terms (``host_latency``,
        ``host_bandwidth``, ``network_latency``, ``network_bandwidth``; the network ones 0 on
        one host) and the ``dominant`` one."""
        rows: list[dict[str, object]] = []
        for row in self.calibration.rows:
            terms: dict[str, float] = {
                "host_latency": (self.steps - self.inter_steps) * self.host_alpha,
                "host_bandwidth": self.c_host * row.size / self.host_bandwidth,
                "network_latency": self.inter_steps * (self.network_alpha or 0.0),
                "network_bandwidth": (self.c_network * row.size / self.network_bandwidth
                                      if self.network_bandwidth else 0.0),
            }  # fmt: skip
            rows.append({
                "size": row.size,
                "measured": row.time,
                "fitted": sum(terms.values()),
                **terms,
                "dominant": max(terms, key=terms.__getitem__),
            })  # fmt: skip
        return rows

    def to_dict(self) -> dict[str, object]:
        """The tiers as JSON values (schema in docs/cli-json.md)."""
        network = None
        if self.network_bandwidth is not None:
            network = {"alpha": self.network_alpha, "bandwidth": self.network_bandwidth,
                       "steps": self.inter_steps}  # fmt: skip
        return {
            "host": {"alpha": self.host_alpha, "bandwidth": self.host_bandwidth,
                     "steps": self.steps - self.inter_steps},
            "network": network,
        }  # fmt: skip


def fit_tiers(cluster: Cluster, calibration: Calibration) -> TierFit:
    """Split ``calibration`` over the host and network tiers of ``cluster`` (see ``TierFit``)."""
    kind = collective_kind(calibration.opcode)
    if kind not in ("all-reduce", "all-gather", "reduce-scatter"):
        raise InvalidArgumentError(
            f"tiers are fitted from all-reduce, all-gather or reduce-scatter logs, not {calibration.opcode!r}"
        )
    n, k = calibration.ranks, max(calibration.hosts, 1)
    if n % k:
        raise InvalidArgumentError(f"{n} ranks do not spread evenly over {k} hosts")
    m = n // k
    steps, inter = (int(v[0]) for v in ring_steps(kind, np.array([n]), np.array([k])))
    scale = 2.0 if kind == "all-reduce" else 1.0
    c_host = scale * (m - 1) / m
    c_network = scale * (k - 1) / k / m
    if k == 1:
        host_bandwidth = c_host / calibration.beta
        warnings = _past_line_rate("host bandwidth per device", host_bandwidth,
                                   cluster.host_link.bandwidth, cluster, calibration)
        return TierFit(calibration, steps, 0, calibration.alpha / max(steps, 1),
                       host_bandwidth, None, None, c_host, 0.0, warnings)  # fmt: skip
    host_alpha = cluster.host_link.latency
    host_bandwidth = cluster.host_link.bandwidth
    rest = calibration.beta - (c_host / host_bandwidth if m > 1 else 0.0)
    if rest <= 0:
        raise InvalidArgumentError(
            f"the {k}-host log is as fast as {cluster.name!r}'s host link alone "
            f"({host_bandwidth / 1e9:g} GB/s); calibrate the host link from a one-host log first"
        )
    network_alpha = (calibration.alpha - (steps - inter) * host_alpha) / max(inter, 1)
    negative = () if network_alpha >= 0 else (
        f"the network latency per step fits negative ({network_alpha * 1e6:.1f} us: the host "
        "steps alone take longer than the fitted alpha); taken as 0",)
    nic = _nic_bandwidth(cluster, calibration, c_network / rest)
    warnings = negative + _past_line_rate("bandwidth per NIC", nic, cluster.network.bandwidth,
                                          cluster, calibration)
    return TierFit(calibration, steps, inter, host_alpha, host_bandwidth, max(0.0, network_alpha),
                   c_network / rest, c_host, c_network, warnings)  # fmt: skip


def _nic_bandwidth(cluster: Cluster, calibration: Calibration, network_bandwidth: float) -> float:
    """One NIC's bandwidth when each of a host's devices moves ``network_bandwidth``: the
    host's devices share its ``nics_per_host`` NICs."""
    per_host = calibration.ranks // max(calibration.hosts, 1)
    return network_bandwidth * per_host / cluster.nics_per_host


def _past_line_rate(what: str, fitted: float, line_rate: float, cluster: Cluster,
                    calibration: Calibration) -> tuple[str, ...]:
    """A warning when the fitted ``what`` exceeds the line rate ``cluster`` gives it."""
    if fitted <= line_rate:
        return ()
    return (f"the fitted {what}, {fitted / 1e9:.1f} GB/s, exceeds {cluster.name}'s line rate "
            f"of {line_rate / 1e9:.1f} GB/s: the straight line does not describe these "
            f"measurements (fit error {calibration.fit_error:.0%})",)


def calibrated(cluster: Cluster, calibration: Calibration) -> Cluster:
    """``cluster`` with the fitted tier in place (``fit_tiers``): a one-host test sets the
    host link (bandwidth per device and per-step latency), a multi-host one the NICs (each
    ``network_bandwidth * m / nics_per_host``, the m devices of a host sharing its NICs) and
    the network step latency. The fitted links are measurements: they carry no link count,
    so the models take them as they are."""
    tiers = fit_tiers(cluster, calibration)
    if tiers.network_bandwidth is None:
        link = Link(cluster.host_link.kind, tiers.host_bandwidth, tiers.host_alpha)
        return replace(cluster, host_link=link, name=f"{cluster.name}+calibrated")
    nic = _nic_bandwidth(cluster, calibration, tiers.network_bandwidth)
    network = Link(cluster.network.kind, nic, tiers.network_alpha or 0.0)
    return replace(cluster, network=network, name=f"{cluster.name}+calibrated")
