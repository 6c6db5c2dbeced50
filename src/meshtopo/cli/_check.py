"""``check``: XLA's verifier checks on an HLO file, one line per finding, then (when the
verifier passes) the order analysis (``mt.order.analyze``: hangs and garbage from the order of
collectives), one line per order finding.

Exit 1 when there are findings, 0 when the module is clean; text that does not parse is bad
input (exit 2, one stderr line with its position). The ``--json`` schema is in
docs/cli-json.md.
"""

from __future__ import annotations

import click
from rich.text import Text

from ..hlo import Finding, load, verify
from ..order import Finding as OrderFinding
from ..order import analyze
from ._options import DecimalRange
from ._render import console, emit_json


def finding_text(file: str, finding: Finding) -> Text:
    """``FILE:LINE:COL: <instruction>: <message>``, the position bold, the name in cyan."""
    text = Text()
    text.append(f"{file}:{finding.line}:{finding.column}:", style="bold")
    text.append(" ")
    text.append(finding.instruction, style="cyan")
    text.append(": ")
    text.append(finding.message)
    return text


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


@click.command()
@click.argument("file")
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON answer.")
@click.option("--replica-count", type=DecimalRange(min=1), default=None,
              help="Check against this replica count instead of the header's.")
@click.option("--num-partitions", type=DecimalRange(min=1), default=None,
              help="Check against this partition count instead of the header's.")
@click.option("--no-replica-group-checks", is_flag=True,
              help="Skip CheckReplicaGroups, like HloVerifierOpts check_replica_groups=false.")
def check(file: str, as_json: bool, replica_count: int | None, num_partitions: int | None,
          no_replica_group_checks: bool) -> int:
    """Run XLA's collective verifier checks on the HLO module in FILE ('-' reads stdin), then
    the collective order analysis when the verifier passes.

    Prints FILE:LINE:COL: INSTRUCTION: MESSAGE for each finding (messages in XLA's words),
    FILE:LINE: order TYPE: MESSAGE for each order finding, then a summary. Exits 1 when
    there are findings, 0 when there are none.
    """
    module = load(file, replica_count=replica_count, num_partitions=num_partitions)
    # The full structural parse, so that malformed lines anywhere are bad input (exit 2).
    _ = module.computations
    findings = verify(module, check_replica_groups=not no_replica_group_checks)
    # The order analysis needs a module the verifier accepts.
    order_findings = [] if findings else analyze(module).findings
    name = module.source or file
    if as_json:
        emit_json({
            "file": name,
            "replica_count": module.replica_count,
            "num_partitions": module.num_partitions,
            "collectives": len(module.collectives),
            "findings": [
                {"message": f.message, "instruction": f.instruction, "opcode": f.opcode,
                 "line": f.line, "column": f.column, "check": f.check, "severity": f.severity}
                for f in findings
            ],
            "order_findings": [f.to_json() for f in order_findings],
            "ok": not findings and not order_findings,
        })
        return 1 if findings or order_findings else 0
    out = console()
    for finding in findings:
        out.print(finding_text(name, finding))
    for order_finding in order_findings:
        out.print(order_finding_text(name, order_finding))
    collectives = len(module.collectives)
    noun = "collective" if collectives == 1 else "collectives"
    if findings or order_findings:
        count = len(findings) + len(order_findings)
        out.print(Text(f"{name}: {count} finding{'s' if count != 1 else ''} in {collectives} "
                       f"{noun} (replica_count={module.replica_count}, "
                       f"num_partitions={module.num_partitions})", style="bold red"))
        return 1
    out.print(Text(f"{name}: {collectives} {noun} verified, no findings "
                   f"(replica_count={module.replica_count}, "
                   f"num_partitions={module.num_partitions})", style="bold green"))
    return 0


COMMANDS: list[click.Command] = [check]
