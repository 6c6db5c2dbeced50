"""A device's schedule of a program that shares one order: numpy columns over the program's
steps, its ``Arrival`` objects made only when read.

Everything but the clique, the rank and the position is the same for every device that runs
one sequence of steps: which entry arrives at which step, in which iteration, and at which
step it is waited for. ``SharedOrder`` computes that once, as one row per arrival a device can
make (a *slot*: an arrive step and, for a permute or send/recv, the side the device is on), each
row on a *lane*: the distinct group (or pair) list of its entry, the side, and the stream.
Per lane, a table over devices says how many cliques each device joins there (0 or 1 for a
group list, any number for a side of a pair list), which ones (interned ids) and with which
rank. A device's schedule is then its column of those tables, O(lanes), with O(steps) numpy
work only where it skips a lane, where two of its lanes meet on one clique (their positions
count together) or where a lane gives it several cliques.

Bound: ``SharedOrder`` is O(entries) Python work, O(steps log steps) and O(lanes x devices)
numpy work, once per report and sequence; a ``Schedule`` at most O(steps) numpy work, each ``Arrival`` O(1) when
read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

from ._cliques import CliqueTable, EntryPeers
from ._entry import Arrival, Entry
from ._execution import Iteration, Step
from ._program import ARRIVE


class Schedule(Sequence[Arrival]):
    """The arrivals of one device, in issue order (a read-only sequence): each ``Arrival`` is
    made from numpy columns when read, so its length, a slice or the first few cost no more
    than what is read.

    The columns are the shared order's (``fixed``: entry, step, end, iteration, lane and the
    running count on the lane, one row per slot), the slots the device takes (``rows``: None
    for every slot), its clique and rank per lane, and, where two of its lanes meet on one
    clique or a lane gives it several cliques, its own ``clique`` (per arrival, then not per
    lane) and ``position`` columns (None: the running count on the lane)."""

    def __init__(self, device: int, entries: Sequence[Entry], members: Sequence[tuple[int, ...]],
                 iterations: Sequence[Iteration], fixed: dict[str, np.ndarray],
                 rows: np.ndarray | None, lane_rank: np.ndarray, clique: np.ndarray,
                 by_lane: bool, position: np.ndarray | None) -> None:
        self.device = device
        self._entries = entries
        self._members = members
        self._iterations = iterations
        self._fixed = fixed
        self._rows = rows
        self._lane_rank = lane_rank
        self._clique = clique
        self._by_lane = by_lane
        self._position = position

    def __len__(self) -> int:
        return int((self._fixed["lane"] if self._rows is None else self._rows).size)

    @overload
    def __getitem__(self, index: int) -> Arrival: ...

    @overload
    def __getitem__(self, index: slice) -> list[Arrival]: ...

    def __getitem__(self, index: int | slice) -> Arrival | list[Arrival]:
        if isinstance(index, slice):
            return self._made(slice(*index.indices(len(self))))
        count = len(self)
        at = int(index)
        if at < -count or at >= count:
            raise IndexError(f"schedule index {index} out of range for {count} arrivals")
        at %= count
        return self._made(slice(at, at + 1))[0]

    def __iter__(self) -> Iterator[Arrival]:
        return iter(self._made(slice(None)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Schedule | list | tuple):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Schedule(device={self.device}, arrivals={len(self)})"

    def _made(self, taken: slice) -> list[Arrival]:
        rows = taken if self._rows is None else self._rows[taken]
        fixed = {name: column[rows] for name, column in self._fixed.items()}
        lane = fixed["lane"]
        clique = self._clique[lane] if self._by_lane else self._clique[taken]
        position = fixed["running"] if self._position is None else self._position[taken]
        columns = [fixed["entry"], clique, self._lane_rank[lane], position, fixed["step"],
                   fixed["end"], fixed["iteration"]]
        entries, members, iterations, device = (self._entries, self._members, self._iterations,
                                                self.device)
        return [Arrival(device, entries[e], members[c], r, p, s, n, iterations[i])
                for e, c, r, p, s, n, i in zip(*(c.tolist() for c in columns), strict=True)]


class SharedOrder:
    """The device-independent columns of one step sequence of ``entries`` (whose groups or
    pairs are ``peers``), and the lane tables that give each device its cliques; ``of(device)``
    is that device's ``Schedule``. Cliques are interned in ``table``.

    The sequence is given as arrays: ``kinds[i]`` (ARRIVE or WAIT) of entry ``indices[i]`` in
    iteration ``iterations[iteration_ids[i]]``; ``from_steps`` takes a list of ``Step``."""

    def __init__(self, entries: Sequence[Entry], peers: Sequence[EntryPeers], kinds: np.ndarray,
                 indices: np.ndarray, iteration_ids: np.ndarray, iterations: list[Iteration],
                 table: CliqueTable, size: int) -> None:
        self._entries = entries
        self._table = table
        self._iterations = iterations
        lanes: dict[tuple[int, int, str], int] = {}
        lane_peers: list[tuple[EntryPeers, int, str]] = []
        chosen: list[tuple[int, ...]] = []
        # Each entry's lanes (the second -1 for one side), once per list, opcode and stream.
        kinds_of: dict[tuple[int, str, str], tuple[int, ...]] = {}
        for entry, peers_ in zip(entries, peers, strict=True):
            stream = table.stream_key(entry)
            kind = (id(peers_), entry.opcode, stream)
            found = kinds_of.get(kind)
            if found is None:
                for side in _sides(entry, peers_):
                    if (id(peers_), side, stream) not in lanes:
                        lanes[(id(peers_), side, stream)] = len(lane_peers)
                        lane_peers.append((peers_, side, stream))
                found = kinds_of[kind] = (*(lanes[(id(peers_), side, stream)]
                                            for side in _sides(entry, peers_)), -1)[:2]
            chosen.append(found)
        entry_lanes = np.array(chosen, dtype=np.int64).reshape(-1, 2)
        arrive = np.flatnonzero(kinds == ARRIVE)
        second = entry_lanes[indices[arrive], 1] >= 0
        steps = np.repeat(arrive, 1 + second)  # a pair list's second side right after the first
        on_second = np.zeros(steps.size, dtype=bool)
        on_second[(np.cumsum(1 + second) - 1)[second]] = True
        issued = indices[steps].astype(np.int64)
        lane = entry_lanes[issued, on_second.astype(np.int64)]
        self._fixed: dict[str, np.ndarray] = {
            "lane": lane, "entry": issued, "step": steps,
            "end": _next_waits(kinds, indices)[steps],
            "iteration": iteration_ids[steps].astype(np.int64),
            "running": _running_counts(lane, len(lane_peers))}
        self._count, self._start, self._rank, self._cliques = _lane_tables(
            lane_peers, table, size)

    @classmethod
    def from_steps(cls, entries: Sequence[Entry], peers: Sequence[EntryPeers],
                   steps: Sequence[Step], table: CliqueTable, size: int) -> SharedOrder:
        """The shared order of a list of ``Step`` (each distinct iteration interned once)."""
        if not steps:
            empty = np.zeros(0, dtype=np.int64)
            return cls(entries, peers, empty, empty, empty, [], table, size)
        kinds, indices, iterations = zip(*steps, strict=True)
        ids = {iteration: number for number, iteration in enumerate(dict.fromkeys(iterations))}
        return cls(entries, peers, np.array(kinds, dtype=np.int64),
                   np.array(indices, dtype=np.int64),
                   np.fromiter(map(ids.__getitem__, iterations), np.int64, len(iterations)),
                   list(ids), table, size)

    def of(self, device: int) -> Schedule:
        """``device``'s schedule: O(lanes) numpy work when each lane gives it at most one
        clique and no two of them meet on one; O(steps) numpy work otherwise."""
        count = self._count[:, device]
        start = self._start[:, device]
        rank = self._rank[:, device]
        lane = self._fixed["lane"]
        rows = None if count.all() else np.flatnonzero(count[lane])
        if int(count.max(initial=0)) <= 1:
            clique = self._cliques.take(start, mode="clip")
            held = np.flatnonzero(count)
            classes, inverse = np.unique(clique[held], return_inverse=True)
            position = None
            if classes.size < held.size:  # lanes that meet on one clique count together
                merged = np.zeros(count.size, dtype=np.int64)
                merged[held] = inverse.reshape(-1)
                position = _running_counts(merged[lane if rows is None else lane[rows]],
                                           classes.size)
            return self._schedule(device, rows, rank, clique, True, position)
        # a side of a pair list where the device sends (or receives) more than once
        per_slot = count[lane]
        rows = np.repeat(np.arange(lane.size), per_slot)
        offsets = np.cumsum(per_slot) - per_slot
        within = np.arange(rows.size) - np.repeat(offsets, per_slot)
        clique = self._cliques[start[lane[rows]] + within]
        inverse = np.unique(clique, return_inverse=True)[1].reshape(-1)
        position = _running_counts(inverse, int(inverse.max(initial=-1)) + 1)
        return self._schedule(device, rows, rank, clique, False, position)

    def _schedule(self, device: int, rows: np.ndarray | None, rank: np.ndarray,
                  clique: np.ndarray, by_lane: bool, position: np.ndarray | None) -> Schedule:
        return Schedule(device, self._entries, self._table.members, self._iterations,
                        self._fixed, rows, rank, clique, by_lane, position)


def _sides(entry: Entry, peers: EntryPeers) -> tuple[int, ...]:
    """The sides of ``entry``'s cliques a device can take: 0 for a group; for pairs, 0 as
    sender (not a recv) then 1 as receiver (not a send)."""
    if peers.pairs is None:
        return (0,)
    return (*((0,) if entry.opcode != "recv" else ()), *((1,) if entry.opcode != "send" else ()))


def _next_waits(kinds: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """For each step, the first WAIT step of its entry after it (-1: none): steps sorted by
    entry then number, and a reversed running minimum over wait numbers, each entry's kept
    apart by an offset. O(steps log steps)."""
    count = kinds.size
    order = np.lexsort((np.arange(count), indices))
    big = count + 1
    offset = indices[order].astype(np.int64) * (2 * big)
    key = offset + np.where(kinds[order] == ARRIVE, big, order)
    after = np.minimum.accumulate(key[::-1])[::-1] - offset
    out = np.empty(count, dtype=np.int64)
    out[order] = np.where(after < big, after, -1)
    return out


def _running_counts(lane: np.ndarray, lanes: int) -> np.ndarray:
    """For each slot, how many earlier slots are on its lane. O(slots)."""
    if lane.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(lane, kind="stable")
    counts = np.bincount(lane, minlength=lanes)
    out = np.empty(lane.size, dtype=np.int64)
    out[order] = np.arange(lane.size) - np.repeat(np.cumsum(counts) - counts, counts)
    return out


def _lane_tables(lanes: list[tuple[EntryPeers, int, str]], table: CliqueTable,
                 size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per lane and device id below ``size``: how many cliques the device joins there, where
    its clique ids start in the flat list returned last, and its rank. A group list gives a
    device the last group written that holds it, with its last position there; a side of a
    pair list the pairs it is on that side of, in written order; the flat list ends with -1.
    O(lanes x size + ids)."""
    count = np.zeros((len(lanes), size), dtype=np.int64)
    start = np.zeros((len(lanes), size), dtype=np.int64)
    rank = np.zeros((len(lanes), size), dtype=np.int64)
    flat: list[np.ndarray] = []
    offset = 0
    for number, (peers, side, stream) in enumerate(lanes):
        ids = np.array([table.intern(stream, group) for group in peers.groups], dtype=np.int64)
        if peers.pairs is None:
            inside = (peers.flat >= 0) & (peers.flat < size)
            last = np.full(size, -1, dtype=np.int64)
            np.maximum.at(last, peers.flat[inside], np.flatnonzero(inside))
            held = last >= 0
            row = np.repeat(np.arange(peers.sizes.size), peers.sizes)[last[held]]
            cliques = np.full(size, -1, dtype=np.int64)
            cliques[held] = ids[row]
            count[number] = held
            start[number] = offset + np.arange(size)
            rank[number, held] = last[held] - peers.starts[row]
        else:
            column = peers.pairs[:, side]
            column = np.where(column < size, column, size)
            order = np.argsort(column, kind="stable")
            per_device = np.bincount(column, minlength=size + 1)[:size]
            cliques = ids[order]
            count[number] = per_device
            start[number] = offset + np.cumsum(per_device) - per_device
            rank[number] = side
        flat.append(cliques)
        offset += cliques.size
    flat.append(np.full(1, -1, dtype=np.int64))  # past the last lane: what a clipped read sees
    return count, start, rank, np.concatenate(flat)
