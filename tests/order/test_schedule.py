"""A device's schedule of a program that shares one order, read as a sequence: its length,
items, slices and the arrivals' positions where two lists meet on one clique or a device sends
on several pairs of one permute."""

from __future__ import annotations

import pytest

import meshtopo as mt

from ._cases import all_reduce, module


def _permute(name: str, pairs: str, channel: int) -> str:
    return (f"  %{name} = f32[8]{{0}} collective-permute(%p), channel_id={channel}, "
            f"source_target_pairs={pairs}\n")


def test_one_clique_in_two_encodings_counts_positions_together() -> None:
    # {{0,1},{2,3}} and [2,2]<=[4] are the same groups: device 2's three all-reduces meet on
    # clique (2, 3) at positions 0, 1 and 2; the whole-world one is another clique.
    body = (all_reduce("a", "{{0,1},{2,3}}", channel=1) + all_reduce("b", "[2,2]<=[4]", channel=2)
            + all_reduce("w", "{{0,1,2,3}}", channel=3)
            + all_reduce("c", "{{1,0},{3,2}}", channel=4))
    schedule = mt.order.analyze(module(body, 4)).schedule(2)
    assert len(schedule) == 4
    assert [(a.entry.name, a.clique, a.rank, a.position, a.step, a.end) for a in schedule] == [
        ("a", (2, 3), 0, 0, 0, 1), ("b", (2, 3), 0, 1, 2, 3), ("w", (0, 1, 2, 3), 2, 0, 4, 5),
        ("c", (3, 2), 1, 0, 6, 7)]
    assert schedule[-1].entry.name == "c" and [a.entry.name for a in schedule[1:3]] == ["b", "w"]
    with pytest.raises(IndexError):
        schedule[4]


def test_a_device_sending_on_two_pairs_of_one_permute() -> None:
    # Device 0 is the source of two pairs: it arrives on both, in written order, then
    # receives on (3, 0); device 1 only receives; device 2 receives, then sends on (2, 3).
    body = _permute("cp", "{{0,1},{0,2},{2,3},{3,0}}", 1) + _permute("cq", "{{0,1},{0,2}}", 2)
    report = mt.order.analyze(module(body, 4))
    assert [(a.entry.name, a.clique, a.rank, a.position) for a in report.schedule(0)] == [
        ("cp", (0, 1), 0, 0), ("cp", (0, 2), 0, 0), ("cp", (3, 0), 1, 0),
        ("cq", (0, 1), 0, 1), ("cq", (0, 2), 0, 1)]
    assert [(a.entry.name, a.clique, a.rank) for a in report.schedule(1)] == [
        ("cp", (0, 1), 1), ("cq", (0, 1), 1)]
    assert [(a.clique, a.rank) for a in report.schedule(2)] == [
        ((2, 3), 0), ((0, 2), 1), ((0, 2), 1)]
    assert report.schedule_head(0, 2) == (list(report.schedule(0))[:2], 5)
