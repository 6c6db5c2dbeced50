"""``from_flight_recorder``: PyTorch Flight Recorder dumps, one file per rank, matched by
arrival order into the same report as ``analyze`` (``devices`` are global ranks).

A dump is the pickle torch writes (``torch._C._distributed_c10d._dump_fr_trace()``) or its
JSON twin (``_dump_fr_trace_json()``); the rank is the number that ends the file name (as
torch's own loader reads it), so the answer never depends on directory order. Each collective
entry arrives and waits on its process group; its position is its ``collective_seq_id``,
counted from the oldest id every member still holds (the buffer is a ring). A group's members
come from ``pg_config``; raw gloo dumps record ``pg_config`` before torch fills it in, so then
they are recovered from the entries: the ranks that recorded an entry on that group (all
ranks for the default group ``"0"``). A send or recv (``nccl:send 1->2``, ``nccl:recv
3<-0``, group ranks) meets the next one of its pair on that group, in order, whatever its
sequence numbers. The ops of a batch (``batch_isend_irecv``: consecutive sends and recvs with
one ``p2p_seq_id``, closed by a ``coalesced`` entry) are issued together and then waited for,
so a ring of sends and recvs in one batch completes; a send whose recv never comes is
``missing``. gloo records no send or recv at all.

A trace ends where each rank blocked, so a member with no entry for the collective another
rank waits at is waited for (a deadlock when the waits close a cycle) unless it finished or
went past that collective's place without it: then it is ``missing`` (``_skipped``).

The ranks expected are those with a dump, every rank a ``pg_config`` of any dump lists, and
every rank below the highest of these (global ranks count from 0); the default group holds
them all unless ``pg_config`` lists it. A member with no dump (it crashed, or its file is
gone) took part in every collective of its groups that some dump shows completed: the entry's
``state`` is ``completed``, its process group's ``pg_status`` counts it
(``last_completed_collective``: gloo leaves every state at ``scheduled``), or its rank issued
a later one. It is ``missing`` at the first collective of its groups that none shows
completed, where the others block, and the report's notes name it.

The dumps record no group size, so a member can also be unseen: no ``pg_config`` lists it and
it left no dump. A collective completes only once all its members arrive, so where every
member with a dump of a group whose members were recovered enqueued a collective that none
shows completed (``pg_status``: ``last_enqueued_collective`` past
``last_completed_collective``) and nothing found there explains it (a mismatch), the group
waits for a member no dump shows (``_unseen_blocks``). On the default group, which holds every
rank, that member's rank is known when every rank below the highest left a dump: the next
rank exists, and it is placed as a member with no dump is. On another group which rank it is
cannot be told: the finding names the ranks waiting, and no rank as missing.

An ``all_to_all`` lets each rank send and receive its own amounts, so its sizes are not
compared rank by rank: the exchange must agree as a whole (``_exchange``), per peer when the
entries record one tensor per peer, else by the group's totals (the dumps keep the sizes of
``all_to_all_single``'s tensors, never its split sizes). Its dtype and opcode are compared as
for any collective.

Dumps are read rank by rank into columns (``_flight_columns``: only the fields matching reads
and each entry's user frame, as ids of distinct values; the stacks are never built), and each
rank's are converted to numpy rows before the next is read, so memory holds one dump and the
rows. Each distinct value is converted once (group names, clique names, signatures by their
reprs, frames), and the collectives matched are numbered by one sort over all ranks' rows.

Bound: O(bytes) to read, O(entries log entries) numpy to number the collectives, then the
replay of ``_match`` over ranks x entries.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._collector import paused
from .._errors import InvalidArgumentError
from .._limits import check_size
from ._analyze import run_schedule
from ._classify import Ref, blocked, mismatches
from ._entry import Arrival, Entry
from ._exchange import EXCHANGES, amounts, exchange_mismatches
from ._flight_columns import FIELDS, FILENAME, LINE, Columns, read_dump
from ._match import Rows, run
from ._program import ARRIVE, WAIT
from ._report import Report

_RANK = re.compile(r"(\d+)$")
_PAIR = "|"  # a point-to-point clique: "<group>|<source rank>-><target rank>" (group ranks)
_SUFFIXES = (".json", ".pkl", ".pickle")
DEFAULT_GROUP = "0"
_ABSENT = object()  # a field the entry lacks
_COLUMN = {**{field: column for column, field in enumerate(FIELDS)},
           "frame filename": FILENAME, "frame line": LINE}
_INT64 = (-2**63, 2**63 - 1)


def from_flight_recorder(path: str | os.PathLike[str]) -> Report:
    """Read every dump in directory ``path`` (or the one file ``path``) and match the ranks'
    collectives by arrival order (bound in the module docstring)."""
    with paused():
        return _from_dumps(_read(Path(path)))


def from_columns(ranks: dict[int, Columns]) -> Report:
    """Match per-rank entries already read into ``Columns`` (``_flight_columns``), as dumps
    are matched: ``ranks`` maps each global rank to its columns."""
    with paused():
        tables = _Tables()
        rows = [_rank_rows(rank, ranks[rank], tables, f"rank {rank}") for rank in sorted(ranks)]
        return _from_dumps(_Dumps(rows, tables))


class _Table:
    """Distinct values of one kind, numbered on first sight."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._ids: dict[Any, int] = {}

    def id(self, key: Any, value: Any = _ABSENT) -> int:
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self.values)
            self.values.append(key if value is _ABSENT else value)
        return found


