"""``from_profiler_traces``: per-rank PyTorch profiler traces (``*.pt.trace.json[.gz]``, one
per rank, as ``torch.profiler``'s ``export_chrome_trace`` writes them), matched as Flight
Recorder dumps are (``_flight.from_columns``: same matcher, same finding types), with each
collective's timing (``_trace_timing``).

What a trace records of a collective depends on the backend:

- ``record_param_comms`` events (NCCL; any event whose ``args`` carry ``Collective name``):
  ``Process Group Name`` and ``Process Group Ranks`` say the group, ``Seq`` the collective's
  sequence number on it, ``In msg nelems``/``Out msg nelems`` and ``dtype`` what it moves. A
  GPU kernel event carrying these is the collective's real span and is preferred to the CPU
  event of the same collective. ``wait`` records and point-to-point ops are not matched.
- gloo (torch 2.13 on CPU writes no ``record_param_comms``): a ``gloo:<op>`` event on the
  process group's worker thread per collective, with ``Input Dims`` and ``Input type`` but no
  process group and no sequence number (the ``c10d::`` operator's arguments leave the group
  blank, and a group's worker threads are named ``pt_gloo_runloop`` whatever the group, two
  per group by default). Such a collective is taken on the default group, in start order,
  numbered by its index; a trace whose ``distributedInfo.pg_config`` gives its rank more than
  one group is refused, since which group ran each collective is not recorded: the message
  points to the job's Flight Recorder dumps, which record it. A trace with any event carrying
  ``Collective name`` is read by those alone (``_trace_events`` keeps ``gloo:<op>`` events
  only from a trace without).

The rank is ``distributedInfo.rank``, else the number that ends the file name; the groups'
members come from ``distributedInfo.pg_config`` (else from ``Process Group Ranks``).

Bound: O(bytes) to read (``_trace_events``: only the collectives' events are decoded); per
trace O(events) numpy and O(distinct values) Python; then the matcher's replay over ranks x
collectives and O(collectives) numpy for the timing.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast, overload

import numpy as np

from .._checks import is_int
from .._collector import paused
from .._errors import InvalidArgumentError
from ._flight import DEFAULT_GROUP, distinct_rows, from_columns
from ._flight_columns import FIELDS, WIDTH, Columns
from ._report import Report
from ._trace_events import (
    ABSENT,
    GPU_CATEGORIES,
    INT,
    KEYS,
    OTHER,
    TraceEvents,
    TraceReader,
)

TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz", ".json", ".json.gz")
_RANK = re.compile(r"(\d+)(?:\.pt\.trace)?(?:\.json)?(?:\.gz)?$")
# Collective name (record_param_comms) -> the op name Flight Recorder spells.
_OP_NAMES = {"allreduce": "all_reduce", "allgather": "all_gather", "alltoall": "all_to_all",
             "alltoall_base": "all_to_all_single", "reducescatter": "reduce_scatter",
             "allreduce_coalesced": "all_reduce_coalesced"}
_NOT_MATCHED = ("wait", "send", "recv", "")
_INT64 = (-(2**63), 2**63)
# Bytes per element of the dtype spellings traces use (record_param_comms: c10 names; gloo
# events: the C++ type of ``Input type``).
_ELEMENT_BYTES = {
    "float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "c10::half": 2,
    "float16": 2, "bfloat16": 2, "c10::bfloat16": 2, "long": 8, "long int": 8, "int64": 8,
    "int": 4, "int32": 4, "short": 2, "short int": 2, "int16": 2, "char": 1, "signed char": 1,
    "int8": 1, "byte": 1, "unsigned char": 1, "uint8": 1, "bool": 1,
    "c10::complex<float>": 8, "c10::complex<double>": 16, "complexfloat": 8,
    "complexdouble": 16, "float8_e4m3fn": 1, "float8_e5m2": 1,
}  # fmt: skip


@dataclass(frozen=True)
class TraceCollective:
    """One collective of one rank's trace: its process ``group``, sequence number ``seq``
    (``Seq``, else its index on the group counted from 1), ``opcode`` as Flight Recorder
    spells it, elements in and out, ``dtype``, bytes per element (0 when unknown), and its
    span in the trace's microseconds (``start``, ``end``)."""

    group: str
    seq: int
    opcode: str
    numel_in: int
    numel_out: int
    dtype: str
    element_bytes: int
    start: float
    end: float


