"""Findings from a run matched by arrival order: ``mismatch``, ``missing``,
``group_disagreement``, ``deadlock`` and ``async_overlap``.

- mismatch: the arrivals of one event (members that meet) hold different signatures (opcode,
  dtype, shapes, reduction, group list); culprits are the members off the majority (none on a
  tie);
- missing: a stuck device waits for a member that has no arrival on that event at all (in a
  recorded trace: a member that finished, or that went past the collective without it,
  ``_skipped``, or that left no trace: it took part in what the trace shows complete, see
  ``Rows.credited``, and is missing at the first collective of its groups that is not; or a
  member the trace does not show at all, a negative id in ``Rows.members``: the finding then
  names only the members left waiting);
- group_disagreement: a member that never arrives is stuck at, or issued, the same collective
  from another program that names other groups, so the two are in different cliques (group
  lists compared as device groups, see ``Ref``: another encoding of the same groups agrees);
- deadlock: cycles in the waits-for graph of stuck devices, one finding per cycle, each
  spelled out from its lowest device: of each strongly connected component its shortest
  cycle, then cycles through its devices on none yet (at most ``CYCLE_STARTS``; the message
  counts any left over); devices that only wait behind them (on no cycle) are counted in the
  message, not reported again;
- async_overlap: two in-flight async collectives of one stream (grouped collectives, or
  collective-permutes on their sender and receiver pairs) on different cliques started in
  opposite orders by devices they share.

Bound: O(arrivals log arrivals) numpy work; the Python loops run over stuck devices, events
that mismatch and async pairs in flight together only.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ._cliques import group_extremes
from ._entry import Entry, Finding
from ._match import Run
from ._skipped import Skip, skipped

_FIELDS = ("type", "dtype", "size", "size", "reduction", "groups")
CYCLE_STARTS = 64


@dataclass(frozen=True)
class Ref:
    """What a row operation refers to: the entry, and the groups its program names (a
    hashable key and its text; None when unknown, e.g. Flight Recorder). The key holds device
    groups (``EntryPeers.groups_key``), so two spellings of the same groups have one key.
    ``sized`` False leaves the sizes out of the signature: each member of the collective sends
    and receives its own amounts (a Flight Recorder all_to_all, checked as a whole by
    ``_exchange``)."""

    entry: Entry
    groups: tuple[object, ...] | None = None
    groups_text: str = ""
    iteration: tuple[tuple[str, int], ...] = ()
    sized: bool = True

    def signature(self) -> tuple[object, ...]:
        """What the members of one rendezvous must agree on: the entry's signature (without
        its sizes unless ``sized``) and the group list its program names."""
        opcode, dtype, shape, operands, reduction = self.entry.signature()
        if not self.sized:
            shape, operands = "", ()
        return (opcode, dtype, shape, operands, reduction, self.groups)

    def where(self) -> str:
        """``name (line N, branch B of C, iteration I of L)``: the line, the innermost branch
        and each enclosing loop's iteration where there are; the name alone otherwise."""
        entry = self.entry
        parts = [f"line {entry.line}"] if entry.line else []
        if entry.branches:
            conditional, branch = entry.branches[-1]
            parts.append(f"branch {branch} of {conditional}")
        parts.extend(f"iteration {number} of {loop}" for loop, number in self.iteration)
        return f"{entry.name} ({', '.join(parts)})" if parts else entry.name


def classify(run: Run, refs: list[Ref], unit: str = "device",
             complete: bool = True) -> list[Finding]:
    """Every finding of ``run`` (see the module docstring), mismatches first. ``complete``
    rows hold every collective a device will issue (HLO); otherwise (Flight Recorder) a row
    ends where the device blocked, see ``blocked``."""
    return [*mismatches(run, refs, unit), *blocked(run, refs, unit, complete)]


def _members(clique: tuple[int, ...]) -> str:
    return "[" + ",".join(map(str, clique)) + "]"


def _describe(entry: Entry) -> str:
    shape = entry.shape if entry.shape.startswith(entry.dtype) else f"{entry.dtype} {entry.shape}"
    parts = [entry.opcode, shape]
    if entry.reduction:
        parts.append(entry.reduction)
    return ", ".join(parts)


