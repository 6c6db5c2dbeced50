// The collective order: /api/order's lanes drawn as SVG, one lane per device with its
// collectives in schedule order, lines joining each rendezvous, the selected finding's devices
// and blocking collectives picked out (a deadlock's waits-for cycle as arrows), and the run
// played frame by frame.
import { $, el, plural } from "/grid.js";
import { postOrder } from "/api.js";
import { url } from "/url.js";

const SVG = "http://www.w3.org/2000/svg";
const LANE_H = 108;
const LABEL_W = 112;
const BOX_W = 178;
const BOX_H = 50;
const ZOOMS = [0.02, 0.04, 0.08, 0.15, 0.25, 0.4, 0.6, 0.8, 1, 1.25, 1.6];
const GAP = 44;
const TOP = 16;

export const order = { result: null, source: null, placement: null, finding: -1, frame: -1, dump: null, seq: 0, zoom: 1 };
let onShow = () => {};

const svg = (tag, attrs, text) => {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
};
const ids = (list) => `[${list.join(",")}]`;
const boxX = (index) => LABEL_W + index * (BOX_W + GAP);
const laneY = (lane) => TOP + lane * LANE_H;

// Ask /api/order for ``body`` and draw the answer; ``source`` names it in the caption and
// ``placement`` says where its device table came from.
export async function analyseOrder(body, source, placement = null) {
  const seq = ++order.seq;
  document.body.dataset.order = "loading";
  $("order-status").textContent = "analysing…";
  $("order-view").dataset.stale = `out of date: analysing ${source}`;
  let result;
  try {
    result = await postOrder(body);
  } catch (error) {
    if (seq !== order.seq) return;
    showOrderError(error.message, source);
    return;
  }
  if (seq !== order.seq) return;
  if (result.error) {
    showOrderError(result.error, source);
    return;
  }
  order.result = result;
  order.source = source;
  order.placement = placement;
  order.finding = result.findings.length ? 0 : -1;
  order.frame = -1;
  order.zoom = 1;
  renderOrder();
  // A run wider than the view opens on its overview.
  const root = $("order-lanes").querySelector("svg");
  if ($("order-lanes").clientWidth && Number(root.dataset.width) > $("order-lanes").clientWidth) overview();
  document.body.dataset.order = "ready";
}

function showOrderError(message, source) {
  order.result = null;
  delete $("order-view").dataset.stale;
  $("order-details").textContent = "";
  order.source = source;
  $("order-status").textContent = "";
  $("order-caption").textContent = source;
  $("order-error").textContent = message;
  $("order-error").hidden = false;
  $("order-message").textContent = "The order of these programs cannot be analysed.";
  $("order-lanes").replaceChildren();
  $("order-findings").replaceChildren(el("li", "bad", message));
  $("order-step-text").textContent = "";
  $("order-cap").hidden = true;
  $("order-notes").hidden = true;
  document.body.dataset.order = "error";
}

// The dump tab loaded ``text`` as ``module`` (its /api/hlo answer): analyse its order (SPMD:
// every device runs it) on the module's own device table, as `meshtopo order` places it.
export function orderOfDump(text, module, name) {
  order.dump = { text, module, name };
  setShown("");
  $("order-of-dump").disabled = false;
  $("dump-order").textContent = "order: analysing…";
  const body = { text };
  const placement = module.device_assignment;
  if (placement.source !== "default") body.device_assignment = placement.table;
  const source = `the dump ${name}`;
  return analyseOrder(body, source, placement.origin).then(() => {
    const r = order.result;
    if (!r || order.source !== source) {
      $("dump-order").textContent = "order: cannot be analysed (see the Collective order tab)";
      return;
    }
    const counts = {};
    for (const f of r.findings) counts[f.type] = (counts[f.type] || 0) + 1;
    const found = Object.entries(counts).map(([t, n]) => plural(n, t)).join(", ");
    $("dump-order").textContent = `order: ${found || "no findings"} over ${plural(r.devices, "device")}; see the Collective order tab`;
  });
}

