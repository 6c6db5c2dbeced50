"""Meshes to groups (the seed's 2x4 data/model mesh), the reverse lookup, and group modes."""

import numpy as np
import pytest

import meshtopo as mt

M = mt.CollectiveOpGroupMode


def test_seed_mesh_groups():
    mesh = mt.Mesh({"data": 2, "model": 4})
    over_model = mesh.replica_groups(over="model")
    over_data = mesh.replica_groups(over="data")
    assert over_model.replica_groups == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert str(over_model) == "[2,4]<=[8]"
    assert over_data.replica_groups == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert str(over_data) == "[4,2]<=[2,4]T(1,0)"
    assert repr(over_data) == "CollectiveDeviceList('[4,2]<=[2,4]T(1,0)')"


@pytest.mark.parametrize(
    ("axes", "over", "groups"),
    [
        ({"x": 2, "y": 2, "z": 2}, ["x", "z"], [[0, 1, 4, 5], [2, 3, 6, 7]]),
        ({"x": 2, "y": 2, "z": 2}, ["z", "x"], [[0, 4, 1, 5], [2, 6, 3, 7]]),
        ({"x": 2, "y": 4}, ["x", "y"], [[0, 1, 2, 3, 4, 5, 6, 7]]),
        ({"x": 2, "y": 4}, ["y", "x"], [[0, 4, 1, 5, 2, 6, 3, 7]]),
        ({"x": 2, "y": 4}, [], [[0], [1], [2], [3], [4], [5], [6], [7]]),
        ({"x": 8}, ["x:(2)2"], [[0, 2], [1, 3], [4, 6], [5, 7]]),
        ({"x": 8}, [mt.SubAxis("x", 1, 2)], [[0, 4], [1, 5], [2, 6], [3, 7]]),
    ],
)
def test_groups_over_axes(axes, over, groups):
    assert mt.Mesh(axes).replica_groups(over=over).replica_groups == groups


def test_non_default_device_order():
    mesh = mt.Mesh({"data": 2, "model": 4}, devices=[[0, 2, 4, 6], [1, 3, 5, 7]])
    assert mesh.replica_groups(over="data").replica_groups == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert mesh.replica_groups(over="model").replica_groups == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert str(mesh) == "mesh['data'=2,'model'=4], device_ids=([4,2]T(1,0))"
    shuffled = mt.Mesh({"x": 2, "y": 2}, devices=[3, 0, 2, 1])
    assert shuffled.replica_groups(over="y").replica_groups == [[3, 0], [2, 1]]
    assert str(shuffled) == "mesh['x'=2,'y'=2], device_ids=(3,0,2,1)"


def test_axes_for_reverse_lookup():
    mesh = mt.Mesh({"x": 2, "y": 2, "z": 2})
    for over in (["x"], ["z"], ["y", "x"], ["x", "z"], ["z", "y", "x"]):
        assert mesh.axes_for(mesh.replica_groups(over=over)) == tuple(over)
    assert mesh.axes_for([[0, 3], [1, 2], [4, 7], [5, 6]]) is None
    assert mesh.axes_for([[0, 1], [2]]) is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (({},), "a mesh needs at least one axis"),
        (({"x": 0},), "mesh axis 'x' must have a positive int size, got 0"),
        (({"x": 2}, [0, 0]), "mesh device ids must be distinct"),
        (({"x": 2}, [0, 1, 2]), "mesh ['x'=2] has 2 positions but devices has 3 ids"),
        (({"x": 2}, [-1, 0]), "mesh device ids must be non-negative, got -1"),
        (({"x'y": 2},), 'mesh axis name "x\'y" must be a plain non-empty name'),
    ],
)
def test_bad_meshes(args, message):
    with pytest.raises(mt.InvalidArgumentError) as caught:
        mt.Mesh(*args)
    assert str(caught.value) == message


def test_bad_axes():
    mesh = mt.Mesh({"x": 4})
    with pytest.raises(mt.InvalidArgumentError, match="collective axis 'y' is not an axis"):
        mesh.replica_groups(over="y")
    with pytest.raises(mt.InvalidArgumentError, match="axis 'x' is named twice"):
        mesh.replica_groups(over=["x", "x"])
    with pytest.raises(mt.InvalidArgumentError, match="sub-axis x:\\(1\\)3 does not fit"):
        mesh.replica_groups(over="x:(1)3")


