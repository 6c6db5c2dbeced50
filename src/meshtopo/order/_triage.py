"""``triage``: whatever evidence a user holds, each file recognised by its content (never its
name), read by the reader for its kind, and one report: what each source says, what could
not be read and why, and where the sources agree or contradict.

Kinds, told from the first bytes (gzip is opened first):

- ``hlo``: text whose first non-comment line starts ``HloModule``, and anything else
  ``meshtopo.hlo.load`` reads (binary HLO protos where the reader supports them); analysed by
  ``analyze`` (a file in an XLA dump directory is one module among many: each is a source);
- ``flight_recorder``: a pickle, or JSON with ``entries`` (torch's Flight Recorder dump);
  dumps are matched together, one report for all of them;
- ``profiler_trace``: JSON with ``traceEvents``; traces are matched together;
- ``logs``: text with at least one line of the hang-log families (``_logs``); logs are read
  together.

Each source names the ranks it blames (``suspects``): a Flight Recorder or trace finding's
devices (the missing ranks, a deadlock's cycle, a mismatch's culprits or clique), the ranks
logs show behind (global ranks where a line gives them). Two runtime sources agree when they
blame the same ranks, and contradict when one blames ranks the other does not, or one finds
a hang and the other none. The HLO analysis speaks of devices of one program, not of ranks:
its findings are listed, and (when it issues collectives at all) it contradicts the runtime
when it finds nothing while a runtime source finds a hang (the program's own order is
consistent, so look outside it: a rank that ran another program, or control flow on data).

Each HLO program that issues collectives is also joined with each Flight Recorder or trace
source (``_join``): rank by rank, the collectives the program has the rank's device issue
(loop iterations counted) beside those the rank entered. Ranks map to devices by
``rank_devices`` when given, else rank r runs device r (assumed, and said so). Ranks whose
sequences are equal agree; a rank that entered other collectives than its device issues
contradicts the program; and where the program itself has a device issue other collectives
than the rest, the runtime's ranks that stop short of the others are explained by it (the
device's loop iterations say where: "device 1 runs while.9 2 times, the others 3 times").

Bound: the sum of the readers' bounds; sniffing reads at most ``SNIFF`` bytes of a file.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import re
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import MeshtopoError
from ..hlo import load
from ._analyze import analyze
from ._flight import from_flight_recorder
from ._join import Join, RankJoin, join
from ._logs import _CAUGHT, from_logs
from ._report import Report
from ._traces import RankTrace, match_traces, read_rank_trace

SNIFF = 1 << 16
KINDS = ("hlo", "flight_recorder", "profiler_trace", "logs")
_LOG_MARKS = (_CAUGHT, "last enqueued", "Last enqueued", "NCCL INFO", "waiting for `")


@dataclass
class Source:
    """One source of the triage: its ``kind`` (``KINDS``), ``paths``, a one-line ``summary``,
    its ``findings`` (readable lines), the ranks it blames (``suspects``; None for an HLO
    module, whose findings name devices) and whether it found a hang or garbage (``found``)."""

    kind: str
    paths: list[str]
    summary: str
    findings: list[str] = field(default_factory=list)
    suspects: list[int] | None = None
    found: bool = False

    def to_json(self) -> dict[str, object]:
        """JSON-ready."""
        return dict(self.__dict__)


@dataclass
class Triage:
    """The triage's answer: ``sources`` read, ``unread`` (path and reason), ``agreements``
    and ``contradictions`` between sources (readable lines), and each HLO program joined
    with each runtime source (``joins``: the program's path, the runtime source's label and
    the ``Join``)."""

    sources: list[Source]
    unread: list[tuple[str, str]]
    agreements: list[str]
    contradictions: list[str]
    joins: list[tuple[str, str, Join]] = field(default_factory=list)

    @property
    def found(self) -> bool:
        """True when any source found a hang or garbage."""
        return any(s.found for s in self.sources)

    def to_json(self) -> dict[str, object]:
        """JSON-ready (docs/cli-json.md)."""
        return {"sources": [s.to_json() for s in self.sources],
                "unread": [{"path": p, "reason": r} for p, r in self.unread],
                "agreements": self.agreements, "contradictions": self.contradictions,
                "joins": [{"program": p, "runtime": r, **j.to_json()}
                          for p, r, j in self.joins],
                "found": self.found}


def triage(paths: list[str | os.PathLike[str]],
           rank_devices: Mapping[int, int] | None = None) -> Triage:
    """Recognise and read every file of ``paths`` (directories walked), and compare what the
    sources say (module docstring); ``rank_devices`` maps ranks to the global device ids they
    run (default: rank r runs device r). Never raises for a file it cannot read: it is listed
    in ``unread`` with the reason."""
    kinds: dict[str, list[Path]] = {kind: [] for kind in KINDS}
    unread: list[tuple[str, str]] = []
    for file in _files(paths, unread):
        kind, reason = _recognise(file)
        if kind is None:
            unread.append((str(file), reason))
        else:
            kinds[kind].append(file)
    sources: list[Source] = []
    reports: dict[int, Report] = {}  # id(source) -> its report, for HLO and runtime sources
    for file in kinds["hlo"]:
        _attempt(functools.partial(_append_hlo, sources, reports, file), [file], unread)
    if kinds["flight_recorder"]:
        files = kinds["flight_recorder"]
        _attempt(functools.partial(_append, sources, reports, lambda: _flight(files)), files,
                 unread)
    if kinds["profiler_trace"]:
        files = kinds["profiler_trace"]
        _attempt(functools.partial(_append, sources, reports, lambda: _traces(files, unread)),
                 files, unread)
    if kinds["logs"]:
        files = kinds["logs"]
        _attempt(lambda: sources.append(_logs(files)), files, unread)
    agreements, contradictions = _compare(
        [s for s in sources if s.kind != "hlo" or sum(reports[id(s)].entry_counts) > 0])
    joins = _joins(sources, reports, rank_devices, agreements, contradictions)
    return Triage(sources, unread, agreements, contradictions, joins)


def _files(paths: list[str | os.PathLike[str]], unread: list[tuple[str, str]]) -> list[Path]:
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            unread.append((str(path), "no such file or directory"))
    return files


def _recognise(file: Path) -> tuple[str | None, str]:
    """The kind of ``file`` from its first bytes, or None and why not."""
    try:
        with open(file, "rb") as handle:
            head = handle.read(SNIFF)
    except OSError as error:
        return None, f"cannot be read: {error.strerror or error}"
    if not head:
        return None, "empty file"
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, SNIFF)
        except zlib.error as error:
            return None, f"a gzip file that does not decompress: {error}"
    if head[:4] == b"\x7fELF":
        return None, "an ELF object file (compiled code), not evidence this reads"
    if head[:1] == b"\x80":
        return "flight_recorder", ""
    text = head.decode("utf-8", errors="replace")
    stripped = text.lstrip()
    if stripped.startswith("{"):
        if '"traceEvents"' in text:
            return "profiler_trace", ""
        if '"entries"' in text or '"pg_config"' in text:
            return "flight_recorder", ""
        return None, "JSON that is neither a profiler trace (traceEvents) nor a Flight " \
                     "Recorder dump (entries)"
    if _hlo_text(text):
        return "hlo", ""
    if any(mark in text for mark in _LOG_MARKS):
        return "logs", ""
    if "\x00" in text[:1024] or text.count("\ufffd") > len(text) // 10:
        return _binary(file)
    return None, ("text with no line of the hang-log families (torch watchdog, NCCL INFO, "
                  "XLA rendezvous) and no HloModule")


def _hlo_text(text: str) -> bool:
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("//") or line.startswith("#"):
            continue
        return line.startswith("HloModule")
    return False


def _binary(file: Path) -> tuple[str | None, str]:
    """A binary file is HLO when the HLO reader reads it (protos, where it supports them)."""
    try:
        load(file)
    except MeshtopoError as error:
        return None, f"binary, and not HLO the reader reads: {_reason(file, error)}"
    except (OSError, ValueError, RecursionError) as error:
        return None, f"binary, and not HLO the reader reads: {error}"
    return "hlo", ""


def _attempt(read: Callable[[], None], files: list[Path], unread: list[tuple[str, str]]) -> None:
    """Run ``read``; a failure lists ``files`` as unread with the reason."""
    try:
        read()
    except _NothingRead:
        pass
    except MeshtopoError as error:
        unread.extend((str(f), _reason(f, error)) for f in files)
    except (OSError, ValueError, KeyError, TypeError, IndexError, EOFError,
            RecursionError, gzip.BadGzipFile, json.JSONDecodeError) as error:
        unread.extend((str(f), f"could not be read: {type(error).__name__}: {error}")
                      for f in files)


def _append_hlo(sources: list[Source], reports: dict[int, Report], file: Path) -> None:
    _append(sources, reports, lambda: _hlo(file))


def _append(sources: list[Source], reports: dict[int, Report],
            read: Callable[[], tuple[Source, Report]]) -> None:
    source, report = read()
    sources.append(source)
    reports[id(source)] = report


def _hlo(file: Path) -> tuple[Source, Report]:
    module = load(file)
    report = analyze(module)
    return Source("hlo", [str(file)],
                  f"HLO module {module.name}: {sum(report.entry_counts)} collectives in the "
                  f"schedule of {report.devices.size} devices (device table: "
                  f"{module.device_assignment_source})",
                  [f"{f.type}: devices {list(f.devices)} at {', '.join(f.instructions)}: "
                   f"{f.message}" for f in report.findings], None, bool(report.findings)), report


def _flight(files: list[Path]) -> tuple[Source, Report]:
    """Flight Recorder dumps matched together (their names, which end in the rank, kept)."""
    with tempfile.TemporaryDirectory(prefix="meshtopo-fr-") as folder:
        for file in files:
            target = Path(folder) / file.name
            if target.exists():
                raise MeshtopoError(f"two Flight Recorder dumps are named {file.name}")
            target.symlink_to(file.resolve())
        return _runtime("flight_recorder", files, from_flight_recorder(folder))


def _runtime(kind: str, files: list[Path], report: Report) -> tuple[Source, Report]:
    suspects: set[int] = set()
    for finding in report.findings:
        suspects.update(finding.culprits or finding.devices)
    what = "Flight Recorder dumps" if kind == "flight_recorder" else "profiler traces"
    return Source(kind, [str(f) for f in files],
                  f"{what} of {report.devices.size} ranks, {sum(report.entry_counts)} "
                  f"collectives matched",
                  [*(f"note: {n}" for n in report.notes),
                   *(f"{f.type}: ranks {list(f.devices)} at {', '.join(f.instructions)}: "
                     f"{f.message}" for f in report.findings)],
                  sorted(suspects), bool(report.findings)), report


def _traces(files: list[Path], unread: list[tuple[str, str]]) -> tuple[Source, Report]:
    """The traces that read, matched together; the others listed unread."""
    read: dict[int, RankTrace] = {}
    kept: list[Path] = []
    for file in files:
        try:
            trace = read_rank_trace(file)
        except MeshtopoError as error:
            unread.append((str(file), _reason(file, error)))
            continue
        if trace.rank in read:
            unread.append((str(file), f"a second trace of rank {trace.rank} (the first: "
                                      f"{read[trace.rank].source})"))
            continue
        read[trace.rank] = trace
        kept.append(file)
    if not read:
        raise _NothingRead
    return _runtime("profiler_trace", kept, match_traces(list(read.values())))


def _reason(file: Path, error: Exception) -> str:
    """An error's message without the file name (and text position) it starts with."""
    text = " ".join(str(error).split()).removeprefix(f"{file}:").lstrip()
    return re.sub(r"^\d+:\d+: ", "", text)