def mismatches(run: Run, refs: list[Ref], unit: str) -> list[Finding]:
    """Events whose arrivals disagree, one finding per distinct set of instructions."""
    rows = run.rows
    r, c, e = run.arrivals()
    if e.size == 0:
        return []
    table: dict[tuple[object, ...], int] = {}
    signature = np.array([table.setdefault(ref.signature(), len(table)) for ref in refs],
                         dtype=np.int64)
    ref_ids = rows.ref[r, c]
    sig = signature[ref_ids]
    low, high = group_extremes(e, sig, run.event_clique.size)
    bad = np.flatnonzero(low != high)
    if bad.size == 0:
        return []
    keep = np.isin(e, bad)
    by_event: dict[int, list[tuple[int, int]]] = defaultdict(list)
    kept = zip(r[keep].tolist(), ref_ids[keep].tolist(), e[keep].tolist(), strict=True)
    for row, ref, event in kept:
        by_event[event].append((int(rows.devices[row]), ref))
    # One finding per set of instructions (every iteration of a loop alike).
    grouped: dict[tuple[tuple[int, int], ...], list[int]] = defaultdict(list)
    for event, arrivals in by_event.items():
        grouped[tuple(sorted({(refs[ref].entry.program, refs[ref].entry.index)
                              for _, ref in arrivals}))].append(event)
    findings = []
    for event_list in grouped.values():
        ref_set = sorted({ref for event in event_list for _, ref in by_event[event]})
        devices: set[int] = set()
        culprits: set[int] = set()
        tie = False
        for event in event_list:
            arrivals = by_event[event]
            devices.update(run.rows.members[int(run.event_clique[event])])
            counts: dict[int, int] = defaultdict(int)
            for _, ref in arrivals:
                counts[int(signature[ref])] += 1
            top = max(counts.values())
            winners = [s for s, n in counts.items() if n == top]
            if len(winners) > 1:
                tie = True
                continue
            culprits.update(d for d, ref in arrivals if signature[ref] != winners[0])
        first = event_list[0]
        clique = run.rows.members[int(run.event_clique[first])]
        signatures = [refs[ref].signature() for ref in ref_set]
        fields = sorted({_FIELDS[i] for i in range(len(_FIELDS))
                         if len({s[i] for s in signatures}) > 1})
        issued: dict[tuple[str, int], list[int]] = defaultdict(list)
        sample: dict[tuple[str, int], int] = {}
        for device, ref in sorted(by_event[first]):
            key = (refs[ref].entry.name, int(signature[ref]))
            issued[key].append(device)
            sample.setdefault(key, ref)
        sides = "; ".join(
            f"{unit}{'s' if len(devs) > 1 else ''} {','.join(map(str, devs))} "
            f"issue{'s' if len(devs) == 1 else ''} {refs[sample[key]].where()} "
            f"({_describe(refs[sample[key]].entry)})"
            + (f" over {refs[sample[key]].groups_text}" if "groups" in fields else "")
            for key, devs in issued.items())
        more = f" (and {len(event_list) - 1} more cliques alike)" if len(event_list) > 1 else ""
        blame = (" It is a tie: no majority to blame." if tie and not culprits else
                 f" Off the majority: {unit}s {sorted(culprits)}." if culprits else "")
        complete = len(by_event[first]) == len(clique)
        outcome = ("the rendezvous completes between collectives that name different group "
                   "lists" if fields == ["groups"] and complete else
                   "the rendezvous pairs them and the result is garbage" if complete else
                   "the rendezvous would pair them, but not every member arrives there")
        message = (f"Position {int(run.event_position[first])} on clique "
                   f"{_members(clique)}{more}: {sides}; they differ in {', '.join(fields)}, so "
                   f"{outcome}.{blame}")
        names = tuple(dict.fromkeys(refs[ref].entry.name for ref in ref_set))
        findings.append(Finding(
            "mismatch", tuple(sorted(devices)), names,
            message, () if tie and not culprits else tuple(sorted(culprits)),
            tuple(sorted({refs[ref].entry.line for ref in ref_set if refs[ref].entry.line})),
        ))  # fmt: skip
    return findings


