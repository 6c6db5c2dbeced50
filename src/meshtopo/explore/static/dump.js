// Dumps: an HLO module read by /api/hlo, its collectives listed with their verifier
// findings; picking one dials it (with the dump's shapes and its device assignment). A new dump resets the result, and
// its collective order is analysed for the order tab.
import { $, el, braces, plural } from "/grid.js";
import { readUi, applyUi } from "/dial.js";
import { state, postJson } from "/state.js";
import { orderOfDump } from "/order.js";

let page = { update: () => {}, setStale: () => {} };

// ``page.update()`` asks for the dial's answer; ``page.setStale(reason)`` marks the result out of date.
export function initDumps(hooks) {
  page = hooks;
}

export async function loadDump() {
  const text = $("dump-text").value;
  $("dump-status").textContent = "reading…";
  $("dump-error").hidden = true;
  try {
    // The file named on the command line, unchanged, keeps the answer read from its file
    // (with the device assignment beside it, which pasted text cannot carry).
    const named = state.namedDump;
    const result = named && named.result && named.text === text
      ? named.result
      : await postJson("/api/hlo", { text });
    showDump(result);
  } catch (error) {
    const d = error.detail || {};
    $("dump-error").textContent = (d.kind ? d.kind + ": " : "") + error.message;
    $("dump-error").hidden = false;
    $("dump-status").textContent = "";
    $("collectives").replaceChildren();
    $("dump-module").textContent = "no dump loaded";
    $("dump-placement").textContent = "";
    delete $("dump-placement").dataset.source;
    $("dump-order").textContent = "no dump loaded";
    state.dump = null;
    if (state.origin) {
      state.origin = null;
      $("origin").hidden = true;
      page.setStale("out of date: this was a collective of the previous dump");
    }
    document.body.dataset.dump = "error";
  }
}

export function showDump(result) {
  state.dump = result;
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
  orderOfDump($("dump-text").value, result.module.name || "module");
  // A new dump resets the result: its first collective, or nothing to show.
  if (result.collectives.length) selectCollective(0);
  else {
    state.origin = null;
    page.setStale("out of date: this dump has no collectives; this shows the last dial");
  }
}

function selectCollective(index) {
  const c = state.dump.collectives[index];
  const m = state.dump.module;
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
  state.origin = `${c.name} · ${c.opcode} · line ${c.line}`;
  page.update();
}
