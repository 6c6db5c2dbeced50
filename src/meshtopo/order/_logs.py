"""``from_logs``: the log lines of a hang, from any number of per-rank or per-host files, in
any mix, read into one account per process group (torch), communicator (NCCL) and rendezvous
(XLA).

Three families are read, wherever they sit in a line (launchers prefix lines with hosts,
ranks and timestamps, and interleave ranks):

- torch's ProcessGroupNCCL watchdog: a prefix ``[PG ID <id> PG GUID <guid> Rank <r>]`` (older
  torch: ``[Rank <r>]``; the torch logger's ``[rank<g>]:`` gives the global rank), then
  ``Watchdog caught collective operation timeout: WorkNCCL(SeqNum=<n>, OpType=<op>,
  NumelIn=<i>, NumelOut=<o>, ...)`` (the operation the rank is blocked in) and ``last enqueued
  NCCL work: <n>, last completed NCCL work: <m>`` (in its timeout, exception, dump-signal and
  periodic status lines);
- NCCL with ``NCCL_DEBUG=INFO``: ``<host>:<pid>:<tid> [<dev>] NCCL INFO ... comm <ptr> rank
  <r> nranks <n> cudaDev <d> [nvmlDev <d>] [busId <b>] [commId <id>] ... Init COMPLETE``
  (which process holds which rank of which communicator, on which host and device) and
  ``<Op>: opCount <hex> ... count <n> datatype <t> ... comm <ptr> [nranks=<n>]`` (each
  operation a process issues);
- XLA's rendezvous warning: ``This thread has been waiting for `<name>` for <s> seconds and
  may be stuck. Expected <n> threads to join the rendezvous`` (or ``All <n> threads joined
  the rendezvous``, the leader being stuck).

A line cut short keeps what it holds: a status line without its completed count, a watchdog
line without its sizes. Per group (or communicator), ranks are behind when they enqueued (or
issued) fewer operations than the most any rank did; the first operation where the ranks
disagree is the one after the fewest enqueued, else after the fewest completed (torch logs
-1 for a group that has enqueued nothing: the first is then #1). A rank that
logged only a later status replaces its earlier counts (lines are read in file order).

Communicators are told apart by ``commId`` (NCCL >= 2.19 prints it), else by their size and
the processes that hold them. A process's global rank is its rank in the largest
communicator (the default group's, whose ranks are the global ranks).

Bound: O(lines) regular-expression work, O(processes + operations) after.
"""

from __future__ import annotations

import gzip
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import InvalidArgumentError

_GLOBAL = re.compile(r"\[rank(\d+)\]:")
_PG = re.compile(r"\[PG ID (\d+) PG GUID ([^\s\]]+?)(?:\(([^)\]]*)\))? Rank (\d+)\]")
_OLD_PG = re.compile(r"\[Rank (\d+)\]")
# A number counts only where what follows it shows it is whole (a cut line ends mid-number).
_WORK = re.compile(r"WorkNCCL\(SeqNum=(\d+)(?=[,)])(?:, OpType=(\w+)(?=[,)]))?"
                   r"(?:, NumelIn=(\d+)(?=[,)]))?(?:, NumelOut=(\d+)(?=[,)]))?")
_CAUGHT = "Watchdog caught collective operation timeout"
_ENQUEUED = re.compile(r"last enqueued (?:NCCL )?work: (-?\d+)(?=[.,])(?:, last completed "
                       r"(?:NCCL )?work: (-?\d+)(?=[.,]))?", re.IGNORECASE)
_NCCL_HEAD = re.compile(r"([\w.\-]+):(\d+):(\d+) \[(\d+)\](?: [\d.]+)? NCCL INFO ")
_INIT = re.compile(r"comm (0x[0-9a-fA-F]+) rank (\d+) nranks (\d+) cudaDev (\d+)"
                   r"(?: nvmlDev \d+)?(?: busId ([0-9a-fA-F]+))?(?: commId (0x[0-9a-fA-F]+))?")
