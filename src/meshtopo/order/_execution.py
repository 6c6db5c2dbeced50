"""What each device issues: a program run for all its devices at once, its control flow
decided per device, into per-device step sequences for the matcher.

The module is evaluated as the devices run it, with a leading device axis on every value
(``mt.hlo.evaluate``): constants, ``replica-id``, ``partition-id`` and everything computed
from them are known per device, through calls, fusions, tuples, ``get-tuple-element``,
loop-carried values, ``select``, ``convert``, ``compare`` and arithmetic. A ``conditional``
sends each device into the branch its selector picks; a ``while`` runs its condition and body
for each device until its condition is false (``known_trip_count`` stands in where the
condition is not known), each iteration's collectives entering the schedule with the
iteration number. Devices that take different paths split into classes; each class has one
sequence of steps (``Sequence``: arrive/wait, entry, iteration).

Values computed from data are ``Unknown``, with what is known of them: over which devices
they are surely equal (*uniform*). A constant is uniform everywhere, an entry parameter where
its ``sharding`` puts the same data (``mt.hlo.same_data_labels``: ``{replicated}`` everywhere,
a tiled sharding with replicated dimensions within each copy group); the result of an
all-reduce, all-gather or collective-broadcast over a group is uniform within each group;
other data is per device; an operation on values is uniform where all its operands are. A conditional or loop whose predicate depends on data:

- is entered by every device at every branch in branch order, or for one iteration (the
  schedule's listing; a note says so);
- is clean when its branches issue equivalent collectives (same groups, opcodes, shapes,
  types and reductions in the same order), or when the predicate is uniform within every
  group its collectives use (every member takes the same branch, whatever it is);
- otherwise is *pending*: a ``Pending`` names the predicate, a group it is not uniform over,
  and a concrete assignment (which devices take which branch, or run one iteration more)
  that ``analyze`` runs to show what it gives (``may_diverge``).

Expansion is bounded: a loop runs at most ``ITERATION_LIMIT`` expanded iterations; past that
its iterations are counted, not recorded (up to the trip limit, ``mt.get_trip_limit()``, or
``ITERATION_LIMIT`` when that is lower), and the trip counts must be equal within every group
its collectives use (``LoopLimit``). At most ``STEP_LIMIT`` steps are recorded in all
(``LimitError`` past it).

A computation without control flow or calls is straight-line code: its steps are the span
the walk recorded for it, taken at once, and only the instructions its root depends on are
evaluated (none for the entry computation, whose result nothing reads).

Bound: O(instructions evaluated) Python work, each O(devices) numpy work at most (known
values and uniformity only), plus O(steps) to record a straight-line span; devices that share
a path share every record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import repeat
from typing import NamedTuple

import numpy as np

from .._errors import InvalidArgumentError, LimitError, MeshtopoError
from .._limits import get_trip_limit
from ..hlo import (
    EVALUATED_OPCODES,
    Computation,
    Instruction,
    branch_computations,
    branch_indices,
    evaluate,
    same_data_labels,
)
from ._cliques import CliqueTable, EntryPeers, group_extremes
from ._program import (
    ARRIVE,
    DESCENDED,
    Program,
    Site,
    called_computation,
    trip_count,
)

ITERATION_LIMIT = 4096
STEP_LIMIT = 4_000_000
VALUE_LIMIT = 1 << 16
PER_DEVICE = 0  # the uniformity source under which every device holds its own value
# The collectives (their start forms too) whose result every member of a group holds.
_UNIFORM_RESULTS = frozenset({"all-reduce", "all-gather", "collective-broadcast"})
_CONTROL = frozenset({"while", "conditional"})


@dataclass(frozen=True)
class Unknown:
    """A value computed from data: ``sources`` are the uniformity sources whose labels it is
    equal under (empty: the same on every device), ``origin`` the instruction where data
    entered it (None for a uniform constant too large to hold)."""

    sources: frozenset[int]
    origin: Instruction | None


Value = np.ndarray | Unknown | tuple["Value", ...]
Key = tuple[str, str]  # an instruction: (computation name, name); names repeat across them


def key_of(inst: Instruction) -> Key:
    """The key of ``inst`` in the execution's tables."""
    return (inst.computation, inst.name)
Iteration = tuple[tuple[str, int], ...]  # (loop name, iteration number), outermost first


class Step(NamedTuple):
    """One step of a device's sequence: ``kind`` (ARRIVE or WAIT) of entry ``entry``, in
    ``iteration`` of the loops around it."""

    kind: int
    entry: int
    iteration: Iteration


