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

Bound: O(bytes) to read (``_trace_events``: only the collectives' events are decoded), then the matcher's replay over ranks x
collectives and O(collectives) numpy for the timing.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._checks import is_int
from .._errors import InvalidArgumentError
from ._flight import DEFAULT_GROUP, collector_paused, from_columns
from ._flight_columns import FIELDS, WIDTH, Columns
from ._report import Report
from ._trace_events import ABSENT, ARG_KEYS, EVENT_KEYS, GPU_CATEGORIES, collective_events

TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz", ".json", ".json.gz")
_RANK = re.compile(r"(\d+)(?:\.pt\.trace)?(?:\.json)?(?:\.gz)?$")
# Collective name (record_param_comms) -> the op name Flight Recorder spells.
_OP_NAMES = {"allreduce": "all_reduce", "allgather": "all_gather", "alltoall": "all_to_all",
             "alltoall_base": "all_to_all_single", "reducescatter": "reduce_scatter",
             "allreduce_coalesced": "all_reduce_coalesced"}
_NOT_MATCHED = ("wait", "send", "recv", "")
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


@dataclass(frozen=True)
class RankTrace:
    """One rank's trace: its collectives in issue order, its groups' members
    (``pg_config``), the host that wrote it, the backend, and the file."""

    rank: int
    collectives: tuple[TraceCollective, ...]
    groups: dict[str, tuple[int, ...]]
    host: str
    backend: str
    source: str


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


def read_rank_trace(file: Path) -> RankTrace:
    """One rank's collectives from its trace file (module docstring)."""
    trace = collective_events(file)
    rank = _rank(file, trace.info)
    groups = _pg_config(trace.info.get("pg_config"))
    comms: list[tuple[str, int | None, str, int, int, str, float, float, bool]] = []
    annotated: list[tuple[str, int, int, str, float, float]] = []
    for event in zip(*(trace.columns[key] for key in EVENT_KEYS + ARG_KEYS), strict=True):
        field = dict(zip(EVENT_KEYS + ARG_KEYS, event, strict=True))
        if field["Collective name"] is not ABSENT:
            record = _comms_record(file, field, groups)
            if record is not None:
                comms.append(record)
            continue
        dims = _get(field["Input Dims"], None) or [[]]
        first = dims[0] if dims and isinstance(dims[0], list) else []
        numel = int(np.prod(first, dtype=np.int64)) if first else 0
        types = _get(field["Input type"], None) or [""]
        start, end = _span(file, field, field["name"])
        annotated.append((field["name"].removeprefix("gloo:"), numel, numel, str(types[0]),
                          start, end))
    if comms:
        collectives = _numbered_comms(comms)
        backend = "nccl" if any(c[8] for c in comms) else str(
            trace.info.get("backend") or "nccl")
    else:
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
        annotated.sort(key=lambda a: a[4])
        collectives = tuple(
            TraceCollective(group, index, op, n_in, _gloo_out(op, n_in, groups.get(group)),
                            dtype, _element_bytes(dtype), start, end)
            for index, (op, n_in, _, dtype, start, end) in enumerate(annotated, 1))
        backend = "gloo"
    return RankTrace(rank, collectives, groups, trace.host, backend, str(file))


def from_profiler_traces(paths: list[str | os.PathLike[str]]) -> tuple[Report, list[RankTrace]]:
    """Read every trace of ``paths`` (files, or directories of ``*.pt.trace.json[.gz]``) and
    match the ranks' collectives as Flight Recorder dumps are matched; the report and the
    ranks' traces (for ``_trace_timing``)."""
    traces: dict[int, RankTrace] = {}
    with collector_paused():
        for file in trace_files(paths):
            trace = read_rank_trace(file)
            if trace.rank in traces:
                raise InvalidArgumentError(
                    f"{traces[trace.rank].source} and {file} are both traces of rank "
                    f"{trace.rank}; keep one per rank")
            traces[trace.rank] = trace
        return match_traces(list(traces.values())), [traces[r] for r in sorted(traces)]


def match_traces(traces: list[RankTrace]) -> Report:
    """The matcher's report over ranks' traces (``_flight.from_columns``)."""
    return from_columns({t.rank: trace_columns(t) for t in traces})


def trace_columns(trace: RankTrace) -> Columns:
    """A rank's collectives as the columns of the Flight Recorder entries they stand for
    (``process_group`` [group, ""], ``pg_id`` the group, ``profiling_name``
    ``<backend>:<opcode>``, ``collective_seq_id``, ``is_p2p`` False, ``input_sizes``
    [[numel in]], ``output_sizes`` [[numel out]], ``input_dtypes`` [dtype], ``state``
    "completed"), with the ids ``_flight_columns.columns`` gives those entries. A collective
    whose fields other than ``seq`` were all seen before adds at most its ``seq``'s id."""
    values: list[Any] = []
    known: dict[tuple[object, ...], int] = {}

    def id_of(key: tuple[object, ...], value: Any) -> int:
        found = known.get(key)
        if found is None:
            found = known[key] = len(values)
            values.append(value)
        return found

    def listed(*items: tuple[tuple[object, ...], Any]) -> tuple[tuple[object, ...], Any]:
        """A list of ``items`` (key, value), its items' ids given before its own."""
        key = (list, tuple(id_of(item, value) for item, value in items))
        value = [value for _, value in items]
        id_of(key, value)
        return key, value

    seen: dict[tuple[str, str, int, int, str], list[int]] = {}
    rows = np.full((len(trace.collectives), WIDTH), -1, dtype=np.int32)
    seq_column = FIELDS.index("collective_seq_id")
    for index, c in enumerate(trace.collectives):
        row = seen.get((c.group, c.opcode, c.numel_in, c.numel_out, c.dtype))
        if row is not None:
            row[seq_column] = id_of((int, c.seq), c.seq)
        else:
            group = (str, c.group)
            fields = {"process_group": known[listed((group, c.group), ((str, ""), ""))[0]]}
            name = f"{trace.backend}:{c.opcode}"
            fields["profiling_name"] = id_of((str, name), name)
            fields["is_p2p"] = id_of((bool, False), False)
            fields["collective_seq_id"] = id_of((int, c.seq), c.seq)
            fields["pg_id"] = id_of(group, c.group)
            fields["state"] = id_of((str, "completed"), "completed")
            fields["input_sizes"] = known[listed(listed(((int, c.numel_in), c.numel_in)))[0]]
            fields["input_dtypes"] = known[listed(((str, c.dtype), c.dtype))[0]]
            fields["output_sizes"] = known[listed(listed(((int, c.numel_out), c.numel_out)))[0]]
            row = [fields.get(f, -1) for f in FIELDS] + [-1, -1]
            seen[(c.group, c.opcode, c.numel_in, c.numel_out, c.dtype)] = row
        rows[index] = row
    config = {g: {"ranks": list(m)} for g, m in trace.groups.items()}
    return Columns(values, rows, config, None)


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


def _comms_record(file: Path, field: dict[str, Any], groups: dict[str, tuple[int, ...]]
                  ) -> tuple[str, int | None, str, int, int, str, float, float, bool] | None:
    """(group, seq, opcode, numel in, numel out, dtype, start, end, on GPU) of one
    ``record_param_comms``-style event (its ``field`` by key, ``_trace_events``' columns);
    None for what is not matched (``wait``, send/recv)."""
    raw = str(field["Collective name"] or "")
    opcode = _OP_NAMES.get(raw.lstrip("_"), raw.lstrip("_"))
    if opcode in _NOT_MATCHED:
        return None
    group = str(_get(field["Process Group Name"], DEFAULT_GROUP))
    if group not in groups:
        ranks = _rank_list(_get(field["Process Group Ranks"], None))
        if ranks:
            groups[group] = ranks
    seq = _get(field["Seq"], None)
    try:
        number = None if seq is None else int(seq)
        numel_in = int(_get(field["In msg nelems"], 0))
        numel_out = int(_get(field["Out msg nelems"], 0))
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"{file}: a {raw} event at ts {_get(field['ts'], None)} has a Seq or msg nelems "
            f"that is not a number") from None
    start, end = _span(file, field, raw)
    on_gpu = str(_get(field["cat"], "")).lower() in GPU_CATEGORIES
    return (group, number, opcode, numel_in, numel_out, str(_get(field["dtype"], "")), start,
            end, on_gpu)


