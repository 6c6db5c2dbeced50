"""``linearize_collectives``: XLA's ``CollectivesScheduleLinearizer`` (pass
``collectives-schedule-linearizer``), the pass that forces one total order on collectives.

In each non-fusion computation, walking XLA's post order, each collective (XLA's
``HloCollectiveInstruction``: all-reduce, all-gather, reduce-scatter, all-to-all,
ragged-all-to-all, collective-broadcast and the all-reduce/all-gather starts) gets a control
dependency from the previous one (for a start, from the previous one's done) whenever neither
already reaches the other. An unscheduled result prints its computations in post order (as
XLA prints them), so two programs with the same graph print their collectives in one order;
in a scheduled module the schedule moves only where a new dependency demands it (XLA runs
the pass before scheduling).
"""

from __future__ import annotations

from ..._collector import paused
from .._module import Module
from ._decision import Decision, PassResult
from ._draft import Draft, DraftComputation, Line
from ._graph import ancestors, post_order, stable_topological, users

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "ragged-all-to-all",
               "collective-broadcast", "all-reduce-start", "all-gather-start")
NAME = "collectives-schedule-linearizer"


def linearize_collectives(module: Module) -> Module:
    """A new module: ``module`` with control dependencies that chain its collectives in
    post order (see the module docstring)."""
    return run_linearize_collectives(module).module


def run_linearize_collectives(module: Module) -> PassResult:
    """``linearize_collectives`` with the decision taken on each collective."""
    with paused():
        draft = Draft(module)
        decisions: list[Decision] = []
        fusions = {called for c in module.computations.values() for i in c.instructions
                   if i.opcode == "fusion" for called in i.called_computations}
        for name, computation in draft.computations.items():
            if name in fusions:
                continue
            found = _linearize(name, computation)
            if any(d.action == "ordered" for d in found):
                computation.lines = (stable_topological(computation.lines)
                                     if module.is_scheduled else post_order(computation))
            decisions += found
        return PassResult(draft.finish(), decisions)


def _linearize(name: str, computation: DraftComputation) -> list[Decision]:
    order = post_order(computation)
    if not any(line.opcode in COLLECTIVES for line in order):
        return []
    position = {line.name: n for n, line in enumerate(order)}
    reach = ancestors(order)
    used_by = users(computation)
    found: list[Decision] = []
    previous: Line | None = None
    for line in order:
        if line.opcode not in COLLECTIVES:
            continue
        done = line
        if line.opcode.endswith("-start") and len(used_by[line.name]) == 1:
            done = next(x for x in order if x.name == used_by[line.name][0])
        if previous is None:
            found.append(Decision(NAME, name, line.name, line.opcode, "kept",
                                  "first collective in post order"))
        elif (reach[line.name] >> position[previous.name]) & 1 or \
                (reach[previous.name] >> position[line.name]) & 1:
            found.append(Decision(NAME, name, line.name, line.opcode, "kept",
                                  f"already ordered after %{previous.name}"))
        else:
            line.control_predecessors.append(previous.name)
            line.edited()
            reach = ancestors(order)
            found.append(Decision(NAME, name, line.name, line.opcode, "ordered",
                                  f"control dependency added from %{previous.name}"))
        previous = done
    return found