@dataclass(frozen=True)
class Pending:
    """A conditional or loop whose predicate depends on data and is not uniform within a
    group its collectives use: ``instruction`` (the conditional or while), ``predicate``
    (the instruction computing it), ``origin`` (where data entered the predicate),
    ``group`` (devices of that group, global ids), ``entry`` (the collective using it), and
    the assignment that shows it: ``forced``, a choice per device position (a branch index,
    or for a loop the number of iterations it runs), -1 where the device is free; an
    ``Executor`` given ``{key_of(instruction): forced}`` runs it."""

    instruction: Instruction
    predicate: str
    origin: Instruction | None
    group: tuple[int, ...]
    entry: int
    forced: np.ndarray
    text: str


@dataclass(frozen=True)
class LoopLimit:
    """A loop past ``ITERATION_LIMIT``: its trip count per device position (-1: did not
    reach it, or past the trip limit), and the entries its body and condition issue."""

    instruction: Instruction
    trips: np.ndarray
    entries: tuple[int, ...]


@dataclass
class Sequence:
    """The steps one class of devices (positions ``positions``) issues, in order."""

    positions: np.ndarray
    steps: list[Step]


@dataclass
class Outcome:
    """A program's execution: the classes' sequences, notes on data-dependent control flow,
    the pending predicates, the loops past the expansion limit and the loops whose trip count
    depends on data (``data_loops``: their keys; one iteration of each is in the sequences)."""

    sequences: list[Sequence]
    notes: list[str] = field(default_factory=list)
    pending: list[Pending] = field(default_factory=list)
    limits: list[LoopLimit] = field(default_factory=list)
    data_loops: frozenset[Key] = frozenset()


@dataclass(frozen=True)
class _Context:
    """Where evaluation stands: the devices (a subset id), the call sites that led here and
    the iteration of each enclosing loop."""

    subset: int
    sites: Site
    iteration: Iteration

    def inside(self, inst: Instruction, subset: int | None = None,
               iteration: int | None = None) -> _Context:
        """The context of a computation ``inst`` calls: for ``subset`` (default the same), in
        ``iteration`` of ``inst`` when it is a loop."""
        return _Context(self.subset if subset is None else subset,
                        (*self.sites, (inst.computation, inst.name)),
                        self.iteration if iteration is None
                        else (*self.iteration, (inst.name, iteration)))


class _Sources:
    """Uniformity sources: label arrays over the program's device positions (equal labels:
    equal values); positions outside the subset a source was made in share label -1."""

    def __init__(self, count: int) -> None:
        self.labels: list[np.ndarray | Callable[[], np.ndarray]] = [
            np.arange(count, dtype=np.int64)]

    def add(self, labels: np.ndarray | Callable[[], np.ndarray]) -> int:
        """A new source: its labels, or a function that makes them when first needed."""
        self.labels.append(labels)
        return len(self.labels) - 1

    def of(self, source: int) -> np.ndarray:
        found = self.labels[source]
        if callable(found):
            found = self.labels[source] = found()
        return found

    def meet(self, sources: frozenset[int]) -> np.ndarray:
        """One label per position, equal where every source's labels are."""
        count = self.of(PER_DEVICE).size
        out = np.zeros(count, dtype=np.int64)
        for source in sorted(sources):
            if source == PER_DEVICE:
                return self.of(PER_DEVICE)
            labels = self.of(source)
            pair = out * (int(labels.max(initial=0)) + 2) + labels + 1
            out = np.unique(pair, return_inverse=True)[1].reshape(-1).astype(np.int64)
        return out


def _positions_of(subset_positions: np.ndarray, count: int, rows: np.ndarray) -> np.ndarray:
    labels = np.full(count, -1, dtype=np.int64)
    labels[subset_positions] = rows
    return labels