def _span(file: Path, field: dict[str, Any], what: str) -> tuple[float, float]:
    """An event's start and end (``ts`` and ``ts + dur``, 0 where absent); an event whose
    ``ts`` or ``dur`` is not a number (JSON ``null``, a list) is refused naming the file."""
    ts, dur = _get(field["ts"], 0.0), _get(field["dur"], 0.0)
    try:
        start = float(ts)
        return start, start + float(dur)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"{file}: a {what} event has a ts or dur that is not a number (ts {ts!r}, "
            f"dur {dur!r})") from None


def _get(value: Any, default: Any) -> Any:
    """A column's value, ``default`` where the event lacks the key."""
    return default if value is ABSENT else value


def _numbered_comms(records: list[tuple[str, int | None, str, int, int, str, float, float,
                                        bool]]) -> tuple[TraceCollective, ...]:
    """Each collective once (its GPU record where there is one, else its CPU record), in start
    order, numbered by ``Seq`` or else by its index on its group."""
    on_gpu = [r for r in records if r[8]]
    chosen = on_gpu if on_gpu else records
    chosen = sorted(chosen, key=lambda r: r[6])
    counters: dict[str, int] = {}
    out = []
    for group, seq, opcode, n_in, n_out, dtype, start, end, _ in chosen:
        counters[group] = counters.get(group, 0) + 1
        out.append(TraceCollective(group, counters[group] if seq is None else seq, opcode,
                                   n_in, n_out, dtype, _element_bytes(dtype), start, end))
    return tuple(out)


def _gloo_out(op: str, numel: int, members: tuple[int, ...] | None) -> int:
    """Elements a gloo collective produces per rank (its event records the input only): an
    all_gather the input times the group size, the others their input."""
    return numel * len(members) if op == "all_gather" and members else numel


def _element_bytes(dtype: str) -> int:
    return _ELEMENT_BYTES.get(dtype.strip().lower(), 0)
