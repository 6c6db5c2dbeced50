// meshtopo explorer: every number shown here comes from the library through /api/*.
// This module holds the page's state (the dial, mirrored in the URL fragment), reads and sets
// the controls, talks to the API, links the views and plays the step-through; layout.js
// places cells, grid.js and canvas.js draw them.
import {
  $, el, braces, shortList, plural, cellInfo, rolesOf, drawViews, drawArrows, renderLegend,
  renderAssignment, renderModes, DOM_LIMIT, PALETTE,
} from "/grid.js";
import { viewsOf, neighbour } from "/layout.js";
import { CanvasView } from "/canvas.js";

const STEP_MS = 750;
const DEBOUNCE_MS = 250;
// The dial a first visit opens on: a named mesh as JAX writes its collectives.
const DEFAULT_UI = {
  kind: "mesh", replicas: "2", partitions: "4",
  axes: [{ name: "data", size: "2" }, { name: "model", size: "4" }],
  order: "default", perm: "", meshReplicas: "1", assignment: "mesh", table: "",
  opcode: "", channel: true, ugdi: "true", src: "over", groups: "{{0,1}}", over: ["model"],
  shapes: null, view: "",
};
const PANELS = ["banner", "hlo-line", "facts", "grid-head", "views-box", "details-card",
  "assignment-card", "steps-card", "modes-card"];

const state = {
  ui: null,
  result: null, // last good /api/groups answer
  request: null,
  origin: null, // the dump collective being shown, if any
  step: -1, // -1: all groups shown
  player: null,
  pending: null, // the debounce timer
  seq: 0,
  controller: null,
  renders: 0,
  timing: null,
  views: [],
  panes: [],
  entries: [], // device-assignment table cells by flattened id
  roles: null,
  deviceCell: null, // Map device id -> flattened index
  focus: 0, // the roving cell (flattened id)
  lit: [], // elements carrying highlight classes
  dump: null,
  canvas: null,
};

// ---------------------------------------------------------------- the dial <-> controls

function radio(name) {
  return document.querySelector(`input[name=${name}]:checked`).value;
}

function setRadio(name, value) {
  const input = document.querySelector(`input[name=${name}][value="${value}"]`);
  if (input) input.checked = true;
}

function readUi() {
  return {
    kind: radio("gridkind"),
    replicas: $("replicas").value,
    partitions: $("partitions").value,
    axes: [...document.querySelectorAll("#mesh-axes .axis")].map((row) => ({
      name: row.querySelector("input[type=text]").value.trim(),
      size: row.querySelector("input[type=number]").value,
    })),
    order: $("mesh-order").value,
    perm: $("mesh-perm").value,
    meshReplicas: $("mesh-replicas").value,
    assignment: $("assignment").value,
    table: $("assignment-table").value,
    opcode: $("opcode").value,
    channel: $("channel").checked,
    ugdi: radio("ugdi"),
    src: radio("groupsrc"),
    groups: $("groups").value,
    over: [...document.querySelectorAll("#over-axes input:checked")].map((i) => i.value),
    shapes: state.ui ? state.ui.shapes : null,
    view: state.ui ? state.ui.view : "",
  };
}

function applyUi(ui) {
  setRadio("gridkind", ui.kind);
  $("replicas").value = ui.replicas;
  $("partitions").value = ui.partitions;
  $("mesh-axes").replaceChildren();
  for (const axis of ui.axes) addAxis(axis.name, axis.size);
  $("mesh-order").value = ui.order;
  $("mesh-perm").value = ui.perm;
  $("mesh-replicas").value = ui.meshReplicas;
  $("assignment").value = ui.assignment;
  $("assignment-table").value = ui.table;
  $("opcode").value = [...$("opcode").options].some((o) => o.value === ui.opcode) ? ui.opcode : "";
  $("channel").checked = ui.channel;
  setRadio("ugdi", ui.ugdi);
  setRadio("groupsrc", ui.src);
  $("groups").value = ui.groups;
  syncOverAxes(ui.over);
  state.ui = ui;
  syncVisibility();
}

// An integer field as the API takes it: digits as a number, anything else as typed, so that
// the answer can name it ("is empty", "must be an integer, got the string ...").
function integer(text) {
  return /^\s*\d{1,15}\s*$/.test(text) ? Number(text) : text;
}

function numbers(text) {
  return text.split(/[^0-9-]+/).filter((s) => s !== "").map(Number);
}

function readTable(text) {
  const trimmed = text.trim();
  if (trimmed.startsWith("[")) return JSON.parse(trimmed);
  return trimmed.split(/\n+/).filter((line) => line.trim()).map(numbers);
}

function toBody(ui) {
  const body = {};
  if (ui.kind === "mesh") {
    body.mesh = {
      axes: ui.axes.map((a) => ({ name: a.name, size: integer(a.size) })),
      device_order: ui.order === "custom" ? numbers(ui.perm) : ui.order,
    };
    body.replicas = integer(ui.meshReplicas);
  } else {
    body.replicas = integer(ui.replicas);
    body.partitions = integer(ui.partitions);
  }
  if (ui.assignment === "custom") {
    try {
      body.device_assignment = readTable(ui.table);
    } catch (error) {
      body.device_assignment = "unreadable table: " + error.message;
    }
  } else {
    body.device_assignment = ui.assignment;
  }
  body.opcode = ui.opcode || null;
  body.channel_id = ui.channel;
  body.use_global_device_ids = ui.ugdi === "absent" ? null : ui.ugdi === "true";
  if (ui.src === "over") body.over = ui.over;
  else body.groups = ui.groups;
  if (ui.shapes) body.shapes = ui.shapes;
  return body;
}

