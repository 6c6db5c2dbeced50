"""``order``: every device's collective schedule and the hang or garbage its order would
cause, from HLO files (one SPMD module, or ``FILE@DEVICES`` per program for MPMD) or from
PyTorch Flight Recorder dumps (``--flight-recorder DIR``).

XLA's verifier runs first, as ``check`` runs it: a module it refuses is not analysed, and
its findings are printed as ``check`` prints them (exit 1). Text output: each finding with
the smallest excerpt that shows it (the two or three devices involved, every device of a
deadlock's cycle up to eight, and their collectives around the place they block; ``>``
marks the collectives the finding names), then the timelines of ``--devices``. Exit 1 when there are
findings, 0 when clean. The ``--json`` schema is in docs/cli-json.md; ``--trace`` writes the
Chrome trace event format.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import click
from rich.text import Text

from ..._errors import InvalidArgumentError
from ...hlo import Finding as VerifierFinding
from ...hlo import Module, describe_placement, verify
from ...order import (
    Arrival,
    Finding,
    Report,
    Timeline,
    analyze,
    chrome_trace,
    from_flight_recorder,
    from_logs,
    from_profiler_traces,
    merged_trace,
    timeline,
)
from .._check import finding_json, finding_text, located_finding
from .._inputs import (
    assignment_option,
    device_limit_option,
    load_placed,
    module_option,
    one_module_file,
    program_spec,
    rendezvous_option,
)
from .._options import int_list
from .._render import console, emit_json, noun_for, placement_line, plural
from ._evidence import order_logs, predictions, print_timings, timings_json

TIMELINES_SHOWN = 4  # devices whose timelines are printed when --devices is not given
TRACED = 64  # devices traced when --devices is not given
EXCERPT_DEVICES = 3
CYCLE_DEVICES = 8  # a deadlock's excerpt shows its cycle's devices up to this many
EXCERPT_CONTEXT = 1


class _Refused(Exception):
    """Modules XLA's verifier refuses: (file, findings) of each."""

    def __init__(self, refused: list[tuple[str, list[VerifierFinding]]]) -> None:
        super().__init__()
        self.refused = refused


def _verified(modules: list[tuple[str, Module]]) -> None:
    """Raise ``_Refused`` when XLA's verifier refuses any of ``modules`` (as ``check``)."""
    refused = [(module.source or path, found) for path, module in modules
               if (found := verify(module, check_replica_groups=True))]
    if refused:
        raise _Refused(refused)


def _analyze(files: tuple[str, ...], flight_recorder: str | None, rendezvous: str,
             module_choice: str | None, assignment_spec: str
             ) -> tuple[Report, str, list[tuple[str, Module]]]:
    """The report, the name of what it reads and each module read (with its file), each
    placed by ``assignment_spec`` (``--device-assignment``)."""
    if flight_recorder is not None:
        if files:
            raise InvalidArgumentError("give HLO files or --flight-recorder DIR, not both")
        return from_flight_recorder(flight_recorder), flight_recorder, []
    if not files:
        raise InvalidArgumentError("order needs an HLO FILE (or FILE@DEVICES per program) or "
                                   "--flight-recorder DIR")
    if len(files) == 1 and "@" not in files[0]:
        file = one_module_file(files[0], module_choice)
        module = load_placed(file, assignment_spec)
        _verified([(file, module)])
        return (_positioned(lambda: analyze(module, rendezvous=rendezvous), file), file,
                [(file, module)])
    specs = []
    for spec in files:
        program = program_spec(spec, module_choice)
        if program is None:
            raise InvalidArgumentError(
                f"with several programs each FILE names its devices as FILE@0,1,...; got {spec!r}")
        specs.append(program)
    modules = [(load_placed(path, assignment_spec), devices) for path, devices in specs]
    _verified([(path, module) for (path, _), (module, _) in zip(specs, modules, strict=True)])
    return (_positioned(lambda: analyze(modules, rendezvous=rendezvous), specs[0][0]),
            ", ".join(files), [(path, module) for (path, _), (module, _) in zip(specs, modules,
                                                                                strict=True)])


def _positioned(analysis: Callable[[], Report], path: str) -> Report:
    """``analysis()``, a collective it cannot resolve refused as ``check`` prints a finding:
    FILE:LINE:COL: NAME: MESSAGE."""
    try:
        return analysis()
    except InvalidArgumentError as error:
        located = located_finding(error)
        if located is None:
            raise
        source, finding = located
        raise InvalidArgumentError(finding_text(source or path, finding).plain) from None


