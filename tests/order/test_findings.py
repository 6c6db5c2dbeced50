"""Hand-built modules for every finding type: exact devices, instructions and messages (one
representative message per type is a golden file, tests/golden/order-<type>.txt)."""

from __future__ import annotations

import meshtopo as mt

from ._cases import ADD, all_reduce, module

ALL = "{{0,1,2,3}}"
PAIRS = "{{0,1},{2,3}}"


def _only(report: mt.order.Report) -> mt.order.Finding:
    assert len(report.findings) == 1, report.findings
    return report.findings[0]


def test_two_devices_in_opposite_order_deadlock() -> None:
    forward = module(all_reduce("a", ALL) + all_reduce("b", PAIRS, channel=2), 4)
    backward = module(all_reduce("b", PAIRS, channel=2) + all_reduce("a", ALL), 4)
    report = mt.order.analyze([(forward, [0]), (backward, [1]), (forward, [2, 3])])
    finding = _only(report)
    assert finding.type == "deadlock"
    assert finding.devices == (0, 1)
    assert finding.instructions == ("a", "b")
    # Its message: tests/golden/order-deadlock.txt.


def test_three_clique_cycle() -> None:
    a = all_reduce("a", "{{0,1},{2}}", channel=1)
    b = all_reduce("b", "{{1,2},{0}}", channel=2)
    c = all_reduce("c", "{{2,0},{1}}", channel=3)
    report = mt.order.analyze([(module(a + c, 3), [0]), (module(b + a, 3), [1]),
                               (module(c + b, 3), [2])])
    finding = _only(report)
    assert finding.type == "deadlock"
    assert finding.devices == (0, 1, 2)
    assert finding.instructions == ("a", "b", "c")
    assert "across 3 cliques" in finding.message
    assert "device 2 waits in c (line 9) on clique [2,0] for device 0" in finding.message


def test_same_order_everywhere_is_clean() -> None:
    forward = module(all_reduce("a", ALL) + all_reduce("b", PAIRS, channel=2), 4)
    assert mt.order.analyze([(forward, [0, 1]), (forward, [2, 3])]).findings == []
    assert mt.order.analyze(forward).findings == []


CONDITIONAL = """HloModule cond, num_partitions=4
""" + ADD + """%then (t: f32[8]) -> f32[8] {
  %t = f32[8]{0} parameter(0)
  ROOT %ar = f32[8]{0} all-reduce(%t), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%add
}
%else (e: f32[8]) -> f32[8] {
  ROOT %e = f32[8]{0} parameter(0)
}
ENTRY %main (p: f32[8], q: pred[]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %q = pred[] parameter(1)
  %pid = u32[] partition-id()
  %zero = u32[] constant(0)
  %first = pred[] compare(%pid, %zero), direction=EQ
  %which = pred[] PREDICATE
  ROOT %c = f32[8]{0} conditional(%which, %p, %p), true_computation=%then, false_computation=%else
}
"""


def test_conditional_on_partition_id_leaves_the_others_missing() -> None:
    report = mt.order.analyze(mt.hlo.parse_module(CONDITIONAL.replace("PREDICATE", "copy(%first)")))
    finding = _only(report)
    assert (finding.type, finding.devices, finding.instructions, finding.waiting) == (
        "missing", (1, 2, 3), ("ar",), (0,))
    # Its message: tests/golden/order-missing.txt.


def test_conditional_on_a_per_device_parameter_may_diverge() -> None:
    report = mt.order.analyze(mt.hlo.parse_module(CONDITIONAL.replace("PREDICATE", "copy(%q)")))
    finding = _only(report)
    assert (finding.type, finding.devices, finding.instructions) == (
        "may_diverge", (0, 1, 2, 3), ("c", "ar"))
    # Its message: tests/golden/order-may_diverge.txt.
    # Every branch is listed, and the note says why.
    assert [a.entry.branches for a in report.schedule(1)] == [(("c", 0),)]
    assert report.notes == [
        "conditional c (line 21): its predicate depends on data (parameter q, line 16); every "
        "branch is entered, in branch order; it is not uniform within group [0,1,2,3] of ar, "
        "so members can disagree (a may_diverge finding)"]


