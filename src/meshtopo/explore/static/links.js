// Linked highlighting and the roving focus: pointing at a cell picks out its group (with
// ranks), or for a permute its pairs, in every view and in the device-assignment table, and
// shows its details; arrow keys move the focus across a view.
import { $, el, plural, shortList, cellInfo } from "/grid.js";
import { neighbour } from "/layout.js";

// The result view's own state: the answer drawn, its arrangements (``views``) and their DOM
// panes (or the canvas above DOM_LIMIT cells), the device-assignment table's cells by
// flattened id (``entries``), a permute's roles, the cell of each device id, the roving focus
// and the elements now carrying highlight classes.
export const resultView = {
  result: null, views: [], panes: [], entries: [], roles: null, deviceCell: null,
  focus: 0, lit: [], canvas: null,
};

function clearLit() {
  for (const [node, classes] of resultView.lit) {
    node.classList.remove(...classes);
    delete node.dataset.shownRank;
  }
  resultView.lit = [];
  $("views").classList.remove("linking");
  $("assignment-view").classList.remove("linking");
}

function lit(node, ...classes) {
  if (!node) return;
  node.classList.add(...classes);
  resultView.lit.push([node, classes]);
}

// The cells cell f is linked to: its device group (with ranks), or for a permute the pairs
// its device is in. Returns [[cell, rank or null], ...].
function linkedCells(result, f) {
  const d = result.device_groups;
  if (!d) return [];
  const device = result.cells.device_id[f];
  if (result.pairs) {
    const out = [];
    for (const [src, dst] of d.groups) {
      if (src === device) out.push([resultView.deviceCell.get(dst), null]);
      if (dst === device) out.push([resultView.deviceCell.get(src), null]);
    }
    return out;
  }
  const g = result.cells.group[f];
  if (g < 0) return [];
  return d.groups[g].map((dev, rank) => [resultView.deviceCell.get(dev), rank]);
}

export function highlight(f) {
  clearLit();
  const result = resultView.result;
  if (!result || f < 0) {
    if (resultView.canvas && !$("canvas-pane").hidden) { resultView.canvas.highlight = -1; resultView.canvas.draw(); }
    return;
  }
  if (!$("canvas-pane").hidden) {
    resultView.canvas.highlight = result.pairs ? -1 : result.cells.group[f];
    resultView.canvas.cursor = f;
    resultView.canvas.draw();
    return;
  }
  $("views").classList.add("linking");
  $("assignment-view").classList.add("linking");
  const linked = linkedCells(result, f);
  for (const pane of resultView.panes) {
    for (const [m, rank] of linked) {
      const cell = pane.cells[m];
      if (!cell) continue;
      lit(cell, "in");
      if (rank !== null) cell.dataset.shownRank = String(rank);
    }
    lit(pane.cells[f], "cur");
    const device = String(result.cells.device_id[f]);
    pane.grid.querySelectorAll("svg.arrows path").forEach((path) => {
      if (path.dataset.source === device || path.dataset.target === device) lit(path, "in");
    });
  }
  for (const [m] of linked) lit(resultView.entries[m], "in");
  lit(resultView.entries[f], "cur");
  const row = resultView.entries[f] && resultView.entries[f].parentElement;
  lit(row, "hl");
}

export function showDetails(f) {
  const result = resultView.result;
  const box = $("details");
  if (!result || f < 0 || f >= result.grid.devices) { box.textContent = "Hover or focus a cell."; return; }
  const c = cellInfo(result, f);
  const lines = [
    `device ${c.device}: replica ${c.replica}, partition ${c.partition}, flattened id ${c.flat} = ${c.replica}·${result.grid.partitions} + ${c.partition}; DA[${c.replica}][${c.partition}] = ${c.device}`,
  ];
  if (c.mesh) lines.push(`mesh position ${c.mesh} (position ${c.position} in row-major order)`);
  const d = result.device_groups;
  if (result.pairs && d) {
    const to = d.groups.filter(([s]) => s === c.device).map(([, t]) => t);
    const from = d.groups.filter(([, t]) => t === c.device).map(([s]) => s);
    lines.push(`sends to ${to.length ? to.join(", ") : "no device"} · receives from ${from.length ? from.join(", ") : "no device"}`);
  } else if (d && c.group >= 0) {
    const members = d.groups[c.group];
    lines.push(`device group g${c.group} ${shortList(members, 16)}: rank ${c.rank} of ${members.length}`);
    if (result.cells.overlaps.includes(f)) lines.push("listed more than once in the device groups (twice in one group, or in two groups)");
  } else {
    lines.push("in no device group");
  }
  if (result.cells.host) {
    const cluster = result.cluster;
    lines.push(`on ${cluster.spec}: host ${result.cells.host[f]}, domain ${result.cells.domain[f]}`);
    const tiers = result.tiers.groups;
    if (tiers && c.group >= 0 && !result.pairs) {
      const link = tiers.link[c.group]
        ? `; slowest link ${tiers.link[c.group]} at ${tiers.link_bandwidth[c.group] / 1e9} GB/s one way` : "";
      const hops = tiers.ring_hops ? `; ring hops ${tiers.ring_hops[c.group]}` : "";
      lines.push(`group g${c.group} tier ${tiers.tier[c.group]}: spans ${plural(tiers.hosts[c.group], "host")}, ` +
        `${plural(tiers.domains[c.group], "domain")}${link}${hops}`);
    } else if (result.tiers.error) {
      lines.push(`no tiers: ${result.tiers.error}`);
    }
  }
  box.replaceChildren(...lines.map((line) => el("div", "", line)));
  Object.assign(box.dataset, { flat: f, device: c.device, group: c.group, rank: c.rank });
  return lines;
}

