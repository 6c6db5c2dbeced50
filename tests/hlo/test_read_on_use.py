"""A computation whose every line the fast path read makes its instructions when they are
first asked for: the same the general reader makes, its collectives' own (kept from the
first read, which their collectives refer to) in their places."""

from __future__ import annotations

import gc
import os
import signal
import threading
import time

import pytest

import meshtopo as mt
from meshtopo import hlo
from meshtopo.hlo import _reader

from ._fast_paths import structure, turn_off
from ._text import ADD


def _fused(index: int) -> str:
    return (f"%fused.{index} (p0: f32[8], p1: f32[8]) -> f32[] {{\n"
            f"  %p0 = f32[8]{{0}} parameter(0)\n"
            f"  %p1 = f32[8]{{0}} parameter(1)\n"
            f"  %m = f32[8]{{0}} multiply(%p0, %p1), metadata={{op_name=\"m{index}\"}}\n"
            f"  %z = f32[] constant(0)\n"
            f"  ROOT %r = f32[] reduce(%m, %z), dimensions={{0}}, to_apply=%sum\n"
            f"}}\n\n")


COUNT = 40
SUM = ADD.replace("%add", "%sum")
TEXT = ("HloModule m, num_partitions=2\n\n" + ADD + "\n" + SUM + "\n"
        + "".join(map(_fused, range(COUNT)))
        + "ENTRY %main (p: f32[8]) -> f32[] {\n  %p = f32[8]{0} parameter(0)\n"
        + "  %ar = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1}}, "
          "use_global_device_ids=true, to_apply=%add\n"
        + "".join(f"  %call{i} = f32[] fusion(%ar, %p), kind=kLoop, calls=%fused.{i}\n"
                  for i in range(COUNT))
        + f"  ROOT %t = f32[] add(%call0, %call{COUNT - 1})\n}}\n")


def _live_instructions() -> int:
    return sum(type(o) is hlo.Instruction for o in gc.get_objects())


def test_instructions_are_made_when_asked_for_and_are_the_general_readers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    gc.collect()
    before = _live_instructions()
    module = hlo.parse_module(TEXT)
    # Once read, only the collective's instruction is held (the entry too is read on use):
    # %add's root, which the all-reduce asks for, is taken as it was read, not read again.
    assert _live_instructions() - before == 1
    assert "instructions" not in vars(module.computations["add"])
    assert "instructions" not in vars(module.entry)
    assert module.collectives[0].operand_shape_texts == ["f32[8]{0}"]  # kept as read
    assert "instructions" not in vars(module.entry)
    fused = module.computations["fused.7"]
    assert fused.root.name == "r"  # asking for one reads them all
    assert [i.name for i in fused.instructions] == ["p0", "p1", "m", "z", "r"]
    assert fused.signature == "(p0: f32[8], p1: f32[8]) -> f32[]"  # as written: never held
    assert fused.by_name["m"].line == TEXT.splitlines().index(
        '  %m = f32[8]{0} multiply(%p0, %p1), metadata={op_name="m7"}') + 1
    assert module.collectives[0].reduction == "sum"  # the root of %add, read on use
    read = structure(module)
    assert _live_instructions() - before == COUNT + 3 + 3 + 3 + 5 * COUNT  # and now every one
    ar = module.collectives[0].instruction
    assert module.entry.by_name["ar"] is ar and ar.collective is module.collectives[0]
    turn_off(monkeypatch)
    assert read == structure(hlo.parse_module(TEXT))


def test_threads_asking_at_once_get_the_same_instructions() -> None:
    module = hlo.parse_module(TEXT)
    start = threading.Barrier(8)
    seen: list[list[list[hlo.Instruction]]] = []

    def ask() -> None:
        start.wait()
        seen.append([c.instructions for c in module.computations.values()])

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(seen) == 8
    for found in seen[1:]:
        assert all(a is b for a, b in zip(found, seen[0], strict=True))


def test_what_a_computation_calls_is_known_without_reading_it() -> None:
    module = hlo.parse_module(TEXT)
    fused = module.computations["fused.3"]
    assert fused.called_computations == ["sum"]
    assert "instructions" not in vars(fused)  # still unread
    assert [i.name for i in fused.instructions] == ["p0", "p1", "m", "z", "r"]
    assert fused.called_computations == ["sum"]


