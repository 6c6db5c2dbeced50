"""Three named cost models, side by side, each a formula you can check by hand.

``S`` is the collective's size as nccl-tests counts it: the buffer of an all-reduce, the
gathered result of an all-gather, the full operand of a reduce-scatter, a device's whole send
buffer of an all-to-all, the payload of a broadcast or permute (``Collective.bytes``).
``n`` is the group size, ``k`` the domains it spans (hosts of 8-GPU servers, NVL72 racks, TPU
slices), ``m = n / k`` its members per domain. Every group of a collective runs at once; the
collective takes as long as its slowest group.

- **busbw** (nccl-tests): ``t = f(n) * S / B`` with nccl-tests' bus-bandwidth factor ``f``
  (all-reduce ``2(n-1)/n``; all-gather, reduce-scatter, all-to-all ``(n-1)/n``; broadcast,
  permute, send/recv 1) and ``B`` the bandwidth of the slowest tier crossed: the host link
  per device inside a host or NVLink domain; on a torus the ICI links the group's ring uses
  (``link * sum over varied axes of 2 if the axis wraps and the group spans it, else 1``;
  one link for broadcasts and permutes);
  across domains the group's share of its busiest host's NICs,
  ``nics * nic_bw * (group members on the host) / (devices on the host using the network)``.
  No latency term.
- **hierarchical** alpha-beta: groups inside a domain run one ring at the domain's bandwidth.
  Groups across domains run intra-domain, then inter-domain phases, each device using
  ``B_net = nics * nic_bw / sharers`` (the host's NICs shared by every device of the host on
  the network): all-reduce ``2(m-1)/m * S / B_in + 2(k-1)/k * (S/m) / B_net``; all-gather and
  reduce-scatter ``(m-1)/m * S / B_in + (k-1)/k * (S/m) / B_net``; all-to-all the larger of
  ``(m-1)/n * S / B_in`` and ``(n-m)/n * S / B_net``; broadcast and permute ``S / B_net``.
  Plus a latency term per ring step, counted as NCCL's tuner counts them: ``nsteps`` (2(n-1)
  for all-reduce, n-1 for gathers, n otherwise, 1 for a permute), of which ``inter`` cross the
  network (2(k-1) for an all-reduce over k > 1 domains, k-1 for gathers), costing
  ``(nsteps - inter) * alpha_in + inter * alpha_net``. On a torus the intra-domain phase is
  the torus formula below and a step costs ``hop_latency`` per hop of the ring's longest step.
  An all-reduce inside one NVLink domain that NCCL's tuner runs as NVLS (the nccl model's
  choice for the group: SM90+, more than two GPUs, NVLS faster in NCCL's figures) is priced
  as NVLS: each GPU moves ``S (n+1)/n`` each way through the
  switch at NCCL's own NVLink figure (``links`` x 20.6 GB/s on SM90, 40.1 on SM100) times its
  NVLS efficiency (0.85 Hopper, 0.74 Blackwell), plus NCCL's 25 us NVLS latency. That is
  NCCL's NVLS bandwidth formula without the ceiling its one-node search puts on the graph's
  inter speed (the top of its speed table), which the nccl model keeps. A host link without a
  link count (a calibrated one: a measured ring) stays a ring.
- **nccl**: NCCL's tuner (``nccl_time``) over the graphs NCCL's topology search finds on the
  cluster (``nccl_graphs``: NVLink counted as ``links`` x NCCL's per-link figure, NICs
  shared like the busbw model's), for the group's ranks and nodes (domains), at the given
  algorithm and protocol or NCCL's own choice with ``"auto"`` among ring, tree, NVLS, NVLS
  Tree, CollNet (``Cluster.collnet``) and PAT. GPU clusters only.

TPU torus (the scaling book's formulas with the ring's exact ``(n-1)/n``): all-gather and
reduce-scatter ``(n-1)/n * S / W``, all-reduce twice that, all-to-all a quarter of an
all-gather, permute ``S / link``; ``W = link * sum over varied axes of (2 with wraparound
over the whole axis, else 1)``: a ring closed by the wraparound sends both ways, a line
without it has half the bandwidth.

>>> from meshtopo.topology import preset, group_tiers
>>> c = preset("p6-b200", hosts=4)
>>> e = estimate(c, [list(range(32))], "all-reduce", 2**32)
>>> round(e.time("busbw") * 1e3, 2), round(e.time("hierarchical") * 1e3, 2)
(20.8, 24.73)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._errors import InvalidArgumentError
from ._cluster import Cluster, Tier
from ._nccl_graph import nccl_graphs
from ._nccl_tables import HW_LATENCY, NVLS_EFFICIENCY, arch
from ._nccl_tuning import NcclGraph, nccl_best_time, nccl_function, nccl_time
from ._nccl_xml import nvlink_gbps
from ._tiers import GroupTiers, concatenate_tiers, group_tiers

MODELS = ("busbw", "hierarchical", "nccl")
"""The cost models, in the order they are printed."""

_BASE = {
    "all-reduce": "all-reduce", "all-gather": "all-gather", "reduce-scatter": "reduce-scatter",
    "all-to-all": "all-to-all", "ragged-all-to-all": "all-to-all",
    "collective-broadcast": "broadcast", "broadcast": "broadcast", "reduce": "broadcast",
    "collective-permute": "permute", "permute": "permute", "send": "permute", "recv": "permute",
    "sendrecv": "permute",
}  # fmt: skip
COLLECTIVE_KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast", "permute")
"""The collective kinds the models know (HLO opcodes and nccl-tests names map onto them)."""


def known_opcodes() -> frozenset[str]:
    """Every opcode or name ``collective_kind`` maps (without ``-start``/``-done``)."""
    return frozenset(_BASE)


def collective_kind(opcode: str) -> str:
    """The model's kind for an HLO opcode (async ``-start``/``-done`` forms included) or an
    nccl-tests name: one of ``COLLECTIVE_KINDS``; anything else, a non-string included, is an
    ``InvalidArgumentError`` naming the opcode."""
    if not isinstance(opcode, str):
        raise InvalidArgumentError(
            f"opcode must be a collective opcode string (e.g. 'all-reduce'), got {opcode!r}")
    base = opcode.removesuffix("-start").removesuffix("-done")
    kind = _BASE.get(base)
    if kind is None:
        raise InvalidArgumentError(
            f"no cost model for {opcode!r}; known: {', '.join(sorted(_BASE))}"
        )
    return kind


def busbw_factor(opcode: str, n: np.ndarray | int) -> np.ndarray:
    """nccl-tests' bus-bandwidth factor for ``n`` ranks (``busbw = algbw * factor``, from its
    ``AllReduceGetBw`` ... ``SendRecvGetBw``)."""
    kind = collective_kind(opcode)
    ranks = np.asarray(n, dtype=np.float64)
    if kind == "all-reduce":
        return 2 * (ranks - 1) / ranks
    if kind in ("all-gather", "reduce-scatter", "all-to-all"):
        return (ranks - 1) / ranks
    return np.ones_like(ranks)


def ring_steps(kind: str, n: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(steps, steps crossing the network) of NCCL's ring for ``n`` ranks over ``k`` domains,
    as ``tuning.cc`` counts them (a permute is one step)."""
    if kind == "all-reduce":
        return 2 * (n - 1), np.where(k > 1, 2 * (k - 1), 0)
    if kind in ("all-gather", "reduce-scatter", "all-to-all"):
        return n - 1, k - 1
    if kind == "permute":
        return np.ones_like(n), (k > 1).astype(np.int64)
    return n, np.where(k > 1, k, 0)


