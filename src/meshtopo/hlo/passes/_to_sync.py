"""``convert_async_collectives_to_sync``: XLA's ``ConvertAsyncCollectivesToSync`` (pass
``convert-async-collectives-to-sync``).

Only a scheduled module is changed, and only its non-fusion computations. Walking each
schedule with a set of starts in flight: a start joins the set; a done whose start is in the
set takes it out and marks the pair; any other instruction that is not a NOP (``is_nop``,
default: nothing is) empties the set. So other async starts and dones never break an
overlap. Each marked pair becomes the synchronous op at the done's slot (keeping the done's
name): the done's shape, the start's operands and attributes (for ``async-start``: the
wrapped op's), metadata and backend config from the start, frontend attributes from the done
plus ``async_collective_name=<start>``; the control dependencies of both are dropped. A done
with a ``_scheduling_group_id`` gets XLA's warning in its decision's reason.
Send/recv are not async collectives here.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..._collector import paused
from .._module import Module
from ._decision import Decision, PassResult
from ._draft import Draft, DraftComputation, Line
from ._graph import users

_STARTS = {"all-reduce-start": "all-reduce-done", "all-gather-start": "all-gather-done",
           "collective-permute-start": "collective-permute-done"}
_WRAPPED = ("all-reduce", "all-gather", "all-to-all", "ragged-all-to-all", "collective-permute",
            "collective-broadcast", "reduce-scatter", *_STARTS)
NAME = "convert-async-collectives-to-sync"


def convert_async_collectives_to_sync(
        module: Module, is_nop: Callable[[Line], bool] | None = None) -> Module:
    """A new module: ``module`` with every start/done pair that overlaps nothing but NOPs in
    the schedule turned back into the synchronous collective (see the module docstring)."""
    return run_convert_async_collectives_to_sync(module, is_nop).module


def run_convert_async_collectives_to_sync(
        module: Module, is_nop: Callable[[Line], bool] | None = None) -> PassResult:
    """``convert_async_collectives_to_sync`` with the decision taken on each pair."""
    with paused():
        draft = Draft(module)
        decisions: list[Decision] = []
        fusions = {called for c in module.computations.values() for i in c.instructions
                   if i.opcode == "fusion" for called in i.called_computations}
        for name in list(draft.computations):
            computation = draft.computations[name]
            pairs = _pairs(draft, computation, is_nop) if name not in fusions else {}
            uses = users(computation) if pairs else {}
            dropped: set[str] = set()
            for line in list(computation.lines):
                if not _is_start(draft, line):
                    continue
                done = pairs.get(line.name)
                if not module.is_scheduled:
                    action, why = "kept", "the module is not scheduled"
                elif name in fusions:
                    action, why = "kept", f"in fusion computation {name}"
                elif done is None:
                    action, why = "kept", "work overlaps it in the schedule"
                elif len(uses[line.name]) != 1:
                    action, why = "kept", (f"used by {', '.join(uses[line.name])}: XLA's pass "
                                           "cannot remove a start with users besides its done")
                else:
                    group = _scheduling_group(done)
                    _convert(draft, line, done)
                    dropped.update((line.name, done.name))
                    action, why = "converted", (f"nothing but NOPs between it and %{done.name}: "
                                                f"now {done.opcode} %{done.name}")
                    if group is not None:
                        why += (f"; Async collective pair ({line.name}, {done.name}) with "
                                f"scheduling group id {group} is not overlapped after "
                                f"scheduling and is converted to a synchronous collective "
                                f"{done.name}.")
                decisions.append(Decision(NAME, name, line.name, line.opcode, action, why))
            if dropped:
                _drop_dependencies(computation, dropped)
        _drop_unused(draft)
        return PassResult(draft.finish(), decisions)


def _is_start(draft: Draft, line: Line) -> bool:
    if line.opcode in _STARTS:
        return True
    return line.opcode == "async-start" and _wrapped(draft, line) is not None


def _wrapped(draft: Draft, start: Line) -> Line | None:
    """The collective an ``async-start`` wraps (the root of its called computation)."""
    called = start.attribute("calls")
    computation = draft.computations.get(called.strip().lstrip("%")) if called else None
    if computation is None:
        return None
    root = next((line for line in computation.lines if line.name == computation.root), None)
    return root if root is not None and root.opcode in _WRAPPED else None


def _is_done(line: Line) -> bool:
    return line.opcode in _STARTS.values() or line.opcode == "async-done"


def _pairs(draft: Draft, computation: DraftComputation,
           is_nop: Callable[[Line], bool] | None) -> dict[str, Line]:
    """start name -> its done, for the pairs with nothing but NOPs between them."""
    in_flight: set[str] = set()
    found: dict[str, Line] = {}
    for line in computation.lines:
        if _is_start(draft, line):
            in_flight.add(line.name)
        elif _is_done(line) and len(line.operands) == 1 and line.operands[0] in in_flight:
            in_flight.discard(line.operands[0])
            found[line.operands[0]] = line
        elif in_flight and not (is_nop is not None and is_nop(line)) and not _is_done(line):
            in_flight.clear()
    return found


def _convert(draft: Draft, start: Line, done: Line) -> None:
    """Turns ``done`` into the synchronous op (``start`` is removed with the control
    dependencies of both by ``_drop_dependencies``)."""
    kept = ("metadata", "backend_config", "frontend_attributes")
    if start.opcode == "async-start":
        wrapped = _wrapped(draft, start)
        assert wrapped is not None
        opcode = wrapped.opcode.removesuffix("-start")
        attributes = [(k, v) for k, v in wrapped.attributes if k not in kept]
    else:
        opcode = start.opcode.removesuffix("-start")
        attributes = [(k, v) for k, v in start.attributes
                      if k not in ("frontend_attributes", "calls")]
    attributes += [(k, v) for k, v in start.attributes if k in ("metadata", "backend_config")
                   and start.opcode == "async-start"]
    attributes.append(("frontend_attributes",
                       _frontend(done.attribute("frontend_attributes"), start.name)))
    done.opcode, done.operand_text, done.operands = opcode, start.operand_text, start.operands
    done.attributes, done.control_predecessors = attributes, []
    done.edited()


def _drop_dependencies(computation: DraftComputation, converted: set[str]) -> None:
    """Removes the converted starts (the ``converted`` names that are no longer dones) and
    every control dependency naming a converted start or done."""
    computation.lines = [line for line in computation.lines
                         if not (line.name in converted and _is_start_opcode(line))]
    for line in computation.lines:
        if any(n in converted for n in line.control_predecessors):
            line.control_predecessors = [n for n in line.control_predecessors
                                         if n not in converted]
            line.edited()


def _is_start_opcode(line: Line) -> bool:
    return line.opcode in _STARTS or line.opcode == "async-start"


def _scheduling_group(done: Line) -> str | None:
    """The ``_scheduling_group_id`` frontend attribute of ``done``, if it has one."""
    written = done.attribute("frontend_attributes") or ""
    found = re.search(r'_scheduling_group_id="([^"]*)"', written)
    return found.group(1) if found else None


def _frontend(written: str | None, start: str) -> str:
    """The done's frontend attributes with ``async_collective_name`` added."""
    body = (written or "{}").strip()[1:-1].strip()
    entry = f'async_collective_name="{start}"'
    return "{" + (f"{body},{entry}" if body else entry) + "}"


def _drop_unused(draft: Draft) -> None:
    """Removes the async computations no instruction calls any more."""
    called = {v.strip().lstrip("%") for c in draft.computations.values() for line in c.lines
              if line.opcode in ("async-start", "async-done")
              for k, v in line.attributes if k == "calls"}
    callers: dict[str, set[str]] = {}
    for source in draft.module.computations.values():
        for instruction in source.instructions:
            for name in instruction.called_computations:
                callers.setdefault(name, set()).add(instruction.opcode)
    for name, computation in list(draft.computations.items()):
        opcodes = callers.get(name)
        if computation.source.is_entry or name in called or not opcodes:
            continue
        if opcodes <= {"async-start", "async-done"}:
            del draft.computations[name]
