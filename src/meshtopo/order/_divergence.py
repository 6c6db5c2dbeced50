"""``divergence``: collectives under a conditional that members of one group can be shown to
take differently.

A conditional's predicate (or branch index) is evaluated for every device at once, as numpy
arrays over the devices' replica and partition ids, from the instructions of its computation:
``partition-id``, ``replica-id``, scalar constants, ``compare``, integer and logical arithmetic,
``convert``/``copy``/``reshape``/``bitcast``, ``select``. Anything else (a parameter, a loaded
value) makes it unknown, and an unknown or uniform predicate is never a finding: members are
flagged only when they are shown to diverge. A device takes an entry when it takes every
enclosing branch; an out-of-range branch index takes the last branch, as XLA does.

Bound: O(instructions on the predicate's operand tree x devices) numpy work per conditional.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._placement import DeviceAssignment
from ..hlo import Computation, Instruction
from ._cliques import EntryPeers
from ._entry import Finding
from ._program import Program

_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply,
    "divide": lambda a, b: np.floor_divide(a, np.where(b == 0, 1, b)),
    "remainder": lambda a, b: np.remainder(a, np.where(b == 0, 1, b)),
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "minimum": np.minimum, "maximum": np.maximum,
}
_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "convert": lambda a: a, "copy": lambda a: a, "reshape": lambda a: a, "bitcast": lambda a: a,
    "negate": np.negative, "abs": np.abs, "not": lambda a: np.logical_not(a).astype(np.int64),
}
_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
            "GT": np.greater, "GE": np.greater_equal}
_DEPTH = 64


def branch_indices(conditional: Instruction, computation: Computation,
                   replicas: np.ndarray, partitions: np.ndarray) -> np.ndarray | None:
    """The branch each device takes (index into the conditional's branches), or None when
    the predicate is not a function of replica and partition ids alone."""
    if not conditional.operands:
        return None
    by_name = {inst.name: inst for inst in computation.instructions}
    value = _evaluate(conditional.operands[0], by_name, replicas, partitions, 0)
    if value is None:
        return None
    count = len(conditional.called_computations)
    value = np.broadcast_to(np.asarray(value, dtype=np.int64), replicas.shape)
    if "true_computation" in conditional.attributes:
        return np.where(value != 0, 0, 1)
    return np.where((value < 0) | (value >= count), count - 1, value)


def _evaluate(name: str, by_name: dict[str, Instruction], replicas: np.ndarray,
              partitions: np.ndarray, depth: int) -> np.ndarray | None:
    inst = by_name.get(name)
    if inst is None or depth > _DEPTH:
        return None
    opcode = inst.opcode
    if opcode == "partition-id":
        return partitions
    if opcode == "replica-id":
        return replicas
    if opcode == "constant":
        # The literal is read where the model keeps it; without it the value is unknown.
        text = str(getattr(inst, "operand_text", "")).strip().strip("{} ")
        if text in ("true", "false"):
            return np.array(int(text == "true"))
        try:
            return np.array(int(text))
        except ValueError:
            return None
    values = [_evaluate(o, by_name, replicas, partitions, depth + 1) for o in inst.operands]
    args = [value for value in values if value is not None]
    if len(args) != len(values):
        return None
    if opcode in _UNARY and len(args) == 1:
        return _UNARY[opcode](args[0])
    if opcode in _BINARY and len(args) == 2:
        return _BINARY[opcode](args[0], args[1])
    if opcode == "compare" and len(args) == 2:
        direction = inst.attributes.get("direction", "")
        compare = _COMPARE.get(direction)
        return None if compare is None else compare(args[0], args[1]).astype(np.int64)
    if opcode == "select" and len(args) == 3:
        return np.asarray(np.where(args[0] != 0, args[1], args[2]))
    return None


def divergences(program: Program, devices: np.ndarray, assignment: DeviceAssignment,
                peers: Callable[[int], EntryPeers]) -> list[Finding]:
    """One ``divergence`` finding per entry some member of one of its groups is shown to take
    while another member is not."""
    if not program.conditionals or devices.size == 0:
        return []
    replicas, partitions = assignment.logical_ids(devices)
    size = int(devices.max()) + 1
    taken_branch: dict[str, tuple[np.ndarray, Instruction]] = {}
    for record in program.conditionals:
        branch = branch_indices(record.instruction, record.computation,
                                np.asarray(replicas), np.asarray(partitions))
        if branch is not None and np.unique(branch).size > 1:
            table = np.full(size, -1, dtype=np.int64)
            table[devices] = branch
            taken_branch[record.instruction.name] = (table, record.instruction)
    if not taken_branch:
        return []
    findings = []
    for entry in program.entries:
        conditions = [(taken_branch[name], index) for name, index in entry.branches
                      if name in taken_branch]
        if not conditions:
            continue
        takes = np.ones(size, dtype=bool)
        for (table, _), index in conditions:
            takes &= table == index
        runs = np.zeros(size, dtype=bool)
        runs[devices] = True
        group_peers = peers(entry.index)
        flat = group_peers.flat[group_peers.flat < size]
        if flat.size != group_peers.flat.size:
            continue
        group_of = np.repeat(np.arange(group_peers.sizes.size), group_peers.sizes)
        yes = np.bincount(group_of, weights=takes[group_peers.flat],
                          minlength=group_peers.sizes.size)
        mixed = np.flatnonzero((yes > 0) & (yes < group_peers.sizes))
        if mixed.size == 0:
            continue
        members = np.concatenate([np.asarray(group_peers.group(r)) for r in mixed.tolist()])
        issuing = sorted(int(d) for d in members if takes[d])
        absent = sorted(int(d) for d in members if not takes[d])
        table, conditional = conditions[-1][0]
        first = group_peers.group(int(mixed[0]))
        findings.append(Finding(
            "divergence", tuple(sorted(int(d) for d in members)),
            (entry.name, conditional.name),
            f"{entry.name} (line {entry.line}) in branch {conditions[-1][1]} of "
            f"{conditional.name} (line {conditional.line}) is issued by devices {issuing} but "
            f"not by devices {absent} of the same group{'s' if mixed.size > 1 else ''} (first: "
            f"[{','.join(map(str, first))}]): the branch depends on the replica or partition "
            f"id, so the members that skip it never arrive and the others wait forever.",
            lines=(entry.line, conditional.line)))
    return findings