def _spelled(devices: list[int]) -> str:
    """``4..7`` for a run of consecutive ids, else the ids (the first 8, then ``...``)."""
    if len(devices) > 2 and devices == list(range(devices[0], devices[-1] + 1)):
        return f"{devices[0]}..{devices[-1]}"
    return ",".join(map(str, devices[:8])) + (",..." if len(devices) > 8 else "")


def _line(arrival: Arrival, mark: bool) -> Text:
    entry = arrival.entry
    text = Text("  > " if mark else "    ", style="bold red" if mark else "")
    text.append(f"{entry.name:<24}", style="cyan")
    text.append(f" {entry.opcode:<20} clique [{','.join(map(str, arrival.clique))}]"
                f" rank {arrival.rank} #{arrival.position} {entry.shape}")
    if entry.is_async:
        text.append(f" (async, done {entry.done})")
    for conditional, branch in entry.branches:
        text.append(f" in branch {branch} of {conditional}")
    iterations = dict(arrival.iteration)
    for loop, trips in entry.loops:
        number = iterations.get(loop)
        text.append(f" in {loop} x{'?' if trips is None else trips}" if number is None else
                    f" in {loop} iteration {number}")
    if entry.line:
        text.append(f" line {entry.line}", style="dim")
    if arrival.end < 0:
        text.append("  blocked here" if arrival.step >= 0 else "  never reached",
                    style="bold red")
    return text


def _excerpt(report: Report, finding: Finding) -> list[Text]:
    """The schedules of two or three devices of ``finding`` (a missing guest and those
    waiting for it) around the collectives it names; a device that never issues them shows
    where it is instead (its last collectives, or where it blocks)."""
    limit = CYCLE_DEVICES if finding.type == "deadlock" else EXCERPT_DEVICES
    involved = list(dict.fromkeys([*finding.devices[:limit - 1], *finding.waiting,
                                   *finding.devices]))
    shown = involved[:limit]
    out = []
    for device in shown:
        schedule = report.schedule(device, taken_only=True)
        hits = [i for i, a in enumerate(schedule) if a.entry.name in finding.instructions]
        if not hits:
            out.append(Text(f"  {report.unit} {device} (never issues "
                            f"{', '.join(finding.instructions)}"
                            f"{'' if schedule else '; no collectives at all'}):", style="bold"))
            blocked = [i for i, a in enumerate(schedule) if a.end < 0]
            at = blocked[0] if blocked else len(schedule) - 1
            out.extend(_line(schedule[i], False) for i in range(max(0, at - 1), at + 1))
            continue
        low = max(0, hits[0] - EXCERPT_CONTEXT)
        high = min(len(schedule), hits[-1] + EXCERPT_CONTEXT + 1)
        out.append(Text(f"  {report.unit} {device}:", style="bold"))
        out.extend(_line(schedule[i], i in hits) for i in range(low, high))
    if len(involved) > len(shown):
        rest = involved[len(shown):]
        out.append(Text(f"  ({noun_for(len(rest), report.unit)} {_spelled(rest)} not shown)",
                        style="dim"))
    return out


@click.command()
@click.argument("files", nargs=-1)
@click.option("--devices", "devices_text", default=None,
              help=f"Comma-separated devices (ranks) whose timelines are printed and traced "
                   f"(default: the timelines of the first {TIMELINES_SHOWN}, a line naming the "
                   f"others).")
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON answer.")
@click.option("--trace", "trace_path", default=None,
              help="Write the schedules of --devices (default: the first 64) to this file in the "
                   "Chrome trace event format.")
@click.option("--flight-recorder", "flight_recorder", default=None,
              help="Read PyTorch Flight Recorder dumps (one file per rank) from this directory.")
@click.option("--traces", "traces", is_flag=True,
              help="FILES are per-rank PyTorch profiler traces (*.pt.trace.json[.gz], or "
                   "directories of them): matched as Flight Recorder dumps are, with each "
                   "collective's straggler skew and achieved bandwidth; --trace writes all "
                   "ranks' collectives aligned by matched collectives.")
@click.option("--logs", "logs", is_flag=True,
              help="FILES are hang logs (torch watchdog, NCCL_DEBUG=INFO, XLA rendezvous "
                   "warnings; any mix, any number of files or directories).")
@click.option("--cluster", "cluster_spec", default=None,
              help="With --traces: each collective's predicted time on this cluster beside "
                   "the achieved one (a preset or a TOML, JSON or NCCL topology XML file).")
