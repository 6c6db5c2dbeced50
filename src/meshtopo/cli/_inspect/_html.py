"""``inspect --html``: one self-contained page (inline CSS and SVG, no scripts, no network).

The page has a summary, a table of every collective and, per collective, the device grid
(replicas down, partitions across) coloured by device group. Each distinct resolution
(``Pattern``) is drawn once as an SVG ``<symbol>``; every collective's grid is an ``<svg>``
that ``<use>``s it, so a dump with 100,000 collectives and a handful of patterns stays small.
Grids above ``GRID_CELL_LIMIT`` cells are summarised instead of drawn. The page is written
piece by piece to the file.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterator
from typing import IO

from ..._errors import InvalidArgumentError
from .._render import PALETTE, Cells, groups_text, noun_for, plural
from ._cells import (
    bytes_text,
    device_groups_text,
    flags_text,
    shape_text,
    short,
    wire_bytes,
)
from ._rows import Inspection, Pattern, Row

GRID_CELL_LIMIT = 4096
"""Largest grid (replicas x partitions) drawn; larger grids are summarised."""
DETAIL_LIMIT = 2000
"""Collectives that get a detail section with a grid; the table lists up to TABLE_LIMIT."""
TABLE_LIMIT = 20000
LEGEND_LIMIT = 16
"""Groups listed in a collective's legend before ``... and N more``."""
ARROW_LIMIT = 64
"""Permute pairs drawn as arrows; more are shown by cell labels only."""


def write_report(result: Inspection, path: str) -> None:
    """Write the HTML report of ``result`` to ``path``."""
    try:
        with open(path, "w", encoding="utf-8") as handle:
            _write(result, handle)
    except OSError as error:
        raise InvalidArgumentError(f"cannot write HTML report {path}: {error.strerror}") from None


def _write(result: Inspection, out: IO[str]) -> None:
    e = html.escape
    out.write(_HEAD.replace("{title}", e(f"meshtopo inspect: {result.source}")))
    out.write(f"<h1>{e(result.source)}</h1>\n")
    out.write(_summary(result))
    drawings = _drawings(result.patterns)
    out.write(_defs(result, drawings))
    out.write("<h2>Collectives</h2>\n")
    out.write(_table(result))
    out.write("<h2>Device grids</h2>\n")
    out.write(_KEY)
    shown = result.rows[:DETAIL_LIMIT]
    for index, row in enumerate(shown):
        out.write(_detail(result, index, row, drawings))
    more = len(result.rows) - len(shown)
    if more:
        out.write(
            f'<p class="note">{plural(more, "more collective")} {"is" if more == 1 else "are"} '
            "in the table above without a grid; <code>--json</code> lists them all.</p>\n"
        )
    out.write("</main></body></html>\n")


def _summary(result: Inspection) -> str:
    facts = [
        f"<b>{len(result.rows)}</b> {noun_for(len(result.rows), 'collective')}",
        f"<b>{result.replica_count}</b> {noun_for(result.replica_count, 'replica')} &times; "
        f"<b>{result.num_partitions}</b> {noun_for(result.num_partitions, 'partition')}",
        html.escape(result.assignment_note),
        f"<b>{len(result.patterns)}</b> distinct group "
        f"{noun_for(len(result.patterns), 'pattern')}",
    ]
    badges = []
    if result.ids_differ_count:
        badges.append(f'<span class="flag">ids&ne;devices</span> {result.ids_differ_count}')
    if result.descending_count:
        badges.append(f'<span class="flag">unsorted</span> {result.descending_count}')
    if result.error_count:
        badges.append(f'<span class="flag error">error</span> {result.error_count}')
    table = ""
    if result.assignment.num_devices <= 64:
        rows = "".join(
            f"<tr><th>r{r}</th>" + "".join(f"<td>{d}</td>" for d in row) + "</tr>"
            for r, row in enumerate(result.assignment.array.tolist())
        )
        heads = "".join(f"<th>p{p}</th>" for p in range(result.num_partitions))
        table = (
            '<table class="assignment"><caption>device assignment [replica][partition]</caption>'
            f"<tr><th></th>{heads}</tr>{rows}</table>"
        )
    if len(result.rows) > DETAIL_LIMIT:
        shown = min(len(result.rows), TABLE_LIMIT)
        badges.append(
            f'<span class="note">(the table lists the first {shown}, with device grids for the '
            f"first {DETAIL_LIMIT}; <code>--json</code> has every collective)</span>"
        )
    return (
        f'<section class="summary"><p>{" &middot; ".join(facts)}</p>'
        f'<p>{" &nbsp; ".join(badges) or "no flags"}</p>{table}</section>\n'
    )


