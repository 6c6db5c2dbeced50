"""``/api/groups`` with a ``cluster``: each cell's host and domain, each group's tier."""

from __future__ import annotations

import pytest

from .conftest import Client

MESH_2X8 = {"axes": [{"name": "data", "size": 2}, {"name": "model", "size": 8}]}
MESH_4X4 = {"axes": [{"name": "x", "size": 4}, {"name": "y", "size": 4}]}


def test_info_names_the_cluster_presets(client: Client) -> None:
    assert client.get("/api/info").body["cluster_presets"] == [
        "a100-8x", "h100-8x", "p6-b200", "gb200-nvl72", "tpu-v4", "tpu-v5p", "tpu-v5e", "tpu-v6e",
    ]  # fmt: skip


def test_model_groups_stay_on_one_host(client: Client) -> None:
    r = client.groups(mesh=MESH_2X8, over=["model"], cluster="h100-8x:2")
    assert r["cluster"] == {
        "spec": "h100-8x:2",
        "name": "h100-8x",
        "devices": 16,
        "hosts": 2,
        "devices_per_host": 8,
        "domains": 2,
        "hosts_per_domain": 1,
        "host_link": {"kind": "nvlink", "bandwidth": 4.5e11, "latency": 3.4e-06, "links": 18},
        "network": {"kind": "ib", "bandwidth": 5e10, "latency": 1.4e-05, "per_host": 8},
        "torus": None,
    }
    assert r["cells"]["host"] == [0] * 8 + [1] * 8
    assert r["cells"]["domain"] == [0] * 8 + [1] * 8
    assert r["tiers"] == {
        "error": None,
        "groups": {
            "tier": ["host", "host"],
            "hosts": [1, 1],
            "domains": [1, 1],
            "link": ["nvlink", "nvlink"],
            "link_bandwidth": [4.5e11, 4.5e11],
            "ring_hops": None,
        },
        "counts": {"host": 2},
    }


def test_data_groups_cross_the_network_between_two_hosts(client: Client) -> None:
    r = client.groups(mesh=MESH_2X8, over=["data"], cluster="h100-8x:2")
    assert r["device_groups"]["groups"] == [[i, i + 8] for i in range(8)]
    tiers = r["tiers"]["groups"]
    assert tiers["tier"] == ["network"] * 8
    assert tiers["hosts"] == [2] * 8
    assert tiers["domains"] == [2] * 8
    assert tiers["link"] == ["ib"] * 8
    assert tiers["link_bandwidth"] == [5e10] * 8
    assert r["tiers"]["counts"] == {"network": 8}


def test_the_device_order_decides_the_tier(client: Client) -> None:
    """Reversed, each model group still fills one host; interleaved (devices 0,8,1,9,...),
    each model group spans both hosts and crosses the network."""
    reversed_ = client.groups(mesh={**MESH_2X8, "device_order": "reversed"}, over=["model"],
                              cluster="h100-8x:2")  # fmt: skip
    assert reversed_["cells"]["device_id"][:3] == [15, 14, 13]
    assert reversed_["cells"]["host"] == [1] * 8 + [0] * 8
    assert reversed_["tiers"]["groups"]["tier"] == ["host", "host"]
    order = [d for pair in zip(range(8), range(8, 16), strict=True) for d in pair]
    r = client.groups(mesh={**MESH_2X8, "device_order": order}, over=["model"],
                      cluster="h100-8x:2")  # fmt: skip
    assert r["cells"]["host"] == [0, 1] * 8
    assert r["device_groups"]["groups"][0] == [0, 8, 1, 9, 2, 10, 3, 11]
    assert r["tiers"]["groups"]["tier"] == ["network", "network"]
    assert r["tiers"]["groups"]["hosts"] == [2, 2]
    assert r["tiers"]["groups"]["link"] == ["ib", "ib"]


def test_a_tpu_slice_gives_hosts_hops_and_one_domain(client: Client) -> None:
    """v5e 4x4 without wraparound: hosts hold 2x2 chips (x fastest), a group of four along one
    axis spans two hosts in one slice and its ring closes over 3 hops."""
    r = client.groups(mesh=MESH_4X4, over=["y"], cluster="tpu-v5e:4x4")
    assert r["cluster"]["torus"] == {"shape": [4, 4], "wraparound": [False, False]}
    assert r["cluster"]["hosts"] == 4
    assert r["cluster"]["domains"] == 1
    assert r["cells"]["host"] == [0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3]
    assert r["cells"]["domain"] == [0] * 16
    tiers = r["tiers"]["groups"]
    assert tiers["tier"] == ["domain"] * 4
    assert tiers["hosts"] == [2] * 4
    assert tiers["link"] == ["ici"] * 4
    assert tiers["ring_hops"] == [3] * 4