class Executor:
    """Runs ``program`` for the devices at positions ``0..n-1`` of ``devices`` (global ids,
    with their replica and partition ids); ``peers(entry)`` gives an entry's groups;
    ``forced`` overrides data-dependent choices (``Pending.forced``); ``rendezvous`` is what
    meets (``CliqueTable``), for telling equivalent branches."""

    def __init__(self, program: Program, devices: np.ndarray, replicas: np.ndarray,
                 partitions: np.ndarray, peers: Callable[[int], EntryPeers],
                 forced: dict[Key, np.ndarray] | None = None,
                 rendezvous: str = "clique") -> None:
        self.program = program
        self.module = program.module
        self.devices = np.asarray(devices, dtype=np.int64)
        self.replicas = np.asarray(replicas, dtype=np.int64)
        self.partitions = np.asarray(partitions, dtype=np.int64)
        self.peers = peers
        self.forced = forced or {}
        self.streams = CliqueTable(rendezvous)
        self.count = self.devices.size
        self.sources = _Sources(self.count)
        self.subsets: list[np.ndarray] = [np.arange(self.count)]
        self.segments: list[tuple[int, list[Step]]] = []
        self.recorded = 0
        self.muted = 0
        self.notes: dict[Key, str] = {}
        self.pending: dict[Key, Pending] = {}
        self.limits: list[LoopLimit] = []
        self.data_loops: set[Key] = set()
        self._result_kinds: dict[Key, str] = {}
        self._issuing = program.issuing
        self._group_labels: dict[int, np.ndarray] = {}
        self._group_sources: dict[int, int] = {}
        self._per_device = Unknown(frozenset({PER_DEVICE}), None)
        self._plans: dict[str, list[Instruction] | None] = {}

    def run(self) -> Outcome:
        """Evaluate the entry computation and return the classes' sequences."""
        entry = self.module.entry
        arguments = [self._entry_parameter(p) for p in self._parameters(entry)]
        self.computation(entry, arguments, _Context(0, (), ()), needed=False)
        return Outcome(self._sequences(), list(self.notes.values()),
                       list(self.pending.values()), self.limits, frozenset(self.data_loops))

    # Evaluation.

    def computation(self, computation: Computation, arguments: list[Value],
                    context: _Context, needed: bool = True) -> Value:
        """The value of ``computation``'s root with its parameters bound to ``arguments``
        for the devices of ``context.subset``, recording the steps its collectives make.

        Straight-line code (``_straight``) records its steps as one span of the walk and
        evaluates only what its root depends on (nothing when the root is not ``needed``);
        other code is evaluated instruction by instruction."""
        root = computation.root
        if root is None:
            raise InvalidArgumentError(f"computation {computation.name} has no instructions")
        values: dict[str, Value] = {}
        plan = self._straight(computation)
        if plan is None:
            for inst in self.program.order(computation):
                values[inst.name] = self.instruction(inst, values, arguments, context)
            return values[root.name]
        self._record_span(context, computation)
        if not needed:
            return self._per_device
        for inst in plan:
            values[inst.name] = self._value(inst, values, arguments, context)
        return values[root.name]

    def _straight(self, computation: Computation) -> list[Instruction] | None:
        """None when ``computation`` has control flow or calls a computation; otherwise the
        instructions its root depends on, in order (a value elsewhere decides nothing: no
        predicate reads it). Made once per computation; an operand its computation does not
        define is refused as ``instruction`` refuses it."""
        name = computation.name
        if name in self._plans:
            return self._plans[name]
        order = self.program.order(computation)
        plan: list[Instruction] | None = None
        if not any(inst.collective is None and (
                inst.opcode in _CONTROL or inst.opcode in DESCENDED) for inst in order):
            defined: set[str] = set()
            for inst in order:
                for operand in inst.operands:
                    if operand not in defined:
                        raise _undefined(inst, operand)
                defined.add(inst.name)
            wanted = {computation.root.name} if computation.root is not None else set()
            for inst in reversed(order):
                if inst.name in wanted:
                    wanted.update(inst.operands)
            plan = [inst for inst in order if inst.name in wanted]
        self._plans[name] = plan
        return plan

    def instruction(self, inst: Instruction, values: dict[str, Value], arguments: list[Value],
                    context: _Context) -> Value:
        """The value of ``inst`` (its steps recorded first)."""
        steps = self.program.steps_at((*context.sites, (inst.computation, inst.name)))
        for kind, entry in steps:
            self._record(context, kind, entry)
        return self._value(inst, values, arguments, context, steps)

    def _value(self, inst: Instruction, values: dict[str, Value], arguments: list[Value],
               context: _Context, steps: tuple[tuple[int, int], ...] | None = None) -> Value:
        """The value of ``inst``, its steps recorded (``steps``: those it makes where it
        stands, looked up when None)."""
        opcode = inst.opcode
        try:
            operands = [values[name] for name in inst.operands]
        except KeyError as missing:
            raise _undefined(inst, missing.args[0]) from None
        if opcode == "parameter":
            number = int(inst.operand_text.strip() or -1)
            if 0 <= number < len(arguments):
                return arguments[number]
            return self._per_device
        if opcode == "tuple":
            return tuple(operands)
        if opcode == "get-tuple-element":
            whole = operands[0] if operands else self._per_device
            index = int(inst.attributes.get("index", "0"))
            if isinstance(whole, tuple):
                return whole[index] if 0 <= index < len(whole) else self._per_device
            return whole
        if inst.collective is not None:
            if steps is None:
                steps = self.program.steps_at((*context.sites, (inst.computation, inst.name)))
            return self._collective_value(inst, operands, steps)
        if opcode == "while":
            return self._loop(inst, operands, context)
        if opcode == "conditional":
            return self._conditional(inst, operands, context)
        if opcode in DESCENDED and inst.called_computations:
            return self._called(inst, operands, context)
        return self._data(inst, operands, context)

    def _parameters(self, computation: Computation) -> list[Instruction]:
        found = [i for i in computation.instructions if i.opcode == "parameter"]
        return sorted(found, key=lambda i: int(i.operand_text.strip() or 0))

    def _entry_parameter(self, parameter: Instruction) -> Value:
        """An entry parameter's data: the same on the partitions its ``sharding`` gives the
        same piece (of one replica; replicas are fed apart), else per device."""
        labels = same_data_labels(parameter.attributes.get("sharding", ""),
                                  self.module.num_partitions)
        if labels is None:
            return Unknown(frozenset({PER_DEVICE}), parameter)
        by_device = labels[self.partitions] * self.module.replica_count + self.replicas
        if np.unique(by_device).size == 1:
            return Unknown(frozenset(), parameter)
        return Unknown(frozenset({self.sources.add(by_device)}), parameter)

    def _called(self, inst: Instruction, operands: list[Value], context: _Context) -> Value:
        """A call, fusion, async wrapper or custom call: its computations are evaluated where
        they can issue collectives, every operand is known, or a known operand differs
        between devices (what the callee makes of it decides the result's uniformity);
        otherwise the result is the operands' data."""
        names = inst.called_computations
        issuing = any(name in self._issuing for name in names)
        known = [o for o in _leaves(operands) if isinstance(o, np.ndarray)]
        if inst.opcode in ("call", "fusion") and len(names) == 1 and (
                issuing or len(known) == len(list(_leaves(operands)))
                or any(o.shape[0] > 1 for o in known)):
            return self.computation(self._callee(inst, names[0]), operands,
                                    context.inside(inst))
        if issuing:
            for name in names:
                callee = self._callee(inst, name)
                count = len(self._parameters(callee))
                arguments: list[Value] = (operands if len(operands) == count
                                          else [self._per_device] * count)
                self.computation(callee, arguments, context.inside(inst))
        if inst.opcode == "custom-call":
            return Unknown(frozenset({PER_DEVICE}), inst)
        return self._combined(operands, context, inst)

    def _callee(self, inst: Instruction, name: str) -> Computation:
        return called_computation(self.module, name, inst)

    def _data(self, inst: Instruction, operands: list[Value], context: _Context) -> Value:
        """A data instruction: evaluated when its operands are known (and small), else what
        is known of its uniformity."""
        opcode = inst.opcode
        if opcode in ("rng", "rng-bit-generator", "rng-get-and-update-state", "infeed"):
            return Unknown(frozenset({PER_DEVICE}), inst)
        known = all(isinstance(o, np.ndarray) for o in operands)
        if opcode in EVALUATED_OPCODES and known:
            shape = inst.shape
            if shape.tuple_shapes is None and not shape.is_dynamic:
                elements = int(np.prod(shape.dimensions, dtype=np.int64))
                batch = max([1, *(o.shape[0] for o in operands if isinstance(o, np.ndarray))])
                if opcode in ("replica-id", "partition-id"):
                    batch = self.subsets[context.subset].size
                if elements * batch <= VALUE_LIMIT:
                    positions = self.subsets[context.subset]
                    try:
                        return evaluate(inst, [o for o in operands if isinstance(o, np.ndarray)],
                                        self.replicas[positions], self.partitions[positions])
                    except (MeshtopoError, ValueError, IndexError, KeyError, TypeError):
                        pass
        return self._combined(operands, context, inst)

    def _combined(self, operands: list[Value], context: _Context, inst: Instruction) -> Unknown:
        """What is known of a value computed from ``operands``: uniform where they all are."""
        leaves = list(_leaves(operands))
        for value in leaves:
            if isinstance(value, Unknown) and PER_DEVICE in value.sources:
                return value if value.origin is not None else Unknown(value.sources, inst)
        sources: set[int] = set()
        origin: Instruction | None = None
        for value in leaves:
            if isinstance(value, Unknown):
                sources |= value.sources
                origin = origin or value.origin
            elif value.shape[0] > 1:
                sources.add(self._value_source(value, context))
        return Unknown(frozenset(sources), origin or (inst if sources else None))

    def _value_source(self, value: np.ndarray, context: _Context) -> int:
        positions = self.subsets[context.subset]
        rows = np.unique(value.reshape(value.shape[0], -1), axis=0, return_inverse=True)[1]
        return self.sources.add(_positions_of(positions, self.count, rows.reshape(-1)))

    def _collective_value(self, inst: Instruction, operands: list[Value],
                          steps: tuple[tuple[int, int], ...]) -> Value:
        """A collective's result: a done passes its start's on; an all-reduce, all-gather or
        collective-broadcast is uniform within each of its groups; others are per device.
        ``steps`` are those ``inst`` makes where it stands."""
        kind = self._result_kinds.get(key_of(inst))
        if kind is None:
            collective = inst.collective
            assert collective is not None
            opcode = collective.underlying_opcode
            kind = self._result_kinds[key_of(inst)] = (
                "passed" if collective.is_done or inst.opcode == "async-update" else
                "grouped" if opcode in _UNIFORM_RESULTS else "per-device")
        if kind == "passed":
            return operands[0] if operands else self._per_device
        if kind == "grouped" and steps:
            return Unknown(frozenset({self._group_source(steps[0][1])}), inst)
        return Unknown(frozenset({PER_DEVICE}), inst)

    # Control flow.

    def _conditional(self, inst: Instruction, operands: list[Value],
                     context: _Context) -> Value:
        names = branch_computations(inst)
        if not operands or len(operands) != len(names) + 1:
            raise InvalidArgumentError(
                f"conditional {inst.name} (line {inst.line}) has {len(operands)} operands for "
                f"{len(names)} branches")
        selector, arguments = operands[0], operands[1:]
        positions = self.subsets[context.subset]
        forced = self.forced.get(key_of(inst))
        if forced is not None and (forced[positions] >= 0).all():
            chosen = forced[positions]
        elif isinstance(selector, np.ndarray):
            chosen = np.broadcast_to(branch_indices(inst, selector.reshape(-1)),
                                     (positions.size,))
        else:
            return self._data_conditional(inst, self._combined([selector], context, inst),
                                          arguments, names, context)
        results: list[tuple[np.ndarray, Value]] = []
        for branch in np.unique(chosen).tolist():
            mask = chosen == branch
            subset = context.subset if mask.all() else self._subset(positions[mask])
            value = self.computation(
                self._callee(inst, names[branch]), [_sliced(arguments[branch], mask)],
                context.inside(inst, subset))
            results.append((mask, value))
        return self._merged(results, chosen, context, inst)

    def _data_conditional(self, inst: Instruction, selector: Unknown, arguments: list[Value],
                          names: list[str], context: _Context) -> Value:
        """Every branch in branch order for every device, and what the predicate's data means
        for the collectives in them (module docstring)."""
        inner = context.inside(inst)
        captured: list[list[tuple[int, list[Step]]]] = []
        results: list[Value] = []
        for number, name in enumerate(names):
            with self._capture() as steps:
                results.append(self.computation(self._callee(inst, name), [arguments[number]],
                                                inner))
            captured.append(steps)
        for steps in captured:
            self._replay(steps)
        if any(_arrivals(steps) for steps in captured):
            verdict = ("its branches issue equivalent collectives, so members agree whichever "
                       "they take" if self._equivalent(captured, context.subset)
                       else self._uniformity(inst, selector, captured, context, names))
            self._note(inst, selector, "every branch is entered, in branch order", verdict)
        value = self._combined([selector, *results], context, inst)
        return value

    def _loop(self, inst: Instruction, operands: list[Value], context: _Context) -> Value:
        condition = self._callee(inst, inst.attributes.get("condition", "").lstrip("%"))
        body = self._callee(inst, inst.attributes.get("body", "").lstrip("%"))
        state = operands[0] if operands else self._per_device
        known_trips = trip_count(inst)
        forced = self.forced.get(key_of(inst))
        subset = context.subset
        positions = self.subsets[subset]
        sites = context.inside(inst).sites
        finished: list[tuple[np.ndarray, Value]] = []
        trips = np.full(self.count, -1, dtype=np.int64)
        iteration = 0
        limited = False
        counted = max(get_trip_limit(), ITERATION_LIMIT)
        while True:
            here = context.inside(inst, subset, iteration)
            with self._muted(limited):
                predicate = self.computation(condition, [state], here)
            if forced is not None and (forced[positions] >= 0).all():
                going = iteration < forced[positions]
            elif isinstance(predicate, np.ndarray):
                going = np.broadcast_to(predicate.reshape(-1) != 0, (positions.size,))
            elif known_trips is not None:
                going = np.full(positions.size, iteration < known_trips)
            else:
                value = self._data_loop(inst, self._combined([predicate], context, inst), state,
                                        body, here, positions)
                finished.append((positions, value))
                break
            if not going.all():
                stopping = positions[~going]
                trips[stopping] = iteration
                finished.append((stopping, _sliced(state, ~going)))
                positions = positions[going]
                state = _sliced(state, going)
                if positions.size == 0:
                    break
                subset = self._subset(positions)
            if limited and (iteration >= counted or known_trips is not None):
                # Counted no further: known_trip_count holds for every device, else unknown.
                trips[positions] = -1 if known_trips is None else known_trips
                finished.append((positions, self._combined([state], context, inst)))
                break
            if iteration == ITERATION_LIMIT and not limited:
                limited = True
                continue
            with self._muted(limited):
                state = self.computation(body, [state],
                                         context.inside(inst, subset, iteration))
            iteration += 1
        if limited:
            entries = tuple(sorted({e for steps in self._entries_under(sites) for e in steps}))
            self.limits.append(LoopLimit(inst, trips, entries))
            counts = sorted(set(trips[self.subsets[context.subset]].tolist()))
            spelled = " or ".join(f"more than {counted}" if n < 0 else f"{n}"
                                  for n in counts)
            self.notes.setdefault(key_of(inst), (
                f"while {inst.name} (line {inst.line}) runs {spelled} iterations: the first "
                f"{ITERATION_LIMIT} are in the schedules, the rest are counted, and the trip "
                f"counts are compared within every group its collectives use"))
        return self._joined(finished, context, trips, inst)

    def _data_loop(self, inst: Instruction, predicate: Unknown, state: Value,
                   body: Computation, context: _Context, positions: np.ndarray) -> Value:
        """One iteration of a loop whose predicate depends on data, for every device, and
        what that predicate means for the collectives its body issues."""
        self.data_loops.add(key_of(inst))
        with self._capture() as steps:
            after = self.computation(body, [state], context)
        self._replay(steps)
        if _arrivals(steps):
            verdict = self._uniformity(inst, predicate, [steps], context, None)
            self._note(inst, predicate, "one iteration of its body is matched", verdict)
        return self._combined([predicate, state, after], context, inst)

    def _note(self, inst: Instruction, predicate: Unknown, how: str, verdict: str) -> None:
        kind = "predicate" if inst.opcode == "conditional" else "trip count"
        self.notes.setdefault(key_of(inst), (
            f"{inst.opcode} {inst.name} (line {inst.line}): its {kind} depends on data "
            f"({_origin(predicate)}); {how}; {verdict}"))

    def _uniformity(self, inst: Instruction, predicate: Unknown,
                    captured: list[list[tuple[int, list[Step]]]], context: _Context,
                    names: list[str] | None) -> str:
        """Whether ``predicate`` is uniform within every group the captured collectives use
        (among the devices of ``context``), in words; a ``Pending`` is recorded when not."""
        positions = self.subsets[context.subset]
        labels = self.sources.meet(predicate.sources)
        for number, steps in enumerate(captured):
            for entry in _arrivals(steps):
                group_of = self._group_labels_of(entry)
                rows = group_of[positions]
                inside = rows < self.count
                if not inside.any():
                    continue
                mine = labels[positions][inside]
                rows = rows[inside]
                low, high = group_extremes(rows, mine, self.count + 1)
                mixed = np.flatnonzero(low != high)
                mixed = mixed[high[mixed] > np.iinfo(np.int64).min]
                if mixed.size == 0:
                    continue
                members = positions[inside][rows == mixed[0]]
                self._pend(inst, predicate, labels, members, entry, number, names, positions)
                name = self.program.entries[entry].name
                return (f"it is not uniform within group {self._spelled(np.sort(members))} of "
                        f"{name}, so members can disagree (a may_diverge finding)")
        return "it is uniform within every group its collectives use, so members agree"

    def _pend(self, inst: Instruction, predicate: Unknown, labels: np.ndarray,
              members: np.ndarray, entry: int, number: int, names: list[str] | None,
              positions: np.ndarray) -> None:
        if key_of(inst) in self.pending:
            return
        forced = np.full(self.count, -1, dtype=np.int64)
        first = labels[members[0]]
        alike = positions[labels[positions] == first]
        others = positions[labels[positions] != first]
        if names is not None:
            other = 1 if number == 0 else 0
            forced[alike] = number
            forced[others] = other
            text = (f"devices {self._spelled(alike)} take branch {number} and devices "
                    f"{self._spelled(others)} branch {other}")
        else:
            forced[alike] = 1
            forced[others] = 0
            text = (f"devices {self._spelled(alike)} run one iteration and devices "
                    f"{self._spelled(others)} none")
        self.pending[key_of(inst)] = Pending(
            inst, self._predicate_text(inst), predicate.origin,
            tuple(int(d) for d in self.devices[np.sort(members)]), entry,
            forced, text)

    def _predicate_text(self, inst: Instruction) -> str:
        """The instruction that computes ``inst``'s predicate: a conditional's first operand,
        a loop condition's root."""
        if inst.opcode == "while":
            condition = self.module.computations.get(
                inst.attributes.get("condition", "").lstrip("%"))
            found = None if condition is None else condition.root
        else:
            found = self.module.computations[inst.computation].instruction(inst.operands[0])
        return (f"{found.opcode} {found.name} (line {found.line})" if found is not None
                else "its predicate")

    def _spelled(self, positions: np.ndarray) -> str:
        ids = self.devices[positions].tolist()
        shown = ",".join(map(str, ids[:16]))
        return f"[{shown}{',...' if len(ids) > 16 else ''}]"

    def _equivalent(self, captured: list[list[tuple[int, list[Step]]]], subset: int) -> bool:
        """True when every branch issues the same collectives in the same order: one
        sequence for all the devices, equal signatures and group lists step by step."""
        keys = []
        for steps in captured:
            if any(s != subset for s, _ in steps):
                return False
            keys.append([(step.kind, entry.signature(), self.streams.stream_key(entry),
                          self.peers(step.entry).groups_key())
                         for _, part in steps for step in part
                         for entry in (self.program.entries[step.entry],)])
        return all(k == keys[0] for k in keys[1:])

    # Merging values of devices that took different paths.

    def _merged(self, results: list[tuple[np.ndarray, Value]], chosen: np.ndarray,
                context: _Context, inst: Instruction) -> Value:
        if len(results) == 1:
            return results[0][1]
        positions = self.subsets[context.subset]
        split = self.sources.add(_positions_of(positions, self.count, chosen))
        return _merge(results, positions.size, split, inst)

    def _joined(self, finished: list[tuple[np.ndarray, Value]], context: _Context,
                trips: np.ndarray, inst: Instruction) -> Value:
        positions = self.subsets[context.subset]
        if len(finished) == 1:
            return finished[0][1]
        where = np.searchsorted(positions, np.concatenate([p for p, _ in finished]))
        masks = []
        offset = 0
        for part, _ in finished:
            mask = np.zeros(positions.size, dtype=bool)
            mask[where[offset:offset + part.size]] = True
            masks.append(mask)
            offset += part.size
        split = self.sources.add(_positions_of(positions, self.count, trips[positions]))
        return _merge([(m, v) for m, (_, v) in zip(masks, finished, strict=True)],
                      positions.size, split, inst)

    # Recording.

    def _subset(self, positions: np.ndarray) -> int:
        self.subsets.append(positions)
        return len(self.subsets) - 1

    def _record(self, context: _Context, kind: int, entry: int) -> None:
        if self.muted:
            return
        self.recorded += 1
        if self.recorded > STEP_LIMIT:
            raise LimitError(
                f"module {self.module.name} issues more than {STEP_LIMIT} collective steps "
                f"once its loops are expanded")
        step = Step(kind, entry, context.iteration)
        if self.segments and self.segments[-1][0] == context.subset:
            self.segments[-1][1].append(step)
        else:
            self.segments.append((context.subset, [step]))

    def _record_span(self, context: _Context, computation: Computation) -> None:
        """``_record`` for every step ``computation`` makes where ``context`` stands, at once."""
        span = self.program.spans.get((context.sites, computation.name))
        if self.muted or span is None or span[0] == span[1]:
            return
        first, end = span
        self.recorded += end - first
        if self.recorded > STEP_LIMIT:
            raise LimitError(
                f"module {self.module.name} issues more than {STEP_LIMIT} collective steps "
                f"once its loops are expanded")
        steps = list(map(Step, self.program.kinds[first:end].tolist(),
                         self.program.steps[first:end].tolist(),
                         repeat(context.iteration, end - first)))
        if self.segments and self.segments[-1][0] == context.subset:
            self.segments[-1][1].extend(steps)
        else:
            self.segments.append((context.subset, steps))

    @contextmanager
    def _capture(self) -> Iterator[list[tuple[int, list[Step]]]]:
        saved = self.segments
        self.segments = []
        captured = self.segments
        try:
            yield captured
        finally:
            self.segments = saved

    def _replay(self, steps: list[tuple[int, list[Step]]]) -> None:
        for subset, part in steps:
            if self.segments and self.segments[-1][0] == subset:
                self.segments[-1][1].extend(part)
            else:
                self.segments.append((subset, list(part)))

    @contextmanager
    def _muted(self, muted: bool) -> Iterator[None]:
        self.muted += muted
        try:
            yield
        finally:
            self.muted -= muted

    def _entries_under(self, sites: Site) -> Iterator[list[int]]:
        depth = len(sites)
        for key, steps in self.program.actions.items():
            if key[:depth] == sites:
                yield [entry for _, entry in steps]

    def _group_labels_of(self, entry: int) -> np.ndarray:
        """Per position, the index of the group (or pair) of ``entry`` holding it; positions
        in none get ``count`` (a label no group has)."""
        found = self._group_labels.get(entry)
        if found is None:
            peers = self.peers(entry)
            size = int(max(peers.flat.max(initial=-1), self.devices.max(initial=-1))) + 1
            row_of = np.full(size, self.count, dtype=np.int64)
            if peers.pairs is None:
                row_of[peers.flat] = np.repeat(np.arange(peers.sizes.size), peers.sizes)
            else:
                # A pair's two devices share its label; a device in two pairs takes the first.
                for column in (1, 0):
                    row_of[peers.pairs[:, column]] = np.arange(len(peers.pairs))
            found = self._group_labels[entry] = row_of[self.devices]
        return found

    def _group_source(self, entry: int) -> int:
        """The uniformity source of ``entry``'s groups (made when a predicate needs it)."""
        key = id(self.peers(entry))  # entries naming one list share its source
        found = self._group_sources.get(key)
        if found is None:
            def labels() -> np.ndarray:
                rows = self._group_labels_of(entry)
                return np.where(rows == self.count, self.count + 1 + np.arange(self.count), rows)

            found = self._group_sources[key] = self.sources.add(labels)
        return found

    def _sequences(self) -> list[Sequence]:
        """The classes' sequences: devices that recorded the same segments, then merged
        when their steps are the same."""
        if all(subset == 0 for subset, _ in self.segments):
            steps = [step for _, part in self.segments for step in part]
            return [Sequence(np.arange(self.count), steps)]
        label = np.zeros(self.count, dtype=np.int64)
        for subset in sorted({s for s, _ in self.segments if s != 0}):
            inside = np.zeros(self.count, dtype=bool)
            inside[self.subsets[subset]] = True
            label = np.unique(label * 2 + inside, return_inverse=True)[1].reshape(-1)
        by_steps: dict[tuple[Step, ...], list[np.ndarray]] = {}
        for value in np.unique(label).tolist():
            positions = np.flatnonzero(label == value)
            member = int(positions[0])
            mine = tuple(step for subset, part in self.segments
                         if subset == 0 or _holds(self.subsets[subset], member)
                         for step in part)
            by_steps.setdefault(mine, []).append(positions)
        return [Sequence(np.sort(np.concatenate(parts)), list(mine))
                for mine, parts in by_steps.items()]