def _torus_bandwidth(cluster: Cluster, tiers: GroupTiers) -> np.ndarray:
    torus = cluster.torus
    if torus is None or tiers.axis_bits is None:
        raise InvalidArgumentError("torus bandwidth needs a torus")
    bits = tiers.axis_bits
    shape = np.asarray(torus.shape, dtype=np.int64)
    varied = ((bits[:, None] >> np.arange(shape.size)) & 1).astype(bool)
    spanned = np.prod(np.where(varied, shape, 1), axis=1)
    whole = spanned == (tiers.sizes // np.maximum(tiers.domains, 1))
    both = varied & np.asarray(torus.wraparound) & whole[:, None]
    links = np.where(both, 2, varied.astype(np.int64)).sum(axis=1)
    return torus.link_bandwidth * np.maximum(links, 1)


def torus_time(kind: str, size: float, n: np.ndarray, bandwidth: np.ndarray, link: float) -> np.ndarray:
    """The torus formulas: all-gather / reduce-scatter ``(n-1)/n * S / W``, all-reduce twice,
    all-to-all a quarter of an all-gather, broadcast and permute ``S / link``."""
    gather = (n - 1) / n * size / bandwidth
    if kind == "all-reduce":
        return 2 * gather
    if kind in ("all-gather", "reduce-scatter"):
        return gather
    if kind == "all-to-all":
        return gather / 4
    return np.full(n.shape, size / link)


def _ring_time(kind: str, size: float, n: np.ndarray, bandwidth: np.ndarray) -> np.ndarray:
    """One ring of ``n`` over links of ``bandwidth`` per device: ``f(n) * S / B`` with
    nccl-tests' factor (the bandwidth term of NCCL's ring), ``S / B`` for broadcasts and
    permutes."""
    return busbw_factor(kind, n) * size / bandwidth


def _inner_bandwidth(cluster: Cluster, tiers: GroupTiers) -> np.ndarray:
    if cluster.torus is not None:
        return _torus_bandwidth(cluster, tiers)
    return np.full(tiers.num_groups, cluster.host_link.bandwidth)


def _network_share(cluster: Cluster, tiers: GroupTiers) -> np.ndarray:
    """Per device bandwidth on the network: the host's NICs over the devices using them."""
    return cluster.network_bandwidth_per_host / np.maximum(tiers.network_sharers, 1)


def busbw_time(cluster: Cluster, tiers: GroupTiers, opcode: str, size: float) -> np.ndarray:
    """The busbw model's seconds per group (see the module docstring)."""
    n = tiers.sizes.astype(np.float64)
    inner = _inner_bandwidth(cluster, tiers)
    if cluster.torus is not None and collective_kind(opcode) in ("broadcast", "permute"):
        inner = np.full(tiers.num_groups, cluster.torus.link_bandwidth)
    network = _network_share(cluster, tiers) * tiers.max_per_host
    bandwidth = np.where(tiers.tier == Tier.NETWORK, network, inner)
    time = busbw_factor(opcode, n) * size / bandwidth
    return np.where(tiers.tier == Tier.DEVICE, 0.0, time)


def nvls_time(cluster: Cluster, size: float, n: np.ndarray, sm: int) -> np.ndarray:
    """An NVLS all-reduce of ``n`` GPUs in one NVLink domain: each GPU moves ``S (n+1)/n``
    each way (``S/n`` reduced in, ``S/n`` out to the switch, which fans out and reduces), at
    NCCL's fabric figure times its per-arch NVLS efficiency, plus NCCL's NVLS latency."""
    link = nccl_fabric_gbps(cluster, sm) * 1e9 * NVLS_EFFICIENCY[arch(sm)]
    return size * (n + 1) / n / link + HW_LATENCY["nvlink"]["nvls"][2] * 1e-6


def hierarchical_time(
    cluster: Cluster, tiers: GroupTiers, opcode: str, size: float, sm: int = 90,
    nvls: np.ndarray | None = None,
) -> np.ndarray:  # fmt: skip
    """The hierarchical alpha-beta model's seconds per group (see the module docstring);
    ``nvls`` marks the groups NCCL runs as NVLS (all-reduces inside one domain of a host link
    with a link count only)."""
    kind = collective_kind(opcode)
    n = tiers.sizes.astype(np.float64)
    k = np.where(tiers.tier == Tier.NETWORK, tiers.domains, 1).astype(np.float64)
    m = n / k
    inner = _inner_bandwidth(cluster, tiers)
    net = _network_share(cluster, tiers)
    if cluster.torus is not None:
        intra = torus_time(kind, size, m, inner, cluster.torus.link_bandwidth)
        hops = np.maximum(tiers.ring_hops if tiers.ring_hops is not None else 1, 1)
        alpha_in = cluster.torus.hop_latency * hops
    else:
        intra = _ring_time(kind, size, m, inner)
        alpha_in = np.full(n.shape, cluster.host_link.latency)
    per_domain = size / m
    if kind == "all-reduce":
        inter = 2 * (k - 1) / k * per_domain / net
    elif kind in ("all-gather", "reduce-scatter"):
        inter = (k - 1) / k * per_domain / net
    elif kind == "all-to-all":
        inter = (n - m) / n * size / net
        intra = np.where(k > 1, (m - 1) / n * size / inner, intra)
    else:
        inter = size / net
    steps, inter_steps = ring_steps(kind, tiers.sizes, k.astype(np.int64))
    latency = (steps - inter_steps) * alpha_in + inter_steps * cluster.network.latency
    crossing = tiers.tier == Tier.NETWORK
    if kind == "all-to-all":
        bandwidth_time = np.where(crossing, np.maximum(intra, inter), intra)
    elif kind in ("broadcast", "permute"):
        bandwidth_time = np.where(crossing, inter, intra)
    else:
        bandwidth_time = np.where(crossing, intra + inter, intra)
    time = bandwidth_time + latency
    if nvls is not None and kind == "all-reduce" and cluster.host_link.links:
        inside = nvls & ~crossing
        if inside.any():
            time = np.where(inside, nvls_time(cluster, size, np.maximum(n, 1), sm), time)
    return np.where(tiers.tier == Tier.DEVICE, 0.0, time)


def nccl_fabric_gbps(cluster: Cluster, sm: int) -> float:
    """A GPU's intra-host fabric as NCCL counts it, GB/s: NVLink ``links`` x NCCL's per-link
    figure for ``sm`` (``ncclTopoNVLinkBw``) when the link count is known, else the host
    link's bandwidth."""
    link = cluster.host_link
    if link.kind == "nvlink" and link.links:
        return link.links * nvlink_gbps(sm)
    return link.bandwidth / 1e9


def nvls_available(cluster: Cluster, sm: int, gpus: int) -> bool:
    """Whether NCCL can run NVLS: NVLink hosts (switched, as every NVLink ``Cluster`` is), SM90
    or later, more than two GPUs of the group per NVLink domain (``ncclNvlsInit``)."""
    return gpus > 2 and cluster.host_link.kind == "nvlink" and sm >= 90


def nccl_model_time(
    cluster: Cluster, tiers: GroupTiers, opcode: str, size: float,
    channels: int | None = None, algorithm: str = "auto", protocol: str = "simple", sm: int = 90,
) -> tuple[np.ndarray | None, np.ndarray | None]:  # fmt: skip
    """NCCL's tuner per group in seconds over the graphs NCCL's search finds on the cluster
    (``nccl_graphs``; ``channels`` forces the ring's channel count at the same total
    bandwidth), and per group the ``algorithm/protocol`` it runs; (None, None) on a torus or
    for point-to-point opcodes. Computed once per distinct (ranks, nodes, GPUs per node, NIC
    share: ``GroupTiers.network_shapes``, once per tiers), not per group."""
    found = _nccl_shapes(cluster, tiers, opcode, size, channels, algorithm, protocol, sm)
    if found is None:
        return None, None
    times, labels, rows = found
    return times[rows], labels[rows]


def _nccl_shapes(
    cluster: Cluster, tiers: GroupTiers, opcode: str, size: float, channels: int | None,
    algorithm: str, protocol: str, sm: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:  # fmt: skip
    """``nccl_model_time`` per distinct network shape: (seconds, ``algorithm/protocol``
    labels as an object array, each group's shape row); None where the model does not
    apply."""
    if cluster.torus is not None or nccl_function(opcode) is None:
        return None
    intra = "pcie" if cluster.host_link.kind == "pcie" else "nvlink"
    fabric = nccl_fabric_gbps(cluster, sm)
    unique, inverse = tiers.network_shapes
    times = np.empty(unique.shape[0])
    labels = []
    nic_line = cluster.network.bandwidth / 1e9
    for index, (ranks, node_count, gpus, share) in enumerate(unique):
        nic_gbps = nic_line * min(share, 1.0)
        graphs = nccl_graphs(fabric, intra, int(gpus), int(node_count), cluster.nics_per_host,
                             float(nic_gbps), sm, nvls=nvls_available(cluster, sm, int(gpus)),
                             collnet=cluster.collnet)  # fmt: skip
        if channels is not None:
            ring = graphs["ring"]
            forced = NcclGraph(channels, ring.bw_intra * ring.channels / channels,
                               ring.bw_inter * ring.channels / channels)  # fmt: skip
            graphs.update(dict.fromkeys(("ring", "tree", "pat", "collnet_chain"), forced))
        options = {"graphs": graphs, "collnet": cluster.collnet, "nvls": "nvls" in graphs}
        ring = graphs["ring"]
        args = (opcode, size, int(ranks), int(node_count), ring.bw_intra, ring.bw_inter, ring.channels)
        if algorithm == "auto":
            value, chosen, proto = nccl_best_time(*args, sm, intra, **options)  # type: ignore[arg-type]
        else:
            value = nccl_time(*args, algorithm, protocol, sm, intra, **options)  # type: ignore[arg-type]
            chosen, proto = algorithm, protocol
        times[index] = value * 1e-6
        labels.append(f"{chosen}/{proto}")
    return times, np.array(labels, dtype=object), inverse.reshape(-1)


def slowest_link_bytes(cluster: Cluster, tiers: GroupTiers, opcode: str, size: float) -> np.ndarray:
    """Bytes each device sends over the slowest link its group crosses: ``f(n) * S`` inside a
    domain, ``f(k) * S / m`` over the network (after the intra-domain phase), ``S`` for
    broadcasts and permutes."""
    kind = collective_kind(opcode)
    network = tiers.tier == Tier.NETWORK
    if kind in ("all-reduce", "all-gather", "reduce-scatter"):
        # f(k) * S / m with m = n / k is c (k - 1) / n * S (c = 2 for an all-reduce, else 1);
        # inside a domain k = n, which is f(n) * S.
        k = np.where(network, tiers.domains, tiers.sizes)
        scale = (2.0 if kind == "all-reduce" else 1.0) * float(size)
        return (k - 1) * (scale / tiers.sizes)
    n = tiers.sizes.astype(np.float64)
    if kind == "all-to-all":
        m = np.where(network, n / np.maximum(tiers.domains, 1), 1.0)
        inside = (n - 1) / n * size
        return np.where(network, (n - m) / n * size, inside) * (n > 1)
    return np.where(n > 1, float(size), 0.0)


@dataclass(frozen=True, eq=False)
class Estimate:
    """One collective's groups on a cluster: their tiers and, per group, the bytes on the
    slowest link and each model's seconds (``nccl`` is None where it does not apply), and the
    ``algorithm/protocol`` NCCL's tuner picks for the slowest group (``nccl_algorithm``)."""

    opcode: str
    size: float
    tiers: GroupTiers
    link_bytes: np.ndarray
    busbw: np.ndarray
    hierarchical: np.ndarray
    nccl: np.ndarray | None
    nccl_algorithm: str | None = None

    def time(self, model: str) -> float:
        """The collective's seconds under ``model`` (its slowest group); NaN where the model
        does not apply."""
        if model not in MODELS:
            raise InvalidArgumentError(f"model must be one of {', '.join(MODELS)}, got {model!r}")
        values = getattr(self, model)
        if values is None or values.size == 0:
            return math.nan if values is None else 0.0
        return float(values.max())

    def times(self) -> dict[str, float]:
        """``{model: seconds}`` for every model."""
        return {model: self.time(model) for model in MODELS}


def estimate(
    cluster: Cluster, groups: object, opcode: str, size: float,
    channels: int | None = None, algorithm: str = "auto", protocol: str = "simple",
    sm: int | None = None,
) -> Estimate:  # fmt: skip
    """Tiers and every model's time for a collective ``opcode`` of ``size`` bytes over the
    device ``groups`` (anything ``group_tiers`` takes) on ``cluster`` of GPUs of compute
    capability ``sm`` (default the cluster's, else 90); ``channels``, ``algorithm`` and
    ``protocol`` override NCCL's own choices in the nccl model."""
    return estimates(cluster, [groups], opcode, size, channels, algorithm, protocol, sm)[0]


def estimates(
    cluster: Cluster, group_lists: Sequence[object], opcode: str, size: float,
    channels: int | None = None, algorithm: str = "auto", protocol: str = "simple",
    sm: int | None = None,
) -> list[Estimate]:  # fmt: skip
    """``estimate`` of one collective over each of ``group_lists`` (a plan's mesh axes): every
    model is evaluated once, over the distinct groups (``GroupTiers.distinct``) of all the
    lists together, and each list's groups read their values from those rows."""
    sm = sm or cluster.sm or 90
    if isinstance(size, bool) or not (
        isinstance(size, int | float | np.integer | np.floating) and math.isfinite(size) and size >= 0
    ):
        raise InvalidArgumentError(f"collective size must be a non-negative number, got {size!r}")
    collective_kind(opcode)
    every = [g if isinstance(g, GroupTiers) else group_tiers(cluster, g) for g in group_lists]
    parts = [tiers.distinct for tiers in every]
    unique = concatenate_tiers([part for part, _ in parts])
    found = _nccl_shapes(cluster, unique, opcode, size, channels, algorithm, protocol, sm)
    nccl = nvls = labels = None
    if found is not None:  # labels are compared per distinct shape, then spread to groups
        times, shape_labels, shapes = found
        nccl, labels = times[shapes], shape_labels[shapes]
        auto = None if algorithm == "auto" else _nccl_shapes(
            cluster, unique, opcode, size, channels, "auto", "simple", sm)
        nvls = ((shape_labels if auto is None else auto[1]) == "nvls/simple")[shapes]
    link = slowest_link_bytes(cluster, unique, opcode, size)
    busbw = busbw_time(cluster, unique, opcode, size)
    hierarchical = hierarchical_time(cluster, unique, opcode, size, sm, nvls)
    results = []
    offset = 0
    for tiers, (part, rows) in zip(every, parts, strict=True):
        index = rows + offset if offset else rows
        offset += part.num_groups
        spread = None if nccl is None else nccl[index]
        slowest = None
        if spread is not None and labels is not None and spread.size:
            slowest = str(labels[index[int(np.argmax(spread))]])
        results.append(Estimate(
            opcode=opcode,
            size=float(size),
            tiers=tiers,
            link_bytes=link[index],
            busbw=busbw[index],
            hierarchical=hierarchical[index],
            nccl=spread,
            nccl_algorithm=slowest,
        ))
    return results
