"""meshtopo's mesh groups and group resolution against XLA, measured by execution.

For every mesh (shape and device order), collective and choice of axes, a jitted shard_map
runs on CPU devices and its outputs say which devices met (and in which rank order, where the
collective reveals it). Two things must equal that measurement:

* ``mt.Mesh(shape, devices=...).replica_groups(over=axes)``, meshtopo's groups for the mesh;
* the groups XLA wrote in the compiled HLO, parsed by ``mt.CollectiveDeviceList.parse`` and
  resolved by ``mt.participating_device_groups`` under the instruction's group mode through
  the executable's device assignment (for ppermute, the written source_target_pairs mapped by
  ``mt.participating_device_pairs``);
* on 8 devices, the compiled HLO text read by ``mt.hlo.parse_module``: its collectives are
  the ones in the text, with the header's counts, and ``device_groups`` / ``device_pairs``
  through the device assignment give the devices that really met (each program is compiled
  once, for all three).

The 16-device meshes run in one child process with its own device count.
"""

from __future__ import annotations

from typing import Any

import pytest

from ._cases import MESHES_8, MESHES_16, shard_map_cases
from ._expect import (
    as_measured,
    check_module,
    mesh_groups,
    mesh_pairs,
    the_collective,
    written_groups,
    written_pairs,
)
from ._measure import OPCODE_FOR, Measurement, measure, measure_in_subprocess

pytestmark = pytest.mark.jax


def assert_mesh_groups(m: Measurement) -> None:
    if m.collective == "ppermute":
        assert mesh_pairs(m) == m.pairs
    else:
        assert as_measured(mesh_groups(m), m.ordered) == m.groups


def assert_written_groups(m: Measurement) -> None:
    assert (m.replica_count, m.num_partitions) == (1, len(m.device_ids))
    c = the_collective(m)
    if m.collective == "ppermute":
        assert written_pairs(c, m.device_assignment) == m.pairs
    else:
        assert as_measured(written_groups(c, m.device_assignment), m.ordered) == m.groups


# --------------------------------------------------------------------------------------------
# 8 devices, in this process
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("collective", "shape", "devices", "axes"), shard_map_cases(MESHES_8))
def test_mesh_groups_equal_measured(
    collective: str, shape: dict[str, int], devices: list[int] | None, axes: tuple[str, ...]
) -> None:
    assert_mesh_groups(measure(collective, shape, axes, device_ids=devices))


@pytest.mark.parametrize(("collective", "shape", "devices", "axes"), shard_map_cases(MESHES_8))
def test_written_groups_resolve_to_measured(
    collective: str, shape: dict[str, int], devices: list[int] | None, axes: tuple[str, ...]
) -> None:
    assert_written_groups(measure(collective, shape, axes, device_ids=devices))


@pytest.mark.parametrize(("collective", "shape", "devices", "axes"), shard_map_cases(MESHES_8))
def test_shard_map_module(
    collective: str, shape: dict[str, int], devices: list[int] | None, axes: tuple[str, ...]
) -> None:
    m = measure(collective, shape, axes, device_ids=devices)
    measured = m.pairs if collective == "ppermute" else m.groups
    check_module(m, OPCODE_FOR[collective], measured, m.ordered)


@pytest.mark.parametrize(("shape", "devices"), [pytest.param(s, d, id=i) for i, s, d in MESHES_8])
def test_shard_map_device_assignment_is_mesh_order(
    shape: dict[str, int], devices: list[int] | None
) -> None:
    """JAX compiles a shard_map over a Mesh with one replica and partitions placed in
    ``mesh.devices.flat`` order (the resolution tests above confirm it by execution)."""
    m = measure("psum", shape, next(iter(shape)), device_ids=devices)
    assert m.device_assignment == (m.device_ids,)


def test_psum_over_data_on_interleaved_mesh() -> None:
    """Mesh devices [[0,2,4,6],[1,3,5,7]]: XLA writes logical ids, flattened-id mode."""
    m = measure("psum", {"data": 2, "model": 4}, "data", device_ids=[[0, 2, 4, 6], [1, 3, 5, 7]])
    c = the_collective(m)
    assert (c.opcode, c.replica_groups, c.channel_id, c.use_global_device_ids) == (
        "all-reduce",
        "{{0,4},{1,5},{2,6},{3,7}}",
        1,
        True,
    )
    assert (m.replica_count, m.num_partitions) == (1, 8)
    assert m.groups == ((0, 1), (2, 3), (4, 5), (6, 7))
    assert written_groups(c, m.device_assignment) == [[0, 1], [2, 3], [4, 5], [6, 7]]


def test_all_gather_rank_order_follows_named_axis_order() -> None:
    """Over ("c", "a") the first named axis varies slowest inside a group."""
    m = measure("all_gather", {"a": 2, "b": 2, "c": 2}, ("c", "a"))
    assert m.groups == ((0, 4, 1, 5), (2, 6, 3, 7))
    assert mesh_groups(m) == [[0, 4, 1, 5], [2, 6, 3, 7]]


# --------------------------------------------------------------------------------------------
# 16 devices, one child process for all cases
# --------------------------------------------------------------------------------------------

CASES_16 = shard_map_cases(MESHES_16)


def _key(collective: str, shape: dict[str, int], devices: Any, axes: tuple[str, ...]) -> str:
    return f"{collective}|{sorted(shape.items())}|{devices}|{axes}"


@pytest.fixture(scope="module")
def measured_16() -> dict[str, Measurement]:
    specs = [p.values for p in CASES_16]
    requests = [{"collective": c, "shape": s, "device_ids": d, "axes": a} for c, s, d, a in specs]
    results = measure_in_subprocess(requests, device_count=16, timeout=240)
    return {_key(*spec): m for spec, m in zip(specs, results, strict=True)}


@pytest.mark.parametrize(("collective", "shape", "devices", "axes"), CASES_16)
def test_mesh_groups_equal_measured_16(
    measured_16: dict[str, Measurement],
    collective: str,
    shape: dict[str, int],
    devices: list[int] | None,
    axes: tuple[str, ...],
) -> None:
    assert_mesh_groups(measured_16[_key(collective, shape, devices, axes)])


@pytest.mark.parametrize(("collective", "shape", "devices", "axes"), CASES_16)
def test_written_groups_resolve_to_measured_16(
    measured_16: dict[str, Measurement],
    collective: str,
    shape: dict[str, int],
    devices: list[int] | None,
    axes: tuple[str, ...],
) -> None:
    assert_written_groups(measured_16[_key(collective, shape, devices, axes)])