// ---------------------------------------------------------------- the dial <-> the URL

function toHash(ui) {
  const q = new URLSearchParams();
  q.set("kind", ui.kind);
  if (ui.kind === "mesh") {
    q.set("axes", ui.axes.map((a) => `${a.name}:${a.size}`).join(","));
    q.set("order", ui.order === "custom" ? ui.perm.trim().split(/[\s,]+/).join(".") : ui.order);
    q.set("mr", ui.meshReplicas);
  } else {
    q.set("r", ui.replicas);
    q.set("p", ui.partitions);
  }
  q.set("da", ui.assignment);
  if (ui.assignment === "custom") q.set("table", ui.table);
  if (ui.opcode) q.set("op", ui.opcode);
  q.set("ch", ui.channel ? "1" : "0");
  q.set("ugdi", ui.ugdi);
  if (ui.src === "over") q.set("over", ui.over.join(","));
  else q.set("groups", ui.groups);
  if (ui.shapes) q.set("shapes", `${ui.shapes.operand.join("x")}>${ui.shapes.result.join("x")}@${ui.shapes.dimension}`);
  if (ui.view) q.set("view", ui.view);
  return "#" + q.toString();
}

function fromHash(hash) {
  const q = new URLSearchParams(hash.replace(/^#/, ""));
  const ui = structuredClone(DEFAULT_UI);
  if (!q.has("kind")) return ui;
  const pick = (key, allowed, fallback) => (allowed.includes(q.get(key)) ? q.get(key) : fallback);
  ui.kind = pick("kind", ["mesh", "grid"], ui.kind);
  if (q.has("axes")) {
    ui.axes = q.get("axes").split(",").filter(Boolean).map((item) => {
      const [name, size] = item.split(":");
      return { name: name || "", size: size || "" };
    });
  }
  const order = q.get("order") || "default";
  if (order === "default" || order === "reversed") ui.order = order;
  else { ui.order = "custom"; ui.perm = order.split(".").join(" "); }
  ui.meshReplicas = q.get("mr") ?? ui.meshReplicas;
  ui.replicas = q.get("r") ?? ui.replicas;
  ui.partitions = q.get("p") ?? ui.partitions;
  ui.assignment = pick("da", ["mesh", "default", "row_major", "custom"], ui.kind === "mesh" ? "mesh" : "default");
  ui.table = q.get("table") ?? "";
  ui.opcode = q.get("op") ?? "";
  ui.channel = q.get("ch") === "1";
  ui.ugdi = pick("ugdi", ["absent", "false", "true"], "absent");
  if (q.has("groups") || ui.kind === "grid") { ui.src = "text"; ui.groups = q.get("groups") ?? ui.groups; }
  else { ui.src = "over"; ui.over = (q.get("over") || "").split(",").filter(Boolean); }
  const shapes = /^([\dx]*)>([\dx]*)@(\d+)$/.exec(q.get("shapes") || "");
  const dims = (text) => text.split("x").filter(Boolean).map(Number);
  ui.shapes = shapes ? { operand: dims(shapes[1]), result: dims(shapes[2]), dimension: Number(shapes[3]) } : null;
  ui.view = pick("view", ["mesh", "flat", "device"], "");
  return ui;
}

function writeHash() {
  const hash = toHash(state.ui);
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

// ---------------------------------------------------------------- talking to the API

async function postJson(path, body, signal) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
    signal,
  });
  const value = await response.json();
  if (!response.ok) {
    const error = new Error(value.error ? value.error.message : `HTTP ${response.status}`);
    error.detail = value.error || {};
    error.status = response.status;
    throw error;
  }
  return value;
}

// A control changed by hand: the dial is no longer the dump's collective.
function edited(debounced) {
  state.origin = null;
  if (debounced) {
    clearTimeout(state.pending);
    document.body.dataset.pending = "1";
    state.pending = setTimeout(() => update(), DEBOUNCE_MS);
  } else {
    update();
  }
}

async function update() {
  clearTimeout(state.pending);
  delete document.body.dataset.pending;
  const t0 = performance.now();
  const seq = ++state.seq;
  if (state.controller) state.controller.abort();
  state.controller = new AbortController();
  state.ui = readUi();
  writeHash();
  const request = toBody(state.ui);
  document.body.dataset.state = "loading";
  let result;
  try {
    result = await postJson("/api/groups", request, state.controller.signal);
  } catch (error) {
    if (error.name === "AbortError" || seq !== state.seq) return;
    showRequestError(error);
    document.body.dataset.answered = String(seq);
    return;
  }
  if (seq !== state.seq) return;
  const t1 = performance.now();
  state.request = request;
  render(result);
  document.body.dataset.answered = String(seq);
  const t2 = performance.now();
  requestAnimationFrame(() => {
    const t3 = performance.now();
    state.timing = { api: t1 - t0, render: t2 - t1, total: t3 - t0, devices: result.grid.devices, seq };
    $("timing").textContent =
      `${result.grid.devices} devices · api ${state.timing.api.toFixed(0)} ms · ` +
      `shown in ${state.timing.total.toFixed(0)} ms`;
    document.body.dataset.timing = JSON.stringify(state.timing);
  });
}

