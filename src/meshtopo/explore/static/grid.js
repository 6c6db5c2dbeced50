// Drawing an /api/groups answer: the views as DOM grids with headers (up to DOM_LIMIT cells),
// permute arrows, the legend, the device-assignment table and the four-mode thumbnails.
// canvas.js draws the views of larger grids.

// Okabe-Ito, then Paul Tol's muted set: sixteen colours that stay apart under the common
// colour-vision deficiencies. Past sixteen groups colours repeat; hovering or focusing a cell
// picks out its group in every view.
export const PALETTE = [
  "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#332288",
  "#117733", "#882255", "#44AA99", "#DDCC77", "#AA4499", "#88CCEE", "#999933", "#CC6677",
];
// Permutes colour cells by their part in the pairs (the arrows carry the pairs themselves).
export const ROLES = {
  both: { colour: "#56B4E9", label: "sends and receives" },
  source: { colour: "#E69F00", label: "sends only" },
  target: { colour: "#009E73", label: "receives only" },
};
export const DOM_LIMIT = 1024;
const BIG_CELLS = 64; // up to here cells print their ids; above, only the device id
const NONE_COLOUR = "#e4e8ed";
const toRgb = (hex) => {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
};
const PALETTE_RGB = PALETTE.map(toRgb);
const NONE_RGB = toRgb(NONE_COLOUR);
export const rgbOf = (g) => (g < 0 ? NONE_RGB : PALETTE_RGB[g % PALETTE_RGB.length]);
export const rgbOfColour = toRgb;

export const $ = (id) => document.getElementById(id);
export const el = (tag, cls, text) => {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
};
export const braces = (ids) => "{" + ids.join(",") + "}";
export const shortList = (ids, n = 8) => braces(ids.length > n ? ids.slice(0, n).concat(["…"]) : ids);
export const plural = (count, word) => `${count} ${word}${count === 1 ? "" : "s"}`;

