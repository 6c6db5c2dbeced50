// meshtopo explorer: every number shown here comes from the library through /api/*.
// This module holds the page's state, reads the controls, talks to the API and plays the
// step-through; grid.js draws.
import {
  $, el, braces, shortList, layoutOf, tipText, renderGrid, drawCanvasGrid, renderLegend,
  renderModes, PALETTE,
} from "/grid.js";

const STEP_MS = 750;
const state = {
  result: null, // last good /api/groups answer
  request: null,
  step: -1, // -1: all groups shown
  timer: null,
  seq: 0,
  controller: null,
  renders: 0,
  timing: null,
  origin: null, // the dump collective being shown, if any
  deviceCell: null, // Map device id -> flattened index
  dump: null,
};

// ---------------------------------------------------------------- reading the controls

function meshAxes() {
  return [...document.querySelectorAll("#mesh-axes .axis")].map((row) => ({
    name: row.querySelector("input[type=text]").value.trim(),
    size: Number(row.querySelector("input[type=number]").value),
  }));
}

function numbers(text) {
  return text.split(/[^0-9-]+/).filter((s) => s !== "").map(Number);
}

function readTable(text) {
  const trimmed = text.trim();
  if (trimmed.startsWith("[")) return JSON.parse(trimmed);
  return trimmed.split(/\n+/).filter((line) => line.trim()).map(numbers);
}

function radio(name) {
  return document.querySelector(`input[name=${name}]:checked`).value;
}

