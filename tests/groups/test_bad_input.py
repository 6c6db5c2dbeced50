"""Odd values at every public entry point raise meshtopo's errors, never Python's."""

import numpy as np
import pytest

import meshtopo as mt

M = mt.CollectiveOpGroupMode
DA = mt.DeviceAssignment.default(2, 2)


@pytest.mark.parametrize("spelling", ["kCrossReplica", "cross_replica", "CROSS_REPLICA"])
def test_modes_by_name_give_the_same_groups(spelling):
    assert mt.participating_device_groups([[0, 1]], mode=spelling, device_assignment=DA) == [[0, 1], [2, 3]]
    assert mt.flattened_id_groups([[0, 1]], spelling, 2, 2).replica_groups == [[0, 2], [1, 3]]
    assert mt.participating_devices(2, [[0, 1]], mode=spelling, device_assignment=DA) == [2, 3]


def test_device_assignment_may_be_a_table():
    assert mt.participating_device_groups([[0, 1]], mode=M.FLATTENED_ID, device_assignment=[[0, 2], [1, 3]]) == [[0, 2]]


def test_size_estimate_follows_the_mode():
    da = mt.DeviceAssignment.default(1, 16384)
    groups = mt.participating_device_groups_array("[1,16384]<=[16384]", mode=M.FLATTENED_ID, device_assignment=da)
    assert groups.shape == (1, 16384)
    assert mt.expansion_factor(M.CROSS_REPLICA, 3, 4) == 4
    assert mt.expansion_factor(M.CROSS_PARTITION, 3, 4) == 3
    assert mt.expansion_factor("kCrossReplicaAndPartition", 3, 4) == 4
    assert mt.expansion_factor(M.FLATTENED_ID, 3, 4) == 1


def test_many_small_groups_build_in_linear_time():
    groups = [[i] for i in range(200_000)]
    assert mt.CollectiveDeviceList(groups).num_replica_groups == 200_000


def test_long_permute_chains_are_walked_once():
    chain = [(i, i + 1) for i in range(100_000)]
    assert mt.has_cycles(chain) is False
    assert mt.has_cycles([*chain, (100_000, 0)]) is True


def test_empty_list_array_and_fresh_groups():
    assert mt.CollectiveDeviceList([]).to_array().shape == (0, 0)
    device_list = mt.CollectiveDeviceList([[0, 1]])
    device_list.replica_groups[0][0] = 9
    assert str(device_list) == "{{0,1}}"
    assert device_list.replica_groups == [[0, 1]]


def test_axes_for_empty_groups():
    assert mt.Mesh({"data": 2}).axes_for(mt.CollectiveDeviceList.parse("{{}}")) is None


@pytest.mark.parametrize("text", ["{{٠,١}}", "[２,1]<=[2]", "mesh['x'=٢] {'x'}"])
def test_only_ascii_digits_are_numbers(text):
    with pytest.raises(mt.HloParseError):
        mt.CollectiveDeviceList.parse(text)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: mt.participating_device_groups([[0, 1]], mode=None, device_assignment=DA),
            mt.InvalidArgumentError,
            "mode must be a CollectiveOpGroupMode or its name, got None",
        ),
        (
            lambda: mt.participating_device_groups([[0, 1]], mode="sideways", device_assignment=DA),
            mt.InvalidArgumentError,
            "Invalid collective op group mode: sideways",
        ),
        (
            lambda: mt.participating_device_groups([[0, 1]], mode=M.CROSS_REPLICA, device_assignment=None),
            mt.InvalidArgumentError,
            "a device assignment must be a 2-D int table [replica][computation], got None",
        ),
        (
            lambda: mt.participating_ids(M.CROSS_REPLICA, 0, 2**40, []),
            mt.LimitError,
            "the participating ids has 1099511627776 elements",
        ),
        (
            lambda: mt.participating_ids(M.CROSS_REPLICA, 0, -5, []),
            mt.InvalidArgumentError,
            "total_count must be a non-negative int, got -5",
        ),
        (
            lambda: mt.participant_counts(2**40, 2**40, [[0]], M.CROSS_REPLICA),
            mt.LimitError,
            "the participant counts has 1099511627776 elements",
        ),
        (
            lambda: mt.CollectiveDeviceList([[2**63]]),
            mt.InvalidArgumentError,
            "replica group ids must fit in int64",
        ),
        (
            lambda: mt.DeviceAssignment([[0, 1], [2]]),
            mt.InvalidArgumentError,
            "a device assignment must be a 2-D int table",
        ),
        (
            lambda: mt.participating_devices(0.5, [[0, 1]], mode=M.FLATTENED_ID, device_assignment=DA),
            mt.InvalidArgumentError,
            "device_id must be an int, got 0.5",
        ),
        (
            lambda: mt.SubAxis("a", "x", 2),
            mt.InvalidArgumentError,
            "a sub-axis needs a name and int pre_size",
        ),
        (lambda: mt.Mesh(None), mt.InvalidArgumentError, "mesh axes must be a mapping"),
        (
            lambda: mt.CollectiveDeviceList.parse(None),
            mt.InvalidArgumentError,
            "replica groups text must be a string, got None",
        ),
        (
            lambda: mt.IotaTileAssignment.parse(None),
            mt.InvalidArgumentError,
            "iota tile assignment must be given as text, got None",
        ),
        (
            lambda: mt.group_mode_for_opcode(["all-reduce"], True, None),
            mt.InvalidArgumentError,
            "opcode must be a string like 'all-reduce'",
        ),
        (
            lambda: mt.group_mode("yes", "no"),
            mt.InvalidArgumentError,
            "has_channel_id must be a bool, got 'yes'",
        ),
        (
            lambda: mt.has_cycles(None),
            mt.InvalidArgumentError,
            "source_target_pairs must be a list of pairs",
        ),
        (
            lambda: mt.pair_problems([(0, 1)], None),
            mt.InvalidArgumentError,
            "limit must be a positive int, got None",
        ),
        (
            lambda: mt.participating_device_pairs([(0, 2**70)], mode=M.CROSS_REPLICA, device_assignment=DA),
            mt.InvalidArgumentError,
            "source-target ids must fit in int64",
        ),
    ],
)
def test_bad_values_raise_meshtopo_errors(call, error, message):
    with pytest.raises(error) as caught:
        call()
    assert str(caught.value).startswith(message)


def test_numpy_integers_are_ints():
    mt.set_device_limit(np.int64(2**26))
    assert mt.get_device_limit() == 2**26
    assert mt.group_mode(np.bool_(True), None) is M.CROSS_PARTITION
