"""``issue_order``: the collectives one device issues, in order, as the order layer schedules
them, with each conditional entered at the branch that device takes when that can be told.

This is the one answer to "in what order does this device issue its collectives": the
analysis matches these orders, the runtime's replay issues them (``mt.runtime.issue_order``
is this function) and the explorer's order view shows them.

The order is the walk of ``_program``: the schedule of a module with ``is_scheduled=true``,
else a topological order over operands and control predecessors; into calls, fusions and
async wrappers; a ``while``'s condition then body, once. A ``conditional`` whose selector is a
function of constants, ``replica-id`` and ``partition-id`` (``_divergence.branch_indices``)
is entered at the branch the device takes (an index out of range takes the last branch, as
XLA does); any other conditional at every branch in branch order, as the schedule counts it.
Each collective appears once per time the walk reaches it, as its issuing instruction (the
sync op, the ``-start`` or ``async-start``, the ``send`` or ``recv``; never a ``-done``);
host transfers are left out.

Bound: O(instructions reached) for the walk plus O(instructions on each selector's operand
tree) per conditional, per call; the walk's limits apply (``ENTRY_LIMIT``, ``DEPTH_LIMIT``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._errors import InvalidArgumentError
from .._placement import DeviceAssignment
from ..hlo import Instruction, Module
from ._analyze import module_assignment
from ._divergence import branch_indices
from ._program import walk


def issue_order(module: Module, device: int,
                device_assignment: DeviceAssignment | ArrayLike | None = None
                ) -> list[Instruction]:
    """The collective instructions ``device`` issues, in issue order (module docstring), under
    ``device_assignment`` (default: the module's own placement). ``InvalidArgumentError``
    when the device is not placed."""
    assignment = module_assignment(module, device_assignment)
    placed = np.flatnonzero(assignment.array.reshape(-1) == device)
    if not isinstance(device, int | np.integer) or placed.size == 0:
        raise InvalidArgumentError(
            f"device {device!r} is not in the device assignment of module {module.name} "
            f"({assignment.array.size} devices)")
    replica, partition = (np.array([int(v)]) for v in divmod(int(placed[0]),
                                                             assignment.array.shape[1]))
    program = walk(module)
    taken: dict[str, int | None] = {}
    for record in program.conditionals:
        name = record.instruction.name
        if name not in taken:
            branch = branch_indices(record.instruction, record.computation, replica, partition)
            taken[name] = None if branch is None else int(branch[0])
    return [instruction for entry, instruction in zip(program.entries, program.instructions,
                                                      strict=True)
            if all(taken.get(name) in (None, index) for name, index in entry.branches)]