class _NothingRead(Exception):
    """Every file of a kind was listed unread already."""


def _logs(files: list[Path]) -> Source:
    report = from_logs(list(files))
    findings: list[str] = []
    suspects: set[int] = set()
    for group in report.groups:
        blocked = sorted(r for r, s in group.ranks.items() if s.blocked_seq is not None)
        if group.first_disagreement is not None:
            behind = [_or(group.ranks[r].global_rank, r) for r in group.behind]
            suspects.update(behind)
            findings.append(f"process group {group.pg_id}: ranks {behind} are behind; the "
                            f"ranks first disagree at #{group.first_disagreement}"
                            + (f" ({group.disagreement_op})" if group.disagreement_op else ""))
        if blocked:
            findings.append(f"process group {group.pg_id}: ranks {blocked} timed out in "
                            + ", ".join(sorted({f"{group.ranks[r].blocked_op} "
                                                f"#{group.ranks[r].blocked_seq}"
                                                for r in blocked})))
    for comm in report.comms:
        if comm.first_disagreement is not None:
            behind = [_or(comm.members[r].global_rank, r) for r in comm.behind]
            suspects.update(behind)
            findings.append(f"NCCL communicator {comm.comm_id}: ranks {behind} are behind at "
                            f"opCount {comm.first_disagreement}")
    for wait in report.rendezvous:
        findings.append(f"XLA rendezvous `{wait.name}` stuck ({wait.reports} warnings)")
    return Source("logs", [str(f) for f in files],
                  f"{report.lines} log lines, {report.recognised} of the hang-log families, "
                  f"{len(report.groups)} process groups, {len(report.comms)} NCCL "
                  f"communicators, {len(report.rendezvous)} stuck rendezvous",
                  findings, sorted(suspects), bool(findings))


