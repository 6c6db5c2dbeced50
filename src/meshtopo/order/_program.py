"""One program's collectives in issue order: the module walked once, for every device that
runs it.

The walk follows the schedule of a module with ``is_scheduled=true`` (each computation's
instructions in text order, which is XLA's sequence) and otherwise a topological order that
respects operands and ``control-predecessors`` (ties broken by text order). It descends into
``call``, fusions, non-collective ``async-start`` wrappers, ``while`` (condition, then body, once:
the trip count from ``backend_config``'s ``known_trip_count`` is recorded on each entry, None
when unknown) and every ``conditional`` branch in branch order (each entry records its branch;
``_execution`` decides which branches and how many iterations each device runs).

Each collective becomes an ``Entry`` and one or two steps: a sync op arrives and waits; a
``-start``/``async-start``/``send``/``recv`` arrives, its ``-done`` waits. Host transfers and
``async-update`` are skipped.

Bound: O(instructions reached), each computation walked once per call site; at most
``get_collective_limit()`` entries (``LimitError`` past it; ``mt.collective_limit``) and ``DEPTH_LIMIT`` nested calls. The call
graph has no cycles: the reader refuses a computation called before it is defined, as XLA does.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field, replace

import numpy as np

from .._errors import InvalidArgumentError, LimitError
from .._limits import get_collective_limit
from ..hlo import Collective, Computation, Instruction, Module
from ._entry import Entry

ARRIVE, WAIT = 0, 1
# Where the walk reached an instruction: (computation, instruction) of each call site that
# leads to it, outermost first, then its own (names repeat across computations).
Site = tuple[tuple[str, str], ...]
DEPTH_LIMIT = 64
_TRIP = re.compile(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(\d+)')
# Opcodes whose called computations are walked where they stand (besides while and
# conditional).
DESCENDED = frozenset({"call", "fusion", "async-start", "custom-call"})
_WALKED = DESCENDED | {"while", "conditional"}
_P2P = frozenset({"send", "recv", "send-done", "recv-done"})
_STREAMS = {"collective-permute": "p2p", "send": "send-recv", "recv": "send-recv"}
# An entry's opcode, stream, payload shape, dtype, operand shapes and reduction.
_Form = tuple[str, str, str, str, tuple[str, ...], str | None]


@dataclass
class Conditional:
    """A conditional reached by the walk: the instruction, its computation and, per branch,
    the indices of the entries issued inside it."""

    instruction: Instruction
    computation: Computation
    branches: list[list[int]] = field(default_factory=list)


@dataclass
class Loop:
    """A while loop reached by the walk: the instruction, its computation, and the indices of
    the entries issued in its condition and body."""

    instruction: Instruction
    computation: Computation
    entries: list[int] = field(default_factory=list)


@dataclass
class Program:
    """A module's entries and steps (``kinds[i]`` is ARRIVE or WAIT of entry ``steps[i]``),
    with the collective and the issuing instruction behind each entry, the conditionals and
    loops met on the way, the steps each instruction makes where the walk reached it
    (``steps_at``) and the computations that issue a collective, themselves or through
    what they call (``issuing``), and the order each computation's instructions run in
    (``order``), and the steps each computation makes where the walk reached it
    (``spans``: a half-open range of ``steps``, keyed by the call sites that lead to it and
    its name)."""

    module: Module
    index: int
    entries: list[Entry]
    collectives: list[Collective]
    kinds: np.ndarray
    steps: np.ndarray
    conditionals: list[Conditional]
    loops: list[Loop] = field(default_factory=list)
    instructions: list[Instruction] = field(default_factory=list)
    actions: dict[Site, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    issuing: frozenset[str] = frozenset()
    orders: dict[str, list[Instruction]] = field(default_factory=dict)
    spans: dict[tuple[Site, str], tuple[int, int]] = field(default_factory=dict)

    def order(self, computation: Computation) -> list[Instruction]:
        """``computation_order`` of ``computation`` in this module, computed once."""
        return _ordered(self.orders, computation, self.module.is_scheduled)

    def steps_at(self, site: Site) -> tuple[tuple[int, int], ...]:
        """The steps (kind, entry index) an instruction makes where the walk reached it:
        ``site`` is the call sites that lead to it (calls, fusions, loops, branches, outermost
        first) and then itself, each as (computation name, instruction name); () for an
        instruction that issues nothing."""
        return self.actions.get(site, ())


def walk(module: Module, index: int = 0) -> Program:
    """Walk ``module`` from its entry computation (bounds in the module docstring)."""
    walker = _Walker(module, index)
    walker.computation(module.entry, (), (), (), ())
    return Program(
        module, index, walker.entries, walker.collectives,
        np.array(walker.kinds, dtype=np.int8), np.array(walker.step_entries, dtype=np.int64),
        walker.conditionals, walker.loops, walker.instructions, walker.actions,
        frozenset(walker.issuing), walker.orders, walker.spans,
    )  # fmt: skip


def computation_order(computation: Computation, is_scheduled: bool) -> list[Instruction]:
    """The schedule (text order) of a scheduled module, else a topological order over operands
    and control predecessors with text order breaking ties: the text order itself when it is
    one (as XLA prints), without a heap. O(n log n) in instructions."""
    instructions = computation.instructions
    if is_scheduled:
        return list(instructions)
    position = {inst.name: i for i, inst in enumerate(instructions)}
    if all(position.get(name, -1) < i for i, inst in enumerate(instructions)
           for names in (inst.operands, inst.control_predecessors) for name in names):
        return list(instructions)
    waiting = [0] * len(instructions)
    users: list[list[int]] = [[] for _ in instructions]
    for i, inst in enumerate(instructions):
        for name in {*inst.operands, *inst.control_predecessors}:
            j = position.get(name)
            if j is not None and j != i:
                waiting[i] += 1
                users[j].append(i)
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order: list[Instruction] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(instructions[i])
        for user in users[i]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, user)
    if len(order) != len(instructions):
        left = sorted(set(range(len(instructions))) - {position[i.name] for i in order})
        raise InvalidArgumentError(
            f"computation {computation.name} has a dependency cycle through "
            f"{instructions[left[0]].name} (line {instructions[left[0]].line})"
        )
    return order


def _ordered(orders: dict[str, list[Instruction]], computation: Computation,
             is_scheduled: bool) -> list[Instruction]:
    """``computation_order`` of ``computation``, kept in ``orders`` by name."""
    found = orders.get(computation.name)
    if found is None:
        found = orders[computation.name] = computation_order(computation, is_scheduled)
    return found


def called_computation(module: Module, name: str, inst: Instruction) -> Computation:
    """The computation ``name`` that ``inst`` calls; ``InvalidArgumentError`` naming the
    instruction when the module does not define it."""
    found = module.computations.get(name)
    if found is None:
        raise InvalidArgumentError(
            f"{inst.opcode} {inst.name} (line {inst.line}) calls {name!r}, which the module "
            f"does not define")
    return found


def trip_count(instruction: Instruction) -> int | None:
    """``known_trip_count`` from a ``while``'s ``backend_config``, None when absent."""
    found = _TRIP.search(instruction.attributes.get("backend_config", ""))
    # XLA's count is an int64; a larger text is held at the largest.
    return min(int(found.group(1)), np.iinfo(np.int64).max) if found else None


