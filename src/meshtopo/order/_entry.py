"""The values the order layer speaks in: a scheduled collective (``Entry``), one device's view
of it (``Arrival``) and a problem found by matching (``Finding``)."""

from __future__ import annotations

from dataclasses import dataclass, field

FINDING_TYPES = (
    "deadlock", "missing", "mismatch", "may_diverge", "group_disagreement", "async_overlap",
)  # fmt: skip


@dataclass(frozen=True)
class Entry:
    """One collective a program issues, in issue order.

    ``name`` is the issuing instruction (the sync op, the ``-start``, ``async-start``, ``send``
    or ``recv``; a Flight Recorder entry's ``profiling_name`` with its record id), ``done`` the
    instruction that waits for it (None for a sync op). ``opcode`` is the operation performed
    (``all-reduce`` for ``all-reduce-start``), ``stream`` is ``collective``, ``p2p`` (permutes)
    or ``send-recv`` (channel ``channel_id``). ``loops`` lists the enclosing ``while`` loops,
    outermost first, with their ``known_trip_count`` (None when absent); ``branches`` the
    enclosing conditionals with the branch index. An entry inside a loop is issued once per
    iteration: each ``Arrival`` says which.
    """

    index: int
    name: str
    opcode: str
    stream: str
    shape: str
    dtype: str
    operand_shapes: tuple[str, ...] = ()
    reduction: str | None = None
    done: str | None = None
    channel_id: int | None = None
    line: int = 0
    column: int = 0
    computation: str = ""
    program: int = 0
    loops: tuple[tuple[str, int | None], ...] = ()
    branches: tuple[tuple[str, int], ...] = ()

    @property
    def is_async(self) -> bool:
        """True when a later instruction (``done``) waits for this one."""
        return self.done is not None

    def signature(self) -> tuple[object, ...]:
        """What the members of one rendezvous must agree on: opcode (a send and its recv
        agree), dtype, shapes and reduction. All-gather and reduce-scatter are compared by
        operands and results both, which holds XLA's size rule (result = operand x group
        size)."""
        opcode = "send/recv" if self.stream == "send-recv" else self.opcode
        return (opcode, self.dtype, self.shape, self.operand_shapes, self.reduction)


@dataclass(frozen=True)
class Arrival:
    """``device``'s view of an entry: its ``clique`` (ordered devices: rank = position), the
    device's ``rank`` in it, and ``position``, the number of earlier arrivals of this device on
    the same clique and stream (what the runtime matches on). ``step`` and ``end`` are logical
    times of the issue and of the wait (the step index of an SPMD program; the replay's round
    otherwise, -1 when the device never gets there). ``iteration`` numbers the iteration of
    each enclosing loop, ``(loop name, number)`` outermost first (numbers from 0)."""

    device: int
    entry: Entry
    clique: tuple[int, ...]
    rank: int
    position: int
    step: int = 0
    end: int = 0
    iteration: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Finding:
    """A problem found by matching by arrival order.

    ``type`` is one of ``deadlock``, ``missing``, ``mismatch``, ``may_diverge``,
    ``group_disagreement``, ``async_overlap``; ``devices`` the devices involved (the cycle in
    cycle order, the missing guests, the clique, ...), ``instructions`` the instruction names
    where they block or disagree, ``message`` one readable paragraph (with source lines),
    ``culprits`` (mismatch) the members whose entry differs from the majority (empty on a tie),
    ``lines`` the source lines it names, and ``waiting`` (missing) the devices left waiting.

    ``mismatch`` and ``group_disagreement`` divide what two programs can disagree on by whether
    the members meet. ``mismatch`` is one rendezvous: members at the same position on one
    clique whose collectives differ in opcode, shape, dtype, reduction or group list (the
    whole list of groups the instruction names); it completes, so the result is garbage, or,
    for a group list alone, pairs collectives that disagree on who takes part (two programs'
    versions of one collective, or two collectives of one program).
    ``group_disagreement`` is members that never meet: a device waits for a member whose own
    program (MPMD) issues the same collective over other groups, which puts that member in
    another clique, and the device hangs. One pair of programs can show both, on the groups
    that still meet and on those that split. Group lists are compared as device groups, each
    in rank order, in any order in the list: the same groups in another encoding (iota,
    explicit, mesh axes, another group order) are neither.

    ``may_diverge`` is a conditional or loop whose predicate (or trip count) depends on data
    that is not uniform within a group its collectives use: members can take different
    paths at run time. It names the predicate, the group, and one assignment of paths with
    what the matcher finds when the devices take them (a cycle, a missing guest or a
    mismatch); ``devices`` are the group's and that finding's.
    """

    type: str
    devices: tuple[int, ...]
    instructions: tuple[str, ...]
    message: str
    culprits: tuple[int, ...] = ()
    lines: tuple[int, ...] = field(default=())
    waiting: tuple[int, ...] = ()

    def to_json(self) -> dict[str, object]:
        """The finding as a JSON-ready dict (docs/cli-json.md)."""
        return {
            "type": self.type, "devices": list(self.devices),
            "instructions": list(self.instructions), "message": self.message,
            "culprits": list(self.culprits), "lines": list(self.lines),
            "waiting": list(self.waiting),
        }
