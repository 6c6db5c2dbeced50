"""``/api/info`` and ``/api/groups`` over HTTP: exact groups, cells, modes and steps."""

from __future__ import annotations

import pytest

import meshtopo as mt

from .conftest import Client


def test_info_lists_limits_opcodes_and_mode_selectors(client: Client) -> None:
    reply = client.get("/api/info")
    assert reply.status == 200
    info = reply.body
    assert info["api_version"] == 2
    assert info["limits"] == {"devices": 65536, "body_bytes": 64 << 20}
    assert "all-reduce" in info["opcodes"]
    assert info["modes"] == [
        {"name": "kCrossReplica", "channel_id": False, "use_global_device_ids": None},
        {"name": "kCrossPartition", "channel_id": True, "use_global_device_ids": None},
        {"name": "kCrossReplicaAndPartition", "channel_id": True, "use_global_device_ids": False},
        {"name": "kFlattenedID", "channel_id": True, "use_global_device_ids": True},
    ]


def test_cross_replica_reads_each_written_group_once_per_partition(client: Client) -> None:
    r = client.groups(replicas=2, partitions=4, groups="{{0,1}}")
    assert r["mode"]["name"] == "kCrossReplica"
    assert r["mode"]["by"] == "fields"
    assert r["device_assignment"] == {
        "kind": "default", "table": [[0, 2, 4, 6], [1, 3, 5, 7]],
        # DA[0][1] = 1·2 + 0 = 2: the first cell whose flattened id is not its device.
        "shuffle": "replica 0, partition 1 has flattened id 1 (r·P + p) but is device 2, "
                   "because XLA's default placement DA[r][p] = p·R + r puts it there"}
    assert r["device_groups"] == {
        "groups": [[0, 1], [2, 3], [4, 5], [6, 7]],
        "count": 4,
        "compact": "[4,2]<=[8]",
    }
    cells = r["cells"]
    assert cells["device_id"] == [0, 2, 4, 6, 1, 3, 5, 7]
    assert cells["group"] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert cells["rank"] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert cells["mismatched"] == [1, 2, 3, 4, 5, 6]
    assert cells["overlaps"] == []
    assert r["steps"] == {
        "loop": "partition",
        "outer": "written",
        "per_group": 4,
        "count": 4,
        "written_groups": [[0, 1]],
        "substituted_empty": False,
    }
    assert r["grid"] == {
        "replicas": 2,
        "partitions": 4,
        "devices": 8,
        "layout": {"rows": 2, "cols": 4, "by": "grid"},
    }
    assert r["findings"] == []


def test_cross_partition_reads_each_written_group_once_per_replica(client: Client) -> None:
    r = client.groups(replicas=2, partitions=4, groups="{{0,1},{2,3}}", channel_id=True)
    assert r["mode"]["name"] == "kCrossPartition"
    assert r["device_groups"]["groups"] == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert r["steps"]["loop"] == "replica"
    assert r["steps"]["per_group"] == 2


def test_opcode_rule_reads_absent_flag_as_false_for_all_reduce(client: Client) -> None:
    r = client.groups(
        replicas=2, partitions=2, groups="{{0,1}}", channel_id=True, opcode="all-reduce"
    )
    assert r["mode"]["name"] == "kCrossReplicaAndPartition"
    assert r["mode"]["by"] == "opcode"
    assert r["mode"]["fields_mode"] == "kCrossPartition"
    assert r["mode"]["flag_reading"] == "plain_bool"
    assert r["device_groups"]["groups"] == [[0, 2, 1, 3]]
    ignored = client.groups(
        replicas=2,
        partitions=2,
        groups="{{0,1}}",
        channel_id=True,
        use_global_device_ids=False,
        opcode="all-to-all",
    )
    assert ignored["mode"]["name"] == "kCrossPartition"
    assert ignored["mode"]["fields_mode"] == "kCrossReplicaAndPartition"
    assert ignored["mode"]["flag_reading"] == "ignored"


def test_flattened_ids_and_device_ids_disagree_under_default_placement(client: Client) -> None:
    r = client.groups(
        replicas=2, partitions=2, groups="{{0,1,2,3}}", channel_id=True, use_global_device_ids=True
    )
    assert r["mode"]["name"] == "kFlattenedID"
    assert r["device_groups"]["groups"] == [[0, 2, 1, 3]]
    assert r["cells"]["mismatched"] == [1, 2]
    row_major = client.groups(
        replicas=2,
        partitions=2,
        groups="{{0,1,2,3}}",
        channel_id=True,
        use_global_device_ids=True,
        device_assignment="row_major",
    )
    assert row_major["device_groups"]["groups"] == [[0, 1, 2, 3]]
    assert row_major["cells"]["mismatched"] == []


