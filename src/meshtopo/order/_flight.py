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

Bound: O(entries) to read, then the replay of ``_match`` over ranks x entries.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import os
import pickle
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InvalidArgumentError
from .._limits import check_size
from ._analyze import run_schedule
from ._classify import Ref, blocked, mismatches
from ._entry import Arrival, Entry
from ._exchange import EXCHANGES, amounts, exchange_mismatches
from ._match import Rows, run
from ._program import ARRIVE, WAIT
from ._report import Report

_RANK = re.compile(r"(\d+)$")
_PAIR = "|"  # a point-to-point clique: "<group>|<source rank>-><target rank>" (group ranks)
_SUFFIXES = (".json", ".pkl", ".pickle")
DEFAULT_GROUP = "0"


def from_flight_recorder(path: str | os.PathLike[str]) -> Report:
    """Read every dump in directory ``path`` (or the one file ``path``) and match the ranks'
    collectives by arrival order (bound in the module docstring)."""
    with collector_paused():
        return _from_dumps(*_read(Path(path)))


def from_entries(dumps: dict[int, list[dict[str, Any]]],
                 configs: dict[int, dict[str, Any]]) -> Report:
    """Match per-rank entries read from elsewhere (profiler traces) as dumps are matched:
    ``dumps`` maps each global rank to its entries in the dump's form (``process_group``,
    ``profiling_name``, ``collective_seq_id``, sizes and dtypes), ``configs`` to its
    ``pg_config``."""
    with collector_paused():
        return _from_dumps(dumps, configs, {rank: {} for rank in dumps})


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: dumps and traces are millions of small acyclic
    objects, and full collections over them while they are alive would make reading
    quadratic."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _from_dumps(dumps: dict[int, list[dict[str, Any]]], configs: dict[int, dict[str, Any]],
                statuses: dict[int, dict[str, Any]]) -> Report:
    """The report; where the members with a dump all arrived at a collective none shows
    completed and nothing found there explains it (``_unseen_blocks``), again with the member
    they wait for that no dump shows."""
    report = _analysis(dumps, configs, statuses, [])
    blocks = _unseen_blocks(dumps, configs, statuses)
    if blocks:
        found = {name for f in report.findings for name in f.instructions}
        blocks = [b for b in blocks if b.name not in found]
    return _analysis(dumps, configs, statuses, blocks) if blocks else report


@dataclass(frozen=True)
class _Block:
    """A collective of process group ``group`` (``collective_seq_id`` ``seq``, ``name`` as
    ``_entry`` spells it) that every member with a dump, ``ranks``, arrived at and none shows
    completed."""

    group: str
    seq: int
    name: str
    ranks: tuple[int, ...]


def _analysis(dumps: dict[int, list[dict[str, Any]]], configs: dict[int, dict[str, Any]],
              statuses: dict[int, dict[str, Any]], blocks: list[_Block]) -> Report:
    """Match the dumps; each of ``blocks`` gets the member that no dump shows: on the default
    group the rank above every rank the dumps show (global ranks count from 0), elsewhere a
    member with a negative id (``Rows.members``)."""
    ranks = np.array(sorted(dumps), dtype=np.int64)
    world = [b for b in blocks if b.group == DEFAULT_GROUP]
    table: dict[tuple[object, ...], int] = {}
    samples: list[dict[str, Any]] = []
    per_rank: list[tuple[list[str], np.ndarray, np.ndarray]] = []
    batched: list[np.ndarray] = []
    finished: list[np.ndarray] = []
    for rank in ranks.tolist():
        named = [(_clique_name(e), e) for e in dumps[rank]]
        entries = [e for name, e in named if name]
        groups = [name for name, _ in named if name]
        seqs = np.array([int(e.get("p2p_seq_id" if e.get("is_p2p") else "collective_seq_id", 0))
                         for e in entries], dtype=np.int64)
        finished.append(np.array([_completed(e, statuses[rank]) for e in entries], dtype=bool))
        keys = [(g, int(s), e.get("profiling_name"), repr(e.get("input_sizes")),
                 repr(e.get("input_dtypes")), repr(e.get("output_sizes")))
                for g, s, e in zip(groups, seqs.tolist(), entries, strict=True)]
        found_ids: list[int] = []
        for key, entry in zip(keys, entries, strict=True):
            found = table.get(key)
            if found is None:
                found = table[key] = len(samples)
                samples.append(entry)
            found_ids.append(found)
        per_rank.append((groups, seqs, np.array(found_ids, dtype=np.int64)))
        batched.append(_joins_batch(groups, seqs))
    members, recovered = _memberships(
        ranks.tolist(), [{n.split(_PAIR)[0] for n in g} for g, _, _ in per_rank], configs,
        beyond=bool(world))
    absent = sorted({r for m in members.values() for r in m} - set(ranks.tolist()))
    pairs = {n for g, _, _ in per_rank for n in g if _PAIR in n}
    members.update({n: _pair(n, members) for n in pairs})
    names = sorted(members)
    clique_of = {name: index for index, name in enumerate(names)}
    cutoff = _cutoffs(per_rank, ranks.tolist(), members)
    unseen = [b for b in blocks if b.group != DEFAULT_GROUP]
    for number, block in enumerate(unseen, 1):
        members[block.group] = (*members[block.group], -number)
    moved = {index: amounts(entry.get("input_sizes") or [], entry.get("output_sizes") or [])
             for index, entry in enumerate(samples) if _opcode(entry) in EXCHANGES}
    refs = [Ref(_entry(entry, index), sized=index not in moved)
            for index, entry in enumerate(samples)]
    kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    credited = np.zeros(len(names), dtype=np.int64)
    for (groups, seqs, ids), joins, done in zip(per_rank, batched, finished, strict=True):
        cliques = np.array([clique_of[g] for g in groups], dtype=np.int64)
        floor = np.array([cutoff[g] for g in groups], dtype=np.int64)
        keep = seqs >= floor
        starts = ~joins[keep]
        if starts.size:
            starts[0] = True
        kept.append((cliques[keep], ids[keep], starts))
        np.maximum(credited, _completed_per_clique(cliques[keep], done[keep], starts,
                                                   len(names)), out=credited)
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


