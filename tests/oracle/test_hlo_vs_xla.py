"""meshtopo's HLO reader on XLA's own compiled output, checked against measured groups.

The compiled HLO text of every measured program (shard_map collectives, partitioner-inserted
collectives with mesh-axes groups, replica_count > 1 programs) goes through
``mt.hlo.parse_module``; its collectives must be the ones in the text, with the header's counts,
and ``device_groups`` / ``device_pairs`` through the executable's device assignment must give
the devices that really met.
"""

from __future__ import annotations

from typing import Any

import pytest

import meshtopo.hlo

from ._cases import MESHES_8, PARTITIONER_CASES, RESHARD_CASES, shard_map_cases
from ._expect import as_measured, assignment
from ._hlo_text import HloCollective
from ._measure import OPCODE_FOR, measure
from ._partitioner import measure_partitioner, measure_reshard
from ._raw import measure_raw

pytestmark = pytest.mark.jax


def _check_module(
    hlo_text: str,
    collectives: tuple[HloCollective, ...],
    counts: tuple[int, int],
    opcode: str,
    table: Any,
    measured: Any,
    ordered: bool,
) -> None:
    module = meshtopo.hlo.parse_module(hlo_text)
    assert (module.replica_count, module.num_partitions) == counts
    assert [(c.name, c.opcode) for c in module.collectives] == [
        (c.name, c.opcode) for c in collectives
    ]
    (c,) = [c for c in module.collectives if c.opcode == opcode]
    da = assignment(table)
    if opcode == "collective-permute":
        assert tuple(sorted(c.device_pairs(da))) == measured
    else:
        assert as_measured(c.device_groups(da), ordered) == measured


SHARD_MAP_CASES = shard_map_cases(MESHES_8)


@pytest.mark.parametrize(("collective", "shape", "devices", "axes"), SHARD_MAP_CASES)
def test_shard_map_module(
    collective: str, shape: dict[str, int], devices: list[int] | None, axes: tuple[str, ...]
) -> None:
    m = measure(collective, shape, axes, device_ids=devices)
    measured = m.pairs if collective == "ppermute" else m.groups
    _check_module(
        m.hlo_text,
        m.collectives,
        (m.replica_count, m.num_partitions),
        OPCODE_FOR[collective],
        m.device_assignment,
        measured,
        m.ordered,
    )


@pytest.mark.parametrize(("kind", "shape", "devices", "axes"), PARTITIONER_CASES)
def test_partitioner_module(
    kind: str, shape: dict[str, int], devices: list[int] | None, axes: tuple[str, ...]
) -> None:
    m = measure_partitioner(kind, shape, axes, device_ids=devices)
    opcode = "all-reduce" if kind == "sum" else "all-gather"
    _check_module(
        m.hlo_text,
        m.collectives,
        (m.replica_count, m.num_partitions),
        opcode,
        m.device_assignment,
        m.groups,
        m.ordered,
    )


@pytest.mark.parametrize(("shape", "devices", "in_axes", "out_axes"), RESHARD_CASES)
def test_reshard_module(
    shape: dict[str, int],
    devices: list[int] | None,
    in_axes: tuple[str, ...],
    out_axes: tuple[str, ...],
) -> None:
    m = measure_reshard(shape, in_axes, out_axes, device_ids=devices)
    _check_module(
        m.hlo_text,
        m.collectives,
        (m.replica_count, m.num_partitions),
        "all-gather",
        m.device_assignment,
        m.groups,
        True,
    )


RAW_CASES = [
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


@pytest.mark.parametrize(
    ("op", "table", "groups", "channel_id", "use_global_device_ids", "group_size"), RAW_CASES
)
def test_raw_module(
    op: str,
    table: list[list[int]],
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
    opcode = {"all_reduce": "all-reduce", "all_gather": "all-gather"}.get(op, "collective-permute")
    measured = r.pairs if op == "collective_permute" else r.groups
    _check_module(
        r.hlo_text,
        r.collectives,
        (r.replica_count, r.num_partitions),
        opcode,
        table,
        measured,
        op == "all_gather",
    )