def test_custom_device_assignment_is_used_as_given(client: Client) -> None:
    r = client.groups(
        replicas=2,
        partitions=2,
        groups="{{0,1},{2,3}}",
        channel_id=True,
        use_global_device_ids=True,
        device_assignment=[[3, 2], [1, 0]],
    )
    assert r["device_assignment"] == {
        "kind": "custom", "table": [[3, 2], [1, 0]],
        "shuffle": "replica 0, partition 0 has flattened id 0 (r·P + p) but is device 3, "
                   "because the device table puts it there"}
    assert r["device_groups"]["groups"] == [[3, 2], [1, 0]]
    assert r["cells"]["group"] == [0, 0, 1, 1]


@pytest.mark.parametrize(
    "text",
    ["{{0,4},{1,5},{2,6},{3,7}}", "[4,2]<=[2,4]T(1,0)", "mesh['data'=2,'model'=4] {'data'}"],
    ids=["explicit", "iota", "mesh-axes"],
)
def test_every_encoding_gives_the_same_groups(client: Client, text: str) -> None:
    r = client.groups(
        replicas=1, partitions=8, groups=text, channel_id=True, use_global_device_ids=True
    )
    assert r["written_groups"]["text"] == text
    assert r["written_groups"]["compact"] == "[4,2]<=[2,4]T(1,0)"
    assert r["device_groups"]["groups"] == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert r["cells"]["group"] == [0, 1, 2, 3, 0, 1, 2, 3]


def test_over_mesh_axes_and_mesh_layout(client: Client) -> None:
    mesh = {"axes": [{"name": "data", "size": 2}, {"name": "model", "size": 4}]}
    r = client.groups(mesh=mesh, over=["data"], channel_id=True, use_global_device_ids=True)
    assert r["grid"]["replicas"] == 1 and r["grid"]["partitions"] == 8
    assert r["grid"]["layout"] == {"rows": 2, "cols": 4, "by": "mesh"}
    assert r["written_groups"]["groups"] == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert r["mesh"]["devices"] == [0, 1, 2, 3, 4, 5, 6, 7]
    reversed_mesh = client.groups(mesh={**mesh, "device_order": "reversed"}, over="data")
    assert reversed_mesh["mesh"]["device_order"] == "reversed"
    # Written ids are mesh positions; the mesh's device assignment turns them into devices.
    assert reversed_mesh["written_groups"]["groups"] == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert reversed_mesh["device_assignment"] == {
        "kind": "mesh",
        "table": [[7, 6, 5, 4, 3, 2, 1, 0]],
        "shuffle": "replica 0, partition 0 has flattened id 0 (r·P + p) but is device 7, "
                   "because the mesh's device order puts it there (JAX runs flattened id f "
                   "on the device at mesh position f)",
    }
    assert reversed_mesh["device_groups"]["groups"] == [[7, 3], [6, 2], [5, 1], [4, 0]]


