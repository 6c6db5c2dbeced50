"""Matching by arrival order, as the runtime does, and the run it implies.

Every device has a row of operations: ARRIVE at a clique (issue a collective: the runtime
pairs it with the next arrival of every other member on that clique and stream) and WAIT for
an arrival's rendezvous to complete (a sync op arrives and waits at once; a ``-done`` waits
for its start). The n-th arrival of each member on a clique forms one rendezvous (an *event*);
an event completes when all members have arrived. A member with no row (a rank that left no
trace) counts as arrived at the first ``credited[c]`` events of each clique ``c`` it is in,
those the trace shows complete, and at none after. A negative id among a clique's members is
a member the trace shows exists but does not name; it has no row either.

``run`` replays all rows together: each round, every device passes an arrival (or a no-op),
then a wait whose event is complete (or a no-op). Bound: at most ``sum of row lengths``
rounds of O(devices) numpy work (about the longest row when devices move in lockstep); rows
past the device limit in total size are refused before allocation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._limits import check_size
from ._program import ARRIVE, WAIT

NOOP = -1


@dataclass
class Rows:
    """Operations of every device: ``kind``/``clique``/``ref``/``link`` are ``[devices,
    length]`` (``link`` of a WAIT is the column of its ARRIVE; ``clique`` -1 is a no-op),
    ``length[d]`` the real row length; ``devices`` the global ids in row order;
    ``members[c]`` the devices of clique ``c``; ``credited[c]`` (None: 0 everywhere) how many
    leading events of clique ``c`` its members without a row count as arrived at (negative
    member ids: members the trace does not name)."""

    devices: np.ndarray
    kind: np.ndarray
    clique: np.ndarray
    ref: np.ndarray
    link: np.ndarray
    length: np.ndarray
    members: list[tuple[int, ...]]
    credited: np.ndarray | None = None

    def rowless(self) -> np.ndarray:
        """Per clique, how many of its members have no row. O(sum of clique sizes)."""
        present = set(self.devices.tolist())
        return np.array([sum(d not in present for d in m) for m in self.members],
                        dtype=np.int64)

    def is_credited(self, clique: int, position: int) -> bool:
        """True when the members of ``clique`` without a row count as arrived at its event at
        ``position``."""
        return self.credited is not None and position < int(self.credited[clique])


@dataclass
class Run:
    """The outcome: ``event[d, col]`` for every op (-1 no-op), ``event_clique``/
    ``event_position`` per event, ``passed[d, col]`` the round an op was passed (-1 never),
    ``pointer[d]`` where each device stopped (``== length`` when it finished)."""

    rows: Rows
    event: np.ndarray
    event_clique: np.ndarray
    event_position: np.ndarray
    passed: np.ndarray
    pointer: np.ndarray

    @property
    def stuck(self) -> np.ndarray:
        """Row indices of devices that never finish."""
        return np.flatnonzero(self.pointer < self.rows.length)

    def arrivals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, column, event) of every arrival."""
        rows, cols = np.nonzero((self.rows.kind == ARRIVE) & (self.event >= 0))
        return rows, cols, self.event[rows, cols]


def events(rows: Rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Number each arrival's rendezvous: (event matrix, clique per event, position per event).

    The position of an arrival is the count of earlier arrivals of the same device on the same
    clique; arrivals with equal (clique, position) are one event. O(ops log ops)."""
    event = np.full(rows.kind.shape, NOOP, dtype=np.int64)
    r, c = np.nonzero((rows.kind == ARRIVE) & (rows.clique >= 0))
    if r.size == 0:
        return event, np.zeros(0, np.int64), np.zeros(0, np.int64)
    cliques = rows.clique[r, c]
    order = np.lexsort((c, cliques, r))
    r_sorted, k_sorted = r[order], cliques[order]
    new_group = np.ones(order.size, dtype=bool)
    new_group[1:] = (r_sorted[1:] != r_sorted[:-1]) | (k_sorted[1:] != k_sorted[:-1])
    starts = np.flatnonzero(new_group)
    position = np.arange(order.size) - np.repeat(starts, np.diff(np.append(starts, order.size)))
    key = np.empty(order.size, dtype=np.int64)
    key[order] = k_sorted * (int(position.max()) + 1) + position
    unique, inverse = np.unique(key, return_inverse=True)
    event[r, c] = inverse
    span = int(position.max()) + 1
    waits = (rows.kind == WAIT) & (rows.link >= 0)
    wr, wc = np.nonzero(waits)
    event[wr, wc] = event[wr, rows.link[wr, wc]]
    return event, unique // span, unique % span


def run(rows: Rows) -> Run:
    """Replay every row by arrival order (bound in the module docstring)."""
    check_size(int(rows.kind.size), "the per-device operation rows")
    event, event_clique, event_position = events(rows)
    members = np.array([len(m) for m in rows.members], dtype=np.int64)
    needed = members[event_clique] if event_clique.size else np.zeros(0, np.int64)
    if rows.credited is not None and event_clique.size:
        credited = event_position < rows.credited[event_clique]
        needed = needed - np.where(credited, rows.rowless()[event_clique], 0)
    arrived = np.zeros(event_clique.size, dtype=np.int64)
    count = rows.devices.size
    pointer = np.zeros(count, dtype=np.int64)
    passed = np.full(rows.kind.shape, -1, dtype=np.int64)
    index = np.arange(count)
    width = rows.kind.shape[1] if rows.kind.ndim == 2 else 0
    limit = int(rows.length.sum()) + 1
    for round_number in range(limit):
        active = pointer < rows.length
        if not active.any():
            break
        moved_any = False
        for phase in (ARRIVE, WAIT):
            at = np.minimum(pointer, max(width - 1, 0))
            ev = event[index, at]
            kind = rows.kind[index, at]
            active = pointer < rows.length
            if phase == ARRIVE:
                arrive = active & (kind == ARRIVE) & (ev >= 0)
                np.add.at(arrived, ev[arrive], 1)
                move = arrive | (active & (ev < 0))
            else:
                complete = np.zeros(count, dtype=bool)
                has_event = active & (kind == WAIT) & (ev >= 0)
                complete[has_event] = arrived[ev[has_event]] >= needed[ev[has_event]]
                move = complete | (active & (ev < 0))
            if move.any():
                moved_any = True
                moved = index[move]
                passed[moved, pointer[moved]] = round_number
                pointer[moved] += 1
        if not moved_any:
            break
    return Run(rows, event, event_clique, event_position, passed, pointer)