class TraceCollectives(Sequence[TraceCollective]):
    """One rank's collectives as columns, one row per collective: ``group``, ``opcode`` and
    ``dtype`` as codes into ``group_names``, ``opcode_names`` and ``dtype_names``, and
    ``seq``, ``numel_in``, ``numel_out``, ``element_bytes`` (int64), ``start`` and ``end``
    (float64). As a sequence, each row is a ``TraceCollective`` made when asked for."""

    def __init__(self, group_names: list[str], group: np.ndarray, seq: np.ndarray,
                 opcode_names: list[str], opcode: np.ndarray, numel_in: np.ndarray,
                 numel_out: np.ndarray, dtype_names: list[str], dtype: np.ndarray,
                 element_bytes: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
        self.group_names, self.opcode_names, self.dtype_names = (
            group_names, opcode_names, dtype_names)
        self.group, self.opcode, self.dtype = (np.asarray(a, dtype=np.int64)
                                               for a in (group, opcode, dtype))
        self.seq, self.numel_in, self.numel_out, self.element_bytes = (
            np.asarray(a, dtype=np.int64) for a in (seq, numel_in, numel_out, element_bytes))
        self.start, self.end = (np.asarray(a, dtype=np.float64) for a in (start, end))

    @classmethod
    def of(cls, collectives: Iterable[TraceCollective]) -> TraceCollectives:
        """The columns of ``collectives``."""
        rows = list(collectives)
        codes: list[dict[str, int]] = [{}, {}, {}]
        coded = [[book.setdefault(name, len(book)) for name in names]
                 for book, names in zip(codes, ([c.group for c in rows],
                                                [c.opcode for c in rows],
                                                [c.dtype for c in rows]), strict=True)]
        return cls(list(codes[0]), np.array(coded[0], dtype=np.int64),
                   np.array([c.seq for c in rows], dtype=np.int64), list(codes[1]),
                   np.array(coded[1], dtype=np.int64),
                   np.array([c.numel_in for c in rows], dtype=np.int64),
                   np.array([c.numel_out for c in rows], dtype=np.int64), list(codes[2]),
                   np.array(coded[2], dtype=np.int64),
                   np.array([c.element_bytes for c in rows], dtype=np.int64),
                   np.array([c.start for c in rows], dtype=np.float64),
                   np.array([c.end for c in rows], dtype=np.float64))

    def __len__(self) -> int:
        return int(self.seq.size)

    @overload
    def __getitem__(self, index: int) -> TraceCollective: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[TraceCollective, ...]: ...

    def __getitem__(self, index: int | slice) -> TraceCollective | tuple[TraceCollective, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(len(self))[index])
        i = range(len(self))[index]
        return TraceCollective(
            self.group_names[self.group[i]], int(self.seq[i]),
            self.opcode_names[self.opcode[i]], int(self.numel_in[i]), int(self.numel_out[i]),
            self.dtype_names[self.dtype[i]], int(self.element_bytes[i]), float(self.start[i]),
            float(self.end[i]))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TraceCollectives({list(self)!r})"


@dataclass(frozen=True)
class RankTrace:
    """One rank's trace: its collectives in issue order (any sequence of
    ``TraceCollective`` given is kept as ``TraceCollectives``), its groups' members
    (``pg_config``), the host that wrote it, the backend, and the file."""

    rank: int
    collectives: Sequence[TraceCollective]
    groups: dict[str, tuple[int, ...]]
    host: str
    backend: str
    source: str

    def __post_init__(self) -> None:
        if not isinstance(self.collectives, TraceCollectives):
            object.__setattr__(self, "collectives", TraceCollectives.of(self.collectives))

    @property
    def table(self) -> TraceCollectives:
        """``collectives`` as columns."""
        return cast(TraceCollectives, self.collectives)


def trace_files(paths: list[str | os.PathLike[str]]) -> list[Path]:
    """The trace files of ``paths``: each file as given, each directory's files whose names
    end in one of ``TRACE_SUFFIXES``, sorted."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.is_file()
                                and p.name.endswith(TRACE_SUFFIXES)))
        elif path.exists():
            files.append(path)
        else:
            raise InvalidArgumentError(f"{path}: no such file or directory")
    if not files:
        raise InvalidArgumentError(
            f"{', '.join(map(str, paths))}: no profiler traces (*.pt.trace.json[.gz])")
    return files


def read_rank_trace(file: Path, reader: TraceReader | None = None) -> RankTrace:
    """One rank's collectives from its trace file (module docstring), read by ``reader``
    (one reading many traces reuses its buffer; a new one by default). O(events) numpy; each
    distinct value of a key is converted once. An event is refused as the first of the
    file's events (in file order) that cannot be read: a matched collective whose ``Seq`` or
    msg nelems is not a number, or whose ``ts`` or ``dur`` is not one."""
    trace = (reader or TraceReader()).read(file)
    rank = _rank(file, trace.info)
    groups = _pg_config(trace.info.get("pg_config"))
    raw, raw_names = _per_value(trace, "Collective name", lambda v: str(_get(v, None) or ""))
    comms = trace.ids[:, KEYS.index("Collective name")] >= 0
    opcode_of = [_OP_NAMES.get(r.lstrip("_"), r.lstrip("_")) for r in raw_names]
    matched = comms & np.array([o not in _NOT_MATCHED for o in opcode_of], dtype=bool)[raw]
    events = _Events(trace, matched)
    events.refuse_first(file, raw_names, raw)
    if matched.any():
        return _comms_trace(file, rank, groups, trace, events, opcode_of, raw)
    return _gloo_trace(file, rank, groups, trace, events)


class _Events:
    """The numbers of a trace's kept events (``matched``: the collectives matched; the events
    without ``Collective name`` are gloo's): ``start``, ``end``, ``seq`` (``has_seq``
    False where ``Seq`` is absent or null), ``numel_in``, ``numel_out``, ``numel`` (gloo's,
    from ``Input Dims``: codes ``dims`` into ``numels``), gloo's dtypes (``Input type``'s
    first: codes ``types`` into ``type_names``), and per event what cannot be read
    (``failing``; an exception raised reading a distinct value stands in its place)."""

    def __init__(self, trace: TraceEvents, matched: np.ndarray) -> None:
        self.trace = trace
        self.matched = matched
        self.gloo = trace.ids[:, KEYS.index("Collective name")] < 0
        ts, ts_bad = _floats(trace, "ts")
        dur, dur_bad = _floats(trace, "dur")
        self.start, self.end = ts, ts + dur
        self.seq, seq_bad, none = _ints(trace, "Seq", None)
        self.has_seq = ~none
        self.numel_in, in_bad, _ = _ints(trace, "In msg nelems", 0)
        self.numel_out, out_bad, _ = _ints(trace, "Out msg nelems", 0)
        self.dims, self.numels = _per_value(trace, "Input Dims", _first_numel)
        self.types, self.type_names = _per_value(trace, "Input type", _first_type)
        self.numel = np.array([0 if isinstance(n, Exception) else n for n in self.numels],
                              dtype=np.int64)[self.dims]
        self.failing = [
            ("numbers", matched & (seq_bad | in_bad | out_bad)),
            ("dims", self.gloo & _failed(self.numels)[self.dims]),
            ("span", (matched | self.gloo) & (ts_bad | dur_bad)),
            ("types", self.gloo & _failed(self.type_names)[self.types])]

    def refuse_first(self, file: Path, raw_names: list[str], raw: np.ndarray) -> None:
        """Raise what reading the first event that cannot be read raises (in file order; on
        one event, in the order listed in ``__init__``)."""
        bad = np.zeros(self.matched.size, dtype=bool)
        for _, flags in self.failing:
            bad |= flags
        if not bad.any():
            return
        event = int(np.argmax(bad))
        field = {key: value for key, value in zip(KEYS, (
            self.trace.values[i] if i >= 0 else ABSENT
            for i in self.trace.ids[event].tolist()), strict=True)}
        reason = next(why for why, flags in self.failing if flags[event])
        what = raw_names[raw[event]] if not self.gloo[event] else str(field["name"])
        if reason == "numbers":
            raise InvalidArgumentError(
                f"{file}: a {what} event at ts {_get(field['ts'], None)} has a Seq or msg "
                f"nelems that is not a number")
        if reason == "span":
            raise InvalidArgumentError(
                f"{file}: a {what} event has a ts or dur that is not a number (ts "
                f"{_get(field['ts'], 0.0)!r}, dur {_get(field['dur'], 0.0)!r})")
        error = (self.numels[self.dims[event]] if reason == "dims"
                 else self.type_names[self.types[event]])
        raise error


def _comms_trace(file: Path, rank: int, groups: dict[str, tuple[int, ...]],
                 trace: TraceEvents, events: _Events, opcode_of: list[str], raw: np.ndarray
                 ) -> RankTrace:
    """A trace with matched ``record_param_comms``-style events: each collective once (its GPU
    record where there is one, else its CPU record), in start order, numbered by ``Seq`` or
    else by its index on its group; the groups ``pg_config`` lacks taken from ``Process Group
    Ranks`` (the first of a group's matched events whose ranks read)."""
    matched = events.matched
    group, group_names = _per_value(trace, "Process Group Name",
                                    lambda v: str(_get(v, DEFAULT_GROUP)))
    ranks_ids = trace.ids[:, KEYS.index("Process Group Ranks")]
    where = np.flatnonzero(matched)
    pairs = np.stack([group[where], ranks_ids[where]], axis=1)
    for code, ranks_id in pairs[np.sort(distinct_rows(pairs)[0])].tolist():
        name = group_names[code]
        if name not in groups:
            ranks = _rank_list(trace.values[ranks_id] if ranks_id >= 0 else None)
            if ranks:
                groups[name] = ranks
    cat, on_gpu_of = _per_value(trace, "cat", lambda v: str(_get(v, "")).lower()
                                in GPU_CATEGORIES)
    on_gpu = matched & np.array(on_gpu_of, dtype=bool)[cat]
    chosen = np.flatnonzero(on_gpu if on_gpu.any() else matched)
    chosen = chosen[np.argsort(events.start[chosen], kind="stable")]
    dtype, dtype_names = _per_value(trace, "dtype", lambda v: str(_get(v, "")))
    opcodes = sorted(set(opcode_of))
    opcode = np.array([opcodes.index(o) for o in opcode_of], dtype=np.int64)[raw]
    seq = np.where(events.has_seq[chosen], events.seq[chosen], _index_on_group(group[chosen]))
    backend = "nccl" if on_gpu.any() else str(trace.info.get("backend") or "nccl")
    element_bytes = np.array([_element_bytes(d) for d in dtype_names], dtype=np.int64)
    return RankTrace(rank, TraceCollectives(
        group_names, group[chosen], seq, opcodes, opcode[chosen], events.numel_in[chosen],
        events.numel_out[chosen], dtype_names, dtype[chosen], element_bytes[dtype[chosen]],
        events.start[chosen], events.end[chosen]), groups, trace.host, backend, str(file))


def _gloo_trace(file: Path, rank: int, groups: dict[str, tuple[int, ...]],
                trace: TraceEvents, events: _Events) -> RankTrace:
    """A trace of ``gloo:<op>`` events alone, on the rank's one group (module docstring),
    in start order, numbered by their index."""
    mine = [g for g, members in groups.items() if rank in members]
    if len(mine) > 1:
        raise InvalidArgumentError(
            f"{file}: rank {rank} is a member of process groups {', '.join(mine)} "
            f"(distributedInfo.pg_config), and torch's gloo backend records each "
            f"collective only as a gloo:<op> event with its inputs, on a worker thread "
            f"named for no group: no process group, no sequence number (no "
            f"record_param_comms event, as NCCL writes). Which group ran each "
            f"collective cannot be told: read the job's Flight Recorder dumps instead "
            f"(order --flight-recorder DIR; torch keeps them with TORCH_FR_BUFFER_SIZE "
            f"set), which name both, or profile on NCCL")
    group = mine[0] if mine else DEFAULT_GROUP
    chosen = np.flatnonzero(events.gloo)
    chosen = chosen[np.argsort(events.start[chosen], kind="stable")]
    names, op_names = _per_value(trace, "name", lambda v: str(v).removeprefix("gloo:"))
    dtype_names = [str(t) for t in events.type_names]
    numel = events.numel[chosen]
    size = len(groups.get(group) or ())
    gathers = np.array([o == "all_gather" for o in op_names], dtype=bool)[names[chosen]]
    element_bytes = np.array([_element_bytes(d) for d in dtype_names], dtype=np.int64)
    dtype = events.types[chosen]
    return RankTrace(rank, TraceCollectives(
        [group], np.zeros(chosen.size, dtype=np.int64), np.arange(1, chosen.size + 1),
        op_names, names[chosen], numel, np.where(gathers & (size > 0), numel * size, numel),
        dtype_names, dtype, element_bytes[dtype], events.start[chosen], events.end[chosen]),
        groups, trace.host, "gloo", str(file))


def from_profiler_traces(paths: list[str | os.PathLike[str]]) -> tuple[Report, list[RankTrace]]:
    """Read every trace of ``paths`` (files, or directories of ``*.pt.trace.json[.gz]``) and
    match the ranks' collectives as Flight Recorder dumps are matched; the report and the
    ranks' traces (for ``_trace_timing``)."""
    traces: dict[int, RankTrace] = {}
    reader = TraceReader()
    with paused():
        for file in trace_files(paths):
            trace = read_rank_trace(file, reader)
            if trace.rank in traces:
                raise InvalidArgumentError(
                    f"{traces[trace.rank].source} and {file} are both traces of rank "
                    f"{trace.rank}; keep one per rank")
            traces[trace.rank] = trace
        return match_traces(list(traces.values())), [traces[r] for r in sorted(traces)]


def match_traces(traces: list[RankTrace]) -> Report:
    """The matcher's report over ranks' traces (``_flight.from_columns``)."""
    return from_columns({t.rank: trace_columns(t) for t in traces})


# The values an entry's fields stand for in ``trace_columns``, as (kind, number) items: an int,
# a string (by code), False, and the lists [n], [[n]], [string] and [group, ""].
_INT, _STR, _FALSE, _LIST, _LIST_OF_LIST, _STR_LIST, _PAIR = range(7)


def trace_columns(trace: RankTrace) -> Columns:
    """A rank's collectives as the columns of the Flight Recorder entries they stand for
    (``process_group`` [group, ""], ``pg_id`` the group, ``profiling_name``
    ``<backend>:<opcode>``, ``collective_seq_id``, ``is_p2p`` False, ``input_sizes``
    [[numel in]], ``output_sizes`` [[numel out]], ``input_dtypes`` [dtype], ``state``
    "completed"), with the ids ``_flight_columns.columns`` gives those entries: a value's id
    on first sight, in that order. O(collectives log collectives) numpy."""
    table = trace.table
    strings: dict[str, int] = {}
    for name in ("", "completed", *table.group_names, *table.dtype_names,
                 *(f"{trace.backend}:{o}" for o in table.opcode_names)):
        strings.setdefault(name, len(strings))
    group = np.array([strings[g] for g in table.group_names], dtype=np.int64)[table.group]
    dtype = np.array([strings[d] for d in table.dtype_names], dtype=np.int64)[table.dtype]
    profiling = np.array([strings[f"{trace.backend}:{o}"] for o in table.opcode_names],
                         dtype=np.int64)[table.opcode]
    signature = np.stack([group, profiling, table.numel_in, table.numel_out, dtype])
    first, leader = _first_seen(signature)  # each distinct one's first, each one's
    firsts = np.flatnonzero(first)
    g, p, n_in, n_out, d, seq = (a[firsts] for a in (group, profiling, table.numel_in,
                                                      table.numel_out, dtype, table.seq))
    # A collective whose fields were not all seen before has these items, in the order
    # ``_flight_columns.columns`` gives their ids (each list's items before it), each named
    # by the field whose value it is; one seen before has one item, its seq.
    items: list[tuple[str | None, int, np.ndarray | int]] = [
        (None, _STR, g), (None, _STR, strings[""]), ("process_group", _PAIR, g),
        ("profiling_name", _STR, p), ("is_p2p", _FALSE, 0), ("collective_seq_id", _INT, seq),
        ("pg_id", _STR, g), ("state", _STR, strings["completed"]), (None, _INT, n_in),
        (None, _LIST, n_in), ("input_sizes", _LIST_OF_LIST, n_in), (None, _STR, d),
        ("input_dtypes", _STR_LIST, d), (None, _INT, n_out), (None, _LIST, n_out),
        ("output_sizes", _LIST_OF_LIST, n_out)]
    width = np.where(first, len(items), 1)
    at = np.cumsum(width) - width
    kinds = np.full(int(width.sum()), _INT, dtype=np.int64)
    numbers = np.repeat(table.seq, width)  # every item of a collective seen before is its seq
    for offset, (_, kind, number) in enumerate(items):
        kinds[at[firsts] + offset] = kind
        numbers[at[firsts] + offset] = number
    seen, item_id = _first_seen(np.stack([kinds, numbers]))
    keys = np.stack([kinds, numbers])[:, seen].T.tolist()
    names = list(strings)
    values = [_item_value(kind, number, names) for kind, number in keys]
    ids = np.full((len(table), WIDTH), -1, dtype=np.int32)
    for offset, (field, _, _) in enumerate(items):
        if field == "collective_seq_id":
            ids[:, FIELDS.index(field)] = item_id[np.where(first, at + offset, at)]
        elif field is not None:
            ids[:, FIELDS.index(field)] = item_id[at[firsts] + offset][leader]
    config = {g: {"ranks": list(m)} for g, m in trace.groups.items()}
    return Columns(values, ids, config, None)


def _first_seen(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of the columns of ``keys``, which is the first of its distinct value, and each one's
    number: its distinct value's, numbered in order of first sight."""
    firsts, inverse = distinct_rows(keys.T)
    order = np.argsort(firsts)
    number = np.empty(order.size, dtype=np.int64)
    number[order] = np.arange(order.size)
    first = np.zeros(keys.shape[1], dtype=bool)
    first[firsts] = True
    return first, number[inverse]


def _item_value(kind: int, number: int, strings: list[str]) -> Any:
    """The value a ``trace_columns`` item stands for."""
    if kind == _INT:
        return number
    if kind == _STR:
        return strings[number]
    if kind == _FALSE:
        return False
    if kind == _LIST:
        return [number]
    if kind == _LIST_OF_LIST:
        return [[number]]
    if kind == _STR_LIST:
        return [strings[number]]
    return [strings[number], ""]


def _rank(file: Path, info: dict[str, Any]) -> int:
    rank = info.get("rank")
    if is_int(rank) and rank >= 0:
        return int(rank)
    found = _RANK.search(file.name)
    if found is None:
        raise InvalidArgumentError(
            f"{file}: the trace names no rank (distributedInfo.rank) and its file name ends "
            f"in no rank number")
    return int(found.group(1))


def _pg_config(config: Any) -> dict[str, tuple[int, ...]]:
    """``distributedInfo.pg_config`` (a list of groups, or a dict by name): name -> ranks."""
    items = config.values() if isinstance(config, dict) else config or []
    groups: dict[str, tuple[int, ...]] = {}
    for group in items:
        if isinstance(group, dict) and "pg_name" in group:
            ranks = _rank_list(group.get("ranks"))
            if ranks:
                groups[str(group["pg_name"])] = ranks
    return groups


def _rank_list(value: Any) -> tuple[int, ...]:
    """Ranks written as a list or as its text (``"[0, 1, 2]"``); () when neither."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return ()
    if not isinstance(value, list):
        return ()
    try:
        return tuple(int(r) for r in value)
    except (TypeError, ValueError):
        return ()


def _get(value: Any, default: Any) -> Any:
    """A column's value, ``default`` where the event lacks the key."""
    return default if value is ABSENT else value


def _per_value(trace: TraceEvents, key: str, convert: Callable[[Any], Any]
               ) -> tuple[np.ndarray, list[Any]]:
    """Of each event, the index into the returned list of ``convert`` of its value of ``key``
    (``ABSENT`` where it lacks it), each distinct value converted once."""
    used, inverse = np.unique(trace.ids[:, KEYS.index(key)], return_inverse=True)
    return inverse.reshape(-1), [convert(trace.values[i] if i >= 0 else ABSENT)
                                 for i in used.tolist()]


def _floats(trace: TraceEvents, key: str) -> tuple[np.ndarray, np.ndarray]:
    """Each event's value of ``key`` as ``float`` takes it (0.0 where absent), and where
    ``float`` refuses it."""
    column = trace.ids[:, KEYS.index(key)]
    numbers = np.append(trace.numbers, 0.0)
    bad = np.zeros(numbers.size, dtype=bool)
    used = np.unique(column[column >= 0])
    for i in used[trace.kinds[used] == OTHER].tolist():
        try:
            numbers[i] = float(trace.values[i])
        except (TypeError, ValueError):
            bad[i] = True
    return numbers[column], bad[column]


def _ints(trace: TraceEvents, key: str, default: int | None
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each event's value of ``key`` as ``int`` takes it (``default`` where absent), where
    ``int`` refuses it or it is beyond int64, and where it is None (absent, or null, with
    ``default`` None)."""
    column = trace.ids[:, KEYS.index(key)]
    integers = np.append(trace.integers, default or 0)
    bad = np.zeros(integers.size, dtype=bool)
    none = np.zeros(integers.size, dtype=bool)
    none[-1] = default is None
    used = np.unique(column[column >= 0])
    for i in used[trace.kinds[used] != INT].tolist():
        value = trace.values[i]
        if value is None and default is None:
            none[i] = True
            continue
        try:
            number = int(value)
        except (TypeError, ValueError):
            bad[i] = True
            continue
        if not _INT64[0] <= number < _INT64[1]:
            bad[i] = True
        else:
            integers[i] = number
    return integers[column], bad[column], none[column]


def _failed(results: list[Any]) -> np.ndarray:
    """Which of ``_per_value``'s results are the exceptions raised making them."""
    return np.array([isinstance(r, Exception) for r in results], dtype=bool)


def _first_numel(value: Any) -> int | Exception:
    """Elements of the first input of a gloo event's ``Input Dims`` (0 without one)."""
    try:
        dims = _get(value, None) or [[]]
        first = dims[0] if dims and isinstance(dims[0], list) else []
        return int(np.prod(first, dtype=np.int64)) if first else 0
    except Exception as error:  # raised as reading the event raises it, in the file's order
        return error


def _first_type(value: Any) -> str | Exception:
    """The dtype of the first input of a gloo event's ``Input type``."""
    try:
        return str((_get(value, None) or [""])[0])
    except Exception as error:  # raised as reading the event raises it, in the file's order
        return error


def _index_on_group(group: np.ndarray) -> np.ndarray:
    """Each position's index (from 1) among the positions of its group so far."""
    order = np.argsort(group, kind="stable")
    ordered = group[order]
    runs = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    index = np.arange(group.size) - np.repeat(runs, np.diff(np.r_[runs, group.size]))
    out = np.empty(group.size, dtype=np.int64)
    out[order] = index + 1
    return out


def _element_bytes(dtype: str) -> int:
    return _ELEMENT_BYTES.get(dtype.strip().lower(), 0)