def _joins_batch(groups: list[str], seqs: np.ndarray) -> np.ndarray:
    """For each entry of one rank, whether it belongs to the batch of the entry before it: a
    send or recv with the same process group and ``p2p_seq_id`` as the point-to-point entry
    just before it (``batch_isend_irecv`` numbers every op of a batch alike)."""
    p2p = np.array([_PAIR in g for g in groups], dtype=bool)
    group = np.array([g.split(_PAIR)[0] for g in groups], dtype=object)
    joins = np.zeros(len(groups), dtype=bool)
    if len(groups) > 1:
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


def _completed(entry: dict[str, Any], status: dict[str, Any]) -> bool:
    """Whether one dump shows ``entry`` completed: its ``state`` says so, or (a collective) the
    ``pg_status`` of its process group counts it (``last_completed_collective``, a number or,
    in JSON dumps, its text)."""
    if entry.get("state") == "completed":
        return True
    if entry.get("is_p2p"):
        return False
    last = (status.get(str(entry.get("pg_id"))) or {}).get("last_completed_collective")
    try:
        return int(entry.get("collective_seq_id", 0)) <= int(last)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


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


def _unseen_blocks(dumps: dict[int, list[dict[str, Any]]],
                   configs: dict[int, dict[str, Any]], statuses: dict[int, dict[str, Any]]
                   ) -> list[_Block]:
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
    if not any(statuses.values()):
        return []
    ranks = sorted(dumps)
    used = [{_clique_name(e).split(_PAIR)[0] for e in dumps[r]} - {""} for r in ranks]
    members, recovered = _memberships(ranks, used, configs)
    blocks: list[_Block] = []
    for group in recovered:
        group_ranks = members[group]
        if any(r not in dumps for r in group_ranks):
            continue  # a member with no dump is known already and placed where they block
        held = {r: [e for e in dumps[r] if not e.get("is_p2p")
                    and str(e["process_group"][0]) == group] for r in group_ranks}
        counts = [c for c in (_status_counts(held[r], statuses[r]) for r in group_ranks) if c]
        if len(counts) != len(group_ranks):
            continue
        seq = max(done for _, done in counts) + 1
        if any(enqueued < seq for enqueued, _ in counts):
            continue  # a member with a dump has not arrived: the matching finds it
        at = [e for r in group_ranks for e in held[r] if _int(e.get("collective_seq_id")) == seq]
        if len(at) != len(group_ranks) or any(e.get("state") == "completed" for e in at):
            continue
        blocks.append(_Block(group, seq, f"{_opcode(at[0])}#{seq}@pg{group}", group_ranks))
    return blocks


def _status_counts(entries: list[dict[str, Any]], status: dict[str, Any]
                   ) -> tuple[int, int] | None:
    """(``last_enqueued_collective``, ``last_completed_collective``) of the process group of
    ``entries`` (one rank's, on one group) in that rank's ``pg_status``; None when the entries
    name no single ``pg_id`` or the status lacks either number."""
    ids = {str(e.get("pg_id")) for e in entries}
    if len(ids) != 1:
        return None
    counts = status.get(ids.pop()) or {}
    enqueued = _int(counts.get("last_enqueued_collective"))
    done = _int(counts.get("last_completed_collective"))
    return None if enqueued is None or done is None else (enqueued, done)


