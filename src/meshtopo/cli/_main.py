"""The root ``meshtopo`` group; its commands come from ``_commands.COMMANDS``, each imported
when it runs."""

from __future__ import annotations

import click

from . import _commands


@click.group(cls=_commands.LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="meshtopo")
def cli() -> None:
    """XLA's collective topology math: who talks to whom, under which mode, in which order."""


def main(argv: list[str] | None = None) -> None:
    """Run the command line; usage errors exit 2 with one line on stderr."""
    _commands.run(cli, argv)
