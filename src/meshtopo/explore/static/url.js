// The URL state, in one place: the whole page as a plain object (``url.ui``: the dial, the tab,
// the order example shown, the file opened), its fragment form and back, and the history
// entry each change makes, so that Back and Forward step through them.

// The order tab's built-in examples, as named in the URL fragment (``show=``).
export const ORDER_EXAMPLES = ["opposite", "conditional"];
// The dial a first visit opens on: a named mesh as JAX writes its collectives.
export const DEFAULT_UI = {
  kind: "mesh", replicas: "2", partitions: "4",
  axes: [{ name: "data", size: "2" }, { name: "model", size: "4" }],
  order: "default", perm: "", meshReplicas: "1", assignment: "mesh", table: "",
  opcode: "", channel: true, ugdi: "true", src: "over", groups: "{{0,1}}", over: ["model"],
  shapes: null, view: "", show: "", cluster: "", colourBy: "group", tab: "dial", file: "",
};
// The tabs, as named in the URL fragment (``tab=``; the dial's is left out).
export const TABS = ["dial", "dump", "order"];
// What "colour by" may name; host and domain need a cluster.
export const COLOUR_BY = ["group", "host", "domain"];

// ``ui`` is null until the page reads its fragment; ``started`` is set once the first answer
// is shown (changes before it replace the entry the visit opened on).
export const url = { ui: null, started: false };

export function toHash(ui) {
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
  if (ui.show) q.set("show", ui.show);
  if (ui.cluster) q.set("cluster", ui.cluster);
  if (ui.colourBy !== "group") q.set("by", ui.colourBy);
  if (ui.tab !== "dial") q.set("tab", ui.tab);
  if (ui.file) q.set("file", ui.file);
  return "#" + q.toString();
}

export function fromHash(hash) {
  const q = new URLSearchParams(hash.replace(/^#/, ""));
  const ui = structuredClone(DEFAULT_UI);
  const pick = (key, allowed, fallback) => (allowed.includes(q.get(key)) ? q.get(key) : fallback);
  ui.tab = pick("tab", TABS, "dial");
  ui.file = q.get("file") || "";
  if (!q.has("kind")) return ui;
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
  ui.show = pick("show", ORDER_EXAMPLES, "");
  ui.cluster = (q.get("cluster") || "").trim();
  ui.colourBy = pick("by", COLOUR_BY, "group");
  return ui;
}

// Write ``url.ui`` to the fragment: each change is a history entry (``replace`` for the first
// state of a visit, or before the page has started).
export function writeHash(replace = false) {
  const hash = toHash(url.ui);
  if (location.hash === hash) return;
  if (replace || !url.started || !location.hash) history.replaceState(null, "", hash);
  else history.pushState(null, "", hash);
}
