"""``inspect``: every collective of an HLO dump, its mode, its groups and the devices they name.

The dump is read block by block (``mt.hlo.iter_collectives``), so memory follows the number of
collectives, not the file size; a progress bar is drawn on stderr when stderr is a terminal.
The ``--json`` schema is documented in docs/cli-json.md and is stable.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import click

from ._inspect_rows import Inspection, Pattern, Row, inspect_file
from ._options import DEVICE_ASSIGNMENT_HELP, DecimalRange
from ._plan import print_topology_columns, topology_columns
from ._render import groups_text

GROUPS_SHOWN = 4
"""Device groups written out per collective in the terminal table before ``...``."""
TEXT_WIDTH = 48
"""Longest groups text in a terminal table cell before it is cut with ``...``."""


@click.command(name="inspect")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--device-assignment",
    "assignment_spec",
    default="default",
    show_default=True,
    help=DEVICE_ASSIGNMENT_HELP,
)
@click.option("--replica-count", type=DecimalRange(min=1), help="Override the header's.")
@click.option("--num-partitions", type=DecimalRange(min=1), help="Override the header's.")
@click.option(
    "--cluster",
    "cluster_spec",
    help="Also give each collective's tier and predicted times on this cluster (a preset or "
    "a TOML, JSON or NCCL XML file, as for plan).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON answer.")
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Also write a self-contained HTML report with a device grid per collective.",
)
def inspect_command(
    file: str,
    assignment_spec: str,
    replica_count: int | None,
    num_partitions: int | None,
    cluster_spec: str | None,
    as_json: bool,
    html_path: str | None,
) -> None:
    """Every collective in an HLO dump: mode, groups as written, the devices that talk.

    FILE is HLO text (plain or gzip), or - for stdin. Flags: ``ids!=devices`` where a
    participating cell's flattened id (r*P+p) differs from its device id, ``unsorted`` where a
    group does not list its devices in ascending order (rank order follows the list).
    """
    result = inspect_file(file, assignment_spec, replica_count, num_partitions)
    costs = topology_columns(result, cluster_spec) if cluster_spec is not None else None
    if html_path is not None:
        from ._report import write_report

        write_report(result, html_path)
    if as_json:
        for chunk in json_chunks(result, costs):
            click.echo(chunk, nl=False)
        click.echo()
        return
    _print_table(result)
    if costs is not None:
        print_topology_columns(result, costs)
    if html_path is not None:
        click.echo(f"report written to {html_path}")


# ---- JSON ------------------------------------------------------------------------------------


def row_payload(row: Row, topology: dict[str, object] | None = None) -> dict[str, object]:
    """The JSON object of one collective (schema in docs/cli-json.md); ``topology`` is its
    ``--cluster`` columns, added as the ``topology`` field when given."""
    pattern = row.pattern
    payload: dict[str, object] = {
        "name": row.name,
        "opcode": row.opcode,
        "computation": row.computation,
        "line": row.line,
        "column": row.column,
        "channel_id": row.channel_id,
        "use_global_device_ids": row.use_global_device_ids,
        "mode": pattern.mode,
        "replica_groups": None if pattern.is_pairs else pattern.written,
        "source_target_pairs": pattern.written if pattern.is_pairs else None,
        "device_groups": pattern.device_groups,
        "group_count": pattern.group_count,
        "group_size": pattern.group_size,
        "bytes": row.bytes,
        "flattened_ids_differ_from_device_ids": pattern.ids_differ,
        "in_group_order_ascending": pattern.ascending,
        "error": pattern.error,
    }
    if topology is not None:
        payload["topology"] = topology
    return payload


def json_chunks(
    result: Inspection, costs: list[dict[str, object] | None] | None = None
) -> Iterator[str]:
    """The JSON document in pieces, one collective at a time (no whole-document string);
    ``costs`` holds each row's ``--cluster`` columns."""
    head = {
        "source": result.source,
        "replica_count": result.replica_count,
        "partition_count": result.num_partitions,
        "device_assignment_spec": result.assignment_spec,
        "device_assignment": result.assignment.array.tolist(),
        "collective_count": len(result.rows),
        "ids_differ_count": result.ids_differ_count,
        "not_ascending_count": result.descending_count,
        "error_count": result.error_count,
    }
    yield "{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in head.items())
    yield ',\n  "collectives": ['
    for index, row in enumerate(result.rows):
        topology = costs[index] if costs is not None else None
        yield ("," if index else "") + "\n    " + json.dumps(row_payload(row, topology))
    yield ("\n  ]" if result.rows else "]") + "\n}"


