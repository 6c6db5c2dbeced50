"""``passes``: XLA's collective passes run on a module, the rewritten module printed (or
written with ``-o``) and what each pass did to each collective and why.

The passes run in XLA's pipeline order whatever the order of the flags: ``--combine``,
``--linearize``, ``--async-creator``, ``--to-sync``. Without ``-o`` the module goes to stdout
and the table to stderr, so the output can be piped; with ``-o`` the table goes to stdout.
The ``--json`` schema is in docs/cli-json.md.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, NamedTuple

import click
from rich.table import Table

from .._errors import InvalidArgumentError
from ..hlo import Module, load
from ..hlo._compile_options import FILE_NAME, options_folder
from ..hlo.passes import (
    CONVERTIBLE,
    Decision,
    PassResult,
    run_async_collective_creator,
    run_combine_collectives,
    run_convert_async_collectives_to_sync,
    run_linearize_collectives,
)
from ._inputs import device_limit_option, module_option, one_module_file
from ._render import console, emit_json, plural


class _Options(NamedTuple):
    async_creator: bool
    convert: tuple[str, ...]
    min_bytes: int
    generic: bool
    to_sync: bool
    nop: tuple[str, ...]
    combine: bool
    threshold: int
    linearize: bool


def _run(module: Module, options: _Options) -> tuple[Module, list[str], list[Decision]]:
    """The passes asked for, in XLA's pipeline order: the last module, the names of the
    passes run and every decision."""
    steps: list[tuple[str, PassResult]] = []

    def step(name: str, result: PassResult) -> Module:
        steps.append((name, result))
        return result.module

    if options.combine:
        module = step("combine", run_combine_collectives(module, options.threshold))
    if options.linearize:
        module = step("linearize", run_linearize_collectives(module))
    if options.async_creator:
        size = options.min_bytes
        module = step("async-creator", run_async_collective_creator(
            module, convert=options.convert or CONVERTIBLE, all_reduce_min_bytes=size,
            all_gather_min_bytes=size, reduce_scatter_min_bytes=size,
            use_generic_async_start_done=options.generic))
    if options.to_sync:
        nops = set(options.nop)
        module = step("to-sync", run_convert_async_collectives_to_sync(
            module, is_nop=(lambda line: line.opcode in nops) if nops else None))
    if not steps:
        raise InvalidArgumentError("passes needs at least one of --async-creator, --to-sync, "
                                   "--combine, --linearize")
    return module, [name for name, _ in steps], [d for _, r in steps for d in r.decisions]


def _table(decisions: list[Decision], names: list[str]) -> Table | str:
    """What each pass did to each collective, one row each; one line when no pass met a
    collective it acts on (an empty table would say nothing)."""
    if not decisions:
        return f"{', '.join(names)}: no collective to act on, nothing decided"
    table = Table("pass", "computation", "collective", "opcode", "action", "why")
    for d in decisions:
        style = "" if d.action == "kept" else "bold"
        table.add_row(d.pass_name, d.computation, d.instruction, d.opcode, d.action, d.reason,
                      style=style)
    return table


def _keep_table(module: Module, output: str) -> None:
    """Write the ``compile_options.textproto`` that ``module``'s device table came from beside
    ``output`` in XLA's dump layout (``DIR/module_NNNN.NAME.STAGE.txt`` beside
    ``DIR/module_NNNN.NAME.STAGE/``), so that reading ``output`` back gives the same table. An
    output not named in that layout cannot carry it: a note on stderr says so."""
    options = module.compile_options
    if module.device_assignment_source != "dump" or options is None or options.path is None:
        return
    folder = options_folder(output)
    if folder is None:
        click.echo(f"meshtopo: note: {output} reads back with XLA's default placement: the "
                   f"device table of {options.path} stays beside a module only in XLA's dump "
                   "layout (name the output module_NNNN.NAME.STAGE.txt)", err=True)
        return
    os.makedirs(folder, exist_ok=True)
    shutil.copyfile(options.path, os.path.join(folder, FILE_NAME))


@click.command()
@click.argument("file")
@click.option("--async-creator", "async_creator", is_flag=True,
              help="Split collectives into start/done pairs (XLA's async-collective-creator).")
@click.option("--convert", multiple=True, type=click.Choice(CONVERTIBLE),
              help="An opcode --async-creator converts (repeatable; default: all of them).")
@click.option("--min-bytes", "min_bytes", type=click.IntRange(min=0), default=0,
              show_default=True,
              help="--async-creator: all-reduce, all-gather and reduce-scatter convert only "
                   "with at least this many output bytes.")
@click.option("--generic", is_flag=True,
              help="--async-creator: async-start/async-done for every opcode.")
@click.option("--to-sync", "to_sync", is_flag=True,
              help="Turn start/done pairs that overlap nothing back into the synchronous op "
                   "(XLA's convert-async-collectives-to-sync; scheduled modules only).")
@click.option("--nop", multiple=True,
              help="--to-sync: an opcode that does not count as overlapping work "
                   "(repeatable; default: none, as in XLA's generic pass).")
@click.option("--combine", is_flag=True,
              help="Merge all-reduce, all-gather and reduce-scatter with equal combine keys.")
@click.option("--threshold", type=click.IntRange(min=0), default=30 * 1024 * 1024,
              show_default=True, help="--combine: most bytes one combined collective holds.")
@click.option("--linearize", is_flag=True,
              help="Chain the collectives with control dependencies (XLA's "
                   "collectives-schedule-linearizer).")
@click.option("-o", "--output", "output", default=None,
              help="Write the rewritten module to this file instead of stdout.")
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON answer.")
@module_option
@device_limit_option
def passes(file: str, output: str | None, as_json: bool, module_choice: str | None,
           **options: Any) -> int:
    """Run XLA's collective passes on FILE and show what each did to each collective.

    FILE may be a dump directory: its module holding collectives (--module picks one). An
    output named in XLA's dump layout (-o DIR/module_NNNN.NAME.STAGE.txt) gets the
    compile_options.textproto of FILE beside it, so its device table reads back."""
    file = one_module_file(file, module_choice)
    module = load(file)
    result, names, decisions = _run(module, _Options(**options))
    text = result.to_text()
    if output is not None:
        Path(output).write_text(text, encoding="utf-8")
        _keep_table(module, output)
    if as_json:
        emit_json({
            "file": file, "passes": names, "output": output,
            "module": text if output is None else None,
            "instructions": {"before": len(module.instructions),
                             "after": len(result.instructions)},
            "decisions": [d._asdict() for d in decisions],
        })
        return 0
    if output is None:
        click.echo(text, nl=False)
        console(stderr=True).print(_table(decisions, names))
    else:
        out = console()
        out.print(_table(decisions, names))
        out.print(f"{file}: {', '.join(names)}: {len(module.instructions)} -> "
                  f"{plural(len(result.instructions), 'instruction')}, written to {output}")
    return 0
