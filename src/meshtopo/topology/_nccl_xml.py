"""NCCL's topology XML (``NCCL_TOPO_DUMP_FILE`` output, ``NCCL_TOPO_FILE`` input) read with
NCCL's own arithmetic.

NCCL turns the dump into link bandwidths in GB/s (``src/graph/topo.cc``, ``topo.h``):

- NVLink: ``count`` links x the per-link figure of the GPU's ``sm`` (``ncclTopoNVLinkBw``:
  SM60 18.0, SM70 20.0, SM80 20.0, SM86 12.0, SM90 20.6, SM100 40.1; anything else 20.0);
- PCIe: ``link_width`` x the per-lane rate of ``link_speed`` / 80, the rate in 100 Mb/s per lane
  (``kvDictPciGen``: 2.5 GT/s 15, 5 GT/s 30, 8 GT/s 60, 16 GT/s 120, 32 GT/s 240, 64 GT/s 480;
  unknown 60); a width of 0 counts as 16;
- network: ``<net speed=...>`` in Mb/s / 8000.

>>> xml = '''<system version="1"><cpu numaid="0"><pci busid="0000:01:00.0"
...   link_speed="16.0 GT/s PCIe" link_width="16"><gpu dev="0" sm="90" rank="0">
...   <nvlink target="0000:f0:00.0" count="18" tclass="0x068000"/></gpu></pci>
...   <nic><net name="mlx5_0" speed="400000"/></nic></cpu></system>'''
>>> topo = read_nccl_topology(xml)
>>> topo.gpus[0].nvlink_gbps, topo.gpus[0].pci_gbps, topo.nics[0].gbps
(370.8, 24.0, 50.0)
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass

from .._errors import InvalidArgumentError
from ._cluster import Cluster, Link
from ._presets import NCCL_NET_STEP, NCCL_NVLINK_STEP, NCCL_PCIE_STEP

_PCI_GEN = (
    ("2.5 GT/s", 15), ("5 GT/s", 30), ("8 GT/s", 60), ("16 GT/s", 120), ("32 GT/s", 240),
    ("2.5 GT/s PCIe", 15), ("5.0 GT/s PCIe", 30), ("8.0 GT/s PCIe", 60),
    ("16.0 GT/s PCIe", 120), ("32.0 GT/s PCIe", 240), ("64.0 GT/s PCIe", 480),
)  # fmt: skip


def nvlink_gbps(sm: int) -> float:
    """NCCL's bandwidth of one NVLink for a GPU of compute capability ``sm`` (GB/s)."""
    if sm >= 100:
        return 40.1
    if sm >= 90:
        return 20.6
    if sm == 86:
        return 12.0
    if sm >= 70:
        return 20.0
    if sm >= 60:
        return 18.0
    return 20.0


def pci_gbps(link_speed: str, link_width: int) -> float:
    """NCCL's PCIe bandwidth: ``width * rate / 80`` GB/s (prefix match on the speed text, as
    NCCL's ``kvConvertToInt`` does; width 0 is 16)."""
    rate = next((value for text, value in _PCI_GEN if link_speed.startswith(text)), 60)
    return (link_width or 16) * rate / 80.0


def net_gbps(speed_mbps: int) -> float:
    """NCCL's network bandwidth: ``speed`` in Mb/s / 8000 GB/s (NCCL takes 10000 when <= 0)."""
    return (speed_mbps if speed_mbps > 0 else 10000) / 8000.0


@dataclass(frozen=True)
class NcclGpu:
    """One ``<gpu>``: rank, dev, sm, bus id, its NVLink total and PCIe link (GB/s)."""

    rank: int
    dev: int
    sm: int
    busid: str
    nvlinks: int
    nvlink_gbps: float
    pci_gbps: float


@dataclass(frozen=True)
class NcclNic:
    """One ``<net>``: name, speed in Mb/s, bandwidth in GB/s, latency as written (us)."""

    name: str
    speed_mbps: int
    gbps: float
    latency_us: float