function setStale(reason) {
  for (const id of PANELS) {
    if (reason) $(id).dataset.stale = reason;
    else delete $(id).dataset.stale;
  }
}

function showRequestError(error) {
  stopPlaying();
  const kind = error.detail && error.detail.kind ? `${error.detail.kind}: ` : "";
  $("input-error").textContent = kind + error.message;
  $("input-error").hidden = false;
  $("request-error").textContent = error.message;
  $("request-error").hidden = false;
  setStale("out of date: the dial above has an error; this shows the last answer");
  // Checks speak for the current dial: its error.
  const item = el("li", "bad");
  item.append(el("span", "src", "request"), kind + error.message);
  $("findings").replaceChildren(item);
  document.body.dataset.state = "error";
  document.body.dataset.renders = String(++state.renders);
}

// ---------------------------------------------------------------- rendering

function render(result) {
  const focusKey = document.activeElement && document.activeElement.dataset
    ? document.activeElement.dataset.focusKey : undefined;
  state.result = result;
  stopPlaying();
  state.step = -1;
  state.lit = [];
  $("input-error").hidden = true;
  $("request-error").hidden = true;
  setStale(null);
  state.deviceCell = new Map(result.cells.device_id.map((d, f) => [d, f]));
  state.roles = rolesOf(result, state.deviceCell);
  state.views = viewsOf(result);
  if (state.focus >= result.grid.devices) state.focus = 0;
  renderMode(result);
  $("origin").textContent = state.origin ? `from the dump: ${state.origin}` : "";
  $("origin").hidden = !state.origin;
  renderShapes(result);
  renderFacts(result);
  renderGrid(result);
  state.entries = renderAssignment(result, state.roles);
  renderFindings(result);
  renderSteps(result);
  renderModes(result, state.views[0], chooseMode);
  renderExamples(result);
  showDetails(state.focus);
  if (focusKey) {
    const again = document.querySelector(`[data-focus-key="${focusKey}"]`);
    if (again) again.focus({ preventScroll: true });
  }
  document.body.dataset.state = "ready";
  document.body.dataset.renders = String(++state.renders);
}

function renderMode(result) {
  const mode = result.mode;
  const name = $("mode-name");
  const badge = $("mode-badge");
  if (mode.name) {
    name.textContent = mode.name;
    name.classList.remove("error");
    const opcode = (state.request && state.request.opcode) || "this opcode";
    const reading = mode.flag_reading === "plain_bool"
      ? `${opcode} holds use_global_device_ids as a plain bool (absent reads as false)`
      : `${opcode} ignores use_global_device_ids`;
    const alone = mode.fields_mode || "no mode";
    $("mode-why").textContent = mode.by !== "opcode"
      ? "from channel_id and use_global_device_ids"
      : alone !== mode.name ? `${reading}; the two fields alone give ${alone}` : `by ${opcode}'s rule`;
    $("mode-explain").textContent = mode.explanation;
    badge.className = "mode-badge";
    badge.replaceChildren("mode: ", el("b", "", mode.name));
  } else {
    name.textContent = "no mode";
    name.classList.add("error");
    $("mode-why").textContent = "";
    $("mode-explain").textContent = mode.error;
    badge.className = "mode-badge error";
    badge.textContent = mode.error;
  }
  document.body.dataset.mode = mode.name || "";
}

function renderShapes(result) {
  const note = $("shapes-note");
  const shapes = state.ui.shapes;
  if (result.shapes === "given" && shapes) {
    const f32 = (dims) => `f32[${dims.join(",")}]`;
    $("shapes-text").textContent = `Shapes as in the dump's instruction: operand ${f32(shapes.operand)}, result ${f32(shapes.result)}; the checks include XLA's shape rules.`;
    $("shapes-fit").hidden = false;
    note.hidden = false;
  } else if (state.origin) {
    $("shapes-text").textContent = "The dump's instruction has shapes the dial does not take (a tuple, several operands or an async piece): the dial writes shapes fitted to the groups, so only the group checks apply.";
    $("shapes-fit").hidden = true;
    note.hidden = false;
  } else {
    note.hidden = true;
  }
  note.dataset.shapes = result.shapes;
}

function renderFacts(result) {
  $("f-hlo").textContent = result.hlo_instruction || "";
  const w = result.written_groups;
  $("f-written").textContent = w.text;
  $("f-compact").textContent = w.compact || "none (not an iota list)";
  const d = result.device_groups;
  if (d) {
    const sizes = [...new Set(d.groups.map((g) => g.length))];
    $("f-count").textContent = `${plural(d.count, "group")}` +
      (sizes.length === 1 ? ` of ${sizes[0]}` : ` of sizes ${sizes.join(", ")}`);
    $("f-dcompact").textContent = d.compact || "none";
  } else {
    $("f-count").textContent = "none";
    $("f-dcompact").textContent = "-";
  }
}

