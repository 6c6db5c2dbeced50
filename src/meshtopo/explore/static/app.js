// meshtopo explorer: every number shown here comes from the library through /api/*.
// This module asks for the dial's answer (debounced while typing, the dial mirrored in the URL
// fragment) and renders it into every panel, or marks the panels stale; dial.js reads and sets
// the controls, links.js links the views, steps.js plays the step-through, dump.js reads dumps,
// order.js draws their collective order (programs.js takes the user's modules for it);
// layout.js places cells, grid.js and canvas.js draw them; url.js holds the URL state and api.js
// makes the calls. Each view keeps its own state: the dial's here, the result view's in links.js,
// the step-through's in steps.js, the dump tab's in dump.js, the order view's in order.js.
import {
  $, el, plural, rolesOf, drawViews, drawArrows, renderLegend, renderAssignment, renderModes,
  DOM_LIMIT, PALETTE,
} from "/grid.js";
import { viewsOf } from "/layout.js";
import { CanvasView, ARROWS_FROM } from "/canvas.js";
import { postJson } from "/api.js";
import { url, toHash, fromHash, writeHash } from "/url.js";
import {
  radio, setRadio, readUi, applyUi, toBody, addAxis, syncOverAxes,
  syncVisibility, meshDefaults, examplesFor, setOnEdit,
} from "/dial.js";
import { resultView, highlight, showDetails, showTip, focusCell, gridKeys, wireViews } from "/links.js";
import { player, renderSteps, showStep, stopPlaying, wireSteps } from "/steps.js";
import { initDumps, wireDumps, showDump, uploadedFile, setNamedDump, dumpPlacement } from "/dump.js";
import { order, wireOrder, showExample } from "/order.js";
import { wirePrograms } from "/programs.js";
import { markField, clearField } from "/fielderror.js";

const DEBOUNCE_MS = 250;
const PANELS = ["mode-badge", "banner", "hlo-line", "facts", "grid-head", "views-box",
  "details-card", "assignment-card", "steps-card", "modes-card"];

// The dial's own state: the request of the answer shown, the dump collective it shows (null
// once a control is changed by hand), the debounce timer, the number and abort controller of
// the latest request, how many answers were rendered and how long the last one took.
const dial = {
  request: null, origin: null, pending: null, seq: 0, controller: null, renders: 0, timing: null,
};

// ---------------------------------------------------------------- the URL and the API

// A control changed by hand: the dial is no longer the dump's collective.
function edited(debounced) {
  dial.origin = null;
  stopPlaying();
  showStep(-1);
  if (debounced) {
    clearTimeout(dial.pending);
    document.body.dataset.pending = "1";
    dial.pending = setTimeout(() => update(), DEBOUNCE_MS);
  } else {
    update();
  }
}

async function update() {
  clearTimeout(dial.pending);
  delete document.body.dataset.pending;
  const t0 = performance.now();
  const seq = ++dial.seq;
  if (dial.controller) dial.controller.abort();
  dial.controller = new AbortController();
  url.ui = readUi();
  writeHash();
  const request = toBody(url.ui);
  document.body.dataset.state = "loading";
  let result;
  try {
    result = await postJson("/api/groups", request, dial.controller.signal);
  } catch (error) {
    if (error.name === "AbortError" || seq !== dial.seq) return;
    showRequestError(error);
    document.body.dataset.answered = String(seq);
    return;
  }
  if (seq !== dial.seq) return;
  const t1 = performance.now();
  dial.request = request;
  render(result);
  document.body.dataset.answered = String(seq);
  const t2 = performance.now();
  requestAnimationFrame(() => {
    const t3 = performance.now();
    dial.timing = { api: t1 - t0, render: t2 - t1, total: t3 - t0, devices: result.grid.devices, seq };
    $("timing").textContent =
      `${result.grid.devices} devices · api ${dial.timing.api.toFixed(0)} ms · ` +
      `shown in ${dial.timing.total.toFixed(0)} ms`;
    document.body.dataset.timing = JSON.stringify(dial.timing);
  });
}

// The dump tab dials one of its collectives (``origin`` names it).
function pick(origin) {
  dial.origin = origin;
  update();
}

