// The dial: the controls read into a plain object (``ui``, kept in url.js), set from one,
// turned into an /api/groups body; and examples that fit an answer.
import { $, el, braces } from "/grid.js";
import { url } from "/url.js";

let onEdit = () => {};

// ``edit(debounced)`` is called when a control this module builds is changed by hand.
export function setOnEdit(edit) {
  onEdit = edit;
}

export function radio(name) {
  return document.querySelector(`input[name=${name}]:checked`).value;
}

export function setRadio(name, value) {
  const input = document.querySelector(`input[name=${name}][value="${value}"]`);
  if (input) input.checked = true;
}

export function readUi() {
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
    cluster: $("cluster").value.trim(),
    colourBy: radio("colourby"),
    // Not controls of the dial: kept as the URL has them.
    shapes: url.ui ? url.ui.shapes : null,
    view: url.ui ? url.ui.view : "",
    show: url.ui ? url.ui.show : "",
    tab: url.ui ? url.ui.tab : "dial",
    file: url.ui ? url.ui.file : "",
  };
}

export function applyUi(ui) {
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
  $("cluster").value = ui.cluster;
  setRadio("colourby", ui.colourBy);
  url.ui = ui;
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

export function toBody(ui) {
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
  if (ui.cluster) body.cluster = ui.cluster;
  return body;
}

export function addAxis(name, size) {
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
  remove.addEventListener("click", () => { row.remove(); syncOverAxes(); onEdit(false); });
  row.append(n, "=", s, remove);
  for (const input of [n, s]) input.addEventListener("input", () => { syncOverAxes(); onEdit(true); });
  $("mesh-axes").append(row);
}

export function syncOverAxes(checkedNames) {
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
    input.addEventListener("change", () => onEdit(false));
    label.append(input, name);
    box.append(label);
  }
}

export function syncVisibility() {
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
  // Host and domain colours need a cluster to place the devices on.
  const placed = $("cluster").value.trim() !== "";
  for (const input of document.querySelectorAll("input[name=colourby]")) {
    input.disabled = !placed && input.value !== "group";
  }
}

// Switching to a named mesh dials it as JAX writes it: one replica, the mesh's device order
// as the device assignment, a channel and global device ids.
export function meshDefaults() {
  $("mesh-replicas").value = "1";
  $("assignment").value = "mesh";
  $("channel").checked = true;
  setRadio("ugdi", "true");
  $("opcode").value = "";
}

export function examplesFor(result) {
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