function renderGrid(result) {
  const n = result.grid.devices;
  const views = state.views;
  $("grid-caption").textContent =
    `${plural(result.grid.replicas, "replica")} × ${plural(result.grid.partitions, "partition")}` +
    (result.mesh ? ` · mesh ${result.mesh.axes.map((a) => `${a.name}=${a.size}`).join(", ")}` : "");
  const canvasMode = n > DOM_LIMIT;
  $("views").hidden = canvasMode;
  $("canvas-pane").hidden = !canvasMode;
  $("views-box").dataset.render = canvasMode ? "canvas" : "dom";
  $("cell-key").hidden = canvasMode;
  if (!canvasMode) {
    state.panes = drawViews(result, views, state.roles);
    for (const pane of state.panes) {
      const cell = pane.cells[state.focus];
      if (cell) cell.tabIndex = 0;
    }
    drawArrows(result, state.panes, state.deviceCell);
    renderLegend(result, state.roles, true);
    return;
  }
  state.panes = [];
  $("views").replaceChildren();
  const choices = $("canvas-views");
  choices.replaceChildren();
  if (!views.some((v) => v.key === state.ui.view)) state.ui.view = views[0].key;
  for (const view of views) {
    const label = el("label");
    const input = el("input");
    input.type = "radio";
    input.name = "canvasview";
    input.value = view.key;
    input.checked = view.key === state.ui.view;
    input.addEventListener("change", () => { state.ui.view = view.key; writeHash(); showCanvas(); });
    label.append(input, view.title);
    choices.append(label);
  }
  showCanvas();
  renderLegend(result, state.roles, state.canvas.scale >= 14);
}

function canvasViewOf() {
  return state.views.find((v) => v.key === state.ui.view) || state.views[0];
}

function showCanvas() {
  const view = canvasViewOf();
  const canvas = $("grid-canvas");
  const count = state.result.device_groups ? state.result.device_groups.count : 0;
  canvas.setAttribute("aria-label", `${state.result.grid.devices} devices in ${plural(count, "device group")} by ${view.title}; arrow keys move the focused cell`);
  canvas.dataset.view = view.key;
  const span = (heads) => heads.map((lvl) => `${lvl[0].label} … ${lvl[lvl.length - 1].label}`).join(" / ");
  $("canvas-axes").textContent = `rows ${span(view.rowHeads)} · columns ${span(view.colHeads)}`;
  state.canvas.cursor = state.focus;
  state.canvas.show(state.result, view, state.roles);
  zoomReadout();
}

function zoomReadout() {
  $("zoom-level").textContent = `${state.canvas.scale.toFixed(state.canvas.scale < 10 ? 1 : 0)} px a cell`;
}

function renderFindings(result) {
  const list = $("findings");
  list.replaceChildren();
  delete $("checks-card").dataset.stale;
  const findings = result.findings || [];
  if (!findings.length) {
    list.append(el("li", "ok", "No findings: the groups pass the checks for this grid."));
    return;
  }
  for (const finding of findings) {
    const item = el("li", "bad");
    item.append(el("span", "src", finding.source), finding.message);
    list.append(item);
  }
}

// ---------------------------------------------------------------- examples that fit the dial

function examplesFor(result) {
  const { replicas: R, partitions: P } = result.grid;
  const mode = result.mode.name;
  const n = mode === "kCrossPartition" ? P : mode === "kFlattenedID" ? R * P : R;
  const ids = Array.from({ length: n }, (_, i) => i);
  const out = [];
  if (result.pairs) {
    if (n >= 2 && n <= 16) out.push(["ring", braces(ids.map((i) => braces([i, (i + 1) % n])))]);
    if (n >= 2) out.push(["swap", "{{0,1},{1,0}}"]);
    return out;
  }
  if (n === 1) out.push(["explicit", "{{0}}"]);
  else if (n % 2 === 0 && n <= 8) out.push(["explicit", braces(ids.filter((i) => i % 2 === 0).map((i) => braces([i, i + 1])))]);
  else if (n % 2 === 0 && n <= 32) out.push(["explicit", braces([braces(ids.slice(0, n / 2)), braces(ids.slice(n / 2))])]);
  if (n % 2 === 0 && n >= 4) out.push(["iota", `[${n / 2},2]<=[2,${n / 2}]T(1,0)`]);
  else out.push(["iota", `[1,${n}]<=[${n}]`]);
  if (result.mesh && n === result.grid.devices) {
    const axes = result.mesh.axes;
    out.push(["mesh-axes", `mesh[${axes.map((a) => `'${a.name}'=${a.size}`).join(",")}] {'${axes[0].name}'}`]);
  } else if (n % 2 === 0 && n >= 4) {
    out.push(["mesh-axes", `mesh['a'=2,'b'=${n / 2}] {'a'}`]);
  } else {
    out.push(["mesh-axes", `mesh['a'=${n}] {'a'}`]);
  }
  if (mode !== "kFlattenedID") out.push(["empty", "{}"]);
  return out;
}