// Name the example shown in the URL fragment ("" for a dump or the user's programs, which the
// URL cannot carry).
export function setShown(name) {
  if (url.ui && url.ui.show !== name) {
    url.ui.show = name;
    onShow();
  }
}

export function showExample(name) {
  return name === "conditional" ? conditionalExample() : orderExample();
}

async function conditionalExample() {
  setShown("conditional");
  const text = await (await fetch("/order_conditional.hlo")).text();
  return analyseOrder({ text },
    "example: one program on 2 partitions whose conditional on partition-id runs sum, gather on partition 0 and gather2, sum2 on partition 1");
}

async function orderExample() {
  setShown("opposite");
  const [forward, backward] = await Promise.all(
    ["/order_forward.hlo", "/order_backward.hlo"].map(async (p) => (await fetch(p)).text()));
  return analyseOrder(
    { programs: [{ text: forward, devices: [0, 2, 3] }, { text: backward, devices: [1] }] },
    "example: devices 0, 2, 3 run order_forward (grads, then stats); device 1 runs order_backward (stats, then grads)");
}

// ---------------------------------------------------------------- drawing

function renderOrder() {
  const r = order.result;
  delete $("order-view").dataset.stale;
  $("order-details").textContent = "";
  $("order-error").hidden = true;
  $("order-status").textContent = "";
  $("order-caption").textContent = `${order.source} · ${plural(r.devices, "device")} · ${r.spmd ? "one program (SPMD)" : plural(r.programs.length, "program") + " (MPMD)"}`;
  $("order-cap").textContent = r.note || "";
  $("order-cap").hidden = !r.note;
  const notes = [order.placement ? `Groups: ${order.placement}.` : "", ...r.notes].filter(Boolean);
  $("order-notes").textContent = notes.join(" ");
  $("order-notes").hidden = !notes.length;
  renderFindings(r);
  drawLanes(r);
  showFrame(order.frame);
}

function renderFindings(r) {
  const list = $("order-findings");
  list.replaceChildren();
  if (!r.findings.length) {
    list.append(el("li", "ok", "No findings: every rendezvous completes in this order."));
    return;
  }
  r.findings.forEach((f, index) => {
    const item = el("li", "bad");
    item.tabIndex = 0;
    item.dataset.finding = String(index);
    item.dataset.type = f.type;
    if (index === order.finding) item.classList.add("picked");
    item.setAttribute("aria-current", String(index === order.finding));
    item.append(el("span", "src", f.type), f.message);
    const pick = () => { order.finding = index; renderOrder(); revealFinding(); };
    item.addEventListener("click", pick);
    item.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); pick(); } });
    list.append(item);
  });
}

// Scroll the lanes to the picked finding: its first blocking collective, else its first lane.
function revealFinding() {
  const f = selected();
  if (!f) return;
  const [lane, index] = f.blocks.length ? f.blocks[0] : [f.lanes[0], 0];
  const box = $("order-lanes").querySelector(`.arrival[data-lane="${lane}"][data-index="${index}"]`);
  if (box) {
    box.scrollIntoView({ block: "center", inline: "center" });
    box.focus({ preventScroll: true });
  }
}

// Draw the lanes at ``order.zoom`` (1: full size; the overview fits them in the view).
function applyZoom() {
  const root = $("order-lanes").querySelector("svg");
  if (!root) return;
  root.setAttribute("width", String(Number(root.dataset.width) * order.zoom));
  root.setAttribute("height", String(Number(root.dataset.height) * order.zoom));
  $("order-lanes").dataset.zoom = String(order.zoom);
  $("order-zoom-level").textContent = `${Math.round(order.zoom * 100)}%`;
}