def test_conditional_on_a_replicated_parameter_is_clean() -> None:
    text = CONDITIONAL.replace("PREDICATE", "copy(%q)").replace(
        "%q = pred[] parameter(1)", "%q = pred[] parameter(1), sharding={replicated}")
    report = mt.order.analyze(mt.hlo.parse_module(text))
    assert report.findings == []
    assert report.notes[0].endswith(
        "it is uniform within every group its collectives use, so members agree")


def test_conditional_on_partition_id_that_every_member_agrees_on_is_clean() -> None:
    # partition-id >= 0 holds everywhere: uniform, so not a divergence.
    text = CONDITIONAL.replace("direction=EQ", "direction=GE").replace(
        "PREDICATE", "copy(%first)")
    assert mt.order.analyze(mt.hlo.parse_module(text)).findings == []


def _permute(name: str, pairs: str) -> str:
    return (f"  %{name} = f32[8]{{0}} collective-permute(%p), channel_id=5, "
            f"source_target_pairs={pairs}\n")


def test_permute_ring_with_a_missing_sender() -> None:
    ring = module(_permute("cp", "{{0,1},{1,2},{2,3},{3,0}}"), 4)
    without = module("", 4)
    finding = _only(mt.order.analyze([(ring, [0, 1, 2]), (without, [3])]))
    assert finding.type == "missing"
    assert finding.devices == (3,)
    assert finding.instructions == ("cp",)
    assert finding.message == (
        "device 3 never arrives at cp (line 9) (collective-permute, f32[8]{0}); "
        "devices [0, 2] wait there forever.")


SEND = """HloModule sr, num_partitions=2
ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %tok = token[] after-all()
  %send = (f32[8]{0}, u32[], token[]) send(%p, %tok), channel_id=3, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  %send-done = token[] send-done(%send), channel_id=3
RECV
  ROOT %out = f32[8]{0} copy(%p)
}
"""
RECV = """  %recv = (f32[8]{0}, u32[], token[]) recv(%tok), channel_id=3, frontend_attributes={_xla_send_recv_source_target_pairs="{{0,1}}"}
  %recv-done = (f32[8]{0}, token[]) recv-done(%recv), channel_id=3"""


def test_send_without_its_recv() -> None:
    finding = _only(mt.order.analyze(mt.hlo.parse_module(SEND.replace("RECV\n", ""))))
    assert finding.type == "missing"
    assert finding.devices == (1,)
    assert finding.instructions == ("send",)


def test_send_with_its_recv_is_clean() -> None:
    report = mt.order.analyze(mt.hlo.parse_module(SEND.replace("RECV", RECV)))
    assert report.findings == []
    assert [(a.entry.name, a.clique, a.rank) for a in report.schedule(1)] == [("recv", (0, 1), 1)]


def test_mismatched_shape_and_dtype_at_one_position() -> None:
    good = module(all_reduce("a", ALL), 4)
    wide = module(all_reduce("wide", ALL, shape="f32[16]{0}"), 4, shape="f32[16]{0}")
    finding = _only(mt.order.analyze([(good, [0, 1, 2]), (wide, [3])]))
    assert finding.type == "mismatch"
    assert finding.devices == (0, 1, 2, 3)
    assert finding.instructions == ("a", "wide")
    assert finding.culprits == (3,)
    # Its message: tests/golden/order-mismatch.txt.
    half = module(all_reduce("half", ALL, shape="bf16[8]{0}"), 4, shape="bf16[8]{0}")
    finding = _only(mt.order.analyze([(good, [0, 1]), (half, [2, 3])]))
    assert finding.culprits == ()
    assert "they differ in dtype, size" in finding.message
    assert finding.message.endswith("It is a tie: no majority to blame.")


def _pipeline(pairs: str, groups: str) -> mt.hlo.Module:
    body = _permute("send_activations", pairs) + all_reduce("grads", groups, channel=7)
    return module(body, 4)


def test_mpmd_pipeline_whose_stages_agree() -> None:
    stage0 = _pipeline("{{0,2},{1,3}}", "{{0,1},{2,3}}")
    stage1 = _pipeline("{{0,2},{1,3}}", "[2,2]<=[4]")  # the same groups, iota-spelled
    report = mt.order.analyze([(stage0, [0, 1]), (stage1, [2, 3])])
    assert report.findings == []
    assert [(a.entry.name, a.clique) for a in report.schedule(2)] == [
        ("send_activations", (0, 2)), ("grads", (2, 3))]