function renderExamples(result) {
  const box = $("examples");
  box.replaceChildren("try: ");
  examplesFor(result).forEach(([name, text], index) => {
    const button = el("button", "link", name);
    button.type = "button";
    button.title = text;
    button.dataset.example = text;
    button.dataset.focusKey = `example:${index}`;
    button.addEventListener("click", () => {
      setRadio("groupsrc", "text");
      $("groups").value = text;
      syncVisibility();
      edited(false);
    });
    box.append(button, " ");
  });
}

// ---------------------------------------------------------------- linked highlighting

function clearLit() {
  for (const [node, classes] of state.lit) {
    node.classList.remove(...classes);
    delete node.dataset.shownRank;
  }
  state.lit = [];
  $("views").classList.remove("linking");
  $("assignment-view").classList.remove("linking");
}

function lit(node, ...classes) {
  if (!node) return;
  node.classList.add(...classes);
  state.lit.push([node, classes]);
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
      if (src === device) out.push([state.deviceCell.get(dst), null]);
      if (dst === device) out.push([state.deviceCell.get(src), null]);
    }
    return out;
  }
  const g = result.cells.group[f];
  if (g < 0) return [];
  return d.groups[g].map((dev, rank) => [state.deviceCell.get(dev), rank]);
}

function highlight(f) {
  clearLit();
  const result = state.result;
  if (!result || f < 0) {
    if (state.canvas && !$("canvas-pane").hidden) { state.canvas.highlight = -1; state.canvas.draw(); }
    return;
  }
  if (!$("canvas-pane").hidden) {
    state.canvas.highlight = result.pairs ? -1 : result.cells.group[f];
    state.canvas.cursor = f;
    state.canvas.draw();
    return;
  }
  $("views").classList.add("linking");
  $("assignment-view").classList.add("linking");
  const linked = linkedCells(result, f);
  for (const pane of state.panes) {
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
  for (const [m] of linked) lit(state.entries[m], "in");
  lit(state.entries[f], "cur");
  const row = state.entries[f] && state.entries[f].parentElement;
  lit(row, "hl");
}

function showDetails(f) {
  const result = state.result;
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
    if (result.cells.overlaps.includes(f)) lines.push("listed in more than one device group");
  } else {
    lines.push("in no device group");
  }
  box.replaceChildren(...lines.map((line) => el("div", "", line)));
  Object.assign(box.dataset, { flat: f, device: c.device, group: c.group, rank: c.rank });
}

// Move the roving focus to cell f in the pane holding ``from`` (or the canvas).
function focusCell(f, pane) {
  state.focus = f;
  if (!$("canvas-pane").hidden) {
    state.canvas.cursor = f;
    state.canvas.reveal(f);
    highlight(f);
    showDetails(f);
    return;
  }
  for (const p of state.panes) {
    for (const cell of p.grid.querySelectorAll(".cell[tabindex='0']")) cell.tabIndex = -1;
    if (p.cells[f]) p.cells[f].tabIndex = 0;
  }
  const target = pane ? pane.cells[f] : null;
  if (target) target.focus();
}

const MOVES = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };

function gridKeys(event, view, f) {
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

// ---------------------------------------------------------------- step-through

function renderSteps(result) {
  const steps = result.steps;
  const range = $("step-range");
  const enabled = !!steps && steps.count > 0;
  for (const id of ["step-first", "step-prev", "step-play", "step-next", "step-clear", "step-range"]) {
    $(id).disabled = !enabled;
  }
  range.max = enabled ? String(steps.count - 1) : "0";
  range.value = "0";
  const written = enabled && steps.outer === "loop" ? "pair" : "written group";
  $("step-text").textContent = enabled
    ? `${steps.count} device ${steps.outer === "loop" ? "pair" : "group"}${steps.count === 1 ? "" : "s"} from ${plural(steps.written_groups.length, written)}` +
      (steps.per_group > 1 ? `, each read once per ${steps.loop} (${steps.per_group} times)` : "") +
      (steps.substituted_empty ? "; the empty list stands for one group of every id" : "") +
      ". Press play or step through."
    : "Nothing to multiply out.";
  $("views-box").dataset.step = "-1";
}

function describeStep(result, i) {
  const s = result.steps;
  const out = result.device_groups.groups[i];
  const frag = document.createDocumentFragment();
  const code = (t) => el("code", "", t);
  if (s.outer === "loop") {
    const count = s.written_groups.length;
    const j = Math.floor(i / count);
    const [src, dst] = s.written_groups[i % count];
    frag.append(`Step ${i + 1} of ${s.count}: pair #${i % count} `, code(`{${src},${dst}}`));
    frag.append(s.loop === "partition"
      ? ` as replica ids, in partition ${j}: ` : ` as partition ids, in replica ${j}: `);
    frag.append(code(s.loop === "partition" ? `(DA[${src}][${j}], DA[${dst}][${j}])` : `(DA[${j}][${src}], DA[${j}][${dst}])`));
    frag.append(" → devices ", code(`${out[0]} → ${out[1]}`));
    return frag;
  }
  const w = Math.floor(i / s.per_group);
  const j = i % s.per_group;
  const written = s.written_groups[w];
  frag.append(`Step ${i + 1} of ${s.count}: written group #${w} `, code(shortList(written, 12)));
  if (s.loop === "partition") {
    frag.append(` as replica ids, in partition ${j}: `, code(`[DA[r][${j}] for r in group]`));
  } else if (s.loop === "replica") {
    frag.append(` as partition ids, in replica ${j}: `, code(`[DA[${j}][p] for p in group]`));
  } else if (result.mode.name === "kCrossReplicaAndPartition") {
    frag.append(" as replica ids, sweeping every partition: ", code("[DA[r][q] for r in group for q < P]"));
  } else {
    frag.append(" as flattened ids: ", code("[DA[f div P][f mod P] for f in group]"));
  }
  frag.append(" → device group ", code(`g${i} ${shortList(out, 12)}`));
  return frag;
}

function showStep(i) {
  const result = state.result;
  state.step = i;
  let active = null;
  if (i >= 0 && result && result.device_groups) {
    active = new Set(result.device_groups.groups[i].map((d) => state.deviceCell.get(d)));
    $("step-range").value = String(i);
    $("step-text").replaceChildren(describeStep(result, i));
  }
  $("views-box").dataset.step = String(i);
  if ($("views-box").dataset.render === "dom") {
    $("views").classList.toggle("stepping", active !== null);
    for (const pane of state.panes) {
      pane.cells.forEach((cell, f) => cell && cell.classList.toggle("active", active !== null && active.has(f)));
      pane.grid.querySelectorAll("svg.arrows path").forEach((path) =>
        path.classList.toggle("active", Number(path.dataset.pair) === i));
    }
  } else if (result) {
    state.canvas.active = active;
    state.canvas.draw();
  }
}

function stopPlaying() {
  if (state.player) clearInterval(state.player);
  state.player = null;
  $("step-play").textContent = "play";
  $("step-play").setAttribute("aria-label", "play");
}

function togglePlay() {
  if (state.player) { stopPlaying(); return; }
  const steps = state.result && state.result.steps;
  if (!steps) return;
  if (state.step >= steps.count - 1) showStep(-1);
  $("step-play").textContent = "pause";
  $("step-play").setAttribute("aria-label", "pause");
  const tick = () => {
    showStep(Math.min(steps.count - 1, state.step + 1));
    if (state.step >= steps.count - 1) stopPlaying();
  };
  tick();
  state.player = setInterval(tick, STEP_MS);
}

// Dial the fields that select ``m`` (a column of the four-mode view); the opcode is cleared so
// that the two fields alone decide.
function chooseMode(m) {
  $("opcode").value = "";
  $("channel").checked = m.channel_id;
  setRadio("ugdi", m.use_global_device_ids === null ? "absent" : String(m.use_global_device_ids));
  edited(false);
}

// ---------------------------------------------------------------- dumps

async function loadDump() {
  const text = $("dump-text").value;
  $("dump-status").textContent = "reading…";
  $("dump-error").hidden = true;
  try {
    const result = await postJson("/api/hlo", { text });
    showDump(result);
  } catch (error) {
    const d = error.detail || {};
    $("dump-error").textContent = (d.kind ? d.kind + ": " : "") + error.message;
    $("dump-error").hidden = false;
    $("dump-status").textContent = "";
    $("collectives").replaceChildren();
    $("dump-module").textContent = "no dump loaded";
    state.dump = null;
    if (state.origin) {
      state.origin = null;
      $("origin").hidden = true;
      setStale("out of date: this was a collective of the previous dump");
    }
    document.body.dataset.dump = "error";
  }
}

function showDump(result) {
  state.dump = result;
  const m = result.module;
  $("dump-module").textContent =
    `${m.name || "module"}: ${plural(m.replica_count, "replica")} × ${plural(m.num_partitions, "partition")}, ` +
    `${plural(result.collectives.length, "collective")}` +
    (result.findings && result.findings.length ? `, ${plural(result.findings.length, "verifier finding")}` : "");
  $("dump-status").textContent = "";
  const list = $("collectives");
  list.replaceChildren();
  const problems = new Map();
  for (const f of result.findings || []) {
    if (!problems.has(f.instruction)) problems.set(f.instruction, []);
    problems.get(f.instruction).push(f.message);
  }
  result.collectives.forEach((c, index) => {
    const item = el("li");
    item.dataset.name = c.name;
    item.dataset.focusKey = `collective:${c.name}`;
    item.tabIndex = 0;
    item.append(el("span", "nm", c.name), el("span", "op", `${c.opcode} · line ${c.line}`));
    if (c.is_done) item.append(el("span", "op", `(waits for ${c.start})`));
    item.append(el("span", "md", c.mode || c.mode_error || ""));
    const groups = c.source_target_pairs
      ? `source_target_pairs=${braces(c.source_target_pairs.map(braces))}`
      : `replica_groups=${c.replica_groups}`;
    item.append(el("span", "gr", groups));
    const found = problems.get(c.name);
    if (found) {
      item.classList.add("flagged");
      item.dataset.findings = String(found.length);
      for (const message of found) item.append(el("span", "fd", message));
    }
    const pick = () => selectCollective(index);
    item.addEventListener("click", pick);
    item.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); pick(); } });
    list.append(item);
  });
  document.body.dataset.dump = "ready";
  // A new dump resets the result: its first collective, or nothing to show.
  if (result.collectives.length) selectCollective(0);
  else {
    state.origin = null;
    setStale("out of date: this dump has no collectives; this shows the last dial");
  }
}