def _or(value: int | None, fallback: int) -> int:
    return fallback if value is None else value


def _label(source: Source) -> str:
    name = source.paths[0] if len(source.paths) == 1 else f"{len(source.paths)} files"
    return f"{source.kind.replace('_', ' ')} ({name})"


def _compare(sources: list[Source]) -> tuple[list[str], list[str]]:
    """Agreements and contradictions between sources (module docstring)."""
    agree: list[str] = []
    contradict: list[str] = []
    runtime = [s for s in sources if s.suspects is not None]
    for index, first in enumerate(runtime):
        for second in runtime[index + 1:]:
            a, b = set(first.suspects or ()), set(second.suspects or ())
            if first.found != second.found:
                hang, clean = (first, second) if first.found else (second, first)
                contradict.append(f"{_label(hang)} finds a hang or garbage (ranks "
                                  f"{sorted(set(hang.suspects or ()))}); {_label(clean)} finds "
                                  f"none")
            elif first.found and not (a and b) and (a or b):
                named = first if a else second
                agree.append(f"{_label(first)} and {_label(second)} both find a hang; only "
                             f"{_label(named)} names the ranks to blame, "
                             f"{sorted(set(named.suspects or ()))}")
            elif a == b and first.found:
                agree.append(f"{_label(first)} and {_label(second)} both blame ranks "
                             f"{sorted(a)}")
            elif a != b:
                contradict.append(f"{_label(first)} blames ranks {sorted(a)}, "
                                  f"{_label(second)} ranks {sorted(b)}"
                                  + (f" (both: {sorted(a & b)})" if a & b else ""))
            elif not first.found:
                agree.append(f"{_label(first)} and {_label(second)} both find no hang")
    hung = [s for s in runtime if s.found]
    for program in (s for s in sources if s.kind == "hlo"):
        if hung and not program.found:
            contradict.append(
                f"{_label(program)}: the program's own collective order is consistent, while "
                f"{', '.join(_label(s) for s in hung)} find a hang: look outside this "
                f"program (a rank that ran another program or skipped a step, or control "
                f"flow on data)")
        elif hung and program.found:
            agree.append(f"{_label(program)} finds a hang or garbage in the program itself, "
                         f"as {', '.join(_label(s) for s in hung)} find at run time")
    return agree, contradict