def _table(result: Inspection) -> str:
    e = html.escape
    parts = [
        '<div class="scroll"><table class="collectives"><thead><tr><th>#</th><th>name</th><th>opcode</th>'
        "<th>mode</th><th>groups as written</th><th>device groups</th><th>groups&times;size</th>"
        "<th>mesh axes</th>"
        '<th class="num">payload/device</th><th class="num">wire/device</th>'
        '<th class="num">line</th><th>op_name</th><th>flags</th></tr></thead><tbody>'
    ]
    for index, row in enumerate(result.rows[:TABLE_LIMIT]):
        p = row.pattern
        name = e(row.name)
        link = f'<a href="#c{index}">{name}</a>' if index < DETAIL_LIMIT else name
        written = "(none)" if p.written is None else short(p.written)
        parts.append(
            f"<tr><td class=num>{index}</td><td>{link}</td><td>{e(row.opcode)}</td>"
            f"<td>{e(p.mode or '-')}</td><td><code>{e(written)}</code></td>"
            f"<td><code>{e(device_groups_text(p))}</code></td><td>{e(shape_text(p))}</td>"
            f"<td>{e(result.mesh_axes(p) or '-')}</td>"
            f"<td class=num>{e(bytes_text(row.bytes))}</td>"
            f"<td class=num>{e(bytes_text(wire_bytes(row)))}</td><td class=num>{row.line}</td>"
            f"<td><code>{e(short(row.op_name or '-', 60))}</code></td>"
            f"<td>{_flag_badges(p)}</td></tr>"
        )
    parts.append("</tbody></table></div>\n")
    if len(result.rows) > TABLE_LIMIT:
        parts.append(f'<p class="note">{plural(len(result.rows) - TABLE_LIMIT, "more row")}: '
                     "use --json.</p>")
    return "".join(parts)


def _flag_badges(pattern: Pattern) -> str:
    flags = flags_text(pattern).split()
    return " ".join(
        f'<span class="flag{" error" if f == "error" else ""}">{html.escape(f)}</span>'
        for f in flags
    ).replace("!=", "&ne;")


def _detail(result: Inspection, index: int, row: Row, drawings: dict[int, int]) -> str:
    e = html.escape
    p = row.pattern
    head = (
        f'<section class="collective" id="c{index}"><h3>{e(row.name)} '
        f'<span class="op">{e(row.opcode)}</span> <span class="where">line {row.line}:'
        f"{row.column}</span> {_flag_badges(p)}</h3>"
        f'<p class="meta">mode <b>{e(p.mode or "-")}</b> &middot; '
        f'{"pairs" if p.is_pairs else "groups"} as written '
        f"<code>{e(short(p.written or '(none)', 120))}</code> &middot; {e(shape_text(p))} "
        f"&middot; {e(bytes_text(row.bytes))} payload, {e(bytes_text(wire_bytes(row)))} sent "
        "per device</p>"
    )
    if p.error is not None:
        return head + f'<p class="error">{e(p.error)}</p></section>\n'
    cells = result.replica_count * result.num_partitions
    if cells > GRID_CELL_LIMIT:
        body = (
            f'<p class="note">{result.replica_count} &times; {result.num_partitions} = {cells} '
            f"cells: grid not drawn (over {GRID_CELL_LIMIT}). Device groups: "
            f"<code>{e(groups_text(p.device_groups, limit=8))}</code></p>"
        )
        return head + body + "</section>\n"
    width, height = _size(result)
    grid = (
        f'<svg class="grid" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="device grid of {e(row.name)}"><use href="#p{drawings[p.index]}"/></svg>'
    )
    _, columns, wrapped = _layout(result)
    caption = (
        f'<p class="note">cells in flattened-id order, {columns} per row</p>' if wrapped else ""
    )
    return head + f'{caption}<div class="pair">{grid}{_legend(p)}</div></section>\n'


