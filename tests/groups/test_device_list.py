"""CollectiveDeviceList: the three encodings, lazy expansion, equality, compaction, bad text."""

import numpy as np
import pytest

import meshtopo as mt

C = mt.CollectiveDeviceList


@pytest.mark.parametrize(
    ("text", "groups", "encoding"),
    [
        ("{}", [], "explicit"),
        ("{{}}", [[]], "explicit"),
        ("{{},{}}", [[], []], "explicit"),
        ("{{0}, {}}", [[0], []], "explicit"),
        ("{{1,2},{3,0}}", [[1, 2], [3, 0]], "explicit"),
        ("{ {0, 1} , {2,3} }", [[0, 1], [2, 3]], "explicit"),
        ("[2,10]<=[20]", [list(range(10)), list(range(10, 20))], "iota"),
        ("[2,4]<=[4,2]T(1,0)", [[0, 2, 4, 6], [1, 3, 5, 7]], "iota"),
        ("mesh['a'=2,'b'=4] {'a'}", [[0, 4], [1, 5], [2, 6], [3, 7]], "mesh_axes"),
        ("mesh['r'=2,'p'=2] {'p','r'}", [[0, 2, 1, 3]], "mesh_axes"),
        (
            "mesh['axis_0'=2,'axis_1'=4], device_ids=([2,2,2]T(1,0,2)) {'axis_1':(2)2}",
            [[0, 1], [4, 5], [2, 3], [6, 7]],
            "mesh_axes",
        ),
        (
            "mesh['axis_0'=2,'axis_1'=8], device_ids=([2,2,4]T(1,0,2)) {'axis_1':(2)4}",
            [[0, 1, 2, 3], [8, 9, 10, 11], [4, 5, 6, 7], [12, 13, 14, 15]],
            "mesh_axes",
        ),
        ("mesh['x'=2,'y'=2], device_ids=(0,2,3,1) {'y'}", [[0, 2], [3, 1]], "mesh_axes"),
        ("mesh[x=4] {x:(1)2}", [[0, 2], [1, 3]], "mesh_axes"),
        ("mesh['x'=8] {'x':(4)2,'x':(1)2}", [[0, 4, 1, 5], [2, 6, 3, 7]], "mesh_axes"),
    ],
)
def test_parse_every_encoding(text, groups, encoding):
    device_list = C.parse(text)
    assert device_list.encoding == encoding
    assert device_list.replica_groups == groups
    assert device_list.num_replica_groups == len(groups)
    assert device_list.num_devices_per_group == (len(groups[0]) if groups else 0)


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        "{{1,2},{3,0}}",
        "{{0},{1,3},{2}}",
        "[2,10]<=[20]",
        "[3,10]<=[6,5]T(1,0)",
        "[4,8]<=[4,8]T(1,0)",
        "mesh['a'=2,'b'=4] {'a'}",
        "mesh['x'=2,'y'=2], device_ids=(0,2,3,1) {'y'}",
        "mesh['axis_0'=2,'axis_1'=4], device_ids=([2,2,2]T(1,0,2)) {'axis_1':(2)2}",
    ],
)
def test_prints_back_identically(text):
    assert str(C.parse(text)) == text


def test_equality_and_hash_across_encodings():
    explicit = C([[0, 4], [1, 5], [2, 6], [3, 7]])
    iota = C(mt.IotaReplicaGroupList(4, 2, [2, 4], [1, 0]))
    mesh = C.parse("mesh['data'=2,'model'=4] {'data'}")
    assert explicit == iota == mesh
    assert len({explicit, iota, mesh}) == 1
    assert explicit != C([[0, 4], [1, 5], [2, 6], [7, 3]])
    assert C([[0, 1]]) == [[0, 1]]


def test_expansion_is_lazy_and_cached():
    device_list = C.parse("[4096,4096]<=[4096,4096]T(1,0)")
    assert device_list._expanded_once is None
    assert device_list.num_replica_groups == 4096
    assert device_list._expanded_once is None
    first = device_list.flattened_replica_groups()
    assert device_list.flattened_replica_groups() is first
    assert not first.flags.writeable