def test_order_analysis_of_a_scheduled_module_reads_no_computation_without_collectives(
        ) -> None:
    leaf = ("%leaf (a: f32[8]) -> f32[8] {\n  %a = f32[8]{0} parameter(0)\n"
            "  ROOT %n = f32[8]{0} negate(%a)\n}\n\n")
    text = ("HloModule m, is_scheduled=true, num_partitions=2\n\n" + ADD + "\n" + leaf
            + "ENTRY %main (p: f32[8]) -> f32[8] {\n  %p = f32[8]{0} parameter(0)\n"
            "  %f = f32[8]{0} fusion(%p), kind=kLoop, calls=%leaf\n"
            "  ROOT %ar = f32[8]{0} all-reduce(%f), channel_id=1, replica_groups={{0,1}}, "
            "use_global_device_ids=true, to_apply=%add\n}\n")
    module = hlo.parse_module(text)
    report = mt.order.analyze(module)
    assert [a.entry.name for a in report.schedule(0)] == ["ar"]
    assert "instructions" not in vars(module.computations["leaf"])  # not read: no step in it
    assert [i.name for i in module.computations["leaf"].instructions] == ["a", "n"]


def _reading_held(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Make the next read on use stop at its first run of lines until ``go`` is set
    (``stopped`` is set once it has stopped there): the scanner the reader calls is held
    (a module's function, which the reader compiled or not calls through its module)."""
    stopped, go = threading.Event(), threading.Event()
    scan_lines = _reader.scan_lines

    def held(*args: object) -> object:
        if not go.is_set():
            stopped.set()
            go.wait(timeout=60)
        return scan_lines(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_reader, "scan_lines", held)
    return stopped, go


def test_a_thread_asking_while_another_reads_waits_for_the_whole_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    module = hlo.parse_module(TEXT)
    fused = module.computations["fused.5"]
    stopped, go = _reading_held(monkeypatch)
    reading = threading.Thread(target=lambda: fused.instructions)
    reading.start()
    assert stopped.wait(timeout=60)
    assert not {"instructions", "root"} & set(vars(fused))  # nothing half set
    roots: list[object] = []
    asking = threading.Thread(target=lambda: roots.append(fused.root))
    asking.start()
    go.set()
    for thread in (reading, asking):
        thread.join(timeout=60)
    assert [r.name for r in roots] == ["r"]  # type: ignore[attr-defined]


def test_a_read_on_use_that_fails_leaves_nothing_set_and_reads_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    module = hlo.parse_module(TEXT)
    fused = module.computations["fused.5"]
    scan_lines = _reader.scan_lines
    calls: list[int] = []

    def failing_once(*args: object) -> object:
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return scan_lines(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_reader, "scan_lines", failing_once)
    with pytest.raises(KeyboardInterrupt):
        _ = fused.instructions
    assert not {"instructions", "root"} & set(vars(fused))
    assert fused.root.name == "r"
    assert [i.name for i in fused.instructions] == ["p0", "p1", "m", "z", "r"]


def test_what_a_caller_set_before_the_read_stays_set() -> None:
    module = hlo.parse_module(TEXT)
    fused = module.computations["fused.5"]
    fused.signature = "(x: f32[8]) -> f32[]"
    assert fused.root.name == "r"
    assert fused.signature == "(x: f32[8]) -> f32[]"
    other = module.computations["fused.6"]
    other.instructions = []
    assert other.root.name == "r" and other.instructions == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.timeout(120)
@pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")  # the child runs no jax
def test_a_process_forked_while_a_thread_reads_reads_on_use(
        monkeypatch: pytest.MonkeyPatch) -> None:
    module = hlo.parse_module(TEXT)
    stopped, go = _reading_held(monkeypatch)
    reading = threading.Thread(target=lambda: module.computations["fused.5"].instructions)
    reading.start()
    assert stopped.wait(timeout=60)
    child = os.fork()
    if child == 0:  # the child: the thread that held the lock is not here
        signal.alarm(20)
        go.set()
        ok = ([i.name for i in module.computations["fused.5"].instructions]
              == [i.name for i in module.computations["fused.6"].instructions]
              == ["p0", "p1", "m", "z", "r"])
        os._exit(0 if ok else 1)
    go.set()
    reading.join(timeout=60)
    for _ in range(600):
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        pytest.fail("the forked process hung reading a computation on use")
    assert os.waitstatus_to_exitcode(status) == 0