@pytest.mark.parametrize(
    ("has_channel_id", "use_global_device_ids", "mode"),
    [
        (False, None, M.CROSS_REPLICA),
        (False, False, M.CROSS_REPLICA),
        (True, None, M.CROSS_PARTITION),
        (True, False, M.CROSS_REPLICA_AND_PARTITION),
        (True, True, M.FLATTENED_ID),
    ],
)
def test_group_mode_table(has_channel_id, use_global_device_ids, mode):
    assert mt.group_mode(has_channel_id, use_global_device_ids) is mode


def test_invalid_mode_cell():
    with pytest.raises(mt.InvalidArgumentError) as caught:
        mt.group_mode(has_channel_id=False, use_global_device_ids=True)
    assert str(caught.value).startswith(
        "Invalid combination of has_channel_id and use_global_device_ids"
    )


def test_mode_names():
    assert [str(m) for m in M] == [
        "kCrossReplica",
        "kCrossPartition",
        "kCrossReplicaAndPartition",
        "kFlattenedID",
    ]
    for spelling in (
        "kFlattenedID",
        "flattened_id",
        "COLLECTIVE_OP_GROUP_MODE_FLATTENED_ID",
        "FLATTENED_ID",
    ):
        assert M.parse(spelling) is M.FLATTENED_ID
    assert M.parse("cross_replica_and_partition") is M.CROSS_REPLICA_AND_PARTITION
    with pytest.raises(mt.InvalidArgumentError, match="Invalid collective op group mode: sideways"):
        M.parse("sideways")


@pytest.mark.parametrize(
    ("opcode", "mode"),
    [
        ("all-reduce", M.CROSS_REPLICA_AND_PARTITION),
        ("all-reduce-start", M.CROSS_REPLICA_AND_PARTITION),
        ("all-gather", M.CROSS_REPLICA_AND_PARTITION),
        ("reduce-scatter", M.CROSS_REPLICA_AND_PARTITION),
        ("all-to-all", M.CROSS_PARTITION),
        ("collective-permute", M.CROSS_PARTITION),
        ("collective-broadcast", M.CROSS_PARTITION),
        ("ragged-all-to-all", M.CROSS_PARTITION),
    ],
)
def test_per_opcode_rule_with_channel(opcode, mode):
    assert mt.group_mode_for_opcode(opcode, has_channel_id=True, use_global_device_ids=None) is mode
    assert (
        mt.group_mode_for_opcode(opcode, has_channel_id=False, use_global_device_ids=None)
        is M.CROSS_REPLICA
    )


def test_per_opcode_rule_ignores_flag_where_xla_does():
    assert mt.group_mode_for_opcode("all-to-all", True, True) is M.CROSS_PARTITION
    assert mt.group_mode_for_opcode("all-gather", True, True) is M.FLATTENED_ID
    with pytest.raises(mt.InternalError, match="Unexpected instruction type"):
        mt.group_mode_for_opcode("add", True, None)


def test_mesh_device_ids_round_trip_through_text():
    mesh = mt.Mesh(
        {"a": 2, "b": 2, "c": 2}, devices=np.arange(8).reshape(2, 2, 2).transpose(1, 0, 2)
    )
    text = str(mt.MeshAxesReplicaGroupList(mesh, ("b",)))
    assert text == "mesh['a'=2,'b'=2,'c'=2], device_ids=([2,2,2]T(1,0,2)) {'b'}"
    assert mt.MeshAxesReplicaGroupList.parse(text).mesh == mesh


def test_a_mesh_is_one_frozen_hashable_value():
    mesh = mt.Mesh({"data": 2, "model": 4})
    with pytest.raises(AttributeError, match="Mesh is immutable; cannot set _names"):
        mesh._names = ("x",)
    with pytest.raises(AttributeError, match="Mesh is immutable; cannot set axis_names"):
        mesh.axis_names = ("x",)
    with pytest.raises(ValueError, match="read-only"):
        mesh.devices[0, 0] = 9
    read = mt.CollectiveDeviceList.parse("mesh['data'=2,'model'=4] {'data'}").mesh_axes.mesh
    assert type(read) is mt.Mesh and mt.MeshGrid is mt.Mesh
    assert read == mesh and hash(read) == hash(mesh) and len({read, mesh}) == 1
    assert read.replica_groups(over="data").replica_groups == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert mesh != mt.Mesh({"data": 2, "model": 4}, devices=[1, 0, 2, 3, 4, 5, 6, 7])