def _legend(pattern: Pattern) -> str:
    items = []
    if pattern.is_pairs:
        labels = [("chain", _chain_text(c)) for c in _pair_components(pattern.device_groups)]
    else:
        labels = [("g", "{" + ",".join(map(str, g)) + "}") for g in pattern.device_groups]
    for g, (kind, label) in enumerate(labels[:LEGEND_LIMIT]):
        items.append(
            f'<li><svg width="14" height="14"><rect width="14" height="14" rx="2" '
            f'fill="{_colour(g)}"/>{_hatch_use(g, 14, 14)}</svg> '
            f"{kind} {g}: <code>{html.escape(short(label, 80))}</code></li>"
        )
    more = len(labels) - LEGEND_LIMIT
    if more > 0:
        items.append(f"<li>&hellip; and {more} more</li>")
    return f'<ul class="legend">{"".join(items)}</ul>'


# ---- the grids ---------------------------------------------------------------------------------


def _layout(result: Inspection) -> tuple[int, int, bool]:
    """(rows, columns, wrapped): replicas down and partitions across; a 1-row or 1-column grid
    of more than 16 cells is wrapped into a near-square block in flattened-id order."""
    r, p = result.replica_count, result.num_partitions
    n = r * p
    if min(r, p) > 1 or n <= 16:
        return r, p, False
    columns = max(8, math.ceil(math.sqrt(n)))
    return math.ceil(n / columns), columns, True


def _cell_size(columns: int) -> tuple[int, int, int]:
    """(width, height, text lines) of one cell for a grid this wide."""
    if columns <= 12:
        return 86, 58, 3
    if columns <= 24:
        return 46, 34, 1
    return 16, 16, 0


_MARGIN = 30


def _size(result: Inspection) -> tuple[int, int]:
    rows, columns, _ = _layout(result)
    w, h, _ = _cell_size(columns)
    return _MARGIN + columns * w + 4, _MARGIN + rows * h + 4


def _defs(result: Inspection, drawings: dict[int, int]) -> str:
    """A hidden SVG with one ``<symbol>`` per drawn pattern, the hatch and the arrowhead."""
    cells = result.replica_count * result.num_partitions
    used = {row.pattern.index for row in result.rows[:DETAIL_LIMIT] if row.pattern.error is None}
    parts = [
        '<svg class="defs" width="0" height="0" aria-hidden="true"><defs>'
        '<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="2" height="6" fill="#ffffffa0"/></pattern>'
        '<pattern id="dots" width="6" height="6" patternUnits="userSpaceOnUse">'
        '<circle cx="3" cy="3" r="1.4" fill="#ffffffb0"/></pattern>'
        '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#222"/></marker>'
    ]
    if cells <= GRID_CELL_LIMIT:
        width, height = _size(result)
        for pattern in result.patterns:
            if pattern.index in used and drawings[pattern.index] == pattern.index:
                parts.append(
                    f'<symbol id="p{pattern.index}" viewBox="0 0 {width} {height}">'
                    + "".join(_grid(result, pattern))
                    + "</symbol>"
                )
    parts.append("</defs></svg>\n")
    return "".join(parts)


def _drawings(patterns: list[Pattern]) -> dict[int, int]:
    """Pattern index -> the index of the first pattern drawn the same way (same device groups,
    both groups or both pairs), whose symbol serves them all."""
    first: dict[tuple[object, ...], int] = {}
    return {
        p.index: first.setdefault((p.is_pairs, tuple(map(tuple, p.device_groups))), p.index)
        for p in patterns
    }