@rendezvous_option
@assignment_option
@module_option
@device_limit_option
def order(files: tuple[str, ...], devices_text: str | None, as_json: bool,
          trace_path: str | None, flight_recorder: str | None, traces: bool, logs: bool,
          cluster_spec: str | None, rendezvous: str, assignment_spec: str,
          module_choice: str | None) -> int:
    """Match every device's collectives by arrival order and report hangs and garbage.

    FILES: one HLO module every device runs (SPMD), or FILE@DEVICES per program (MPMD, e.g.
    stage0.hlo@0,1 stage1.hlo@2,3): each program's DEVICES are devices of its device
    assignment (replica_count x num_partitions devices, 0..N-1 by default), each running one
    program; any other device is refused. A dump directory stands for its module holding
    collectives (--module picks one). Exits 1 when there are findings, 0 when clean.
    """
    if logs:
        if traces or flight_recorder is not None or cluster_spec is not None or not files:
            raise InvalidArgumentError("--logs needs log FILES, without --traces, "
                                       "--flight-recorder or --cluster")
        return order_logs(from_logs(list(files)), as_json)
    timed: Timeline | None = None
    read: list[tuple[str, Module]] = []
    if traces:
        if flight_recorder is not None or not files:
            raise InvalidArgumentError("--traces needs trace FILES or directories, without "
                                       "--flight-recorder")
        report, ranks = from_profiler_traces(list(files))
        name, timed = ", ".join(files), timeline(ranks)
    else:
        if cluster_spec is not None:
            raise InvalidArgumentError("--cluster goes with --traces")
        try:
            report, name, read = _analyze(files, flight_recorder, rendezvous, module_choice,
                                          assignment_spec)
        except _Refused as refused:
            return _refused(refused, as_json)
    predicted = None if timed is None or cluster_spec is None else predictions(
        timed, cluster_spec)
    known = report.devices.tolist()
    if devices_text is not None:
        devices = int_list(devices_text, "--devices")
        for device in devices:
            report.schedule(device)  # refuses devices that were not analysed
    else:
        devices = known[:TIMELINES_SHOWN]
    if trace_path is not None:
        with open(trace_path, "w", encoding="utf-8") as handle:
            json.dump(merged_trace(ranks, timed) if timed is not None else
                      chrome_trace(report, devices if devices_text is not None else
                                   known[:TRACED]), handle)
    if as_json:
        emit_json({"source": name, **report.to_json(devices, taken_only=True),
                   **({} if timed is None else timings_json(timed, predicted))})
        return 1 if report.findings else 0
    out = console()
    for path, module in read:
        table = placement_line(module.device_assignment)
        if table is not None:
            out.print(f"{module.source or path}: "
                      f"{describe_placement(module.device_assignment_source, module.compile_options)}")
            out.print(f"  {table}")
    for note in report.notes:
        out.print(Text(f"note: {note}", style="dim"))
    for finding in report.findings:
        out.print(Text(f"{finding.type}: ", style="bold red") + Text(
            f"{report.unit}s {list(finding.devices)} at {', '.join(finding.instructions)}",
            style="bold"))
        out.print(Text(f"  {finding.message}"))
        for line in _excerpt(report, finding):
            out.print(line)
    for device in devices:
        out.print(Text(f"{report.unit} {device}", style="bold"))
        for arrival in report.schedule(device, taken_only=True):
            out.print(_line(arrival, False))
    hidden = known[len(devices):] if devices_text is None else []
    if hidden:
        n = len(hidden)
        out.print(Text(f"{noun_for(n, 'timeline')} of {noun_for(n, report.unit)} "
                       f"{_spelled(hidden)} not shown (the first {TIMELINES_SHOWN} are); show "
                       f"{'it' if n == 1 else 'them'} with --devices "
                       f"{','.join(map(str, hidden[:8]))}{',...' if n > 8 else ''}",
                       style="dim"))
    if timed is not None:
        print_timings(timed, predicted)
    count = len(report.findings)
    summary = (f"{name}: {plural(count, 'finding')} in the collective order of "
               f"{plural(len(known), report.unit)}" if count else
               f"{name}: {plural(len(known), report.unit)}, "
               f"{plural(sum(report.entry_counts), 'collective')}, no findings")
    out.print(Text(summary, style="bold red" if count else "bold green"))
    return 1 if count else 0


def _refused(refused: _Refused, as_json: bool) -> int:
    """XLA's verifier findings of the modules it refuses, as ``check`` prints them; exit 1."""
    if as_json:
        emit_json({"verifier_findings": [dict(file=path, **finding_json(f))
                                         for path, found in refused.refused for f in found],
                   "findings": [], "ok": False})
        return 1
    out = console()
    for path, found in refused.refused:
        for finding in found:
            out.print(finding_text(path, finding))
        out.print(Text(f"{path}: {plural(len(found), 'finding')} of XLA's verifier; the order "
                       f"analysis runs on a module the verifier accepts", style="bold red"))
    return 1
