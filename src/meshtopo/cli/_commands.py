"""The list of command modules and the runner that turns errors into exit code 2.

A command family lives in its own module and exposes ``COMMANDS``; add the module's name to
``_MODULES`` to register it.
"""

from __future__ import annotations

import importlib
import sys

import click

from .._errors import LimitError, MeshtopoError
from .._limits import get_device_limit, set_device_limit

_MODULES = ["_math", "_explore", "_inspect", "_check", "_neuron", "_plan", "_order", "_run",
            "_passes", "_triage"]
_PYTHON_LIMIT_HINT = "raise it with meshtopo.set_device_limit(n) or meshtopo.device_limit(n)"


def all_commands() -> list[click.Command]:
    """Every registered command, in registration order."""
    commands: list[click.Command] = []
    for name in _MODULES:
        commands.extend(importlib.import_module(f"{__package__}.{name}").COMMANDS)
    return commands


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
