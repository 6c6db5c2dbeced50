"""Group modes, device assignments and mesh-axes groups against XLA, measured by execution.

* Collectives the SPMD partitioner inserts are written as mesh-axes groups
  (``mesh['axis_0'=4,'axis_1'=2], device_ids=([2,4]T(1,0)) {'axis_0'}``); meshtopo must parse
  and resolve them to the devices that really met.
* Reshards from ``P(all axes in some order)`` to a prefix of it are one all-gather, written
  as an iota list (``[2,4]<=[2,2,2]T(1,0,2)``) or, to replicated, as a mesh-axes list with
  ``device_ids``; each device's output lists its group in rank order.
* Programs with ``replica_count > 1`` (compiled from StableHLO through XLA's client, with an
  explicit device assignment) exercise every group mode: cross_replica, cross_partition
  (permutes), cross_replica_and_partition and flattened_id.
* Left to place a program itself, jaxlib's CPU client uses a row-major table, not
  ``ComputationPlacer``'s column-major default (see ``_raw``); measured in a child process.
* The compiled HLO text of the partitioner, reshard and raw programs goes through
  ``mt.hlo.parse_module``: its collectives must be the ones in the text, with the header's
  counts, and ``device_groups`` / ``device_pairs`` through the executable's device assignment
  must give the devices that really met.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import meshtopo as mt

from ._cases import PARTITIONER_CASES, PERM_16, RESHARD_CASES
from ._expect import as_measured, assignment, check_module, mesh_groups, mode_of, written_groups
from ._hlo_text import parse_int_pairs
from ._partitioner import measure_partitioner, measure_reshard
from ._raw import RawMeasurement, measure_raw, measure_raw_in_subprocess

pytestmark = pytest.mark.jax

# --------------------------------------------------------------------------------------------
# Partitioner-inserted collectives: mesh-axes groups
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "shape", "devices", "axes"), PARTITIONER_CASES)
def test_partitioner_groups_equal_measured(
    kind: str, shape: dict[str, int], devices: list[int] | None, axes: tuple[str, ...]
) -> None:
    m = measure_partitioner(kind, shape, axes, device_ids=devices)
    assert as_measured(mesh_groups(m), m.ordered) == m.groups
    (c,) = m.collectives
    assert as_measured(written_groups(c, m.device_assignment), m.ordered) == m.groups


@pytest.mark.parametrize(("shape", "devices", "in_axes", "out_axes"), RESHARD_CASES)
def test_reshard_gather_groups_equal_measured(
    shape: dict[str, int],
    devices: list[int] | None,
    in_axes: tuple[str, ...],
    out_axes: tuple[str, ...],
) -> None:
    m = measure_reshard(shape, in_axes, out_axes, device_ids=devices)
    (c,) = m.collectives
    assert c.opcode == "all-gather"
    assert as_measured(mesh_groups(m), ordered=True) == m.groups
    assert as_measured(written_groups(c, m.device_assignment), ordered=True) == m.groups


@pytest.mark.parametrize(("kind", "shape", "devices", "axes"), PARTITIONER_CASES)
def test_partitioner_module(
    kind: str, shape: dict[str, int], devices: list[int] | None, axes: tuple[str, ...]
) -> None:
    m = measure_partitioner(kind, shape, axes, device_ids=devices)
    check_module(m, "all-reduce" if kind == "sum" else "all-gather", m.groups, m.ordered)


@pytest.mark.parametrize("case", [pytest.param(p.values, id=p.id) for p in RESHARD_CASES])
def test_reshard_module(case: tuple[Any, ...]) -> None:
    """(shape, devices, in_axes, out_axes), as in test_reshard_gather_groups_equal_measured."""
    shape, devices, in_axes, out_axes = case
    m = measure_reshard(shape, in_axes, out_axes, device_ids=devices)
    check_module(m, "all-gather", m.groups, True)


# --------------------------------------------------------------------------------------------
# replica_count > 1: every group mode, explicit device assignments
# --------------------------------------------------------------------------------------------

TABLES: list[tuple[str, Any]] = [
    ("default-2x2", mt.DeviceAssignment.default(2, 2).array),
    ("default-4x2", mt.DeviceAssignment.default(4, 2).array),
    ("default-2x4", mt.DeviceAssignment.default(2, 4).array),
    ("row-major-2x4", mt.DeviceAssignment.row_major(2, 4).array),
    ("permuted-2x4", [[5, 2, 7, 0], [3, 6, 1, 4]]),
    ("permuted-4x2", [[3, 7], [1, 4], [0, 6], [2, 5]]),
    ("high-ids-2x2", [[7, 4], [5, 6]]),
    ("replicas-8x1", [[6], [1], [4], [3], [0], [7], [2], [5]]),
]

TABLES_16: list[tuple[str, Any]] = [
    ("default-4x4", mt.DeviceAssignment.default(4, 4).array),
    ("default-2x8", mt.DeviceAssignment.default(2, 8).array),
    ("default-8x2", mt.DeviceAssignment.default(8, 2).array),
    ("permuted-4x4", np.reshape(PERM_16, (4, 4))),
]

# Groups that cover every id, with non-trivial in-group order, per id count.
COVERING_GROUPS = {
    2: [[[1, 0]], [[0], [1]]],
    4: [[[0, 3], [2, 1]], [[3, 1, 0, 2]]],
    8: [[[0, 5, 2, 7], [1, 4, 3, 6]], [[7, 0], [1, 6], [5, 2], [3, 4]]],
    16: [[PERM_16[i : i + 4] for i in range(0, 16, 4)], [PERM_16[:8], PERM_16[8:]]],
}

# Permutations over n ids: a cycle and a partial one.
PERMUTE_PAIRS = {
    1: [[[0, 0]]],
    2: [[[0, 1], [1, 0]], [[1, 0]]],
    4: [[[0, 1], [1, 3], [3, 2], [2, 0]], [[0, 2], [3, 1]]],
    8: [[[i, (i + 3) % 8] for i in range(8)], [[7, 0], [2, 5]]],
    16: [[[i, (i + 5) % 16] for i in range(16)], [[15, 0], [3, 9]]],
}


def _raw_cases(tables: list[tuple[str, Any]]) -> list[Any]:
    cases = []
    for table_id, table in tables:
        replicas, partitions = np.asarray(table).shape
        modes = [
            ("cross_replica", None, False, replicas),
            ("cross_replica_and_partition", 1, False, replicas),
            ("flattened_id", 1, True, replicas * partitions),
        ]
        for op in ("all_reduce", "all_gather"):
            for mode, channel, global_ids, count in modes:
                for groups in COVERING_GROUPS[count]:
                    size = len(groups[0]) * (partitions if mode.endswith("_partition") else 1)
                    text = "".join(str(v) for g in groups for v in g)
                    cases.append(
                        pytest.param(
                            op,
                            table,
                            groups,
                            channel,
                            global_ids,
                            size,
                            id=f"{table_id}-{op}-{mode}-{text}",
                        )
                    )
        for mode, channel, count in [
            ("cross_replica", None, replicas),
            ("cross_partition", 1, partitions),
        ]:
            for pairs in PERMUTE_PAIRS[count]:
                text = "".join(f"{s}{t}" for s, t in pairs)
                cases.append(
                    pytest.param(
                        "collective_permute",
                        table,
                        pairs,
                        channel,
                        False,
                        1,
                        id=f"{table_id}-permute-{mode}-{text}",
                    )
                )
    return cases


def _resolved(r: RawMeasurement) -> Any:
    """meshtopo's answer for the collective XLA compiled, in the measurement's form."""
    (c,) = r.collectives
    if r.op == "collective_permute":
        assert c.source_target_pairs is not None
        pairs = mt.participating_device_pairs(
            parse_int_pairs(c.source_target_pairs), mode=mode_of(c), device_assignment=assignment(r.device_assignment)
        )
        return tuple(sorted(pairs))
    return as_measured(written_groups(c, r.device_assignment), ordered=r.op == "all_gather")


@pytest.mark.parametrize(
    ("op", "table", "groups", "channel_id", "use_global_device_ids", "group_size"),
    _raw_cases(TABLES),
)
def test_device_groups_equal_measured(
    op: str,
    table: Any,
    groups: list[list[int]],
    channel_id: int | None,
    use_global_device_ids: bool,
    group_size: int,
) -> None:
    r = measure_raw(
        op,
        table,
        groups,
        channel_id=channel_id,
        use_global_device_ids=use_global_device_ids,
        group_size=group_size,
    )
    assert (r.replica_count, r.num_partitions) == np.asarray(table).shape
    measured = r.pairs if op == "collective_permute" else r.groups
    assert _resolved(r) == measured


RAW_CASES_16 = _raw_cases(TABLES_16)


@pytest.fixture(scope="module")
def measured_raw_16() -> list[RawMeasurement]:
    """Every 16-device raw case, run in one child process with 16 CPU devices."""
    keys = ("op", "device_assignment", "groups", "channel_id", "use_global_device_ids")
    requests = [
        {**dict(zip(keys, p.values[:5], strict=True)), "group_size": p.values[5]}
        for p in RAW_CASES_16
    ]
    return measure_raw_in_subprocess(requests, device_count=16, timeout=240)


@pytest.mark.parametrize("index", [pytest.param(i, id=p.id) for i, p in enumerate(RAW_CASES_16)])
def test_device_groups_equal_measured_16(measured_raw_16: list[RawMeasurement], index: int) -> None:
    r = measured_raw_16[index]
    assert (r.replica_count, r.num_partitions) == np.asarray(r.device_assignment).shape
    measured = r.pairs if r.op == "collective_permute" else r.groups
    assert _resolved(r) == measured


def test_flattened_ids_are_not_device_ids_under_the_default_placer() -> None:
    """R=2, P=2 with XLA's default table [[0,2],[1,3]]: flattened {0,1} is devices {0,2}."""
    table = mt.DeviceAssignment.default(2, 2).array
    assert table.tolist() == [[0, 2], [1, 3]]
    r = measure_raw("all_reduce", table, [[0, 1], [2, 3]], channel_id=1, use_global_device_ids=True)
    (c,) = r.collectives
    assert (c.replica_groups, c.use_global_device_ids) == ("{{0,1},{2,3}}", True)
    assert mode_of(c) is mt.CollectiveOpGroupMode.FLATTENED_ID
    assert r.groups == ((0, 2), (1, 3))
    assert written_groups(c, table.tolist()) == [[0, 2], [1, 3]]


