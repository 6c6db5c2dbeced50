"""XLA's convert_async_collectives_to_sync_test.cc cases, judged by jaxlib reading the output."""

from __future__ import annotations

import pytest

import meshtopo as mt
from meshtopo.hlo.passes import convert_async_collectives_to_sync as to_sync

from ._xla import opcode, root, xla

pytestmark = pytest.mark.jax

APPLY = """
apply_op {
  x = u32[] parameter(0)
  y = u32[] parameter(1)
  ROOT apply_op = u32[] add(x, y)
}
"""


def _module(body: str, computations: str = APPLY) -> mt.hlo.Module:
    return mt.hlo.parse_module(f"HloModule test, is_scheduled=true\n{computations}\n"
                               f"ENTRY test_computation {{\n{body}\n}}\n", replica_count=4)


def _names(instruction: object) -> list[str]:
    return [opcode(o) for o in instruction.operands()]  # type: ignore[attr-defined]


def test_simple_all_reduce() -> None:
    module = _module("id = u32[] replica-id()\nstart = u32[] all-reduce-start(id), "
                     "to_apply=apply_op, channel_id=3\nROOT done = u32[] all-reduce-done(start)")
    out = to_sync(module)
    top = root(xla(out))
    assert (opcode(top), _names(top)) == ("kAllReduce", ["kReplicaId"])
    assert out.collectives[0].channel_id == 3
    assert 'async_collective_name="start"' in out.entry.instruction("done").attributes[
        "frontend_attributes"]


def test_nop_predicate_widens_the_overlap() -> None:
    module = _module("id = u32[] replica-id()\nstart = u32[] all-reduce-start(id), "
                     "to_apply=apply_op, channel_id=3, replica_groups={{0,1}, {2,3}}\n"
                     "id2 = f32[] bitcast(id)\nROOT done = u32[] all-reduce-done(start)")
    simple = {"bitcast", "get-tuple-element", "parameter"}
    out = to_sync(module, is_nop=lambda line: line.opcode in simple)
    assert opcode(root(xla(out))) == "kAllReduce"
    assert out.collectives[0].device_groups() == [[0, 1], [2, 3]]
    assert opcode(root(xla(to_sync(module)))) == "kAllReduceDone"


def test_non_nop_keeps_the_pair() -> None:
    module = _module("id = u32[] replica-id()\nstart = u32[] all-reduce-start(id), "
                     "to_apply=apply_op, channel_id=3\nid2 = u32[] add(id, id)\n"
                     "ROOT done = u32[] all-reduce-done(start)")
    result = mt.hlo.passes.run_convert_async_collectives_to_sync(module)
    assert not result.changed
    assert result.decisions[0].reason == "work overlaps it in the schedule"


def test_simple_all_gather_and_frontend_attributes() -> None:
    module = _module("a1 = u32[1, 2] parameter(0)\nags = (u32[1, 2], u32[2, 2]) "
                     "all-gather-start(a1), dimensions={0}, channel_id=3, "
                     'frontend_attributes={_scheduling_group_id="127"}\n'
                     "ROOT allgather = u32[2,2] all-gather-done(ags), "
                     'frontend_attributes={_scheduling_group_id="127"}', computations="")
    result = mt.hlo.passes.run_convert_async_collectives_to_sync(module)
    parsed = xla(result.module)
    top = root(parsed)
    assert (opcode(top), _names(top)) == ("kAllGather", ["kParameter"])
    assert '_scheduling_group_id="127"' in parsed.to_string()
    assert result.decisions[0].reason.endswith(
        "Async collective pair (ags, allgather) with scheduling group id 127 is not overlapped "
        "after scheduling and is converted to a synchronous collective allgather.")


@pytest.mark.parametrize(("start", "operands"), [
    ("p = u32[2] parameter(0)\nstart = (u32[2], u32[2], u32[], u32[]) collective-permute-start(p), "
     "source_target_pairs={{0,1}, {1,0}}\nROOT done = u32[2] collective-permute-done(start)", 1),
    ("p0 = u32[2] parameter(0)\np1 = u32[2] parameter(1)\nstart = ((u32[2], u32[2]), "
     "(u32[2], u32[2])) collective-permute-start(p0, p1), source_target_pairs={{0,1}, {1,0}}\n"
     "ROOT done = (u32[2], u32[2]) collective-permute-done(start)", 2),
])
def test_collective_permute(start: str, operands: int) -> None:
    out = to_sync(_module(start, computations=""))
    top = root(xla(out))
    assert (opcode(top), _names(top)) == ("kCollectivePermute", ["kParameter"] * operands)
    assert out.collectives[0].device_pairs() == [(0, 1), (1, 0)]