// The result no longer shows a collective of the dump: say so when it did (or ``always``).
function leave(reason, always) {
  if (!dial.origin && !always) return;
  dial.origin = null;
  $("origin").hidden = true;
  setStale(reason);
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
  // In the dial's words wherever it is shown; beside the marked field, not again below.
  const said = markField(error.message, error.detail || {}, url.ui.kind);
  const marked = $("input-error").dataset.field !== undefined;
  $("input-error").textContent = said;
  $("input-error").hidden = false;
  $("request-error").textContent = said;
  $("request-error").hidden = marked;
  setStale("out of date: the dial above has an error; this shows the last answer");
  // Checks speak for the current dial: its error.
  const item = el("li", "bad");
  item.append(el("span", "src", "request"), kind + said);
  $("findings").replaceChildren(item);
  document.body.dataset.state = "error";
  document.body.dataset.renders = String(++dial.renders);
}

// ---------------------------------------------------------------- rendering

function render(result) {
  const focusKey = document.activeElement && document.activeElement.dataset
    ? document.activeElement.dataset.focusKey : undefined;
  result.colourBy = url.ui.colourBy;
  resultView.result = result;
  stopPlaying();
  resultView.lit = [];
  $("input-error").hidden = true;
  clearField();
  $("request-error").hidden = true;
  setStale(null);
  resultView.deviceCell = new Map(result.cells.device_id.map((d, f) => [d, f]));
  resultView.roles = rolesOf(result, resultView.deviceCell);
  resultView.views = viewsOf(result);
  if (resultView.focus >= result.grid.devices) resultView.focus = 0;
  renderMode(result);
  $("origin").textContent = dial.origin ? `from the dump: ${dial.origin}` : "";
  $("origin").hidden = !dial.origin;
  renderShapes(result);
  renderFacts(result);
  renderGrid(result);
  // Why a flattened id is another device, in one sentence (the API's).
  const shuffle = result.device_assignment.shuffle;
  $("shuffle").textContent = shuffle ? `${shuffle}.` : "";
  $("shuffle").hidden = !shuffle;
  const placement = dial.origin ? dumpPlacement() : null;
  resultView.entries = renderAssignment(result, resultView.roles, placement);
  renderFindings(result);
  renderSteps(result);
  showStep(-1);
  showTip(-1, null);
  renderModes(result, resultView.views[0], chooseMode);
  renderExamples(result);
  showDetails(resultView.focus);
  if (focusKey) {
    const again = document.querySelector(`[data-focus-key="${focusKey}"]`);
    if (again) again.focus({ preventScroll: true });
  }
  document.body.dataset.state = "ready";
  document.body.dataset.renders = String(++dial.renders);
}