@dataclass(frozen=True)
class NcclTopology:
    """The GPUs and NICs of one host's topology dump."""

    gpus: tuple[NcclGpu, ...]
    nics: tuple[NcclNic, ...]

    def to_cluster(self, hosts: int = 1, name: str = "nccl-topology") -> Cluster:
        """``hosts`` copies of this host: the host link is the smallest per-GPU NVLink total
        (PCIe when a GPU has no NVLink), the network the slowest NIC, one per ``<net>``."""
        if not self.gpus:
            raise InvalidArgumentError("the NCCL topology has no <gpu>")
        if all(g.nvlinks for g in self.gpus):
            narrowest = min(self.gpus, key=lambda g: g.nvlink_gbps)
            host = Link("nvlink", narrowest.nvlink_gbps * 1e9, NCCL_NVLINK_STEP, narrowest.nvlinks)
        else:
            host = Link("pcie", min(g.pci_gbps for g in self.gpus) * 1e9, NCCL_PCIE_STEP)
        if self.nics:
            slowest = min(self.nics, key=lambda nic: nic.gbps)
            latency = slowest.latency_us * 1e-6 if slowest.latency_us > 0 else NCCL_NET_STEP
            kind = "efa" if slowest.name.startswith(("efa", "rdmap")) else "ib"
            network = Link(kind, slowest.gbps * 1e9, latency)
        else:
            network = Link("ethernet", net_gbps(0) * 1e9, NCCL_NET_STEP)
        return Cluster(
            name=name,
            num_hosts=hosts,
            devices_per_host=len(self.gpus),
            host_link=host,
            network=network,
            nics_per_host=max(1, len(self.nics)),
            source="NCCL topology XML",
            sm=min(g.sm for g in self.gpus),
        )


def _int_attr(node: ElementTree.Element, name: str, default: int) -> int:
    text = node.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text, 0)
    except ValueError:
        raise InvalidArgumentError(f"NCCL topology: <{node.tag} {name}={text!r}> is not an int") from None


def _float_attr(node: ElementTree.Element, name: str) -> float:
    try:
        value = float(node.get(name) or 0.0)
    except ValueError:
        raise InvalidArgumentError(f"NCCL topology: <{node.tag} {name}=...> is not a number") from None
    return value if math.isfinite(value) else 0.0


def read_nccl_topology(source: str | os.PathLike[str]) -> NcclTopology:
    """Read a topology dump: XML text (starting with ``<``) or a path to one.

    GPUs come in rank order (``rank``, else ``dev``); their PCIe link is the ``<pci>`` that
    holds them.
    """
    text = str(source)
    if not text.lstrip().startswith("<"):
        with open(source, encoding="utf-8") as handle:
            text = handle.read()
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as error:
        raise InvalidArgumentError(f"NCCL topology XML does not parse: {error}") from None
    if root.tag != "system":
        raise InvalidArgumentError(f"NCCL topology XML must start with <system>, got <{root.tag}>")
    parents = {child: parent for parent in root.iter() for child in parent}
    gpus: list[NcclGpu] = []
    for gpu in root.iter("gpu"):
        sm = _int_attr(gpu, "sm", 0)
        links = [_int_attr(link, "count", 1) for link in gpu.iter("nvlink")]
        pci = parents.get(gpu)
        speed = pci.get("link_speed", "") if pci is not None and pci.tag == "pci" else ""
        width = _int_attr(pci, "link_width", 16) if pci is not None and pci.tag == "pci" else 16
        gpus.append(
            NcclGpu(
                rank=_int_attr(gpu, "rank", _int_attr(gpu, "dev", len(gpus))),
                dev=_int_attr(gpu, "dev", len(gpus)),
                sm=sm,
                busid=pci.get("busid", "") if pci is not None else "",
                nvlinks=sum(links),
                nvlink_gbps=round(sum(links) * nvlink_gbps(sm), 6),
                pci_gbps=pci_gbps(speed, width),
            )
        )
    nics = tuple(
        NcclNic(
            name=net.get("name", ""),
            speed_mbps=_int_attr(net, "speed", 0),
            gbps=net_gbps(_int_attr(net, "speed", 0)),
            latency_us=_float_attr(net, "latency"),
        )
        for net in root.iter("net")
    )
    return NcclTopology(tuple(sorted(gpus, key=lambda g: (g.rank, g.dev))), nics)
