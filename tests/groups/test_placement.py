"""Device assignments and participating device groups in XLA's exact order (spec 3-4, 8.1)."""

import warnings

import pytest

import meshtopo as mt

M = mt.CollectiveOpGroupMode


def test_default_placement_is_column_major():
    da = mt.DeviceAssignment.default(replica_count=4, computation_count=2)
    assert da.array.tolist() == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert (
        str(da)
        == "DeviceAssignment{replica_count=4, computation_count=2, Computation0{0 1 2 3} Computation1{4 5 6 7}}"
    )
    assert mt.DeviceAssignment.row_major(2, 2).array.tolist() == [[0, 1], [2, 3]]
    assert da.logical_id(5) == (1, 1)
    assert da.is_default()


def test_seed_flattened_id_group_resolves_to_shuffled_devices():
    da = mt.DeviceAssignment.default(2, 2)
    assert mt.participating_device_groups([[0, 1]], mode=M.FLATTENED_ID, device_assignment=da) == [[0, 2]]
    assert mt.participating_device_groups([[0, 1, 2, 3]], mode=M.FLATTENED_ID, device_assignment=da) == [[0, 2, 1, 3]]


@pytest.mark.parametrize(
    ("mode", "groups", "replicas", "partitions", "expected"),
    [
        (M.CROSS_REPLICA, [], 2, 4, [[0, 1], [2, 3], [4, 5], [6, 7]]),
        (M.CROSS_REPLICA, [[0], [1, 2]], 3, 2, [[0], [3], [1, 2], [4, 5]]),
        (M.CROSS_PARTITION, [[0, 1]], 2, 2, [[0, 2], [1, 3]]),
        (M.CROSS_PARTITION, [], 2, 2, [[0, 2], [1, 3]]),
        (M.CROSS_REPLICA_AND_PARTITION, [[1, 0]], 2, 2, [[1, 3, 0, 2]]),
        (M.CROSS_REPLICA_AND_PARTITION, [], 2, 2, [[0, 2, 1, 3]]),
        (M.FLATTENED_ID, [[0, 3], [1, 2]], 2, 2, [[0, 3], [2, 1]]),
        (M.CROSS_REPLICA, [[0, 1], [2, 3]], 4, 1, [[0, 1], [2, 3]]),
    ],
)
def test_participating_device_groups(mode, groups, replicas, partitions, expected):
    da = mt.DeviceAssignment.default(replicas, partitions)
    assert mt.participating_device_groups(groups, mode=mode, device_assignment=da) == expected


def test_custom_assignment_and_array_form():
    da = mt.DeviceAssignment([[7, 5], [6, 4]])
    assert mt.participating_device_groups("{{0,1}}", mode=M.CROSS_REPLICA, device_assignment=da) == [[7, 6], [5, 4]]
    assert mt.participating_device_groups_array("[1,4]<=[4]", mode=M.FLATTENED_ID, device_assignment=da).tolist() == [
        [7, 5, 6, 4]
    ]
    with pytest.raises(mt.InvalidArgumentError, match="different sizes"):
        mt.participating_device_groups_array([[0], [1, 2, 3]], mode=M.FLATTENED_ID, device_assignment=da)


def test_participating_devices_one_device():
    da = mt.DeviceAssignment.default(2, 2)
    assert mt.participating_devices(2, [[0, 1]], mode=M.FLATTENED_ID, device_assignment=da) == [0, 2]
    assert mt.participating_devices(1, [[1, 0]], mode=M.CROSS_REPLICA_AND_PARTITION, device_assignment=da) == [1, 3, 0, 2]
    assert mt.participating_devices(3, [], mode=M.CROSS_PARTITION, device_assignment=da) == [1, 3]


def test_participating_ids_errors_carry_xla_suffix():
    with pytest.raises(mt.InternalError) as caught:
        mt.participating_ids(M.CROSS_REPLICA, 4, 5, [[0, 1], [2, 3]])
    assert str(caught.value) == (
        "Replica ID 4 doesn't appear in replica groups; group_mode=kCrossReplica; groups_size=2; groups= [0, 1], [2, 3]"
    )
    with pytest.raises(mt.InternalError, match="Replica ID 1 appears twice in replica groups"):
        mt.participating_ids(M.CROSS_REPLICA, 1, 5, [[0, 1], [1, 3]])
    assert mt.participating_ids(M.CROSS_REPLICA, 1, 3, []) == [0, 1, 2]


def test_flattened_id_mode_refuses_empty_groups():
    with pytest.raises(mt.InternalError) as caught:
        mt.participating_device_groups([], mode=M.FLATTENED_ID, device_assignment=mt.DeviceAssignment.default(2, 2))
    assert str(caught.value) == "replica groups cannot be empty for kFlattenedID mode"


