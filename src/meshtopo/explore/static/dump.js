// Dumps: an HLO module read by /api/hlo, its collectives listed with their verifier
// findings; picking one dials it (with the dump's shapes and its device assignment). Files come
// from the pickers or a drop: a dump directory gives its modules after optimisations and the
// compile_options.textproto XLA wrote beside each, which places the module as the CLI does.
// A new dump resets the result, and its collective order is analysed for the order tab.
import { $, el, braces, plural } from "/grid.js";
import { readUi, applyUi } from "/dial.js";
import { postJson } from "/api.js";
import { orderOfDump } from "/order.js";

// XLA's dump layout, as meshtopo.hlo.module_files reads it.
const MODULE_FILE = /^module_(\d+)\.(.+?)\.(?:[A-Za-z0-9_.]*_)?after_optimizations\.txt$/;
const OPTIONS_FILE = "compile_options.textproto";
const COLLECTIVE = /\b(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute|collective-broadcast|ragged-all-to-all|send|recv)(-start)?\(/;

// The tab's own state: the files opened (modules to pick from, compile options among them),
// the device table given for the module (compile options text or a pasted table), the name of
// the file shown (null for pasted text), the /api/hlo answer shown (``result``) and the
// /api/dump answer for the file named on the command line (``named``).
const view = { modules: [], options: [], table: null, file: null, result: null, named: null };
let page = { pick: () => {}, leave: () => {}, changed: () => {} };

// ``page.pick(origin)`` dials a collective of the dump (``origin`` names it) and asks for its
// answer; ``page.leave(reason, always)`` says the result no longer shows a collective of the
// dump (marking it out of date when it did, or ``always``); ``page.changed()`` is told when the
// file shown changes (for the URL).
export function initDumps(hooks) {
  page = { ...page, ...hooks };
}

// Hold the /api/dump answer for the file named on the command line.
export function setNamedDump(dump) {
  view.named = dump;
}

// Where the loaded dump's device table came from, in a sentence (null with no dump loaded).
export function dumpPlacement() {
  return view.result ? view.result.module.device_assignment.origin : null;
}

// The name of the uploaded file on screen (null for pasted or named dumps).
export function uploadedFile() {
  return view.file;
}

const pathOf = (file) => file.webkitRelativePath || file.name;

// Open picked or dropped files: the after-optimisations modules among them (or any text file
// when there is none), with a choice when there are several; the one first holding a
// collective is read.
export async function openFiles(files) {
  const all = [...files];
  const modules = all.filter((f) => MODULE_FILE.test(f.name));
  view.options = all.filter((f) => f.name === OPTIONS_FILE);
  view.modules = modules.length ? modules
    : all.filter((f) => f.name !== OPTIONS_FILE && /\.(txt|hlo)$/.test(f.name));
  view.modules.sort((a, b) => pathOf(a).localeCompare(pathOf(b)));
  const pick = $("dump-pick");
  pick.replaceChildren(...view.modules.map((f, i) => new Option(pathOf(f), String(i))));
  $("dump-pick-box").hidden = view.modules.length < 2;
  if (!view.modules.length) {
    showError(`no HLO module among the ${plural(all.length, "file")} opened: expected XLA's ` +
      "module_NNNN.NAME.after_optimizations.txt (or an .hlo / .txt file)");
    return;
  }
  let first = 0;
  if (view.modules.length > 1) {
    const texts = await Promise.all(view.modules.map((f) => f.text()));
    first = Math.max(0, texts.findIndex((t) => COLLECTIVE.test(t)));
  }
  pick.value = String(first);
  await openModule(first);
}

// The compile_options.textproto XLA wrote for ``file``: the one in the directory
// module_NNNN.NAME/ beside it, or the only one opened when the files carry no paths.
function optionsFor(file) {
  const path = pathOf(file);
  const folder = path.slice(0, path.length - file.name.length);
  const beside = view.options.filter((o) => {
    const parts = pathOf(o).split("/");
    const parent = parts[parts.length - 2];
    return parts.length >= 2 && pathOf(o).startsWith(folder) && file.name.startsWith(parent + ".");
  });
  if (beside.length) return beside.sort((a, b) => pathOf(b).length - pathOf(a).length)[0];
  return view.options.length === 1 && !view.options[0].webkitRelativePath ? view.options[0] : null;
}

async function openModule(index) {
  const file = view.modules[index];
  const options = optionsFor(file);
  $("dump-text").value = await file.text();
  view.table = options
    ? { compile_options: await options.text(), compile_options_name: pathOf(options) }
    : null;
  view.file = file.name;
  $("dump-table").value = options ? "" : $("dump-table").value;
  page.changed();
  await loadDump();
}

// A pasted device table: compile options text, or one row of device ids per replica.
function pastedTable(text) {
  if (/[{:]/.test(text)) return { compile_options: text, compile_options_name: "the pasted compile options" };
  const rows = text.trim().split(/\n+/).filter((l) => l.trim()).map((l) => l.trim().split(/[\s,]+/).map(Number));
  return { device_assignment: rows };
}

export function wireDumps() {
  $("dump-file").addEventListener("change", () => openFiles($("dump-file").files));
  $("dump-dir").addEventListener("change", () => openFiles($("dump-dir").files));
  $("dump-pick").addEventListener("change", () => openModule(Number($("dump-pick").value)));
  const drop = $("dump-drop");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", async (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    openFiles(await droppedFiles(e.dataTransfer));
  });
  $("dump-table-use").addEventListener("click", () => {
    const text = $("dump-table").value;
    if (!text.trim()) { showTableError("paste the dump's compile_options.textproto or a table first"); return; }
    view.table = pastedTable(text);
    loadDump();
  });
  $("dump-table-clear").addEventListener("click", () => {
    view.table = null;
    $("dump-table").value = "";
    loadDump();
  });
  // Text typed or pasted over an opened file is no longer that file (nor placed by its table).
  $("dump-text").addEventListener("input", () => { if (view.file) forgetFiles(); });
  $("dump-load").addEventListener("click", () => loadDump());
  $("dump-example").addEventListener("click", async () => {
    $("dump-text").value = await (await fetch("/example.hlo")).text();
    forgetFiles();
    loadDump();
  });
}

