"""A real JAX dump whose conditional's branch depends on the device: XLA computes the
selector inside a fusion from ``partition-id``; each device issues only its branch, and the
collectives that really meet when the program runs are the ones the order layer pairs."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import meshtopo as mt
from meshtopo.cli import main

pytestmark = pytest.mark.jax

# Each device contributes 2**p (p its partition id); branch ``one`` (b == 0) sends that to both
# psums, branch ``two`` scales it by 16 for the first psum and 256 for the second, so a result
# says which devices met there and which branch's collective each of them issued.
TAGS = {("one", 0): 1, ("one", 1): 1, ("two", 0): 16, ("two", 1): 256}


@functools.cache
def _program() -> tuple[Any, Any]:
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("a", "b"))

    def one(w: jax.Array) -> jax.Array:
        return jnp.stack([lax.psum(w, "a"), lax.psum(w, "b")])

    def two(w: jax.Array) -> jax.Array:
        return jnp.stack([lax.psum(w * 16, "a"), lax.psum(w * 256, "b")])

    def body(w: jax.Array) -> jax.Array:
        return lax.cond(lax.axis_index("b") == 0, one, two, w)[None]

    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P(("a", "b")),
                              out_specs=P(("a", "b"))))
    w = jnp.array([1.0, 2.0, 4.0, 8.0])
    return f, w


@functools.cache
def _dump() -> str:
    f, w = _program()
    return str(f.lower(w).compile().as_text())


def _decode(value: int) -> dict[int, int]:
    """Which device contributed under which tag: bits 0-3 tag 1, 4-7 tag 16, 8-11 tag 256."""
    return {p: tag for tag, shift in ((1, 0), (16, 4), (256, 8)) for p in range(4)
            if value >> (shift + p) & 1}


def test_each_device_issues_only_its_branch_through_the_fused_selector() -> None:
    text = _dump()
    assert "partition-id()" in text and "fusion(%axis_index" in text
    module = mt.hlo.parse_module(text)
    (conditional,) = [i for c in module.computations.values() for i in c
                      if i.opcode == "conditional"]
    branches = conditional.called_computations
    for device in range(4):
        order = mt.order.issue_order(module, device)
        assert order.unresolved == []
        # lax.cond's index is the predicate as an integer: branch 1 (``one``) where b == 0.
        branch = branches[1 if device % 2 == 0 else 0]
        assert len(order) == 2
        assert {i.computation for i in order} == {branch}


def test_the_collectives_paired_are_the_ones_that_meet_when_it_runs() -> None:
    f, w = _program()
    out = np.asarray(f(w)).reshape(4, 2).astype(np.int64)
    report = mt.order.analyze(mt.hlo.parse_module(_dump()))
    assert report.notes == []
    met = {(d, k): _decode(int(out[d, k])) for d in range(4) for k in range(2)}
    # Measured: the a-axis psum stays within one branch, the b-axis psum joins both branches.
    assert met[0, 0] == {0: 1, 2: 1} and met[1, 0] == {1: 16, 3: 16}
    assert met[0, 1] == {0: 1, 1: 256} == met[1, 1]
    assert met[2, 1] == {2: 1, 3: 256} == met[3, 1]
    for device in range(4):
        schedule = report.schedule(device, taken_only=True)
        assert len(schedule) == 2
        for k, arrival in enumerate(schedule):
            assert set(met[device, k]) == set(arrival.clique)
            for peer in arrival.clique:
                # The peer's arrival on that clique at that position is the collective whose
                # data the device received: its branch's tag.
                theirs = report.schedule(peer, taken_only=True)
                (match,) = [a for a in theirs
                            if a.clique == arrival.clique and a.position == arrival.position]
                tag = TAGS["one" if peer % 2 == 0 else "two", theirs.index(match)]
                assert met[device, k][peer] == tag
    module = mt.hlo.parse_module(_dump())
    assert [[i.name for i in mt.order.issue_order(module, d)] for d in range(4)] == [
        [a.entry.name for a in report.schedule(d, taken_only=True)] for d in range(4)]


def test_the_branches_collectives_pair_across_branches_and_nothing_is_reported() -> None:
    """Both branches issue the same psums (shapes, groups, order): the devices that take
    different branches meet on them, as the execution above measures, so it is clean."""
    module = mt.hlo.parse_module(_dump())
    report = mt.order.analyze(module)
    assert report.findings == [] and report.notes == []
    # The schedules are each device's own branch: device 0 and device 1 issue different
    # b-axis psums, which meet on clique [0,1].
    schedules = {d: report.schedule(d) for d in range(4)}
    assert [len(s) for s in schedules.values()] == [2, 2, 2, 2]
    b_axis = {d: schedules[d][1] for d in range(4)}
    assert b_axis[0].entry == b_axis[2].entry != b_axis[1].entry == b_axis[3].entry
    assert (b_axis[0].clique, b_axis[0].position) == ((0, 1), 0) == (
        b_axis[1].clique, b_axis[1].position)


def test_order_cli_on_the_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cond.hlo"
    path.write_text(_dump())
    with pytest.raises(SystemExit) as done:
        main(["order", str(path), "--json", "--devices", "0,1"])
    answer = json.loads(capsys.readouterr().out)
    assert done.value.code == 0 and answer["ok"] is True
    assert answer["notes"] == []
    assert [len(answer["schedules"][d]) for d in ("0", "1")] == [2, 2]