def blocked(run: Run, refs: list[Ref], unit: str, complete: bool = True) -> list[Finding]:
    """missing, group_disagreement and deadlock findings for the devices that never finish.

    A member with no arrival on the event is missing when rows are ``complete``. A recorded
    trace ends where each rank blocked, so there a member stuck elsewhere may simply not have
    got there yet: it is waited for (a waits-for edge, part of a deadlock when they form a
    cycle), unless it finished, or went past the collective's place without issuing it
    (``_skipped``), or left no trace (no row; it is waited for only past the events
    ``Rows.credited`` counts it at): then it is missing, and the message says how the trace
    shows it."""
    rows = run.rows
    stuck = run.stuck
    if stuck.size == 0:
        return []
    stuck_events = run.event[stuck, run.pointer[stuck]]
    ar_rows, ar_cols, ar_events = run.arrivals()
    keep = np.isin(ar_events, stuck_events)
    arrive_at: dict[int, dict[int, int]] = defaultdict(dict)
    for row, col, event in zip(ar_rows[keep].tolist(), ar_cols[keep].tolist(),
                               ar_events[keep].tolist(), strict=True):
        arrive_at[event][row] = col
    row_of = {int(d): i for i, d in enumerate(rows.devices.tolist())}
    devices = rows.devices
    edges: dict[int, list[int]] = defaultdict(list)
    missing: dict[str, tuple[int, set[int], set[int], dict[int, str]]] = {}
    disagree: dict[tuple[int, int], set[int]] = defaultdict(set)
    explained: set[int] = set()
    for d in stuck.tolist():
        event = int(run.event[d, run.pointer[d]])
        if event < 0:
            continue
        x = int(rows.ref[d, run.pointer[d]])
        clique = int(run.event_clique[event])
        for member in rows.members[clique]:
            m = row_of.get(member)
            if m == d:
                continue
            if m is None and rows.is_credited(clique, int(run.event_position[event])):
                continue
            col = arrive_at[event].get(m) if m is not None else None
            if col is not None and run.passed[m, col] >= 0:
                continue
            if col is not None and m is not None:
                edges[d].append(m)
                continue
            skip = None
            if not complete and m is not None and run.pointer[m] < rows.length[m]:
                skip = skipped(run, d, m)
                if skip is None:
                    edges[d].append(m)
                    continue
            y = _counterpart(run, refs, m, x)
            if y is not None:
                key = (x, y) if refs[x].entry.program <= refs[y].entry.program else (y, x)
                disagree[key].update((int(devices[d]), member))
            else:
                _, guests, waiters, skips = missing.setdefault(
                    refs[x].entry.name, (x, set(), set(), {}))
                guests.add(member)
                waiters.add(int(devices[d]))
                if skip is not None and m is not None:
                    skips.setdefault(member, _skip_text(run, refs, m, int(devices[d]), skip,
                                                        unit))
                elif m is None and not complete:
                    skips.setdefault(member, _unseen_text(unit) if member < 0
                                     else _absent_text(member, unit))
            explained.add(d)
    findings = [_disagreement(refs, key, devs, unit) for key, devs in disagree.items()]
    for x, guests, waiters, skips in missing.values():
        ref = refs[x]
        how = "".join(f" {skips[g]}" for g in sorted(skips, key=lambda g: (g < 0, g)))
        shown = sorted(g for g in guests if g >= 0)
        waiting = (f"{unit}s {sorted(waiters)} wait" if len(waiters) > 1
                   else f"{unit} {next(iter(waiters))} waits")
        named = f"{unit}s {shown}" if len(shown) > 1 else f"{unit} {shown[0]}" if shown else ""
        head = (f"{named} never arrive{'s' if len(shown) == 1 else ''} at {ref.where()} "
                f"({_describe(ref.entry)}); {waiting} there forever." if shown else
                f"{waiting} forever at {ref.where()} ({_describe(ref.entry)}) for a member no "
                f"trace shows.")
        findings.append(Finding(
            "missing", tuple(shown), (ref.entry.name,), f"{head}{how}",
            lines=(ref.entry.line,) if ref.entry.line else (), waiting=tuple(sorted(waiters))))
    in_cycles: set[int] = set()
    for component, cycles in _cycles(edges):
        in_cycles |= component
        for cycle in cycles:
            findings.append(_deadlock(run, refs, cycle, unit))
        rest = len(component - {d for cycle in cycles for d in cycle})
        if rest:
            last = findings[-1]
            findings[-1] = dataclasses.replace(
                last, message=f"{last.message} {rest} more {unit}{'s' if rest > 1 else ''} of "
                              f"the same waits-for cycles sit on further cycles not spelled "
                              f"out.")
    behind = len(set(stuck.tolist()) - in_cycles - explained)
    if behind and findings:
        last = findings[-1]
        findings[-1] = dataclasses.replace(
            last, message=f"{last.message} {behind} more {unit}{'s' if behind > 1 else ''} "
                          f"only wait{'s' if behind == 1 else ''} behind "
                          f"{'it' if len(findings) == 1 else 'these'}.")
    return findings


def _skip_text(run: Run, refs: list[Ref], m: int, waiter: int, skip: Skip, unit: str) -> str:
    """How the trace shows that row ``m`` skipped the collective ``waiter`` waits at."""
    rows = run.rows
    at = int(run.pointer[m])
    common = np.flatnonzero(run.event[m, :at] == skip.common)
    last = refs[int(rows.ref[m, int(common[-1])])].where()
    now = refs[int(rows.ref[m, at])].where()
    name = f"{unit} {int(rows.devices[m])}"
    issued = ("this one" if skip.issued == 1
              else f"{skip.issued} collectives, this one last")
    return (f"{name[0].upper()}{name[1:]} skipped it rather than issuing it later: since "
            f"{last}, the last collective both completed, {unit} {waiter} issued {issued}, "
            f"while {name} completed {skip.completed} other collective"
            f"{'s' if skip.completed != 1 else ''} and now waits in {now}.")


