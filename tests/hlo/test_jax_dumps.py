"""Dumps compiled by JAX: every collective's fields, checked against XLA's own reading."""

from __future__ import annotations

import pytest

import meshtopo as mt
from meshtopo import hlo
from meshtopo.hlo._reader import fast_paths

from ._dumps import dumps, jaxlib_explicit_groups
from ._fast_paths import structure, turn_off

pytestmark = pytest.mark.jax

FLAT = mt.CollectiveOpGroupMode.FLATTENED_ID
PARTITION = mt.CollectiveOpGroupMode.CROSS_PARTITION


def test_shard_map_collectives() -> None:
    module = hlo.parse_module(dumps()["shard_map"])
    assert (module.replica_count, module.num_partitions, module.is_scheduled) == (1, 8, True)
    by_op = {c.opcode: c for c in module.collectives}
    assert sorted(by_op) == ["all-gather", "all-reduce", "all-to-all", "collective-permute",
                             "reduce-scatter"]
    rows = [[0, 1, 2, 3], [4, 5, 6, 7]]
    expected = {
        "all-reduce": (FLAT, [[0, 4], [1, 5], [2, 6], [3, 7]]),
        "all-gather": (FLAT, rows),
        "reduce-scatter": (FLAT, rows),
        "all-to-all": (PARTITION, rows),
    }
    for opcode, (mode, groups) in expected.items():
        c = by_op[opcode]
        assert (c.mode, c.device_groups(), c.channel_id) == (mode, groups, 1), opcode
        assert c.computation == module.entry_name
    assert by_op["all-reduce"].reduction == "sum" and by_op["all-reduce"].use_global_device_ids
    assert by_op["all-gather"].dimensions == (0,) and by_op["reduce-scatter"].dimensions == (0,)
    assert by_op["all-to-all"].use_global_device_ids is None
    assert by_op["all-to-all"].operands and len(by_op["all-to-all"].operand_shapes) == 4
    permute = by_op["collective-permute"]
    assert permute.mode is PARTITION and permute.replica_groups is None
    ring = [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4)]
    assert permute.source_target_pairs == ring and permute.device_pairs() == ring
    # bytes: f32[8,8] operand per device for every op but the gathered f32[4,8,8] result.
    assert by_op["all-reduce"].bytes == 256 and by_op["all-gather"].bytes == 1024
    assert by_op["reduce-scatter"].bytes == 256 and permute.bytes == 256


@pytest.mark.parametrize("name", ["shard_map", "sum_replicated", "matmul", "gram"])
def test_groups_agree_with_xla(name: str) -> None:
    text = dumps()[name]
    module = hlo.parse_module(text)
    lines = text.split("\n")
    for c in module.collectives:
        assert lines[c.line - 1][c.column - 1:].startswith(f"%{c.name} = "), c
    written = [c for c in module.collectives if c.groups_text is not None]
    assert written, name
    xla = jaxlib_explicit_groups(text)
    assert [c.replica_groups.to_text(full=True) for c in written] == xla
    streamed = list(hlo.iter_collectives(__import__("io").StringIO(text), progress=False))
    assert [(c.name, c.line, c.groups_text) for c in streamed] == [
        (c.name, c.line, c.groups_text) for c in module.collectives]


def test_encodings_seen() -> None:
    texts = [c.groups_text or "" for name in ("sum_replicated", "matmul", "gram")
             for c in hlo.parse_module(dumps()[name]).collectives]
    assert any(t.startswith("mesh[") for t in texts) and any("<=" in t for t in texts)
    assert any(t.startswith("[") and "T(" in t for t in texts)
    (reduce_all, *_rest) = hlo.parse_module(dumps()["sum_replicated"]).collectives
    assert reduce_all.device_groups() == [[0, 4], [1, 5], [2, 6], [3, 7]]


@pytest.mark.parametrize("name", ["shard_map", "sum_replicated", "matmul", "gram"])
def test_fast_paths_decide_nothing(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-line fast paths only make reading quicker: with them turned off, every
    computation and instruction of a real dump reads the same, positions included."""
    fast = structure(hlo.parse_module(dumps()[name]))
    turn_off(monkeypatch)
    assert structure(hlo.parse_module(dumps()[name])) == fast
    assert not fast_paths()  # the general reader read every line
