"""Deadlocks XLA's collectives schedule linearizer would remove.

A deadlock between programs whose blocked collectives are independent in every program (no
data or control dependency between any two of them, all in one computation of an unscheduled
module) comes only from the order each program's text happens to list them in. When
``mt.hlo.passes.linearize_collectives`` puts them in the same order in every program, the
finding's message says so: that pass (XLA's ``collectives-schedule-linearizer``) would
remove it.
"""

from __future__ import annotations

from dataclasses import replace

from ..hlo import Computation, Module
from ..hlo.passes import linearize_collectives
from ._entry import Finding

NOTE = (" Nothing orders these collectives within a program (no data or control dependency "
        "between them), so each program's text order decides; XLA's "
        "collectives-schedule-linearizer (mt.hlo.passes.linearize_collectives) gives them one "
        "order in every program and would remove this deadlock.")


def with_linearizer_note(finding: Finding, modules: list[Module]) -> Finding:
    """``finding`` with ``NOTE`` appended when it is a deadlock the linearizer removes."""
    names = finding.instructions
    if finding.type != "deadlock" or len(modules) < 2 or len(names) < 2:
        return finding
    orders = set()
    for module in modules:
        order = _linearized_order(module, names)
        if order is None:
            return finding
        orders.add(order)
    return replace(finding, message=finding.message + NOTE) if len(orders) == 1 else finding


def _linearized_order(module: Module, names: tuple[str, ...]) -> tuple[str, ...] | None:
    """``names`` in the order the linearizer gives them in ``module``, or None when they are
    not independent collectives of one computation of an unscheduled module."""
    if module.is_scheduled:
        return None
    home = next((c for c in module.computations.values()
                 if all(n in c.by_name for n in names)), None)
    if home is None or any(_reaches(home, a, b) for a in names for b in names if a != b):
        return None
    linearized = linearize_collectives(module).computations[home.name]
    position = {i.name: n for n, i in enumerate(linearized.instructions)}
    return tuple(sorted(names, key=position.__getitem__))


def _reaches(computation: Computation, source: str, target: str) -> bool:
    """Whether ``target`` depends on ``source`` through operands or control predecessors."""
    stack, seen = [target], {target}
    while stack:
        instruction = computation.by_name.get(stack.pop())
        if instruction is None:
            continue
        for name in (*instruction.operands, *instruction.control_predecessors):
            if name == source:
                return True
            if name not in seen:
                seen.add(name)
                stack.append(name)
    return False