def test_mpmd_pipeline_whose_stages_name_different_groups() -> None:
    stage0 = _pipeline("{{0,2},{1,3}}", "{{0,1},{2,3}}")
    stage1 = _pipeline("{{0,3},{1,2}}", "{{0,1},{2,3}}")
    finding = _only(mt.order.analyze([(stage0, [0, 1]), (stage1, [2, 3])]))
    assert finding.type == "group_disagreement"
    assert finding.devices == (0, 1, 2, 3)
    assert finding.instructions == ("send_activations", "send_activations")
    # Its message: tests/golden/order-group_disagreement.txt.


def _async(first: str, second: str) -> str:
    lines = {
        "x": "  %x = f32[8]{0} all-reduce-start(%p), channel_id=1, replica_groups={{0,1,2,3}}, "
             "use_global_device_ids=true, to_apply=%add\n",
        "y": "  %y = f32[8]{0} all-reduce-start(%p), channel_id=2, replica_groups={{0,2},{1,3}}, "
             "use_global_device_ids=true, to_apply=%add\n",
    }
    done = {"x": "  %xd = f32[8]{0} all-reduce-done(%x)\n",
            "y": "  %yd = f32[8]{0} all-reduce-done(%y)\n"}
    return lines[first] + lines[second] + done[first] + done[second]


def test_async_pairs_that_overlap_safely() -> None:
    report = mt.order.analyze(module(_async("x", "y"), 4, scheduled=True))
    assert report.findings == []
    entries = [a.entry for a in report.schedule(0)]
    assert [(e.name, e.done) for e in entries] == [("x", "xd"), ("y", "yd")]
    same = module(_async("x", "y"), 4, scheduled=True)
    assert mt.order.analyze([(same, [0, 1]), (same, [2, 3])]).findings == []


def test_async_pairs_that_overlap_unsafely() -> None:
    report = mt.order.analyze([(module(_async("x", "y"), 4, scheduled=True), [0, 1]),
                               (module(_async("y", "x"), 4, scheduled=True), [2, 3])])
    finding = _only(report)
    assert finding.type == "async_overlap"
    assert finding.devices == (0, 1, 2, 3)
    assert finding.instructions == ("x", "y")
    # Its message: tests/golden/order-async_overlap.txt.


MAX = """%max (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %m = f32[] maximum(%x, %y)
}
"""


def test_mismatched_reduction() -> None:
    total = module(all_reduce("total", ALL), 4)
    text = (f"HloModule peak, num_partitions=4\n{ADD}{MAX}ENTRY %main (p: f32[8]) -> f32[8] {{\n"
            "  %p = f32[8]{0} parameter(0)\n"
            "  ROOT %peak = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1,2,3}}, "
            "use_global_device_ids=true, to_apply=%max\n}\n")
    finding = _only(mt.order.analyze([(total, [0, 1, 3]), (mt.hlo.parse_module(text), [2])]))
    assert (finding.type, finding.instructions, finding.culprits) == (
        "mismatch", ("total", "peak"), (2,))
    assert "they differ in reduction," in finding.message


def _gather(name: str, operand: int) -> str:
    return (f"  %{name} = f32[{4 * operand}]{{0}} all-gather(%p), channel_id=1, "
            f"replica_groups={{{{0,1,2,3}}}}, dimensions={{0}}, use_global_device_ids=true\n")


def test_all_gather_of_another_size() -> None:
    small = module(_gather("gather", 8), 4)
    large = module(_gather("gather", 16), 4, shape="f32[16]{0}")
    finding = _only(mt.order.analyze([(small, [0, 1, 2]), (large, [3])]))
    assert (finding.type, finding.devices, finding.culprits) == ("mismatch", (0, 1, 2, 3), (3,))
    assert "(all-gather, f32[32]{0})" in finding.message
    assert "(all-gather, f32[64]{0})" in finding.message