def _joins(sources: list[Source], reports: dict[int, Report],
           rank_devices: Mapping[int, int] | None, agree: list[str],
           contradict: list[str]) -> list[tuple[str, str, Join]]:
    """Each HLO program that issues collectives joined with each Flight Recorder or trace
    source (module docstring); the lines they give appended to ``agree`` and ``contradict``."""
    programs = [s for s in sources
                if s.kind == "hlo" and sum(reports[id(s)].entry_counts) > 0]
    runtimes = [s for s in sources if s.kind != "hlo" and id(s) in reports]
    joins: list[tuple[str, str, Join]] = []
    for program in programs:
        for runtime in runtimes:
            joined = join(reports[id(program)], reports[id(runtime)], rank_devices)
            joins.append((program.paths[0], _label(runtime), joined))
            _join_lines(program, runtime, joined, agree, contradict)
    return joins


def _join_lines(program: Source, runtime: Source, joined: Join, agree: list[str],
                contradict: list[str]) -> None:
    """What one join says: ranks that agree, ranks that contradict, and the runtime's suspects
    the program explains (a device that issues other collectives than the rest)."""
    head = (f"{_label(program)} beside {_label(runtime)} "
            + ("(rank r taken to run device r: one device per process, as no mapping was "
               "given)" if joined.assumed else "(ranks placed on devices as given)"))
    if joined.unplaced:
        contradict.append(f"{head}: ranks {_numbers(joined.unplaced)} run no device of the "
                          f"program" + ("" if joined.ranks else "; nothing joined"))
    if not joined.ranks:
        return
    same = [r for r in joined.ranks if r.agrees]
    if same:
        agree.append(f"{head}: ranks {_numbers([r.rank for r in same])} entered exactly the "
                     f"collectives their devices issue ("
                     + ", ".join(f"{n}" for n in sorted({r.issued for r in same}))
                     + " collectives)")
    for rank in (r for r in joined.ranks if not r.agrees):
        contradict.append(
            f"{head}: rank {rank.rank} entered {rank.entered} collectives where its device "
            f"{rank.device} issues {rank.issued}; they first differ at #{rank.first_difference}"
            f" (program: {rank.issued_op or 'nothing more'}, runtime: "
            f"{rank.entered_op or 'nothing more'})")
    usual = Counter(r.issued for r in joined.ranks).most_common(1)[0][0]
    others = [r for r in joined.ranks if r.issued == usual]
    suspects = set(runtime.suspects or ())
    for rank in joined.ranks:
        if rank.issued != usual and rank.agrees and rank.rank in suspects:
            agree.append(
                f"the program explains {_label(runtime)}'s finding on rank {rank.rank}: its "
                f"device {rank.device} issues {rank.issued} collectives where devices "
                f"{_numbers([r.device for r in others])} issue {usual}"
                + _loop_difference(rank, others[0]))


def _loop_difference(odd: RankJoin, usual: RankJoin) -> str:
    """``; while.9 runs 2 times on device 1 and 3 times on the others`` for each loop whose
    iterations differ ("" when none does)."""
    mine, theirs = dict(odd.loops), dict(usual.loops)
    return "".join(f"; {loop} runs {mine.get(loop, 0)} times on device {odd.device} and "
                   f"{theirs.get(loop, 0)} times on the others"
                   for loop in sorted(mine.keys() | theirs.keys())
                   if mine.get(loop, 0) != theirs.get(loop, 0))


def _numbers(values: list[int] | tuple[int, ...]) -> str:
    """Sorted ints with runs written ``a-b``: ``[0-2, 5]``."""
    ordered = sorted(set(values))
    runs: list[str] = []
    start = 0
    for index in range(1, len(ordered) + 1):
        if index == len(ordered) or ordered[index] != ordered[index - 1] + 1:
            first, last = ordered[start], ordered[index - 1]
            runs.append(str(first) if first == last else f"{first}-{last}")
            start = index
    return f"[{', '.join(runs)}]"
