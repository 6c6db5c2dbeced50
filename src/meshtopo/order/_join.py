"""``join``: what an HLO program has each device issue, set beside what the runtime's evidence
(Flight Recorder dumps, profiler traces) shows each rank entered.

The program's side is each device's issue order with loop iterations (``Report.schedule(
device, taken_only=True)`` of ``analyze``): one collective per time the device issues it,
up to and including the one the program blocks it in when the program itself hangs (a
collective the replay never lets the device reach is not issued; ``unreached`` counts them). The
runtime's side is each rank's recorded collectives in order (``Report.schedule(rank)`` of
``from_flight_recorder`` or ``from_profiler_traces``), the one it hangs in included.

Ranks map to devices by ``rank_devices`` (rank -> global device id) when given. Otherwise rank
r is taken to run device r (``assumed``): one device per process, numbered as torch.distributed
and JAX's multi-process runtimes number them; the program's device table (the dump's
``compile_options``, a proto's own table, or XLA's default) then says which replica and
partition device r runs. Without a mapping and with ranks the program has no device for,
nothing is joined (``RankJoin`` s are made for the ranks it has).

Operations are compared in Flight Recorder's spelling (``all_reduce`` for ``all-reduce`` and
``all-reduce-start``, ``broadcast`` for ``collective-broadcast``; a permute, a send and a recv
are each ``send/recv``). A rank agrees with its device
when both sequences are equal; otherwise ``first_difference`` is the first position (from 1)
where they differ: an operation that differs, or the end of the shorter one.

Bound: O(devices x collectives issued) for the program's schedules of the joined devices, and
O(ranks x entries) for the runtime's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._entry import Arrival
from ._report import Report

# HLO opcodes whose Flight Recorder name is not the opcode with ``_`` for ``-``.
_RUNTIME_NAMES = {"collective-broadcast": "broadcast", "collective-permute": "send/recv",
                  "send": "send/recv", "recv": "send/recv"}


@dataclass(frozen=True)
class RankJoin:
    """One rank beside the device it runs: collectives the program has the device ``issued``
    and the rank ``entered``, ``first_difference`` (position from 1; None when they agree) with
    the operation each side has there (``""`` past its end), and the iterations the device
    runs each ``while`` loop that issues collectives (``loops``: name -> iterations), and the
    collectives the program lists for the device after the one it blocks in (``unreached``:
    0 unless the program itself hangs)."""

    rank: int
    device: int
    issued: int
    entered: int
    first_difference: int | None
    issued_op: str
    entered_op: str
    loops: tuple[tuple[str, int], ...]
    unreached: int = 0

    @property
    def agrees(self) -> bool:
        """True when the rank entered exactly the collectives its device issues."""
        return self.first_difference is None

    def to_json(self) -> dict[str, object]:
        """JSON-ready (docs/cli-json.md)."""
        return {"rank": self.rank, "device": self.device, "issued": self.issued,
                "entered": self.entered, "agrees": self.agrees,
                "first_difference": self.first_difference, "issued_op": self.issued_op,
                "entered_op": self.entered_op, "loops": dict(self.loops),
                "unreached": self.unreached}


@dataclass(frozen=True)
class Join:
    """The ranks joined (``ranks``, by rank), whether rank r was ``assumed`` to run device r,
    and the runtime's ranks the program has no device for (``unplaced``)."""

    ranks: tuple[RankJoin, ...]
    assumed: bool
    unplaced: tuple[int, ...]

    def to_json(self) -> dict[str, object]:
        """JSON-ready (docs/cli-json.md)."""
        return {"assumed": self.assumed, "unplaced": list(self.unplaced),
                "ranks": [r.to_json() for r in self.ranks]}


def join(program: Report, runtime: Report,
         rank_devices: Mapping[int, int] | None = None) -> Join:
    """Each rank of ``runtime`` beside the device of ``program`` it runs (module docstring)."""
    placed, unplaced = place(program, [int(r) for r in runtime.devices], rank_devices)
    joined = [_rank_join(rank, device, program.schedule(device, taken_only=True),
                         [_runtime_name(a.entry.opcode) for a in runtime.schedule(rank)])
              for rank, device in placed]
    return Join(tuple(joined), rank_devices is None, tuple(unplaced))


def place(program: Report, ranks: Sequence[int], rank_devices: Mapping[int, int] | None
          ) -> tuple[list[tuple[int, int]], list[int]]:
    """``ranks`` as (rank, device) pairs for the devices of ``program`` they run (by
    ``rank_devices``, else rank r on device r), and the ranks it has no device for."""
    devices = {int(d) for d in program.devices}
    placed: list[tuple[int, int]] = []
    unplaced: list[int] = []
    for rank in ranks:
        device = rank if rank_devices is None else rank_devices.get(rank)
        if device is None or int(device) not in devices:
            unplaced.append(rank)
        else:
            placed.append((rank, int(device)))
    return placed, unplaced


def reached(arrivals: Sequence[Arrival]) -> list[Arrival]:
    """The arrivals a device issues: all of them, or, when the program itself hangs, those up
    to and including the one it blocks in (the replay never issues the rest: ``step`` -1)."""
    return [a for a in arrivals if a.step >= 0]


def _rank_join(rank: int, device: int, listed: Sequence[Arrival], entered: list[str]
               ) -> RankJoin:
    arrivals = reached(listed)
    issued = [_runtime_name(a.entry.opcode) for a in arrivals]
    loops = loop_counts(arrivals)
    first = next((i for i, (a, b) in enumerate(zip(issued, entered, strict=False)) if a != b),
                 None if len(issued) == len(entered) else min(len(issued), len(entered)))
    return RankJoin(rank, device, len(issued), len(entered),
                    None if first is None else first + 1,
                    "" if first is None or first >= len(issued) else issued[first],
                    "" if first is None or first >= len(entered) else entered[first],
                    tuple(sorted(loops.items())), len(listed) - len(arrivals))


def loop_counts(arrivals: Sequence[Arrival]) -> dict[str, int]:
    """The iterations each ``while`` loop runs that issues one of ``arrivals``: name -> count
    (its highest iteration number + 1)."""
    loops: dict[str, int] = {}
    for arrival in arrivals:
        for loop, number in arrival.iteration:
            loops[loop] = max(loops.get(loop, 0), number + 1)
    return loops


def differing_loops(mine: Mapping[str, int], theirs: Mapping[str, int]
                    ) -> tuple[tuple[str, int, int], ...]:
    """``(loop, mine, theirs)`` for each loop whose iterations differ between two devices'
    ``loop_counts`` (0 for a loop one of them never runs), by name."""
    return tuple((loop, mine.get(loop, 0), theirs.get(loop, 0))
                 for loop in sorted(mine.keys() | theirs.keys())
                 if mine.get(loop, 0) != theirs.get(loop, 0))


def _runtime_name(opcode: str) -> str:
    return _RUNTIME_NAMES.get(opcode, opcode.replace("-", "_"))
