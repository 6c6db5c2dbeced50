"""An all_to_all checked as the collective defines it: every member sends and receives its own
amounts (uneven splits, as a mixture-of-experts layer routes tokens), so the members' sizes
are not compared one by one (``Ref.sized``); what must agree is the exchange as a whole.

- When every member records one tensor per peer (``all_to_all`` with tensor lists: group rank
  ``r`` sends its ``r``-th input and receives its ``s``-th output from group rank ``s``), each
  receive must hold what its sender sends: the elements of member ``r``'s output ``s`` equal
  those of member ``s``'s input ``r``. A member that disagrees with more than half of its
  peers (or with itself) is off the majority; when that is every member, nobody is blamed.
- Otherwise (``all_to_all_single``: the Flight Recorder keeps each tensor's size, never its
  split sizes) the group's totals must agree: the elements all members send equal the elements
  all receive. Which member's splits are wrong cannot be told from totals, so nobody is blamed.

Only rendezvous every member arrived at, all at an exchange with one signature, are checked
(``mismatches`` reports the others; ``blocked`` the ones that never complete). Sizes are
counted in elements, as the transport moves them.

Bound: O(arrivals) numpy work for the totals; split checks loop over the exchanges recorded
per peer, O(members^2) numpy work each.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ._classify import Ref, _members
from ._entry import Finding
from ._match import Run

EXCHANGES = ("all_to_all", "all_to_all_single", "all_to_all_v_single")
SHOWN = 6  # disagreeing (sender, receiver) pairs spelled out in a message


@dataclass(frozen=True)
class Amounts:
    """What one member's entry moves: elements per input tensor (``sent``) and per output
    tensor (``received``), in the entry's tensor order."""

    sent: np.ndarray
    received: np.ndarray


def amounts(sizes_in: list[list[int]], sizes_out: list[list[int]]) -> Amounts:
    """The elements of each tensor of an entry's ``input_sizes`` and ``output_sizes``."""
    return Amounts(_numels(sizes_in), _numels(sizes_out))


def _numels(sizes: list[list[int]]) -> np.ndarray:
    return np.array([int(np.prod(s, dtype=np.int64)) for s in sizes], dtype=np.int64)


def exchange_mismatches(run: Run, refs: list[Ref], moved: dict[int, Amounts],
                        unit: str) -> list[Finding]:
    """A ``mismatch`` for each complete rendezvous of exchanges (``moved``: ref -> its
    amounts) whose members' sends and receives disagree (module docstring), in event order."""
    rows = run.rows
    r, c, e = run.arrivals()
    if e.size == 0 or not moved:
        return []
    ref_ids = rows.ref[r, c]
    exchange = np.zeros(len(refs), dtype=bool)
    exchange[list(moved)] = True
    table: dict[tuple[object, ...], int] = {}
    signature = np.array([table.setdefault(ref.signature(), len(table)) for ref in refs],
                         dtype=np.int64)
    count = np.bincount(e, minlength=run.event_clique.size)
    exchanges = np.bincount(e, weights=exchange[ref_ids], minlength=count.size)
    low = np.full(count.size, np.iinfo(np.int64).max)
    high = np.full(count.size, -1)
    np.minimum.at(low, e, signature[ref_ids])
    np.maximum.at(high, e, signature[ref_ids])
    size = np.array([len(m) for m in rows.members], dtype=np.int64)[run.event_clique]
    checked = (count == size) & (exchanges == count) & (low == high)
    keep = checked[e]
    findings = []
    order = np.lexsort((r[keep], e[keep]))
    events, rows_kept, refs_kept = e[keep][order], r[keep][order], ref_ids[keep][order]
    bounds = np.flatnonzero(np.diff(events)) + 1
    for ev, member_rows, member_refs in zip(np.split(events, bounds),
                                            np.split(rows_kept, bounds),
                                            np.split(refs_kept, bounds), strict=True):
        if ev.size == 0:
            continue
        finding = _check(run, refs, moved, int(ev[0]), member_rows, member_refs, unit)
        if finding is not None:
            findings.append(finding)
    return findings