_OPCOUNT = re.compile(r"NCCL INFO (\w+): opCount ([0-9a-fA-F]+)(?:.*? count (\d+))?"
                      r"(?:.*? comm (0x[0-9a-fA-F]+))?(?: \[nranks=(\d+)\])?")
_RENDEZVOUS = re.compile(r"This thread has been waiting for `([^`]*)`(?: for (\d+) seconds)?"
                         r"(?:.*?Expected (\d+) threads|.*?All (\d+) threads joined)?")
_DEVICES = re.compile(r"devices=\[([\d,\s]*)\]")
_FOR_RANK = re.compile(r"for rank (\d+)(?=;)")


@dataclass
class RankStatus:
    """What one rank of one process group logged: ``rank`` (its rank in the group),
    ``global_rank`` (None when no line says), last enqueued and completed sequence numbers
    (None when not logged), and the operation it is blocked in (``blocked_seq``,
    ``blocked_op``, ``numel_in``, ``numel_out``) when its watchdog caught a timeout."""

    rank: int
    global_rank: int | None = None
    enqueued: int | None = None
    completed: int | None = None
    blocked_seq: int | None = None
    blocked_op: str | None = None
    numel_in: int | None = None
    numel_out: int | None = None

    def to_json(self) -> dict[str, object]:
        """JSON-ready."""
        return dict(self.__dict__)


@dataclass
class GroupStatus:
    """One torch process group: its ``pg_id`` and ``guid`` (``desc``: e.g. ``default_pg``),
    its ranks' statuses by group rank, the ranks ``behind`` (enqueued fewer than the most),
    and ``first_disagreement``: the sequence number where ranks first differ (with the
    operation, when a rank's watchdog names it), None when they agree."""

    pg_id: str
    guid: str
    desc: str
    ranks: dict[int, RankStatus] = field(default_factory=dict)
    behind: list[int] = field(default_factory=list)
    first_disagreement: int | None = None
    disagreement_op: str | None = None

    def to_json(self) -> dict[str, object]:
        """JSON-ready."""
        return {"pg_id": self.pg_id, "guid": self.guid, "desc": self.desc,
                "ranks": [s.to_json() for _, s in sorted(self.ranks.items())],
                "behind": self.behind, "first_disagreement": self.first_disagreement,
                "disagreement_op": self.disagreement_op}


@dataclass
class CommMember:
    """One rank of an NCCL communicator: the process (``host``, ``pid``), its ``device``
    (cudaDev) and ``bus_id``, its ``global_rank`` (None when unknown), and its last operation
    (``op_count``, ``op``, ``count``; None when it logged none)."""

    rank: int
    host: str
    pid: int
    device: int
    bus_id: str | None
    global_rank: int | None = None
    op_count: int | None = None
    op: str | None = None
    count: int | None = None

    def to_json(self) -> dict[str, object]:
        """JSON-ready."""
        return dict(self.__dict__)


@dataclass
class CommStatus:
    """One NCCL communicator: ``comm_id`` (or a stand-in naming its size and first
    process), ``nranks``, the members seen, the ranks ``behind`` (issued fewer operations
    than the most), and ``first_disagreement`` (an opCount, with the operation a member that
    issued it names)."""

    comm_id: str
    nranks: int
    members: dict[int, CommMember] = field(default_factory=dict)
    behind: list[int] = field(default_factory=list)
    first_disagreement: int | None = None
    disagreement_op: str | None = None

    def to_json(self) -> dict[str, object]:
        """JSON-ready."""
        return {"comm_id": self.comm_id, "nranks": self.nranks,
                "members": [m.to_json() for _, m in sorted(self.members.items())],
                "missing": sorted(set(range(self.nranks)) - set(self.members)),
                "behind": self.behind, "first_disagreement": self.first_disagreement,
                "disagreement_op": self.disagreement_op}


@dataclass
class RendezvousWait:
    """One XLA rendezvous some threads reported stuck in: its ``name`` (without the waiting
    thread's ``for rank <r>``), the ``devices`` its
    name lists, the ``expected`` threads, the ranks whose threads said they wait (``ranks``,
    from ``for rank <r>`` in the name's clique form) and ``reports`` (warnings read);
    ``leader_stuck`` when every thread arrived and the leader did not finish."""

    name: str
    devices: list[int]
    expected: int | None
    ranks: list[int] = field(default_factory=list)
    reports: int = 0
    leader_stuck: bool = False

    def to_json(self) -> dict[str, object]:
        """JSON-ready."""
        return dict(self.__dict__)