// The next zoom level in (``step`` 1) or out (-1) from the zoom shown, which the overview may
// have set between two levels.
function zoomBy(step) {
  const levels = ZOOMS.filter((z) => (step > 0 ? z > order.zoom + 1e-9 : z < order.zoom - 1e-9));
  if (levels.length) order.zoom = step > 0 ? levels[0] : levels[levels.length - 1];
  applyZoom();
}

// The overview: the whole run in the view's width (never above full size).
function overview() {
  const root = $("order-lanes").querySelector("svg");
  if (!root) return;
  const box = $("order-lanes");
  const fits = Math.min((box.clientWidth - 20) / Number(root.dataset.width), 1);
  order.zoom = fits;
  applyZoom();
}

function wirePan() {
  const box = $("order-lanes");
  let drag = null;
  box.addEventListener("mousedown", (e) => {
    if (e.button !== 0 || e.target.closest(".arrival")) return;
    drag = { x: e.clientX, y: e.clientY, left: box.scrollLeft, top: box.scrollTop };
    e.preventDefault();
  });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    box.scrollLeft = drag.left - (e.clientX - drag.x);
    box.scrollTop = drag.top - (e.clientY - drag.y);
  });
  window.addEventListener("mouseup", () => { drag = null; });
}

function selected() {
  const r = order.result;
  return r && order.finding >= 0 ? r.findings[order.finding] : null;
}