def test_loop_whose_trip_count_depends_on_the_partition_id() -> None:
    from .test_bounds import LOOP

    text = (LOOP.replace(", BACKEND", "")
            .replace("%n = s32[] constant(2147483647)",
                     "%pid = u32[] partition-id()\n  %n = s32[] convert(%pid)")
            .replace("ROOT %t = (s32[], f32[8]{0}) tuple(%j, %ar)",
                     "%one = s32[] constant(1)\n  %k = s32[] add(%j, %one)\n"
                     "  ROOT %t = (s32[], f32[8]{0}) tuple(%k, %ar)"))
    # Partition p runs p iterations: device 0 none, so 1..3 wait for it in the first one.
    finding = _only(mt.order.analyze(mt.hlo.parse_module(text)))
    assert (finding.type, finding.devices, finding.instructions, finding.waiting) == (
        "missing", (0,), ("ar",), (1, 2, 3))
    assert finding.message == (
        "device 0 never arrives at ar (line 18, iteration 0 of w) (all-reduce, f32[8]{0}, "
        "sum); devices [1, 2, 3] wait there forever.")
    uniform = text.replace("%n = s32[] convert(%pid)", "%n = s32[] constant(4)")
    assert mt.order.analyze(mt.hlo.parse_module(uniform)).findings == []


def test_mpmd_programs_that_name_different_all_reduce_groups() -> None:
    pairs = module(all_reduce("sum", PAIRS), 4)
    everyone = module(all_reduce("sum", ALL), 4)
    finding = _only(mt.order.analyze([(pairs, [0, 1]), (everyone, [2, 3])]))
    assert (finding.type, finding.devices, finding.instructions) == (
        "group_disagreement", (0, 1, 2, 3), ("sum", "sum"))
    assert finding.message.startswith(
        "program 0 issues sum (line 9) over {{0,1},{2,3}} but program 1 issues sum (line 9) "
        "over {{0,1,2,3}}")


def test_mpmd_programs_that_meet_with_different_group_lists() -> None:
    # Devices 0,1,2 (program 0) and 3 (program 1) meet on [0,1,2,3] but name different group
    # lists: a mismatch there. Devices 4,5 wait on [4,5,6,7] for 6,7, whom program 1 puts in
    # [6,7]: a group disagreement.
    halves = module(all_reduce("sum", "{{0,1,2,3},{4,5,6,7}}"), 8)
    quarters = module(all_reduce("sum", "{{0,1,2,3},{4,5},{6,7}}"), 8)
    report = mt.order.analyze([(halves, [0, 1, 2, 4, 5]), (quarters, [3, 6, 7])])
    assert [(f.type, f.devices, f.instructions, f.culprits) for f in report.findings] == [
        ("mismatch", (0, 1, 2, 3), ("sum",), (3,)),
        ("group_disagreement", (4, 5, 6, 7), ("sum", "sum"), ())]
    assert report.findings[0].message == (
        "Position 0 on clique [0,1,2,3]: devices 0,1,2 issue sum (line 9) (all-reduce, "
        "f32[8]{0}, sum) over {{0,1,2,3},{4,5,6,7}}; device 3 issues sum (line 9) (all-reduce, "
        "f32[8]{0}, sum) over {{0,1,2,3},{4,5},{6,7}}; they differ in groups, so the rendezvous "
        "completes between collectives that name different group lists. Off the majority: "
        "devices [3].")


def test_mpmd_programs_that_spell_the_same_groups_differently_agree() -> None:
    explicit = module(all_reduce("sum", "{{0,1,2,3},{4,5,6,7}}"), 8)
    for spelled in ("[2,4]<=[8]", "{{4,5,6,7},{0,1,2,3}}"):
        other = module(all_reduce("sum", spelled), 8)
        assert mt.order.analyze([(explicit, [0, 1, 2, 4, 5]), (other, [3, 6, 7])]).findings == []


def _async_permutes(first: str, second: str) -> str:
    """Two async permutes in flight together: x sends 0->1 and 2->3, y sends 1->0 and 3->2."""
    pairs = {"x": "{{0,1},{2,3}}", "y": "{{1,0},{3,2}}"}
    starts = "".join(
        f"  %{n} = (f32[8]{{0}}, f32[8]{{0}}) collective-permute-start(%p), channel_id="
        f"{3 if n == 'x' else 4}, source_target_pairs={pairs[n]}\n" for n in (first, second))
    dones = "".join(f"  %{n}d = f32[8]{{0}} collective-permute-done(%{n})\n"
                    for n in (first, second))
    return starts + dones


def test_async_permutes_that_overlap_safely() -> None:
    same = module(_async_permutes("x", "y"), 4, scheduled=True)
    report = mt.order.analyze([(same, [0, 2]), (same, [1, 3])])
    assert report.findings == []
    assert [(a.entry.name, a.entry.done, a.clique) for a in report.schedule(1)] == [
        ("x", "xd", (0, 1)), ("y", "yd", (1, 0))]


