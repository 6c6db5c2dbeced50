"""Terminal rendering shared by the commands: group colours, device grids, JSON output."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

import click
import numpy as np
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._placement import DeviceAssignment

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#999999")
GRID_CELL_LIMIT = 1024


def console() -> Console:
    """A console on stdout (colour only when stdout is a terminal)."""
    return Console(highlight=False, soft_wrap=True)


def group_style(group: int) -> str:
    """A background colour for group ``group`` (colours repeat past the palette; -1 is none)."""
    if group < 0:
        return "dim"
    colour = PALETTE[group % len(PALETTE)]
    return (
        f"black on {colour}" if (group // len(PALETTE)) % 2 == 0 else f"underline black on {colour}"
    )


def emit_json(payload: object) -> None:
    """Write ``payload`` as indented JSON on stdout."""
    click.echo(json.dumps(payload, indent=2))


def cell_table(
    device_assignment: DeviceAssignment, device_groups: Sequence[Sequence[int]]
) -> list[dict[str, int | None]]:
    """One record per (replica, partition): flattened id, device id, its group and rank."""
    table = device_assignment.array
    replicas, partitions = table.shape
    group_of = np.full(table.size, -1, dtype=np.int64)
    rank_of = np.full(table.size, -1, dtype=np.int64)
    flat_ids = (
        np.concatenate([np.asarray(g, dtype=np.int64) for g in device_groups])
        if device_groups
        else np.empty(0, np.int64)
    )
    if flat_ids.size:
        sizes = np.array([len(g) for g in device_groups], dtype=np.int64)
        replica, partition = device_assignment.logical_ids(flat_ids)
        cells = replica * partitions + partition
        group_of[cells] = np.repeat(np.arange(sizes.size), sizes)
        rank_of[cells] = np.arange(flat_ids.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    flat_table = table.reshape(-1)
    return [
        {
            "replica": index // partitions,
            "partition": index % partitions,
            "flattened_id": index,
            "device_id": int(flat_table[index]),
            "group": int(group_of[index]) if group_of[index] >= 0 else None,
            "rank": int(rank_of[index]) if rank_of[index] >= 0 else None,
        }
        for index in range(replicas * partitions)
    ]


def grid(
    cells: list[dict[str, int | None]], replicas: int, partitions: int, title: str
) -> Table | Text:
    """A rich table with one cell per (replica, partition), coloured by group.

    Each cell reads ``r<replica> p<partition> / f<flattened id> d<device id> / g<group>.<rank>``;
    ``*`` marks cells whose flattened id and device id differ.
    """
    if replicas * partitions > GRID_CELL_LIMIT:
        return Text(f"({replicas} x {partitions} grid: too large to draw; use --json)", style="dim")
    view = Table(title=title, show_lines=True, header_style="bold")
    view.add_column("")
    for partition in range(partitions):
        view.add_column(f"partition {partition}", justify="center")
    for replica in range(replicas):
        row: list[Text | str] = [f"replica {replica}"]
        for cell in cells[replica * partitions : (replica + 1) * partitions]:
            group = cell["group"]
            mark = "*" if cell["flattened_id"] != cell["device_id"] else " "
            place = "-" if group is None else f"g{group}.{cell['rank']}"
            label = f"r{cell['replica']} p{cell['partition']}\nf{cell['flattened_id']} d{cell['device_id']}{mark}\n{place}"
            row.append(Text(label, style=group_style(-1 if group is None else group)))
        view.add_row(*row)
    return view


def groups_text(groups: Sequence[Sequence[int]], limit: int = 64) -> str:
    """``{{0,1},{2,3}}``-style text, cut after ``limit`` groups with a count of the rest."""
    shown = ",".join("{" + ",".join(map(str, g)) + "}" for g in groups[:limit])
    more = f",... ({len(groups) - limit} more)" if len(groups) > limit else ""
    return "{" + shown + more + "}"


def stdout_is_terminal() -> bool:
    """True when stdout is an interactive terminal."""
    return sys.stdout.isatty()