// The details of cell f in a tooltip beside ``rect`` (the cell as drawn): to its right, or
// its left where the window ends there, kept inside the window. ``rect`` null hides it.
export function showTip(f, rect) {
  const tip = $("cell-tip");
  if (!rect || !resultView.result || f < 0) { tip.hidden = true; return; }
  const lines = showDetails(f);
  tip.replaceChildren(...lines.map((line) => el("div", "", line)));
  tip.dataset.flat = String(f);
  tip.hidden = false;
  const gap = 8;
  const width = tip.offsetWidth;
  const height = tip.offsetHeight;
  const room = window.innerWidth - rect.right - gap;
  const left = room >= width ? rect.right + gap : Math.max(gap, rect.left - gap - width);
  const top = Math.max(gap, Math.min(rect.top, window.innerHeight - height - gap));
  tip.style.left = `${Math.min(left, window.innerWidth - width - gap)}px`;
  tip.style.top = `${top}px`;
}

// Move the roving focus to cell f in the pane holding ``from`` (or the canvas).
export function focusCell(f, pane) {
  resultView.focus = f;
  if (!$("canvas-pane").hidden) {
    resultView.canvas.cursor = f;
    resultView.canvas.reveal(f);
    highlight(f);
    showDetails(f);
    return;
  }
  for (const p of resultView.panes) {
    for (const cell of p.grid.querySelectorAll(".cell[tabindex='0']")) cell.tabIndex = -1;
    if (p.cells[f]) p.cells[f].tabIndex = 0;
  }
  const target = pane ? pane.cells[f] : null;
  if (target) target.focus();
}

const MOVES = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };

export function gridKeys(event, view, f) {
  if (MOVES[event.key]) return neighbour(view, f, ...MOVES[event.key]);
  const row = view.row[f];
  const inRow = (c) => view.at[row * view.cols + c];
  if (event.key === "Home") {
    for (let c = 0; c < view.cols; c++) if (inRow(c) >= 0) return inRow(c);
  }
  if (event.key === "End") {
    for (let c = view.cols - 1; c >= 0; c--) if (inRow(c) >= 0) return inRow(c);
  }
  return null;
}

export function wireViews() {
  const views = $("views");
  const paneOf = (node) => resultView.panes.find((p) => p.node.contains(node));
  views.addEventListener("mouseover", (event) => {
    const cell = event.target.closest(".cell");
    if (cell) { highlight(Number(cell.dataset.flat)); showTip(Number(cell.dataset.flat), cell.getBoundingClientRect()); }
  });
  views.addEventListener("mouseleave", () => {
    const inside = views.contains(document.activeElement);
    highlight(inside ? resultView.focus : -1);
    showDetails(resultView.focus);
    const focused = inside ? document.activeElement.closest(".cell") : null;
    showTip(resultView.focus, focused ? focused.getBoundingClientRect() : null);
  });
  views.addEventListener("focusin", (event) => {
    const cell = event.target.closest(".cell");
    if (!cell) return;
    resultView.focus = Number(cell.dataset.flat);
    highlight(resultView.focus);
    showTip(resultView.focus, cell.getBoundingClientRect());
  });
  views.addEventListener("focusout", (event) => {
    if (!views.contains(event.relatedTarget)) { highlight(-1); showTip(-1, null); }
  });
  views.addEventListener("keydown", (event) => {
    const cell = event.target.closest(".cell");
    if (!cell) return;
    const pane = paneOf(cell);
    const next = gridKeys(event, pane.view, Number(cell.dataset.flat));
    if (next === null) return;
    event.preventDefault();
    focusCell(next, pane);
  });
}