function drawLanes(r) {
  const finding = selected();
  const hitLanes = new Set(finding ? finding.lanes : []);
  const blocks = new Set(finding ? finding.blocks.map(([l, i]) => `${l}:${i}`) : []);
  const longest = Math.max(1, ...r.lanes.map((l) => l.arrivals.length));
  const width = boxX(longest) + 20;
  const height = laneY(r.lanes.length) + 10;
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `${plural(r.lanes.length, "lane")}, one per device, collectives in schedule order` });
  const defs = svg("defs");
  const marker = svg("marker", { id: "cycle-head", viewBox: "0 0 10 10", refX: 9, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#a8261b" }));
  defs.append(marker);
  root.append(defs);
  r.lanes.forEach((lane, index) => {
    const g = svg("g", { class: `lane${hitLanes.has(index) ? " hit" : ""}`, "data-lane": index, "data-device": lane.device });
    g.append(svg("rect", { class: "lane-bg", x: 0, y: laneY(index) - 8, width, height: BOX_H + 16, rx: 6 }));
    g.append(svg("text", { class: "lane-label", x: 10, y: laneY(index) + 16 }, `device ${lane.device}`));
    const program = lane.program !== null && !r.spmd ? r.programs[lane.program].name : "";
    const tail = lane.truncated ? `first ${lane.arrivals.length} of ${lane.count}` : program;
    if (tail) g.append(svg("text", { class: "lane-sub", x: 10, y: laneY(index) + 31 }, tail));
    root.append(g);
  });
  // Rendezvous a mismatch finding says pair different collectives: drawn red and labelled.
  const wrong = new Set(r.findings.filter((f) => f.type === "mismatch").flatMap((f) => f.rendezvous));
  const lines = svg("g", { class: "meets" });
  r.rendezvous.forEach((m, number) => {
    const members = [...m.members].sort((a, b) => a[0] - b[0]);
    const bad = wrong.has(number);
    for (let k = 1; k < members.length; k++) {
      const [la, ia] = members[k - 1];
      const [lb, ib] = members[k];
      lines.append(svg("path", { class: `meet${m.complete ? "" : " open"}${bad ? " mismatch" : ""}`,
        "data-rendezvous": number, "data-from": la, "data-to": lb, d: route(la, ia, lb, ib, number) }));
    }
    if (bad && members.length > 1) lines.append(mismatchLabel(r, members, number));
  });
  root.append(lines);
  // Each distinct clique written once: arrivals name theirs by index in ``r.cliques``.
  const cliques = r.cliques.map(ids);
  r.lanes.forEach((lane, li) => {
    lane.arrivals.forEach((a, ai) => {
      const classes = ["arrival"];
      if (wrong.has(a.rendezvous)) classes.push("mismatched");
      if (a.blocked) classes.push("blocked");
      if (!a.issued) classes.push("never");
      if (blocks.has(`${li}:${ai}`)) classes.push("block");
      const clique = cliques[a.clique];
      const g = svg("g", { class: classes.join(" "), "data-lane": li, "data-index": ai,
        "data-name": a.name, "data-rendezvous": a.rendezvous, tabindex: li === 0 && ai === 0 ? 0 : -1 });
      const x = boxX(ai);
      const y = laneY(li);
      g.append(svg("rect", { x, y, width: BOX_W, height: BOX_H, rx: 5 }));
      g.append(svg("text", { class: "a-name", x: x + 7, y: y + 15 }, a.name));
      g.append(svg("text", { class: "a-sub", x: x + 7, y: y + 30 },
        `${a.opcode} ${clique} r${a.rank}`));
      const state = !a.issued ? "never issued: the device is stuck earlier"
        : a.blocked ? "issued, never completes: the device waits here forever" : "completes";
      const branch = a.branches.length ? `; in ${a.branches.map(([c, b]) => `branch ${b} of ${c}`).join(", ")}` : "";
      const loops = a.iteration.length ? `; ${a.iteration.map(([w, n]) => `iteration ${n} of ${w}`).join(", ")}` : "";
      const where = [...a.iteration.map(([w, n]) => `iter ${n} of ${w}`),
        ...a.branches.map(([c, b]) => `branch ${b} of ${c}`)].join(" · ");
      if (where) g.append(svg("text", { class: "a-where", x: x + 7, y: y + 44 }, where));
      const about = `device ${lane.device}: ${a.name} (${a.opcode}, line ${a.line}) on clique ${clique} as rank ${a.rank}, arrival ${a.position} there${branch}${loops}; ${state}`;
      g.append(svg("title", {}, about));
      root.append(g);
    });
  });
  const cycle = svg("g", { class: "cycle", "data-finding": order.finding });
  if (finding && finding.cycle.length > 1) {
    finding.cycle.forEach((from, k) => {
      const to = finding.cycle[(k + 1) % finding.cycle.length];
      cycle.append(cycleArrow(from, to, r));
    });
  }
  root.append(cycle);
  root.dataset.width = String(width);
  root.dataset.height = String(height);
  $("order-lanes").replaceChildren(root);
  applyZoom();
  $("order-message").textContent = finding ? finding.message
    : r.findings.length ? "Pick a finding on the left." : "No findings: every rendezvous completes in this order.";
  $("order-view").dataset.finding = String(order.finding);
}

// The label of a wrong pairing, beside the line between its first two members: the
// collectives the rendezvous pairs ("sum ≠ gather2"), the sentence in its title.
function mismatchLabel(r, members, number) {
  const [[la, ia], [lb, ib]] = members;
  const names = members.map(([l, i]) => r.lanes[l].arrivals[i].name);
  const x = (boxX(ia) + boxX(ib)) / 2 + BOX_W / 2 + 8;
  const y = (laneY(la) + BOX_H + laneY(lb)) / 2 + 4;
  // Two versions of one collective (the same name, other groups or shapes) say so.
  const distinct = [...new Set(names)];
  const label = svg("text", { class: "mismatch-label", x, y, "data-rendezvous": number },
    distinct.length > 1 ? distinct.join(" ≠ ") : `${distinct[0]}: the versions differ`);
  label.append(svg("title", {}, `arrival order pairs ${names.join(" with ")} in one rendezvous: they differ, so the result is garbage`));
  return label;
}

// The line joining arrival ``ia`` of lane ``la`` to arrival ``ib`` of a lane below: straight
// between neighbouring lanes; past other lanes it runs in the gaps (below its lane, in the
// gutter left of the boxes, above the far lane), so it crosses no box of a lane between.
// Lines in one gutter are set a little apart by rendezvous number.
function route(la, ia, lb, ib, number) {
  const x1 = boxX(ia) + BOX_W / 2;
  const x2 = boxX(ib) + BOX_W / 2;
  const y1 = laneY(la) + BOX_H;
  const y2 = laneY(lb);
  if (lb - la <= 1) return `M${x1},${y1} L${x2},${y2}`;
  const shift = ((number % 7) - 3) * 4;
  const gutter = boxX(Math.min(ia, ib)) - GAP / 2 + shift;
  const below = y1 + (LANE_H - BOX_H) / 2 + shift / 2;
  const above = y2 - (LANE_H - BOX_H) / 2 + shift / 2;
  return `M${x1},${y1} V${below} H${gutter} V${above} H${x2} V${y2}`;
}

// An arrow from the box where one cycle member waits to the box where the device it waits
// for is stuck, bowed to its side so that the two arrows of a two-device cycle stay apart.
function cycleArrow([la, ia], [lb, ib], r) {
  const ax = boxX(ia) + BOX_W / 2;
  const bx = boxX(ib) + BOX_W / 2;
  const down = lb > la;
  const ay = laneY(la) + (down ? BOX_H : 0);
  const by = laneY(lb) + (down ? 0 : BOX_H);
  const mx = (ax + bx) / 2;
  const my = (ay + by) / 2;
  const len = Math.hypot(bx - ax, by - ay) || 1;
  const bow = 64;
  const cx = mx - ((by - ay) / len) * bow;
  const cy = my + ((bx - ax) / len) * bow;
  const from = r.lanes[la];
  const to = r.lanes[lb];
  const path = svg("path", { class: "cycle-arrow", d: `M${ax},${ay} Q${cx},${cy} ${bx},${by}`,
    "marker-end": "url(#cycle-head)", "data-from": from.device, "data-to": to.device });
  path.append(svg("title", {}, `device ${from.device} waits in ${from.arrivals[ia].name} for device ${to.device}, stuck in ${to.arrivals[ib].name}`));
  const g = svg("g");
  g.append(path, svg("text", { class: "cycle-label", x: cx, y: cy + 4, "text-anchor": "middle" }, "waits for"));
  return g;
}

// Arrow keys move the focus between collectives: left/right along a lane, up/down across lanes.
function roveKeys(event, r, lane, index) {
  const step = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] }[event.key];
  if (!step) return;
  event.preventDefault();
  const l = Math.max(0, Math.min(r.lanes.length - 1, lane + step[0]));
  const count = r.lanes[l].arrivals.length;
  if (!count) return;
  const i = Math.max(0, Math.min(count - 1, index + step[1]));
  const next = $("order-lanes").querySelector(`.arrival[data-lane="${l}"][data-index="${i}"]`);
  if (!next) return;
  for (const node of $("order-lanes").querySelectorAll(".arrival[tabindex='0']")) node.setAttribute("tabindex", "-1");
  next.setAttribute("tabindex", "0");
  next.focus();
}

