"""``analyze``: every device's collective schedule from one module (SPMD) or several (MPMD),
matched by arrival order.

SPMD (one module, every device of its placement runs it): the program is walked once and each
entry's groups are computed once as arrays; a device's clique is looked up in them. When all
devices run one sequence over disjoint groups (checked with one ``bincount`` per entry), every
clique sees its collectives in one order, so no rendezvous can cross: only ``divergence``
(conditionals whose predicate differs between members) can break it, and that is what is
checked. Programs with send/recv (whose recv may be absent) or overlapping groups, and MPMD
programs, are replayed by ``_match.run``, each device passing over the entries of branches it
does not take (``_divergence.branch_choices``). The shared SPMD schedule lists every branch;
``Report.schedule(device, taken_only=True)`` only those taken (``issue_order``'s order).
Conditionals whose branch cannot be told are named in ``Report.notes``.

Bound: SPMD O(entries x devices) numpy work (the walk is O(instructions)); replay
O(rounds x devices) with rounds at most the total row length (see ``_match``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._errors import InvalidArgumentError
from .._limits import check_size
from .._placement import DeviceAssignment, as_device_assignment
from ..hlo import Module
from ._classify import Ref, async_overlaps, classify
from ._cliques import CliqueTable, EntryPeers, entry_peers
from ._divergence import Choices, branch_choices, divergences
from ._entry import Arrival, Finding
from ._linearizable import with_linearizer_note
from ._match import Rows, Run, run
from ._program import ARRIVE, WAIT, Program, walk
from ._report import Report

ASYNC_PAIR_LIMIT = 10_000
# One program's rows: (devices, kind, clique, ref, link), the last four per column.
_Block = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def analyze(programs: Module | Sequence[tuple[Module, ArrayLike]],
            device_assignment: DeviceAssignment | ArrayLike | None = None) -> Report:
    """Schedules and findings of ``programs``: a module every device runs (SPMD), or a list of
    ``(module, devices)`` (MPMD: each device runs one module; groups are computed with
    ``device_assignment``, default each module's own placement). Bounds: module docstring.

    A program's devices are devices of its device assignment (the replica_count x
    num_partitions devices it is compiled for), each listed once and running one program;
    ``InvalidArgumentError`` names any other device (a device outside the assignment can take
    part in none of the program's collectives)."""
    if isinstance(programs, Module):
        assignment = module_assignment(programs, device_assignment)
        devices = np.sort(assignment.array.reshape(-1))
        program = walk(programs, 0)
        peers = _peers(program, assignment)
        if _shares_one_order(program, peers, devices):
            return _spmd(program, peers, devices, assignment)
        return _replay([(program, devices, assignment)], spmd=True)
    if not isinstance(programs, Sequence) or not programs:
        raise InvalidArgumentError(
            "analyze expects a module or a non-empty list of (module, devices) pairs")
    walked = []
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
        walked.append((walk(module, index), ids, assignment))
    return _replay(walked, spmd=False)


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


def _peers(program: Program, assignment: DeviceAssignment) -> list[EntryPeers]:
    pairs = zip(program.entries, program.collectives, strict=True)
    source = program.module.source
    return [entry_peers(e, c, assignment, source) for e, c in pairs]


def _shares_one_order(program: Program, peers: list[EntryPeers], devices: np.ndarray) -> bool:
    """True when one sequence over disjoint groups is all there is: no send/recv (whose recv
    may be absent) and no device in two groups of one collective. O(entries x devices)."""
    size = int(devices.max(initial=-1)) + 1
    for entry, entry_peers_ in zip(program.entries, peers, strict=True):
        if entry.stream == "send-recv":
            return False
        if entry.stream == "collective" and entry_peers_.flat.size:
            inside = entry_peers_.flat[(entry_peers_.flat >= 0) & (entry_peers_.flat < size)]
            if np.bincount(inside, minlength=size).max(initial=0) > 1:
                return False
    return True


def _choices(program: Program, devices: np.ndarray, assignment: DeviceAssignment) -> Choices:
    replicas, partitions = (np.asarray(v) for v in assignment.logical_ids(devices))
    return branch_choices(program, devices, replicas, partitions)


def _spmd(program: Program, peers: list[EntryPeers], devices: np.ndarray,
          assignment: DeviceAssignment) -> Report:
    choices = _choices(program, devices, assignment)
    findings = divergences(program, devices, assignment, peers.__getitem__, choices)
    takes = choices.takes(program.entries) if choices.taken else None
    rows: dict[int, np.ndarray] = {}

    def row_of(index: int) -> np.ndarray:
        found = rows.get(index)
        if found is None:
            found = rows[index] = peers[index].group_rows(np.arange(int(devices.max()) + 1))
        return found

    def schedule(device: int) -> list[Arrival]:
        return _spmd_schedule(program, peers, row_of, device, None)

    def taken_schedule(device: int) -> list[Arrival]:
        column = int(np.searchsorted(devices, device))
        return _spmd_schedule(program, peers, row_of, device,
                              None if takes is None else takes[:, column])

    return Report(findings, devices, "device", True, [len(program.entries)], schedule,
                  choices.notes(), taken_schedule)


def _device_cliques(peers: EntryPeers, row: int, device: int,
                    opcode: str) -> list[tuple[int, ...]]:
    if peers.pairs is None:
        return [] if row < 0 else [peers.group(row)]
    cliques: list[tuple[int, ...]] = []
    for source, target in peers.pairs.tolist():
        if source == device and opcode != "recv":
            cliques.append((source, target))
    for source, target in peers.pairs.tolist():
        if target == device and opcode != "send":
            cliques.append((source, target))
    return cliques


def _spmd_schedule(program: Program, peers: list[EntryPeers],
                   row_of: Callable[[int], np.ndarray], device: int,
                   takes: np.ndarray | None) -> list[Arrival]:
    """The arrivals of ``device``: the entries it issues (``takes``, per entry: the branches
    it takes; None: all) in step order."""
    arrivals: list[Arrival] = []
    counts: dict[tuple[object, ...], int] = {}
    open_at: dict[int, list[int]] = {}
    steps = zip(program.kinds.tolist(), program.steps.tolist(), strict=True)
    for step, (kind, index) in enumerate(steps):
        entry = program.entries[index]
        if kind == WAIT:
            for i in open_at.pop(index, []):
                arrivals[i] = _ended(arrivals[i], step)
            continue
        if takes is not None and not takes[index]:
            continue
        row = int(row_of(index)[device]) if peers[index].pairs is None else -1
        for clique in _device_cliques(peers[index], row, device, entry.opcode):
            key = (entry.stream, entry.channel_id if entry.stream == "send-recv" else None, clique)
            position = counts.get(key, 0)
            counts[key] = position + 1
            open_at.setdefault(index, []).append(len(arrivals))
            arrivals.append(Arrival(device, entry, clique, clique.index(device), position, step,
                                    -1))
    return arrivals


def _ended(arrival: Arrival, step: int) -> Arrival:
    return Arrival(arrival.device, arrival.entry, arrival.clique, arrival.rank,
                   arrival.position, arrival.step, step)


def _replay(walked: list[tuple[Program, np.ndarray, DeviceAssignment]], spmd: bool) -> Report:
    table = CliqueTable()
    refs: list[Ref] = []
    blocks: list[_Block] = []
    findings: list[Finding] = []
    pairs: list[tuple[np.ndarray, int, int]] = []
    notes: list[str] = []
    offset = 0
    for program, devices, assignment in walked:
        peers = _peers(program, assignment)
        choices = _choices(program, devices, assignment)
        notes.extend(choices.notes())
        findings.extend(divergences(program, devices, assignment, peers.__getitem__, choices))
        blocks.append(_block(program, devices, peers, table, refs,
                             choices.takes(program.entries) if choices.taken else None))
        ids = np.arange(offset, offset + devices.size)
        pairs.extend((ids, first, second) for first, second in _in_flight_pairs(program))
        offset += devices.size
    rows = _stack(blocks, table)
    result = run(rows)
    modules = [p.module for p, _, _ in walked]
    findings.extend(with_linearizer_note(f, modules) for f in classify(result, refs, "device"))
    findings.extend(async_overlaps(result, refs, "device", pairs))
    order = np.argsort(rows.devices)

    def schedule(device: int) -> list[Arrival]:
        return run_schedule(result, refs, int(np.flatnonzero(rows.devices == device)[0]))

    return Report(_unique(findings), rows.devices[order], "device", spmd,
                  [len(p.entries) for p, _, _ in walked], schedule, notes)


def _block(program: Program, devices: np.ndarray, peers: list[EntryPeers], table: CliqueTable,
           refs: list[Ref], takes: np.ndarray | None) -> _Block:
    """The rows of ``program`` on ``devices``: two columns per step (the two clique slots,
    no-ops where ``takes[entry, device]`` says the device's branch skips the entry), its
    entries appended to ``refs``. O(steps x devices)."""
    base = len(refs)
    entries = list(zip(program.entries, peers, strict=True))
    refs.extend(Ref(entry, p.groups_key(), p.describe()) for entry, p in entries)
    slots = (np.stack([table.slots(entry, p, devices) for entry, p in entries]) if entries
             else np.zeros((0, devices.size, 2), np.int64))
    steps, kinds = program.steps, program.kinds
    length = 2 * steps.size
    check_size(length * devices.size, f"the operation rows of program {program.index}")
    if takes is not None and slots.size:
        slots = np.where(takes[:, :, None], slots, -1)
    clique = slots[steps].transpose(1, 0, 2).reshape(devices.size, length)
    arrive_step = np.full(len(program.entries), -1, dtype=np.int64)
    arrive_idx = np.flatnonzero(kinds == ARRIVE)
    arrive_step[steps[arrive_idx]] = arrive_idx
    link = np.full(length, -1, dtype=np.int64)
    wait_idx = np.flatnonzero(kinds == WAIT)
    link[2 * wait_idx] = 2 * arrive_step[steps[wait_idx]]
    link[2 * wait_idx + 1] = 2 * arrive_step[steps[wait_idx]] + 1
    return devices, np.repeat(kinds.astype(np.int64), 2), clique, np.repeat(steps + base, 2), link


def _unique(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[object, ...]] = set()
    out = []
    for finding in findings:
        key = (finding.type, finding.devices, finding.instructions)
        if key not in seen:
            seen.add(key)
            out.append(finding)
    return out


def _in_flight_pairs(program: Program) -> list[tuple[int, int]]:
    """Arrive columns of async entries in flight together on one stream, first started first:
    grouped collectives (their one clique, slot 0) and collective-permutes (the point-to-point
    stream: each slot, the pair a device sends on and the pair it receives on); at most
    ``ASYNC_PAIR_LIMIT`` pairs."""
    in_flight: dict[str, list[int]] = {"collective": [], "p2p": []}
    pairs: list[tuple[int, int]] = []
    steps = zip(program.kinds.tolist(), program.steps.tolist(), strict=True)
    for step, (kind, index) in enumerate(steps):
        entry = program.entries[index]
        if entry.done is None or entry.stream not in in_flight:
            continue
        flying = in_flight[entry.stream]
        if kind == ARRIVE:
            slots = (0,) if entry.stream == "collective" else (0, 1)
            for other in flying:
                for first in slots:
                    for second in slots:
                        if len(pairs) < ASYNC_PAIR_LIMIT:
                            pairs.append((2 * other + first, 2 * step + second))
            flying.append(step)
        else:
            in_flight[entry.stream] = [s for s in flying if int(program.steps[s]) != index]
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
        entry = refs[int(rows.ref[row, col])].entry
        arrivals.append(Arrival(device, entry, clique, clique.index(device),
                                int(result.event_position[event]), int(result.passed[row, col]),
                                end_of.get(col, int(result.passed[row, col]))))
    return arrivals
