"""``expand``, ``groups`` and ``devices``: the math layer on the command line.

``expand`` and ``groups`` print plain lines (``click.echo``, colour on a terminal only);
``devices`` draws its grid with rich. The ``--json`` schemas are documented in
docs/cli-json.md and are stable.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import click
import numpy as np

from .._errors import InvalidArgumentError
from ..groups._device_list import CollectiveDeviceList, Mesh
from ..groups._iota import IotaTileAssignment
from ..groups._modes import group_mode, group_mode_for_opcode
from ..groups._placement import participating_device_groups
from ._inputs import device_limit_option
from ._options import DecimalRange, is_decimal
from ._options import device_assignment as _device_assignment
from ._options import int_list as _int_list
from ._render import (
    GROUPS_SHOWN,
    IDS_SHOWN,
    Cells,
    console,
    emit_json,
    first_groups,
    grid,
    group_styled,
    groups_text,
    plural,
)


def _print_shape(device_list: CollectiveDeviceList) -> None:
    click.echo(f"{plural(device_list.num_replica_groups, 'group')} x "
               f"{plural(device_list.num_devices_per_group, 'device')}")


def _bold(text: object) -> str:
    return click.style(str(text), bold=True)


def _device_list_payload(device_list: CollectiveDeviceList) -> dict[str, object]:
    compact = device_list.compact()
    return {
        "encoding": device_list.encoding,
        "text": str(device_list),
        "compact": str(compact) if compact.encoding == "iota" else None,
        "num_replica_groups": device_list.num_replica_groups,
        "num_devices_per_group": device_list.num_devices_per_group,
        "replica_groups": device_list.replica_groups,
    }


@click.command()
@click.argument("text")
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON answer.")
@device_limit_option
def expand(text: str, as_json: bool) -> None:
    """Expand replica groups or an iota tile given as XLA text.

    TEXT is explicit groups {{0,4},{1,5}}, an iota list [4,2]<=[2,4]T(1,0), mesh axes
    mesh['x'=2,'y'=4] {'y'}, or an iota tile of any rank [2,2,2]<=[8].
    """
    stripped = text.strip()
    if stripped.startswith("[") and stripped.split("]", 1)[0].count(",") != 1:
        tile = IotaTileAssignment.parse(stripped)
        if as_json:
            emit_json({
                "encoding": "tile",
                "text": str(tile),
                "dims": list(tile.dims),
                "reshape_dims": list(tile.reshape_dims),
                "transpose_perm": list(tile.transpose_perm),
                "array": tile.to_array().tolist(),
            })
            return
        click.echo(f"{_bold(tile)}  ({plural(tile.num_elements, 'device')})")
        # numpy summarises arrays past its print threshold; nothing else is converted.
        click.echo(np.array2string(tile.to_array(), separator=","))
        return
    device_list = CollectiveDeviceList.parse(stripped)
    if as_json:
        payload = _device_list_payload(device_list)
        if device_list.iota is not None:
            iota = device_list.iota
            payload["reshape_dims"] = list(iota.reshape_dims)
            payload["transpose_perm"] = list(iota.transpose_perm)
        emit_json(payload)
        return
    click.echo(f"{_bold(device_list)}  ({device_list.encoding})")
    _print_shape(device_list)
    if device_list.encoding != "iota":
        compact = device_list.compact()
        if compact.encoding == "iota":
            click.echo(f"compact form: {_bold(compact)}")
    sizes = device_list.group_sizes[:GROUPS_SHOWN].tolist()
    shown = first_groups(device_list, GROUPS_SHOWN, IDS_SHOWN)
    for index, (group, size) in enumerate(zip(shown, sizes, strict=True)):
        more = f", ... ({size - len(group)} more)" if size > len(group) else ""
        click.echo(f"  group {index}: "
                   + group_styled("[" + ", ".join(map(str, group)) + more + "]", index))
    if device_list.num_replica_groups > GROUPS_SHOWN:
        rest = device_list.num_replica_groups - GROUPS_SHOWN
        click.echo(f"  ... {plural(rest, 'more group')}")


def parse_mesh(spec: str, devices: str | None) -> Mesh:
    """The ``--mesh name=size,...`` mesh, with ``--devices`` order when given."""
    axes = []
    for part in spec.split(","):
        name, _, size = part.partition("=")
        size = size.strip()
        if not name.strip() or not (is_decimal(size) and size.isdigit()):
            raise InvalidArgumentError(
                f"--mesh expects name=size pairs like data=2,model=4, got {spec[:80]!r}"
            )
        axes.append((name.strip(), int(size)))
    order = None
    if devices is not None:
        order = _int_list(devices, "--devices")
    return Mesh(axes, order)


def _why_no_axes(mesh: Mesh, groups: CollectiveDeviceList) -> str | None:
    """Why no mesh axes can give ``groups`` when the groups themselves say so (a device
    twice, a device outside the mesh, groups of different sizes, devices left out, the
    groups of some axes with their ranks in another order), or None when they are a
    partition of the mesh that no whole axes make."""
    ids = groups.flattened_replica_groups()
    outside = ids[mesh.positions_of(ids) < 0]
    if outside.size:
        return f"device {int(outside[0])} is not in the mesh of {plural(mesh.size, 'device')}"
    values, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        return f"device {int(values[counts > 1][0])} is in them more than once"
    if not groups.is_uniform:
        sizes = dict.fromkeys(groups.group_sizes.tolist())  # as written
        return f"the groups differ in size ({', '.join(map(str, sizes))})"
    if ids.size != mesh.size:
        return f"they hold {ids.size} of the mesh's {plural(mesh.size, 'device')}"
    array = groups.to_array()  # each group's ranks in mesh order, then asked again
    ranked = mesh.axes_for(np.take_along_axis(
        array, np.argsort(mesh.positions_of(array), axis=1), axis=1))
    if ranked is not None:
        return (f"they are the groups over {','.join(ranked) or 'no axes'}, with their ranks "
                "in another order")
    return None


@click.command()
@click.option(
    "--mesh", "mesh_spec", required=True, help="Axes major to minor, e.g. data=2,model=4."
)
@click.option("--over", help="Axes the collective spans, in order: model or data,model or x:(2)2.")
@click.option("--devices", help="Device ids in mesh order (a permutation), e.g. 0,2,4,6,1,3,5,7.")
@click.option("--find", "find_groups", help="Name the mesh axes whose groups are these (reverse).")
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON answer.")
@device_limit_option
def groups(
    mesh_spec: str, over: str | None, devices: str | None, find_groups: str | None, as_json: bool
) -> None:
    """Replica groups of a collective over named mesh axes (or the axes behind given groups)."""
    mesh = parse_mesh(mesh_spec, devices)
    if find_groups is not None:
        found = CollectiveDeviceList.parse(find_groups)
        axes = mesh.axes_for(found)
        why = None if axes is not None else _why_no_axes(mesh, found)
        if as_json:
            emit_json(
                {
                    "mesh": _mesh_payload(mesh),
                    "groups": find_groups,
                    "over": list(axes) if axes is not None else None,
                    "why_none": why,
                }
            )
        elif axes is None:
            click.echo("no mesh axes give exactly these groups" + (f": {why}" if why else ""))
        else:
            click.echo(f"over {','.join(axes)}" if axes else
                       "over no axes (each device is a group of its own)")
        return
    if over is None:
        raise InvalidArgumentError("groups needs --over AXES (or --find GROUPS)")
    device_list = mesh.replica_groups(over=[axis for axis in over.split(",") if axis])
    if as_json:
        emit_json({
            "mesh": _mesh_payload(mesh),
            "over": [a for a in over.split(",") if a],
            **_device_list_payload(device_list),
        })
        return
    click.echo(f"{mesh} over {over}: {_bold(device_list)}")
    _print_shape(device_list)
    if mesh.size <= 1024 and len(mesh.axis_sizes) <= 2:
        mesh_devices = mesh.devices.reshape(-1).tolist()
        group_of = device_list.group_of(mesh.devices.reshape(-1))[0].tolist()
        rows, columns = (1, mesh.size) if len(mesh.axis_sizes) == 1 else mesh.axis_sizes
        for row in range(rows):
            cells = range(row * columns, (row + 1) * columns)
            click.echo("".join(group_styled(f" {mesh_devices[p]:>4} ", group_of[p])
                               for p in cells))
    shown = first_groups(device_list, GROUPS_SHOWN)
    click.echo(groups_text(shown, total=device_list.num_replica_groups))


def _mesh_payload(mesh: Mesh) -> dict[str, object]:
    return {
        "axes": [
            {"name": n, "size": s} for n, s in zip(mesh.axis_names, mesh.axis_sizes, strict=True)
        ],
        "devices": mesh.devices.reshape(-1).tolist(),
        "text": str(mesh),
    }


@click.command()
@click.option("--replicas", type=DecimalRange(min=1), default=1, show_default=True,
              help="Replica count R of the grid.")
@click.option("--partitions", type=DecimalRange(min=1), default=1, show_default=True,
              help="Partition count P of the grid.")
@click.option(
    "--groups",
    "groups_text_",
    default="{}",
    show_default=True,
    help="replica_groups in any encoding.",
)
@click.option("--channel-id", is_flag=True, help="The collective has a channel_id.")
@click.option(
    "--use-global-device-ids",
    type=click.Choice(["absent", "false", "true"]),
    default="absent",
    show_default=True,
    help="The collective's use_global_device_ids attribute (absent: not written).",
)
@click.option("--opcode", help="Apply XLA's per-opcode rule, e.g. all-reduce or all-to-all.")
@click.option(
    "--device-assignment",
    "assignment_spec",
    default="default",
    show_default=True,
    help="default (c*R+r), row-major (r*P+p), or rows like '0,2;1,3' ([replica][partition]).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the stable JSON answer.")
@device_limit_option
def devices(
    replicas: int,
    partitions: int,
    groups_text_: str,
    channel_id: bool,
    use_global_device_ids: str,
    opcode: str | None,
    assignment_spec: str,
    as_json: bool,
) -> int:
    """Resolve replica groups to the devices that really talk, on a replicas x partitions grid.

    Groups XLA's verifier refuses (an id repeated or out of range, too few or too many ids for
    the mode, sizes that differ where the opcode needs one size) are reported as check
    reports them, and the command then exits 1, as check does on findings."""
    from ..hlo import replica_groups_problem  # the verifier's check, in the HLO layer

    flag = None if use_global_device_ids == "absent" else use_global_device_ids == "true"
    mode = (
        group_mode_for_opcode(opcode, channel_id, flag) if opcode else group_mode(channel_id, flag)
    )
    assignment = _device_assignment(assignment_spec, replicas, partitions)
    device_list = CollectiveDeviceList.parse(groups_text_)
    device_groups = participating_device_groups(device_list, mode=mode, device_assignment=assignment)
    problem = replica_groups_problem(device_list, mode, replicas, partitions, opcode)
    findings = [] if problem is None else [
        {"message": problem, "check": "replica_groups", "severity": "error"}]
    cells = Cells(assignment, device_groups)
    differs = cells.differing()
    payload = {
        "replica_count": replicas,
        "partition_count": partitions,
        "channel_id": channel_id,
        "use_global_device_ids": flag,
        "opcode": opcode,
        "mode": str(mode),
        "device_assignment": assignment.array.tolist(),
        "replica_groups": str(device_list),
        "device_groups": device_groups,
        "flattened_ids_differ_from_device_ids": bool(differs.size),
        "findings": findings,
        "ok": not findings,
    }
    if as_json:
        for chunk in _devices_json(payload, cells):
            click.echo(chunk, nl=False)
        click.echo()
        return 0 if problem is None else 1
    out = console()
    out.print(
        f"mode [bold]{mode}[/bold]  groups {device_list}  on {plural(replicas, 'replica')} x "
        f"{plural(partitions, 'partition')}"
    )
    out.print(
        grid(cells, "cells: r<replica> p<partition> / f<flattened id> d<device id> / g<group>.<rank>")
    )
    out.print(f"device groups: {groups_text(device_groups)}")
    if differs.size:
        flat = int(differs[0])
        out.print(
            f"[bold]*[/bold] flattened id and device id differ in {plural(differs.size, 'cell')}, e.g. replica "
            f"{flat // partitions} partition {flat % partitions} is flattened id "
            f"{flat} but device {int(cells.device_id[flat])}"
        )
    if problem is not None:
        from rich.text import Text

        out.print(Text(f"replica_groups: {problem}", style="bold red"))
        return 1
    return 0


def _devices_json(payload: dict[str, object], cells: Cells) -> Iterator[str]:
    """The ``devices --json`` document in pieces: the fields as ``emit_json`` writes them,
    with ``cells`` (one object per line) before ``flattened_ids_differ_from_device_ids``."""
    tail = ("flattened_ids_differ_from_device_ids", "findings", "ok")
    head = {k: v for k, v in payload.items() if k not in tail}
    yield "{\n" + ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in head.items())
    yield ',\n  "cells": ['
    yield from cells.json_lines("    ")
    yield "\n  ]" if cells.size else "]"
    yield "".join(f",\n  {json.dumps(k)}: {json.dumps(payload[k])}" for k in tail) + "\n}"
