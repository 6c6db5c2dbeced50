"""``issue_order``: the collectives one device issues, in order, as the order layer runs the
program for it (``issue_orders``: the same for many devices from one run).

This is the one answer to "in what order does this device issue its collectives": the
analysis matches these orders, the runtime's replay issues them (``mt.runtime.issue_order``
is this function) and the explorer's order view shows them.

The order is ``_execution``'s: the schedule of a module with ``is_scheduled=true``, else a
topological order over operands and control predecessors; into calls, fusions and async
wrappers; each ``conditional`` at the branch the device takes and each ``while`` for as many
iterations as the device runs it, where the selector or the condition is computed from
constants, ``replica-id`` and ``partition-id`` (through fusions, calls, tuples, loop-carried
values and the arithmetic XLA emits; ``known_trip_count`` where the condition is not known).
A conditional whose selector depends on data is entered at every branch in branch order, a
loop whose trip count does, for one iteration; the result's ``unresolved`` says which and
what the data is. Each collective appears once per time the device issues it, as its issuing
instruction (the sync op, the ``-start`` or ``async-start``, the ``send`` or ``recv``; never
a ``-done``); host transfers are left out.

Bound: one walk and one run of the program for every placed device (``_execution``), then
O(steps) per device asked about.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._errors import InvalidArgumentError
from ..groups._placement import DeviceAssignment
from ..hlo import Instruction, Module
from ._analyze import _prepared, module_assignment
from ._execution import ITERATION_LIMIT, Key, LoopLimit, key_of
from ._program import ARRIVE, Program, walk


class IssueOrder(list[Instruction]):
    """A device's collective instructions in issue order (a list), with ``unresolved``: one
    sentence per conditional or loop of the program whose predicate depends on data
    (``conditional X (line L): its predicate depends on data (...); every branch is entered,
    in branch order; ...``). Empty when every predicate was computed."""

    def __init__(self, instructions: list[Instruction], unresolved: list[str]) -> None:
        super().__init__(instructions)
        self.unresolved = unresolved


class IssueOrders(dict[int, IssueOrder]):
    """Device id -> its ``IssueOrder`` (a dict), with ``unresolved``: the same sentences for
    the program, and ``trip_counts``: each issuing instruction (and the ``-done`` waiting for
    it), keyed by (computation, name) (names repeat across computations), -> how many times a
    device issues it, the most over the program's devices (1 outside loops; a loop's condition
    issues once more than its body; 0 in a branch no device takes), or None where a loop
    around it runs a number of times that depends on data (its body is in the orders once)."""

    def __init__(self, orders: dict[int, IssueOrder], unresolved: list[str],
                 trip_counts: dict[tuple[str, str], int | None]) -> None:
        super().__init__(orders)
        self.unresolved = unresolved
        self.trip_counts = trip_counts


def issue_order(module: Module, device: int,
                device_assignment: DeviceAssignment | ArrayLike | None = None
                ) -> IssueOrder:
    """The collective instructions ``device`` issues, in issue order (module docstring), under
    ``device_assignment`` (default: the module's own placement). ``InvalidArgumentError``
    when the device is not placed."""
    if not isinstance(device, int | np.integer):
        raise InvalidArgumentError(f"device must be an integer id, got {device!r}")
    return issue_orders(module, [int(device)], device_assignment)[int(device)]


def issue_orders(module: Module, devices: ArrayLike | None = None,
                 device_assignment: DeviceAssignment | ArrayLike | None = None
                 ) -> IssueOrders:
    """``issue_order`` of each of ``devices`` (default: every placed device), from one walk
    of the module: device id -> its collective instructions in issue order."""
    assignment = module_assignment(module, device_assignment)
    placed = np.sort(assignment.array.reshape(-1))
    ids = placed if devices is None else np.asarray(devices, dtype=np.int64).reshape(-1)
    outside = ids[~np.isin(ids, placed)]
    if outside.size:
        raise InvalidArgumentError(
            f"device {int(outside[0])} is not in the device assignment of module "
            f"{module.name} ({placed.size} devices)")
    walked = _prepared(walk(module), placed, assignment)
    outcome = walked.execute()
    instructions = walked.program.instructions
    orders: dict[int, IssueOrder] = {}
    issues = np.zeros(len(instructions), dtype=np.int64)
    uncounted = np.zeros(len(instructions), dtype=bool)
    for sequence in outcome.sequences:
        arrivals = [s.entry for s in sequence.steps if s.kind == ARRIVE]
        order = [instructions[entry] for entry in arrivals]
        for device in placed[sequence.positions].tolist():
            orders[int(device)] = IssueOrder(order, outcome.notes)
        issued = _issues(arrivals, sequence.positions, len(instructions), outcome.limits)
        uncounted |= issued < 0
        issues = np.maximum(issues, issued)
    issues[uncounted] = -1
    return IssueOrders({int(d): orders[int(d)] for d in ids.tolist()}, outcome.notes,
                       _trip_counts(walked.program, issues, outcome.data_loops))


def _issues(arrivals: list[int], positions: np.ndarray, count: int,
            limits: list[LoopLimit]) -> np.ndarray:
    """How many times one class of devices issues each entry: its arrivals, those in a loop
    past the expansion limit scaled from the ``ITERATION_LIMIT`` iterations recorded to the
    class's trip count (-1 where that count is not known)."""
    issued = np.bincount(np.asarray(arrivals, dtype=np.int64), minlength=count)
    for limit in limits:
        entries = np.asarray(limit.entries, dtype=np.int64)
        trips = int(limit.trips[positions].max(initial=-1))
        issued[entries] = -1 if trips < 0 else issued[entries] * trips // ITERATION_LIMIT
    return issued


def _trip_counts(program: Program, issues: np.ndarray, data_loops: frozenset[Key]
                 ) -> dict[Key, int | None]:
    """``IssueOrders.trip_counts`` from each entry's issues (-1: not known): an instruction
    the walk reached at several call sites sums its entries."""
    unknown = {entry for loop in program.loops if key_of(loop.instruction) in data_loops
               for entry in loop.entries}
    counts: dict[Key, int | None] = {}
    for entry, instruction in enumerate(program.instructions):
        count = None if entry in unknown or issues[entry] < 0 else int(issues[entry])
        done = program.entries[entry].done
        keys = [key_of(instruction)] + ([] if done is None else [(instruction.computation, done)])
        for key in keys:
            before = counts.get(key, 0)
            counts[key] = None if before is None or count is None else before + count
    return counts