class _Tables:
    """What the ranks' entries name, shared by all ranks: process group names, clique names
    (``_clique_name``), ``pg_id`` texts, signatures (``profiling_name``, ``input_sizes``,
    ``input_dtypes``, ``output_sizes``, keyed by their reprs) and user frames (filename,
    line)."""

    def __init__(self) -> None:
        self.groups = _Table()
        self.cliques = _Table()
        self.pgs = _Table()
        self.signatures = _Table()
        self.frames = _Table()


@dataclass(frozen=True)
class _RankRows:
    """One rank's entries, each as ids into ``_Tables``: its process ``group``, its
    ``clique`` (-1 for what is not matched: ``_clique_name``), ``p2p``, ``seq`` (``p2p_seq_id``
    for a send or recv, else ``collective_seq_id``), ``completed`` (its ``state`` says so),
    ``done`` (``_completed``), ``pg`` (its ``pg_id`` as text), ``signature`` and ``frame``
    (-1: none); and the dump's ``pg_config`` and ``pg_status``."""

    rank: int
    group: np.ndarray
    clique: np.ndarray
    p2p: np.ndarray
    seq: np.ndarray
    completed: np.ndarray
    done: np.ndarray
    pg: np.ndarray
    signature: np.ndarray
    frame: np.ndarray
    config: dict[str, Any]
    status: dict[str, Any]


@dataclass(frozen=True)
class _Dumps:
    """Every rank's rows, in rank order, and the tables they refer to."""

    ranks: list[_RankRows]
    tables: _Tables