@pytest.mark.parametrize(
    ("groups", "compact"),
    [
        ([[0, 4], [1, 5], [2, 6], [3, 7]], "[4,2]<=[2,4]T(1,0)"),
        ([[0, 1, 2, 3], [4, 5, 6, 7]], "[2,4]<=[8]"),
        ([[0, 2, 4, 6], [1, 3, 5, 7]], "[2,4]<=[4,2]T(1,0)"),
        ([[0, 2], [1, 3], [4, 6], [5, 7]], "[4,2]<=[2,2,2]T(0,2,1)"),
        ([[0]], "[1,1]<=[1]"),
    ],
)
def test_compact_finds_xla_canonical_iota(groups, compact):
    result = C(groups).compact()
    assert result.encoding == "iota"
    assert str(result) == compact
    assert result.replica_groups == groups


@pytest.mark.parametrize(
    "groups",
    [[[1, 0]], [[0, 1], [3, 2]], [[0], [1, 2]], [], [[0, 2, 1, 3, 5, 4]], [[0, 1], [2, 4]]],
)
def test_compact_leaves_non_iota_lists_unchanged(groups):
    device_list = C(groups)
    assert device_list.compact() is device_list


def test_mesh_axes_compact_through_device_order():
    assert str(C.parse("mesh['a'=2,'b'=4] {'a'}").compact()) == "[4,2]<=[2,4]T(1,0)"
    shuffled = C.parse("mesh['x'=2,'y'=2], device_ids=(0,2,3,1) {'y'}")
    assert shuffled.compact() is shuffled


def test_group_of_explicit_and_missing():
    group, rank = C([[3, 1], [0, 2]]).group_of(np.array([0, 1, 2, 3, 7]))
    assert group.tolist() == [1, 0, 1, 0, -1]
    assert rank.tolist() == [0, 1, 1, 0, -1]


def test_ragged_groups_have_no_array():
    ragged = C([[0], [1, 2]])
    assert not ragged.is_uniform
    with pytest.raises(mt.InvalidArgumentError, match=r"have different sizes \[1, 2\]"):
        ragged.to_array()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{{0,1},}", "1:8: expected '{' to start a replica group but found '}' in replica groups"),
        ("{0,1}", "1:2: expected '{' to start a replica group but found '0,1}' in replica groups"),
        ("{{0,1}", "1:7: expected ',' but found the end of the text in replica groups"),
        ("{{0,,1}}", "1:5: expected an integer but found ',1}}' in replica groups"),
        (
            "{{99999999999999999999}}",
            "1:3: integer 99999999999999999999 does not fit in int64 in replica groups",
        ),
        ("[2,4]<=[8]T(0)", "1:11: unexpected 'T(0)' after the end in replica groups"),
        ("[8]<=[8]", "1:1: expected 2 tile dims but found 1 ([8]) in replica groups"),
        ("[2,2,2]<=[8]", "1:1: expected 2 tile dims but found 3 ([2, 2, 2]) in replica groups"),
        (
            "mesh['x'=2] {'z'}",
            "1:13: collective axis 'z' is not an axis of the mesh ['x'=2] in replica groups",
        ),
        ("mesh['x'=0] {'x'}", "1:10: expected an integer >= 1 but found 0 in replica groups"),
        (
            "mesh['x'=2,'x'=2] {'x'}",
            "1:1: mesh has duplicate axis names: ['x', 'x'] in replica groups",
        ),
        (
            "mesh['x'=2], device_ids=(0,0) {'x'}",
            "1:26: mesh device ids must be distinct in replica groups",
        ),
        (
            "mesh['x'=4] {'x':(2)4}",
            "1:13: sub-axis x:(2)4 does not fit axis 'x' of size 4: its size must be smaller than 4 and 2*4 must divide 4 in replica groups",
        ),
        (
            "garbage",
            "1:1: expected '{', '[' or 'mesh' to start replica groups but found 'garbage' in replica groups",
        ),
    ],
)
def test_bad_text_names_the_position(text, message):
    with pytest.raises(mt.HloParseError) as caught:
        C.parse(text)
    assert str(caught.value) == message


def test_integers_of_any_length_are_refused_cleanly():
    with pytest.raises(mt.HloParseError) as caught:
        C.parse("{{0," + "1" * 5000 + "}}")
    assert str(caught.value) == (
        "1:5: integer 11111111111111111111... (5000 digits) does not fit in int64 in replica groups"
    )
    assert C.parse("{{-9223372036854775808,9223372036854775807}}").replica_groups == [
        [-(2**63), 2**63 - 1]
    ]


