"""Fit alpha and beta per tier from an nccl-tests log, and put them back into a cluster.

nccl-tests prints one line per size: ``size count type redop root time algbw busbw #wrong``
then the in-place columns (older versions omit ``root``); times are microseconds, bandwidths
GB/s. The ``#  Rank  r Group g Pid p on HOST device d`` header lines give the ranks and hosts.
The fit is ``t = alpha + beta * S`` from the out-of-place times: ``alpha`` is the smallest
time (the latency floor small sizes sit on), ``beta`` the least-squares slope of ``t - alpha``
over ``S`` (which the largest sizes decide: the bandwidth NCCL reaches). Then:

- the bus bandwidth ``B = f(n) / beta`` (nccl-tests' factor ``f``), and at each size which term
  dominates, ``alpha`` or ``beta * S``;
- ``calibrated`` writes it into the tier the test crossed: one host sets the host link
  (bandwidth ``B``, per-step latency ``alpha / nsteps``); several hosts set the NICs
  (``B / nics_per_host`` each, the busbw model's share for a whole-host group) and the network
  step latency ``(alpha - intra steps * host latency) / inter steps``, the steps counted as
  NCCL counts them.

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
    def bus_bandwidth(self) -> float:
        """``f(n) / beta`` in bytes per second."""
        return float(busbw_factor(self.opcode, self.ranks)) / self.beta

    def terms(self) -> list[dict[str, object]]:
        """Per size: measured and fitted seconds, both terms, and the dominant one."""
        return [
            {
                "size": row.size,
                "measured": row.time,
                "fitted": self.alpha + self.beta * row.size,
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


def calibrated(cluster: Cluster, calibration: Calibration) -> Cluster:
    """``cluster`` with the fitted bandwidth and latency in the tier the test crossed."""
    kind = collective_kind(calibration.opcode)
    n = np.array([calibration.ranks])
    k = np.array([calibration.hosts])
    steps, inter = (int(v[0]) for v in ring_steps(kind, n, k))
    bandwidth = calibration.bus_bandwidth
    if calibration.hosts <= 1:
        link = Link(cluster.host_link.kind, bandwidth, calibration.alpha / max(steps, 1))
        return replace(cluster, host_link=link, name=f"{cluster.name}+calibrated")
    intra = (steps - inter) * cluster.host_link.latency
    latency = max(0.0, (calibration.alpha - intra) / max(inter, 1))
    network = Link(cluster.network.kind, bandwidth / cluster.nics_per_host, latency)
    return replace(cluster, network=network, name=f"{cluster.name}+calibrated")
