"""Cluster descriptions: presets, files (TOML, JSON, NCCL XML), placement and their errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import meshtopo as mt
from meshtopo.topology import Cluster, Link, Torus, load_cluster, preset, save_cluster
from meshtopo.topology._units import parse_bandwidth, parse_seconds, parse_size


@pytest.mark.parametrize(
    ("name", "devices", "host_bandwidth", "per_host_network"),
    [
        ("a100-8x", 8, 3e11, 8 * 2.5e10),
        ("h100-8x", 8, 4.5e11, 8 * 5e10),
        ("p6-b200", 8, 9e11, 8 * 5e10),
        ("gb200-nvl72", 72, 9e11, 4 * 5e10),
    ],
)
def test_gpu_presets_carry_the_published_figures(name, devices, host_bandwidth, per_host_network):
    cluster = preset(name)
    assert cluster.num_devices == devices
    assert cluster.host_link.bandwidth == host_bandwidth
    assert cluster.network_bandwidth_per_host == per_host_network
    assert cluster.source


@pytest.mark.parametrize(
    ("name", "link", "shape", "wrap"),
    [
        ("tpu-v4", 4.5e10, (4, 4, 4), (True, True, True)),
        ("tpu-v5p", 9e10, (4, 4, 4), (True, True, True)),
        ("tpu-v5e", 4.5e10, (16, 16), (True, True)),
        ("tpu-v6e", 9e10, (16, 16), (True, True)),
    ],
)
def test_tpu_presets_are_tori_with_the_books_link_bandwidths(name, link, shape, wrap):
    cluster = preset(name)
    assert cluster.torus is not None
    assert (cluster.torus.link_bandwidth, cluster.torus.shape, cluster.torus.wraparound) == (
        link, shape, wrap)  # fmt: skip
    assert cluster.network.kind == "dcn" and cluster.network.bandwidth == 2.5e10


def test_small_tpu_slices_have_no_wraparound():
    assert preset("tpu-v4", shape=(2, 2, 4)).torus.wraparound == (False, False, False)
    assert preset("tpu-v5e", shape=(4, 16)).torus.wraparound == (False, True)


def test_torus_placement_numbers_chips_x_fastest_and_hosts_by_block():
    cluster = preset("tpu-v4", shape=(4, 4, 4))
    assert cluster.device_coords[:6].tolist() == [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0],
                                                  [0, 1, 0], [1, 1, 0]]  # fmt: skip
    assert cluster.device_hosts[:8].tolist() == [0, 0, 1, 1, 0, 0, 1, 1]
    assert np.bincount(cluster.device_hosts).tolist() == [4] * 16


def test_two_slices_are_two_domains():
    cluster = preset("tpu-v5e", shape=(4, 4), slices=2)
    assert cluster.num_devices == 32 and cluster.num_domains == 2
    assert cluster.device_domains.tolist() == [0] * 16 + [1] * 16


def test_with_placement_takes_explicit_hosts_and_checks_them():
    cluster = preset("h100-8x", hosts=2)
    swapped = cluster.with_placement([1] * 8 + [0] * 8)
    assert swapped.device_hosts.tolist() == [1] * 8 + [0] * 8
    with pytest.raises(mt.InvalidArgumentError, match="expected 8 on each"):
        cluster.with_placement([0] * 9 + [1] * 7)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("400Gb/s", 5e10), ("400Gbps", 5e10), ("900GB/s", 9e11), ("25 GB/s", 2.5e10), (1e9, 1e9)],
)
def test_bandwidth_text_reads_bits_and_bytes(text, expected):
    assert parse_bandwidth(text) == expected


def test_sizes_and_times_read_their_units():
    assert parse_size("1GiB") == 2**30 and parse_size("4e9") == 4_000_000_000
    assert parse_size("64M") == 2**26
    assert parse_seconds("14us") == 14e-6 and parse_seconds("1ms") == 1e-3
    with pytest.raises(mt.InvalidArgumentError, match="unknown size unit"):
        parse_size("3 parsecs")


TOML = """
name = "lab"
hosts = 2
devices_per_host = 4
nics_per_host = 2
host_link = { kind = "nvlink", bandwidth = "300GB/s", latency = "3us" }
network = { kind = "roce", bandwidth = "200Gb/s", latency = "10us" }
"""


def test_toml_file_loads_with_units(tmp_path):
    path = tmp_path / "lab.toml"
    path.write_text(TOML)
    cluster = load_cluster(path)
    assert (cluster.num_devices, cluster.host_link, cluster.network) == (
        8, Link("nvlink", 3e11, 3e-6), Link("roce", 2.5e10, 1e-5))  # fmt: skip


def test_json_round_trip_keeps_torus_and_placement(tmp_path):
    cluster = preset("tpu-v4", shape=(2, 2, 4)).with_placement(
        np.repeat(np.arange(4), 4), preset("tpu-v4", shape=(2, 2, 4)).device_coords
    )
    path = tmp_path / "c.json"
    save_cluster(cluster, path)
    again = load_cluster(path)
    assert again == cluster and hash(again) == hash(cluster)
    assert json.loads(path.read_text())["torus"]["shape"] == [2, 2, 4]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"hosts": 1, "devices_per_host": 8, "host_link": {"kind": "nvlink"},
          "network": {"kind": "ib", "bandwidth": 1}}, "host_link needs kind and bandwidth"),
        ({"hosts": 1, "host_link": {"kind": "nvlink", "bandwidth": 1},
          "network": {"kind": "ib", "bandwidth": 1}}, "needs 'devices_per_host'"),
        ({"hosts": 1, "devices_per_host": 8, "host_link": {"kind": "wifi", "bandwidth": 1},
          "network": {"kind": "ib", "bandwidth": 1}}, "link kind must be one of"),
        ({"hosts": 3, "devices_per_host": 8, "hosts_per_domain": 2,
          "host_link": {"kind": "nvlink", "bandwidth": 1},
          "network": {"kind": "ib", "bandwidth": 1}}, "do not split into domains"),
        ({"hosts": 1, "colour": "red"}, "unknown keys"),
    ],
)
def test_bad_descriptions_name_the_problem(data, message):
    with pytest.raises(mt.InvalidArgumentError, match=message):
        Cluster.from_dict(data)


def test_unknown_preset_lists_the_presets():
    with pytest.raises(mt.InvalidArgumentError, match="presets: a100-8x, h100-8x"):
        load_cluster("h200-9x")


def test_torus_host_shape_must_divide_the_slice():
    with pytest.raises(mt.InvalidArgumentError, match="must divide"):
        Torus((4, 3), (False, False), 4.5e10, (2, 2))


TORUS_TOML = """
name = "v5e-4x8"
hosts = 8
host_link = { kind = "ici", bandwidth = 4.5e10, latency = "1us" }
network = { kind = "dcn", bandwidth = "200Gb/s" }