def _undefined(inst: Instruction, name: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"{inst.opcode} {inst.name} (line {inst.line}) uses {name!r}, which its computation "
        f"does not define")


def _holds(sorted_positions: np.ndarray, position: int) -> bool:
    at = int(np.searchsorted(sorted_positions, position))
    return at < sorted_positions.size and int(sorted_positions[at]) == position


def _arrivals(steps: list[tuple[int, list[Step]]]) -> list[int]:
    """The entries the captured steps arrive at, each once, in order."""
    return list(dict.fromkeys(step.entry for _, part in steps for step in part
                              if step.kind == ARRIVE))


def _origin(value: Unknown) -> str:
    origin = value.origin
    if origin is None:
        return "data"
    return f"{origin.opcode} {origin.name}, line {origin.line}"


def _leaves(values: list[Value]) -> Iterator[np.ndarray | Unknown]:
    for value in values:
        if isinstance(value, tuple):
            yield from _leaves(list(value))
        else:
            yield value


def _sliced(value: Value, mask: np.ndarray) -> Value:
    """``value`` for the devices where ``mask`` holds."""
    if isinstance(value, tuple):
        return tuple(_sliced(v, mask) for v in value)
    if isinstance(value, np.ndarray) and value.shape[0] > 1:
        return value[mask]
    return value