def _rank_rows(rank: int, found: Columns, tables: _Tables, source: object) -> _RankRows:
    """``found`` converted: each distinct value once, numpy over the entries."""
    ids, values = found.ids, found.values

    def value(i: int) -> Any:
        return values[i] if i >= 0 else _ABSENT

    def mapped(fields: tuple[str, ...], convert: Callable[..., Any], dtype: Any) -> np.ndarray:
        cols = [_COLUMN[f] for f in fields]
        present, inverse = _distinct_rows(ids[:, cols])
        out = []
        for key in present.tolist():
            try:
                out.append(convert(*(value(i) for i in key)))
            except _Refused as error:
                row = int(np.flatnonzero((ids[:, cols] == key).all(axis=1))[0])
                raise InvalidArgumentError(f"{source}: entry {row}: {error}") from None
        return np.array(out, dtype=dtype)[inverse.reshape(-1)] if out else np.zeros(0, dtype)

    def integers(field: str) -> np.ndarray:
        """An integer field (0 when absent): converted at once when every value is an int."""
        present, inverse = np.unique(ids[:, _COLUMN[field]], return_inverse=True)
        plain = [values[i] if i >= 0 else 0 for i in present.tolist()]
        if set(map(type, plain)) <= {int}:
            with contextlib.suppress(OverflowError):
                return np.array(plain, dtype=np.int64)[inverse.reshape(-1)]
        return mapped((field,), _seq(field), np.int64)

    config, status = _mapping(found.pg_config, "pg_config", source), _mapping(
        found.pg_status, "pg_status", source)
    group = mapped(("process_group",), lambda v: tables.groups.id(_group_name(v)), np.int64)
    p2p = mapped(("is_p2p",), _flag, bool)
    seq = np.where(p2p, integers("p2p_seq_id"), integers("collective_seq_id"))
    clique = mapped(("process_group", "profiling_name", "is_p2p"),
                    lambda g, n, p: _clique_id(tables, g, n, p), np.int64)
    completed = mapped(("state",), lambda v: v == "completed", bool)
    pg = mapped(("pg_id",), lambda v: tables.pgs.id(str(None if v is _ABSENT else v)),
                np.int64)
    signature = mapped(("profiling_name", "input_sizes", "input_dtypes", "output_sizes"),
                       lambda *v: _signature_id(tables, *v), np.int64)
    frame = mapped(("frame filename", "frame line"), lambda f, n: -1 if f is _ABSENT else
                   tables.frames.id((f, _line(n))), np.int64)
    last = [_int(_mapping_or_empty(status.get(name)).get("last_completed_collective"))
            for name in tables.pgs.values]
    done = completed.copy()
    for index, bound in enumerate(last):
        if bound is not None:
            done |= ~p2p & (pg == index) & (seq <= bound)
    return _RankRows(rank, group, clique, p2p, seq, completed, done, pg, signature, frame,
                     config, status)


class _Refused(Exception):
    """A field value the matcher cannot read; the caller says where."""


