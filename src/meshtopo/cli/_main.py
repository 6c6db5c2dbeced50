"""The root ``meshtopo`` group; each command family registers itself from its own module."""

from __future__ import annotations

import click

from . import _commands


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="meshtopo")
def cli() -> None:
    """XLA's collective topology math: who talks to whom, under which mode, in which order."""


for command in _commands.all_commands():
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    """Run the command line; usage errors exit 2 with one line on stderr."""
    _commands.run(cli, argv)
