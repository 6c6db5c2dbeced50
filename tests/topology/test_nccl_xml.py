"""NCCL topology XML read with NCCL's arithmetic, on a published dump.

``data/ibm_h100_topo.xml`` is the topology file IBM Cloud publishes for its gx3d-160x1792x8h100
profile ("NVIDIA H100 cluster network profile", cloud.ibm.com/docs/vpc), with vendor ids and
guids left out: 8 H100 (sm 90), each with 5+5+4+4 NVLinks to four NVSwitches, PCIe
"32.0 GT/s" with link_width 0, and 8 ConnectX NICs at 200000 Mb/s.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import meshtopo as mt
from meshtopo.topology import load_cluster, read_nccl_topology
from meshtopo.topology._nccl_xml import net_gbps, nvlink_gbps, pci_gbps

DUMP = Path(__file__).parent / "data" / "ibm_h100_topo.xml"


def test_published_h100_dump_gives_ncclS_bandwidths():
    topology = read_nccl_topology(DUMP)
    assert [gpu.rank for gpu in topology.gpus] == list(range(8))
    assert {(g.sm, g.nvlinks, g.nvlink_gbps, g.pci_gbps) for g in topology.gpus} == {
        (90, 18, 18 * 20.6, 16 * 240 / 80)
    }
    assert [(nic.name, nic.gbps) for nic in topology.nics][:2] == [("mlx5_7", 25.0), ("mlx5_6", 25.0)]
    assert len(topology.nics) == 8


def test_dump_becomes_a_cluster_of_copies_of_its_host():
    cluster = load_cluster(DUMP, hosts=4)
    assert cluster.num_devices == 32 and cluster.nics_per_host == 8
    assert cluster.host_link.kind == "nvlink" and cluster.host_link.bandwidth == pytest.approx(3.708e11)
    assert cluster.network.bandwidth == 2.5e10


@pytest.mark.parametrize(
    ("sm", "per_link"), [(60, 18.0), (70, 20.0), (80, 20.0), (86, 12.0), (90, 20.6), (100, 40.1)]
)
def test_nvlink_per_link_follows_compute_capability(sm, per_link):
    assert nvlink_gbps(sm) == per_link


@pytest.mark.parametrize(
    ("speed", "width", "gbps"),
    [("8 GT/s", 16, 12.0), ("16.0 GT/s PCIe", 16, 24.0), ("32.0 GT/s PCIe", 0, 48.0),
     ("64.0 GT/s PCIe", 16, 96.0), ("weird", 8, 6.0)],
)  # fmt: skip
def test_pcie_is_width_times_rate_over_80(speed, width, gbps):
    assert pci_gbps(speed, width) == gbps


def test_net_speed_is_mbps_over_8000():
    assert (net_gbps(400000), net_gbps(200000), net_gbps(0)) == (50.0, 25.0, 1.25)


def test_gpu_without_nvlink_uses_pcie():
    xml = ('<system version="1"><cpu><pci busid="0000:01:00.0" link_speed="16.0 GT/s PCIe" '
           'link_width="16"><gpu dev="0" sm="89" rank="0"/></pci><pci busid="0000:02:00.0" '
           'link_speed="16.0 GT/s PCIe" link_width="16"><gpu dev="1" sm="89" rank="1"/></pci>'
           '</cpu></system>')  # fmt: skip
    cluster = read_nccl_topology(xml).to_cluster()
    assert (cluster.host_link.kind, cluster.host_link.bandwidth) == ("pcie", 2.4e10)


def test_bad_xml_is_an_invalid_argument():
    with pytest.raises(mt.InvalidArgumentError, match="does not parse"):
        read_nccl_topology("<system><gpu></system>")
    with pytest.raises(mt.InvalidArgumentError, match="must start with <system>"):
        read_nccl_topology("<machine/>")