def payload_shape(collective: Collective) -> str:
    """The shape of the data a collective delivers (a start's result element, a recv's
    buffer), as text."""
    shape = collective.shape
    opcode = collective.opcode
    if shape.tuple_shapes and opcode in (
        "all-gather-start", "collective-permute-start", "async-start", "recv",
    ):  # fmt: skip
        index = 0 if opcode == "recv" else 1
        if len(shape.tuple_shapes) > index:
            shape = shape.tuple_shapes[index]
    if opcode == "send":
        operand = collective.operand_shapes[0] if collective.operand_shapes else None
        shape = operand or shape
    return str(shape)


def _dtype(shape_text: str) -> str:
    return shape_text.lstrip("(").split("[", 1)[0]


class _Walker:
    def __init__(self, module: Module, index: int) -> None:
        self.module = module
        self.index = index
        self.entries: list[Entry] = []
        self.collectives: list[Collective] = []
        self.instructions: list[Instruction] = []
        self.kinds: list[int] = []
        self.step_entries: list[int] = []
        self.conditionals: list[Conditional] = []
        self.loops: list[Loop] = []
        self.actions: dict[Site, tuple[tuple[int, int], ...]] = {}
        self.issuing: set[str] = set()
        self.orders: dict[str, list[Instruction]] = {}
        self.spans: dict[tuple[Site, str], tuple[int, int]] = {}
        self.opcodes: dict[tuple[str, str | None], str] = {}
        self.forms: dict[tuple[object, ...], _Form] = {}
        # The computations that hold a collective instruction (of a scheduled module, one
        # that holds none and calls nothing makes no step: it is not walked, nor read).
        self.holding = {c.instruction.computation for c in module.collectives}

    def computation(self, computation: Computation, loops: tuple[tuple[str, int | None], ...],
                    branches: tuple[tuple[str, int], ...], stack: tuple[str, ...],
                    sites: Site) -> None:
        if len(stack) >= DEPTH_LIMIT:
            raise LimitError(f"calls nest deeper than {DEPTH_LIMIT} at {computation.name}")
        stack = (*stack, computation.name)
        started: dict[str, int] = {}
        first_step = len(self.kinds)
        if (self.module.is_scheduled and computation.name not in self.holding
                and not computation.called_computations):
            self.spans[(sites, computation.name)] = (first_step, first_step)
            return
        for inst in _ordered(self.orders, computation, self.module.is_scheduled):
            collective = inst.collective
            if collective is None and inst.opcode not in _WALKED:
                continue
            inner_sites = (*sites, (computation.name, inst.name))
            if collective is not None:
                first = len(self.kinds)
                self.collective(inst, collective, started, loops, branches)
                if len(self.kinds) > first:
                    self.actions[inner_sites] = tuple(zip(
                        self.kinds[first:], self.step_entries[first:], strict=True))
            elif inst.opcode == "while":
                inner = (*loops, (inst.name, trip_count(inst)))
                first = len(self.entries)
                for key in ("condition", "body"):
                    name = inst.attributes.get(key, "").lstrip("%")
                    self.computation(self.called(name, inst), inner, branches, stack,
                                     inner_sites)
                self.loops.append(Loop(inst, computation, list(range(first, len(self.entries)))))
            elif inst.opcode == "conditional":
                record = Conditional(inst, computation)
                self.conditionals.append(record)
                for number, name in enumerate(inst.called_computations):
                    first = len(self.entries)
                    self.computation(self.called(name, inst), loops,
                                     (*branches, (inst.name, number)), stack, inner_sites)
                    record.branches.append(list(range(first, len(self.entries))))
            elif inst.opcode in DESCENDED:
                for name in inst.called_computations:
                    self.computation(self.called(name, inst), loops, branches, stack,
                                     inner_sites)
        if len(self.kinds) > first_step:
            self.issuing.add(computation.name)
        self.spans[(sites, computation.name)] = (first_step, len(self.kinds))

    def called(self, name: str, inst: Instruction) -> Computation:
        return called_computation(self.module, name, inst)

    def form(self, collective: Collective) -> _Form:
        """What an entry says of the operation ``collective`` performs, computed once per
        distinct written form (opcode, result and operand shapes, reduction computation)."""
        written = (collective.opcode, collective.wrapped_opcode)
        opcode = self.opcodes.get(written)
        if opcode is None:
            opcode = self.opcodes[written] = collective.underlying_opcode
        stream = _STREAMS.get(opcode, "collective")
        # Only a grouped collective's operands are compared; a send's payload is its operand.
        texts = (tuple(collective.operand_shape_texts)
                 if stream == "collective" or collective.opcode == "send" else ())
        key = (*written, collective.shape_text, collective.to_apply, texts)
        found = self.forms.get(key)
        if found is None:
            shape = payload_shape(collective)
            operands = (tuple(str(s) for s in collective.operand_shapes if s is not None)
                        if stream == "collective" else ())
            found = self.forms[key] = (opcode, stream, shape, _dtype(shape), operands,
                                       collective.reduction)
        return found

    def collective(self, inst: Instruction, collective: Collective, started: dict[str, int],
                   loops: tuple[tuple[str, int | None], ...],
                   branches: tuple[tuple[str, int], ...]) -> None:
        if collective.opcode in _P2P and collective.attributes.get("is_host_transfer") == "true":
            return
        if inst.opcode == "async-update":
            if inst.operands and inst.operands[0] in started:
                started[inst.name] = started[inst.operands[0]]
            return
        if collective.is_done:
            start = inst.operands[0] if inst.operands else collective.start
            index = started.pop(start or "", None)
            if index is not None:
                self.entries[index] = replace(self.entries[index], done=inst.name)
                self.kinds.append(WAIT)
                self.step_entries.append(index)
            return
        limit = get_collective_limit()
        if len(self.entries) >= limit:
            raise LimitError(
                f"module {self.module.name} issues more than {limit} collectives (reached at "
                f"{inst.name}, line {inst.line}); raise the limit with "
                "meshtopo.set_collective_limit(n) or meshtopo.collective_limit(n)")
        index = len(self.entries)
        opcode, stream, shape, dtype, operands, reduction = self.form(collective)
        self.entries.append(Entry(
            index=index, name=inst.name, opcode=opcode, stream=stream, shape=shape,
            dtype=dtype, operand_shapes=operands,
            reduction=reduction, channel_id=collective.channel_id, line=inst.line,
            column=inst.column, computation=inst.computation, program=self.index, loops=loops,
            branches=branches,
        ))  # fmt: skip
        self.collectives.append(collective)
        self.instructions.append(inst)
        self.kinds.append(ARRIVE)
        self.step_entries.append(index)
        if collective.is_async:
            started[inst.name] = index
        else:
            self.kinds.append(WAIT)
            self.step_entries.append(index)