def _distinct_rows(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``ids`` (entries x columns of ids from -1) and each row's index
    among them (``distinct_rows``)."""
    first, inverse = distinct_rows(ids)
    return ids[first], inverse


def distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of the rows of the integer array ``rows``: where each distinct row first occurs (the
    distinct rows in lexicographic order) and each row's index among them. The columns are
    folded one at a time into one code, compacted after each fold so that it stays below
    rows x values (a column whose values span too far is compacted first). O(rows log rows)
    numpy."""
    code = np.zeros(rows.shape[0], dtype=np.int64)
    count = 1
    for column in rows.T:
        low, high = int(column.min(initial=0)), int(column.max(initial=0))
        if count * (high - low + 1) >= 2**62:
            _, column = np.unique(column, return_inverse=True)
            low, high = 0, int(column.max(initial=0))
        _, code = np.unique(code * (high - low + 1) + (column.reshape(-1) - low),
                            return_inverse=True)
        code = code.reshape(-1)
        count = int(code.max(initial=0)) + 1
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def _mapping(value: Any, name: str, source: object) -> dict[str, Any]:
    if not value:
        return {}
    if type(value) is not dict:
        raise InvalidArgumentError(
            f"{source}: {name} is a {type(value).__name__}, not a dict")
    return value


def _mapping_or_empty(value: Any) -> dict[str, Any]:
    return value if type(value) is dict else {}


def _group_name(value: Any) -> str:
    if type(value) not in (list, tuple) or not value:
        raise _Refused("process_group is not a list of the group's name and description")
    return str(value[0])


def _flag(value: Any) -> bool:
    if value is _ABSENT:
        return False
    if type(value) is not bool:
        raise _Refused(f"is_p2p is {value!r}, not a boolean")
    return value


def _seq(field: str) -> Callable[[Any], int]:
    def convert(value: Any) -> int:
        if value is _ABSENT:
            return 0
        if type(value) is not int or not _INT64[0] <= value <= _INT64[1]:
            raise _Refused(f"{field} is {value!r}, not an integer of 64 bits")
        return value
    return convert


def _line(value: Any) -> int:
    if type(value) is not int:
        raise _Refused(f"a frame's line is {value!r}, not an integer")
    return value


def _profiling_name(value: Any) -> str:
    if type(value) is not str:
        raise _Refused("profiling_name is absent" if value is _ABSENT else
                       f"profiling_name is {value!r}, not a string")
    return value


def _clique_id(tables: _Tables, group: Any, name: Any, p2p: Any) -> int:
    text = _clique_name(_group_name(group), _profiling_name(name), _flag(p2p))
    return tables.cliques.id(text) if text else -1


def _signature_id(tables: _Tables, name: Any, *sizes: Any) -> int:
    """The id of what the members of a collective must agree on: the op and the sizes and
    dtypes (keyed by their reprs, as the dumps spell them)."""
    plain = [None if v is _ABSENT else v for v in sizes]
    return tables.signatures.id((_profiling_name(name), *map(repr, plain)),
                                (name, *plain))


def _read(path: Path) -> _Dumps:
    """Every rank's rows, read rank by rank: each dump is dropped once its columns are
    converted, so memory holds one dump at a time."""
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    origin: dict[int, Path] = {}
    for file in files:
        stem = file.name
        for suffix in _SUFFIXES:
            stem = stem.removesuffix(suffix)
        found = _RANK.search(stem)
        if found is None:
            continue
        rank = int(found.group(1))
        if rank in origin:
            raise InvalidArgumentError(
                f"{origin[rank]} and {file} are both dumps of rank {rank}; keep one per rank")
        origin[rank] = file
    if not origin:
        raise InvalidArgumentError(
            f"{path}: no Flight Recorder dumps (files whose names end in the rank number)")
    tables = _Tables()
    return _Dumps([_rank_rows(rank, read_dump(origin[rank]), tables, origin[rank])
                   for rank in sorted(origin)], tables)


def _from_dumps(dumps: _Dumps) -> Report:
    """The report; where the members with a dump all arrived at a collective none shows
    completed and nothing found there explains it (``_unseen_blocks``), again with the member
    they wait for that no dump shows."""
    report = _analysis(dumps, [])
    blocks = _unseen_blocks(dumps)
    if blocks:
        found = {name for f in report.findings for name in f.instructions}
        blocks = [b for b in blocks if b.name not in found]
    return _analysis(dumps, blocks) if blocks else report


@dataclass(frozen=True)
class _Block:
    """A collective of process group ``group`` (``collective_seq_id`` ``seq``, ``name`` as
    ``_entry`` spells it) that every member with a dump, ``ranks``, arrived at and none shows
    completed."""

    group: str
    seq: int
    name: str
    ranks: tuple[int, ...]


def _analysis(dumps: _Dumps, blocks: list[_Block]) -> Report:
    """Match the dumps; each of ``blocks`` gets the member that no dump shows: on the default
    group the rank above every rank the dumps show (global ranks count from 0), elsewhere a
    member with a negative id (``Rows.members``)."""
    tables = dumps.tables
    ranks = np.array([r.rank for r in dumps.ranks], dtype=np.int64)
    configs = {r.rank: r.config for r in dumps.ranks}
    world = [b for b in blocks if b.group == DEFAULT_GROUP]
    matched = [r.clique >= 0 for r in dumps.ranks]
    cliques = [r.clique[m] for r, m in zip(dumps.ranks, matched, strict=True)]
    seqs = [r.seq[m] for r, m in zip(dumps.ranks, matched, strict=True)]
    sample_of, samples = _samples(cliques, seqs, [r.signature[m] for r, m in zip(
        dumps.ranks, matched, strict=True)], [r.frame[m] for r, m in zip(
            dumps.ranks, matched, strict=True)])
    names_of = tables.cliques.values
    base = [name.split(_PAIR)[0] for name in names_of]
    members, recovered = _memberships(
        ranks.tolist(), [{base[c] for c in np.unique(c).tolist()} for c in cliques], configs,
        beyond=bool(world))
    absent = sorted({r for m in members.values() for r in m} - set(ranks.tolist()))
    pairs = {n for n in names_of if _PAIR in n}
    members.update({n: _pair(n, members) for n in pairs})
    names = sorted(members)
    clique_of = {name: index for index, name in enumerate(names)}
    position = np.array([clique_of[n] for n in names_of], dtype=np.int64)
    cutoff = _cutoffs(cliques, seqs, [len(members[b]) for b in base],
                      np.array([_PAIR in n for n in names_of], dtype=bool))
    unseen = [b for b in blocks if b.group != DEFAULT_GROUP]
    for number, block in enumerate(unseen, 1):
        members[block.group] = (*members[block.group], -number)
    shown: dict[tuple[int, int], tuple[str, str, str, str, str, int]] = {}
    entries = [_entry(tables, shown, index, *sample) for index, sample in enumerate(samples)]
    moved = {index: amounts(tables.signatures.values[sample[2]][1] or [],
                            tables.signatures.values[sample[2]][3] or [])
             for index, sample in enumerate(samples) if entries[index].opcode in EXCHANGES}
    refs = [Ref(entry, sized=index not in moved) for index, entry in enumerate(entries)]
    is_pair = np.array([_PAIR in n for n in names_of], dtype=bool)
    codes: dict[str, int] = {}
    base_code = np.array([codes.setdefault(b, len(codes)) for b in base], dtype=np.int64)
    kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    credited = np.zeros(len(names), dtype=np.int64)
    for row, (rank, keep_rows, clique, seq) in enumerate(
            zip(dumps.ranks, matched, cliques, seqs, strict=True)):
        joins = _joins_batch(clique, seq, is_pair, base_code)
        keep = seq >= cutoff[clique]
        starts = ~joins[keep]
        if starts.size:
            starts[0] = True
        kept_cliques = position[clique[keep]]
        kept.append((kept_cliques, sample_of[row][keep], starts))
        np.maximum(credited, _completed_per_clique(kept_cliques, rank.done[keep_rows][keep],
                                                   starts, len(names)), out=credited)
    count = max((c.size for c, _, _ in kept), default=0)
    check_size(2 * count * ranks.size, "the Flight Recorder entries of all ranks")
    kind = np.full((ranks.size, 2 * count), ARRIVE, dtype=np.int64)
    link = np.full((ranks.size, 2 * count), -1, dtype=np.int64)
    clique = np.full((ranks.size, 2 * count), -1, dtype=np.int64)
    ref = np.zeros((ranks.size, 2 * count), dtype=np.int64)
    for row, (row_cliques, row_refs, starts) in enumerate(kept):
        arrive, wait = _batch_columns(starts)
        kind[row, wait] = WAIT
        link[row, wait] = arrive
        for cols in (arrive, wait):
            clique[row, cols] = row_cliques
            ref[row, cols] = row_refs
    length = np.array([2 * c.size for c, _, _ in kept], dtype=np.int64)
    rows = Rows(ranks, kind, clique, ref, link, length, [members[n] for n in names],
                credited if absent or unseen else None)
    result = run(rows)
    findings = [*mismatches(result, refs, "rank"),
                *exchange_mismatches(result, refs, moved, "rank"),
                *blocked(result, refs, "rank", complete=False)]

    def schedule(rank: int) -> list[Arrival]:
        arrivals = run_schedule(result, refs, int(np.searchsorted(ranks, rank)))
        if not unseen:
            return arrivals
        return [dataclasses.replace(a, clique=tuple(d for d in a.clique if d >= 0))
                for a in arrivals]

    notes = [] if not recovered else [
        f"pg_config names no members for process groups {', '.join(recovered)} (as raw gloo "
        f"dumps record it): their members are the ranks that recorded an entry on them (all "
        f"ranks for the default group), so a rank that never did is not seen as a member"]
    for block in world:
        notes.append(
            f"ranks {list(block.ranks)}, every rank below {len(block.ranks)}, left dumps and "
            f"all arrived at {block.name} on the default group, which none shows completed "
            f"(pg_status): the world has a rank they do not show, so rank {len(block.ranks)} "
            f"exists and left no dump; whether ranks above it exist the dumps do not say")
    for block in unseen:
        notes.append(
            f"ranks {list(block.ranks)}, every rank the dumps show in process group "
            f"{block.group}, arrived at {block.name}, which none shows completed (pg_status): "
            f"the group has a member the dumps do not show, and which rank it is they do not "
            f"say")
    if absent:
        notes.append(
            f"ranks {absent} are members of recorded process groups but left no dump: each "
            f"is taken to have arrived at every collective of its groups that a dump shows "
            f"completed, and to be missing at the first one none does")
    return Report(findings, ranks, "rank", False, [c.size for c, _, _ in kept], schedule,
                  notes)


def _joins_batch(clique: np.ndarray, seqs: np.ndarray, is_pair: np.ndarray,
                 base: np.ndarray) -> np.ndarray:
    """For each entry of one rank (its ``clique`` id; ``is_pair`` and ``base``, the process
    group's code, per clique), whether it belongs to the batch of the entry before it: a send
    or recv with the same process group and ``p2p_seq_id`` as the point-to-point entry just
    before it (``batch_isend_irecv`` numbers every op of a batch alike). O(entries) numpy."""
    p2p = is_pair[clique]
    group = base[clique]
    joins = np.zeros(clique.size, dtype=bool)
    if clique.size > 1:
        joins[1:] = (p2p[1:] & p2p[:-1] & (seqs[1:] == seqs[:-1])
                     & (group[1:] == group[:-1]))
    return joins


def _batch_columns(starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The arrive and wait columns of each entry of one rank, batches laid out as the runtime
    issues them: every op of a batch arrives, then each waits (a lone op arrives and waits
    at once). ``starts`` flags the first entry of each batch. O(entries) numpy."""
    index = np.arange(starts.size)
    first = np.maximum.accumulate(np.where(starts, index, 0)) if starts.size else index
    bounds = np.append(np.flatnonzero(starts), starts.size)
    size = np.repeat(np.diff(bounds), np.diff(bounds))
    arrive = first + index
    return arrive, arrive + size


def _completed_per_clique(cliques: np.ndarray, done: np.ndarray, starts: np.ndarray,
                          count: int) -> np.ndarray:
    """How many of one rank's entries on each of ``count`` cliques the dump shows completed:
    ``done`` (``_completed``) or issued before the rank's last batch began (a rank waits for
    each batch before it issues the next)."""
    passed = done.copy()
    if starts.size:
        passed[:int(np.flatnonzero(starts)[-1])] = True
    return np.bincount(cliques[passed], minlength=count)


def _expected(ranks: list[int], configs: dict[int, dict[str, Any]],
              beyond: bool = False) -> list[int]:
    """Every rank the dumps show exists: those with a dump, those any ``pg_config`` lists, and
    every rank below the highest of them (global ranks count from 0); ``beyond``: one more,
    the default group being blocked with all of these arrived (``_unseen_blocks``)."""
    listed = {r for config in configs.values() for group in config.values()
              for r in _config_ranks(group)}
    return list(range(max({*ranks, *listed}) + 1 + beyond))


def _memberships(ranks: list[int], used: list[set[str]], configs: dict[int, dict[str, Any]],
                 beyond: bool = False) -> tuple[dict[str, tuple[int, ...]], list[str]]:
    """Process group name -> its ranks in group-rank order (ascending global rank), and the
    names whose members were recovered from the entries (the default group's: every rank
    expected, ``_expected``)."""
    recorded: dict[str, set[int]] = defaultdict(set)
    for rank, names in zip(ranks, used, strict=True):
        for name in names:
            recorded[name].add(rank)
    members: dict[str, tuple[int, ...]] = {}
    recovered: list[str] = []
    for name, seen in sorted(recorded.items()):
        written: set[int] = set()
        for config in configs.values():
            listed = _config_ranks(config.get(name))
            if listed:
                written = set(listed)
                break
        if not written:
            recovered.append(name)
            if name == DEFAULT_GROUP:
                written = set(_expected(ranks, configs, beyond))
        members[name] = tuple(sorted(written or seen))
    return members, recovered


def _unseen_blocks(dumps: _Dumps) -> list[_Block]:
    """The collectives where the members of a process group that have a dump all block
    waiting for a member no dump shows. Only groups whose members were recovered from the
    entries qualify (no ``pg_config`` lists them; for the default group, every rank expected
    has a dump): there a member can exist unseen. The collective is the first that no member's
    ``pg_status`` (``last_completed_collective`` of the process group's ``pg_id``) counts
    completed; every member must have enqueued it (``last_enqueued_collective``) and hold its
    entry, none in state ``completed``. A collective completes only once all its members
    arrive, so if nothing else is wrong there (the caller drops those a finding names), a
    member is missing that the dumps do not show. O(entries); none without a ``pg_status``
    (profiler traces record none)."""
    if not any(r.status for r in dumps.ranks):
        return []
    tables = dumps.tables
    rows = {r.rank: r for r in dumps.ranks}
    ranks = sorted(rows)
    base = [name.split(_PAIR)[0] for name in tables.cliques.values]
    used = [{base[c] for c in np.unique(rows[r].clique[rows[r].clique >= 0]).tolist()}
            for r in ranks]
    members, recovered = _memberships(ranks, used, {r: rows[r].config for r in ranks})
    blocks: list[_Block] = []
    for group in recovered:
        group_ranks = members[group]
        if any(r not in rows for r in group_ranks):
            continue  # a member with no dump is known already and placed where they block
        code = tables.groups.id(group)
        held = {r: ~rows[r].p2p & (rows[r].group == code) for r in group_ranks}
        counts = [c for c in (_status_counts(rows[r], held[r], tables) for r in group_ranks)
                  if c]
        if len(counts) != len(group_ranks):
            continue
        seq = max(done for _, done in counts) + 1
        if any(enqueued < seq for enqueued, _ in counts):
            continue  # a member with a dump has not arrived: the matcher finds it
        at = [(r, i) for r in group_ranks
              for i in np.flatnonzero(held[r] & (rows[r].seq == seq)).tolist()]
        if len(at) != len(group_ranks) or any(rows[r].completed[i] for r, i in at):
            continue
        first, index = at[0]
        name = tables.signatures.values[int(rows[first].signature[index])][0]
        blocks.append(_Block(group, seq, f"{_opcode(name)}#{seq}@pg{group}", group_ranks))
    return blocks


def _status_counts(rows: _RankRows, held: np.ndarray, tables: _Tables
                   ) -> tuple[int, int] | None:
    """(``last_enqueued_collective``, ``last_completed_collective``) of the process group of
    the ``held`` entries of one rank (on one group) in that rank's ``pg_status``; None when
    they name no single ``pg_id`` or the status lacks either number."""
    ids = np.unique(rows.pg[held]).tolist()
    if len(ids) != 1:
        return None
    counts = _mapping_or_empty(rows.status.get(tables.pgs.values[ids[0]]))
    enqueued = _int(counts.get("last_enqueued_collective"))
    done = _int(counts.get("last_completed_collective"))
    return None if enqueued is None or done is None else (enqueued, done)


def _int(value: Any) -> int | None:
    """A number of a dump (JSON dumps write them as text); None when it is none."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _clique_name(group: str, profiling_name: str, p2p: bool) -> str:
    """The clique of an entry of process group ``group``: the group for a collective; for a
    send or recv (``nccl:send 1->2``, ``nccl:recv 3<-0``, group ranks) the pair on that
    group; "" for what is not matched: the ``coalesced`` entry that closes a batch (its ops are
    the entries before it) and a point-to-point entry that names no pair."""
    kind, _, meta = profiling_name.split(":", 1)[-1].partition(" ")
    if kind == "coalesced":
        return ""
    if not p2p:
        return group
    if kind == "send" and "->" in meta:
        source, target = meta.split("->")
    elif kind == "recv" and "<-" in meta:
        target, source = meta.split("<-")
    else:
        return ""
    if not (source.strip().isdigit() and target.strip().isdigit()):
        return ""
    return f"{group}{_PAIR}{int(source)}->{int(target)}"


def _pair(name: str, members: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """The global ranks (source, target) of a point-to-point clique name."""
    group, _, pair = name.partition(_PAIR)
    source, target = (int(x) for x in pair.split("->"))
    ranks = members.get(group, ())
    if max(source, target) >= len(ranks):
        raise InvalidArgumentError(
            f"a send/recv on process group {group} names group rank {max(source, target)}, "
            f"but the group has {len(ranks)} members")
    return (ranks[source], ranks[target])


def _config_ranks(config: Any) -> list[int]:
    if not isinstance(config, dict):
        return []
    ranks = config.get("ranks")
    if isinstance(ranks, str):
        try:
            ranks = json.loads(ranks)
        except json.JSONDecodeError:
            return []
    return [int(r) for r in ranks] if isinstance(ranks, list) else []


def _cutoffs(cliques: list[np.ndarray], seqs: list[np.ndarray], sizes: list[int],
             is_pair: np.ndarray) -> np.ndarray:
    """Per clique, the oldest ``collective_seq_id`` every member (``sizes``: how many) still
    holds: the highest of the ranks' oldest, or the lowest when some member recorded none; 0
    for a send/recv pair. ``cliques`` and ``seqs``: each rank's matched entries. O(entries)."""
    count = len(sizes)
    oldest = np.full(count, np.iinfo(np.int64).min, dtype=np.int64)
    lowest = np.full(count, np.iinfo(np.int64).max, dtype=np.int64)
    holders = np.zeros(count, dtype=np.int64)
    for clique, seq in zip(cliques, seqs, strict=True):
        order = np.lexsort((seq, clique))
        runs = np.flatnonzero(np.diff(clique[order], prepend=-1) != 0)
        held, first = clique[order][runs], seq[order][runs]
        np.maximum.at(oldest, held, first)
        np.minimum.at(lowest, held, first)
        holders[held] += 1
    cutoff = np.where(holders == np.array(sizes, dtype=np.int64), oldest, lowest)
    cutoff[is_pair] = 0
    return cutoff


def _samples(cliques: list[np.ndarray], seqs: list[np.ndarray], signatures: list[np.ndarray],
             frames: list[np.ndarray]) -> tuple[list[np.ndarray], list[tuple[int, int, int,
                                                                             int]]]:
    """Each distinct (clique, seq, signature) of the ranks' matched entries numbered in order
    of first appearance (ranks in order), each entry's number per rank, and per number its
    (clique, seq, signature, frame) as first seen. O(entries log entries) numpy."""
    sizes = [c.size for c in cliques]
    if not sum(sizes):
        return [np.zeros(0, dtype=np.int64) for _ in cliques], []
    clique, seq, signature, frame = (np.concatenate(a) for a in (cliques, seqs, signatures,
                                                                   frames))
    order = np.lexsort((signature, seq, clique))  # stable: the first appearance leads a run
    keys = np.stack([clique[order], seq[order], signature[order]])
    new = np.ones(order.size, dtype=bool)
    new[1:] = (keys[:, 1:] != keys[:, :-1]).any(axis=0)
    firsts = order[new]
    number = np.empty(firsts.size, dtype=np.int64)
    number[np.argsort(firsts, kind="stable")] = np.arange(firsts.size)
    each = np.empty(order.size, dtype=np.int64)
    each[order] = number[np.cumsum(new) - 1]
    leads = np.sort(firsts)
    samples = list(zip(clique[leads].tolist(), seq[leads].tolist(), signature[leads].tolist(),
                       frame[leads].tolist(), strict=True))
    return np.split(each, np.cumsum(sizes)[:-1]), samples


def _opcode(profiling_name: str) -> str:
    """The operation of an entry: ``all_to_all`` for ``gloo:all_to_all``."""
    return profiling_name.split(":", 1)[-1].split(" ")[0]


def _entry(tables: _Tables, shown: dict[tuple[int, int], tuple[str, str, str, str, str, int]],
           index: int, clique: int, seq: int, signature: int, frame: int) -> Entry:
    """The entry of sample ``index``: its clique, seq and signature, and the user frame of
    its first appearance; ``shown`` keeps what each (signature, frame) shows."""
    name = tables.cliques.values[clique]
    found = shown.get((signature, frame))
    if found is None:
        profiling_name, sizes_in, dtypes, sizes_out = tables.signatures.values[signature]
        filename, line = tables.frames.values[frame] if frame >= 0 else ("", 0)
        found = shown[signature, frame] = (
            _opcode(profiling_name), str(sizes_in), ",".join(map(str, dtypes or [])),
            str(sizes_out), filename, line)
    opcode, shape, dtype, operand, filename, line = found
    return Entry(
        index=index, name=f"{opcode}#{seq}@pg{name.split(_PAIR)[0]}", opcode=opcode,
        stream="send-recv" if _PAIR in name else "collective", shape=shape, dtype=dtype,
        operand_shapes=(operand,), line=line, computation=filename,
    )  # fmt: skip