@dataclass
class LogReport:
    """Everything the logs say: ``groups`` (torch), ``comms`` (NCCL), ``rendezvous`` (XLA),
    ``lines`` read and ``recognised`` (lines of one of the three families), ``sources``."""

    groups: list[GroupStatus]
    comms: list[CommStatus]
    rendezvous: list[RendezvousWait]
    lines: int
    recognised: int
    sources: list[str]

    def to_json(self) -> dict[str, object]:
        """JSON-ready (docs/cli-json.md)."""
        return {"sources": self.sources, "lines": self.lines, "recognised": self.recognised,
                "groups": [g.to_json() for g in self.groups],
                "comms": [c.to_json() for c in self.comms],
                "rendezvous": [r.to_json() for r in self.rendezvous]}


class _Reader:
    """The state built line by line."""

    def __init__(self) -> None:
        self.groups: dict[str, GroupStatus] = {}
        self.inits: dict[tuple[str, int, str], tuple[int, int, int, str | None, str | None]] = {}
        self.ops: dict[tuple[str, int, str], tuple[int, str, int | None]] = {}
        self.rendezvous: dict[str, RendezvousWait] = {}
        self.lines = 0
        self.recognised = 0

    def line(self, text: str) -> None:
        self.lines += 1
        if "NCCL INFO" in text:
            self._nccl(text)
        elif "waiting for `" in text:
            self._rendezvous(text)
        elif "work" in text.lower():
            self._torch(text)

    def _torch(self, text: str) -> None:
        pg = _PG.search(text)
        old = None if pg else _OLD_PG.search(text)
        if pg is None and old is None:
            return
        work = _WORK.search(text) if _CAUGHT in text else None
        counts = _ENQUEUED.search(text)
        if work is None and counts is None:
            return
        self.recognised += 1
        if pg is not None:
            key, guid, desc, rank = pg.group(1), pg.group(2), pg.group(3) or "", int(pg.group(4))
        else:
            key, guid, desc, rank = "0", "0", "default_pg", int(old.group(1))  # type: ignore[union-attr]
        group = self.groups.setdefault(key, GroupStatus(key, guid, desc))
        status = group.ranks.setdefault(rank, RankStatus(rank))
        found = _GLOBAL.search(text)
        if found is not None:
            status.global_rank = int(found.group(1))
        if work is not None:
            status.blocked_seq = int(work.group(1))
            status.blocked_op = work.group(2)
            status.numel_in = None if work.group(3) is None else int(work.group(3))
            status.numel_out = None if work.group(4) is None else int(work.group(4))
        if counts is not None:
            status.enqueued = int(counts.group(1))
            if counts.group(2) is not None:
                status.completed = int(counts.group(2))

    def _nccl(self, text: str) -> None:
        head = _NCCL_HEAD.search(text)
        if head is None:
            return
        process = (head.group(1), int(head.group(2)))
        if "Init COMPLETE" in text:
            init = _INIT.search(text, head.end())
            if init is None:
                return
            self.recognised += 1
            self.inits[(*process, init.group(1).lower())] = (
                int(init.group(2)), int(init.group(3)), int(init.group(4)), init.group(5),
                None if init.group(6) is None else init.group(6).lower())
            return
        op = _OPCOUNT.search(text, head.start())
        if op is None or op.group(4) is None:
            return
        self.recognised += 1
        self.ops[(*process, op.group(4).lower())] = (
            int(op.group(2), 16), op.group(1), None if op.group(3) is None else int(op.group(3)))

    def _rendezvous(self, text: str) -> None:
        found = _RENDEZVOUS.search(text)
        if found is None:
            return
        self.recognised += 1
        name = _FOR_RANK.sub("for", found.group(1))  # one clique, whichever rank waits
        devices = _DEVICES.search(name)
        expected = found.group(3) or found.group(4)
        wait = self.rendezvous.setdefault(name, RendezvousWait(
            name, [int(d) for d in devices.group(1).split(",") if d.strip()] if devices else [],
            None if expected is None else int(expected)))
        if wait.expected is None and expected is not None:
            wait.expected = int(expected)
        wait.reports += 1
        wait.leader_stuck |= found.group(4) is not None
        rank = _FOR_RANK.search(found.group(1))
        if rank is not None and int(rank.group(1)) not in wait.ranks:
            wait.ranks.append(int(rank.group(1)))

    def report(self, sources: list[str]) -> LogReport:
        groups = [self.groups[k] for k in sorted(self.groups, key=_numeric)]
        for group in groups:
            _judge_group(group)
        return LogReport(groups, self._comms(), list(self.rendezvous.values()), self.lines,
                         self.recognised, sources)

    def _comms(self) -> list[CommStatus]:
        world = max((n for _, n, _, _, _ in self.inits.values()), default=0)
        global_of = {(host, pid): rank for (host, pid, _), (rank, n, _, _, _) in
                     self.inits.items() if n == world}
        comms: dict[str, CommStatus] = {}
        for (host, pid, pointer), (rank, nranks, device, bus, comm_id) in sorted(
                self.inits.items()):
            key = comm_id or f"nranks={nranks}"
            comm = comms.setdefault(key, CommStatus(key, nranks))
            member = CommMember(rank, host, pid, device, bus, global_of.get((host, pid)))
            op = self.ops.get((host, pid, pointer))
            if op is not None:
                member.op_count, member.op, member.count = op
            comm.members[rank] = member
        for comm in comms.values():
            issued = {r: m.op_count for r, m in comm.members.items() if m.op_count is not None}
            if issued and min(issued.values()) != max(issued.values()):
                most, fewest = max(issued.values()), min(issued.values())
                comm.behind = sorted(r for r, n in issued.items() if n < most)
                comm.first_disagreement = fewest + 1
                comm.disagreement_op = next((comm.members[r].op for r, n in issued.items()
                                             if n == fewest + 1), None)
        return list(comms.values())