function renderMode(result) {
  const mode = result.mode;
  const name = $("mode-name");
  const badge = $("mode-badge");
  if (mode.name) {
    name.textContent = mode.name;
    name.classList.remove("error");
    const opcode = (dial.request && dial.request.opcode) || "this opcode";
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
  const shapes = url.ui.shapes;
  if (result.shapes === "given" && shapes) {
    const f32 = (dims) => `f32[${dims.join(",")}]`;
    $("shapes-text").textContent = `Shapes as in the dump's instruction: operand ${f32(shapes.operand)}, result ${f32(shapes.result)}; the checks include XLA's shape rules.`;
    $("shapes-fit").hidden = false;
    note.hidden = false;
  } else if (dial.origin) {
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
  const views = resultView.views;
  $("grid-caption").textContent =
    `${plural(result.grid.replicas, "replica")} × ${plural(result.grid.partitions, "partition")}` +
    (result.mesh ? ` · mesh ${result.mesh.axes.map((a) => `${a.name}=${a.size}`).join(", ")}` : "");
  const canvasMode = n > DOM_LIMIT;
  $("views").hidden = canvasMode;
  $("canvas-pane").hidden = !canvasMode;
  $("views-box").dataset.render = canvasMode ? "canvas" : "dom";
  $("cell-key").hidden = canvasMode;
  if (!canvasMode) {
    resultView.panes = drawViews(result, views, resultView.roles);
    for (const pane of resultView.panes) {
      const cell = pane.cells[resultView.focus];
      if (cell) cell.tabIndex = 0;
    }
    drawArrows(result, resultView.panes, resultView.deviceCell);
    renderLegend(result, resultView.roles, true);
    return;
  }
  resultView.panes = [];
  $("views").replaceChildren();
  const choices = $("canvas-views");
  choices.replaceChildren();
  if (!views.some((v) => v.key === url.ui.view)) url.ui.view = views[0].key;
  for (const view of views) {
    const label = el("label");
    const input = el("input");
    input.type = "radio";
    input.name = "canvasview";
    input.value = view.key;
    input.checked = view.key === url.ui.view;
    input.addEventListener("change", () => { url.ui.view = view.key; writeHash(); showCanvas(); });
    label.append(input, view.title);
    choices.append(label);
  }
  showCanvas();
  renderLegend(result, resultView.roles, resultView.canvas.scale >= 14);
}

function canvasViewOf() {
  return resultView.views.find((v) => v.key === url.ui.view) || resultView.views[0];
}

function showCanvas() {
  const view = canvasViewOf();
  const canvas = $("grid-canvas");
  const count = resultView.result.device_groups ? resultView.result.device_groups.count : 0;
  canvas.setAttribute("aria-label", `${resultView.result.grid.devices} devices in ${plural(count, "device group")} by ${view.title}; arrow keys move the focused cell`);
  canvas.dataset.view = view.key;
  const span = (heads) => heads.map((lvl) => `${lvl[0].label} … ${lvl[lvl.length - 1].label}`).join(" / ");
  $("canvas-axes").textContent = `rows ${span(view.rowHeads)} · columns ${span(view.colHeads)}`;
  resultView.canvas.cursor = resultView.focus;
  resultView.canvas.show(resultView.result, view, resultView.roles, resultView.deviceCell);
  zoomReadout();
}

function zoomReadout() {
  const scale = resultView.canvas.scale;
  $("zoom-level").textContent = `${scale.toFixed(scale < 10 ? 1 : 0)} px a cell` +
    (resultView.result && resultView.result.pairs && scale < ARROWS_FROM ? `; zoom to ${ARROWS_FROM} px or more for the arrows` : "");
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

// Dial the fields that select ``m`` (a column of the four-mode view); the opcode is cleared so
// that the two fields alone decide.
function chooseMode(m) {
  $("opcode").value = "";
  $("channel").checked = m.channel_id;
  setRadio("ugdi", m.use_global_device_ids === null ? "absent" : String(m.use_global_device_ids));
  edited(false);
}

// ---------------------------------------------------------------- wiring

// ``replace`` rewrites the current history entry (restoring one on Back or Forward).
function switchTab(button, focus, replace = false) {
  // One history entry per switch; the URL names an order example only while the order tab
  // shows it.
  if (url.ui) {
    url.ui.tab = button.id.replace("tab-", "");
    if (button.id !== "tab-order") url.ui.show = "";
    writeHash(replace);
  }
  for (const tab of document.querySelectorAll(".tab")) {
    const on = tab === button;
    tab.classList.toggle("active", on);
    tab.setAttribute("aria-selected", String(on));
    tab.tabIndex = on ? 0 : -1;
    $(tab.dataset.panel).hidden = !on;
  }
  // The dial and the dump share the result view; the order has its own.
  for (const id of ["result-view", "order-view"]) $(id).hidden = button.dataset.view !== id;
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

function wireCanvas() {
  const canvas = $("grid-canvas");
  resultView.canvas = new CanvasView(canvas, {
    onHover: (f) => {
      highlight(f >= 0 ? f : document.activeElement === canvas ? resultView.focus : -1);
      showDetails(f >= 0 ? f : resultView.focus);
      showTip(f, f >= 0 ? resultView.canvas.cellRect(f) : null);
    },
    onPick: (f) => { if (f >= 0) { canvas.focus(); focusCell(f); } },
  });
  const zoom = (factor) => { resultView.canvas.zoom(factor); zoomReadout(); };
  $("zoom-in").addEventListener("click", () => zoom(1.5));
  $("zoom-out").addEventListener("click", () => zoom(1 / 1.5));
  $("zoom-fit").addEventListener("click", () => { resultView.canvas.fit(); resultView.canvas.draw(); zoomReadout(); });
  canvas.addEventListener("wheel", () => zoomReadout());
  canvas.addEventListener("focus", () => { highlight(resultView.focus); showDetails(resultView.focus); });
  canvas.addEventListener("blur", () => highlight(-1));
  canvas.addEventListener("keydown", (event) => {
    if (event.key === "+" || event.key === "=") { zoom(1.5); return; }
    if (event.key === "-") { zoom(1 / 1.5); return; }
    if (event.key === "0") { resultView.canvas.fit(); resultView.canvas.draw(); zoomReadout(); return; }
    const next = gridKeys(event, canvasViewOf(), resultView.focus);
    if (next === null) return;
    event.preventDefault();
    focusCell(next);
  });
  // The tooltip sits where the cell was drawn: scrolling moves the cell away from it.
  window.addEventListener("scroll", () => showTip(-1, null), { passive: true });
  window.addEventListener("resize", () => {
    if ($("canvas-pane").hidden || !resultView.result) return;
    resultView.canvas.resize();
    resultView.canvas.clamp();
    resultView.canvas.draw();
  });
}

function wireControls() {
  document.querySelectorAll("input[name=gridkind]").forEach((i) => i.addEventListener("change", () => {
    if (radio("gridkind") === "mesh") meshDefaults();
    else gridDefaults();
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
  $("cluster").addEventListener("input", () => { syncVisibility(); edited(true); });
  document.querySelectorAll("input[name=colourby]").forEach((i) => i.addEventListener("change", () => edited(false)));
  $("add-axis").addEventListener("click", () => {
    addAxis(`a${$("mesh-axes").children.length}`, 2);
    syncOverAxes();
    edited(false);
  });
  $("shapes-fit").addEventListener("click", () => { url.ui.shapes = null; edited(false); });
  // Back and Forward: the dial, the tab and the example of that entry.
  window.addEventListener("hashchange", () => {
    if (location.hash === toHash(url.ui)) return;
    applyUi(fromHash(location.hash));
    // Restoring an entry rewrites it in place: a push here would drop the Forward entries.
    switchTab($(`tab-${url.ui.tab}`), false, true);
    // Its example opens once answered, in place too, unless Back or Forward moved on first
    // (the later entry's own restore has it then).
    const restored = location.hash;
    update().then(() => { if (location.hash === restored) openShown(true); });
  });
}

// Switching a named mesh to replicas x partitions keeps its collective: the same counts and
// the groups the mesh axes gave, written out (the grid has no axes to pick); without an
// answer to carry over, the first example that fits.
function gridDefaults() {
  const result = resultView.result;
  if (radio("groupsrc") !== "over") return;
  setRadio("groupsrc", "text");
  if (result && result.grid) {
    $("replicas").value = String(result.grid.replicas);
    $("partitions").value = String(result.grid.partitions);
    $("groups").value = result.written_groups.text;
  } else {
    $("groups").value = "{{0,1}}";
  }
}

// Open the order example the URL names, if any.
function openShown(replace = false) {
  if (!url.ui.show) return;
  switchTab($("tab-order"), false, replace);
  showExample(url.ui.show);
}

async function start() {
  try {
    const info = await (await fetch("/api/info")).json();
    for (const op of info.opcodes) $("opcode").append(new Option(op, op));
    $("cluster-note").append(`; presets: ${info.cluster_presets.join(", ")}`);
  } catch (error) {
    // The dial still works without the opcode list.
  }
  setOnEdit(edited);
  initDumps({ pick, leave, changed: () => { url.ui.file = uploadedFile() || ""; writeHash(); } });
  wireDumps();
  wireTabs();
  wireViews();
  wireCanvas();
  wireSteps();
  wireControls();
  wireOrder(writeHash);
  wirePrograms();
  applyUi(fromHash(location.hash));
  switchTab($(`tab-${url.ui.tab}`), false);
  await update();
  openShown();
  try {
    const dump = await (await fetch("/api/dump")).json();
    const lost = url.ui.file && url.ui.file !== dump.name;
    if (lost) {
      // A file opened in the page is not kept across a reload; the URL still names it.
      $("dump-status").textContent = `${url.ui.file} was opened before the reload; the page does not keep opened files: open it again (everything else is restored)`;
      document.body.dataset.lostFile = url.ui.file;
    }
    if (dump.name && !lost) {
      setNamedDump(dump);
      switchTab($("tab-dump"), false);
      $("dump-text").value = dump.text;
      if (dump.result) showDump(dump.result);
      else if (dump.error) { $("dump-error").textContent = dump.error.message; $("dump-error").hidden = false; }
    }
  } catch (error) {
    // No dump named on the command line.
  }
  url.started = true;
}

// For the tests: each view's own state, and the URL state.
window.explorer = {
  url,
  dial,
  resultView,
  player,
  order,
  update,
  showStep,
  cellGroups: () => (resultView.result ? resultView.result.cells.group : null),
  palette: PALETTE,
};
start();