// Pointing at a collective (hover, focus or click; one listener each for all of them, however
// many there are) picks out its rendezvous and describes it; arrow keys rove.
function wireArrivals() {
  const box = $("order-lanes");
  const arrival = (event) => event.target.closest && event.target.closest(".arrival");
  const point = (g) => {
    meetHighlight(Number(g.dataset.rendezvous));
    $("order-details").textContent = g.querySelector("title").textContent;
  };
  box.addEventListener("mouseover", (event) => { const g = arrival(event); if (g) point(g); });
  box.addEventListener("mouseout", (event) => {
    const g = arrival(event);
    if (g && !g.contains(event.relatedTarget)) meetHighlight(-1);
  });
  box.addEventListener("focusin", (event) => { const g = arrival(event); if (g) point(g); });
  box.addEventListener("focusout", () => meetHighlight(-1));
  box.addEventListener("keydown", (event) => {
    const g = arrival(event);
    if (g && order.result) roveKeys(event, order.result, Number(g.dataset.lane), Number(g.dataset.index));
  });
}

function meetHighlight(number) {
  for (const node of $("order-lanes").querySelectorAll(".lit")) node.classList.remove("lit");
  if (number < 0) return;
  for (const node of $("order-lanes").querySelectorAll(`[data-rendezvous="${number}"]`)) node.classList.add("lit");
}