def test_async_reduce_scatter_and_all_to_all() -> None:
    computations = """
add {
  lhs = u32[] parameter(0)
  rhs = u32[] parameter(1)
  ROOT add = u32[] add(lhs, rhs)
}
reduce_scatter {
  p0 = u32[8] parameter(0)
  ROOT result = u32[4] reduce-scatter(p0), replica_groups={{0,3}, {1,2}}, dimensions={0}, to_apply=add
}
all_to_all {
  p0.1 = u32[2] parameter(0)
  ROOT result.1 = u32[2] all-to-all(p0.1), dimensions={0}, replica_groups={{0,1},{2,3}}
}
"""
    body = """data = u32[8] parameter(0)
rs-start = ((u32[8]{0}), u32[4]{0}) async-start(u32[8]{0} %data), calls=reduce_scatter
ars = u32[4]{0} async-done(((u32[8]{0}), u32[4]{0}) %rs-start), calls=reduce_scatter
a2a-start = ((u32[4]), u32[4]) async-start(ars), calls=all_to_all
ROOT a2s = u32[4] async-done(a2a-start), calls=all_to_all"""
    body = body.replace("u32[2]", "u32[4]")
    out = to_sync(_module(body, computations.replace("u32[2]", "u32[4]")))
    parsed = xla(out)
    top = root(parsed)
    assert (opcode(top), _names(top)) == ("kAllToAll", ["kReduceScatter"])
    assert "reduce_scatter" not in out.computations and "all_to_all" not in out.computations
    groups = {c.name: c.device_groups() for c in out.collectives}
    assert groups == {"ars": [[0, 3], [1, 2]], "a2s": [[0, 1], [2, 3]]}


_TWO = ("id = u32[] replica-id()\n{order}\nROOT x = u32[] add(done1, done2)")
_S1 = "start1 = u32[] all-reduce-start(id), to_apply=apply_op, channel_id=3"
_S2 = "start2 = u32[] all-reduce-start(id), to_apply=apply_op, channel_id=4"
_D1 = "done1 = u32[] all-reduce-done(start1)"
_D2 = "done2 = u32[] all-reduce-done(start2)"


@pytest.mark.parametrize(("order", "expected"), [
    ([_S1, _D1, _S2 + ", control-predecessors={done1}", _D2], ["kAllReduce", "kAllReduce"]),
    ([_S1, _S2, _D1, _D2], ["kAllReduce", "kAllReduce"]),
    ([_S1, _S2, _D2, _D1], ["kAllReduce", "kAllReduce"]),
    ([_S1, _S2, _D2, "id2 = u32[] add(done2, done2)", _D1], ["kAllReduceDone", "kAllReduce"]),
], ids=["control_deps", "streaming", "nested", "nested_partial"])
def test_multiple_in_flight(order: list[str], expected: list[str]) -> None:
    out = to_sync(_module(_TWO.format(order="\n".join(order))))
    top = root(xla(out))
    assert opcode(top) == "kAdd"
    assert _names(top) == expected


def test_unscheduled_module_is_kept() -> None:
    module = mt.hlo.parse_module("HloModule test\n" + APPLY + "ENTRY e {\nid = u32[] "
                                 "replica-id()\nstart = u32[] all-reduce-start(id), "
                                 "to_apply=apply_op\nROOT done = u32[] all-reduce-done(start)\n}")
    result = mt.hlo.passes.run_convert_async_collectives_to_sync(module)
    assert [d.reason for d in result.decisions] == ["the module is not scheduled"]


def test_start_with_another_user_is_kept() -> None:
    module = _module("a1 = u32[1, 2] parameter(0)\nags = (u32[1, 2], u32[2, 2]) "
                     "all-gather-start(a1), dimensions={0}, channel_id=3\n"
                     "peek = u32[1, 2] get-tuple-element(ags), index=0\n"
                     "ROOT allgather = u32[2,2] all-gather-done(ags)", computations="")
    result = mt.hlo.passes.run_convert_async_collectives_to_sync(
        module, is_nop=lambda line: line.opcode == "get-tuple-element")
    assert [(d.action, d.reason) for d in result.decisions] == [
        ("kept", "used by peek, allgather: XLA's pass cannot remove a start with users besides "
                 "its done")]
    xla(result.module)
