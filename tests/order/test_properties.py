"""Properties: an SPMD program's shared schedule is what the per-device replay finds, and
every device of one program sees every clique in one order (no findings)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import meshtopo as mt

from ._cases import all_reduce, module

GROUPS = ["{{0,1,2,3,4,5,6,7}}", "[4,2]<=[8]", "[2,4]<=[8]", "[4,2]<=[2,4]T(1,0)",
          "[2,4]<=[4,2]T(1,0)", "{{0,3},{1,2},{4,7},{5,6}}", "{{7,6,5,4,3,2,1,0}}"]
RINGS = ["{{0,1},{1,2},{2,3},{3,0},{4,5},{5,6},{6,7},{7,4}}", "{{0,4},{4,0}}",
         "{{1,0},{2,1},{3,2},{0,3}}"]


def _line(index: int, choice: tuple[str, int]) -> str:
    kind, which = choice
    if kind == "permute":
        return (f"  %cp{index} = f32[8]{{0}} collective-permute(%p), channel_id={index + 1}, "
                f"source_target_pairs={RINGS[which % len(RINGS)]}\n")
    return all_reduce(f"ar{index}", GROUPS[which % len(GROUPS)], channel=index + 1)


# Programs of up to 12 all-reduces and permutes, each on one of the test's group lists.
PROGRAMS = st.lists(st.tuples(st.sampled_from(["all-reduce", "permute"]), st.integers(0, 20)),
                    min_size=1, max_size=12)


@settings(max_examples=40)
@given(PROGRAMS)
def test_shared_schedule_is_the_replay(choices: list[tuple[str, int]]) -> None:
    target = module("".join(_line(i, c) for i, c in enumerate(choices)), 8)
    shared = mt.order.analyze(target)
    replay = mt.order.analyze([(target, list(range(8)))])
    assert shared.findings == [] and replay.findings == []
    for device in range(8):
        ours = [(a.entry.name, a.clique, a.rank, a.position) for a in shared.schedule(device)]
        theirs = [(a.entry.name, a.clique, a.rank, a.position) for a in replay.schedule(device)]
        assert sorted(ours) == sorted(theirs)
        assert [a[0] for a in ours] == [a[0] for a in theirs]


@settings(max_examples=30)
@given(PROGRAMS)
def test_issue_order_is_the_schedule(choices: list[tuple[str, int]]) -> None:
    # Without conditionals every device issues every collective, in program order; its
    # schedule lists, in that order, the ones whose groups or pairs hold it (a permute once
    # although it arrives as sender and as receiver). One walk gives every device's order.
    target = module("".join(_line(i, c) for i, c in enumerate(choices)), 8)
    report = mt.order.analyze(target)
    orders = mt.order.issue_orders(target)
    program = [f"{'cp' if kind == 'permute' else 'ar'}{i}" for i, (kind, _) in enumerate(choices)]
    for device in range(8):
        names = [i.name for i in mt.order.issue_order(target, device)]
        assert names == [i.name for i in orders[device]] == program
        scheduled = list(dict.fromkeys(a.entry.name for a in report.schedule(device)))
        assert scheduled == [n for n in names if n in scheduled]
