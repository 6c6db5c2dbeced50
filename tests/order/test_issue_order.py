"""``mt.order.issue_order``: one device's collectives in the schedule's order, the branch it
takes, and the same order in the runtime's replay and the analysis."""

from __future__ import annotations

from pathlib import Path

import pytest

import meshtopo as mt
from meshtopo.cli import main

from ._cases import ADD, all_reduce, module

STATIC = Path(mt.__file__).parent / "explore" / "static"


def _names(order: list[mt.hlo.Instruction]) -> list[str]:
    return [instruction.name for instruction in order]


def _conditional(selector: str, callees: str = "") -> mt.hlo.Module:
    """Branch 0 reduces then gathers, branch 1 gathers then reduces; ``selector`` defines
    ``%branch`` from ``%p`` and ``%pid`` (``callees``: computations it calls)."""
    return mt.hlo.parse_module(_conditional_text(selector, callees))


def _conditional_text(selector: str, callees: str = "") -> str:
    return (f"""HloModule c, num_partitions=4
{ADD}
%first (a: f32[8]) -> f32[8] {{
  %a = f32[8]{{0}} parameter(0)
  ROOT %ar0 = f32[8]{{0}} all-reduce(%a), channel_id=1, replica_groups={{{{0,1,2,3}}}}, use_global_device_ids=true, to_apply=%add
}}

%second (b: f32[8]) -> f32[8] {{
  %b = f32[8]{{0}} parameter(0)
  ROOT %ar1 = f32[8]{{0}} all-reduce(%b), channel_id=2, replica_groups={{{{0,1,2,3}}}}, use_global_device_ids=true, to_apply=%add
}}

ENTRY %main (p: f32[8], q: s32[]) -> f32[8] {{
  %p = f32[8]{{0}} parameter(0)
  %q = s32[] parameter(1)
  %pid = u32[] partition-id()
{selector}
  ROOT %c = f32[8]{{0}} conditional(%branch, %p, %p), branch_computations={{%first, %second}}
}}
""").replace("ENTRY", callees + "ENTRY", 1)


def test_the_runtime_uses_the_order_layers_issue_order() -> None:
    assert mt.runtime.issue_order is mt.order.issue_order


def test_a_conditional_on_partition_id_takes_each_devices_branch() -> None:
    module = mt.hlo.parse_module((STATIC / "order_conditional.hlo").read_text())
    assert [_names(mt.order.issue_order(module, d)) for d in (0, 1)] == [
        ["sum", "gather"], ["gather2", "sum2"]]
    # The devices take different branches, so the schedules are replayed: each lists the
    # branch its device takes, which is the issue order, as the replay's.
    report = mt.order.analyze(module)
    assert [a.entry.name for a in report.schedule(0)] == ["sum", "gather"]
    assert [[a.entry.name for a in report.schedule(d, taken_only=True)] for d in (0, 1)] == [
        ["sum", "gather"], ["gather2", "sum2"]]
    assert mt.runtime.Replay(module).orders == {0: ["sum", "gather"], 1: ["gather2", "sum2"]}


# Both branches issue one all-reduce of the same shape over the same group: equivalent.
UNKNOWN_NOTE = (
    "conditional c (line 23): its predicate depends on data (parameter q, line 20); every "
    "branch is entered, in branch order; its branches issue equivalent collectives, so "
    "members agree whichever they take")


def test_selectors_computed_or_constant_or_unknown() -> None:
    computed = _conditional("  %two = u32[] constant(2)\n  %rem = u32[] remainder(%pid, %two)\n"
                            "  %branch = s32[] convert(%rem)")
    assert [_names(mt.order.issue_order(computed, d)) for d in range(4)] == [
        ["ar0"], ["ar1"], ["ar0"], ["ar1"]]
    # An index past the last branch takes the last branch, as XLA does.
    constant = _conditional("  %branch = s32[] constant(7)")
    assert _names(mt.order.issue_order(constant, 2)) == ["ar1"]
    # A selector read from a parameter depends on data: every branch, as the schedule.
    unknown = _conditional("  %branch = s32[] copy(%q)")
    order = mt.order.issue_order(unknown, 0)
    assert _names(order) == ["ar0", "ar1"]
    assert order.unresolved == [UNKNOWN_NOTE]
    assert mt.order.analyze(unknown).notes == [UNKNOWN_NOTE]
    assert mt.order.analyze(unknown).findings == []
    assert mt.order.issue_order(computed, 0).unresolved == []
    assert [a.entry.name for a in mt.order.analyze(unknown).schedule(0)] == ["ar0", "ar1"]


