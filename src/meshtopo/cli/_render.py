"""Terminal rendering shared by the commands: group colours, device grids, JSON output.

rich is imported by the functions that draw with it (``console``, ``grid``), so a command
that prints plain lines (``expand``, ``groups``) never loads it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import click
import numpy as np

from ..groups._device_list import CollectiveDeviceList
from ..groups._placement import DeviceAssignment

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#999999")
GRID_CELL_LIMIT = 1024
GROUPS_SHOWN = 64  # groups printed in text output; the rest are counted
IDS_SHOWN = 1024  # ids of one group printed by expand; the rest are counted


PIPED_WIDTH = 160
"""Columns for tables written to a file or pipe (a terminal gives its own width)."""


def console(stderr: bool = False) -> Console:
    """A console on stdout (or stderr): colour only on a terminal, and tables at
    ``PIPED_WIDTH`` columns when the stream is no terminal, so logs keep them readable."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else PIPED_WIDTH
    return Console(highlight=False, soft_wrap=True, stderr=stderr, width=width)


def _group_look(group: int) -> tuple[str | None, bool]:
    """Group ``group``'s background colour (None: in no group, drawn dim) and whether it is
    underlined: colours repeat past the palette, underlined on every other round."""
    if group < 0:
        return None, False
    return PALETTE[group % len(PALETTE)], (group // len(PALETTE)) % 2 == 1


def group_style(group: int) -> str:
    """Group ``group``'s look as a rich style (black on its colour; -1 is none: dim)."""
    colour, underline = _group_look(group)
    if colour is None:
        return "dim"
    return f"{'underline ' if underline else ''}black on {colour}"


def group_styled(text: str, group: int) -> str:
    """``text`` in group ``group``'s look for ``click.echo`` (which drops the colour off a
    terminal)."""
    colour, underline = _group_look(group)
    if colour is None:
        return click.style(text, dim=True)
    rgb = (int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16))
    return click.style(text, fg="black", bg=rgb, underline=underline or None)


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 collective``, ``2 collectives`` (``many`` for irregular plurals: ``topologies``)."""
    return f"{count} {noun_for(count, noun, many)}"


def noun_for(count: int, noun: str, many: str | None = None) -> str:
    """The noun ``plural`` puts after ``count``, alone: ``collective`` for 1, else
    ``collectives`` (or ``many``), for text that sets the count apart."""
    return noun if count == 1 else many or noun + "s"


def plain_table(headers: list[str], rows: list[list[str]]) -> None:
    """Columns padded to their widest cell, the header in bold, through ``click.echo`` (no
    rich: the commands that print one load no drawing library)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    click.echo(click.style("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)),
                           bold=True))
    for cells in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())


def emit_json(payload: object) -> None:
    """Write ``payload`` as indented JSON on stdout."""
    click.echo(json.dumps(payload, indent=2))


class Cells:
    """The cells of a replicas x partitions grid, as arrays in flattened-id (row-major) order:
    each cell's device id, and its group and rank in ``device_groups`` (-1 where it is in
    none). Group and rank come from ``CollectiveDeviceList.group_of``."""

    def __init__(
        self, device_assignment: DeviceAssignment, device_groups: Sequence[Sequence[int]]
    ) -> None:
        self.replicas, self.partitions = device_assignment.array.shape
        self.device_id = device_assignment.array.reshape(-1)
        if device_groups:
            size = len(device_groups[0])
            uniform = all(len(group) == size for group in device_groups)
            # Equal-sized groups go in as one 2-D array (numpy converts the lists in C).
            groups = np.array(device_groups, dtype=np.int64) if uniform else device_groups
            self.group, self.rank = CollectiveDeviceList(groups).group_of(self.device_id)
        else:
            self.group = np.full(self.device_id.size, -1, dtype=np.int64)
            self.rank = self.group

    @property
    def size(self) -> int:
        """The number of cells, replicas * partitions."""
        return int(self.device_id.size)

    def differing(self) -> np.ndarray:
        """The flattened ids of the cells whose device id differs from their flattened id."""
        return np.flatnonzero(self.device_id != np.arange(self.size, dtype=np.int64))

    def _rows(self, start: int, stop: int) -> Iterator[tuple[int, int, int, int]]:
        """(flattened id, device id, group, rank) per cell in ``[start, stop)``; -1: no group."""
        return zip(
            range(start, stop),
            self.device_id[start:stop].tolist(),
            self.group[start:stop].tolist(),
            self.rank[start:stop].tolist(),
            strict=True,
        )

    def records(self, start: int = 0, stop: int | None = None) -> list[dict[str, int | None]]:
        """One dict per cell in ``[start, stop)``: ``replica``, ``partition``,
        ``flattened_id``, ``device_id``, ``group`` and ``rank`` (None where in no group)."""
        stop = self.size if stop is None else min(stop, self.size)
        partitions = self.partitions
        return [
            {
                "replica": flat // partitions,
                "partition": flat % partitions,
                "flattened_id": flat,
                "device_id": device,
                "group": group if group >= 0 else None,
                "rank": rank if rank >= 0 else None,
            }
            for flat, device, group, rank in self._rows(start, stop)
        ]

    def json_lines(self, indent: str, chunk: int = 1 << 16) -> Iterator[str]:
        """The records as JSON objects, one per line after ``indent``, joined by ``,``; in
        pieces of ``chunk`` cells (no per-cell numpy work, no whole-grid string)."""
        partitions = self.partitions
        for start in range(0, self.size, chunk):
            stop = min(start + chunk, self.size)
            yield ",".join(
                f'\n{indent}{{"replica": {flat // partitions}, "partition": {flat % partitions}, '
                f'"flattened_id": {flat}, "device_id": {device}, '
                f'"group": {group if group >= 0 else "null"}, '
                f'"rank": {rank if rank >= 0 else "null"}}}'
                for flat, device, group, rank in self._rows(start, stop)
            ) + ("," if stop < self.size else "")


