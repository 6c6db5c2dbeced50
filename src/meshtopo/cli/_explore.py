"""``meshtopo explore``: the local web explorer on 127.0.0.1."""

from __future__ import annotations

import signal
import webbrowser
from pathlib import Path

import click

from .._errors import InvalidArgumentError
from ..explore import (
    DEFAULT_DEVICE_LIMIT,
    DEFAULT_MAX_BODY,
    DEFAULT_PORT,
    InitialDump,
    make_server,
)
from ..hlo import binary_input, load, open_input
from ._inputs import module_option, one_module_file
from ._options import DecimalRange

_MAX_DUMP_BYTES = 64 << 20


@click.command("explore")
@click.argument("file", required=False, type=click.Path(path_type=Path))
@click.option(
    "--port",
    type=DecimalRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port to listen on; 0 picks a free one.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind. Only loopback unless you name another one here.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a web browser.")
@click.option(
    "--device-limit",
    type=DecimalRange(1),
    default=DEFAULT_DEVICE_LIMIT,
    show_default=True,
    help="Largest grid the page may dial.",
)
@click.option(
    "--max-body",
    type=DecimalRange(1),
    default=DEFAULT_MAX_BODY,
    show_default=True,
    help="Largest request body in bytes (pasted dumps count).",
)
@module_option
def explore(
    file: Path | None, port: int, host: str, open_browser: bool, device_limit: int, max_body: int,
    module_choice: str | None,
) -> None:
    """Start the explorer: dial a mesh and watch the group arithmetic and the checks.

    FILE, if given, is an HLO text dump opened in the page at start, placed on devices by the
    compile_options.textproto XLA dumped beside it when there is one (as inspect reads it);
    a dump directory opens its module holding collectives (--module picks one).
    Everything is served from
    the package; nothing is fetched from the network. Stop with Ctrl-C.
    """
    dump = None
    if file is not None:
        file = Path(one_module_file(str(file), module_choice))
        size = file.stat().st_size
        if size > _MAX_DUMP_BYTES:
            raise InvalidArgumentError(
                f"{file}: {size} bytes is more than the explorer reads ({_MAX_DUMP_BYTES})"
            )
        dump = InitialDump(file.name, _read_dump(file), str(file))
    server = make_server(host, port, max_body=max_body, device_limit=device_limit)
    server.initial_dump = dump
    click.echo(f"meshtopo explorer at {server.url}  (Ctrl-C to stop)")
    if host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(f"meshtopo: note: listening on {host}, reachable from other machines", err=True)
    if open_browser:
        webbrowser.open(server.url)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        click.echo("stopped")
    finally:
        server.server_close()


def _interrupt(signum: int, frame: object) -> None:
    """Treat SIGTERM like Ctrl-C: leave ``serve_forever`` and close the socket."""
    raise KeyboardInterrupt


def _read_dump(file: Path) -> str:
    """The text of an HLO dump, opened as every command opens one (plain or gzip,
    ``mt.hlo.open_input``), at most ``_MAX_DUMP_BYTES`` characters once decompressed; for a
    binary module proto, the module's text as XLA prints it (what its lines point into)."""
    if binary_input(file) is not None:
        return load(file).text
    with open_input(file) as source:
        text = source.read(_MAX_DUMP_BYTES + 1)
    if len(text) > _MAX_DUMP_BYTES:
        raise InvalidArgumentError(
            f"{file}: more than {_MAX_DUMP_BYTES} characters once decompressed; the explorer "
            "reads dumps up to that size"
        )
    return text
