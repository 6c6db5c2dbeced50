"""``divergence``: collectives under a conditional, or in a loop, that members of one group
can be shown to take differently.

A conditional's predicate (or branch index) is evaluated for every device at once, as numpy
arrays over the devices' replica and partition ids, from the instructions of its computation:
``partition-id``, ``replica-id``, scalar constants, ``compare``, integer and logical arithmetic,
``convert``/``copy``/``reshape``/``bitcast``, ``select``. Anything else (a parameter, a loaded
value) makes it unknown, and an unknown or uniform predicate is never a finding: members are
flagged only when they are shown to diverge. A device takes an entry when it takes every
enclosing branch; an out-of-range branch index takes the last branch, as XLA does.

Loops: a ``while`` whose condition compares one tuple element with a bound, whose body adds
a step to that element, and whose initial value, bound and step evaluate as above, is run for
every device at once (at most ``TRIP_LIMIT`` iterations; past that it counts as unknown);
members of one group with different trip counts diverge.

Bound: O(instructions on the predicate's operand tree x devices) numpy work per conditional,
O(TRIP_LIMIT x devices) per loop.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._placement import DeviceAssignment
from ..hlo import Computation, Instruction
from ._cliques import EntryPeers
from ._entry import Finding
from ._program import Loop, Program

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
TRIP_LIMIT = 10_000


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
        text = inst.operand_text.strip().strip("{} ")
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
    while another member is not (a branch), or to take another number of times (a loop)."""
    if devices.size == 0:
        return []
    return [*_branch_divergences(program, devices, assignment, peers),
            *_loop_divergences(program, devices, assignment, peers)]


def _mixed(group_peers: EntryPeers, values: np.ndarray) -> np.ndarray:
    """Indices of the groups whose members hold different ``values`` (a table by device)."""
    group_of = np.repeat(np.arange(group_peers.sizes.size), group_peers.sizes)
    member = values[group_peers.flat]
    low = np.full(group_peers.sizes.size, np.iinfo(np.int64).max)
    high = np.full(group_peers.sizes.size, np.iinfo(np.int64).min)
    np.minimum.at(low, group_of, member)
    np.maximum.at(high, group_of, member)
    return np.flatnonzero(low != high)


def loop_trips(loop: Loop, computations: dict[str, Computation], replicas: np.ndarray,
               partitions: np.ndarray) -> np.ndarray | None:
    """Each device's trip count of ``loop``, or None when the loop is not of the counted form
    (module docstring) or runs past ``TRIP_LIMIT``."""
    inst = loop.instruction
    condition = computations.get(inst.attributes.get("condition", "").lstrip("%"))
    body = computations.get(inst.attributes.get("body", "").lstrip("%"))
    if condition is None or body is None or not inst.operands:
        return None
    root = condition.root
    if root is None or root.opcode != "compare" or len(root.operands) != 2:
        return None
    in_condition = {i.name: i for i in condition.instructions}
    compare = _COMPARE.get(root.attributes.get("direction", ""))
    for side in (0, 1):
        index = _element_index(in_condition, root.operands[side])
        if index is None or compare is None:
            continue
        bound = _evaluate(root.operands[1 - side], in_condition, replicas, partitions, 0)
        start = _initial(loop, index, replicas, partitions)
        step = _step(body, index, replicas, partitions)
        if bound is None or start is None or step is None:
            return None
        value = np.broadcast_to(np.asarray(start, dtype=np.int64), replicas.shape).copy()
        trips = np.zeros(replicas.shape, dtype=np.int64)
        for _ in range(TRIP_LIMIT):
            pair = (value, bound) if side == 0 else (bound, value)
            going = np.broadcast_to(compare(*pair), replicas.shape)
            if not going.any():
                return trips
            trips += going
            value = np.where(going, value + step, value)
        return None
    return None


def _element_index(by_name: dict[str, Instruction], name: str) -> int | None:
    inst = by_name.get(name)
    if inst is None or inst.opcode != "get-tuple-element" or not inst.operands:
        return None
    source = by_name.get(inst.operands[0])
    if source is None or source.opcode != "parameter":
        return None
    text = inst.attributes.get("index", "")
    return int(text) if text.isascii() and text.isdigit() else None


def _initial(loop: Loop, index: int, replicas: np.ndarray,
             partitions: np.ndarray) -> np.ndarray | None:
    in_parent = {i.name: i for i in loop.computation.instructions}
    init = in_parent.get(loop.instruction.operands[0])
    if init is None or init.opcode != "tuple" or index >= len(init.operands):
        return None
    return _evaluate(init.operands[index], in_parent, replicas, partitions, 0)


def _step(body: Computation, index: int, replicas: np.ndarray,
          partitions: np.ndarray) -> np.ndarray | None:
    in_body = {i.name: i for i in body.instructions}
    root = body.root
    if root is None or root.opcode != "tuple" or index >= len(root.operands):
        return None
    update = in_body.get(root.operands[index])
    if update is None or update.opcode != "add" or len(update.operands) != 2:
        return None
    for side in (0, 1):
        if _element_index(in_body, update.operands[side]) == index:
            step = _evaluate(update.operands[1 - side], in_body, replicas, partitions, 0)
            return step if step is not None and np.all(np.asarray(step) != 0) else None
    return None


def _loop_divergences(program: Program, devices: np.ndarray, assignment: DeviceAssignment,
                      peers: Callable[[int], EntryPeers]) -> list[Finding]:
    if not program.loops:
        return []
    replicas, partitions = assignment.logical_ids(devices)
    size = int(devices.max()) + 1
    findings = []
    for loop in program.loops:
        trips = loop_trips(loop, program.module.computations, np.asarray(replicas),
                           np.asarray(partitions))
        if trips is None or np.unique(trips).size < 2:
            continue
        table = np.full(size, -1, dtype=np.int64)
        table[devices] = trips
        for index in loop.entries:
            entry = program.entries[index]
            group_peers = peers(index)
            if group_peers.flat.size == 0 or group_peers.flat.max() >= size:
                continue
            mixed = _mixed(group_peers, table)
            if mixed.size == 0:
                continue
            members = sorted({int(d) for r in mixed.tolist() for d in group_peers.group(r)})
            counts: dict[int, list[int]] = {}
            for device in members:
                counts.setdefault(int(table[device]), []).append(device)
            spelled = "; ".join(
                f"{'once' if n == 1 else f'{n} times'} by devices {devs}"
                for n, devs in sorted(counts.items(), reverse=True))
            findings.append(Finding(
                "divergence", tuple(members), (entry.name, loop.instruction.name),
                f"{entry.name} (line {entry.line}) in {loop.instruction.name} (line "
                f"{loop.instruction.line}) is issued {spelled}: the trip count depends on the "
                f"replica or partition id, so the members that stop early never arrive at the "
                f"later iterations and the others wait forever.",
                lines=(entry.line, loop.instruction.line)))
    return findings


def _branch_divergences(program: Program, devices: np.ndarray, assignment: DeviceAssignment,
                        peers: Callable[[int], EntryPeers]) -> list[Finding]:
    if not program.conditionals:
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
