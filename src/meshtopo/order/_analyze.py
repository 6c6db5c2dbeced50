"""``analyze``: every device's collective schedule from one module (SPMD) or several (MPMD),
matched by arrival order.

Each program is walked once (``_program``: its collectives as entries) and then run for all
its devices at once (``_execution``): branches and trip counts are decided per device, loops
expanded, so devices that take different paths get different sequences. When one sequence
serves every device of an SPMD module and every collective's groups are disjoint (checked
with one ``bincount`` per entry), every clique sees its collectives in one order and no
rendezvous can cross. Otherwise, and for MPMD programs, the sequences are replayed by
``_match.run`` and every finding comes from that replay (``_classify``).

A conditional or loop whose predicate depends on data and is not uniform within a group its
collectives use is a ``may_diverge`` finding: the program is run again with the assignment
``_execution`` proposes (which devices take which branch, or run one more iteration), and the
finding says what that run gives (the cycle, the missing guest or the mismatch). A loop past
the expansion limit is checked by its trip counts: unequal counts within a group are a
``missing`` finding that says the loop was counted, not expanded.

Bound: the execution's (``_execution``), then SPMD O(distinct entries x devices) numpy work;
replay O(rounds x devices) with rounds at most the total row length (see ``_match``); at
most ``CONSEQUENCE_LIMIT`` further runs for ``may_diverge``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._errors import InvalidArgumentError
from .._limits import check_size
from ..groups._placement import DeviceAssignment, as_device_assignment
from ..hlo import Module
from ._classify import Ref, async_overlaps, classify
from ._cliques import CliqueTable, EntryPeers, group_extremes, program_peers
from ._entry import Arrival, Finding
from ._execution import (
    ITERATION_LIMIT,
    Executor,
    Key,
    LoopLimit,
    Outcome,
    Pending,
    Step,
    key_of,
)
from ._linearizable import with_linearizer_note
from ._match import Rows, Run, run
from ._program import ARRIVE, WAIT, Program, walk
from ._report import Report
from ._schedule import SharedOrder

ASYNC_PAIR_LIMIT = 10_000
_OUTCOMES = {"deadlock": "the job deadlocks", "missing": "the job hangs",
             "mismatch": "mismatched collectives meet"}
CONSEQUENCE_LIMIT = 8
# One class's rows: (devices, kind, clique, ref, link), the last four per column.
_Block = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass
class _Walked:
    """A program ready to run: its walk, devices (global ids), placement and entries'
    groups."""

    program: Program
    devices: np.ndarray
    assignment: DeviceAssignment
    peers: list[EntryPeers]
    rendezvous: str = "clique"

    def execute(self, forced: dict[Key, np.ndarray] | None = None) -> Outcome:
        """The program run for its devices (``_execution``)."""
        replicas, partitions = (np.asarray(v) for v in self.assignment.logical_ids(self.devices))
        return Executor(self.program, self.devices, replicas, partitions,
                        self.peers.__getitem__, forced, self.rendezvous).run()


def analyze(programs: Module | Sequence[tuple[Module, ArrayLike]],
            device_assignment: DeviceAssignment | ArrayLike | None = None,
            rendezvous: str = "clique") -> Report:
    """Schedules and findings of ``programs``: a module every device runs (SPMD), or a list of
    ``(module, devices)`` (MPMD: each device runs one module; groups are computed with
    ``device_assignment``, default each module's own placement). Bounds: module docstring.

    ``rendezvous`` says which arrivals meet: ``clique`` (default: the n-th collective of each
    member on a clique, whatever the instruction, as NCCL orders a communicator under
    XLA:GPU) or ``op_id`` (XLA:CPU, whose rendezvous key also holds the channel id, so
    collectives of different channels never meet). Programs as JAX emits them, one channel
    for every collective of a kind, meet alike under both.

    A program's devices are devices of its device assignment (the replica_count x
    num_partitions devices it is compiled for), each listed once and running one program;
    ``InvalidArgumentError`` names any other device (a device outside the assignment can take
    part in none of the program's collectives)."""
    if isinstance(programs, Module):
        assignment = module_assignment(programs, device_assignment)
        devices = np.sort(assignment.array.reshape(-1))
        walked = _prepared(walk(programs, 0), devices, assignment, rendezvous)
        outcome = walked.execute()
        if len(outcome.sequences) == 1 and _shares_one_order(walked.program, walked.peers,
                                                              devices):
            return _spmd(walked, outcome)
        return _replayed([walked], [outcome], spmd=True)
    if not isinstance(programs, Sequence) or not programs:
        raise InvalidArgumentError(
            "analyze expects a module or a non-empty list of (module, devices) pairs")
    prepared = []
    seen: set[int] = set()
    for index, item in enumerate(programs):
        if not isinstance(item, tuple | list) or len(item) != 2 or not isinstance(item[0], Module):
            raise InvalidArgumentError(
                f"program {index} must be a (module, devices) pair, got {type(item).__name__}")
        module = item[0]
        ids = np.asarray(item[1], dtype=np.int64).reshape(-1)
        check_size(int(ids.size), f"the device list of program {index}")
        overlap = seen.intersection(ids.tolist())
        if overlap or np.unique(ids).size != ids.size:
            raise InvalidArgumentError(
                f"program {index} lists devices that run another program or repeat: "
                f"{sorted(overlap) or ids.tolist()}; each device runs one program")
        seen.update(ids.tolist())
        assignment = module_assignment(module, device_assignment)
        placed = assignment.array.reshape(-1)
        outside = ids[~np.isin(ids, placed)]
        if outside.size:
            raise InvalidArgumentError(
                f"program {index} ({module.name}) lists devices {outside.tolist()} that are not "
                f"in its device assignment: it runs on {placed.size} devices "
                f"(replica_count={module.replica_count} x num_partitions="
                f"{module.num_partitions}), {_spelled(np.sort(placed))}")
        prepared.append(_prepared(walk(module, index), ids, assignment, rendezvous))
    return _replayed(prepared, [w.execute() for w in prepared], spmd=False)


def _prepared(program: Program, devices: np.ndarray, assignment: DeviceAssignment,
              rendezvous: str = "clique") -> _Walked:
    peers = program_peers(program.entries, program.collectives, assignment,
                          program.module.source)
    return _Walked(program, devices, assignment, peers, CliqueTable(rendezvous).rendezvous)


def _spelled(devices: np.ndarray) -> str:
    """``devices 0..N-1`` for a range, else the first few ids."""
    if devices.size and np.array_equal(devices, np.arange(devices.size)):
        return f"devices 0..{devices.size - 1}"
    shown = ", ".join(map(str, devices[:8].tolist()))
    return f"devices {shown}{', ...' if devices.size > 8 else ''}"


def module_assignment(module: Module,
                      given: DeviceAssignment | ArrayLike | None) -> DeviceAssignment:
    """``given`` as a device assignment for ``module`` (the module's own when None), checked
    against its replica and partition counts."""
    if given is None:
        return module.device_assignment
    table = as_device_assignment(given if isinstance(given, DeviceAssignment)
                                 else DeviceAssignment(given))
    if table.array.shape != (module.replica_count, module.num_partitions):
        raise InvalidArgumentError(
            f"device_assignment is {table.array.shape[0]}x{table.array.shape[1]} but module "
            f"{module.name} has replica_count={module.replica_count} and "
            f"num_partitions={module.num_partitions}")
    return table


def _shares_one_order(program: Program, peers: list[EntryPeers], devices: np.ndarray) -> bool:
    """True when one sequence over disjoint groups is all there is: no send/recv (whose recv
    may be absent) and no device in two groups of one collective. O(entries + distinct
    groups x devices)."""
    return all(entry.stream != "send-recv" and (entry.stream != "collective" or peers_.disjoint)
               for entry, peers_ in zip(program.entries, peers, strict=True))


def _spmd(walked: _Walked, outcome: Outcome) -> Report:
    """One sequence, disjoint groups: nothing to replay; findings come only from what the
    execution set aside (data-dependent predicates, loops past the expansion limit). Each
    device's schedule is read from the sequence's shared columns (``SharedOrder``), made once
    for the listed steps and once for the steps taken, when first asked for."""
    program, peers, devices = walked.program, walked.peers, walked.devices
    findings = [*_limit_findings(walked, outcome.limits),
                *_may_diverge([walked], [outcome], 0, outcome.pending)]
    table = CliqueTable(walked.rendezvous)
    size = int(devices.max(initial=-1)) + 1
    orders: dict[bool, SharedOrder] = {}

    def order(taken_only: bool) -> SharedOrder:
        if taken_only not in orders:
            orders[taken_only] = (
                SharedOrder.from_steps(program.entries, peers, outcome.sequences[0].steps,
                                       table, size) if taken_only else
                SharedOrder(program.entries, peers, program.kinds, program.steps,
                            np.zeros(program.steps.size, dtype=np.int64), [()], table, size))
        return orders[taken_only]

    return Report(findings, devices, "device", True, [len(program.entries)],
                  lambda device: order(False).of(device), outcome.notes,
                  lambda device: order(True).of(device))


def _replayed(walked: list[_Walked], outcomes: list[Outcome], spmd: bool) -> Report:
    result, refs, findings = _matched(walked, outcomes)
    notes = [note for outcome in outcomes for note in outcome.notes]
    for index, (program, outcome) in enumerate(zip(walked, outcomes, strict=True)):
        findings.extend(_limit_findings(program, outcome.limits))
        findings.extend(_may_diverge(walked, outcomes, index, outcome.pending))
    rows = result.rows
    order = np.argsort(rows.devices)

    def schedule(device: int) -> list[Arrival]:
        return run_schedule(result, refs, int(np.flatnonzero(rows.devices == device)[0]))

    return Report(_unique(findings), rows.devices[order], "device", spmd,
                  [len(w.program.entries) for w in walked], schedule, notes)


def _matched(walked: list[_Walked], outcomes: list[Outcome]
             ) -> tuple[Run, list[Ref], list[Finding]]:
    """The replay of every program's sequences, and its findings."""
    table = CliqueTable(walked[0].rendezvous)
    refs: list[Ref] = []
    blocks: list[_Block] = []
    pairs: list[tuple[np.ndarray, int, int]] = []
    row = 0
    for program, outcome in zip(walked, outcomes, strict=True):
        for block, flying in _blocks(program, outcome, table, refs):
            blocks.append(block)
            ids = np.arange(row, row + block[0].size)
            pairs.extend((ids, first, second) for first, second in flying)
            row += block[0].size
    rows = _stack(blocks, table)
    result = run(rows)
    modules = [w.program.module for w in walked]
    findings = [with_linearizer_note(f, modules) for f in classify(result, refs, "device")]
    findings.extend(async_overlaps(result, refs, "device", pairs))
    return result, refs, findings


def _blocks(walked: _Walked, outcome: Outcome, table: CliqueTable, refs: list[Ref]
            ) -> list[tuple[_Block, list[tuple[int, int]]]]:
    """The rows of each class of ``walked`` (two columns per step: the two clique slots),
    their refs appended to ``refs`` (one per entry and iteration), and the columns of async
    arrivals in flight together. O(steps x devices of each class)."""
    program, peers = walked.program, walked.peers
    entries = list(zip(program.entries, peers, strict=True))
    groups = [(p.groups_key(), p.describe()) for _, p in entries]
    slots = (np.stack([table.slots(entry, p, walked.devices) for entry, p in entries])
             if entries else np.zeros((0, walked.devices.size, 2), np.int64))
    interned: dict[tuple[int, tuple[tuple[str, int], ...]], int] = {}
    out = []
    for sequence in outcome.sequences:
        count = len(sequence.steps)
        positions = sequence.positions
        check_size(2 * count * positions.size, f"the operation rows of program {program.index}")
        kinds = np.fromiter((s.kind for s in sequence.steps), np.int64, count)
        indices = np.fromiter((s.entry for s in sequence.steps), np.int64, count)
        ref_ids = np.empty(count, dtype=np.int64)
        link = np.full(2 * count, -1, dtype=np.int64)
        open_at: dict[int, list[int]] = {}
        for number, step in enumerate(sequence.steps):
            key = (step.entry, step.iteration)
            found = interned.get(key)
            if found is None:
                found = interned[key] = len(refs)
                refs.append(Ref(program.entries[step.entry], *groups[step.entry],
                                step.iteration))
            ref_ids[number] = found
            if step.kind == ARRIVE:
                open_at.setdefault(step.entry, []).append(number)
            else:
                started = open_at.get(step.entry)
                if started:
                    first = started.pop(0)
                    link[2 * number] = 2 * first
                    link[2 * number + 1] = 2 * first + 1
        clique = (slots[indices][:, positions, :].transpose(1, 0, 2).reshape(
            positions.size, 2 * count) if count else np.zeros((positions.size, 0), np.int64))
        block = (walked.devices[positions], np.repeat(kinds, 2), clique, np.repeat(ref_ids, 2),
                 link)
        out.append((block, _in_flight_pairs(program, sequence.steps)))
    return out


def _in_flight_pairs(program: Program, steps: list[Step]) -> list[tuple[int, int]]:
    """Arrive columns of async entries in flight together on one stream, first started first:
    grouped collectives (their one clique, slot 0) and collective-permutes (the point-to-point
    stream: each slot, the pair a device sends on and the pair it receives on); at most
    ``ASYNC_PAIR_LIMIT`` pairs."""
    in_flight: dict[str, list[tuple[int, int]]] = {"collective": [], "p2p": []}
    pairs: list[tuple[int, int]] = []
    for number, step in enumerate(steps):
        entry = program.entries[step.entry]
        if entry.done is None or entry.stream not in in_flight:
            continue
        flying = in_flight[entry.stream]
        if step.kind == ARRIVE:
            slots = (0,) if entry.stream == "collective" else (0, 1)
            for other, _ in flying:
                for first in slots:
                    for second in slots:
                        if len(pairs) < ASYNC_PAIR_LIMIT:
                            pairs.append((2 * other + first, 2 * number + second))
            flying.append((number, step.entry))
        else:
            done = next((i for i, (_, e) in enumerate(flying) if e == step.entry), None)
            if done is not None:
                flying.pop(done)
    return pairs


def _stack(blocks: list[_Block], table: CliqueTable) -> Rows:
    width = max((b[1].size for b in blocks), default=0)
    count = sum(b[0].size for b in blocks)
    check_size(width * count, "the per-device operation rows")
    kind = np.full((count, width), ARRIVE, dtype=np.int64)
    clique = np.full((count, width), -1, dtype=np.int64)
    ref = np.zeros((count, width), dtype=np.int64)
    link = np.full((count, width), -1, dtype=np.int64)
    length = np.zeros(count, dtype=np.int64)
    devices = np.zeros(count, dtype=np.int64)
    row = 0
    for ids, k, c, r, li in blocks:
        n, w = ids.size, k.size
        sl = slice(row, row + n)
        devices[sl] = ids
        kind[sl, :w] = k
        clique[sl, :w] = c
        ref[sl, :w] = r
        link[sl, :w] = li
        length[sl] = w
        row += n
    return Rows(devices, kind, clique, ref, link, length, table.members)


def _unique(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[object, ...]] = set()
    out = []
    for finding in findings:
        key = (finding.type, finding.devices, finding.instructions)
        if key not in seen:
            seen.add(key)
            out.append(finding)
    return out


def _limit_findings(walked: _Walked, limits: list[LoopLimit]) -> list[Finding]:
    """For each loop past the expansion limit: its trip counts must be equal within every
    group its collectives use; a ``missing`` finding names a group where they are not."""
    findings = []
    for limit in limits:
        trips = limit.trips
        for index in limit.entries:
            peers = walked.peers[index]
            size = int(max(peers.flat.max(initial=-1), walked.devices.max(initial=-1))) + 1
            table = np.full(size, -2, dtype=np.int64)
            table[walked.devices] = trips
            group_of = np.repeat(np.arange(peers.sizes.size), peers.sizes)
            low, high = group_extremes(group_of, table[peers.flat], peers.sizes.size)
            mixed = np.flatnonzero((low != high) & (low >= 0))
            if mixed.size == 0:
                continue
            group = peers.group(int(mixed[0]))
            counts: dict[int, list[int]] = {}
            for device in group:
                counts.setdefault(int(table[device]), []).append(device)
            fewest = min(counts)
            entry = walked.program.entries[index]
            loop = limit.instruction
            spelled = "; ".join(f"devices {devs} run {n} iteration{'s' if n != 1 else ''}"
                                for n, devs in sorted(counts.items()))
            waiting = sorted(d for n, devs in counts.items() if n > fewest for d in devs)
            findings.append(Finding(
                "missing", tuple(counts[fewest]), (entry.name, loop.name),
                f"while {loop.name} (line {loop.line}) runs more than {ITERATION_LIMIT} "
                f"iterations, so its iterations were counted, not expanded, and its trip counts "
                f"compared within every group its collectives use: in group "
                f"[{','.join(map(str, group))}] of {entry.name} (line {entry.line}) {spelled}; "
                f"devices {waiting} wait forever in {entry.name} at iteration {fewest}.",
                lines=(entry.line, loop.line), waiting=tuple(waiting)))
            break
    return findings


def _may_diverge(walked: list[_Walked], outcomes: list[Outcome], index: int,
                 pending: list[Pending]) -> list[Finding]:
    """One ``may_diverge`` finding per pending predicate whose assignment, run, gives a
    hang or a mismatch (at most ``CONSEQUENCE_LIMIT`` runs)."""
    findings = []
    for item in pending[:CONSEQUENCE_LIMIT]:
        forced = walked[index].execute({key_of(item.instruction): item.forced})
        trial = [*outcomes[:index], forced, *outcomes[index + 1:]]
        _, _, shown = _matched(walked, trial)
        shown = [f for f in shown if f.type in ("deadlock", "missing", "mismatch")]
        if not shown:
            continue
        consequence = shown[0]
        inst = item.instruction
        entry = walked[index].program.entries[item.entry]
        kind = "trip count" if inst.opcode == "while" else "predicate"
        origin = (f"{item.origin.opcode} {item.origin.name}, line {item.origin.line}"
                  if item.origin is not None else "data")
        group = ",".join(map(str, item.group[:16])) + (",..." if len(item.group) > 16 else "")
        message = (
            f"{inst.opcode} {inst.name} (line {inst.line}) may diverge: its {kind}, "
            f"{item.predicate}, depends on data ({origin}) that is not uniform over group "
            f"[{group}] of {entry.name} (line {entry.line}), so its members can disagree at "
            f"run time. If {item.text}, {_OUTCOMES[consequence.type]}: "
            f"{consequence.message[:1].lower()}{consequence.message[1:]}")
        findings.append(Finding(
            "may_diverge", tuple(sorted({*item.group, *consequence.devices,
                                         *consequence.waiting})),
            (inst.name, *consequence.instructions), message,
            lines=tuple(sorted({inst.line, entry.line, *consequence.lines} - {0}))))
    return findings


def run_schedule(result: Run, refs: list[Ref], row: int) -> list[Arrival]:
    """The arrivals of row ``row`` of a replay, in issue order."""
    rows = result.rows
    device = int(rows.devices[row])
    end_of: dict[int, int] = {}
    for col in range(int(rows.length[row])):
        if rows.kind[row, col] == WAIT and rows.link[row, col] >= 0:
            end_of[int(rows.link[row, col])] = int(result.passed[row, col])
    arrivals = []
    for col in range(int(rows.length[row])):
        event = int(result.event[row, col])
        if rows.kind[row, col] != ARRIVE or event < 0:
            continue
        clique = rows.members[int(result.event_clique[event])]
        ref = refs[int(rows.ref[row, col])]
        arrivals.append(Arrival(device, ref.entry, clique, clique.index(device),
                                int(result.event_position[event]), int(result.passed[row, col]),
                                end_of.get(col, int(result.passed[row, col])), ref.iteration))
    return arrivals