def _merge(results: list[tuple[np.ndarray, Value]], count: int, split: int,
           inst: Instruction) -> Value:
    """One value from the values of devices that took different paths (each ``mask``)."""
    values = [v for _, v in results]
    if all(isinstance(v, tuple) for v in values):
        lengths = {len(v) for v in values if isinstance(v, tuple)}
        if len(lengths) == 1:
            return tuple(_merge([(m, v[i]) for m, v in results if isinstance(v, tuple)],
                                count, split, inst)
                         for i in range(lengths.pop()))
    if all(isinstance(v, np.ndarray) for v in values):
        arrays = [v for v in values if isinstance(v, np.ndarray)]
        if len({(a.shape[1:], a.dtype) for a in arrays}) == 1:
            out = np.empty((count, *arrays[0].shape[1:]), dtype=arrays[0].dtype)
            for mask, array in zip((m for m, _ in results), arrays, strict=True):
                out[mask] = array if array.shape[0] > 1 else array[0]
            return out
    sources: set[int] = {split}
    origin = None
    for leaf in _leaves(values):
        if isinstance(leaf, Unknown):
            sources |= leaf.sources
            origin = origin or leaf.origin
        elif leaf.shape[0] > 1:
            return Unknown(frozenset({PER_DEVICE}), inst)
    return Unknown(frozenset(sources), origin or inst)