def _absent_text(member: int, unit: str) -> str:
    """How a recorded trace places a member that left none (``Rows.credited``)."""
    return (f"{unit[0].upper()}{unit[1:]} {member} left no dump: it is placed where the "
            f"others block, having taken part in every collective the dumps show completed on "
            f"its groups, and none shows this one completed.")


def _unseen_text(unit: str) -> str:
    """How a recorded trace shows a member it does not name (a negative id in
    ``Rows.members``)."""
    return (f"Every {unit} the dumps show in its process group arrived there, and none shows "
            f"it completed: the group has a member they do not show, one that left no dump "
            f"or recorded no entry on the group; which {unit} that is the dumps do not say.")


def _counterpart(run: Run, refs: list[Ref], m: int | None, x: int) -> int | None:
    """The entry of member row ``m`` that stands for ``refs[x]`` in another program naming
    other groups: the one ``m`` blocks at, else one of its entries with the same opcode and
    the same name or channel; None when there is none (then ``m`` is simply missing)."""
    if m is None:
        return None
    length = int(run.rows.length[m])
    if run.pointer[m] < length:
        y = int(run.rows.ref[m, run.pointer[m]])
        if _disagree(refs[x], refs[y]):
            return y
    entry = refs[x].entry
    for y in dict.fromkeys(run.rows.ref[m, :length].tolist()):
        other = refs[y].entry
        same = other.name == entry.name or (
            entry.channel_id is not None and other.channel_id == entry.channel_id)
        if same and _disagree(refs[x], refs[y]):
            return int(y)
    return None


def _disagree(x: Ref, y: Ref) -> bool:
    return (x.entry.program != y.entry.program and x.entry.opcode == y.entry.opcode
            and x.groups is not None and y.groups is not None and x.groups != y.groups)


def _disagreement(refs: list[Ref], key: tuple[int, int], devices: set[int],
                  unit: str) -> Finding:
    x, y = refs[key[0]], refs[key[1]]
    return Finding(
        "group_disagreement", tuple(sorted(devices)), (x.entry.name, y.entry.name),
        f"program {x.entry.program} issues {x.where()} over "
        f"{x.groups_text} but program {y.entry.program} issues {y.where()} over "
        f"{y.groups_text}; {unit}s {sorted(devices)} wait for partners who are in another "
        f"group.", lines=tuple(sorted({r.entry.line for r in (x, y) if r.entry.line})))


def _deadlock(run: Run, refs: list[Ref], cycle: list[int], unit: str) -> Finding:
    rows = run.rows
    parts = []
    names: list[str] = []
    cliques = set()
    for i, d in enumerate(cycle):
        col = int(run.pointer[d])
        ref = refs[int(rows.ref[d, col])]
        clique = rows.members[int(run.event_clique[int(run.event[d, col])])]
        cliques.add(clique)
        nxt = int(rows.devices[cycle[(i + 1) % len(cycle)]])
        parts.append(f"{unit} {int(rows.devices[d])} waits in {ref.where()} on clique "
                     f"{_members(clique)} for {unit} {nxt}")
        if ref.entry.name not in names:
            names.append(ref.entry.name)
    lines = tuple(sorted({refs[int(rows.ref[d, int(run.pointer[d])])].entry.line for d in cycle}
                         - {0}))
    return Finding(
        "deadlock", tuple(int(rows.devices[d]) for d in cycle), tuple(names),
        f"a waits-for cycle across {len(cliques)} clique{'s' if len(cliques) != 1 else ''}: "
        + "; ".join(parts)
        + ". None of them can go on: the job hangs.",
        lines=lines)


