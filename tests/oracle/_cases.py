"""The oracle's case tables: meshes (shape and device order) and choices of axes."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest

from ._measure import COLLECTIVES

PERM_8 = [5, 2, 7, 0, 3, 6, 1, 4]
PERM_8_B = [3, 7, 1, 4, 0, 6, 2, 5]
PERM_16 = [9, 14, 3, 0, 12, 7, 1, 10, 5, 15, 8, 2, 13, 6, 11, 4]

MESHES_8: list[tuple[str, dict[str, int], list[int] | None]] = [
    ("2x4", {"data": 2, "model": 4}, None),
    ("4x2", {"data": 4, "model": 2}, None),
    ("2x4-interleaved", {"data": 2, "model": 4}, [0, 2, 4, 6, 1, 3, 5, 7]),
    ("2x4-reversed", {"data": 2, "model": 4}, list(range(7, -1, -1))),
    ("4x2-permuted", {"data": 4, "model": 2}, PERM_8_B),
    ("2x2x2", {"a": 2, "b": 2, "c": 2}, None),
    ("2x2x2-reversed", {"a": 2, "b": 2, "c": 2}, list(range(7, -1, -1))),
    ("2x2x2-permuted", {"a": 2, "b": 2, "c": 2}, PERM_8),
]

MESHES_16: list[tuple[str, dict[str, int], list[int] | None]] = [
    ("4x4", {"x": 4, "y": 4}, None),
    ("4x4-reversed", {"x": 4, "y": 4}, list(range(15, -1, -1))),
    ("2x2x4", {"a": 2, "b": 2, "c": 4}, None),
    ("2x2x4-permuted", {"a": 2, "b": 2, "c": 4}, PERM_16),
]


def axis_choices(names: Sequence[str]) -> list[tuple[str, ...]]:
    """Single axes, every ordered pair, every order of all axes (3-D: 15 choices)."""
    return [
        axes for count in range(1, len(names) + 1) for axes in itertools.permutations(names, count)
    ]


def shard_map_cases(meshes: list[tuple[str, dict[str, int], list[int] | None]]) -> list[Any]:
    """One case per mesh, choice of axes and collective, with a readable id."""
    return [
        pytest.param(
            collective, shape, devices, axes, id=f"{mesh_id}-{collective}-over-{'+'.join(axes)}"
        )
        for mesh_id, shape, devices in meshes
        for axes in axis_choices(list(shape))
        for collective in COLLECTIVES
    ]


PARTITIONER_MESHES: list[tuple[str, dict[str, int], list[int] | None]] = [
    ("2x4", {"data": 2, "model": 4}, None),
    ("2x4-interleaved", {"data": 2, "model": 4}, [0, 2, 4, 6, 1, 3, 5, 7]),
    ("2x4-reversed", {"data": 2, "model": 4}, list(range(7, -1, -1))),
    ("4x2-permuted", {"data": 4, "model": 2}, PERM_8_B),
    ("2x2x2-permuted", {"a": 2, "b": 2, "c": 2}, PERM_8),
]

PARTITIONER_CASES = [
    pytest.param(kind, shape, devices, axes, id=f"{mesh_id}-{kind}-over-{'+'.join(axes)}")
    for mesh_id, shape, devices in PARTITIONER_MESHES
    for count in range(1, len(shape) + 1)
    for axes in itertools.permutations(shape, count)
    for kind in ("sum", "gather")
]


RESHARD_CASES = [
    pytest.param(
        shape,
        devices,
        in_axes,
        in_axes[:k],
        id=f"{mesh_id}-{'+'.join(in_axes)}-to-{'+'.join(in_axes[:k]) or 'replicated'}",
    )
    for mesh_id, shape, devices in PARTITIONER_MESHES
    for in_axes in itertools.permutations(shape)
    for k in range(len(shape))
]