def test_positions_offset_into_a_larger_file():
    with pytest.raises(mt.HloParseError) as caught:
        C.parse("{{0,1},}", line=12, column=40)
    assert (caught.value.line, caught.value.column) == (12, 47)


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        (
            "{{0}}",
            "replica groups must be a list of int lists, got '{{0}}'; use CollectiveDeviceList.parse for text",
        ),
        ([[0, 1.5]], "replica group [0, 1.5] must hold ints, got 1.5"),
        ([3], "each replica group must be a list of ints, got 3"),
    ],
)
def test_bad_python_groups(groups, message):
    with pytest.raises(mt.InvalidArgumentError) as caught:
        C(groups)
    assert str(caught.value) == message


def test_explicit_lists_are_limited_before_allocation():
    with (
        mt.device_limit(4),
        pytest.raises(mt.LimitError, match="the replica groups has 6 elements"),
    ):
        C.parse("{{0,1,2},{3,4,5}}")


FORMS = [
    pytest.param(lambda: mt.CollectiveDeviceList([[0, 4], [1, 5], [2, 6], [3, 7]]), id="lists"),
    pytest.param(lambda: mt.CollectiveDeviceList(np.array([[0, 4], [1, 5], [2, 6], [3, 7]])),
                 id="array"),
    pytest.param(lambda: mt.CollectiveDeviceList.parse("[4,2]<=[2,4]T(1,0)"), id="iota"),
    pytest.param(lambda: mt.CollectiveDeviceList.parse("mesh['data'=2,'model'=4] {'data'}"),
                 id="mesh_axes"),
    pytest.param(lambda: mt.hlo.parse_module(
        "HloModule m, replica_count=8\n%add (x: f32[], y: f32[]) -> f32[] {\n"
        "  %x = f32[] parameter(0)\n  %y = f32[] parameter(1)\n  ROOT %s = f32[] add(%x, %y)\n}\n"
        "ENTRY %main (p: f32[8]) -> f32[8] {\n  %p = f32[8]{0} parameter(0)\n"
        "  ROOT %ar = f32[8]{0} all-reduce(%p), replica_groups={{0,4},{1,5},{2,6},{3,7}}, "
        "to_apply=%add\n}\n").collectives[0].replica_groups, id="written"),
]


@pytest.mark.parametrize("make", FORMS)
def test_a_device_list_is_frozen_in_every_form(make):
    groups = make()
    with pytest.raises(AttributeError, match="CollectiveDeviceList is immutable; cannot set iota"):
        groups.iota = None
    with pytest.raises(AttributeError, match="CollectiveDeviceList is immutable; cannot set x"):
        groups.x = 1
    with pytest.raises(ValueError, match="read-only"):
        groups.flattened_replica_groups()[0] = 9
    with pytest.raises(ValueError, match="read-only"):
        groups.group_sizes[0] = 9
    assert groups.replica_groups == [[0, 4], [1, 5], [2, 6], [3, 7]]


@pytest.mark.parametrize("make", FORMS)
def test_every_form_of_the_same_groups_is_equal_with_one_hash(make):
    groups, other = make(), mt.CollectiveDeviceList([[0, 4], [1, 5], [2, 6], [3, 7]])
    before = hash(make())  # hashed before anything was expanded
    assert groups == other and hash(groups) == hash(other) == before
    assert len({groups, other, make()}) == 1
    assert groups != mt.CollectiveDeviceList([[0, 1], [2, 3], [4, 5], [6, 7]])


def test_a_device_list_keeps_no_caller_array_it_could_be_changed_through():
    ids = np.array([[0, 1], [2, 3]])
    flat, sizes = np.arange(4), np.array([2, 2])
    from_array = mt.CollectiveDeviceList(ids)
    from_flat = mt.CollectiveDeviceList.from_flat(flat, sizes)
    ids[0, 0] = flat[0] = 9
    assert from_array.replica_groups == from_flat.replica_groups == [[0, 1], [2, 3]]
    assert flat.flags.writeable and ids.flags.writeable