def test_async_permutes_that_overlap_unsafely() -> None:
    # Devices 0 and 2 start x (their sends) before y (their recvs); 1 and 3 start y (their
    # sends) first: the pairs [0,1] and [1,0] see the two permutes in opposite orders.
    report = mt.order.analyze([(module(_async_permutes("x", "y"), 4, scheduled=True), [0, 2]),
                               (module(_async_permutes("y", "x"), 4, scheduled=True), [1, 3])])
    finding = _only(report)
    assert (finding.type, finding.devices, finding.instructions) == (
        "async_overlap", (0, 1, 2, 3), ("x", "y"))
    assert finding.message == (
        "devices [0, 2] start x (line 9) then y (line 10) while devices [1, 3] start y "
        "(line 9) then x (line 10); both are in flight at once on different cliques, and "
        "communicators used concurrently must see their collectives in the same order on every "
        "shared device (else they can hang).")


def _guarded(sharding: str, guarded: str) -> str:
    """A conditional on a per-partition flag (entry parameter ``q`` with ``sharding``) whose
    true branch all-reduces over ``guarded``."""
    return CONDITIONAL.replace("PREDICATE", "copy(%q)").replace(
        "%q = pred[] parameter(1)", f"%q = pred[] parameter(1), sharding={sharding}").replace(
        "replica_groups={{0,1,2,3}}", f"replica_groups={guarded}")


def test_a_flag_copied_within_groups_guards_those_groups_only() -> None:
    # Partitions {0,1} hold one copy of q, {2,3} another: they agree within {0,1},{2,3}.
    sharding = "{devices=[2,2]<=[4] last_tile_dim_replicate}"
    same = mt.order.analyze(mt.hlo.parse_module(_guarded(sharding, "{{0,1},{2,3}}")))
    assert same.findings == []
    across = mt.order.analyze(mt.hlo.parse_module(_guarded(sharding, "{{0,2},{1,3}}")))
    finding = _only(across)
    assert (finding.type, finding.instructions[0]) == ("may_diverge", "c")
    assert "not uniform over group [0,2] of ar (line 9)" in finding.message
    assert finding.message.endswith(
        "If devices [0,1] take branch 0 and devices [2,3] branch 1, the job hangs: "
        "devices [2, 3] never arrive at ar (line 9, branch 0 of c) (all-reduce, f32[8]{0}, "
        "sum); devices [0, 1] wait there forever.")


# A loop that all-reduces over {{0,1},{2,3}} while a flag says so: the flag is the result of
# an all-reduce over GROUPS, so it is uniform within each of those groups.
DATA_LOOP = """HloModule dataloop, num_partitions=4
""" + ADD + """%cond (s: (f32[8], pred[])) -> pred[] {
  %s = (f32[8]{0}, pred[]) parameter(0)
  ROOT %go = pred[] get-tuple-element(%s), index=1
}
%body (t: (f32[8], pred[])) -> (f32[8], pred[]) {
  %t = (f32[8]{0}, pred[]) parameter(0)
  %v = f32[8]{0} get-tuple-element(%t), index=0
  %ar = f32[8]{0} all-reduce(%v), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add
  %flag = f32[] reduce(%ar, %zero), dimensions={0}, to_apply=%add
  %zero = f32[] constant(0)
  %agreed = f32[] all-reduce(%flag), channel_id=2, replica_groups=GROUPS, use_global_device_ids=true, to_apply=%add
  %more = pred[] compare(%agreed, %zero), direction=GT
  ROOT %next = (f32[8]{0}, pred[]) tuple(%ar, %more)
}
ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %yes = pred[] constant(true)
  %init = (f32[8]{0}, pred[]) tuple(%p, %yes)
  %w = (f32[8]{0}, pred[]) while(%init), condition=%cond, body=%body
  ROOT %out = f32[8]{0} get-tuple-element(%w), index=0
}
"""


def test_a_loop_on_data_agreed_over_its_groups_is_clean() -> None:
    text = DATA_LOOP.replace("GROUPS", "{{0,1},{2,3}}")
    report = mt.order.analyze(mt.hlo.parse_module(text.replace(
        "  %zero = f32[] constant(0)\n", "").replace("%ar = f32", "%zero = f32[] constant(0)\n"
                                                    "  %ar = f32")))
    assert report.findings == []
    (note,) = report.notes
    assert note.startswith("while w (line ")
    assert "its trip count depends on data (all-reduce agreed, line " in note
    assert note.endswith("one iteration of its body is matched; it is uniform within every "
                         "group its collectives use, so members agree")