def _grid(result: Inspection, pattern: Pattern) -> Iterator[str]:
    rows, columns, wrapped = _layout(result)
    w, h, lines = _cell_size(columns)
    partitions = result.num_partitions
    if pattern.is_pairs:
        table = Cells(result.assignment, []).records()
        sends = {a: b for a, b in pattern.device_groups}
        sender = {
            device: index
            for index, component in enumerate(_pair_components(pattern.device_groups))
            for pair in component
            for device in pair
        }
        receives = {b for _, b in pattern.device_groups}
    else:
        table = Cells(result.assignment, pattern.device_groups).records()
    if not wrapped:
        step = 1 if w >= 30 else 8
        for c in range(0, columns, step):
            x = _MARGIN + c * w + (w / 2 if step == 1 else 0)
            yield _text(x, 18, f"p{c}", "axis", anchor="middle" if step == 1 else "start")
        for r in range(0, rows, 1 if h >= 30 else 4):
            yield _text(4, _MARGIN + r * h + h / 2 + 4, f"r{r}", "axis", anchor="start")
    position: dict[int, tuple[float, float]] = {}
    for cell in table:
        flat = int(cell["flattened_id"] or 0)
        device = int(cell["device_id"] or 0)
        x = _MARGIN + (flat % columns) * w
        y = _MARGIN + (flat // columns) * h
        position[device] = (x + w / 2, y + h / 2)
        if pattern.is_pairs:
            group = sender.get(device)
            place = (f"&rarr;d{sends[device]}" if device in sends
                     else ("receives" if device in receives else "-"))
        else:
            group = cell["group"]
            place = "-" if group is None else f"g{group}.{cell['rank']}"
        differs = flat != device
        r_, p_ = flat // partitions, flat % partitions
        tip = (f"replica {r_} partition {p_}: flattened id {flat}, device {device}"
               + (f", {place}" if place != "-" else ", not in any group")
               + (" (flattened id != device id)" if differs else ""))
        fill = "#f3f3f3" if group is None else _colour(group)
        dash = ' stroke-dasharray="3 2"' if group is None else ""
        yield (f'<g><title>{html.escape(tip)}</title><rect x="{x + 1}" y="{y + 1}" width="{w - 2}" '
               f'height="{h - 2}" rx="3" fill="{fill}" stroke="#555"{dash}/>')
        if group is not None:
            yield _hatch_use(group, min(12, (w - 2) // 3), h - 2, x + 1, y + 1)
        if differs:
            corner = min(12, w // 3)
            yield (f'<path d="M{x + w - 1 - corner},{y + 1} h{corner} v{corner} z" '
                   'fill="#c0392b"/>')
        if lines == 3:
            yield _text(x + w / 2, y + 17, f"r{r_} p{p_}", "label")
            yield _text(x + w / 2, y + 33, f"f{flat} d{device}{'*' if differs else ''}",
                        "label strong")
            yield _text(x + w / 2, y + 49, place.replace("&rarr;", "\u2192"), "label")
        elif lines == 1:
            yield _text(x + w / 2, y + h / 2 + 4, f"d{device}", "label small")
        yield "</g>"
    if pattern.is_pairs and len(pattern.device_groups) <= ARROW_LIMIT and lines:
        for a, b in pattern.device_groups:
            if a == b or a not in position or b not in position:
                continue
            yield _arrow(position[a], position[b])


def _arrow(start: tuple[float, float], end: tuple[float, float]) -> str:
    """A curved arrow between two cell centres, bowed to its left so that a pair and its
    reverse are two distinct arcs; the ends stop short of the centres."""
    (x1, y1), (x2, y2) = start, end
    dx, dy = x2 - x1, y2 - y1
    length = math.hypot(dx, dy)
    ux, uy = dx / length, dy / length
    trim = min(18.0, length / 4)
    x1, y1, x2, y2 = x1 + ux * trim, y1 + uy * trim, x2 - ux * trim, y2 - uy * trim
    bow = min(22.0, length / 4)
    cx, cy = (x1 + x2) / 2 + uy * bow, (y1 + y2) / 2 - ux * bow
    return (f'<path d="M{x1:.1f},{y1:.1f} Q{cx:.1f},{cy:.1f} {x2:.1f},{y2:.1f}" fill="none" '
            'stroke="#1d2329" stroke-width="1.6" opacity="0.7" marker-end="url(#arrow)"/>')


def _pair_components(pairs: list[list[int]]) -> list[list[tuple[int, int]]]:
    """The pairs split into connected chains or cycles, in order of first appearance."""
    parent: dict[int, int] = {}

    def root(device: int) -> int:
        parent.setdefault(device, device)
        while parent[device] != device:
            parent[device] = parent[parent[device]]
            device = parent[device]
        return device

    for a, b in pairs:
        parent[root(a)] = root(b)
    components: dict[int, list[tuple[int, int]]] = {}
    for a, b in pairs:
        components.setdefault(root(a), []).append((a, b))
    return list(components.values())


def _chain_text(component: list[tuple[int, int]]) -> str:
    """``0→4→8→0`` for a cycle or chain; the pairs listed when the component is neither."""
    following = dict(component)
    if len(following) != len(component) or len(set(following.values())) != len(component):
        return ", ".join(f"{a}\u2192{b}" for a, b in component)
    targets = set(following.values())
    heads = [a for a in following if a not in targets]
    start = heads[0] if heads else min(following)
    walk = [start]
    while walk[-1] in following and len(walk) <= len(component):
        walk.append(following[walk[-1]])
    return "\u2192".join(map(str, walk))


def _text(x: float, y: float, text: str, css: str, anchor: str = "middle") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" class="{css}" text-anchor="{anchor}">'
            f"{html.escape(text)}</text>")


def _colour(group: int) -> str:
    return PALETTE[group % len(PALETTE)]


def _hatch_use(group: int, w: float, h: float, x: float = 0, y: float = 0) -> str:
    """An overlay telling apart groups whose palette colour repeats (hatch, then dots)."""
    cycle = (group // len(PALETTE)) % 3
    if cycle == 0:
        return ""
    fill = "url(#hatch)" if cycle == 1 else "url(#dots)"
    return f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="2" fill="{fill}"/>'


_KEY = (
    '<p class="key">Each cell is one (replica, partition): <code>r p</code>, then '
    "<code>f</code> flattened id (replica &times; partitions + partition) and <code>d</code> "
    "device id, then <code>g.rank</code> (group and rank in it) or <code>&rarr;d</code> "
    "(permute target). A red corner and <code>*</code> mark cells whose flattened id is not "
    "their device id; dashed grey cells take no part. Hover a cell for its details.</p>\n"
)

_HEAD = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d2329;
       background: #fafbfc; margin: 0; }
main { max-width: 1320px; margin: 0 auto; padding: 18px 28px 60px; }
h1 { font-size: 20px; margin: 8px 0 4px; word-break: break-all; }
h2 { font-size: 16px; margin: 28px 0 8px; border-bottom: 1px solid #d9dee3; padding-bottom: 4px; }
h3 { font-size: 14px; margin: 0 0 4px; }
code { font: 12.5px ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.summary p { margin: 4px 0; }
table { border-collapse: collapse; }
table.collectives { width: 100%; background: #fff; box-shadow: 0 1px 2px #0001; }
table.collectives th { position: sticky; top: 0; background: #eef1f4; text-align: left;
                       font-weight: 600; }
table.collectives th, table.collectives td { padding: 4px 8px; border-bottom: 1px solid #e6e9ec;
                                              vertical-align: top; }
table.collectives tr:hover td { background: #f5f8fb; }
table.collectives code { word-break: break-all; }
.scroll { overflow-x: auto; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.assignment { margin: 8px 0; font-size: 12.5px; }
table.assignment caption { text-align: left; color: #5b6670; white-space: nowrap; }
table.assignment th, table.assignment td { border: 1px solid #d9dee3; padding: 2px 8px;
                                            text-align: center; background: #fff; }
a { color: #0b5cad; text-decoration: none; } a:hover { text-decoration: underline; }
.flag { display: inline-block; font-size: 11.5px; font-weight: 600; padding: 0 6px;
        border-radius: 8px; background: #fde7c7; color: #7a4300; }
.flag.error { background: #f9d0cc; color: #8a1c12; }
.collective { background: #fff; margin: 12px 0; padding: 10px 14px; border-radius: 6px;
              box-shadow: 0 1px 2px #0002; }
.op { color: #0b5cad; font-weight: 500; } .where { color: #5b6670; font-weight: 400; }
.meta { margin: 2px 0 8px; color: #3d4750; }
.pair { display: flex; gap: 24px; align-items: flex-start; flex-wrap: wrap; overflow-x: auto; }
svg.grid { flex: none; }
svg.defs { position: absolute; }
.legend { list-style: none; margin: 0; padding: 0; font-size: 12.5px; }
.legend li { margin: 2px 0; display: flex; gap: 6px; align-items: center; }
.key, .note { color: #5b6670; }
.error { color: #8a1c12; }
text.axis { font: 11px system-ui, sans-serif; fill: #5b6670; }
text.label { font: 11px ui-monospace, Menlo, Consolas, monospace; fill: #111; }
text.strong { font-weight: 700; }
text.small { font-size: 10px; }
</style></head><body><main>
"""