# ---- terminal table ----------------------------------------------------------------------------


def short(text: str, width: int = TEXT_WIDTH) -> str:
    """``text`` cut to ``width`` characters with ``...`` when longer."""
    return text if len(text) <= width else text[: width - 3] + "..."


def device_groups_text(pattern: Pattern) -> str:
    """The device groups, abbreviated after ``GROUPS_SHOWN`` groups and ``TEXT_WIDTH`` chars."""
    if pattern.error is not None:
        return "error"
    text = groups_text(pattern.device_groups, limit=GROUPS_SHOWN)
    return short(text)


def shape_text(pattern: Pattern) -> str:
    """``4x2`` (group count x size), ``3 pairs``, ``4xragged``, or ``-`` after an error."""
    if pattern.error is not None:
        return "-"
    if pattern.is_pairs:
        return f"{pattern.group_count} pairs"
    size = "ragged" if pattern.group_size is None else str(pattern.group_size)
    return f"{pattern.group_count}x{size}"


def bytes_text(size: int | None) -> str:
    """``512 B``, ``4.0 KiB``, ``1.5 MiB``; ``-`` when unknown."""
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover - the loop always returns


def flags_text(pattern: Pattern) -> str:
    """Space-separated flags: ``ids!=devices``, ``unsorted``, ``error``."""
    flags = []
    if pattern.ids_differ:
        flags.append("ids!=devices")
    if pattern.ascending is False:
        flags.append("unsorted")
    if pattern.error is not None:
        flags.append("error")
    return " ".join(flags)


_HEADERS = ("name", "opcode", "mode", "groups", "device groups", "groups x size", "bytes",
            "line", "flags")  # fmt: skip


def table_cells(row: Row) -> tuple[str, ...]:
    """The terminal table's cells for one collective, in ``_HEADERS`` order."""
    pattern = row.pattern
    written = "(pairs) " + (pattern.written or "") if pattern.is_pairs else pattern.written
    return (
        row.name,
        row.opcode,
        pattern.mode or "-",
        short(written if written is not None else "(none)"),
        device_groups_text(pattern),
        shape_text(pattern),
        bytes_text(row.bytes),
        str(row.line),
        flags_text(pattern),
    )


def _print_table(result: Inspection) -> None:
    click.echo(
        f"{result.source}: {len(result.rows)} collectives on {result.replica_count} replicas x "
        f"{result.num_partitions} partitions, device assignment {result.assignment_spec}"
    )
    if not result.rows:
        return
    table = [table_cells(row) for row in result.rows]
    widths = [max([len(h)] + [len(cells[i]) for cells in table]) for i, h in enumerate(_HEADERS)]
    right = {6, 7}

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells[:-1], widths, strict=False))
        )

    click.echo(click.style((line(_HEADERS) + "  " + _HEADERS[-1]), bold=True))
    for cells in table:
        flags = cells[-1]
        click.echo(line(cells) + ("  " + click.style(flags, fg="yellow", bold=True) if flags else ""))
    _print_notes(result)


def _print_notes(result: Inspection) -> None:
    if result.ids_differ_count:
        click.echo(
            f"ids!=devices: {result.ids_differ_count} collectives use cells whose flattened id "
            "(replica * partitions + partition) is not their device id"
        )
    if result.descending_count:
        click.echo(
            f"unsorted: {result.descending_count} collectives have a group whose devices are not "
            "ascending; rank order follows the written order"
        )
    errors = [row for row in result.rows if row.pattern.error is not None]
    for row in errors[:10]:
        click.echo(f"error: line {row.line}: {row.opcode} {row.name}: {row.pattern.error}")
    if len(errors) > 10:
        click.echo(f"error: ... {len(errors) - 10} more")


COMMANDS = [inspect_command]