export const isDark = (hex) => {
  const n = parseInt(hex.slice(1), 16);
  const [r, g, b] = [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.25;
};

// What the cells are coloured by: "group" (a permute: its part in the pairs), or "host" or
// "domain" when the answer places the devices on a cluster (app.js sets ``colourBy``).
export const colourBy = (result) => (result.colourBy && result.cells[result.colourBy] ? result.colourBy : "group");

// Per cell, the index its colour is drawn from (-1: none).
export const colourKeys = (result) => result.cells[colourBy(result)];

// The colour of cell f: its group's, its host's or domain's, or its part in a permute's pairs.
export function colourOf(result, f, roles) {
  if (roles && colourBy(result) === "group") {
    const role = roles[f];
    return role ? ROLES[role].colour : NONE_COLOUR;
  }
  const g = colourKeys(result)[f];
  return g < 0 ? NONE_COLOUR : PALETTE[g % PALETTE.length];
}

// For a permute answer, each cell's part: "both", "source", "target" or null.
export function rolesOf(result, deviceCell) {
  if (!result.pairs || !result.device_groups) return null;
  const roles = new Array(result.grid.devices).fill(null);
  for (const [src, dst] of result.device_groups.groups) {
    const s = deviceCell.get(src);
    const t = deviceCell.get(dst);
    if (s !== undefined) roles[s] = roles[s] === "target" || roles[s] === "both" ? "both" : "source";
    if (t !== undefined) roles[t] = roles[t] === "source" || roles[t] === "both" ? "both" : "target";
  }
  return roles;
}

// What is known of cell f, for the details panel and the labels.
// Cell f's coordinates, every one as the API gives it.
export function cellInfo(result, f) {
  const cells = result.cells;
  const info = {
    flat: f,
    replica: cells.replica[f],
    partition: cells.partition[f],
    device: cells.device_id[f],
    group: cells.group[f],
    rank: cells.rank[f],
    mesh: null,
  };
  const position = cells.mesh_position ? cells.mesh_position[f] : -1;
  if (result.mesh && position >= 0) {
    info.mesh = result.mesh.axes.map((axis, i) => `${axis.name}=${cells.mesh_coordinates[i][f]}`).join(", ");
    info.position = position;
  }
  return info;
}

// ---------------------------------------------------------------- DOM views

function place(node, row, col, rowSpan = 1, colSpan = 1) {
  node.style.gridRow = `${row + 1} / span ${rowSpan}`;
  node.style.gridColumn = `${col + 1} / span ${colSpan}`;
}

// About the width of one character of a header, in pixels.
const LABEL_PX = 7;

// One view as a CSS grid: corner, column headers (one row per level), row headers (one
// column per level), then the cells. Returns {node, cells} with cells[f] the element of f.
function drawView(result, view, roles) {
  const n = result.grid.devices;
  const big = n <= BIG_CELLS;
  const down = view.rowHeads.length;
  const across = view.colHeads.length;
  const pane = el("div", "pane");
  pane.dataset.view = view.key;
  pane.append(el("h3", "", view.title));
  const grid = el("div", "vgrid" + (big ? "" : " small"));
  grid.setAttribute("role", "group");
  grid.setAttribute("aria-label", `devices by ${view.title}`);
  grid.style.gridTemplateColumns = `repeat(${down}, auto) repeat(${view.cols}, var(--cell-w))`;
  // One level of headers each way stays in view while the grid scrolls under it.
  const corner = el("div", "corner" + (down === 1 && across === 1 ? " sticky" : ""), view.corner);
  place(corner, 0, 0, Math.max(across, 1), Math.max(down, 1));
  grid.append(corner);
  // Column labels wider than their cells stand on end, so that 16, 64 or 256 of them stay
  // apart; the full label is also the header's title.
  const cellWidth = big ? 78 : 34;
  view.colHeads.forEach((labels, lvl) => {
    const upright = labels.some(({ label, span }) => label.length * LABEL_PX > span * cellWidth);
    let c = 0;
    for (const { label, span } of labels) {
      const head = el("div", "head col-head" + (upright ? " upright" : "") + (across === 1 ? " sticky" : ""), label);
      head.title = label;
      place(head, lvl, down + c, 1, span);
      grid.append(head);
      c += span;
    }
  });
  view.rowHeads.forEach((labels, lvl) => {
    let r = 0;
    for (const { label, span } of labels) {
      const head = el("div", "head row-head" + (down === 1 ? " sticky" : ""), label);
      place(head, across + r, lvl, span, 1);
      grid.append(head);
      r += span;
    }
  });
  const mismatched = new Set(result.cells.mismatched);
  const overlaps = roles ? new Set() : new Set(result.cells.overlaps);
  const cells = new Array(n);
  for (let f = 0; f < n; f++) {
    if (view.row[f] < 0) continue;
    const info = cellInfo(result, f);
    const cell = el("div", "cell");
    cell.setAttribute("role", "img");
    cell.tabIndex = -1;
    const colour = colourOf(result, f, roles);
    cell.style.background = colour;
    const known = colourBy(result) !== "group" ? true : roles ? roles[f] : info.group >= 0;
    cell.classList.add(!known ? "none" : isDark(colour) ? "dark" : "light");
    if (mismatched.has(f)) cell.classList.add("mismatch");
    if (overlaps.has(f)) cell.classList.add("overlap");
    Object.assign(cell.dataset, {
      flat: f, replica: info.replica, partition: info.partition, device: info.device,
      group: info.group, rank: info.rank, row: view.row[f], col: view.col[f],
      colour: known ? colour : "none", focusKey: `cell:${view.key}:${f}`,
    });
    if (result.cells.host) Object.assign(cell.dataset, { host: result.cells.host[f], domain: result.cells.domain[f] });
    if (big) {
      const rp = el("div", "rp");
      const g = roles ? (roles[f] ? { both: "s+r", source: "send", target: "recv" }[roles[f]] : "–") : info.group < 0 ? "–" : `g${info.group}`;
      rp.append(el("span", "", `r${info.replica} p${info.partition}`), el("span", "grp", g));
      cell.append(el("div", "dev", `d${info.device}`), rp, el("div", "fl", `f${f}`));
    } else {
      cell.append(el("span", "dev", String(info.device)));
    }
    cell.setAttribute("aria-label", `device ${info.device}, flattened id ${f}` +
      (info.mesh ? `, mesh ${info.mesh}` : "") +
      (roles ? "" : info.group >= 0 ? `, group ${info.group} rank ${info.rank}` : ", in no group") +
      (result.cells.host ? `, host ${result.cells.host[f]}, domain ${result.cells.domain[f]}` : ""));
    place(cell, across + view.row[f], down + view.col[f]);
    cells[f] = cell;
    grid.append(cell);
  }
  const wrap = el("div", "vwrap");
  wrap.append(grid);
  pane.append(wrap);
  if (view.missing) pane.append(el("p", "hint", `${plural(view.missing, "device")} of the device assignment not in the mesh`));
  return { node: pane, grid, cells, view };
}

export function drawViews(result, views, roles) {
  const box = $("views");
  const panes = views.map((view) => drawView(result, view, roles));
  box.replaceChildren(...panes.map((p) => p.node));
  return panes;
}

// Arrows source -> target for every device pair of a permute, drawn over each DOM view.
export function drawArrows(result, panes, deviceCell) {
  const NS = "http://www.w3.org/2000/svg";
  for (const pane of panes) {
    pane.grid.querySelector("svg.arrows")?.remove();
    if (!result.pairs || !result.device_groups) continue;
    const svg = document.createElementNS(NS, "svg");
    svg.classList.add("arrows");
    svg.setAttribute("width", String(pane.grid.scrollWidth));
    svg.setAttribute("height", String(pane.grid.scrollHeight));
    const defs = document.createElementNS(NS, "defs");
    const marker = document.createElementNS(NS, "marker");
    const id = `head-${pane.view.key}`;
    Object.entries({ id, viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "10", markerHeight: "10", markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" })
      .forEach(([k, v]) => marker.setAttribute(k, v));
    const tip = document.createElementNS(NS, "path");
    tip.setAttribute("d", "M0,0 L10,5 L0,10 z");
    marker.append(tip);
    defs.append(marker);
    svg.append(defs);
    const centre = (cell) => [cell.offsetLeft + cell.offsetWidth / 2, cell.offsetTop + cell.offsetHeight / 2];
    result.device_groups.groups.forEach(([src, dst], index) => {
      const a = pane.cells[deviceCell.get(src)];
      const b = pane.cells[deviceCell.get(dst)];
      if (!a || !b) return;
      const [x1, y1] = centre(a);
      const [x2, y2] = centre(b);
      const path = document.createElementNS(NS, "path");
      if (a === b) {
        const r = a.offsetHeight / 3;
        path.setAttribute("d", `M${x1 - 4},${y1 - r} a${r},${r} 0 1,1 8,0`);
      } else {
        // Bend to the right of the direction of travel, so that a->b and b->a do not overlap;
        // stop short of the target's centre.
        const dx = x2 - x1;
        const dy = y2 - y1;
        const len = Math.hypot(dx, dy);
        const bend = Math.min(18, len / 4);
        const mx = (x1 + x2) / 2 - (dy / len) * bend;
        const my = (y1 + y2) / 2 + (dx / len) * bend;
        const back = Math.min(14, len / 3);
        const ex = x2 - ((x2 - mx) / Math.hypot(x2 - mx, y2 - my)) * back;
        const ey = y2 - ((y2 - my) / Math.hypot(x2 - mx, y2 - my)) * back;
        path.setAttribute("d", `M${x1},${y1} Q${mx},${my} ${ex},${ey}`);
      }
      path.setAttribute("marker-end", `url(#${id})`);
      path.dataset.pair = String(index);
      path.dataset.source = String(src);
      path.dataset.target = String(dst);
      svg.append(path);
    });
    pane.grid.append(svg);
  }
}

// ---------------------------------------------------------------- legend

export function renderLegend(result, roles, drawnMarks) {
  const legend = $("legend");
  legend.replaceChildren();
  const item = (swatchClass, colour, text) => {
    const node = el("span", "item");
    const sw = el("span", swatchClass);
    if (colour) sw.style.background = colour;
    node.append(sw, text);
    legend.append(node);
    return node;
  };
  const d = result.device_groups;
  const groups = result.cells.group;
  const by = colourBy(result);
  const tiers = result.tiers && result.tiers.groups;
  if (by !== "group") {
    // One swatch per host or domain, with its device count, in id order.
    const keys = result.cells[by];
    const counts = new Map();
    for (const k of keys) counts.set(k, (counts.get(k) || 0) + 1);
    const ids = [...counts.keys()].sort((a, b) => a - b);
    for (const k of ids.slice(0, PALETTE.length)) {
      item("sw", PALETTE[k % PALETTE.length], `${by} ${k} (${plural(counts.get(k), "device")})`).dataset[by] = String(k);
    }
    if (ids.length > PALETTE.length) {
      legend.append(el("span", "item", `… ${ids.length - PALETTE.length} more ${by}s: colours repeat every ${PALETTE.length}`));
    }
  } else if (roles) {
    for (const [key, role] of Object.entries(ROLES)) {
      const count = roles.filter((r) => r === key).length;
      if (count) item("sw", role.colour, `${role.label} (${count})`).dataset.role = key;
    }
    if (d) legend.append(el("span", "item arrow-key", `→ source to target, ${plural(d.count, "device pair")}`));
    const idle = roles.filter((r) => r === null).length;
    if (idle) item("sw none", null, `in no pair (${idle})`);
  } else {
    const shown = d ? Math.min(d.count, PALETTE.length) : 0;
    for (let g = 0; g < shown; g++) {
      const node = item("sw", PALETTE[g], `g${g} ${shortList(d.groups[g], 6)}` + (tiers ? ` · ${tierText(tiers, g)}` : ""));
      node.dataset.group = String(g);
      if (tiers) node.dataset.tier = tiers.tier[g];
    }
    if (d && d.count > PALETTE.length) {
      legend.append(el("span", "item", `… ${d.count - PALETTE.length} more: colours repeat every ${PALETTE.length} groups; hover or focus a cell to pick out its group`));
    }
    if (groups.some((g) => g < 0)) item("sw none", null, "in no group");
    if (result.cells.overlaps.length) item("sw ov", null, `listed more than once (${result.cells.overlaps.length})`);
  }
  if (result.tiers) legend.append(tierSummary(result));
  if (drawnMarks && result.cells.mismatched.length) {
    item("mm", null, `flattened id ≠ device id (${result.cells.mismatched.length} cells)`);
  }
}

// Group g's tier in a few words: "network, 2 hosts, ib".
export function tierText(tiers, g) {
  const link = tiers.link[g] ? `, ${tiers.link[g]}` : "";
  return `${tiers.tier[g]}, ${plural(tiers.hosts[g], "host")}${link}`;
}

// The cluster's name and how many groups fall in each tier, or why there are no tiers.
function tierSummary(result) {
  const { cluster, tiers } = result;
  const node = el("span", "item tiers");
  node.dataset.tiers = tiers.counts ? JSON.stringify(tiers.counts) : "";
  const counts = tiers.counts
    ? Object.entries(tiers.counts).map(([tier, n]) => `${tier} ×${n}`).join(", ")
    : tiers.error;
  node.textContent = `on ${cluster.spec} (${plural(cluster.hosts, "host")} of ${cluster.devices_per_host}, ` +
    `${plural(cluster.domains, "domain")}) · tiers: ${counts}`;
  return node;
}

// ---------------------------------------------------------------- device assignment table

// ``origin``, when given, says where the table came from (a dump's compile options) instead of
// its kind.
export function renderAssignment(result, roles, origin = null) {
  const box = $("assignment-view");
  const { replicas: R, partitions: P } = result.grid;
  $("da-caption").textContent = `${origin || result.device_assignment.kind} · DA[r][p] is the device that runs replica r, partition p`;
  if (R * P > DOM_LIMIT) {
    box.replaceChildren(el("p", "hint", `${R} × ${P}: the table is shown up to ${DOM_LIMIT} devices; the focused cell's entry is in the details above.`));
    return [];
  }
  // Each cell's entry sits at its replica and partition and holds its device id, all three
  // as the answer's ``cells`` give them.
  const { replica, partition, device_id: device } = result.cells;
  const node = el("table", "da");
  const head = el("tr");
  head.append(el("th", "corner", "r \\ p"));
  for (let p = 0; p < P; p++) head.append(el("th", "", `p${p}`));
  node.append(head);
  const rows = Array.from({ length: R }, (_, r) => {
    const row = el("tr");
    row.dataset.replica = String(r);
    row.append(el("th", "", `r${r}`));
    node.append(row);
    return Array.from({ length: P }, () => row.appendChild(el("td")));
  });
  const entries = new Array(R * P);
  for (let f = 0; f < R * P; f++) {
    const td = rows[replica[f]][partition[f]];
    td.textContent = String(device[f]);
    td.dataset.flat = String(f);
    const colour = colourOf(result, f, roles);
    td.style.background = colour;
    td.style.color = isDark(colour) ? "#fff" : "#111";
    entries[f] = td;
  }
  box.replaceChildren(node);
  return entries;
}

// ---------------------------------------------------------------- four modes

function selectorText(m) {
  const ch = m.channel_id ? "channel_id" : "no channel_id";
  const g = m.use_global_device_ids === null ? "flag absent" : `use_global_device_ids=${m.use_global_device_ids}`;
  return `${ch}, ${g}`;
}

// A thumbnail of per-cell groups in ``view``'s arrangement, ``size`` pixels a cell, written
// straight into an ImageData (one pass, no per-cell canvas calls).
function paintThumb(canvas, groups, view, size) {
  const width = view.cols * size;
  canvas.width = width;
  canvas.height = view.rows * size;
  const ctx = canvas.getContext("2d");
  const image = ctx.createImageData(width, canvas.height);
  const data = image.data;
  data.fill(255);
  const inner = size >= 6 ? size - 1 : size;
  for (let f = 0; f < groups.length; f++) {
    if (view.row[f] < 0) continue;
    const [r, g, b] = rgbOf(groups[f]);
    for (let y = 0; y < inner; y++) {
      let i = ((view.row[f] * size + y) * width + view.col[f] * size) * 4;
      for (let x = 0; x < inner; x++, i += 4) { data[i] = r; data[i + 1] = g; data[i + 2] = b; }
    }
  }
  ctx.putImageData(image, 0, 0);
}

// ``choose(mode)`` is called when a column is picked (click, Enter or Space).
export function renderModes(result, view, choose) {
  const box = $("modes");
  box.replaceChildren();
  const size = Math.max(1, Math.min(22, Math.floor(200 / view.cols)));
  for (const m of result.modes || []) {
    const col = el("div", "mode-col" + (m.name === result.mode.name ? " current" : ""));
    col.dataset.mode = m.name;
    col.dataset.focusKey = `mode:${m.name}`;
    col.tabIndex = 0;
    col.setAttribute("role", "button");
    col.setAttribute("aria-pressed", String(m.name === result.mode.name));
    col.title = `dial ${selectorText(m)}`;
    col.addEventListener("click", () => choose(m));
    col.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); choose(m); }
    });
    col.dataset.groups = JSON.stringify(m.group);
    col.append(el("h3", "", m.name), el("div", "sel", selectorText(m)));
    if (m.error) {
      col.append(el("div", "err", m.error));
    } else {
      const canvas = document.createElement("canvas");
      // A permute's thumbnail shows which devices are in a pair, one colour for all.
      paintThumb(canvas, result.pairs ? m.group.map((g) => (g < 0 ? -1 : 0)) : m.group, view, size);
      col.append(canvas);
      const sizes = m.sizes.length === 1 ? `of ${m.sizes[0]}` : `of sizes ${m.sizes.join(", ")}`;
      col.append(el("div", "cnt", result.pairs ? `${plural(m.count, "device pair")}; coloured: in a pair`
        : `${plural(m.count, "group")} ${sizes}`));
    }
    box.append(col);
  }
}