def test_cross_replica_and_partition_rank_order_is_replica_major() -> None:
    """An all-gather with a channel and groups {1,0} spans every partition, replica-major."""
    table = [[5, 2], [1, 3]]
    r = measure_raw("all_gather", table, [[1, 0]], channel_id=1, group_size=4)
    (c,) = r.collectives
    assert mode_of(c) is mt.CollectiveOpGroupMode.CROSS_REPLICA_AND_PARTITION
    assert r.groups == ((1, 3, 5, 2),)
    assert written_groups(c, table) == [[1, 3, 5, 2]]


MODULE_RAW_CASES = [
    pytest.param("all_reduce", [[0, 2], [1, 3]], [[0, 1], [2, 3]], 1, True, 2, id="flattened"),
    pytest.param("all_reduce", [[5, 2], [1, 3]], [[1, 0]], None, False, 2, id="cross-replica"),
    pytest.param(
        "all_gather", [[5, 2], [1, 3]], [[1, 0]], 1, False, 4, id="cross-replica-and-partition"
    ),
    pytest.param(
        "collective_permute",
        [[5, 2], [1, 3]],
        [[0, 1], [1, 0]],
        1,
        False,
        1,
        id="permute-cross-partition",
    ),
    pytest.param(
        "collective_permute",
        [[3, 7], [1, 4], [0, 6], [2, 5]],
        [[0, 1], [1, 3], [3, 2], [2, 0]],
        None,
        False,
        1,
        id="permute-cross-replica",
    ),
]


