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
Each such program is joined with the hang logs too (``_log_join``): per process group and
rank, which of the program's collectives the logged sequence number is on the rank's device,
whether the logged op type and element counts agree with it, and whether the program explains
the ranks the logs show behind.

Pipeline-parallel and multi-program jobs run different programs on different devices:
``programs`` gives them as ``(file, devices)`` pairs (``meshtopo order``'s ``FILE@DEVICES``),
analysed together as one MPMD set (``analyze``), one source whose schedules the joins read
device by device. A finding of that analysis (a deadlock across programs) is set beside the
runtime's suspects, the devices named as the ranks that run them. Several HLO files without
``programs`` are each a program on its own, and a note says how to give the set.

Bound: the sum of the readers' bounds; sniffing reads at most ``SNIFF`` bytes of a file.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import HloParseError, MeshtopoError
from ..hlo import load, module_files
from ._analyze import analyze
from ._flight import from_flight_recorder
from ._join import Join, RankJoin, differing_loops, join
from ._log_join import Behind, LogJoin, LogRankJoin, join_logs
from ._logs import _CAUGHT, LogReport, from_logs
from ._report import Report
from ._trace_events import TraceReader
from ._traces import RankTrace, match_traces, read_rank_trace

SNIFF = 1 << 16
KINDS = ("hlo", "flight_recorder", "profiler_trace", "logs")
_LOG_MARKS = (_CAUGHT, "last enqueued", "Last enqueued", "NCCL INFO", "waiting for `")


@dataclass
class Source:
    """One source of the triage: its ``kind`` (``KINDS``), ``paths``, a one-line ``summary``,
    its ``findings`` (readable lines), the ranks it blames (``suspects``; None for an HLO
    module, whose findings name devices), whether it found a hang or garbage (``found``) and,
    for HLO, the collectives its schedule holds (``collectives``; None for other kinds)."""

    kind: str
    paths: list[str]
    summary: str
    findings: list[str] = field(default_factory=list)
    suspects: list[int] | None = None
    found: bool = False
    collectives: int | None = None

    def to_json(self) -> dict[str, object]:
        """JSON-ready."""
        return dict(self.__dict__)


@dataclass
class Triage:
    """The triage's answer: ``sources`` read, ``unread`` (path and reason), ``agreements``
    and ``contradictions`` between sources (readable lines), and each HLO program joined
    with each runtime source (``joins``: the program's path, the runtime source's label and
    the ``Join``; ``log_joins``: the same with hang logs and the ``LogJoin``), and ``notes``
    on how the evidence was read (e.g. how to give an MPMD set)."""

    sources: list[Source]
    unread: list[tuple[str, str]]
    agreements: list[str]
    contradictions: list[str]
    joins: list[tuple[str, str, Join]] = field(default_factory=list)
    log_joins: list[tuple[str, str, LogJoin]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

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
                "log_joins": [{"program": p, "runtime": r, **j.to_json()}
                              for p, r, j in self.log_joins],
                "notes": self.notes, "found": self.found}


def triage(paths: list[str | os.PathLike[str]],
           rank_devices: Mapping[int, int] | None = None,
           programs: Sequence[tuple[str | os.PathLike[str], Sequence[int]]] = ()) -> Triage:
    """Recognise and read every file of ``paths`` (directories walked), and compare what the
    sources say (module docstring); ``rank_devices`` maps ranks to the global device ids they
    run (default: rank r runs device r); ``programs`` is an MPMD set, each HLO file with the
    devices that run it. Never raises for a file it cannot read: it is listed in ``unread``
    with the reason (every file of ``programs`` when the set cannot be analysed)."""
    kinds: dict[str, list[Path]] = {kind: [] for kind in KINDS}
    unread: list[tuple[str, str]] = []
    walked: set[Path] = set()
    dumped: dict[Path, set[Path]] = {}  # a walked directory -> its after-optimizations modules
    for file in _files(paths, unread, walked):
        kind, reason = _recognise(file)
        if kind in (None, "hlo") and file in walked and not _dump_module(file, dumped):
            unread.append((str(file), _DUMP_SIDE))
        elif kind is None:
            unread.append((str(file), reason))
        else:
            kinds[kind].append(file)
    sources: list[Source] = []
    reports: dict[int, Report] = {}  # id(source) -> its report, for HLO and runtime sources
    logged: dict[int, LogReport] = {}  # id(source) -> its report, for logs
    if programs:
        files = [Path(p) for p, _ in programs]
        _attempt(functools.partial(_append, sources, reports, lambda: _mpmd(programs)), files,
                 unread)
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
        _attempt(functools.partial(_append_logs, sources, logged, files), files, unread)
    agreements, contradictions = _compare(
        [s for s in sources if s.kind != "hlo" or sum(reports[id(s)].entry_counts) > 0])
    joins = _joins(sources, reports, rank_devices, agreements, contradictions)
    log_joins = _log_joins(sources, reports, logged, rank_devices, agreements, contradictions)
    _program_suspects(sources, reports, rank_devices, agreements, contradictions)
    notes = []
    if not programs and sum(1 for s in sources if s.kind == "hlo" and s.collectives) > 1:
        notes.append("several HLO programs issue collectives, each read as a program on its "
                     "own; if different ranks run different programs, give each as "
                     "FILE@DEVICES (e.g. stage0.hlo@0,1 stage1.hlo@2,3) to analyse them as "
                     "one MPMD set and join each rank with its own program")
    return Triage(sources, unread, agreements, contradictions, joins, log_joins, notes)


_DUMP_SIDE = ("written by XLA's dump beside its modules (other stages, IR, buffer assignments, "
              "options, object code): the dump's after-optimizations modules are read")


def _files(paths: list[str | os.PathLike[str]], unread: list[tuple[str, str]],
           walked: set[Path]) -> list[Path]:
    """The files ``paths`` name, directories walked (their files also added to ``walked``)."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file())
            files.extend(found)
            walked.update(found)
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


def _dump_module(file: Path, dumped: dict[Path, set[Path]]) -> bool:
    """False for a file XLA's dump writes (named ``module_...``, or in a module's own
    ``module_...`` folder) in a directory in its layout that is not one of the dump's
    after-optimizations modules (``module_files``: the text where both a text and a proto
    were written); True otherwise."""
    if file.parent.name.startswith("module_") and _dump_modules(file.parent.parent, dumped):
        return False  # the module's own folder (compile options, topology, MLIR)
    modules = _dump_modules(file.parent, dumped)
    return not modules or file in modules or not file.name.startswith("module_")


def _dump_modules(folder: Path, dumped: dict[Path, set[Path]]) -> set[Path]:
    """The after-optimizations modules of ``folder`` (empty when it is no dump), read once."""
    if folder not in dumped:
        try:
            dumped[folder] = {Path(f) for f in module_files(folder)}
        except MeshtopoError:
            dumped[folder] = set()
    return dumped[folder]


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
                  _hlo_findings(report), None, bool(report.findings),
                  sum(report.entry_counts)), report


def _mpmd(programs: Sequence[tuple[str | os.PathLike[str], Sequence[int]]]
          ) -> tuple[Source, Report]:
    """An MPMD set analysed together: one source named by its ``FILE@DEVICES``."""
    modules = [(load(path), [int(d) for d in devices]) for path, devices in programs]
    report = analyze(modules)
    specs = [f"{path}@{','.join(map(str, devices))}" for path, devices in programs]
    return Source("hlo", specs,
                  f"MPMD set of {len(modules)} programs ("
                  + ", ".join(f"{m.name} on devices {_numbers(d)}" for m, d in modules)
                  + f"): {sum(report.entry_counts)} collectives in the schedules of "
                    f"{report.devices.size} devices",
                  _hlo_findings(report), None, bool(report.findings),
                  sum(report.entry_counts)), report


def _hlo_findings(report: Report) -> list[str]:
    """An analysis's findings as readable lines, naming devices."""
    return [f"{f.type}: devices {list(f.devices)} at {', '.join(f.instructions)}: {f.message}"
            for f in report.findings]


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
    reader = TraceReader()
    for file in files:
        try:
            trace = read_rank_trace(file, reader)
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
    """An error's message without the file name it starts with; a text's error says its line
    and column."""
    if isinstance(error, HloParseError):
        return f"line {error.line}, column {error.column}: {' '.join(error.message.split())}"
    return " ".join(str(error).split()).removeprefix(f"{file}:").lstrip()