def _check(run: Run, refs: list[Ref], moved: dict[int, Amounts], event: int,
           member_rows: np.ndarray, member_refs: np.ndarray, unit: str) -> Finding | None:
    """The finding for one complete rendezvous of exchanges, or None when it agrees."""
    clique = run.rows.members[int(run.event_clique[event])]
    devices = run.rows.devices[member_rows]
    rank_of = {d: i for i, d in enumerate(clique)}
    order = np.argsort([rank_of[int(d)] for d in devices.tolist()])
    member_refs = member_refs[order]
    sent = [moved[int(x)].sent for x in member_refs.tolist()]
    received = [moved[int(x)].received for x in member_refs.tolist()]
    n = len(clique)
    if all(s.size == n for s in sent) and all(v.size == n for v in received):
        return _splits(run, refs, event, clique, member_refs, np.stack(sent),
                       np.stack(received), unit)
    totals_sent = np.array([s.sum() for s in sent], dtype=np.int64)
    totals_received = np.array([v.sum() for v in received], dtype=np.int64)
    if totals_sent.sum() == totals_received.sum():
        return None
    text = (f"{_head(run, refs, event, clique, member_refs, unit)} the group sends "
            f"{int(totals_sent.sum())} elements in all but receives "
            f"{int(totals_received.sum())}: {unit}s {_join(clique)} send "
            f"{_join(totals_sent.tolist())} and receive {_join(totals_received.tolist())}, so "
            f"the exchange pairs sends and receives of other sizes and the result is garbage. "
            f"The dumps record each {unit}'s totals, not its splits, so which {unit}'s splits "
            f"are wrong cannot be told.")
    return _finding(refs, clique, member_refs, text, ())


def _splits(run: Run, refs: list[Ref], event: int, clique: tuple[int, ...],
            member_refs: np.ndarray, sent: np.ndarray, received: np.ndarray,
            unit: str) -> Finding | None:
    """Per-peer check: ``sent[s, r]`` is what member ``s`` sends member ``r``,
    ``received[r, s]`` what ``r`` expects from ``s`` (group ranks)."""
    bad = sent != received.T
    if not bad.any():
        return None
    n = len(clique)
    apart = bad | bad.T
    peers = np.count_nonzero(apart & ~np.eye(n, dtype=bool), axis=1)
    off = (2 * peers > n - 1) | np.diagonal(bad)
    culprits = () if off.all() else tuple(clique[i] for i in np.flatnonzero(off).tolist())
    receivers, senders = np.nonzero(bad.T)
    pairs = [f"{unit} {clique[t]} expects {int(received[t, s])} elements from {unit} "
             f"{clique[s]}, which sends it {int(sent[s, t])}"
             for s, t in zip(senders.tolist()[:SHOWN], receivers.tolist()[:SHOWN], strict=True)]
    more = f" (and {senders.size - SHOWN} more pairs)" if senders.size > SHOWN else ""
    blame = (f" Off the majority: {unit}s {sorted(culprits)}." if culprits else
             " It is a tie: no majority to blame.")
    text = (f"{_head(run, refs, event, clique, member_refs, unit)} the splits disagree: "
            f"{'; '.join(pairs)}{more}, so the exchange pairs sends and receives of other "
            f"sizes and the result is garbage.{blame}")
    return _finding(refs, clique, member_refs, text, culprits)


def _head(run: Run, refs: list[Ref], event: int, clique: tuple[int, ...],
          member_refs: np.ndarray, unit: str) -> str:
    issued: dict[str, list[int]] = {}
    for device, x in zip(clique, member_refs.tolist(), strict=True):
        issued.setdefault(refs[x].where(), []).append(device)
    sides = "; ".join(f"{unit}{'s' if len(devs) > 1 else ''} {','.join(map(str, devs))} "
                      f"issue{'s' if len(devs) == 1 else ''} {where}"
                      for where, devs in issued.items())
    first = refs[int(member_refs[0])].entry
    return (f"Position {int(run.event_position[event])} on clique {_members(clique)}: "
            f"{sides} ({first.opcode}, {first.dtype});")


def _finding(refs: list[Ref], clique: tuple[int, ...], member_refs: np.ndarray, text: str,
             culprits: tuple[int, ...]) -> Finding:
    names = tuple(dict.fromkeys(refs[x].entry.name for x in member_refs.tolist()))
    lines = tuple(sorted({refs[x].entry.line for x in member_refs.tolist()} - {0}))
    return Finding("mismatch", tuple(sorted(clique)), names, text, tuple(sorted(culprits)),
                   lines)


def _join(values: Iterable[object]) -> str:
    return ", ".join(map(str, values))