def grid(cells: Cells, title: str) -> Table | Text:
    """A rich table with one cell per (replica, partition), coloured by group.

    Each cell reads ``r<replica> p<partition> / f<flattened id> d<device id> / g<group>.<rank>``;
    ``*`` marks cells whose flattened id and device id differ. Grids of more than
    ``GRID_CELL_LIMIT`` cells are a one-line note instead.
    """
    from rich.table import Table
    from rich.text import Text

    replicas, partitions = cells.replicas, cells.partitions
    if cells.size > GRID_CELL_LIMIT:
        return Text(f"({replicas} x {partitions} grid: too large to draw; use --json)", style="dim")
    records = cells.records()
    view = Table(title=title, show_lines=True, header_style="bold")
    view.add_column("")
    for partition in range(partitions):
        view.add_column(f"partition {partition}", justify="center")
    for replica in range(replicas):
        row: list[Text | str] = [f"replica {replica}"]
        for cell in records[replica * partitions : (replica + 1) * partitions]:
            group = cell["group"]
            mark = "*" if cell["flattened_id"] != cell["device_id"] else " "
            place = "-" if group is None else f"g{group}.{cell['rank']}"
            label = f"r{cell['replica']} p{cell['partition']}\nf{cell['flattened_id']} d{cell['device_id']}{mark}\n{place}"
            row.append(Text(label, style=group_style(-1 if group is None else group)))
        view.add_row(*row)
    return view


def groups_text(
    groups: Sequence[Sequence[int]], limit: int = GROUPS_SHOWN, total: int | None = None
) -> str:
    """``{{0,1},{2,3}}``-style text, cut after ``limit`` groups with a count of the rest
    (``total`` is the number of groups when ``groups`` holds only the first ones)."""
    total = len(groups) if total is None else total
    shown = ",".join("{" + ",".join(map(str, g)) + "}" for g in groups[:limit])
    more = f",... ({total - limit} more)" if total > limit else ""
    return "{" + shown + more + "}"


def first_groups(
    device_list: CollectiveDeviceList, limit: int, ids: int | None = None
) -> list[list[int]]:
    """The first ``limit`` groups of ``device_list`` as lists, each cut to its first ``ids``
    ids when given (only what is returned is converted to Python ints)."""
    sizes = device_list.group_sizes[:limit]
    if not sizes.size:
        return []
    flat = device_list.flattened_replica_groups()[: int(sizes.sum())]
    parts = np.split(flat, np.cumsum(sizes)[:-1])
    return [part[:ids].tolist() for part in parts]


TABLE_CELLS_SHOWN = 64
"""Cells of a device table written out in full; a larger one is shown in its iota form when
it has one, else by its first rows."""


def placement_text(assignment: DeviceAssignment) -> str:
    """The device table as ``replica x partition`` rows, ``{{3,0,6,5},{7,4,1,2}}``: a table of
    more than ``TABLE_CELLS_SHOWN`` cells as its iota tile when one gives it
    (``[2,512]<=[2,512]T(1,0)``), else its first rows, each cut to its first ids."""
    table = assignment.array
    if table.size > TABLE_CELLS_SHOWN:
        compact = CollectiveDeviceList(table).compact()
        if compact.encoding == "iota":
            return str(compact)
    rows = first_groups(CollectiveDeviceList(table), 8, 16)
    cut = [[*row, "..."] if table.shape[1] > 16 else row for row in rows]
    return groups_text(cut, limit=8, total=table.shape[0])  # type: ignore[arg-type]


def placement_line(assignment: DeviceAssignment) -> str | None:
    """The line under a module's header that shows its device table when it is not XLA's
    default (None when it is): ``device table (1 replica x 8 partitions): {{3,0,...}}``."""
    if assignment.is_default():
        return None
    return (f"device table ({plural(assignment.replica_count, 'replica')} x "
            f"{plural(assignment.computation_count, 'partition')}): {placement_text(assignment)}")