class _NothingRead(Exception):
    """Every file of a kind was listed unread already."""


def _append_logs(sources: list[Source], logged: dict[int, LogReport], files: list[Path]
                 ) -> None:
    """The logs of ``files`` read as one source, its report kept in ``logged``."""
    source, report = _logs(files)
    sources.append(source)
    logged[id(source)] = report


def _logs(files: list[Path]) -> tuple[Source, LogReport]:
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
                  findings, sorted(suspects), bool(findings)), report


def _or(value: int | None, fallback: int) -> int:
    return fallback if value is None else value


def _label(source: Source) -> str:
    if len(source.paths) == 1:
        name = source.paths[0]
    elif source.kind == "hlo":
        name = f"MPMD set {' '.join(map(_base, source.paths))}"
    else:
        name = f"{len(source.paths)} files"
    return f"{source.kind.replace('_', ' ')} ({name})"


def _base(path: str) -> str:
    """A path's last component."""
    return Path(path).name


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
            joins.append((" ".join(program.paths), _label(runtime), joined))
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
    iterations differ between two joined ranks ("" when none does)."""
    return _loop_text(odd.device, differing_loops(dict(odd.loops), dict(usual.loops)))


def _loop_text(device: int, loops: tuple[tuple[str, int, int], ...]) -> str:
    """``; while.9 runs 2 times on device 1 and 3 times on the others`` for each ``(loop,
    iterations on the device, on the others)``."""
    return "".join(f"; {loop} runs {mine} times on device {device} and {theirs} times on the "
                   f"others" for loop, mine, theirs in loops)


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


def _log_joins(sources: list[Source], reports: dict[int, Report],
               logged: dict[int, LogReport], rank_devices: Mapping[int, int] | None,
               agree: list[str], contradict: list[str]) -> list[tuple[str, str, LogJoin]]:
    """Each HLO program that issues collectives joined with each logs source (``_log_join``);
    the lines they give appended to ``agree`` and ``contradict``."""
    joins: list[tuple[str, str, LogJoin]] = []
    for program in (s for s in sources if s.kind == "hlo" and s.collectives):
        for logs in (s for s in sources if id(s) in logged):
            joined = join_logs(reports[id(program)], logged[id(logs)], rank_devices)
            joins.append((" ".join(program.paths), _label(logs), joined))
            head = (f"{_label(program)} beside {_label(logs)} "
                    + ("(rank r taken to run device r)" if joined.assumed
                       else "(ranks placed on devices as given)"))
            for group in joined.groups:
                if group.ranks and not any(r.counted for r in group.ranks):
                    contradict.append(
                        f"{head}: process group {group.pg_id} spans devices "
                        f"{_numbers(group.devices)}, and the program issues no collective over "
                        f"those devices: nothing joined (--rank-devices places the ranks)")
                    continue
                _log_group_lines(f"{head}: process group {group.pg_id}", group.ranks,
                                 agree, contradict)
                for behind in group.behind:
                    _behind_line(f"{head}: process group {group.pg_id}", behind, agree,
                                 contradict)
                if group.unplaced:
                    contradict.append(f"{head}: process group {group.pg_id}: ranks "
                                      f"{_numbers(group.unplaced)} run no device of the "
                                      f"program")
            for pg_id, reason in joined.skipped:
                contradict.append(f"{head}: process group {pg_id} not joined: {reason}")
    return joins


def _log_group_lines(head: str, ranks: tuple[LogRankJoin, ...], agree: list[str],
                     contradict: list[str]) -> None:
    """One line per set of ranks at the same collective that agree; one per rank that
    contradicts the program."""
    same: dict[tuple[object, ...], list[LogRankJoin]] = {}
    for rank in ranks:
        if rank.agrees:
            key = (rank.seq, rank.at, rank.op_type, rank.name, rank.iteration)
            same.setdefault(key, []).append(rank)
            continue
        logged = _logged(rank)
        if not rank.name:
            contradict.append(f"{head}: rank {rank.rank} {logged}, but the program has its "
                              f"device {rank.device} issue only {rank.counted} collectives "
                              f"on the group")
            continue
        what = []
        if rank.op_agrees is False:
            what.append(f"the log's {rank.op_type} is not {rank.opcode}")
        if rank.numel_agrees is False:
            what.append(f"the program's operands hold {rank.program_numel[0]} elements and "
                        f"its result {rank.program_numel[1]}")
        contradict.append(f"{head}: rank {rank.rank} {logged}, which the program has its "
                          f"device {rank.device} issue as {_collective(rank)}; "
                          + "; ".join(what))
    for group in same.values():
        first = group[0]
        checked = [w for w, v in (("op type", all(r.op_agrees for r in group)),
                                  ("element counts", any(r.numel_agrees for r in group))) if v]
        agree.append(f"{head}: ranks {_numbers([r.rank for r in group])} "
                     f"{_logged(first, sizes=False)}: "
                     f"on devices {_numbers([r.device for r in group])} the program issues "
                     f"it as {_collective(first)}"
                     + (f" ({' and '.join(checked)} agree)" if checked else ""))


def _logged(rank: LogRankJoin, sizes: bool = True) -> str:
    """``timed out in #41 ALLREDUCE (NumelIn 1000, NumelOut 1000)`` (without the sizes
    unless ``sizes``)."""
    numel = ", ".join(f"{n} {v}" for n, v in zip(("NumelIn", "NumelOut"), rank.numel,
                                                  strict=True) if v is not None and sizes)
    return (f"{rank.at} #{rank.seq}" + (f" {rank.op_type}" if rank.op_type else "")
            + (f" ({numel})" if numel else ""))


def _collective(rank: LogRankJoin) -> str:
    """``all-reduce.5 (all-reduce, in region_0.2, iteration 3 of while.9)``."""
    where = [rank.opcode, f"in {rank.computation}" if rank.computation else "",
             *(f"iteration {n + 1} of {loop}" for loop, n in rank.iteration)]
    return f"{rank.name} ({', '.join(w for w in where if w)})"


def _behind_line(head: str, behind: Behind, agree: list[str], contradict: list[str]) -> None:
    """Whether the program explains a rank the logs show behind."""
    loops = _loop_text(behind.device, behind.loops)
    if behind.explained:
        agree.append(f"{head}: the program explains rank {behind.rank} behind at "
                     f"#{behind.seq}: its device {behind.device} issues {behind.counted} "
                     f"collectives on the group where devices "
                     f"{_numbers(behind.ahead_devices)} issue {behind.ahead}{loops}")
    else:
        contradict.append(
            f"{head}: the program does not explain rank {behind.rank} behind at "
            f"#{behind.seq}: it has device {behind.device} issue {behind.counted} collectives "
            f"on the group, and devices {_numbers(behind.ahead_devices)} {behind.ahead}: look "
            f"outside this program (control flow on data, or a rank that ran another program "
            f"or skipped a step)")


def _program_suspects(sources: list[Source], reports: dict[int, Report],
                      rank_devices: Mapping[int, int] | None, agree: list[str],
                      contradict: list[str]) -> None:
    """A program's own findings set beside each runtime source's suspects, the devices
    named as the ranks that run them."""
    rank_of = ({d: r for r, d in rank_devices.items()} if rank_devices is not None else None)
    for program in (s for s in sources if s.kind == "hlo" and s.found):
        devices = sorted({d for f in reports[id(program)].findings
                          for d in (f.culprits or f.devices)})
        if rank_of is not None and not rank_of.keys() >= set(devices):
            continue  # a device no rank runs: the findings do not name ranks
        ranks = sorted(devices if rank_of is None else (rank_of[d] for d in devices))
        named = (f"{_label(program)}'s own findings name devices {_numbers(devices)}, run by "
                 f"ranks {_numbers(ranks)}")
        same = []
        for runtime in (s for s in sources if s.suspects and s.found):
            blamed = sorted(set(runtime.suspects or ()))
            if blamed == ranks:
                same.append(_label(runtime))
            else:
                both = sorted(set(blamed) & set(ranks))
                contradict.append(f"{named}; {_label(runtime)} blames ranks {_numbers(blamed)}"
                                  + (f" (both: {_numbers(both)})" if both else ""))
        if same:
            agree.append(f"{named}; {', '.join(same)} blame the same ranks")
