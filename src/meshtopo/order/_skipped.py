"""Telling a skipped collective from a reordered one in a recorded trace.

A trace ends where each rank blocked, so when rank ``d`` waits at collective A for rank ``m``
and ``m`` has no entry for A, ``m`` may issue A later (a reorder: a waits-for edge, part of a
deadlock) or never (a skip: ``m`` is missing). The trace tells them apart by counting from
the last rendezvous both completed: ``d`` issued ``k`` collectives since then, A the ``k``-th.
If ``m`` has since *completed* at least ``k`` collectives, none of them A, it went past the
place A holds in ``d``'s order; a reorder would have had to issue A among them to keep the
programs in step, so ``m`` skipped A. Fewer than ``k`` (``m`` blocked at or before that
place, as two ranks swapping two collectives do) leaves a reorder possible, and ``d`` waits
for ``m``. With no rendezvous in common (the ring buffer dropped it) nothing is concluded.

Bound: O(row length) numpy work per (waiting rank, missing member) pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._match import Run
from ._program import ARRIVE, WAIT


@dataclass(frozen=True)
class Skip:
    """Evidence that row ``m`` skipped what row ``d`` waits for: the last rendezvous both
    completed (``common``, an event), how many collectives ``d`` issued since then up to and
    including the one it waits at (``issued``), and how many ``m`` completed since
    (``completed``)."""

    common: int
    issued: int
    completed: int


def skipped(run: Run, d: int, m: int) -> Skip | None:
    """The evidence that row ``m`` skipped the collective row ``d`` is blocked at, or None when
    a reorder remains possible (module docstring). ``d`` must be stuck at a wait."""
    rows = run.rows
    stop_d, stop_m = int(run.pointer[d]), int(run.pointer[m])
    if stop_d >= int(rows.length[d]) or rows.kind[d, stop_d] != WAIT:
        return None
    kind_d, kind_m = rows.kind[d, :stop_d], rows.kind[m, :stop_m]
    event_d, event_m = run.event[d, :stop_d], run.event[m, :stop_m]
    done_d = np.flatnonzero((kind_d == WAIT) & (event_d >= 0))
    done_m = np.flatnonzero((kind_m == WAIT) & (event_m >= 0))
    common = np.intersect1d(event_d[done_d], event_m[done_m])
    if common.size == 0:
        return None
    last_d = int(done_d[np.isin(event_d[done_d], common)][-1])
    event = int(event_d[last_d])
    last_m = int(done_m[event_m[done_m] == event][-1])
    start_d = int(rows.link[d, last_d])
    waited = int(rows.link[d, stop_d])
    issued = int(np.count_nonzero(rows.kind[d, start_d + 1:waited + 1] == ARRIVE))
    completed = int(np.count_nonzero(done_m > last_m))
    return Skip(event, issued, completed) if completed >= issued else None
