"""IotaTileAssignment and IotaReplicaGroupList against XLA's worked examples (spec section 2)."""

import math

import numpy as np
import pytest

import meshtopo as mt
from meshtopo.groups._iota import canonicalize, find_iota


@pytest.mark.parametrize(
    ("reshape", "perm", "canonical"),
    [
        ([3, 4, 5], [0, 1, 2], "[60]"),
        ([3, 4, 5], [1, 2, 0], "[3,20]T(1,0)"),
        ([3, 4, 5], [2, 0, 1], "[12,5]T(1,0)"),
        ([3, 4, 5], [2, 1, 0], "[3,4,5]T(2,1,0)"),
        ([3, 4, 5], [1, 0, 2], "[3,4,5]T(1,0,2)"),
        ([1, 3, 1, 4, 1, 5], [4, 3, 2, 5, 1, 0], "[3,20]T(1,0)"),
        ([2, 4, 4], [1, 2, 0], "[2,16]T(1,0)"),
        ([3, 4], [0, 1], "[12]"),
        ([2, 2, 5, 5], [0, 1, 3, 2], "[4,5,5]T(0,2,1)"),
        ([1, 1], [1, 0], "[1]"),
        ([5], [0], "[5]"),
    ],
    ids=lambda value: str(value),
)
def test_canonical_forms(reshape, perm, canonical):
    tile = mt.IotaTileAssignment([math.prod(reshape)], reshape_dims=reshape, transpose_perm=perm)
    assert tile.array_to_string() == canonical


def test_tile_dims_are_kept_verbatim():
    tile = mt.IotaTileAssignment([1, 6, 1], reshape_dims=[2, 3], transpose_perm=[1, 0])
    assert str(tile) == "[1,6,1]<=[2,3]T(1,0)"
    assert mt.IotaTileAssignment([2, 3]).reshape_dims == (6,)


@pytest.mark.parametrize(("index", "value"), [([0, 1], 3), ([1, 0], 1), ([2, 1], 5)])
def test_value_at_spec_example(index, value):
    assert mt.IotaTileAssignment.parse("[3,2]<=[2,3]T(1,0)").value_at(index) == value


def test_seed_value_at_walkthrough():
    tile = mt.IotaTileAssignment([4, 2], reshape_dims=[2, 4], transpose_perm=[1, 0])
    assert tile.value_at([1, 0]) == 1
    assert tile.value_at([1, 1]) == 5
    assert tile.to_array().tolist() == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert str(tile) == "[4,2]<=[2,4]T(1,0)"


@pytest.mark.parametrize(
    ("source", "perm", "expected"),
    [
        ("[4,5,24]<=[15,4,8]T(1,0,2)", (0, 2, 1), "[4,24,5]<=[5,3,4,8]T(2,1,3,0)"),
        (
            "[1,32,82,128]<=[1312,32,8]T(1,0,2)",
            (0, 1, 3, 2),
            "[1,32,128,82]<=[82,16,32,8]T(2,1,3,0)",
        ),
        ("[4,4,2]<=[32]", (2, 0, 1), "[2,4,4]<=[16,2]T(1,0)"),
        ("[8,2,16]<=[16,16]T(1,0)", (0, 2, 1), "[8,16,2]<=[16,8,2]T(1,0,2)"),
        ("[14,3,5]<=[6,5,7]T(2,0,1)", (1, 0, 2), "[3,14,5]<=[2,3,5,7]T(1,3,0,2)"),
        ("[2,3]<=[6]", (0, 1), "[2,3]<=[6]"),
        ("[1,6]<=[6]", (1, 0), "[6,1]<=[6]"),
    ],
)
def test_transpose_representation(source, perm, expected):
    tile = mt.IotaTileAssignment.parse(source)
    transposed = tile.transpose(perm)
    assert isinstance(transposed, mt.IotaTileAssignment)
    assert str(transposed) == expected
    np.testing.assert_array_equal(transposed.to_array(), tile.to_array().transpose(perm))


def test_transpose_without_an_iota_is_none_like_xla():
    # XLA's IotaTileAssignment::Transpose gives nullopt here; TileAssignment falls back to
    # the explicit array.
    tile = mt.IotaTileAssignment.parse("[2,3]<=[2,3]T(1,0)")
    assert tile.transpose((1, 0)) is None
    assert tile.to_array().transpose(1, 0).tolist() == [[0, 4], [3, 2], [1, 5]]


@pytest.mark.parametrize(
    ("groups", "text", "expanded"),
    [
        ((2, 10), "[2,10]<=[20]", [list(range(10)), list(range(10, 20))]),
        ((2, 4, [4, 2], [1, 0]), "[2,4]<=[4,2]T(1,0)", [[0, 2, 4, 6], [1, 3, 5, 7]]),
        (
            (3, 10, [6, 5], [1, 0]),
            "[3,10]<=[6,5]T(1,0)",
            [
                [0, 5, 10, 15, 20, 25, 1, 6, 11, 16],
                [21, 26, 2, 7, 12, 17, 22, 27, 3, 8],
                [13, 18, 23, 28, 4, 9, 14, 19, 24, 29],
            ],
        ),
        ((0, 0), "[0,0]<=[0]", []),
    ],
)
def test_iota_replica_group_list(groups, text, expanded):
    iota = mt.IotaReplicaGroupList(*groups)
    assert str(iota) == text
    assert iota.to_array().reshape(-1).tolist() == [i for g in expanded for i in g]
    assert mt.IotaReplicaGroupList.parse(text) == iota