def test_two_tpu_slices_put_cross_slice_groups_on_dcn(client: Client) -> None:
    mesh = {"axes": [{"name": "s", "size": 2}, {"name": "c", "size": 4}]}
    r = client.groups(mesh=mesh, over=["s"], cluster="tpu-v5e:2x2:2")
    assert r["cells"]["domain"] == [0, 0, 0, 0, 1, 1, 1, 1]
    tiers = r["tiers"]["groups"]
    assert tiers["tier"] == ["network"] * 4
    assert tiers["link"] == ["dcn"] * 4
    assert tiers["ring_hops"] == [-1] * 4


def test_a_larger_cluster_holds_a_smaller_grid(client: Client) -> None:
    r = client.groups(replicas=1, partitions=4, channel_id=True, groups="{{0,1},{2,3}}",
                      cluster="h100-8x:2")  # fmt: skip
    assert r["cells"]["host"] == [0, 0, 0, 0]
    assert r["tiers"]["groups"]["tier"] == ["host", "host"]


def test_single_device_groups_cross_no_link(client: Client) -> None:
    r = client.groups(replicas=1, partitions=2, channel_id=True, groups="{{0},{1}}",
                      cluster="h100-8x")  # fmt: skip
    assert r["tiers"]["groups"]["tier"] == ["device", "device"]
    assert r["tiers"]["groups"]["link"] == [None, None]
    assert r["tiers"]["counts"] == {"device": 2}


def test_groups_that_cannot_be_formed_carry_the_reason(client: Client) -> None:
    r = client.groups(replicas=2, partitions=1, groups="{{0,1,2}}", cluster="h100-8x")
    assert r["device_groups"] is None
    assert r["tiers"] == {"error": "no device groups to place", "groups": None, "counts": None}
    assert r["cells"]["host"] == [0, 0]


def test_without_a_cluster_the_answer_is_unchanged(client: Client) -> None:
    plain = client.groups(mesh=MESH_2X8, over=["model"])
    for empty in (None, "", "  "):
        assert client.groups(mesh=MESH_2X8, over=["model"], cluster=empty) == plain
    assert "cluster" not in plain and "tiers" not in plain
    assert sorted(plain["cells"]) == [
        "device_id", "group", "mesh_coordinates", "mesh_position", "mismatched", "overlaps",
        "partition", "rank", "replica",
    ]  # fmt: skip


def test_only_the_asked_sections_carry_cells(client: Client) -> None:
    r = client.groups(mesh=MESH_2X8, over=["model"], cluster="h100-8x:2", include=[])
    assert "cells" not in r
    assert r["tiers"]["counts"] == {"host": 2}


@pytest.mark.parametrize(
    ("cluster", "status", "message"),
    [
        ("h100-8x:1", 400, "field 'cluster' 'h100-8x:1' has 8 devices, fewer than the grid's 16"),
        (
            "nope:2",
            400,
            "field 'cluster': 'nope:2' names 'nope', which is not a preset; presets: a100-8x, h100-8x, "
            "p6-b200, gb200-nvl72, tpu-v4, tpu-v5p, tpu-v5e, tpu-v6e",
        ),
        (
            "h100-8x:2x2",
            400,
            "field 'cluster': preset 'h100-8x' is a GPU cluster: give hosts, "
            "not shape",
        ),
        (
            "tpu-v5e:16",
            400,
            "field 'cluster': preset 'tpu-v5e' is a TPU slice: give shape, not hosts",
        ),
        (
            "h100-8x:0",
            400,
            "field 'cluster': cluster num_hosts must be a positive int, got 0",
        ),
        (
            "../etc/passwd",
            400,
            "field 'cluster': '../etc/passwd' is not a preset spec (name, name:HOSTS or "
            "name:AxB[xC][:SLICES])",
        ),
        (
            "tpu-v4:64x64x64",
            413,
            "field 'cluster' 'tpu-v4:64x64x64' has 262144 devices, more than the explorer's "
            "device limit of 65536",
        ),
        (7, 400, "field 'cluster' must be a string, got an integer"),
        ("h" * 65, 400, "field 'cluster' is 65 characters, more than 64"),
    ],
)
def test_bad_clusters_are_refused_by_name(
    client: Client, cluster: object, status: int, message: str
) -> None:
    reply = client.post("/api/groups", {"mesh": MESH_2X8, "over": ["model"], "cluster": cluster})
    assert reply.status == status
    assert reply.body["error"]["message"] == message
    assert reply.body["error"]["kind"] == ("LimitError" if status == 413 else "BadRequest")


def test_a_host_count_past_the_library_limit_is_a_limit_error(client: Client) -> None:
    reply = client.post(
        "/api/groups", {"mesh": MESH_2X8, "over": ["model"], "cluster": "h100-8x:999999999"}
    )
    assert reply.status == 413
    assert reply.body["error"]["kind"] == "LimitError"
    assert reply.body["error"]["message"].startswith("field 'cluster' 'h100-8x:999999999': ")
