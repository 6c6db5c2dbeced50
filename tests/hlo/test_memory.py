"""What a module holds is freed with it, and reading leaves the collector as it found it."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable

import pytest

import meshtopo as mt
from meshtopo import hlo

from ._text import entry_head

TEXT = entry_head("HloModule m, num_partitions=2") + (
    "  %n0 = f32[8]{0} negate(%p)\n"
    "  %ar = f32[8]{0} all-reduce(%n0), channel_id=1, replica_groups={{0,1}}, "
    "use_global_device_ids=true, to_apply=%add\n"
    "  ROOT %n1 = f32[8]{0} negate(%ar)\n}\n")


def test_a_dropped_module_leaves_nothing_behind() -> None:
    many = "".join(f"%m{i} = f32[8]{{0}} negate(%ar)\n  " for i in range(500))
    text = TEXT.replace("ROOT %n1", many + "ROOT %n1")

    def held_after(rounds: int) -> int:
        for _ in range(rounds):
            hlo.parse_module(text).collectives[0].device_groups()
        gc.collect()
        return tracemalloc.get_traced_memory()[0]

    tracemalloc.start()
    try:
        settled = held_after(5)
        module = hlo.parse_module(text)
        one_module = tracemalloc.get_traced_memory()[0] - settled
        del module
        grown = held_after(20) - settled
    finally:
        tracemalloc.stop()
    assert one_module > 100_000
    assert grown < one_module / 4  # a leak would keep 20 modules


def test_a_dropped_module_is_freed_without_the_collector() -> None:
    """Reference counting frees a module no one holds: of its computations and instructions
    only a collective's own instruction is in a cycle (with its collective), so the rest does
    not wait for a collection that must walk every object first."""
    many = "".join(f"%m{i} = f32[8]{{0}} negate(%ar)\n  " for i in range(500))
    text = TEXT.replace("ROOT %n1", many + "ROOT %n1")
    collecting = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        module = hlo.parse_module(text)
        assert module.collectives[0].device_groups() == [[0, 1]]
        del module
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        garbage, gc.garbage[:] = gc.garbage[:], []
    finally:
        gc.set_debug(0)
        if collecting:
            gc.enable()
    assert [o.name for o in garbage if isinstance(o, hlo.Instruction)] == ["ar"]
    assert not [o for o in garbage if isinstance(o, hlo.Computation)]


def test_collectives_answer_after_their_module_is_dropped() -> None:
    """What a collective asks of its module (the reduction's root, its operands' shapes, the
    placement) is kept for it when the module is gone."""
    (collective,) = hlo.parse_module(TEXT).collectives
    gc.collect()
    assert collective.reduction == "sum"
    assert collective.operand_shape_texts == ["f32[8]{0}"]
    assert collective.bytes == 32
    assert collective.device_groups() == [[0, 1]]


def _collections_while(read: Callable[[], object]) -> list[int]:
    """The generations the collector collected while ``read()`` ran."""
    seen: list[int] = []

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(watch)
    try:
        read()
    finally:
        gc.callbacks.remove(watch)
    return seen


def test_reading_restores_the_collector_as_it_was() -> None:
    """The reader pauses the collector (its many long-lived objects would only be walked
    again and again): a caller who had it on finds it on again, after a text read or refused;
    one who had it off finds it off, and no collection ran meanwhile."""
    many = "".join(f"%m{i} = f32[8]{{0}} negate(%ar)\n  " for i in range(20_000))
    text = TEXT.replace("ROOT %n1", many + "ROOT %n1")
    assert gc.isenabled()
    hlo.parse_module(text)
    assert gc.isenabled()
    with pytest.raises(mt.HloParseError):
        hlo.parse_module(text.replace("ROOT %n1", "ROOT %n1 = f32[8]{0} negate(%zz)\n  %n2"))
    assert gc.isenabled()
    gc.disable()
    try:
        assert _collections_while(lambda: hlo.parse_module(text)) == []
        assert not gc.isenabled()
    finally:
        gc.enable()