def test_full_text_of_iota_list():
    iota = mt.IotaReplicaGroupList(2, 10, [4, 5], [1, 0])
    assert mt.CollectiveDeviceList(iota).to_text(full=True) == (
        "{{0,5,10,15,1,6,11,16,2,7},{12,17,3,8,13,18,4,9,14,19}}"
    )


def test_group_of_without_expanding():
    iota = mt.IotaReplicaGroupList(4, 2, [2, 4], [1, 0])
    group, rank = iota.group_of(np.array([0, 4, 5, 7]))
    assert group.tolist() == [0, 0, 1, 3]
    assert rank.tolist() == [0, 1, 1, 1]
    big = mt.IotaReplicaGroupList(2**12, 2**12, [2**12, 2**12], [1, 0])
    group, rank = big.group_of(np.array([2**12 + 3]))
    assert (group.tolist(), rank.tolist()) == ([3], [1])


def test_find_iota_examples():
    assert find_iota(np.array([0, 4, 1, 5, 2, 6, 3, 7])) == ((2, 4), (1, 0))
    assert find_iota(np.arange(12)) == ((12,), (0,))
    assert find_iota(np.array([1, 0])) is None
    assert find_iota(np.array([0, 2, 1, 3, 5, 4])) is None
    assert find_iota(np.array([0, 1, 2, 4])) is None
    assert canonicalize([2, 1, 3], [2, 1, 0]) == ((2, 3), (1, 0))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[4,2]<=[2,4]",
            "1:13: expected 'T(' to start the iota transpose perm in iota tile assignment",
        ),
        (
            "[4,2]<=[2,4]T(1,1)",
            "1:8: transpose perm [1, 1] is not a permutation of 0..1 in iota tile assignment",
        ),
        (
            "[4,2]<=[2,4]T(2,0)",
            "1:14: out of range iota transpose perm value 2 in iota tile assignment",
        ),
        (
            "[4,2]<=[2,4,2]T(0,1,2)",
            "1:8: reshape dims [2, 4, 2] hold 16 elements but the tile [4, 2] holds 8 in iota tile assignment",
        ),
        ("[4,-2]<=[8]", "1:4: expected an integer >= 0 but found -2 in iota tile assignment"),
        ("[4,2]<=[]", "1:8: reshape dims must not be empty in iota tile assignment"),
        ("[4,2]<=[8] x", "1:12: unexpected 'x' after the end in iota tile assignment"),
        ("[4,2", "1:5: expected ',' but found the end of the text in iota tile assignment"),
    ],
)
def test_bad_iota_text(text, message):
    with pytest.raises(mt.HloParseError) as caught:
        mt.IotaTileAssignment.parse(text)
    assert str(caught.value) == message
    assert caught.value.line == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ([4, 2], [2, 4], [0]),
            "transpose perm [0] has 1 entries but must have 2 (one per reshape dim)",
        ),
        (([4, 2], [2, 4], [0, 0]), "transpose perm [0, 0] is not a permutation of 0..1"),
        (([-1, 2], None, None), "tile dims [-1, 2] must not be negative"),
        (
            ([2, 2], [2, 3], [0, 1]),
            "reshape dims [2, 3] hold 6 elements but the tile [2, 2] holds 4",
        ),
        (([2, "a"], None, None), "tile dims must be a sequence of ints, got [2, 'a']"),
    ],
)
def test_bad_iota_arguments(args, message):
    with pytest.raises(mt.InvalidArgumentError) as caught:
        mt.IotaTileAssignment(*args)
    assert str(caught.value) == message


def test_sizes_are_checked_before_allocation():
    with pytest.raises(mt.LimitError, match="more than the device limit of 67108864"):
        mt.CollectiveDeviceList.parse("[1000000000,1000000000]<=[1000000000000000000]")
    with (
        mt.device_limit(8),
        pytest.raises(mt.LimitError, match="the tile \\[4, 4\\] has 16 elements"),
    ):
        mt.IotaTileAssignment([4, 4])
    assert mt.get_device_limit() == mt.DEFAULT_DEVICE_LIMIT


def test_value_at_rejects_out_of_range_index():
    with pytest.raises(mt.InvalidArgumentError, match="outside the tile dims"):
        mt.IotaTileAssignment([2, 2]).value_at([2, 0])


def test_immutable():
    tile = mt.IotaTileAssignment([2, 2])
    with pytest.raises(AttributeError):
        tile._dims = (4,)
