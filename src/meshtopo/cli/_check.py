"""``check``: XLA's verifier checks on HLO files and dump directories, one line per finding,
then (for each module the verifier passes) the order analysis (``mt.order.analyze``: hangs and
garbage from the order of collectives), one line per order finding.

Exit 1 when there are findings, 0 when every module is clean; text that does not parse is bad
input (exit 2, one stderr line with its position). A collective the order analysis cannot
resolve to devices (ids out of range where the verifier skips the range check, as XLA does with
one replica) is a finding at its position, as ``inspect`` shows it. The ``--json`` schema is in
docs/cli-json.md (one module: its object; several: ``{"modules": [...], "ok"}``).
"""

from __future__ import annotations

import click
from rich.console import Console
from rich.text import Text

from .._errors import InvalidArgumentError
from ..hlo import Finding, Module, describe_placement, verify
from ..order import Finding as OrderFinding
from ..order import analyze
from ._inputs import (
    FILES_HELP,
    all_option,
    assignment_option,
    device_limit_option,
    folded_line,
    input_files,
    is_single_file,
    load_placed,
    module_option,
    rendezvous_option,
)
from ._options import DecimalRange
from ._render import console, emit_json, placement_line, plural


def finding_text(file: str, finding: Finding) -> Text:
    """``FILE:LINE:COL: <instruction>: <message>``, the position bold, the name in cyan."""
    text = Text()
    text.append(f"{file}:{finding.line}:{finding.column}:", style="bold")
    text.append(" ")
    text.append(finding.instruction, style="cyan")
    text.append(": ")
    text.append(finding.message)
    return text


def finding_json(finding: Finding) -> dict[str, object]:
    """A verifier finding as ``check --json`` gives it (docs/cli-json.md)."""
    return {"message": finding.message, "instruction": finding.instruction,
            "opcode": finding.opcode, "line": finding.line, "column": finding.column,
            "check": finding.check, "severity": finding.severity}


def located_finding(error: InvalidArgumentError,
                    module: Module | None = None) -> tuple[str | None, Finding] | None:
    """An error that names the instruction it lies in (its ``location``) as a verifier finding
    there, with the input the location names (None for a module read from a string); None when
    the error names no instruction. ``module`` gives the instruction's opcode (else empty)."""
    if error.location is None:
        return None
    source, name, line, column = error.location
    collective = None if module is None else module.collectives_by_name.get(name)
    opcode = "" if collective is None else collective.opcode
    pairs = collective is not None and collective.replica_groups is None
    check = "source_target_pairs" if pairs else "replica_groups"
    return source, Finding(str(error), name, opcode, line, column, check)


def order_finding_text(file: str, finding: OrderFinding) -> Text:
    """``FILE:LINE: order <type>: <message>``, the position bold, the type in cyan."""
    text = Text()
    line = f"{finding.lines[0]}:" if finding.lines else ""
    text.append(f"{file}:{line}", style="bold")
    text.append(" order ")
    text.append(finding.type, style="cyan")
    text.append(": ")
    text.append(finding.message)
    return text


@click.command(help=f"""Run XLA's collective verifier checks on HLO modules, then the collective
order analysis on each module the verifier passes.

{FILES_HELP}

Prints FILE:LINE:COL: INSTRUCTION: MESSAGE for each finding (messages in XLA's words),
FILE:LINE: order TYPE: MESSAGE for each order finding, then a summary per module; in a dump
directory, the modules without collectives and without findings share one line (--all lists
them). Exits 1 when there are findings, 0 when there are none.""")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON answer.")
@click.option("--replica-count", type=DecimalRange(min=1), default=None,
              help="Check against this replica count instead of the header's.")
@click.option("--num-partitions", type=DecimalRange(min=1), default=None,
              help="Check against this partition count instead of the header's.")
@click.option("--no-replica-group-checks", is_flag=True,
              help="Skip CheckReplicaGroups, like HloVerifierOpts check_replica_groups=false.")
@click.option("--deadlocks", is_flag=True,
              help="Also run the send/recv deadlock checker on scheduled modules, like "
                   "HloVerifierOpts verify_no_collective_deadlocks=true.")
@rendezvous_option
@assignment_option
@module_option
@all_option
@device_limit_option
def check(files: tuple[str, ...], as_json: bool, replica_count: int | None,
          num_partitions: int | None, no_replica_group_checks: bool, deadlocks: bool,
          rendezvous: str, assignment_spec: str, module_choice: str | None,
          show_all: bool) -> int:
    paths = input_files(files, module_choice)
    fold = not (show_all or is_single_file(files, paths, module_choice))
    folded: list[str] = []
    payloads = []
    out = console()
    for path in paths:
        module = load_placed(path, assignment_spec, replica_count, num_partitions)
        findings = verify(module, check_replica_groups=not no_replica_group_checks,
                          verify_no_collective_deadlocks=deadlocks)
        # The order analysis needs a module the verifier accepts.
        order_findings: list[OrderFinding] = []
        if not findings:
            findings, order_findings = _order_analysis(module, rendezvous)
        name = module.source or path
        payloads.append(_payload(name, module, findings, order_findings))
        if fold and not (module.collectives or findings or order_findings):
            folded.append(path)
        elif not as_json:
            _print(out, name, module, findings, order_findings)
    ok = all(payload["ok"] for payload in payloads)
    if folded and not as_json:
        out.print(folded_line(folded))
    if as_json:
        emit_json(payloads[0] if is_single_file(files, paths, module_choice) else
                  {"modules": payloads, "ok": ok})
    return 0 if ok else 1


def _order_analysis(module: Module, rendezvous: str) -> tuple[list[Finding], list[OrderFinding]]:
    """(findings, order findings) of the order analysis of a module the verifier accepts: a
    collective it cannot resolve is one finding at its position, else its order findings."""
    try:
        return [], analyze(module, rendezvous=rendezvous).findings
    except InvalidArgumentError as error:
        located = located_finding(error, module)
        if located is None:
            raise
        return [located[1]], []


def _payload(name: str, module: Module, findings: list[Finding],
             order_findings: list[OrderFinding]) -> dict[str, object]:
    return {
        "file": name,
        "replica_count": module.replica_count,
        "device_assignment_source": module.device_assignment_source,
        "schedule_source": module.schedule_source,
        "num_partitions": module.num_partitions,
        "collectives": len(module.collectives),
        "findings": [finding_json(f) for f in findings],
        "order_findings": [f.to_json() for f in order_findings],
        "ok": not findings and not order_findings,
    }


def _print(out: Console, name: str, module: Module, findings: list[Finding],
           order_findings: list[OrderFinding]) -> None:
    for finding in findings:
        out.print(finding_text(name, finding))
    for order_finding in order_findings:
        out.print(order_finding_text(name, order_finding))
    collectives = plural(len(module.collectives), "collective")
    counts = f"(replica_count={module.replica_count}, num_partitions={module.num_partitions})"
    table = placement_line(module.device_assignment)
    count = len(findings) + len(order_findings)
    if count:
        out.print(Text(f"{name}: {plural(count, 'finding')} in {collectives} {counts}",
                       style="bold red"))
    else:
        out.print(Text(f"{name}: {collectives} verified, no findings {counts}",
                       style="bold green"))
    if table is not None:
        out.print(f"  {describe_placement(module.device_assignment_source, module.compile_options)}")
        out.print(f"  {table}")
