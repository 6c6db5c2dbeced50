"""``join_logs``: what an HLO program has each device issue, set beside the sequence numbers
torch's watchdog logged for each rank (``_logs``).

torch numbers a process group's work itself: ``ProcessGroupNCCL::collective`` bumps
``seqCollective_`` once per collective (``if (!coalescing_state_) { seqCollective_++; }``),
``pointToPoint`` bumps a separate ``seqP2P_`` for each send and recv, ``startCoalescing``
bumps one of them once for a whole coalesced group (its ops share one ``seq_``), and
``initWork`` gives the work ``isP2P ? seqP2P_ : seqCollective_`` (torch/csrc/distributed/
c10d/ProcessGroupNCCL.cpp, ``initWork``, ``collective``, ``pointToPoint``, ``startCoalescing``;
ProcessGroupNCCL.hpp: ``seqCollective_`` counts "how many actual kernels we launched, which
differs from op_id_ when coalescing is enabled"). ``WorkNCCL(SeqNum=...)`` prints that
``seq_``; ``last enqueued work`` is the ``seq_`` of the last work ``workEnqueue`` queued and
``last completed work`` the ``seq_`` of the last one the watchdog saw complete
(``pgStatus_->lastEnqueuedSeq = work->seq_``, ``pgStatus_->lastCompletedSeq = work.seq_``).
So sequence number k of a group is the group's k-th collective counted from 1, p2p apart. A
send or recv is enqueued too (``pointToPoint``: "Enqueue P2P op so that it can be cancelled by
NCCL watchdog"), so a status logged right after one counts sends and receives: a status line
names no OpType, and is read here as counting collectives; a timeout's SEND or RECV is joined
with the device's sends, receives and permutes (one number each: how a permute splits into
torch's sends and receives is not logged).

The program's side: the collectives of ``Report.schedule(device, taken_only=True)`` the device
reaches (``_join.reached``), loop iterations counted, that run on the group: a collective whose
clique is the group's devices (the default group: every device of ``rank_devices``, else
every device of the program, one rank each), or, for a SEND/RECV, a send, recv or permute
between two of them. The k-th of those is sequence number k. A rank is joined at the sequence
number its watchdog says it timed out in, else at its last enqueued one (a rank that enqueued
nothing on the group is not joined).

Per rank: which collective that is (instruction, opcode, computation, loop iterations),
whether the logged OpType names that opcode, and whether NumelIn/NumelOut equal the element
counts of the collective's operands and result (where both sides give them). Per group whose
ranks stopped at different sequence numbers: each rank behind is explained by the program when
its device issues fewer collectives on the group than the ranks ahead reached, and is not
when the program has it issue the first disagreeing one as the others do.

Groups other than the default are joined when every rank that logged gives its global rank
(their devices are those ranks' devices); others are listed in ``skipped`` with the reason.

Bound: O(devices joined x collectives issued) for the schedules, O(ranks) after.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..hlo import parse_shape
from ._entry import Arrival
from ._join import differing_loops, loop_counts, place, reached
from ._logs import GroupStatus, LogReport, RankStatus
from ._report import Report

# torch's OpType names (c10d/Types.hpp, opTypeToString) for each HLO collective opcode.
_OP_TYPES = {
    "all-reduce": ("ALLREDUCE", "ALLREDUCE_COALESCED"),
    "all-gather": ("ALLGATHER", "_ALLGATHER_BASE", "ALLGATHER_COALESCED"),
    "reduce-scatter": ("REDUCE_SCATTER", "_REDUCE_SCATTER_BASE",
                       "REDUCE_SCATTER_TENSOR_COALESCED"),
    "all-to-all": ("ALLTOALL", "ALLTOALL_BASE"),
    "ragged-all-to-all": ("ALLTOALL", "ALLTOALL_BASE"),
    "collective-broadcast": ("BROADCAST",),
    "collective-permute": ("SEND", "RECV"),
    "send": ("SEND",), "recv": ("RECV",),
}
_P2P = ("SEND", "RECV")
_UNJUDGED = ("COALESCED", "UNKNOWN")  # a coalesced group: one seq_ for several ops


@dataclass(frozen=True)
class LogRankJoin:
    """One rank of one process group beside its device: the sequence number joined (``seq``,
    ``at``: ``timed out in`` or ``last enqueued``), the collectives the device issues on the
    group (``counted``), the one at ``seq`` (``name``, ``opcode``, ``computation``,
    ``iteration``; ``""`` and ``()`` when the program has it issue fewer), the logged
    ``op_type`` and whether it names that opcode (``op_agrees``; None when either side is
    unknown), and the element counts on both sides with ``numel_agrees`` (None when not both
    are known)."""

    rank: int
    device: int
    seq: int
    at: str
    counted: int
    name: str
    opcode: str
    computation: str
    iteration: tuple[tuple[str, int], ...]
    op_type: str | None
    op_agrees: bool | None
    numel: tuple[int | None, int | None]
    program_numel: tuple[int | None, int | None]
    numel_agrees: bool | None

    @property
    def agrees(self) -> bool:
        """True when the program has the device issue the logged sequence number and nothing
        logged about it differs from the program."""
        return bool(self.name) and self.op_agrees is not False and self.numel_agrees is not False

    def to_json(self) -> dict[str, object]:
        """JSON-ready (docs/cli-json.md)."""
        return {"rank": self.rank, "device": self.device, "seq": self.seq, "at": self.at,
                "counted": self.counted, "name": self.name, "opcode": self.opcode,
                "computation": self.computation,
                "iteration": [[loop, number] for loop, number in self.iteration],
                "op_type": self.op_type, "op_agrees": self.op_agrees,
                "numel_in": self.numel[0], "numel_out": self.numel[1],
                "program_numel_in": self.program_numel[0],
                "program_numel_out": self.program_numel[1],
                "numel_agrees": self.numel_agrees, "agrees": self.agrees}


@dataclass(frozen=True)
class Behind:
    """A rank the logs show behind: its ``rank`` and ``device``, the sequence number it
    stopped before (``seq``: the group's first disagreement), the collectives its device
    issues on the group (``counted``) and the most the ranks ahead's devices do (``ahead``),
    ``explained`` (the program has the device issue fewer) with the loops whose iterations
    differ (``loops``: name, iterations on the device, on a device ahead)."""

    rank: int
    device: int
    seq: int
    counted: int
    ahead: int
    ahead_devices: tuple[int, ...]
    explained: bool
    loops: tuple[tuple[str, int, int], ...]

    def to_json(self) -> dict[str, object]:
        """JSON-ready (docs/cli-json.md)."""
        return {"rank": self.rank, "device": self.device, "seq": self.seq,
                "counted": self.counted, "ahead": self.ahead,
                "ahead_devices": list(self.ahead_devices), "explained": self.explained,
                "loops": [list(loop) for loop in self.loops]}


@dataclass(frozen=True)
class LogGroupJoin:
    """One process group joined: ``pg_id``, ``desc``, the ``devices`` its collectives run on,
    its ranks (``ranks``), the ranks behind (``behind``) and the group's ranks the program
    has no device for (``unplaced``)."""

    pg_id: str
    desc: str
    devices: tuple[int, ...]
    ranks: tuple[LogRankJoin, ...]
    behind: tuple[Behind, ...]
    unplaced: tuple[int, ...]

    def to_json(self) -> dict[str, object]:
        """JSON-ready (docs/cli-json.md)."""
        return {"pg_id": self.pg_id, "desc": self.desc, "devices": list(self.devices),
                "ranks": [r.to_json() for r in self.ranks],
                "behind": [b.to_json() for b in self.behind], "unplaced": list(self.unplaced)}


@dataclass(frozen=True)
class LogJoin:
    """The process groups joined (``groups``), whether rank r was ``assumed`` to run device r,
    and the groups not joined with the reason (``skipped``)."""

    groups: tuple[LogGroupJoin, ...]
    assumed: bool
    skipped: tuple[tuple[str, str], ...]

    def to_json(self) -> dict[str, object]:
        """JSON-ready (docs/cli-json.md)."""
        return {"assumed": self.assumed, "groups": [g.to_json() for g in self.groups],
                "skipped": [{"pg_id": p, "reason": r} for p, r in self.skipped]}


def join_logs(program: Report, logs: LogReport,
              rank_devices: Mapping[int, int] | None = None) -> LogJoin:
    """Each torch process group of ``logs`` beside ``program`` rank by rank (module
    docstring); ranks map to devices by ``rank_devices`` (default: rank r runs device r)."""
    world = ([int(d) for d in program.devices] if rank_devices is None
             else sorted(int(d) for d in rank_devices.values()))
    schedules: dict[int, list[Arrival]] = {}

    def schedule(device: int) -> list[Arrival]:
        if device not in schedules:
            schedules[device] = reached(program.schedule(device, taken_only=True))
        return schedules[device]

    groups: list[LogGroupJoin] = []
    skipped: list[tuple[str, str]] = []
    for group in logs.groups:
        default = group.pg_id == "0" or group.desc == "default_pg"
        globals_ = {r: (r if default and s.global_rank is None else s.global_rank)
                    for r, s in group.ranks.items()}
        if any(g is None for g in globals_.values()):
            skipped.append((group.pg_id, "not every rank that logged gives its global rank "
                                         "([rank<g>]: prefix), so its devices are unknown"))
            continue
        ranks = {r: int(g) for r, g in globals_.items() if g is not None}
        placed, unplaced = place(program, sorted(ranks.values()), rank_devices)
        device_of = dict(placed)
        members = tuple(world) if default else tuple(sorted(device_of.values()))
        on = _Group(members)
        joined = tuple(_rank(ranks[r], device_of[ranks[r]], status,
                             on.on(schedule(device_of[ranks[r]]), status.blocked_op in _P2P))
                       for r, status in sorted(group.ranks.items()) if ranks[r] in device_of
                       if status.blocked_seq is not None or (status.enqueued or 0) > 0)
        groups.append(LogGroupJoin(group.pg_id, group.desc, members, joined,
                                   _behind(group, ranks, device_of, on, schedule),
                                   tuple(unplaced)))
    return LogJoin(tuple(groups), rank_devices is None, tuple(skipped))


class _Group:
    """A process group's devices, and which arrivals take its sequence numbers: its
    collectives (clique = the group's devices) or its sends and receives (``p2p``: clique
    within them). Each distinct clique object is measured once (schedules share them), so a
    rank costs O(arrivals) after the first."""

    def __init__(self, members: tuple[int, ...]) -> None:
        self.devices = frozenset(members)
        self._cliques: dict[int, tuple[tuple[int, ...], bool, bool]] = {}

    def on(self, arrivals: list[Arrival], p2p: bool) -> list[Arrival]:
        """The arrivals of ``arrivals`` that take a sequence number of the group: a send,
        recv or permute takes one for each time it is issued, however many peers it meets
        there (a device's permute arrives once per pair it is in)."""
        kept = []
        issued: set[tuple[object, ...]] = set()
        for arrival in arrivals:
            if (arrival.entry.stream != "collective") != p2p:
                continue
            if p2p:
                issue = (arrival.entry.program, arrival.entry.index, arrival.iteration)
                if issue in issued:
                    continue
            known = self._cliques.get(id(arrival.clique))
            if known is None or known[0] is not arrival.clique:
                within = self.devices.issuperset(arrival.clique)
                known = (arrival.clique, within and len(arrival.clique) == len(self.devices),
                         within)
                self._cliques[id(arrival.clique)] = known
            if known[2] if p2p else known[1]:
                kept.append(arrival)
                if p2p:
                    issued.add(issue)
        return kept


def _rank(rank: int, device: int, status: RankStatus, counted: list[Arrival]) -> LogRankJoin:
    blocked = status.blocked_seq
    seq = blocked if blocked is not None else int(status.enqueued or 0)
    at = "timed out in" if blocked is not None else "last enqueued"
    arrival = counted[seq - 1] if 0 < seq <= len(counted) else None
    op_type = status.blocked_op if blocked is not None else None
    numel = (status.numel_in, status.numel_out) if blocked is not None else (None, None)
    if arrival is None:
        return LogRankJoin(rank, device, seq, at, len(counted), "", "", "", (), op_type, None,
                           numel, (None, None), None)
    entry = arrival.entry
    # A send's, recv's or permute's entry carries no operand shapes: its input is not known.
    program_numel = (_elements(entry.operand_shapes) if entry.operand_shapes else None,
                     _elements((entry.shape,)))
    op_agrees = (None if op_type is None or op_type in _UNJUDGED
                 else op_type in _OP_TYPES.get(entry.opcode, ()))
    pairs = [(a, b) for a, b in zip(numel, program_numel, strict=True)
             if a is not None and b is not None]
    return LogRankJoin(rank, device, seq, at, len(counted), entry.name, entry.opcode,
                       entry.computation, arrival.iteration, op_type, op_agrees, numel,
                       program_numel, all(a == b for a, b in pairs) if pairs else None)


def _elements(shapes: Sequence[str]) -> int | None:
    """Elements of every array leaf of ``shapes`` (None when a dimension is dynamic)."""
    total = 0
    for text in shapes:
        for leaf in parse_shape(text).leaves():
            count = leaf.element_count
            if count is None:
                return None
            if leaf.element_type not in ("token", "TOKEN"):
                total += count
    return total


def _behind(group: GroupStatus, ranks: dict[int, int], device_of: dict[int, int],
            members: _Group, schedule: Callable[[int], list[Arrival]]) -> tuple[Behind, ...]:
    """Each rank behind, explained by the program or not (module docstring)."""
    if group.first_disagreement is None:
        return ()
    seq = group.first_disagreement
    p2p = group.disagreement_op in _P2P
    on = {r: members.on(schedule(device_of[ranks[r]]), p2p)
          for r in group.ranks if ranks[r] in device_of}
    ahead = [r for r in on if r not in group.behind]
    if not ahead:
        return ()
    most = max(len(on[r]) for r in ahead)
    ahead_devices = tuple(sorted(device_of[ranks[r]] for r in ahead))
    usual = max(ahead, key=lambda r: len(on[r]))
    answer = []
    for rank in (r for r in group.behind if r in on):
        loops = differing_loops(loop_counts(on[rank]), loop_counts(on[usual]))
        answer.append(Behind(ranks[rank], device_of[ranks[rank]], seq, len(on[rank]), most,
                             ahead_devices, len(on[rank]) < seq <= most, loops))
    return tuple(answer)