def _judge_group(group: GroupStatus) -> None:
    """Fill ``behind`` and ``first_disagreement`` from the ranks' counts."""
    enqueued = {r: s.enqueued for r, s in group.ranks.items() if s.enqueued is not None}
    completed = {r: s.completed for r, s in group.ranks.items() if s.completed is not None}
    if enqueued and min(enqueued.values()) != max(enqueued.values()):
        most = max(enqueued.values())
        group.behind = sorted(r for r, n in enqueued.items() if n < most)
        group.first_disagreement = max(min(enqueued.values()), 0) + 1
    elif completed and min(completed.values()) != max(completed.values()):
        group.behind = sorted(r for r, n in completed.items() if n < max(completed.values()))
        group.first_disagreement = max(min(completed.values()), 0) + 1
    if group.first_disagreement is not None:
        group.disagreement_op = next(
            (s.blocked_op for s in group.ranks.values()
             if s.blocked_seq == group.first_disagreement and s.blocked_op), None)


def _numeric(key: str) -> tuple[int, str]:
    return (int(key), key) if key.isdigit() else (1 << 62, key)


def from_logs(paths: list[str | os.PathLike[str]]) -> LogReport:
    """Read every log file of ``paths`` (module docstring; gzip is opened); a file none of whose lines is of
    the three families still counts its lines."""
    reader = _Reader()
    sources = []
    for path in map(Path, paths):
        files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
        for file in files:
            try:
                with open(file, "rb") as probe:
                    zipped = probe.read(2) == b"\x1f\x8b"
                opener = gzip.open if zipped else open
                with opener(file, "rt", encoding="utf-8", errors="replace") as handle:
                    for text in handle:
                        reader.line(text)
            except (OSError, EOFError) as error:
                raise InvalidArgumentError(
                    f"{file}: cannot be read: {getattr(error, 'strerror', None) or error}") from None
            sources.append(str(file))
    return reader.report(sources)