@pytest.mark.parametrize("case", [pytest.param(p.values, id=p.id) for p in MODULE_RAW_CASES])
def test_raw_module(case: tuple[Any, ...]) -> None:
    """(op, table, groups, channel_id, use_global_device_ids, group_size), as measure_raw's."""
    op, table, groups, channel_id, use_global_device_ids, group_size = case
    r = measure_raw(op, table, groups, channel_id=channel_id,
                    use_global_device_ids=use_global_device_ids, group_size=group_size)
    opcode = {"all_reduce": "all-reduce", "all_gather": "all-gather"}.get(op, "collective-permute")
    measured = r.pairs if op == "collective_permute" else r.groups
    assert r.device_assignment == tuple(tuple(row) for row in table)
    check_module(r, opcode, measured, op == "all_gather")


# --------------------------------------------------------------------------------------------
# The CPU client's own placement
# --------------------------------------------------------------------------------------------

CPU_PLACEMENT_SHAPES = [(2, 2), (2, 4), (4, 2), (1, 8), (8, 1)]


def test_cpu_client_places_row_major_when_left_to_itself() -> None:
    """With no device assignment given, jaxlib 0.10.2's CPU client runs R x P programs on
    ``DA[r][p] = r*P + p``; meshtopo resolves the measured groups with that table."""
    cases: list[dict[str, Any]] = []
    for replicas, partitions in CPU_PLACEMENT_SHAPES:
        count = replicas * partitions
        scrambled = [[(3 * i + 1) % count for i in range(count)]] if count > 2 else [[1, 0]]
        cases.append(
            {
                "op": "all_gather",
                "device_assignment": mt.DeviceAssignment.row_major(replicas, partitions).array,
                "groups": scrambled,
                "channel_id": 1,
                "use_global_device_ids": True,
                "pass_assignment": False,
            }
        )
    results = measure_raw_in_subprocess(cases, device_count=8, timeout=120)
    for (replicas, partitions), case, r in zip(CPU_PLACEMENT_SHAPES, cases, results, strict=True):
        table = mt.DeviceAssignment.row_major(replicas, partitions)
        (c,) = r.collectives
        expected = mt.participating_device_groups(
            mt.CollectiveDeviceList.parse(c.replica_groups or ""), mode=mode_of(c), device_assignment=table
        )
        assert as_measured(expected, ordered=True) == r.groups, (replicas, partitions)
        assert r.groups == (tuple(case["groups"][0]),)
