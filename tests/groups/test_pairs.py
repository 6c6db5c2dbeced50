"""Collective-permute pairs: XLA's checks and messages, device pairs, cycle shapes (spec 5.4, 9)."""

import pytest

import meshtopo as mt

M = mt.CollectiveOpGroupMode


def test_device_pairs_per_mode():
    da = mt.DeviceAssignment.default(2, 2)
    assert mt.participating_device_pairs([(0, 1)], mode=M.CROSS_REPLICA, device_assignment=da) == [(0, 1), (2, 3)]
    assert mt.participating_device_pairs([(0, 1)], mode=M.CROSS_PARTITION, device_assignment=da) == [(0, 2), (1, 3)]
    with pytest.raises(
        mt.InvalidArgumentError, match="source-target id 2 is out of range: there are 2 partitions"
    ):
        mt.participating_device_pairs([(0, 2)], mode=M.CROSS_PARTITION, device_assignment=da)
    with pytest.raises(
        mt.InvalidArgumentError, match=r"source-target id 1 is out of range: there is 1 replica$"
    ):
        mt.participating_device_pairs([(0, 1)], mode=M.CROSS_REPLICA, device_assignment=mt.DeviceAssignment.default(1, 2))


@pytest.mark.parametrize(
    ("pairs", "limit", "occurrences", "problems"),
    [
        ([(0, 1), (1, 2)], 3, 1, []),
        (
            [(0, 1), (0, 2)],
            1,
            1,
            ["Source 0 appears more than once in instruction's source-target pairs: cp"],
        ),
        (
            [(0, 1), (2, 1)],
            3,
            1,
            ["Target 1 appears more than once in instruction's source-target pairs: cp"],
        ),
        ([(-1, 1)], 3, 1, ["Source -1 in the instruction's source-target pair must be >= 0 : cp"]),
        ([(0, 3)], 3, 1, ["Target 3 in the instruction's source-target pair must be < 3 : cp"]),
        ([(0, 7)], 1, 1, []),
        (
            [(0, 1), (0, 1), (0, 1)],
            2,
            2,
            [
                "Source 0 appears more than 2 times in instruction's source-target pairs: cp",
                "Target 1 appears more than 2 times in instruction's source-target pairs: cp",
            ],
        ),
    ],
)
def test_pair_problems(pairs, limit, occurrences, problems):
    assert mt.pair_problems(pairs, limit, occurrences, instruction="cp") == problems


@pytest.mark.parametrize(
    ("pairs", "cycles", "kind"),
    [
        ([(0, 1), (1, 2), (2, 3), (3, 0)], True, "forward"),
        ([(0, 3), (1, 0), (2, 1), (3, 2)], True, "backward"),
        ([(0, 1), (1, 0)], True, "forward"),
        ([(3, 0), (0, 1), (1, 2), (2, 3)], True, "none"),
        ([(0, 1), (1, 2)], False, "none"),
        ([(0, 0)], True, "none"),
    ],
)
def test_cycles(pairs, cycles, kind):
    assert mt.has_cycles(pairs) is cycles
    assert mt.cycle_type(pairs) == kind


def test_split_edges():
    assert mt.split_edges([(0, 3), (1, 0), (2, 1), (3, 2)], "backward") == (
        (0, 3),
        [(1, 0), (2, 1), (3, 2)],
    )
    assert mt.split_edges([(0, 1), (1, 2), (2, 0)], "forward") == ((2, 0), [(0, 1), (1, 2)])


def test_pairs_must_be_pairs():
    with pytest.raises(
        mt.InvalidArgumentError, match="expects 'source_target_pairs=' to be a list of pairs, got"
    ):
        mt.has_cycles([(0, 1, 2)])