// Pasted text or an example is not the file opened before.
export function forgetFiles() {
  view.modules = [];
  view.options = [];
  view.table = null;
  view.file = null;
  $("dump-pick-box").hidden = true;
  page.changed();
}

// Every file of a drop, directories walked (each file keeps its path in the drop).
async function droppedFiles(transfer) {
  const entries = [...transfer.items].map((i) => i.webkitGetAsEntry && i.webkitGetAsEntry()).filter(Boolean);
  if (!entries.length) return [...transfer.files];
  const files = [];
  const walk = async (entry, prefix) => {
    if (entry.isFile) {
      const file = await new Promise((ok, fail) => entry.file(ok, fail));
      Object.defineProperty(file, "webkitRelativePath", { value: prefix + file.name });
      files.push(file);
      return;
    }
    const reader = entry.createReader();
    for (;;) {
      const batch = await new Promise((ok, fail) => reader.readEntries(ok, fail));
      if (!batch.length) break;
      for (const child of batch) await walk(child, `${prefix}${entry.name}/`);
    }
  };
  for (const entry of entries) await walk(entry, "");
  return files;
}

function showTableError(message) {
  $("dump-table-error").textContent = message;
  $("dump-table-error").hidden = false;
  $("dump-table").setAttribute("aria-invalid", "true");
  $("dump-table-box").open = true;
}

function showError(message) {
  $("dump-error").textContent = message;
  $("dump-error").hidden = false;
  $("dump-text").setAttribute("aria-invalid", "true");
  $("dump-status").textContent = "";
  $("collectives").replaceChildren();
  $("dump-module").textContent = "no dump loaded";
  $("dump-placement").textContent = "";
  delete $("dump-placement").dataset.source;
  $("dump-order").textContent = "no dump loaded";
  view.result = null;
  page.leave("out of date: this was a collective of the previous dump", false);
  document.body.dataset.dump = "error";
}

export async function loadDump() {
  const text = $("dump-text").value;
  $("dump-status").textContent = "reading…";
  $("dump-error").hidden = true;
  $("dump-table-error").hidden = true;
  $("dump-text").removeAttribute("aria-invalid");
  $("dump-table").removeAttribute("aria-invalid");
  document.body.dataset.dump = "loading";
  try {
    // The file named on the command line, unchanged, keeps the answer read from its file
    // (with the device assignment beside it).
    const named = view.named;
    const result = !view.table && named && named.result && named.text === text
      ? named.result
      : await postJson("/api/hlo", { text, ...(view.table || {}) });
    showDump(result);
  } catch (error) {
    const d = error.detail || {};
    const table = view.table && !d.line && /device.assignment|compile.options|device table/.test(error.message);
    if (table) {
      showTableError(error.message);
      showError("the device table does not fit this module (see the table below)");
    } else {
      showError((d.kind ? d.kind + ": " : "") + error.message);
    }
  }
}

export function showDump(result) {
  view.result = result;
  const m = result.module;
  $("dump-module").textContent =
    `${m.name || "module"}: ${plural(m.replica_count, "replica")} × ${plural(m.num_partitions, "partition")}, ` +
    `${plural(result.collectives.length, "collective")}` +
    (result.findings && result.findings.length ? `, ${plural(result.findings.length, "verifier finding")}` : "");
  $("dump-placement").textContent = m.device_assignment.origin;
  $("dump-placement").dataset.source = m.device_assignment.source;
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
  // The table box is offered while the module has no table of its own.
  if (m.device_assignment.source === "dump") $("dump-table-box").open = false;
  const named = view.named && view.named.result === result ? view.named.name : null;
  orderOfDump($("dump-text").value, result.module, view.file || named || m.name || "module");
  // A new dump resets the result: its first collective, or nothing to show.
  if (result.collectives.length) selectCollective(0);
  else page.leave("out of date: this dump has no collectives; this shows the last dial", true);
}

function selectCollective(index) {
  const c = view.result.collectives[index];
  const m = view.result.module;
  [...$("collectives").children].forEach((li, i) => li.classList.toggle("selected", i === index));
  const req = c.groups_request;
  // The module's own device table (from the compile options XLA dumped beside the file), or
  // XLA's default placement when the dump came without one.
  const placed = m.device_assignment.source !== "default";
  applyUi({
    ...readUi(),
    kind: "grid",
    replicas: String(m.replica_count),
    partitions: String(m.num_partitions),
    assignment: placed ? "custom" : "default",
    table: placed ? m.device_assignment.table.map((row) => row.join(" ")).join("\n") : "",
    opcode: req.opcode || "",
    channel: req.channel_id,
    ugdi: req.use_global_device_ids === null ? "absent" : String(req.use_global_device_ids),
    src: "text",
    groups: req.groups,
    shapes: req.shapes,
  });
  page.pick(`${c.name} · ${c.opcode} · line ${c.line}`);
}