def _cycles(edges: dict[int, list[int]]) -> list[tuple[set[int], list[list[int]]]]:
    """Each strongly connected component with more than one node (iterative Tarjan) and
    cycles that cover it: its shortest cycle (``_shortest_cycle``), then the shortest cycle
    through each lowest node not yet on one, at most ``CYCLE_STARTS`` cycles a component."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    components: list[set[int]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(edges.get(nxt, ()))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.add(top)
                    if top == node:
                        break
                if len(component) > 1:
                    components.append(component)
    return [(component, _covering_cycles(edges, component)) for component in components]


def _covering_cycles(edges: dict[int, list[int]], component: set[int]) -> list[list[int]]:
    cycles = [_shortest_cycle(edges, component)]
    covered = set(cycles[0])
    for start in sorted(component - covered):
        if len(cycles) >= CYCLE_STARTS:
            break
        if start in covered:
            continue
        cycle = _cycle_through(edges, component, start)
        if cycle is not None:
            cycles.append(_rotated(cycle))
            covered.update(cycle)
    return cycles


def _shortest_cycle(edges: dict[int, list[int]], component: set[int]) -> list[int]:
    """The shortest cycle inside ``component`` (ties: the lowest start), by a BFS from each
    of its lowest ``CYCLE_STARTS`` nodes, rotated to begin at its lowest node."""
    best: list[int] | None = None
    for start in sorted(component)[:CYCLE_STARTS]:
        path = _cycle_through(edges, component, start)
        if path is not None and (best is None or len(path) < len(best)):
            best = path
    return _rotated(best or sorted(component))


def _cycle_through(edges: dict[int, list[int]], component: set[int],
                   start: int) -> list[int] | None:
    """The shortest cycle from ``start`` back to it inside ``component`` (a BFS), or None."""
    parent = {start: start}
    queue = [start]
    found = None
    while queue and found is None:
        following = []
        for node in queue:
            if start in edges.get(node, ()):
                found = node
                break
            for nxt in edges.get(node, ()):
                if nxt in component and nxt not in parent:
                    parent[nxt] = node
                    following.append(nxt)
        queue = following
    if found is None:
        return None
    path = [found]
    while path[-1] != start:
        path.append(parent[path[-1]])
    path.reverse()
    return path


def _rotated(cycle: list[int]) -> list[int]:
    low = cycle.index(min(cycle))
    return cycle[low:] + cycle[:low]


def async_overlaps(run: Run, refs: list[Ref], unit: str,
                   pairs: list[tuple[np.ndarray, int, int]] | None = None) -> list[Finding]:
    """Pairs of in-flight async arrivals started in opposite orders on shared devices.

    ``pairs`` lists ``(row indices, first column, second column)``: devices of one program and
    the arrive columns of two async entries in flight together there (first started first);
    without it there is nothing to compare."""
    if not pairs:
        return []
    keys, flags, devs, ref_a, ref_b = [], [], [], [], []
    for row_ids, first, second in pairs:
        e1 = run.event[row_ids, first]
        e2 = run.event[row_ids, second]
        ok = (e1 >= 0) & (e2 >= 0) & (e1 != e2)
        if not ok.any():
            continue
        e1, e2, ids = e1[ok], e2[ok], row_ids[ok]
        low, high = np.minimum(e1, e2), np.maximum(e1, e2)
        keys.append(low * (run.event_clique.size + 1) + high)
        flags.append(e1 < e2)
        devs.append(ids)
        ref_a.append(run.rows.ref[ids, first])
        ref_b.append(run.rows.ref[ids, second])
    if not keys:
        return []
    key = np.concatenate(keys)
    flag = np.concatenate(flags)
    dev = np.concatenate(devs)
    ra, rb = np.concatenate(ref_a), np.concatenate(ref_b)
    merged: dict[tuple[str, ...], tuple[set[int], set[int], tuple[Ref, ...]]] = {}
    for value in np.unique(key).tolist():
        sel = key == value
        if flag[sel].all() or not flag[sel].any():
            continue
        one = sel & flag
        other = sel & ~flag
        r1 = refs[int(ra[one][0])], refs[int(rb[one][0])]
        r2 = refs[int(ra[other][0])], refs[int(rb[other][0])]
        names: list[str] = []
        for r in (*r1, *r2):
            if r.entry.name not in names:
                names.append(r.entry.name)
        d1, d2, _ = merged.setdefault(tuple(names), (set(), set(), (*r1, *r2)))
        d1.update(int(run.rows.devices[i]) for i in dev[one])
        d2.update(int(run.rows.devices[i]) for i in dev[other])
    findings = []
    for names_key, (d1, d2, (a1, b1, a2, b2)) in merged.items():
        findings.append(Finding(
            "async_overlap", tuple(sorted(d1 | d2)), names_key,
            f"{unit}s {sorted(d1)} start {a1.where()} then {b1.where()} while "
            f"{unit}s {sorted(d2)} start {a2.where()} then {b2.where()}; both are in flight at "
            f"once on different cliques, and communicators used concurrently must see their "
            f"collectives in the same order on every shared {unit} (else they can hang).",
            lines=tuple(sorted({r.entry.line for r in (a1, b1, a2, b2) if r.entry.line}))))
    return findings
