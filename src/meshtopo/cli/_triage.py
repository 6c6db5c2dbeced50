"""``triage PATH...``: every file of the paths recognised by its content (HLO, XLA dump
directories, Flight Recorder dumps, profiler traces, hang logs), each source's findings, what
could not be read and why, and where the sources agree or contradict (``mt.order.triage``).
A PATH written FILE@DEVICES is one program of an MPMD set (as ``meshtopo order`` takes them).
Exit 1 when a source finds a hang or garbage, else 0.

The text fits the common case on a screen: HLO modules that issue no collectives and find
nothing are counted on one line, and unread files are counted per reason; ``--verbose``
names them, ``--json`` holds everything."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click
from rich.text import Text

from ..order import Source
from ..order import triage as run_triage
from ._inputs import program_spec
from ._options import int_list
from ._render import console, emit_json, plural

if TYPE_CHECKING:
    from rich.console import Console

UNREAD_SHOWN = 3  # files named per reason with --verbose; --json lists every one
NAMED = 4  # files named per source; --json lists every one


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--rank-devices", default=None, metavar="D0,D1,...",
              help="The global device id each rank runs, rank 0 first (default: rank r runs "
                   "device r), for setting HLO programs beside the runtime's ranks.")
@click.option("--verbose", "-v", is_flag=True,
              help="Show every source and name the unread files (the text otherwise counts "
                   "modules without collectives and unread files).")
@click.option("--json", "as_json", is_flag=True, help="Print the same report as JSON.")
def triage(paths: tuple[str, ...], rank_devices: str | None, verbose: bool,
           as_json: bool) -> int:
    """Read whatever evidence PATHS hold (files or directories, any mix) and report on it all.

    Files are recognised by content, never by name; a file that cannot be read is listed with
    the reason. Each HLO program is set beside the Flight Recorder dumps, traces and hang logs
    rank by rank. Programs that run on different ranks (pipeline stages, MPMD) are given as
    FILE@DEVICES each (e.g. stage0.hlo@0,1 stage1.hlo@2,3), analysed together, and each rank
    joined with its own program. Exits 1 when any source finds a hang or garbage, 0 otherwise.
    """
    mapping = None if rank_devices is None else dict(
        enumerate(int_list(rank_devices, "--rank-devices")))
    evidence: list[str] = []
    programs: list[tuple[str, list[int]]] = []
    for path in paths:
        program = None if os.path.exists(path) else program_spec(path)
        if program is None:
            evidence.append(path)
        else:
            programs.append(program)
    report = run_triage(list(evidence), mapping, programs)
    if as_json:
        emit_json(report.to_json())
        return 1 if report.found else 0
    out = console()
    quiet = [s for s in report.sources if s.kind == "hlo" and not s.collectives
             and not s.findings and not verbose]
    for source in (s for s in report.sources if s not in quiet):
        _print_source(out, source)
    if quiet:
        out.print(Text("hlo: ", style="bold") + Text(
            f"{plural(len(quiet), 'more module')} without collectives, no findings "
            f"(--verbose names them)"), highlight=False)
    by_reason: dict[str, list[str]] = {}
    for path, reason in report.unread:
        by_reason.setdefault(reason, []).append(path)
    for reason, files in by_reason.items():
        if len(files) == 1:
            out.print(Text("unread: ", style="bold yellow") + Text(f"{files[0]}: {reason}"),
                      highlight=False)
            continue
        out.print(Text(f"unread ({len(files)} files): ", style="bold yellow") + Text(reason)
                  + Text("" if verbose else " (--verbose names them)", style="dim"),
                  highlight=False)
        if not verbose:
            continue
        for path in files[:UNREAD_SHOWN]:
            out.print(Text(f"  {path}", style="dim"), highlight=False)
        if len(files) > UNREAD_SHOWN:
            out.print(Text(f"  and {len(files) - UNREAD_SHOWN} more (--json lists them)",
                           style="dim"))
    for line in report.notes:
        out.print(Text("note: ", style="bold") + Text(line), highlight=False)
    for line in report.agreements:
        out.print(Text("agree: ", style="bold green") + Text(line), highlight=False)
    for line in report.contradictions:
        out.print(Text("contradict: ", style="bold red") + Text(line), highlight=False)
    out.print(Text(f"{plural(len(report.sources), 'source')} read, "
                   f"{plural(len(report.unread), 'file')} unread",
                   style="bold red" if report.found else "bold green"))
    return 1 if report.found else 0


def _print_source(out: Console, source: Source) -> None:
    """One source: its summary, files (one line for files of one directory, the first
    ``NAMED`` named) and findings."""
    out.print(Text(f"{source.kind}: ", style="bold") + Text(source.summary), highlight=False)
    folders = {os.path.dirname(p) for p in source.paths}
    if len(source.paths) > 1 and len(folders) == 1:
        names = [os.path.basename(p) for p in source.paths]
        more = f" and {len(names) - NAMED} more" if len(names) > NAMED else ""
        out.print(Text(f"  from {os.path.join(folders.pop(), '')}: "
                       f"{', '.join(names[:NAMED])}{more}", style="dim"), highlight=False)
    else:
        for path in source.paths[:NAMED]:
            out.print(Text(f"  from {path}", style="dim"), highlight=False)
        if len(source.paths) > NAMED:
            out.print(Text(f"  and {len(source.paths) - NAMED} more files", style="dim"))
    for finding in source.findings:
        out.print(f"  {finding}", highlight=False)
    if not source.findings:
        out.print(Text("  no findings", style="green"))