function selectCollective(index) {
  const c = state.dump.collectives[index];
  const m = state.dump.module;
  [...$("collectives").children].forEach((li, i) => li.classList.toggle("selected", i === index));
  const req = c.groups_request;
  applyUi({
    ...readUi(),
    kind: "grid",
    replicas: String(m.replica_count),
    partitions: String(m.num_partitions),
    assignment: "default",
    opcode: req.opcode || "",
    channel: req.channel_id,
    ugdi: req.use_global_device_ids === null ? "absent" : String(req.use_global_device_ids),
    src: "text",
    groups: req.groups,
    shapes: req.shapes,
  });
  state.origin = `${c.name} · ${c.opcode} · line ${c.line}`;
  update();
}

// ---------------------------------------------------------------- wiring

function addAxis(name, size) {
  const row = el("div", "axis");
  const n = el("input");
  n.type = "text";
  n.value = name;
  n.setAttribute("aria-label", "axis name");
  const s = el("input");
  s.type = "number";
  s.min = "1";
  s.value = String(size);
  s.setAttribute("aria-label", "axis size");
  const remove = el("button", "small", "×");
  remove.type = "button";
  remove.setAttribute("aria-label", "remove axis");
  remove.addEventListener("click", () => { row.remove(); syncOverAxes(); edited(false); });
  row.append(n, "=", s, remove);
  for (const input of [n, s]) input.addEventListener("input", () => { syncOverAxes(); edited(true); });
  $("mesh-axes").append(row);
}

function syncOverAxes(checkedNames) {
  const box = $("over-axes");
  const checked = new Set(checkedNames || [...box.querySelectorAll("input:checked")].map((i) => i.value));
  box.replaceChildren();
  for (const row of document.querySelectorAll("#mesh-axes .axis")) {
    const name = row.querySelector("input[type=text]").value.trim();
    const label = el("label");
    const input = el("input");
    input.type = "checkbox";
    input.value = name;
    input.checked = checked.has(name);
    input.addEventListener("change", () => edited(false));
    label.append(input, name);
    box.append(label);
  }
}

function syncVisibility() {
  const mesh = radio("gridkind") === "mesh";
  $("grid-rp").hidden = mesh;
  $("grid-mesh").hidden = !mesh;
  $("mesh-perm").hidden = $("mesh-order").value !== "custom";
  const option = $("assignment").querySelector("option[value=mesh]");
  option.disabled = !mesh;
  if (!mesh && $("assignment").value === "mesh") $("assignment").value = "default";
  $("assignment-table").hidden = $("assignment").value !== "custom";
  const over = radio("groupsrc") === "over";
  $("groups-text-box").hidden = over;
  $("groups-over-box").hidden = !over;
}

// Switching to a named mesh dials it as JAX writes it: one replica, the mesh's device order
// as the device assignment, a channel and global device ids.
function meshDefaults() {
  $("mesh-replicas").value = "1";
  $("assignment").value = "mesh";
  $("channel").checked = true;
  setRadio("ugdi", "true");
  $("opcode").value = "";
}

function switchTab(button, focus) {
  for (const tab of document.querySelectorAll(".tab")) {
    const on = tab === button;
    tab.classList.toggle("active", on);
    tab.setAttribute("aria-selected", String(on));
    tab.tabIndex = on ? 0 : -1;
    $(tab.dataset.panel).hidden = !on;
  }
  if (focus) button.focus();
}

function wireTabs() {
  const tabs = [...document.querySelectorAll(".tab")];
  tabs.forEach((t, i) => {
    t.addEventListener("click", () => switchTab(t, false));
    t.addEventListener("keydown", (event) => {
      const next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[event.key];
      if (next === undefined) return;
      event.preventDefault();
      switchTab(tabs[(next + tabs.length) % tabs.length], true);
    });
  });
}