def test_flattened_id_groups_spec_example():
    assert mt.flattened_id_groups([[0], [1, 2]], M.CROSS_REPLICA, 3, 2).replica_groups == [
        [0],
        [1],
        [2, 4],
        [3, 5],
    ]
    iota = mt.CollectiveDeviceList.parse("[2,2]<=[4]")
    assert mt.flattened_id_groups(iota, M.FLATTENED_ID, 2, 2) is iota
    assert mt.flattened_id_groups([], M.FLATTENED_ID, 2, 2).replica_groups == []
    assert mt.flattened_id_groups([[0, 1]], M.CROSS_REPLICA_AND_PARTITION, 2, 2).replica_groups == [
        [0, 1, 2, 3]
    ]
    assert mt.flattened_id_groups([[1, 0]], M.CROSS_PARTITION, 2, 2).replica_groups == [
        [1, 0],
        [3, 2],
    ]


def test_counts_and_sizes():
    assert mt.participant_counts(3, 4, [[0, 1], [2]], M.CROSS_REPLICA) == [2, 2, 2, 2, 1, 1, 1, 1]
    assert mt.participant_counts(3, 4, [[0, 1], [2]], M.CROSS_PARTITION) == [2, 1]
    assert mt.participant_counts(3, 4, [[0, 1], [2, 3]], M.CROSS_REPLICA_AND_PARTITION) == [8, 8]
    assert mt.replica_group_count_and_size(
        [[0, 1], [2, 3]], M.CROSS_REPLICA_AND_PARTITION, 3, 4
    ) == (2, 8)
    assert mt.replica_group_count_and_size([[0, 1], [2]], M.CROSS_REPLICA, 3, 1) is None
    assert mt.replica_group_count_and_size("[2,4]<=[8]", M.CROSS_REPLICA_AND_PARTITION, 8, 2) == (
        2,
        4,
    )
    assert mt.subgroup_size([], M.CROSS_REPLICA_AND_PARTITION, 3, 4) == 12
    assert mt.subgroup_size([], M.CROSS_PARTITION, 3, 4) == 4


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ([[0, 1], [1, 2]], "device 1 appears more than once in the device assignment"),
        ([[0, -1]], "device assignment ids must be non-negative, got -1"),
        ([0, 1], "a device assignment must be a 2-D int table [replica][computation], got [0, 1]"),
        ([[]], "a device assignment needs replica_count > 0 and computation_count > 0, got 1 x 0"),
    ],
)
def test_bad_device_assignments(table, message):
    with pytest.raises(mt.InvalidArgumentError) as caught:
        mt.DeviceAssignment(table)
    assert str(caught.value) == message


def test_unknown_device_and_out_of_range_ids():
    da = mt.DeviceAssignment.default(2, 2)
    with pytest.raises(mt.InternalError, match="Device 9 doesn't appear in DeviceAssignment"):
        da.logical_id(9)
    with pytest.raises(
        mt.InvalidArgumentError, match="replica group id 2 is out of range in kCrossReplica mode"
    ):
        mt.participating_device_groups([[0, 2]], mode=M.CROSS_REPLICA, device_assignment=da)
    with pytest.raises(mt.InvalidArgumentError, match="there are 4 flattened ids"):
        mt.participating_device_groups([[0, 4]], mode=M.FLATTENED_ID, device_assignment=da)
    with pytest.raises(mt.InvalidArgumentError, match=r"there is 1 partition \(ids 0\.\.0\)"):
        mt.participating_device_groups([[0, 1]], mode=M.CROSS_PARTITION,
                                       device_assignment=mt.DeviceAssignment.default(2, 1))


KEYWORD_ONLY = [
    pytest.param(mt.participating_device_groups, ([[0, 1]],), [[0, 1], [2, 3]],
                 id="participating_device_groups"),
    pytest.param(mt.participating_device_groups_array, ([[0, 1]],), [[0, 1], [2, 3]],
                 id="participating_device_groups_array"),
    pytest.param(mt.participating_devices, (2, [[0, 1]]), [2, 3], id="participating_devices"),
    pytest.param(mt.participating_device_pairs, ([(0, 1)],), [(0, 1), (2, 3)],
                 id="participating_device_pairs"),
]


@pytest.mark.parametrize(("function", "leading", "expected"), KEYWORD_ONLY)
def test_mode_and_device_assignment_are_keyword_only(function, leading, expected):
    da = mt.DeviceAssignment.default(2, 2)  # replica r, partition p is device r + 2p
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = function(*leading, mode=M.CROSS_REPLICA, device_assignment=da)
    assert (found.tolist() if hasattr(found, "tolist") else found) == expected


@pytest.mark.parametrize(("function", "leading", "expected"), KEYWORD_ONLY)
def test_positional_mode_and_device_assignment_still_work_with_a_warning(
        function, leading, expected):
    da = mt.DeviceAssignment.default(2, 2)
    message = (f"{function.__name__}: pass mode=, device_assignment= by keyword; passing them "
               "by position is deprecated and stops working in the next release")
    with pytest.warns(DeprecationWarning) as caught:
        found = function(*leading, M.CROSS_REPLICA, da)
    assert [str(w.message) for w in caught] == [message]
    assert (found.tolist() if hasattr(found, "tolist") else found) == expected
