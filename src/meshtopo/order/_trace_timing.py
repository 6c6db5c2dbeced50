"""Per-collective timing of ranks' profiler traces (``_traces``): straggler skew, achieved
bandwidth, and one Perfetto trace of every rank aligned by matched collectives.

A collective is one ``(process group, seq)`` that every member of the group recorded with one
opcode. Its members' clocks are aligned first: traces written on one host share its clock;
a rank on another host is shifted by the median, over the collectives it shares with the
lowest rank, of the difference of their ends (a collective ends at nearly one moment on all
members, after its last member arrives). Then:

- skew: the last member to enter (latest start), by how much after the first;
- time: from the last member's entry to the last member's end (the part not spent waiting);
- algorithm bandwidth: the collective's bytes over that time, its bytes as nccl-tests counts
  them (the larger of what one rank sends and receives: an all_gather's output, a
  reduce_scatter's input); bus bandwidth: algorithm bandwidth times nccl-tests' factor for the
  group size (``topology.busbw_factor``).

Bound: O(collectives x members) numpy, plus O(ranks) for the clock offsets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import InvalidArgumentError
from ._flight import distinct_rows
from ._traces import RankTrace, TraceCollectives

_KINDS = {"all_reduce": "all-reduce", "all_reduce_coalesced": "all-reduce",
          "all_gather": "all-gather", "allgather_base": "all-gather",
          "all_gather_into_tensor": "all-gather", "all_gather_into_tensor_coalesced": "all-gather",
          "reduce_scatter": "reduce-scatter", "reduce_scatter_base": "reduce-scatter",
          "reduce_scatter_tensor": "reduce-scatter",
          "reduce_scatter_tensor_coalesced": "reduce-scatter", "all_to_all": "all-to-all",
          "all_to_all_single": "all-to-all", "broadcast": "broadcast", "reduce": "reduce"}


@dataclass(frozen=True)
class CollectiveTiming:
    """One collective every member of its group recorded: ``group``, ``seq``, ``opcode``
    (Flight Recorder's spelling), ``kind`` (the cost models' kind, None for a barrier and
    the like), ``ranks`` (the members), the member that entered last (``last_rank``) and by
    how many microseconds after the first (``skew_us``), ``time_us`` (last entry to last end),
    ``bytes`` and the achieved ``algbw``/``busbw`` in bytes per second (NaN without bytes or
    time)."""

    group: str
    seq: int
    opcode: str
    kind: str | None
    ranks: tuple[int, ...]
    last_rank: int
    skew_us: float
    time_us: float
    bytes: int
    algbw: float
    busbw: float

    def to_json(self) -> dict[str, object]:
        """JSON-ready (NaN as null)."""
        return {"group": self.group, "seq": self.seq, "opcode": self.opcode, "kind": self.kind,
                "ranks": list(self.ranks), "last_rank": self.last_rank,
                "skew_us": self.skew_us, "time_us": self.time_us, "bytes": self.bytes,
                "algbw": _finite(self.algbw), "busbw": _finite(self.busbw)}


@dataclass(frozen=True)
class Timeline:
    """Every rank's collectives on one aligned clock: ``offsets`` (rank -> microseconds
    subtracted from its trace's times) and the matched collectives' timings in group and
    sequence order."""

    offsets: dict[int, float]
    timings: list[CollectiveTiming]


def timeline(traces: list[RankTrace]) -> Timeline:
    """The aligned timings of ``traces`` (module docstring)."""
    table = _Table(traces)
    offsets = table.offsets()
    return Timeline(offsets, table.timings(offsets))


def merged_trace(traces: list[RankTrace], line: Timeline) -> dict[str, object]:
    """One Chrome/Perfetto trace of every rank's collectives on the aligned clock: a track per
    rank (``tid``), a slice per collective (``args``: group, seq, sizes), and a flow joining
    the members of each matched collective, from the last to enter to each other member."""
    events: list[dict[str, object]] = [
        {"ph": "M", "pid": 0, "name": "process_name", "args": {"name": "collectives by rank"}}]
    starts: dict[tuple[str, int, int], float] = {}
    for trace in traces:
        offset = line.offsets.get(trace.rank, 0.0)
        events.append({"ph": "M", "pid": 0, "tid": trace.rank, "name": "thread_name",
                       "args": {"name": f"rank {trace.rank} ({trace.host})"}})
        for c in trace.collectives:
            start = c.start - offset
            starts[(c.group, c.seq, trace.rank)] = start
            events.append({"ph": "X", "pid": 0, "tid": trace.rank, "cat": "collective",
                           "name": f"{c.opcode}#{c.seq}@pg{c.group}", "ts": start,
                           "dur": max(c.end - c.start, 0.0),
                           "args": {"group": c.group, "seq": c.seq, "numel_in": c.numel_in,
                                    "numel_out": c.numel_out, "dtype": c.dtype}})
    for number, timing in enumerate(line.timings):
        source = starts[(timing.group, timing.seq, timing.last_rank)]
        events.append({"ph": "s", "pid": 0, "tid": timing.last_rank, "id": number,
                       "name": "matched", "cat": "matched", "ts": source})
        events.extend({"ph": "f", "bp": "e", "pid": 0, "tid": rank, "id": number,
                       "name": "matched", "cat": "matched",
                       "ts": max(starts[(timing.group, timing.seq, rank)], source)}
                      for rank in timing.ranks if rank != timing.last_rank)
    return {"traceEvents": events, "displayTimeUnit": "ms"}


class _Table:
    """Every rank's collectives as columns: rank, collective key (group, seq), start, end,
    opcode and bytes."""

    def __init__(self, traces: list[RankTrace]) -> None:
        self.traces = traces
        members: dict[str, tuple[int, ...]] = {}
        for trace in traces:
            for group, ranks in trace.groups.items():
                members.setdefault(group, ranks)
        present = tuple(sorted(t.rank for t in traces))
        tables = [t.table for t in traces]
        self.group_names = sorted({t.group_names[g] for t in tables
                                   for g in np.unique(t.group).tolist()})
        self.members = [members.get(g, present) for g in self.group_names]
        self.opcode_names = sorted({t.opcode_names[o] for t in tables
                                    for o in np.unique(t.opcode).tolist()})
        group_ids = _recoded(tables, self.group_names, "group")
        self.opcode = _recoded(tables, self.opcode_names, "opcode")
        self.rank = np.repeat(np.array([t.rank for t in traces], dtype=np.int64),
                              [len(t) for t in tables])
        seq, self.start, self.end, numel_in, numel_out, element_bytes = (
            np.concatenate([getattr(t, name) for t in tables]) if tables else np.zeros(0)
            for name in ("seq", "start", "end", "numel_in", "numel_out", "element_bytes"))
        self.bytes = (np.maximum(numel_in, numel_out) * element_bytes).astype(np.int64)
        first, self.key = distinct_rows(np.stack([group_ids, seq.astype(np.int64)], axis=1))
        self.key_group, self.key_seq = group_ids[first], seq[first].astype(np.int64)
        self.hosts = {t.rank: t.host for t in traces}

    def offsets(self) -> dict[int, float]:
        """Rank -> clock offset (module docstring); 0 on the lowest rank's host. O(rows log
        rows) numpy: one sort by (rank, difference) gives every rank's median."""
        if not self.traces:
            return {}
        reference = min(self.hosts)
        offsets = dict.fromkeys(sorted(self.hosts), 0.0)
        elsewhere = np.zeros(int(self.rank.max(initial=reference)) + 1, dtype=bool)
        elsewhere[[r for r, h in self.hosts.items() if h != self.hosts[reference]]] = True
        if not elsewhere.any():
            return offsets
        reference_end = np.full(self.key_group.size, np.nan)
        mine = self.rank == reference
        reference_end[self.key[mine]] = self.end[mine]
        difference = self.end - reference_end[self.key]
        kept = elsewhere[self.rank] & ~np.isnan(difference)
        ranks, values = self.rank[kept], difference[kept]
        order = np.lexsort((values, ranks))
        ranks, values = ranks[order], values[order]
        found, starts, counts = np.unique(ranks, return_index=True, return_counts=True)
        medians = (values[starts + (counts - 1) // 2] + values[starts + counts // 2]) / 2
        offsets.update(zip(found.tolist(), medians.tolist(), strict=True))
        return offsets

    def timings(self, offsets: dict[int, float]) -> list[CollectiveTiming]:
        """The timing of each collective every member recorded with one opcode."""
        count = self.key_group.size
        if count == 0:
            return []
        by_rank = np.zeros(int(self.rank.max(initial=0)) + 1)
        by_rank[list(offsets)] = list(offsets.values())
        shift = by_rank[self.rank]
        start, end = self.start - shift, self.end - shift
        size = np.array([len(self.members[g]) for g in self.key_group.tolist()], dtype=np.int64)
        recorded = np.bincount(self.key, minlength=count)
        low_op = np.full(count, np.iinfo(np.int64).max)
        high_op = np.full(count, -1)
        np.minimum.at(low_op, self.key, self.opcode)
        np.maximum.at(high_op, self.key, self.opcode)
        first = np.full(count, np.inf)
        last = np.full(count, -np.inf)
        finish = np.full(count, -np.inf)
        moved = np.zeros(count, dtype=np.int64)
        np.minimum.at(first, self.key, start)
        np.maximum.at(last, self.key, start)
        np.maximum.at(finish, self.key, end)
        np.maximum.at(moved, self.key, self.bytes)
        order = np.lexsort((self.rank, -start, self.key))
        key_sorted = self.key[order]
        leader = order[np.r_[True, key_sorted[1:] != key_sorted[:-1]]]
        last_rank = np.full(count, -1, dtype=np.int64)
        last_rank[self.key[leader]] = self.rank[leader]
        complete = (recorded == size) & (low_op == high_op)
        time = finish - last
        from ..topology import busbw_factor  # the cost models load only for trace timings

        kinds = [_kind(opcode) for opcode in self.opcode_names]
        factors = {(kind, len(members)): busbw_factor(kind, len(members))
                   for kind in {k for k in kinds if k is not None}
                   for members in set(self.members)}
        factor = np.full((len(kinds), len(self.members)), np.nan)
        for code, kind in enumerate(kinds):
            if kind is not None:
                factor[code] = [factors[kind, len(m)] for m in self.members]
        chosen = np.flatnonzero(complete)
        opcode, group = low_op[chosen], self.key_group[chosen]
        seconds = time[chosen] * 1e-6
        with np.errstate(divide="ignore", invalid="ignore"):
            algbw = np.where((seconds > 0) & (moved[chosen] > 0), moved[chosen] / seconds,
                             np.nan)
        busbw = algbw * factor[opcode, group]
        timings = [
            CollectiveTiming(self.group_names[g], seq, self.opcode_names[o], kinds[o],
                             self.members[g], rank, skew, took, size, a, b)
            for g, seq, o, rank, skew, took, size, a, b in zip(
                group.tolist(), self.key_seq[chosen].tolist(), opcode.tolist(),
                last_rank[chosen].tolist(), (last - first)[chosen].tolist(),
                time[chosen].tolist(), moved[chosen].tolist(), algbw.tolist(), busbw.tolist(),
                strict=True)]
        return timings


def _recoded(tables: list[TraceCollectives], names: list[str], column: str) -> np.ndarray:
    """Every rank's codes of ``column`` (``group`` or ``opcode``) as indices into ``names``."""
    codes = [np.array([names.index(n) if n in names else -1
                       for n in getattr(t, f"{column}_names")], dtype=np.int64)
             for t in tables]
    return np.concatenate([c[getattr(t, column)] for c, t in zip(codes, tables, strict=True)]
                          ) if tables else np.zeros(0, dtype=np.int64)


def _kind(opcode: str) -> str | None:
    """The cost models' kind of a Flight Recorder op name; None for what they do not price."""
    kind = _KINDS.get(opcode.lstrip("_"))
    if kind is None:
        return None
    from ..topology import collective_kind

    try:
        return collective_kind(kind)
    except InvalidArgumentError:
        return None


def _finite(value: float) -> float | None:
    return value if value == value else None