def test_an_unscheduled_module_follows_control_predecessors() -> None:
    """An edge to an instruction written later (text cannot hold one: XLA's parser refuses a
    predecessor not yet defined) is added after reading, as XLA's AddControlDependencyTo."""
    body = all_reduce("late", "{{0,1}}", channel=1) + all_reduce("early", "{{0,1}}", channel=2)

    def with_edge(scheduled: bool) -> mt.hlo.Module:
        read = module(body, 2, scheduled=scheduled)
        read.entry.instruction("late").control_predecessors = ("early",)
        return read

    unscheduled = with_edge(scheduled=False)
    assert _names(mt.order.issue_order(unscheduled, 1)) == ["early", "late"]
    assert [a.entry.name for a in mt.order.analyze(unscheduled).schedule(1)] == [
        "early", "late"]
    assert mt.runtime.Replay(unscheduled).orders == {0: ["early", "late"],
                                                    1: ["early", "late"]}
    # A scheduled module keeps its text order (the schedule), as the analysis does.
    assert _names(mt.order.issue_order(with_edge(scheduled=True), 1)) == ["late", "early"]


def test_loops_calls_and_async_pairs() -> None:
    text = f"""HloModule l, is_scheduled=true, num_partitions=2
{ADD}
%cond (s: (s32[], f32[8])) -> pred[] {{
  %s = (s32[], f32[8]{{0}}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}}

%body (t: (s32[], f32[8])) -> (s32[], f32[8]) {{
  %t = (s32[], f32[8]{{0}}) parameter(0)
  %j = s32[] get-tuple-element(%t), index=0
  %v = f32[8]{{0}} get-tuple-element(%t), index=1
  %step = f32[8]{{0}} all-reduce(%v), channel_id=3, replica_groups={{{{0,1}}}}, use_global_device_ids=true, to_apply=%add
  %one = s32[] constant(1)
  %k = s32[] add(%j, %one)
  ROOT %u = (s32[], f32[8]{{0}}) tuple(%k, %step)
}}

%helper (h: f32[8]) -> f32[8] {{
  %h = f32[8]{{0}} parameter(0)
  ROOT %inner = f32[8]{{0}} all-reduce(%h), channel_id=4, replica_groups={{{{0,1}}}}, use_global_device_ids=true, to_apply=%add
}}

ENTRY %main (p: f32[8]) -> f32[8] {{
  %p = f32[8]{{0}} parameter(0)
  %start = f32[8]{{0}} all-reduce-start(%p), channel_id=1, replica_groups={{{{0,1}}}}, use_global_device_ids=true, to_apply=%add
  %done = f32[8]{{0}} all-reduce-done(%start)
  %called = f32[8]{{0}} call(%done), to_apply=%helper
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]{{0}}) tuple(%zero, %called)
  %w = (s32[], f32[8]{{0}}) while(%init), condition=%cond, body=%body
  ROOT %out = f32[8]{{0}} get-tuple-element(%w), index=1
}}
"""
    order = mt.order.issue_order(mt.hlo.parse_module(text), 0)
    # The start, never its done; the called computation where the call stands; the loop
    # body once per iteration.
    assert _names(order) == ["start", "inner", "step", "step", "step"]
    assert [i.opcode for i in order] == ["all-reduce-start", *["all-reduce"] * 4]


def test_async_wrappers_of_no_collective_are_walked_into(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # An async fusion, and an async computation issuing two all-reduces (its root a tuple):
    # neither wrapper is a collective; the walk issues what they call where they stand.
    text = f"""HloModule w, is_scheduled=true, num_partitions=2
{ADD}
%fused (f: f32[8]) -> f32[8] {{
  %f = f32[8]{{0}} parameter(0)
  ROOT %n = f32[8]{{0}} negate(%f)
}}

%two (q: f32[8]) -> (f32[8], f32[8]) {{
  %q = f32[8]{{0}} parameter(0)
  %x = f32[8]{{0}} all-reduce(%q), channel_id=2, replica_groups={{{{0,1}}}}, use_global_device_ids=true, to_apply=%add
  %y = f32[8]{{0}} all-reduce(%x), channel_id=3, replica_groups={{{{0,1}}}}, use_global_device_ids=true, to_apply=%add
  ROOT %t = (f32[8]{{0}}, f32[8]{{0}}) tuple(%x, %y)
}}

ENTRY %main (p: f32[8]) -> f32[8] {{
  %p = f32[8]{{0}} parameter(0)
  %fs = ((f32[8]{{0}}), f32[8]{{0}}, s32[]) async-start(%p), calls=%fused
  %fd = f32[8]{{0}} async-done(%fs)
  %ts = ((f32[8]{{0}}), (f32[8]{{0}}, f32[8]{{0}}), s32[]) async-start(%fd), calls=%two
  %td = (f32[8]{{0}}, f32[8]{{0}}) async-done(%ts)
  %g = f32[8]{{0}} get-tuple-element(%td), index=1
  ROOT %ar = f32[8]{{0}} all-reduce(%g), channel_id=1, replica_groups={{{{0,1}}}}, use_global_device_ids=true, to_apply=%add
}}
"""
    module = mt.hlo.parse_module(text)
    assert [c.name for c in module.collectives] == ["x", "y", "ar"]
    assert all(module.entry.by_name[n].collective is None for n in ("fs", "fd", "ts", "td"))
    assert _names(mt.order.issue_order(module, 0)) == ["x", "y", "ar"]
    path = tmp_path / "wrappers.hlo"
    path.write_text(text)
    with pytest.raises(SystemExit) as exited:
        main(["check", str(path)])
    assert exited.value.code == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"{path}: 3 collectives verified, no findings (replica_count=1, num_partitions=2)")