// ---------------------------------------------------------------- step by step

// Show the run up to frame ``k`` (-1: the whole run, as the analysis ends).
function showFrame(k) {
  const r = order.result;
  if (!r) return;
  const frames = r.timeline;
  order.frame = Math.max(-1, Math.min(k, frames.length - 1));
  for (const id of ["order-first", "order-prev", "order-next", "order-all"]) $(id).disabled = !frames.length;
  const view = $("order-view");
  view.dataset.frame = String(order.frame);
  const boxes = [...$("order-lanes").querySelectorAll(".arrival")];
  const at = new Map(boxes.map((b) => [`${b.dataset.lane}:${b.dataset.index}`, b]));
  for (const b of boxes) b.classList.remove("future", "issued", "done", "now");
  const cycle = $("order-lanes").querySelector(".cycle");
  if (order.frame < 0) {
    view.dataset.stepping = "no";
    if (cycle) cycle.removeAttribute("visibility");
    $("order-step-text").textContent = frames.length
      ? `${plural(frames.length, "step")}: next › plays the run from the start.` : "Nothing is issued.";
    return;
  }
  view.dataset.stepping = "yes";
  for (const b of boxes) b.classList.add("future");
  for (let i = 0; i <= order.frame; i++) {
    const frame = frames[i];
    for (const [l, x] of frame.members) {
      const b = at.get(`${l}:${x}`);
      if (!b) continue;
      b.classList.remove("future");
      if (frame.kind === "arrive") b.classList.add("issued");
      if (frame.kind === "complete") { b.classList.remove("issued"); b.classList.add("done"); }
    }
  }
  const frame = frames[order.frame];
  for (const [l, x] of frame.members) {
    const b = at.get(`${l}:${x}`);
    if (b) b.classList.add("now");
  }
  // The cycle is drawn once nobody can move.
  if (cycle) cycle.setAttribute("visibility", frame.kind === "hang" ? "visible" : "hidden");
  view.dataset.frameKind = frame.kind;
  const more = r.timeline_truncated && order.frame === frames.length - 1 ? " (later steps are not shown)" : "";
  $("order-step-text").replaceChildren(
    el("b", "", `step ${order.frame + 1} of ${frames.length}`), ` · time ${frame.time}: ${frame.text}${more}`);
}

// ``shown()`` is called when the example named in the URL changes.
export function wireOrder(shown) {
  onShow = shown;
  $("order-zoom-in").addEventListener("click", () => zoomBy(1));
  $("order-zoom-out").addEventListener("click", () => zoomBy(-1));
  $("order-zoom-fit").addEventListener("click", overview);
  wirePan();
  wireArrivals();
  $("order-example").addEventListener("click", () => orderExample());
  $("order-conditional").addEventListener("click", () => conditionalExample());
  $("order-of-dump").addEventListener("click", () => {
    if (order.dump) orderOfDump(order.dump.text, order.dump.module, order.dump.name);
  });
  $("order-first").addEventListener("click", () => showFrame(0));
  $("order-prev").addEventListener("click", () => showFrame(order.frame <= 0 ? 0 : order.frame - 1));
  $("order-next").addEventListener("click", () => showFrame(order.frame + 1));
  $("order-all").addEventListener("click", () => showFrame(-1));
}
