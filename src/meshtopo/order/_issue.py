"""``issue_order``: the collectives one device issues, in order, as the order layer schedules
them, with each conditional entered at the branch that device takes when that can be told
(``issue_orders``: the same for many devices from one walk).

This is the one answer to "in what order does this device issue its collectives": the
analysis matches these orders, the runtime's replay issues them (``mt.runtime.issue_order``
is this function) and the explorer's order view shows them.

The order is the walk of ``_program``: the schedule of a module with ``is_scheduled=true``,
else a topological order over operands and control predecessors; into calls, fusions and
async wrappers; a ``while``'s condition then body, once. A ``conditional`` whose selector is a
function of constants, ``replica-id`` and ``partition-id`` (evaluated by ``_selector`` through
fusions, calls, tuples, slices and the conversions XLA emits) is entered at the branch the
device takes (an index out of range takes the last branch, as XLA does); any other
conditional at every branch in branch order, as the schedule counts it, and the result's
``unresolved`` says which conditional and what its selector depends on.
Each collective appears once per time the walk reaches it, as its issuing instruction (the
sync op, the ``-start`` or ``async-start``, the ``send`` or ``recv``; never a ``-done``);
host transfers are left out.

Bound: one walk, O(instructions reached), plus O(instructions on each selector's operand tree
x devices) numpy work per conditional and O(entries x devices) to hand out the orders; the
walk's limits apply (``ENTRY_LIMIT``, ``DEPTH_LIMIT``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._errors import InvalidArgumentError
from .._placement import DeviceAssignment
from ..hlo import Instruction, Module
from ._analyze import module_assignment
from ._divergence import Choices, branch_choices
from ._program import walk


class IssueOrder(list[Instruction]):
    """A device's collective instructions in issue order (a list), with ``unresolved``: one
    sentence per conditional whose branch could not be told for the device (``branch of
    conditional X (line L) not resolved for device N: its selector depends on ...``); such a
    conditional is entered at every branch. Empty when every branch was resolved."""

    def __init__(self, instructions: list[Instruction], unresolved: list[str]) -> None:
        super().__init__(instructions)
        self.unresolved = unresolved


class IssueOrders(dict[int, IssueOrder]):
    """Device id -> its ``IssueOrder`` (a dict), with ``unresolved``: the same sentences for
    all these devices together (``... not resolved for devices 0..3: ...``)."""

    def __init__(self, orders: dict[int, IssueOrder], unresolved: list[str]) -> None:
        super().__init__(orders)
        self.unresolved = unresolved


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
    replicas, partitions = (np.asarray(v) for v in assignment.logical_ids(ids))
    program = walk(module)
    choices = branch_choices(program, ids, replicas, partitions)
    takes = choices.takes(program.entries)
    instructions = program.instructions
    return IssueOrders({int(device): IssueOrder(
                [instructions[i] for i in np.flatnonzero(takes[:, column]).tolist()],
                Choices(ids[column:column + 1], {}, choices.unresolved).notes())
            for column, device in enumerate(ids.tolist())},
        Choices(ids, {}, choices.unresolved).notes())
