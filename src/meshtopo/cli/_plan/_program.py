"""``plan --program FILE``: a program's collectives on the cluster, each priced over the mesh
axes its device groups span (``plan`` for that axis, opcode and the collective's own bytes)
and multiplied by how many times a device issues it (its loops' trip counts, as ``replay``
and ``inspect --cluster`` count them: ``_trips``); with ``--against``, the same collectives
over the same axes of the other layout. The program's total per model sums them.

A collective whose groups no whole mesh axes give (a collective-permute's pairs, irregular
groups) is listed unpriced: ``inspect --cluster`` prices its own groups.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import click

from ..._errors import MeshtopoError
from ...groups._device_list import Mesh
from ...hlo import Collective, Module
from ...topology import MODELS, Cluster, PlanRow, plan
from ...topology._cost import known_opcodes
from ...topology._units import format_seconds, format_size
from .._render import plain_table, plural
from .._trips import TripCounts, trip_text


@dataclass(frozen=True)
class ProgramRow:
    """One collective the program issues: where it is, the mesh axes its groups span (None:
    no whole axes give them), its payload bytes, how many times a device issues it (None:
    a loop's data decides, counted once) and one issue priced on the mesh and on the
    ``--against`` layout (None where it is not priced)."""

    name: str
    opcode: str
    line: int
    axes: tuple[str, ...] | None
    bytes: int | None
    trip_count: int | None
    row: PlanRow | None
    against: PlanRow | None

    def seconds(self, row: PlanRow | None) -> dict[str, float] | None:
        """``row``'s time per model over every issue (NaN where a model does not apply)."""
        if row is None:
            return None
        times = 1 if self.trip_count is None else self.trip_count
        return {model: value * times for model, value in row.times.items()}

    def to_dict(self) -> dict[str, object]:
        """The row as JSON values (schema in docs/cli-json.md)."""
        payload: dict[str, object] = {
            "name": self.name, "opcode": self.opcode, "line": self.line,
            "axes": None if self.axes is None else list(self.axes), "bytes": self.bytes,
            "trip_count": self.trip_count, "row": None if self.row is None else self.row.to_dict(),
            "seconds": _json_times(self.seconds(self.row)),
        }
        if self.against is not None:
            payload["against"] = {"row": self.against.to_dict(),
                                  "seconds": _json_times(self.seconds(self.against))}
        return payload


def _json_times(times: dict[str, float] | None) -> dict[str, float | None] | None:
    return None if times is None else {k: None if math.isnan(v) else v for k, v in times.items()}


def _axes(collective: Collective, module: Module, mesh: Mesh) -> tuple[str, ...] | None:
    """The mesh axes whose groups are the collective's device groups under the module's own
    table, or None (pairs, groups in error, or no whole axes)."""
    if collective.source_target_pairs is not None:
        return None
    try:
        return mesh.axes_for(collective.device_groups(module.device_assignment))
    except MeshtopoError:
        return None


@dataclass(frozen=True)
class Program:
    """A program priced for ``plan``: its file, one ``ProgramRow`` per collective it issues
    (``-done`` forms left out, text order) and why trip counts are unknown, when they are."""

    file: str
    rows: list[ProgramRow]
    note: str | None

    @classmethod
    def of(cls, module: Module, counts: TripCounts | None, note: str | None, cluster: Cluster,
           mesh: Mesh, other: Mesh | None, channels: int | None, sm: int | None) -> Program:
        """``module`` priced on ``cluster`` over ``mesh`` (and ``other``); ``counts`` and
        ``note`` are ``_trips.trip_counts``'s (None: unknown for every collective)."""
        rows = []
        for collective in module.collectives:
            if collective.is_done:
                continue
            opcode = collective.underlying_opcode or collective.opcode
            axes = _axes(collective, module, mesh)
            size = collective.bytes
            layouts = [mesh, *([] if other is None else [other])]
            priced = [
                plan(cluster, layout, float(size), [opcode], [",".join(axes)], channels=channels,
                     sm=sm)[0]
                for layout in layouts
            ] if axes is not None and size is not None and opcode in known_opcodes() else []
            count = None if counts is None else counts.get(
                (collective.computation or "", collective.name), 0)
            rows.append(ProgramRow(collective.name, opcode, collective.line, axes, size, count,
                                   priced[0] if priced else None,
                                   priced[1] if len(priced) > 1 else None))
        return cls(module.source or module.name, rows, note)

    def totals(self, against: bool = False) -> dict[str, float]:
        """The program's time per model: its priced collectives over all their issues (NaN
        where a model does not apply to one of them)."""
        found = [times for row in self.rows
                 if (times := row.seconds(row.against if against else row.row)) is not None]
        return {model: math.fsum(times[model] for times in found) for model in MODELS}

    def to_dict(self) -> dict[str, object]:
        """The ``program`` field of ``plan --json`` (schema in docs/cli-json.md)."""
        against = any(row.against is not None for row in self.rows)
        payload: dict[str, object] = {
            "file": self.file, "collectives": [row.to_dict() for row in self.rows],
            "total_seconds": _json_times(self.totals()), "notes": [self.note] if self.note else [],
        }
        if against:
            payload["against_total_seconds"] = _json_times(self.totals(against=True))
        return payload

    def print(self, against: Mesh | None) -> None:
        """The ``--program`` table: per collective its axes, bytes, issues, tier and each
        model's time over its issues (and on ``against``), then the program's totals."""
        rows = self.rows
        priced = sum(row.row is not None for row in rows)
        click.echo(f"\nprogram {self.file}: {plural(len(rows), 'collective')}, {priced} over "
                   "mesh axes (times over all issues: one issue's times its issues per device)")
        headers = ["name", "axes", "opcode", "bytes", "issues", "tier", "hosts", *MODELS]
        if against is not None:
            headers += ["against tier", *(f"against {model}" for model in MODELS)]
        cells = [_cells(row, against is not None) for row in rows]
        total = ["total", "", "", "", "", "", "",
                 *(format_seconds(v) for v in self.totals().values())]
        if against is not None:
            total += ["", *(format_seconds(v) for v in self.totals(against=True).values())]
        plain_table(headers, [*cells, total])
        unpriced = [row.name for row in rows if row.row is None]
        if unpriced:
            click.echo(f"not priced: {', '.join(unpriced[:8])}{', ...' * (len(unpriced) > 8)} "
                       "(no whole mesh axes give its groups, or it has no size or model; "
                       "inspect FILE --cluster prices its own groups)")
        if self.note is not None:
            click.echo(self.note)


def _cells(row: ProgramRow, with_against: bool) -> list[str]:
    times = row.seconds(row.row)
    cells = [
        row.name, "-" if row.axes is None else ",".join(row.axes) or "(none)", row.opcode,
        "-" if row.bytes is None else format_size(row.bytes), trip_text(row.trip_count) or "1",
        "-" if row.row is None else str(row.row.tier),
        "-" if row.row is None else str(row.row.hosts),
        *(["-"] * len(MODELS) if times is None else [format_seconds(times[m]) for m in MODELS]),
    ]
    if with_against:
        other = row.seconds(row.against)
        cells += ["-" if row.against is None else str(row.against.tier),
                  *(["-"] * len(MODELS) if other is None else
                    [format_seconds(other[m]) for m in MODELS])]
    return cells
