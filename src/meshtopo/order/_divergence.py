"""``divergence``: collectives under a conditional, or in a loop, that members of one group
can be shown to take differently.

A conditional's selector (predicate or branch index) is evaluated for every device at once by
``_selector`` (``partition-id``, ``replica-id``, constants, arithmetic, slices, tuples,
fusions and calls: what XLA emits for it); ``branch_choices`` gives the branch each device
takes, and names the conditionals it cannot tell with what their selector depends on. An
unknown or uniform selector is never a finding: members are flagged only when they are shown
to diverge. A device takes an entry when it takes every enclosing branch; an out-of-range
branch index takes the last branch, as XLA does. A divergence's message says what the
members that skip the entry issue at that place on the group instead (the other branch's
collective, which the runtime pairs with it by arrival order), or that they issue nothing
there and the others wait forever.

Loops: a ``while`` whose condition compares one tuple element with a bound, whose body adds
a step to that element, and whose initial value, bound and step evaluate as above, is run for
every device at once (at most ``TRIP_LIMIT`` iterations; past that it counts as unknown);
members of one group with different trip counts diverge.

Bound: ``_selector``'s per conditional (O(instructions evaluated x devices) numpy work),
O(TRIP_LIMIT x devices) per loop, O(entries of the conditional x devices) per finding's
counterpart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._placement import DeviceAssignment
from ..hlo import Computation, Instruction
from ._cliques import EntryPeers
from ._entry import Entry, Finding
from ._program import Conditional, Loop, Program
from ._selector import Evaluator, compare_function

TRIP_LIMIT = 10_000


@dataclass
class Choices:
    """The branch each device takes at each conditional of a program: ``taken`` maps a
    conditional's name to the branch index per device (in the order of the devices asked
    about) where its selector is a function of replica and partition ids; ``unresolved`` holds
    the others with the reason (every branch is then taken)."""

    devices: np.ndarray
    taken: dict[str, np.ndarray]
    unresolved: dict[str, tuple[Instruction, str]]

    def takes(self, entries: list[Entry]) -> np.ndarray:
        """``[entries, devices]``: whether each device issues each entry (it takes every
        enclosing branch; unresolved branches count as taken)."""
        out = np.ones((len(entries), self.devices.size), dtype=bool)
        for row, entry in enumerate(entries):
            for name, index in entry.branches:
                branch = self.taken.get(name)
                if branch is not None:
                    out[row] &= branch == index
        return out

    def notes(self, unit: str = "device") -> list[str]:
        """One sentence per unresolved conditional: which devices and why."""
        devices = self.devices.tolist()
        spelled = (f"{unit} {devices[0]}" if len(devices) == 1 else
                   f"{unit}s {devices[0]}..{devices[-1]}" if devices == list(
                       range(devices[0], devices[-1] + 1)) else f"{unit}s {devices}")
        return [f"branch of conditional {name} (line {inst.line}) not resolved for {spelled}: "
                f"its selector depends on {reason}; every branch is taken"
                for name, (inst, reason) in self.unresolved.items()]


def branch_choices(program: Program, devices: np.ndarray, replicas: np.ndarray,
                   partitions: np.ndarray) -> Choices:
    """The branches ``devices`` (with these replica and partition ids) take at the
    conditionals of ``program`` (``_selector`` evaluates each selector for all at once)."""
    taken: dict[str, np.ndarray] = {}
    unresolved: dict[str, tuple[Instruction, str]] = {}
    evaluator = Evaluator(program.module.computations, replicas, partitions)
    for record in program.conditionals:
        inst = record.instruction
        if inst.name in taken or inst.name in unresolved:
            continue
        branch = branch_indices(inst, record.computation, evaluator)
        if branch is not None:
            taken[inst.name] = branch
        else:
            blocker = evaluator.blocker
            unresolved[inst.name] = (inst, "a value that is not evaluated" if blocker is None
                                     else blocker.text())
    return Choices(np.asarray(devices), taken, unresolved)


def branch_indices(conditional: Instruction, computation: Computation,
                   evaluator: Evaluator) -> np.ndarray | None:
    """The branch each device takes (index into the conditional's branches), or None when
    the selector is not a function of replica and partition ids (``evaluator.blocker`` says
    why). An out-of-range index takes the last branch, as XLA does."""
    if not conditional.operands:
        return None
    value = evaluator.scalar(computation, conditional.operands[0])
    if value is None:
        return None
    count = len(conditional.called_computations)
    if "true_computation" in conditional.attributes:
        return np.where(value != 0, 0, 1)
    return np.where((value < 0) | (value >= count), count - 1, value)


def divergences(program: Program, devices: np.ndarray, assignment: DeviceAssignment,
                peers: Callable[[int], EntryPeers], choices: Choices) -> list[Finding]:
    """One ``divergence`` finding per entry some member of one of its groups is shown to take
    while another member is not (a branch), or to take another number of times (a loop)."""
    if devices.size == 0:
        return []
    return [*_branch_divergences(program, devices, choices, peers),
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
    compare = compare_function(root.attributes.get("direction", ""))
    evaluator = Evaluator(computations, replicas, partitions)
    for side in (0, 1):
        index = _element_index(in_condition, root.operands[side])
        if index is None or compare is None:
            continue
        bound = evaluator.scalar(condition, root.operands[1 - side])
        start = _initial(loop, index, evaluator)
        step = _step(body, index, evaluator)
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


def _initial(loop: Loop, index: int, evaluator: Evaluator) -> np.ndarray | None:
    in_parent = {i.name: i for i in loop.computation.instructions}
    init = in_parent.get(loop.instruction.operands[0])
    if init is None or init.opcode != "tuple" or index >= len(init.operands):
        return None
    return evaluator.scalar(loop.computation, init.operands[index])


def _step(body: Computation, index: int, evaluator: Evaluator) -> np.ndarray | None:
    in_body = {i.name: i for i in body.instructions}
    root = body.root
    if root is None or root.opcode != "tuple" or index >= len(root.operands):
        return None
    update = in_body.get(root.operands[index])
    if update is None or update.opcode != "add" or len(update.operands) != 2:
        return None
    for side in (0, 1):
        if _element_index(in_body, update.operands[side]) == index:
            step = evaluator.scalar(body, update.operands[1 - side])
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


def _branch_divergences(program: Program, devices: np.ndarray, choices: Choices,
                        peers: Callable[[int], EntryPeers]) -> list[Finding]:
    size = int(devices.max()) + 1
    taken_branch: dict[str, np.ndarray] = {}
    for name, chosen in choices.taken.items():
        if np.unique(chosen).size > 1:
            table = np.full(size, -1, dtype=np.int64)
            table[devices] = chosen
            taken_branch[name] = table
    if not taken_branch:
        return []
    findings = []
    for entry in program.entries:
        conditions = [(taken_branch[name], name, index) for name, index in entry.branches
                      if name in taken_branch]
        if not conditions:
            continue
        takes = np.ones(size, dtype=bool)
        for table, _, index in conditions:
            takes &= table == index
        group_peers = peers(entry.index)
        if group_peers.flat.size == 0 or group_peers.flat.max() >= size:
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
        last, name, branch = conditions[-1]
        record = next(r for r in program.conditionals if r.instruction.name == name
                      and any(entry.index in b for b in r.branches))
        conditional = record.instruction
        first = group_peers.group(int(mixed[0]))
        instead = _counterpart(program, record, entry, first, takes, last, peers)
        findings.append(Finding(
            "divergence", tuple(sorted(int(d) for d in members)),
            (entry.name, conditional.name),
            f"{entry.name} (line {entry.line}) in branch {branch} of "
            f"{conditional.name} (line {conditional.line}) is issued by devices {issuing} but "
            f"not by devices {absent} of the same group{'s' if mixed.size > 1 else ''} (first: "
            f"[{','.join(map(str, first))}]): the branch depends on the replica or partition "
            f"id" + _consequence(entry, instead),
            lines=(entry.line, conditional.line)))
    return findings


def _counterpart(program: Program, record: Conditional, entry: Entry, group: tuple[int, ...],
                 takes: np.ndarray, table: np.ndarray,
                 peers: Callable[[int], EntryPeers]) -> Entry | None:
    """What a member of ``group`` that skips ``entry`` issues on that group at the same place
    inside ``record`` instead (the entries before the conditional being the same for both):
    the k-th entry on the group in the branch it takes, where ``entry`` is the k-th of the
    branch taken by a member that issues it. None when it issues nothing there."""
    issuer = next(d for d in group if takes[d])
    skipper = next(d for d in group if not takes[d])

    def on_group(device: int) -> list[Entry]:
        branch = record.branches[int(table[device])]
        out = []
        for index in branch:
            other = program.entries[index]
            if other.stream != entry.stream or other.branches[-1][0] != record.instruction.name:
                continue
            found = peers(index)
            if found.pairs is None and found.flat.size and device <= found.flat.max() and \
                    found.group(int(found.group_rows(np.array([device]))[0])) == group:
                out.append(other)
        return out

    mine = on_group(issuer)
    theirs = on_group(skipper)
    k = next((i for i, e in enumerate(mine) if e.index == entry.index), -1)
    return theirs[k] if 0 <= k < len(theirs) else None


def _consequence(entry: Entry, instead: Entry | None) -> str:
    if instead is None:
        return ", so the members that skip it never arrive and the others wait forever."
    fields = [f for f in ("opcode", "shape", "dtype", "reduction")
              if getattr(entry, f) != getattr(instead, f)]
    said = (f"; the members that skip it issue {instead.name} (line {instead.line}) at that "
            f"place on the group instead, and collectives are paired by arrival order, so the "
            f"two are matched: ")
    if fields:
        return said + (f"they differ in {', '.join(fields)}, which gives garbage results or "
                       f"a crash.")
    return said + ("it does not hang, but each member combines its data with a collective of "
                   "the other branch.")