function wireViews() {
  const views = $("views");
  const paneOf = (node) => state.panes.find((p) => p.node.contains(node));
  views.addEventListener("mouseover", (event) => {
    const cell = event.target.closest(".cell");
    if (cell) { highlight(Number(cell.dataset.flat)); showDetails(Number(cell.dataset.flat)); }
  });
  views.addEventListener("mouseleave", () => {
    const inside = views.contains(document.activeElement);
    highlight(inside ? state.focus : -1);
    showDetails(state.focus);
  });
  views.addEventListener("focusin", (event) => {
    const cell = event.target.closest(".cell");
    if (!cell) return;
    state.focus = Number(cell.dataset.flat);
    highlight(state.focus);
    showDetails(state.focus);
  });
  views.addEventListener("focusout", (event) => {
    if (!views.contains(event.relatedTarget)) highlight(-1);
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

function wireCanvas() {
  const canvas = $("grid-canvas");
  state.canvas = new CanvasView(canvas, {
    onHover: (f) => {
      highlight(f >= 0 ? f : document.activeElement === canvas ? state.focus : -1);
      showDetails(f >= 0 ? f : state.focus);
    },
    onPick: (f) => { if (f >= 0) { canvas.focus(); focusCell(f); } },
  });
  const zoom = (factor) => { state.canvas.zoom(factor); zoomReadout(); };
  $("zoom-in").addEventListener("click", () => zoom(1.5));
  $("zoom-out").addEventListener("click", () => zoom(1 / 1.5));
  $("zoom-fit").addEventListener("click", () => { state.canvas.fit(); state.canvas.draw(); zoomReadout(); });
  canvas.addEventListener("wheel", () => zoomReadout());
  canvas.addEventListener("focus", () => { highlight(state.focus); showDetails(state.focus); });
  canvas.addEventListener("blur", () => highlight(-1));
  canvas.addEventListener("keydown", (event) => {
    if (event.key === "+" || event.key === "=") { zoom(1.5); return; }
    if (event.key === "-") { zoom(1 / 1.5); return; }
    if (event.key === "0") { state.canvas.fit(); state.canvas.draw(); zoomReadout(); return; }
    const next = gridKeys(event, canvasViewOf(), state.focus);
    if (next === null) return;
    event.preventDefault();
    focusCell(next);
  });
  window.addEventListener("resize", () => {
    if ($("canvas-pane").hidden || !state.result) return;
    state.canvas.resize();
    state.canvas.clamp();
    state.canvas.draw();
  });
}

function wireSteps() {
  $("step-first").addEventListener("click", () => { stopPlaying(); showStep(0); });
  $("step-prev").addEventListener("click", () => { stopPlaying(); showStep(Math.max(0, state.step - 1)); });
  $("step-next").addEventListener("click", () => {
    stopPlaying();
    if (state.result && state.result.steps) showStep(Math.min(state.result.steps.count - 1, state.step + 1));
  });
  $("step-clear").addEventListener("click", () => { stopPlaying(); showStep(-1); });
  $("step-play").addEventListener("click", togglePlay);
  $("step-range").addEventListener("input", () => { stopPlaying(); showStep(Number($("step-range").value)); });
  document.addEventListener("keydown", (event) => {
    const active = document.activeElement;
    const busy = /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName) ||
      active.closest(".tabs, .pane, .mode-col, .collectives, .canvas-pane");
    if (busy || !state.result || !state.result.steps) return;
    if (event.key === "ArrowRight") {
      stopPlaying();
      showStep(Math.min(state.result.steps.count - 1, state.step + 1));
    } else if (event.key === "ArrowLeft") {
      stopPlaying();
      showStep(Math.max(0, state.step - 1));
    }
  });
}

function wireControls() {
  document.querySelectorAll("input[name=gridkind]").forEach((i) => i.addEventListener("change", () => {
    if (radio("gridkind") === "mesh") meshDefaults();
    syncVisibility();
    edited(false);
  }));
  document.querySelectorAll("input[name=groupsrc]").forEach((i) =>
    i.addEventListener("change", () => { syncVisibility(); edited(false); }));
  for (const id of ["replicas", "partitions", "mesh-replicas", "mesh-perm", "groups", "assignment-table"]) {
    $(id).addEventListener("input", () => edited(true));
  }
  for (const id of ["mesh-order", "assignment", "opcode", "channel"]) {
    $(id).addEventListener("change", () => { syncVisibility(); edited(false); });
  }
  document.querySelectorAll("input[name=ugdi]").forEach((i) => i.addEventListener("change", () => edited(false)));
  $("add-axis").addEventListener("click", () => {
    addAxis(`a${$("mesh-axes").children.length}`, 2);
    syncOverAxes();
    edited(false);
  });
  $("shapes-fit").addEventListener("click", () => { state.ui.shapes = null; edited(false); });
  $("dump-load").addEventListener("click", loadDump);
  $("dump-example").addEventListener("click", async () => {
    $("dump-text").value = await (await fetch("/example.hlo")).text();
    loadDump();
  });
  $("dump-file").addEventListener("change", async () => {
    const file = $("dump-file").files[0];
    if (!file) return;
    $("dump-text").value = await file.text();
    loadDump();
  });
  window.addEventListener("hashchange", () => {
    if (location.hash === toHash(state.ui)) return;
    applyUi(fromHash(location.hash));
    update();
  });
}

async function start() {
  try {
    const info = await (await fetch("/api/info")).json();
    for (const op of info.opcodes) $("opcode").append(new Option(op, op));
  } catch (error) {
    // The dial still works without the opcode list.
  }
  wireTabs();
  wireViews();
  wireCanvas();
  wireSteps();
  wireControls();
  applyUi(fromHash(location.hash));
  await update();
  try {
    const dump = await (await fetch("/api/dump")).json();
    if (dump.name) {
      switchTab($("tab-dump"), false);
      $("dump-text").value = dump.text;
      if (dump.result) showDump(dump.result);
      else if (dump.error) { $("dump-error").textContent = dump.error.message; $("dump-error").hidden = false; }
    }
  } catch (error) {
    // No dump named on the command line.
  }
}

window.explorer = {
  state,
  update,
  showStep,
  cellGroups: () => (state.result ? state.result.cells.group : null),
  palette: PALETTE,
};
start();
