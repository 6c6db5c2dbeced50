// Drawing the device grid, its legend and the four-mode thumbnails from an /api/groups answer.
// Cells are DOM elements (with data attributes) up to DOM_LIMIT, one canvas above that.

// Okabe-Ito, then Paul Tol's muted set: sixteen colours that stay apart under the common
// colour-vision deficiencies. Colours repeat past sixteen groups; cells also print their group.
export const PALETTE = [
  "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#332288",
  "#117733", "#882255", "#44AA99", "#DDCC77", "#AA4499", "#88CCEE", "#999933", "#CC6677",
];
const NONE_COLOUR = "#e4e8ed";
const DOM_LIMIT = 1024; // cells drawn as DOM elements up to here, on a canvas above

export const $ = (id) => document.getElementById(id);
export const el = (tag, cls, text) => {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
};
const colourOf = (g) => (g < 0 ? NONE_COLOUR : PALETTE[g % PALETTE.length]);
const isDark = (hex) => {
  const n = parseInt(hex.slice(1), 16);
  const [r, g, b] = [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.25;
};
export const braces = (ids) => "{" + ids.join(",") + "}";
export const shortList = (ids, n = 8) => braces(ids.length > n ? ids.slice(0, n).concat(["…"]) : ids);

export function layoutOf(result) {
  return result.grid.layout;
}

function cellInfo(result, f) {
  const P = result.grid.partitions;
  const info = {
    flat: f,
    replica: Math.floor(f / P),
    partition: f % P,
    device: result.cells.device_id[f],
    group: result.cells.group[f],
    rank: result.cells.rank[f],
  };
  if (result.mesh) {
    const coords = [];
    let rest = f;
    for (let i = result.mesh.axes.length - 1; i >= 0; i--) {
      const axis = result.mesh.axes[i];
      coords.unshift(`${axis.name}=${rest % axis.size}`);
      rest = Math.floor(rest / axis.size);
    }
    info.mesh = coords.join(", ");
    info.meshDevice = result.mesh.devices[f];
  }
  return info;
}

export function tipText(result, f) {
  const c = cellInfo(result, f);
  const lines = [
    `device ${c.device}` + (c.group >= 0 ? ` · group ${c.group}, rank ${c.rank}` : " · in no group"),
    `replica ${c.replica} · partition ${c.partition}`,
    `flattened id ${c.flat}` + (c.flat !== c.device ? "  (≠ device id)" : ""),
  ];
  if (c.mesh) lines.push(`mesh ${c.mesh} · id in mesh ${c.meshDevice}`);
  if (result.cells.overlaps.includes(f)) lines.push("in more than one device group");
  return lines.join("\n");
}

export function renderGrid(result) {
  const n = result.grid.devices;
  const { cols } = layoutOf(result);
  const grid = $("grid");
  const canvas = $("grid-canvas");
  $("grid-caption").textContent =
    `${result.grid.replicas} replica${result.grid.replicas === 1 ? "" : "s"} × ` +
    `${result.grid.partitions} partition${result.grid.partitions === 1 ? "" : "s"}` +
    (result.grid.layout.by === "mesh" ? " · drawn in mesh shape" : "") +
    (result.grid.layout.by === "wrapped" ? ` · wrapped ${cols} across` : "") +
    " · cells in flattened-id order";
  grid.dataset.groups = JSON.stringify(result.cells.group);
  grid.dataset.devices = String(n);
  if (n <= DOM_LIMIT) {
    canvas.hidden = true;
    grid.hidden = false;
    grid.dataset.render = "dom";
    drawDomGrid(result, grid, cols);
  } else {
    grid.hidden = true;
    grid.replaceChildren();
    grid.dataset.render = "canvas";
    canvas.hidden = false;
    const count = result.device_groups ? result.device_groups.count : 0;
    canvas.setAttribute("aria-label", `${n} devices in ${count} device groups; hover a cell for its ids`);
    drawCanvasGrid(result);
  }
}

function drawDomGrid(result, grid, cols) {
  grid.style.gridTemplateColumns = `repeat(${cols}, 78px)`;
  const mismatched = new Set(result.cells.mismatched);
  const overlaps = new Set(result.cells.overlaps);
  const frag = document.createDocumentFragment();
  for (let f = 0; f < result.grid.devices; f++) {
    const c = cellInfo(result, f);
    const cell = el("div", "cell");
    cell.setAttribute("role", "listitem");
    const colour = colourOf(c.group);
    if (c.group < 0) cell.classList.add("none");
    else {
      cell.style.background = colour;
      cell.classList.add(isDark(colour) ? "dark" : "light");
    }
    if (mismatched.has(f)) cell.classList.add("mismatch");
    if (overlaps.has(f)) cell.classList.add("overlap");
    Object.assign(cell.dataset, {
      flat: f, replica: c.replica, partition: c.partition, device: c.device,
      group: c.group, rank: c.rank, colour: c.group < 0 ? "none" : colour,
    });
    const rp = el("div", "rp");
    rp.append(el("span", "", `r${c.replica} p${c.partition}`), el("span", "grp", c.group < 0 ? "–" : `g${c.group}`));
    cell.append(el("div", "dev", `d${c.device}`), rp, el("div", "fl", `f${c.flat}`));
    cell.title = tipText(result, f);
    cell.setAttribute("aria-label", cell.title.replaceAll("\n", "; "));
    frag.append(cell);
  }
  grid.replaceChildren(frag);
}

function canvasCellSize(cols, width, lo, hi) {
  return Math.max(lo, Math.min(hi, Math.floor(width / cols)));
}

const RGB = PALETTE.map((hex) => {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
});
const NONE_RGB = [0xe4, 0xe8, 0xed];
const DARK = PALETTE.map(isDark);

// Fill one square per cell straight into an ImageData: one pass, no per-cell canvas calls.
// Cells not in ``active`` (when given) are faded towards white.
// With ``devices``, cells whose device id differs from their flattened id get a corner mark.
function paintCells(ctx, groups, cols, size, gap, active, devices) {
  const width = cols * size;
  const height = Math.ceil(groups.length / cols) * size;
  const image = ctx.createImageData(width, height);
  const data = image.data;
  data.fill(255);
  for (let f = 0; f < groups.length; f++) {
    const g = groups[f];
    let [r, gr, b] = g < 0 ? NONE_RGB : RGB[g % RGB.length];
    if (active && !active.has(f)) {
      r = 255 - (255 - r) * 0.15; gr = 255 - (255 - gr) * 0.15; b = 255 - (255 - b) * 0.15;
    }
    const x0 = (f % cols) * size;
    const y0 = Math.floor(f / cols) * size;
    const inner = size - gap;
    const corner = devices && devices[f] !== f ? 2 * inner - 6 : Infinity;
    const m = g >= 0 && DARK[g % DARK.length] ? 255 : 17;
    for (let y = 0; y < inner; y++) {
      let i = ((y0 + y) * width + x0) * 4;
      for (let x = 0; x < inner; x++, i += 4) {
        if (x + y >= corner) { data[i] = m; data[i + 1] = m; data[i + 2] = m; }
        else { data[i] = r; data[i + 1] = gr; data[i + 2] = b; }
      }
    }
  }
  ctx.putImageData(image, 0, 0);
}

export function drawCanvasGrid(result, active) {
  const canvas = $("grid-canvas");
  const { rows, cols } = layoutOf(result);
  const width = Math.max(320, $("grid-wrap").clientWidth - 26);
  const size = canvasCellSize(cols, width, 2, 28);
  const gap = size >= 8 ? 1 : 0;
  canvas.width = cols * size;
  canvas.height = rows * size;
  canvas.dataset.cell = String(size);
  const ctx = canvas.getContext("2d");
  const groups = result.cells.group;
  paintCells(ctx, groups, cols, size, gap, active, size >= 14 ? result.cells.device_id : null);
  if (size >= 4) drawBoundaries(ctx, groups, rows, cols, size);
}

// A line wherever two neighbouring cells belong to different device groups, so that the
// groups stay readable when colours repeat.
function drawBoundaries(ctx, groups, rows, cols, size) {
  ctx.fillStyle = "#14202e";
  const w = size >= 10 ? 2 : 1;
  for (let f = 0; f < groups.length; f++) {
    const c = f % cols;
    const r = Math.floor(f / cols);
    if (c + 1 < cols && f + 1 < groups.length && groups[f + 1] !== groups[f]) {
      ctx.fillRect((c + 1) * size - w / 2 - 0.5, r * size, w, size);
    }
    if (r + 1 < rows && f + cols < groups.length && groups[f + cols] !== groups[f]) {
      ctx.fillRect(c * size, (r + 1) * size - w / 2 - 0.5, size, w);
    }
  }
}

export function renderLegend(result) {
  const legend = $("legend");
  legend.replaceChildren();
  const d = result.device_groups;
  const shown = d ? Math.min(d.count, PALETTE.length) : 0;
  for (let g = 0; g < shown; g++) {
    const item = el("span", "item");
    const sw = el("span", "sw");
    sw.style.background = colourOf(g);
    item.append(sw, `g${g} ${shortList(d.groups[g], 6)}`);
    legend.append(item);
  }
  if (d && d.count > PALETTE.length) {
    legend.append(el("span", "item", `… ${d.count - PALETTE.length} more; colours repeat every ${PALETTE.length} groups`));
  }
  const none = el("span", "item");
  none.append(el("span", "sw none"), "in no group");
  const mm = el("span", "item");
  mm.append(el("span", "mm"), `flattened id ≠ device id (${result.cells.mismatched.length} cells)`);
  legend.append(none, mm);
}

// ---------------------------------------------------------------- four modes

function selectorText(m) {
  const ch = m.channel_id ? "channel_id" : "no channel_id";
  const g = m.use_global_device_ids === null ? "flag absent" : `use_global_device_ids=${m.use_global_device_ids}`;
  return `${ch}, ${g}`;
}

// ``choose(mode)`` is called when a column is picked (click, Enter or Space).
export function renderModes(result, choose) {
  const box = $("modes");
  box.replaceChildren();
  const { rows, cols } = layoutOf(result);
  for (const m of result.modes || []) {
    const col = el("div", "mode-col" + (m.name === result.mode.name ? " current" : ""));
    col.dataset.mode = m.name;
    col.tabIndex = 0;
    col.setAttribute("role", "button");
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
      const size = canvasCellSize(cols, 200, 1, 22);
      canvas.width = cols * size;
      canvas.height = rows * size;
      paintCells(canvas.getContext("2d"), m.group, cols, size, size >= 6 ? 1 : 0, null);
      col.append(canvas);
      const sizes = m.sizes.length === 1 ? `of ${m.sizes[0]}` : `of sizes ${m.sizes.join(", ")}`;
      col.append(el("div", "cnt", `${m.count} group${m.count === 1 ? "" : "s"} ${sizes}`));
    }
    box.append(col);
  }
}
