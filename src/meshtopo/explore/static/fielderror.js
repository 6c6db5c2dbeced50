// A refused dial names its field the API's way ("field 'mesh.axes[1].size' ..."): this finds
// the control that holds it, marks it, and says the message in the dial's own words beside it.
import { $ } from "/grid.js";

// API field -> [control, the words the dial uses for it].
function controlOf(field, kind) {
  const axis = /^mesh\.axes\[(\d+)\](?:\.(name|size))?$/.exec(field);
  if (axis) {
    const row = document.querySelectorAll("#mesh-axes .axis")[Number(axis[1])];
    const input = row && row.querySelector(axis[2] === "name" ? "input[type=text]" : "input[type=number]");
    return [input || $("mesh-axes"), `axis ${Number(axis[1]) + 1}'s ${axis[2] || "entry"}`];
  }
  const fixed = {
    replicas: [kind === "mesh" ? $("mesh-replicas") : $("replicas"), "replicas"],
    partitions: [$("partitions"), "partitions"],
    "mesh.axes": [$("mesh-axes"), "the mesh axes"],
    "mesh.device_order": [$("mesh-perm").hidden ? $("mesh-order") : $("mesh-perm"), "the device order"],
    device_assignment: [$("assignment-table").hidden ? $("assignment") : $("assignment-table"), "the device table"],
    groups: [$("groups"), "the replica groups"],
    over: [$("over-axes"), "the axes to group over"],
    cluster: [$("cluster"), "the cluster"],
    opcode: [$("opcode"), "the opcode"],
  };
  const base = field.replace(/\[\d+\].*$/, "");
  return fixed[field] || fixed[base] || null;
}

let marked = null;

// Clear the previous mark; mark the control ``message`` names (or, when it names none, the
// field the error kind points at) and put the message, reworded, right after it.
export function markField(message, detail, kind) {
  clearField();
  const named = /field '([^']+)'/.exec(message);
  const field = named ? named[1] : detail.kind === "HloParseError" || /group/i.test(message) ? "groups" : null;
  const found = field ? controlOf(field, kind) : null;
  const box = $("input-error");
  if (!found || !found[0]) return message;
  const [control, words] = found;
  const said = named ? message.replace(`field '${named[1]}'`, words) : message;
  control.setAttribute("aria-invalid", "true");
  control.classList.add("invalid");
  box.dataset.field = field;
  control.insertAdjacentElement("afterend", box);
  marked = control;
  return said;
}

export function clearField() {
  if (!marked) return;
  marked.removeAttribute("aria-invalid");
  marked.classList.remove("invalid");
  marked = null;
  delete $("input-error").dataset.field;
}