[torus]
shape = [4, 8]
wraparound = false
link_bandwidth = "45GB/s"
host_shape = [2, 2]
"""


def test_toml_torus_defaults_devices_and_domains_from_its_shape(tmp_path):
    path = tmp_path / "slice.toml"
    path.write_text(TORUS_TOML)
    cluster = load_cluster(path)
    assert (cluster.devices_per_host, cluster.hosts_per_domain, cluster.num_domains) == (4, 8, 1)
    assert cluster.torus.wraparound == (False, False) and cluster.torus.link_bandwidth == 4.5e10
    assert cluster.device_hosts[:8].tolist() == [0, 0, 1, 1, 0, 0, 1, 1]


def test_a_missing_cluster_file_is_named_without_cli_options():
    with pytest.raises(mt.InvalidArgumentError) as raised:
        load_cluster("/nope.toml")
    assert str(raised.value) == (
        "'/nope.toml' is neither a cluster file nor a preset; presets: a100-8x, h100-8x, "
        "p6-b200, gb200-nvl72, tpu-v4, tpu-v5p, tpu-v5e, tpu-v6e")


def test_estimate_with_groups_and_opcode_swapped_names_the_opcode():
    cluster = preset("h100-8x", hosts=2)
    with pytest.raises(mt.InvalidArgumentError) as raised:
        mt.topology.estimate(cluster, "all-reduce", [[0, 8], [1, 9]], 2**20)  # type: ignore[arg-type]
    assert str(raised.value) == (
        "opcode must be a collective opcode string (e.g. 'all-reduce'), got [[0, 8], [1, 9]]")