def test_a_loop_on_data_agreed_over_other_groups_may_diverge() -> None:
    text = DATA_LOOP.replace("GROUPS", "{{0,2},{1,3}}").replace(
        "  %zero = f32[] constant(0)\n", "").replace(
        "%ar = f32", "%zero = f32[] constant(0)\n  %ar = f32")
    finding = _only(mt.order.analyze(mt.hlo.parse_module(text)))
    assert (finding.type, finding.instructions[0]) == ("may_diverge", "w")
    assert finding.devices == (0, 1, 2, 3)
    assert finding.message == (
        "while w (line 25) may diverge: its trip count, get-tuple-element go (line 9), depends "
        "on data (all-reduce agreed, line 17) that is not uniform over group [0,1] of ar (line "
        "15), so its members can disagree at run time. If devices [0,2] run one iteration and "
        "devices [1,3] none, the job hangs: devices [1, 3] never arrive at ar (line 15, "
        "iteration 0 of w) (all-reduce, f32[8]{0}, sum); devices [0, 2] wait there forever.")


def test_a_name_repeated_in_another_branch_is_another_instruction() -> None:
    """XLA's tests often reuse a name in different computations: branch 1's non-collective
    %a is not branch 0's all-reduce %a."""
    text = """HloModule repeated, num_partitions=2
""" + ADD + """%b0 (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %a = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add
}
%b1 (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %a = f32[8]{0} negate(%p)
}
ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %pid = u32[] partition-id()
  %i = s32[] convert(%pid)
  ROOT %c = f32[8]{0} conditional(%i, %p, %p), branch_computations={%b0, %b1}
}
"""
    module = mt.hlo.parse_module(text)
    assert [[i.name for i in mt.order.issue_order(module, d)] for d in (0, 1)] == [["a"], []]
    finding = _only(mt.order.analyze(module))
    assert (finding.type, finding.devices, finding.waiting) == ("missing", (1,), (0,))


ASYNC = """HloModule asyncs, num_partitions=4, is_scheduled=true
""" + ADD + """ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  FIRST
  SECOND
  %a2a-done = f32[8]{0} all-to-all-done(%a2a-start)
  %rs-done = f32[2]{0} reduce-scatter-done(%rs-start)
  ROOT %out = f32[8]{0} copy(%a2a-done)
}
"""
RS = ("%rs-start = ((f32[8]{0}), f32[2]{0}) reduce-scatter-start(%p), channel_id=1, "
      "replica_groups={{0,1,2,3}}, use_global_device_ids=true, dimensions={0}, to_apply=%add")
A2A = ("%a2a-start = ((f32[8]{0}), f32[8]{0}) all-to-all-start(%p), channel_id=2, "
       "replica_groups={{0,1,2,3}}, dimensions={0}")


def test_async_shorthand_starts_where_written_and_waits_at_its_done() -> None:
    """XLA's <op>-start/<op>-done for any collective: an async collective like the others."""
    forward = mt.hlo.parse_module(ASYNC.replace("FIRST", RS).replace("SECOND", A2A))
    report = mt.order.analyze(forward)
    assert report.findings == []
    assert [(a.entry.name, a.entry.opcode, a.entry.done) for a in report.schedule(0)] == [
        ("rs-start", "reduce-scatter", "rs-done"), ("a2a-start", "all-to-all", "a2a-done")]
    # Started in opposite orders on one clique: arrival order pairs each with the other.
    backward = mt.hlo.parse_module(ASYNC.replace("FIRST", A2A).replace("SECOND", RS))
    findings = mt.order.analyze([(forward, [0, 1]), (backward, [2, 3])]).findings
    assert [(f.type, set(f.instructions)) for f in findings] == [
        ("mismatch", {"rs-start", "a2a-start"})] * 2
    assert findings[0].message.startswith(
        "Position 0 on clique [0,1,2,3]: devices 0,1 issue rs-start (line 9) (reduce-scatter, "
        "f32[2]{0}, sum); devices 2,3 issue a2a-start (line 9) (all-to-all, f32[8]{0})")
