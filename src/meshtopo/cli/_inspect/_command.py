"""``inspect``: every collective of an HLO dump, its mode, its groups and the devices they name.

A dump is read block by block (``mt.hlo.iter_collectives``), so memory follows the number of
collectives, not the file size; a progress bar is drawn on stderr when stderr is a terminal.
Several files and dump directories give one section each. Exit 1 when any collective could
not be resolved (XLA would reject it), as ``check`` does. The ``--json`` schema is documented
in docs/cli-json.md and is stable.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from typing import IO

import click

from ...groups._device_list import Mesh
from .._inputs import (
    FILES_HELP,
    all_option,
    device_limit_option,
    folded_line,
    input_files,
    is_single_file,
    module_option,
    one_module_file,
)
from .._math import parse_mesh
from .._options import DEVICE_ASSIGNMENT_HELP, DecimalRange
from .._render import placement_line, plural
from ._cells import (
    bytes_text,
    device_groups_text,
    flags_text,
    shape_text,
    short,
    wire_bytes,
)
from ._html import write_report
from ._rows import Inspection, Row, inspect_file


@click.command(name="inspect", help=f"""Every collective in HLO dumps: mode, groups as written,
the devices that talk, the mesh axes they span, bytes per device.

{FILES_HELP}

Flags: ids!=devices where a participating cell's flattened id (r*P+p) differs from its device
id; unsorted where a group does not list its devices in ascending order (rank order follows
the list). Exits 1 when a collective could not be resolved, 0 otherwise.""")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option(
    "--device-assignment",
    "assignment_spec",
    default="auto",
    show_default=True,
    help="auto (the table XLA wrote beside a dump in compile_options.textproto, else XLA's "
         "default placement, said so in the output), or " + DEVICE_ASSIGNMENT_HELP,
)
@click.option("--replica-count", type=DecimalRange(min=1),
              help="Use this replica count instead of the header's.")
@click.option("--num-partitions", type=DecimalRange(min=1),
              help="Use this partition count instead of the header's.")
@click.option("--mesh", "mesh_spec",
              help="Name the mesh axes of each collective on this mesh, e.g. data=2,model=4 "
                   "(default: the mesh the module's mesh-axes groups write, if any).")
@click.option("--mesh-devices",
              help="Device ids of --mesh in mesh order, e.g. 0,2,4,6,1,3,5,7; the mesh axes "
                   "are then those of each collective's device groups.")
@click.option("--full", is_flag=True,
              help="Print whole group and pair lists instead of cutting them short.")
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
    help="Also write a self-contained HTML report with a device grid per collective "
         "(one module: a dump directory's module holding collectives, or --module's).",
)
@module_option
@all_option
@device_limit_option
def inspect_command(
    files: tuple[str, ...],
    assignment_spec: str,
    replica_count: int | None,
    num_partitions: int | None,
    mesh_spec: str | None,
    mesh_devices: str | None,
    full: bool,
    cluster_spec: str | None,
    as_json: bool,
    html_path: str | None,
    module_choice: str | None,
    show_all: bool,
) -> int:
    if html_path is not None:
        if len(files) != 1:
            raise click.UsageError(f"--html writes one module's report, got {len(files)} FILEs")
        paths = [one_module_file(files[0], module_choice)]
    else:
        paths = input_files(files, module_choice)
    if mesh_devices is not None and mesh_spec is None:
        raise click.UsageError("--mesh-devices needs --mesh")
    mesh: Mesh | None = None if mesh_spec is None else parse_mesh(mesh_spec, mesh_devices)
    sources: list[str | IO[bytes]] = list(paths)
    if cluster_spec is not None and "-" in paths:  # read twice: for the rows and the loops
        stdin = io.BytesIO(sys.stdin.buffer.read())
        stdin.name = "-"
        sources = [stdin if path == "-" else path for path in paths]
    results = [inspect_file(_rewound(source), assignment_spec, replica_count, num_partitions,
                            mesh=mesh, mesh_of_devices=mesh_devices is not None)
               for source in sources]
    costs: list[list[dict[str, object] | None] | None] = [None] * len(results)
    notes: list[str | None] = [None] * len(results)
    if cluster_spec is not None:  # the topology and order layers, only when asked for
        from ...hlo import load
        from .._plan._command import print_topology_columns, topology_columns
        from .._trips import trip_counts

        for index, (source, result) in enumerate(zip(sources, results, strict=True)):
            module = load(_rewound(source), replica_count=replica_count,
                          num_partitions=num_partitions)
            counts, notes[index] = trip_counts(module, result.assignment)
            costs[index] = topology_columns(result, cluster_spec, counts)
    if html_path is not None:
        write_report(results[0], html_path)
    if as_json:
        if is_single_file(files, paths, module_choice):
            for chunk in json_chunks(results[0], costs[0]):
                click.echo(chunk, nl=False)
        else:
            click.echo('{\n"modules": [', nl=False)
            for index, result in enumerate(results):
                click.echo(("," if index else "") + "\n", nl=False)
                for chunk in json_chunks(result, costs[index]):
                    click.echo(chunk, nl=False)
            click.echo("\n]}", nl=False)
        click.echo()
    else:
        single = is_single_file(files, paths, module_choice)
        without = [result.source for result in results if not result.rows]
        shown = [index for index, result in enumerate(results)
                 if result.rows or show_all or single or len(without) == len(results)]
        for index in shown:
            result = results[index]
            if index != shown[0]:
                click.echo()
            _print_table(result, full)
            result_costs = costs[index]
            if result_costs is not None:
                print_topology_columns(result, result_costs, notes[index])
        if len(shown) < len(results):
            click.echo()
            click.echo(folded_line([result.source for result in results if not result.rows]))
        if html_path is not None:
            click.echo(f"report written to {html_path}")
    return 1 if any(result.error_count for result in results) else 0


def _rewound(source: str | IO[bytes]) -> str | IO[bytes]:
    """``source``, an in-memory copy of stdin at its start again."""
    if not isinstance(source, str):
        source.seek(0)
    return source


# ---- JSON ------------------------------------------------------------------------------------


def row_payload(row: Row, mesh_axes: str | None = None,
                topology: dict[str, object] | None = None) -> dict[str, object]:
    """The JSON object of one collective (schema in docs/cli-json.md); ``mesh_axes`` as
    ``Inspection.mesh_axes`` gives it, ``topology`` its ``--cluster`` columns (the
    ``topology`` field, only when given)."""
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
        "wire_bytes": wire_bytes(row),
        "op_name": row.op_name,
        "mesh_axes": mesh_axes,
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
        "device_assignment_source": result.assignment_source,
        "device_assignment": result.assignment.array.tolist(),
        "collective_count": len(result.rows),
        "ids_differ_count": result.ids_differ_count,
        "not_ascending_count": result.descending_count,
        "error_count": result.error_count,
        "mesh": None if result.mesh is None else str(result.mesh),
        "mesh_source": result.mesh_source,
    }
    yield "{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in head.items())
    yield ',\n  "collectives": ['
    for index, row in enumerate(result.rows):
        topology = costs[index] if costs is not None else None
        payload = row_payload(row, result.mesh_axes(row.pattern), topology)
        yield ("," if index else "") + "\n    " + json.dumps(payload)
    yield ("\n  ]" if result.rows else "]") + "\n}"


# ---- terminal table ----------------------------------------------------------------------------


_HEADERS = ("name", "opcode", "mode", "groups", "device groups", "groups x size",
            "payload/device", "wire/device", "line", "op_name", "flags")  # fmt: skip
_RIGHT = frozenset({6, 7, 8})


def table_cells(row: Row, mesh_axes: str | None = None, full: bool = False,
                with_axes: bool = False) -> tuple[str, ...]:
    """The terminal table's cells for one collective, in ``_HEADERS`` order (a ``mesh axes``
    cell after ``groups x size`` when ``with_axes``)."""
    pattern = row.pattern
    written = "(pairs) " + (pattern.written or "") if pattern.is_pairs else pattern.written
    text = written if written is not None else "(none)"
    cells = [
        row.name,
        row.opcode,
        pattern.mode or "-",
        text if full else short(text),
        device_groups_text(pattern, full),
        shape_text(pattern),
        bytes_text(row.bytes),
        bytes_text(wire_bytes(row)),
        str(row.line),
        (row.op_name or "-") if full else short(row.op_name or "-", 40),
        flags_text(pattern),
    ]
    if with_axes:
        cells.insert(6, "-" if pattern.is_pairs else mesh_axes or "?")
    return tuple(cells)


def _print_table(result: Inspection, full: bool = False) -> None:
    mesh = "" if result.mesh is None else f", {result.mesh} (from {result.mesh_source})"
    click.echo(
        f"{result.source}: {plural(len(result.rows), 'collective')} on "
        f"{plural(result.replica_count, 'replica')} x "
        f"{plural(result.num_partitions, 'partition')}, {result.assignment_note}{mesh}"
    )
    placement = placement_line(result.assignment)
    if placement is not None:
        click.echo(placement)
    if not result.rows:
        return
    with_axes = result.mesh is not None
    headers = (*_HEADERS[:6], "mesh axes", *_HEADERS[6:]) if with_axes else _HEADERS
    right = {i + 1 for i in _RIGHT} if with_axes else set(_RIGHT)
    table = [table_cells(row, result.mesh_axes(row.pattern), full, with_axes)
             for row in result.rows]
    widths = [max([len(h)] + [len(cells[i]) for cells in table]) for i, h in enumerate(headers)]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells[:-1], widths, strict=False))
        )

    click.echo(click.style((line(headers) + "  " + headers[-1]), bold=True))
    for cells in table:
        flags = cells[-1]
        click.echo(line(cells) + ("  " + click.style(flags, fg="yellow", bold=True) if flags else ""))
    _print_notes(result)


def _print_notes(result: Inspection) -> None:
    click.echo("payload/device: the buffer each device holds; wire/device: bytes each device "
               "sends under the ring algorithm of its opcode (docs/cli-json.md)")
    if result.ids_differ_count:
        click.echo(
            f"ids!=devices: {plural(result.ids_differ_count, 'collective')} "
            f"{'uses' if result.ids_differ_count == 1 else 'use'} cells whose flattened id "
            "(replica * partitions + partition) is not their device id"
        )
    if result.descending_count:
        click.echo(
            f"unsorted: {plural(result.descending_count, 'collective')} "
            f"{'has' if result.descending_count == 1 else 'have'} a group whose devices are not "
            "ascending; rank order follows the written order"
        )
    errors = [row for row in result.rows if row.pattern.error is not None]
    for row in errors[:10]:
        # The position format of ``check``'s findings: FILE:LINE:COL: NAME: MESSAGE.
        click.echo(f"{result.source}:{row.line}:{row.column}: {row.name}: {row.pattern.error}")
    if len(errors) > 10:
        click.echo(f"{result.source}: ... {plural(len(errors) - 10, 'more collective')} that "
                   "could not be resolved")