def test_a_named_mesh_is_dialed_as_jax_writes_it(client: Client) -> None:
    """data=2, model=4 in the order 0 2 4 6 1 3 5 7, over model, with no mode fields: one
    replica, a channel and global ids (kFlattenedID), the device assignment in mesh order."""
    mesh = {
        "axes": [{"name": "data", "size": 2}, {"name": "model", "size": 4}],
        "device_order": [0, 2, 4, 6, 1, 3, 5, 7],
    }
    r = client.groups(mesh=mesh, over=["model"])
    assert r["mode"]["name"] == "kFlattenedID"
    assert r["hlo_instruction"] == (
        "%collective = f32[4]{0} all-reduce(f32[4]{0} %p), channel_id=1, "
        "replica_groups=[2,4]<=[8], use_global_device_ids=true, to_apply=%add"
    )
    assert r["device_assignment"]["table"] == [[0, 2, 4, 6, 1, 3, 5, 7]]
    assert r["device_groups"]["groups"] == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert r["findings"] == []
    # Cell f holds device DA[0][f], which sits at mesh position f.
    assert r["cells"]["device_id"] == [0, 2, 4, 6, 1, 3, 5, 7]
    assert r["cells"]["mesh_position"] == list(range(8))
    # The fields still choose: null is the flag absent.
    absent = client.groups(mesh=mesh, over=["model"], use_global_device_ids=None)
    assert absent["mode"]["name"] == "kCrossPartition"
    # Another device assignment moves the devices away from their mesh positions.
    default = client.groups(mesh=mesh, over=["model"], device_assignment="default")
    assert default["cells"]["device_id"] == list(range(8))
    assert default["cells"]["mesh_position"] == [0, 4, 1, 5, 2, 6, 3, 7]
    assert default["device_groups"]["groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_mesh_with_replicas_splits_the_devices(client: Client) -> None:
    mesh = {"axes": [{"name": "x", "size": 2}, {"name": "y", "size": 4}]}
    r = client.groups(mesh=mesh, replicas=2, over=["y"])
    assert (r["grid"]["replicas"], r["grid"]["partitions"]) == (2, 4)
    assert r["device_assignment"]["table"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert r["device_groups"]["groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    cross_replica = client.groups(
        mesh=mesh, replicas=2, over=["y"], channel_id=False, use_global_device_ids=None
    )
    # {'y'} lists 0..3 and 4..7: replica ids 4..7 do not exist with 2 replicas.
    assert cross_replica["device_groups"] is None
    assert cross_replica["findings"] == [
        {
            "source": "verifier",
            "message": "In kCrossReplica mode, replica groups should contain 2 replicas, but "
            "found 8: %collective = f32[4]{0} all-reduce(f32[4]{0} %p), "
            "replica_groups=[2,4]<=[8], to_apply=%add",
        },
        {
            "source": "expansion",
            "message": "replica group id 2 is out of range in kCrossReplica mode: there are 2 "
            "replicas (ids 0..1) in replica groups [2,4]<=[8]",
        },
    ]


def test_dump_shapes_are_checked_as_written(client: Client) -> None:
    """An all-gather of f32[8] into f32[16] over groups of 4: the dial keeps the dump's shapes,
    so XLA's shard-count check speaks as it does for the dump."""
    body = {
        "replicas": 4,
        "opcode": "all-gather",
        "groups": "{{0,1,2,3}}",
        "shapes": {"operand": [8], "result": [16], "dimension": 0},
    }
    r = client.groups(**body)
    assert r["shapes"] == "given"
    assert r["hlo_instruction"] == (
        "%collective = f32[16]{0} all-gather(f32[8]{0} %p), replica_groups={{0,1,2,3}}, "
        "dimensions={0}"
    )
    assert [f["message"].split(", %")[0] for f in r["findings"]] == [
        "shard_count = 2, subgroup_size = 4"
    ]
    fitted = client.groups(**{k: v for k, v in body.items() if k != "shapes"})
    assert fitted["shapes"] == "fitted" and fitted["findings"] == []


def test_invalid_mode_is_an_answer_not_a_request_error(client: Client) -> None:
    r = client.groups(replicas=2, partitions=2, groups="{{0,1}}", use_global_device_ids=True)
    assert r["mode"]["name"] is None
    assert r["mode"]["error"].startswith(
        "Invalid combination of has_channel_id and use_global_device_ids"
    )
    assert r["device_groups"] is None
    assert r["cells"]["group"] == [-1, -1, -1, -1]
    assert r["steps"] is None
    assert r["findings"][0] == {"source": "mode", "message": r["mode"]["error"]}


def test_empty_groups_per_mode(client: Client) -> None:
    r = client.groups(replicas=2, partitions=3, groups="{}", channel_id=True)
    assert r["mode"]["name"] == "kCrossPartition"
    assert r["steps"]["substituted_empty"] is True
    assert r["steps"]["written_groups"] == [[0, 1, 2]]
    assert r["device_groups"]["groups"] == [[0, 2, 4], [1, 3, 5]]
    modes = {m["name"]: m for m in r["modes"]}
    assert modes["kCrossReplica"]["count"] == 3
    assert modes["kCrossReplicaAndPartition"]["sizes"] == [6]
    assert modes["kFlattenedID"]["error"] == (
        "replica groups cannot be empty for kFlattenedID mode"
    )
    assert modes["kFlattenedID"]["group"] == [-1] * 6
    assert [m["channel_id"] for m in r["modes"]] == [False, True, True, True]


def test_a_device_in_two_groups_is_reported_as_overlap(client: Client) -> None:
    r = client.groups(replicas=2, partitions=1, groups="{{0,1},{1}}")
    assert r["device_groups"]["groups"] == [[0, 1], [1]]
    assert r["cells"]["overlaps"] == [1]
    assert r["cells"]["group"] == [0, 0]


def test_ragged_groups_are_expanded(client: Client) -> None:
    r = client.groups(replicas=4, partitions=1, groups="{{0},{1,3},{2}}")
    assert r["device_groups"]["groups"] == [[0], [1, 3], [2]]
    assert r["device_groups"]["compact"] is None
    assert r["cells"]["group"] == [0, 1, 2, 1]


def test_include_selects_sections(client: Client) -> None:
    r = client.groups(replicas=2, partitions=2, groups="{{0,1}}", include=["cells"])
    assert "cells" in r and "steps" not in r and "modes" not in r and "findings" not in r


def test_wrapped_layout_for_one_replica(client: Client) -> None:
    r = client.groups(replicas=1, partitions=64, groups="{}", include=[])
    assert r["grid"]["layout"] == {"rows": 8, "cols": 8, "by": "wrapped"}


def test_large_grid_answers_with_columnar_cells(client: Client) -> None:
    r = client.groups(
        replicas=64,
        partitions=64,
        groups="[64,64]<=[64,64]T(1,0)",
        channel_id=True,
        use_global_device_ids=True,
    )
    assert r["grid"]["devices"] == 4096
    assert len(r["cells"]["group"]) == 4096
    assert r["device_groups"]["count"] == 64
    assert r["written_groups"]["compact"] == "[64,64]<=[64,64]T(1,0)"


def test_dump_endpoint_without_a_file(client: Client) -> None:
    reply = client.get("/api/dump")
    assert reply.status == 200
    assert reply.body == {"name": None, "text": None, "result": None, "error": None}


def test_permute_reads_groups_as_pairs_in_the_library_order(client: Client) -> None:
    r = client.groups(
        replicas=2,
        partitions=2,
        groups="{{0,1},{1,0}}",
        channel_id=True,
        opcode="collective-permute",
    )
    assert r["pairs"] is True
    assert r["mode"]["name"] == "kCrossPartition"
    # Every pair in every replica, replica-major: DA = [[0,2],[1,3]].
    assert r["device_groups"]["groups"] == [[0, 2], [2, 0], [1, 3], [3, 1]]
    assert r["steps"]["outer"] == "loop"
    assert r["steps"]["loop"] == "replica"
    assert r["findings"] == []
    modes = {m["name"]: m["error"] for m in r["modes"]}
    assert modes["kFlattenedID"] == (
        "collective-permute reads pairs as replica or partition ids, not in kFlattenedID mode"
    )


def test_permute_findings_are_xla_source_target_checks(client: Client) -> None:
    r = client.groups(
        replicas=1,
        partitions=4,
        groups="{{0,1},{2,1},{0,7}}",
        channel_id=True,
        opcode="collective-permute",
    )
    assert [f["message"] for f in r["findings"] if f["source"] == "verifier"] == [
        "Target 1 appears more than once in instruction's source-target pairs",
        "Source 0 appears more than once in instruction's source-target pairs",
        "Target 7 in the instruction's source-target pair must be < 4",
    ]


def test_permute_groups_must_be_pairs(client: Client) -> None:
    reply = client.post("/api/groups", {"groups": "{{0,1,2}}", "opcode": "collective-permute"})
    assert reply.status == 400
    assert reply.body["error"]["message"] == (
        "collective-permute takes source-target pairs, written as groups of two ids "
        "({{0,1},{1,2}}); group 0 {0,1,2} has 3 ids"
    )


@pytest.mark.parametrize(
    ("body", "instruction"),
    [
        (
            {"replicas": 2, "partitions": 4, "groups": "{{0,1}}"},
            "%collective = f32[4]{0} all-reduce(f32[4]{0} %p), replica_groups={{0,1}}, "
            "to_apply=%add",
        ),
        (
            {"replicas": 2, "partitions": 4, "groups": "{{0,1},{2,3}}", "channel_id": True},
            "%collective = f32[8]{0} all-to-all(f32[8]{0} %p), channel_id=1, "
            "replica_groups={{0,1},{2,3}}, dimensions={0}",
        ),
        (
            {
                "replicas": 1,
                "partitions": 8,
                "groups": "[2,4]<=[8]",
                "channel_id": True,
                "use_global_device_ids": True,
                "opcode": "all-gather",
            },
            "%collective = f32[16]{0} all-gather(f32[4]{0} %p), channel_id=1, "
            "replica_groups=[2,4]<=[8], dimensions={0}, use_global_device_ids=true",
        ),
        (
            {
                "replicas": 1,
                "partitions": 4,
                "groups": "{{0,1},{1,2}}",
                "channel_id": True,
                "opcode": "collective-permute-start",
            },
            "%collective = f32[4]{0} collective-permute(f32[4]{0} %p), channel_id=1, "
            "source_target_pairs={{0,1},{1,2}}",
        ),
    ],
    ids=["cross-replica", "cross-partition", "all-gather", "permute"],
)
def test_the_dial_as_one_hlo_instruction(
    client: Client, body: dict[str, object], instruction: str
) -> None:
    assert client.groups(**body)["hlo_instruction"] == instruction


@pytest.mark.parametrize(
    ("body", "messages"),
    [
        (
            {"replicas": 2, "partitions": 1, "groups": "{{0,1},{1}}"},
            [
                "Replica 1 is repeated in instruction's replica-groups: %collective = f32[4]{0} "
                "all-reduce(f32[4]{0} %p), replica_groups={{0,1},{1}}, to_apply=%add"
            ],
        ),
        (
            {
                "replicas": 1,
                "partitions": 8,
                "groups": "{{0,1,2},{3,4,5}}",
                "channel_id": True,
                "use_global_device_ids": True,
                "opcode": "all-gather",
            },
            [
                "In kFlattenedID mode, replica groups should contain 8 flattened IDs, but found 6: "
                "%collective = f32[12]{0} all-gather(f32[4]{0} %p), channel_id=1, "
                "replica_groups={{0,1,2},{3,4,5}}, dimensions={0}, use_global_device_ids=true"
            ],
        ),
        (
            {
                "replicas": 2,
                "partitions": 3,
                "groups": "{}",
                "channel_id": True,
                "use_global_device_ids": True,
            },
            [
                "Replica groups must be specified in flattened-id mode",
                "replica groups cannot be empty for kFlattenedID mode",
            ],
        ),
        (
            {"replicas": 4, "partitions": 1, "groups": "{{0},{1,3},{2}}"},
            [],
        ),
        (
            {"replicas": 4, "partitions": 1, "groups": "{{0},{1,3},{2}}", "opcode": "all-gather"},
            ["Replica groups expected to be of uniform size"],
        ),
    ],
    ids=[
        "repeated",
        "flattened-count",
        "flattened-empty",
        "ragged-all-reduce",
        "ragged-all-gather",
    ],
)
def test_findings_are_the_verifier_words_then_the_expansion(
    client: Client, body: dict[str, object], messages: list[str]
) -> None:
    assert [f["message"] for f in client.groups(**body)["findings"]] == messages


def test_repeated_ids_that_would_multiply_past_the_limit_are_not_expanded(client: Client) -> None:
    zeros = "{{" + ",".join(["0"] * 2048) + "}}"
    r = client.groups(replicas=1, partitions=64, groups=zeros)
    assert r["device_groups"] is None
    assert r["findings"][-1] == {
        "source": "expansion",
        "message": "the device groups would list 131072 device ids (2048 written ids x 64), more "
        "than the explorer's device limit of 65536; each device can appear at most once in "
        "valid groups",
    }
    assert r["findings"][0]["message"].startswith("Replica 0 is repeated in instruction's")


def test_over_a_sub_axis(client: Client) -> None:
    mesh = {"axes": [{"name": "x", "size": 2}, {"name": "y", "size": 8}]}
    r = client.groups(mesh=mesh, over=["y:(2)4"], channel_id=True, use_global_device_ids=True)
    # y (size 8) splits into [2, 4, 1]; the groups run over the middle factor of size 4.
    assert r["written_groups"]["groups"] == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
        [8, 9, 10, 11],
        [12, 13, 14, 15],
    ]
    reply = client.post("/api/groups", {"mesh": mesh, "over": ["y:(2)3"]})
    assert reply.status == 400
    assert reply.body["error"]["kind"] == "InvalidArgumentError"


@pytest.mark.parametrize(
    ("fields", "copies"),
    [
        ({}, 128),  # kCrossReplica: once per partition
        ({"channel_id": True}, 2),  # kCrossPartition: once per replica
        ({"channel_id": True, "use_global_device_ids": False}, 128),  # sweeps every partition
        ({"channel_id": True, "use_global_device_ids": True}, 1),  # flattened ids: once
    ],
)
def test_the_limit_counts_each_written_id_by_the_modes_expansion_factor(
    client: Client, fields: dict[str, object], copies: int
) -> None:
    zeros = "{{" + ",".join(["0"] * 1024) + "}}"
    r = client.groups(replicas=2, partitions=128, groups=zeros, **fields)
    assert copies == mt.expansion_factor(r["mode"]["name"], 2, 128)
    if 1024 * copies <= 65536:
        groups = r["device_groups"]["groups"]
        assert sum(len(group) for group in groups) == 1024 * copies
        return
    assert r["device_groups"] is None
    assert r["findings"][-1] == {
        "source": "expansion",
        "message": f"the device groups would list {1024 * copies} device ids (1024 written ids "
        f"x {copies}), more than the explorer's device limit of 65536; each device can appear "
        "at most once in valid groups",
    }
