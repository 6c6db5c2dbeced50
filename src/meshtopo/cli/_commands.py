"""The table of commands and the runner that turns errors into exit code 2.

A command family lives in its own module or subpackage; ``COMMANDS`` names each command's module, the
function that implements it and the one-line summary ``meshtopo --help`` lists. A command's
module is imported only when that command runs (or its own ``--help`` is asked for), so
``meshtopo expand`` never loads the HLO reader and ``meshtopo --help`` loads no command at all.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import NamedTuple

import click

from .._errors import LimitError, MeshtopoError
from .._limits import get_device_limit, set_device_limit


class CommandEntry(NamedTuple):
    """Where a command lives (``module``, ``function`` in ``meshtopo.cli``) and its summary."""

    module: str
    function: str
    summary: str


COMMANDS = {
    "expand": CommandEntry("_math", "expand", "Expand replica groups or an iota tile given as XLA text."),
    "groups": CommandEntry("_math", "groups", "Replica groups of a collective over named mesh axes."),
    "devices": CommandEntry("_math", "devices", "Resolve replica groups to the devices that talk."),
    "explore": CommandEntry("_explore", "explore", "Start the explorer in the browser."),
    "inspect": CommandEntry("_inspect", "inspect_command", "Every collective in HLO dumps."),
    "check": CommandEntry("_check", "check", "XLA's collective verifier checks, then the order."),
    "neuron": CommandEntry("_neuron", "neuron", "Neuron's 3-D rank model of HLO modules."),
    "plan": CommandEntry("_plan", "plan_command", "Tier, hosts and cost per mesh axis and collective."),
    "calibrate": CommandEntry("_plan", "calibrate_command", "Fit a cost model to nccl-tests logs."),
    "order": CommandEntry("_order", "order", "Match every device's collectives by arrival order."),
    "run": CommandEntry("_run", "run", "Execute the entry computation of an HLO module."),
    "replay": CommandEntry("_run", "replay", "Replay the communication of an HLO module."),
    "passes": CommandEntry("_passes", "passes", "Run XLA's collective passes on an HLO module."),
    "triage": CommandEntry("_triage", "triage", "One report from every kind of evidence given."),
}
_PYTHON_LIMIT_HINT = "raise it with meshtopo.set_device_limit(n) or meshtopo.device_limit(n)"


class LazyGroup(click.Group):
    """A click group whose commands are imported from ``COMMANDS`` when first asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(f"{__package__}.{entry.module}")
        command: click.Command = getattr(module, entry.function)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from the summaries, without importing any command."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name].summary) for name in self.list_commands(ctx)])


def help_width() -> int:
    """The width click gives help text (its terminal's columns, at most 80, less 2; at least
    50), from ``COLUMNS`` or the terminal as ``shutil.get_terminal_size`` reads them, without
    importing shutil (and the compression modules it loads) as click's formatter would."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdecimal() and int(columns) > 0:
        width = int(columns)
    else:
        try:
            width = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            width = 80
    return max(min(width, 80) - 2, 50)


def fail(message: str) -> None:
    """Print ``meshtopo: error: <message>`` as one line on stderr and exit with code 2."""
    click.echo(f"meshtopo: error: {' '.join(str(message).split())}", err=True)
    sys.exit(2)


def run(group: click.Group, argv: list[str] | None) -> None:
    """Invoke ``group``; a MeshtopoError or a usage error becomes one stderr line and exit 2.

    The device limit a ``--device-limit`` option sets holds for this run only."""
    limit = get_device_limit()
    if not (sys.argv[1:] if argv is None else argv):
        # Bare ``meshtopo``: the group's help, formatted as for --help.
        click.echo(group.get_help(click.Context(group, info_name="meshtopo")))
        sys.exit(0)
    try:
        code = group.main(args=argv, prog_name="meshtopo", standalone_mode=False)
    except LimitError as error:
        fail(str(error).replace(_PYTHON_LIMIT_HINT, "raise it with --device-limit N"))
    except MeshtopoError as error:
        fail(str(error))
    except click.exceptions.Abort:
        fail("aborted")
    except click.ClickException as error:
        fail(error.format_message())
    except OSError as error:
        fail(f"{getattr(error, 'filename', None) or ''}: {error.strerror or error}".lstrip(": "))
    finally:
        set_device_limit(limit)
    sys.exit(code if isinstance(code, int) else 0)
