"""The root ``meshtopo`` group; its commands come from ``_commands.COMMANDS``, each imported
when it runs."""

from __future__ import annotations

import click

from . import _commands


def _print_version(ctx: click.Context, _: click.Parameter, value: bool) -> None:
    """``--version``: the package's version and which HLO tokenizer and scanners, Flight
    Recorder decoder and trace scanner it reads with (the compiled ones, or the pure-Python
    stand-ins of an install without a C compiler) and whether the HLO reader is compiled, e.g.
    ``meshtopo 0.1.0 (native tokenizer, HLO scanners: native, HLO reader: compiled, Flight
    Recorder decoder: native, trace scanner: native)``."""
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import version

    from ..hlo._compiled import READER
    from ..hlo._native import SCANNERS, TOKENIZER
    from ..order._flight_columns import DECODER
    from ..order._trace_events import SCANNER

    click.echo(f"meshtopo {version('meshtopo')} ({TOKENIZER} tokenizer, HLO scanners: "
               f"{SCANNERS}, HLO reader: {READER}, Flight Recorder decoder: {DECODER}, "
               f"trace scanner: {SCANNER})")
    ctx.exit()


@click.group(cls=_commands.LazyGroup, context_settings={
    "help_option_names": ["-h", "--help"], "terminal_width": _commands.help_width()})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Show the version and the tokenizer, scanners and decoder in use.")
def cli() -> None:
    """XLA's collective topology math: who talks to whom, under which mode, in which order."""


def main(argv: list[str] | None = None) -> None:
    """Run the command line; usage errors exit 2 with one line on stderr."""
    _commands.run(cli, argv)