function readDial() {
  const body = {};
  if (radio("gridkind") === "mesh") {
    const order = $("mesh-order").value;
    body.mesh = {
      axes: meshAxes(),
      device_order: order === "custom" ? numbers($("mesh-perm").value) : order,
    };
    body.replicas = Number($("mesh-replicas").value);
  } else {
    body.replicas = Number($("replicas").value);
    body.partitions = Number($("partitions").value);
  }
  const assignment = $("assignment").value;
  if (assignment === "custom") {
    try {
      body.device_assignment = readTable($("assignment-table").value);
    } catch (error) {
      body.device_assignment = "unreadable table: " + error.message;
    }
  } else {
    body.device_assignment = assignment;
  }
  body.opcode = $("opcode").value || null;
  body.channel_id = $("channel").checked;
  const ugdi = radio("ugdi");
  body.use_global_device_ids = ugdi === "absent" ? null : ugdi === "true";
  if (radio("groupsrc") === "over") {
    body.over = [...document.querySelectorAll("#over-axes input:checked")].map((i) => i.value);
  } else {
    body.groups = $("groups").value;
  }
  return body;
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

async function update(origin) {
  const t0 = performance.now();
  state.origin = typeof origin === "string" ? origin : null;
  const seq = ++state.seq;
  if (state.controller) state.controller.abort();
  state.controller = new AbortController();
  const request = readDial();
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

function showRequestError(error) {
  const box = $("input-error");
  const kind = error.detail && error.detail.kind ? `${error.detail.kind}: ` : "";
  box.textContent = kind + error.message;
  box.hidden = false;
  $("request-error").textContent = error.message;
  $("request-error").hidden = false;
  $("grid").classList.add("stale");
  $("grid-canvas").classList.add("stale");
  document.body.dataset.state = "error";
  document.body.dataset.renders = String(++state.renders);
}

// ---------------------------------------------------------------- rendering

function render(result) {
  state.result = result;
  stopPlaying();
  state.step = -1;
  $("input-error").hidden = true;
  $("request-error").hidden = true;
  $("grid").classList.remove("stale");
  $("grid-canvas").classList.remove("stale");
  state.deviceCell = new Map(result.cells.device_id.map((d, f) => [d, f]));
  renderMode(result);
  $("origin").textContent = state.origin ? `from the dump: ${state.origin}` : "";
  $("origin").hidden = !state.origin;
  renderFacts(result);
  renderGrid(result);
  renderLegend(result);
  renderFindings(result);
  renderSteps(result);
  renderModes(result, chooseMode);
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

function renderFacts(result) {
  $("f-hlo").textContent = result.hlo_instruction || "";
  const w = result.written_groups;
  $("f-written").textContent = w.text;
  $("f-compact").textContent = w.compact || "none (not an iota list)";
  const d = result.device_groups;
  if (d) {
    const sizes = [...new Set(d.groups.map((g) => g.length))];
    $("f-count").textContent = `${d.count} group${d.count === 1 ? "" : "s"}` +
      (sizes.length === 1 ? ` of ${sizes[0]}` : ` of sizes ${sizes.join(", ")}`);
    $("f-dcompact").textContent = d.compact || "none";
  } else {
    $("f-count").textContent = "none";
    $("f-dcompact").textContent = "—";
  }
}

function renderFindings(result) {
  const list = $("findings");
  list.replaceChildren();
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
    ? `${steps.count} device ${steps.outer === "loop" ? "pair" : "group"}${steps.count === 1 ? "" : "s"} from ${steps.written_groups.length} ${written}${steps.written_groups.length === 1 ? "" : "s"}` +
      (steps.per_group > 1 ? `, each read once per ${steps.loop} (${steps.per_group} times)` : "") +
      (steps.substituted_empty ? "; the empty list stands for one group of every id" : "") +
      ". Press play or step through."
    : "Nothing to multiply out.";
  state.step = -1;
  $("grid").dataset.step = "-1";
  $("grid").classList.remove("stepping");
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
  const grid = $("grid");
  let active = null;
  if (i >= 0 && result && result.device_groups) {
    active = new Set(result.device_groups.groups[i].map((d) => state.deviceCell.get(d)));
    $("step-range").value = String(i);
    $("step-text").replaceChildren(describeStep(result, i));
  }
  grid.dataset.step = String(i);
  if (grid.dataset.render === "dom") {
    grid.classList.toggle("stepping", active !== null);
    for (const cell of grid.children) {
      cell.classList.toggle("active", active !== null && active.has(Number(cell.dataset.flat)));
    }
  } else if (result) {
    drawCanvasGrid(result, active);
  }
}

function stopPlaying() {
  if (state.timer) clearInterval(state.timer);
  state.timer = null;
  $("step-play").textContent = "▶ play";
  $("step-play").setAttribute("aria-label", "play");
}

function togglePlay() {
  if (state.timer) { stopPlaying(); return; }
  const steps = state.result && state.result.steps;
  if (!steps) return;
  if (state.step >= steps.count - 1) showStep(-1);
  $("step-play").textContent = "⏸ pause";
  $("step-play").setAttribute("aria-label", "pause");
  const tick = () => {
    showStep(Math.min(steps.count - 1, state.step + 1));
    if (state.step >= steps.count - 1) stopPlaying();
  };
  tick();
  state.timer = setInterval(tick, STEP_MS);
}

// Dial the fields that select ``m`` (a column of the four-mode view); the opcode is cleared so
// that the two fields alone decide.
function chooseMode(m) {
  $("opcode").value = "";
  $("channel").checked = m.channel_id;
  const ugdi = m.use_global_device_ids === null ? "absent" : String(m.use_global_device_ids);
  document.querySelector(`input[name=ugdi][value=${ugdi}]`).checked = true;
  update();
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
    document.body.dataset.dump = "error";
  }
}

function showDump(result) {
  state.dump = result;
  const m = result.module;
  $("dump-module").textContent =
    `${m.name || "module"}: ${m.replica_count} replica${m.replica_count === 1 ? "" : "s"} × ` +
    `${m.num_partitions} partition${m.num_partitions === 1 ? "" : "s"}, ` +
    `${result.collectives.length} collective${result.collectives.length === 1 ? "" : "s"}` +
    (result.findings && result.findings.length
      ? `, ${result.findings.length} verifier finding${result.findings.length === 1 ? "" : "s"}`
      : "");
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
}

function selectCollective(index) {
  const c = state.dump.collectives[index];
  const m = state.dump.module;
  [...$("collectives").children].forEach((li, i) => li.classList.toggle("selected", i === index));
  document.querySelector("input[name=gridkind][value=grid]").checked = true;
  $("replicas").value = m.replica_count;
  $("partitions").value = m.num_partitions;
  $("assignment").value = "default";
  const req = c.groups_request;
  $("opcode").value = req.opcode || "";
  $("channel").checked = req.channel_id;
  const ugdi = req.use_global_device_ids === null ? "absent" : String(req.use_global_device_ids);
  document.querySelector(`input[name=ugdi][value=${ugdi}]`).checked = true;
  document.querySelector("input[name=groupsrc][value=text]").checked = true;
  $("groups").value = req.groups;
  syncVisibility();
  update(`${c.name} · ${c.opcode} · line ${c.line}`);
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
  remove.setAttribute("aria-label", `remove axis`);
  remove.addEventListener("click", () => { row.remove(); syncOverAxes(); update(); });
  row.append(n, "=", s, remove);
  for (const input of [n, s]) input.addEventListener("input", () => { syncOverAxes(); update(); });
  $("mesh-axes").append(row);
}

function syncOverAxes() {
  const box = $("over-axes");
  const checked = new Set([...box.querySelectorAll("input:checked")].map((i) => i.value));
  box.replaceChildren();
  for (const axis of meshAxes()) {
    const label = el("label");
    const input = el("input");
    input.type = "checkbox";
    input.value = axis.name;
    input.checked = checked.has(axis.name);
    input.addEventListener("change", () => update());
    label.append(input, axis.name);
    box.append(label);
  }
}

function syncVisibility() {
  const mesh = radio("gridkind") === "mesh";
  $("grid-rp").hidden = mesh;
  $("grid-mesh").hidden = !mesh;
  $("mesh-perm").hidden = $("mesh-order").value !== "custom";
  $("assignment-table").hidden = $("assignment").value !== "custom";
  const over = radio("groupsrc") === "over";
  $("groups-text-box").hidden = over;
  $("groups-over-box").hidden = !over;
}

function switchTab(button) {
  for (const tab of document.querySelectorAll(".tab")) {
    const on = tab === button;
    tab.classList.toggle("active", on);
    tab.setAttribute("aria-selected", String(on));
    $(tab.dataset.panel).hidden = !on;
  }
}

async function start() {
  addAxis("x", 2);
  addAxis("y", 4);
  syncOverAxes();
  try {
    const info = await (await fetch("/api/info")).json();
    for (const op of info.opcodes) $("opcode").append(new Option(op, op));
  } catch (error) {
    // The dial still works without the opcode list.
  }
  document.querySelectorAll("input[name=gridkind], input[name=groupsrc]").forEach((i) =>
    i.addEventListener("change", () => { syncVisibility(); update(); }));
  for (const id of ["replicas", "partitions", "mesh-replicas", "mesh-perm", "groups", "assignment-table"]) {
    $(id).addEventListener("input", () => update());
  }
  for (const id of ["mesh-order", "assignment", "opcode", "channel"]) {
    $(id).addEventListener("change", () => { syncVisibility(); update(); });
  }
  document.querySelectorAll("input[name=ugdi]").forEach((i) => i.addEventListener("change", () => update()));
  document.querySelectorAll("[data-example]").forEach((b) => b.addEventListener("click", () => {
    $("groups").value = b.dataset.example;
    update();
  }));
  $("add-axis").addEventListener("click", () => {
    addAxis(`a${$("mesh-axes").children.length}`, 2);
    syncOverAxes();
    update();
  });
  $("step-first").addEventListener("click", () => { stopPlaying(); showStep(0); });
  $("step-prev").addEventListener("click", () => { stopPlaying(); showStep(Math.max(0, state.step - 1)); });
  $("step-next").addEventListener("click", () => {
    stopPlaying();
    if (state.result && state.result.steps) showStep(Math.min(state.result.steps.count - 1, state.step + 1));
  });
  $("step-clear").addEventListener("click", () => { stopPlaying(); showStep(-1); });
  $("step-play").addEventListener("click", togglePlay);
  document.addEventListener("keydown", (event) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName);
    if (typing || !state.result || !state.result.steps) return;
    if (event.key === "ArrowRight") {
      stopPlaying();
      showStep(Math.min(state.result.steps.count - 1, state.step + 1));
    } else if (event.key === "ArrowLeft") {
      stopPlaying();
      showStep(Math.max(0, state.step - 1));
    }
  });
  $("step-range").addEventListener("input", () => { stopPlaying(); showStep(Number($("step-range").value)); });
  document.querySelectorAll(".tab").forEach((t) => t.addEventListener("click", () => switchTab(t)));
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
  const canvas = $("grid-canvas");
  canvas.addEventListener("mousemove", (event) => {
    const result = state.result;
    if (!result) return;
    const size = Number(canvas.dataset.cell);
    const rect = canvas.getBoundingClientRect();
    const col = Math.floor((event.clientX - rect.left) / size);
    const row = Math.floor((event.clientY - rect.top) / size);
    const f = row * layoutOf(result).cols + col;
    const tip = $("tip");
    if (col < 0 || col >= layoutOf(result).cols || f < 0 || f >= result.grid.devices) { tip.hidden = true; return; }
    tip.textContent = tipText(result, f);
    tip.style.left = `${event.clientX - rect.left + 24}px`;
    tip.style.top = `${event.clientY - rect.top + 24}px`;
    tip.hidden = false;
  });
  canvas.addEventListener("mouseleave", () => { $("tip").hidden = true; });
  syncVisibility();
  await update();
  try {
    const dump = await (await fetch("/api/dump")).json();
    if (dump.name) {
      switchTab($("tab-dump"));
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