def _int(value: Any) -> int | None:
    """A number of a dump (JSON dumps write them as text); None when it is none."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _clique_name(entry: dict[str, Any]) -> str:
    """The group of a collective entry; for a send or recv (``nccl:send 1->2``,
    ``nccl:recv 3<-0``, group ranks) the pair on that group; "" for what is not matched: the
    ``coalesced`` entry that closes a batch (its ops are the entries before it) and a
    point-to-point entry that names no pair."""
    group = str(entry["process_group"][0])
    kind, _, meta = str(entry.get("profiling_name", "")).split(":", 1)[-1].partition(" ")
    if kind == "coalesced":
        return ""
    if not entry.get("is_p2p"):
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


def _cutoffs(per_rank: list[tuple[list[str], np.ndarray, np.ndarray]], ranks: list[int],
             members: dict[str, tuple[int, ...]]) -> dict[str, int]:
    """Per group, the oldest ``collective_seq_id`` every member still holds (the lowest one
    when some member recorded none)."""
    oldest: dict[str, dict[int, int]] = defaultdict(dict)
    for rank, (groups, seqs, _) in zip(ranks, per_rank, strict=True):
        for group, seq in zip(groups, seqs.tolist(), strict=True):
            held = oldest[group]
            if seq < held.get(rank, seq + 1):
                held[rank] = seq
    return {group: 0 if _PAIR in group else (
        max(held.values()) if len(held) == len(members[group]) else min(held.values()))
        for group, held in oldest.items()}


def _opcode(entry: dict[str, Any]) -> str:
    """The operation of an entry: ``all_to_all`` for ``gloo:all_to_all``."""
    return str(entry.get("profiling_name", "?")).split(":", 1)[-1].split(" ")[0]


def _entry(entry: dict[str, Any], index: int) -> Entry:
    opcode = _opcode(entry)
    frame = _user_frame(entry.get("frames") or [])
    p2p = bool(entry.get("is_p2p"))
    seq = entry.get("p2p_seq_id" if p2p else "collective_seq_id")
    return Entry(
        index=index, name=f"{opcode}#{seq}@pg{entry['process_group'][0]}", opcode=opcode,
        stream="send-recv" if p2p else "collective", shape=str(entry.get("input_sizes")),
        dtype=",".join(map(str, entry.get("input_dtypes") or [])),
        operand_shapes=(str(entry.get("output_sizes")),),
        line=int(frame.get("line", 0)) if frame else 0,
        computation=str(frame.get("filename", "")) if frame else "",
    )  # fmt: skip


def _user_frame(frames: list[dict[str, Any]]) -> dict[str, Any] | None:
    for frame in frames:
        if "torch/distributed" not in str(frame.get("filename", "")):
            return frame
    return None


def _read(path: Path) -> tuple[dict[int, list[dict[str, Any]]], dict[int, dict[str, Any]],
                               dict[int, dict[str, Any]]]:
    """Per rank: its entries, its ``pg_config`` and its ``pg_status``."""
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    dumps: dict[int, list[dict[str, Any]]] = {}
    config: dict[int, dict[str, Any]] = {}
    status: dict[int, dict[str, Any]] = {}
    origin: dict[int, Path] = {}
    for file in files:
        stem = file.name
        for suffix in _SUFFIXES:
            stem = stem.removesuffix(suffix)
        found = _RANK.search(stem)
        if found is None:
            continue
        rank = int(found.group(1))
        if rank in dumps:
            raise InvalidArgumentError(
                f"{origin[rank]} and {file} are both dumps of rank {rank}; keep one per rank")
        dump = _load(file)
        dumps[rank] = _slimmed(dump.get("entries") or [])
        config[rank] = dump.get("pg_config") or {}
        status[rank] = dump.get("pg_status") or {}
        origin[rank] = file
        del dump  # the rest of this rank's dump goes before the next is read
    if not dumps:
        raise InvalidArgumentError(
            f"{path}: no Flight Recorder dumps (files whose names end in the rank number)")
    return dumps, config, status


def _slimmed(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``entries`` keeping of each stack only the frame the report names (``_user_frame``):
    real stacks hold tens of frames an entry, most of a dump's objects, and matching reads
    only that one, so a rank's frames are freed as soon as it is read. O(entries)."""
    for entry in entries:
        frames = entry.get("frames") if isinstance(entry, dict) else None
        if isinstance(frames, list) and len(frames) > 1:
            user = _user_frame(frames)
            entry["frames"] = [] if user is None else [user]
    return entries


def _load(file: Path) -> dict[str, Any]:
    """One dump, pickle or JSON."""
    data = file.read_bytes()
    try:
        dump = pickle.loads(data) if data[:1] == b"\x80" else json.loads(data)
    except (pickle.UnpicklingError, json.JSONDecodeError, UnicodeDecodeError, EOFError) as error:
        raise InvalidArgumentError(
            f"{file}: not a Flight Recorder dump (pickle or JSON): {error}") from None
    if not isinstance(dump, dict) or "entries" not in dump:
        raise InvalidArgumentError(f"{file}: not a Flight Recorder dump (no 'entries')")
    return dump
