"""Every analysis ends within its stated bound: cyclic calls are refused, huge trip counts
are not unrolled, too many collectives and too many devices are refused with a clear error."""

from __future__ import annotations

import pytest

import meshtopo as mt

from ._cases import ADD, all_reduce, module

LOOP = """HloModule loop, num_partitions=4
""" + ADD + """%cond (c: (s32[], f32[8])) -> pred[] {
  %c = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(2147483647)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (b: (s32[], f32[8])) -> (s32[], f32[8]) {
  %b = (s32[], f32[8]{0}) parameter(0)
  %j = s32[] get-tuple-element(%b), index=0
  %v = f32[8]{0} get-tuple-element(%b), index=1
  %ar = f32[8]{0} all-reduce(%v), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%add
  ROOT %t = (s32[], f32[8]{0}) tuple(%j, %ar)
}
ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]{0}) tuple(%zero, %p)
  %w = (s32[], f32[8]{0}) while(%init), condition=%cond, body=%body, BACKEND
  ROOT %out = f32[8]{0} get-tuple-element(%w), index=1
}
"""


@pytest.mark.timeout(20)
def test_huge_trip_count_is_recorded_not_unrolled() -> None:
    text = LOOP.replace("BACKEND", 'backend_config={"known_trip_count":{"n":"1000000000000"}}')
    report = mt.order.analyze(mt.hlo.parse_module(text))
    assert report.findings == []
    assert [(a.entry.name, a.entry.loops) for a in report.schedule(3)] == [
        ("ar", (("w", 1_000_000_000_000),))]


# Counting a loop that never ends up to the default trip limit (10^5 iterations) takes seconds;
# a lower limit, still past the 4,096 expanded iterations, shows the same.
COUNTED = 5_000


def test_unknown_trip_count_is_none() -> None:
    text = LOOP.replace(", BACKEND", "")
    with mt.trip_limit(COUNTED):
        report = mt.order.analyze(mt.hlo.parse_module(text))
    assert report.schedule(0)[0].entry.loops == (("w", None),)
    assert f"runs more than {COUNTED} iterations" in report.notes[0]
    assert mt.get_trip_limit() == mt.DEFAULT_TRIP_LIMIT
    with pytest.raises(mt.LimitError, match="trip limit must be a positive int, got 0"):
        mt.set_trip_limit(0)


def test_a_computation_that_calls_itself_is_refused() -> None:
    text = """HloModule rec, num_partitions=2
%f (a: f32[8]) -> f32[8] {
  %a = f32[8]{0} parameter(0)
  ROOT %again = f32[8]{0} call(%a), to_apply=%f
}
ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %c = f32[8]{0} call(%p), to_apply=%f
}
"""
    # XLA's parser, and so the reader, refuses a computation called before it is defined.
    with pytest.raises(mt.HloParseError, match="4:46: computation does not exist: f"):
        mt.hlo.parse_module(text)


def test_too_many_collectives_are_refused() -> None:
    body = "".join(all_reduce(f"a{i}", "{{0,1,2,3}}", channel=i + 1) for i in range(3))
    with mt.collective_limit(2), pytest.raises(
            mt.LimitError, match=r"issues more than 2 collectives \(reached at a2, line 11\); "
            r"raise the limit with meshtopo.set_collective_limit"):
        mt.order.analyze(module(body, 4))
    assert mt.get_collective_limit() == mt.DEFAULT_COLLECTIVE_LIMIT
    assert len(mt.order.analyze(module(body, 4)).schedule(0)) == 3
    with pytest.raises(mt.LimitError, match="collective limit must be a positive int, got 0"):
        mt.set_collective_limit(0)


def test_devices_past_the_limit_are_refused() -> None:
    target = module(all_reduce("a", "[1,64]<=[64]"), 64)
    with mt.device_limit(32), pytest.raises(mt.LimitError):
        mt.order.analyze([(target, list(range(64)))])


def test_bad_program_lists() -> None:
    target = module(all_reduce("a", "{{0,1,2,3}}"), 4)
    with pytest.raises(mt.InvalidArgumentError, match="each device runs one program"):
        mt.order.analyze([(target, [0, 1]), (target, [1, 2])])
    with pytest.raises(mt.InvalidArgumentError, match=r"must be a \(module, devices\) pair"):
        mt.order.analyze([target])  # type: ignore[list-item]
    with pytest.raises(mt.InvalidArgumentError, match="device_assignment is 1x2"):
        mt.order.analyze(target, device_assignment=[[0, 1]])


@pytest.mark.parametrize(("bound", "backend", "count"), [
    ("4500", "", 4500),  # computed past the expansion limit: counted, then scaled
    ("2147483647", ', backend_config={"known_trip_count":{"n":"1000000000000"}}', 10**12),
    ("2147483647", "", None),  # runs past the counting limit with no known count
], ids=["computed", "known_trip_count", "unknown"])
def test_trip_counts_of_a_loop_past_the_expansion_limit(bound: str, backend: str,
                                                        count: int | None) -> None:
    text = LOOP.replace(", BACKEND", backend).replace("constant(2147483647)", f"constant({bound})")
    if bound == "4500":  # the body counts its iterations
        text = text.replace("%j = s32[] get-tuple-element(%b), index=0",
                            "%j0 = s32[] get-tuple-element(%b), index=0\n  %one = s32[] "
                            "constant(1)\n  %j = s32[] add(%j0, %one)")
    with mt.trip_limit(COUNTED):
        orders = mt.order.issue_orders(mt.hlo.parse_module(text))
    assert orders.trip_counts == {("body", "ar"): count}