def test_a_device_that_is_not_placed_is_refused() -> None:
    ring = module(all_reduce("sum", "{{0,1}}"), 2)
    with pytest.raises(mt.InvalidArgumentError, match=(
            r"device 5 is not in the device assignment of module m \(2 devices\)")):
        mt.order.issue_order(ring, 5)
    permuted = mt.order.issue_order(ring, 1, [[1, 0]])
    assert _names(permuted) == ["sum"]
    with pytest.raises(mt.InvalidArgumentError, match="device_assignment is 1x3"):
        mt.order.issue_order(ring, 1, [[0, 1, 2]])


def test_many_devices_from_one_walk() -> None:
    computed = _conditional("  %two = u32[] constant(2)\n  %rem = u32[] remainder(%pid, %two)\n"
                            "  %branch = s32[] convert(%rem)")
    orders = mt.order.issue_orders(computed)
    assert {d: _names(o) for d, o in orders.items()} == {
        0: ["ar0"], 1: ["ar1"], 2: ["ar0"], 3: ["ar1"]}
    assert {d: _names(o) for d, o in mt.order.issue_orders(computed, [3, 0]).items()} == {
        3: ["ar1"], 0: ["ar0"]}
    with pytest.raises(mt.InvalidArgumentError, match="device 9 is not in the device"):
        mt.order.issue_orders(computed, [0, 9])


_PICK = """%pick (x: u32[]) -> (s32[], s32[]) {
  %x = u32[] parameter(0)
  %iota = s32[4]{0} iota(), iota_dimension=0
  %one = u32[] constant(1)
  %shr = u32[] shift-right-logical(%x, %one)
  %c = s32[] convert(%shr)
  %ds = s32[1]{0} dynamic-slice(%iota, %c), dynamic_slice_sizes={1}
  %bc = s32[] bitcast(%ds)
  ROOT %t = (s32[], s32[]) tuple(%c, %bc)
}

%fused (f: u32[]) -> s32[] {
  %f = u32[] parameter(0)
  %b = u32[2]{0} broadcast(%f), dimensions={}
  %s = u32[1]{0} slice(%b), slice={[1:2]}
  %r = u32[] reshape(%s)
  %two = u32[] constant(2)
  %m = u32[] remainder(%r, %two)
  ROOT %cv = s32[] convert(%m)
}
"""


def test_selectors_through_tables_calls_tuples_and_fusions() -> None:
    # As XLA emits on CPU: a per-device table read with dynamic-slice, a call returning a
    # tuple, a fusion whose parameter is bound to partition-id.
    table = _conditional("  %table = s32[4]{0} constant({1, 0, 1, 0})\n"
                         "  %at = s32[] convert(%pid)\n"
                         "  %slot = s32[1]{0} dynamic-slice(%table, %at), dynamic_slice_sizes={1}\n"
                         "  %branch = s32[] reshape(%slot)")
    assert [_names(mt.order.issue_order(table, d)) for d in range(4)] == [
        ["ar1"], ["ar0"], ["ar1"], ["ar0"]]
    called = _conditional("  %called = (s32[], s32[]) call(%pid), to_apply=%pick\n"
                          "  %branch = s32[] get-tuple-element(%called), index=1", _PICK)
    assert [_names(mt.order.issue_order(called, d)) for d in range(4)] == [
        ["ar0"], ["ar0"], ["ar1"], ["ar1"]]
    fused = _conditional("  %branch = s32[] fusion(%pid), kind=kLoop, calls=%fused", _PICK)
    orders = mt.order.issue_orders(fused)
    assert [_names(orders[d]) for d in range(4)] == [["ar0"], ["ar1"], ["ar0"], ["ar1"]]
    assert all(order.unresolved == [] for order in orders.values())


def test_an_unresolved_selector_is_said_by_order(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "unknown.hlo"
    path.write_text(_conditional_text("  %branch = s32[] copy(%q)"))
    with pytest.raises(SystemExit):
        main(["order", str(path)])
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"note: {UNKNOWN_NOTE}"


def test_replay_says_which_branches_it_could_not_resolve(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    unknown = _conditional("  %branch = s32[] copy(%q)")
    note = UNKNOWN_NOTE
    assert mt.order.issue_orders(unknown).unresolved == [note]
    assert mt.runtime.Replay(unknown).unresolved == [note]
    path = tmp_path / "unknown.hlo"
    path.write_text(_conditional_text("  %branch = s32[] copy(%q)"))
    with pytest.raises(SystemExit) as done:
        main(["replay", str(path), "--timeout", "20"])
    assert done.value.code == 0
    assert f"note: {note}" in capsys.readouterr().out.replace("\n", " ")
