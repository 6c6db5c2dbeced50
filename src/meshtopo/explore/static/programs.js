// The order tab's "Your programs": the user's HLO modules, one every device runs (SPMD) or
// several each with its devices (MPMD), checked here and analysed by order.js.
import { $, el } from "/grid.js";
import { analyseOrder, setShown } from "/order.js";

function addProgram() {
  const row = el("div", "program");
  const file = el("input");
  file.type = "file";
  file.accept = ".txt,.hlo,text/plain";
  file.setAttribute("aria-label", "HLO module file");
  const devices = el("input");
  devices.type = "text";
  devices.className = "mono";
  devices.placeholder = "devices, e.g. 0,2,3 (empty: all)";
  devices.setAttribute("aria-label", "devices that run this module");
  const remove = el("button", "small", "×");
  remove.type = "button";
  remove.setAttribute("aria-label", "remove program");
  remove.addEventListener("click", () => row.remove());
  row.append(file, devices, remove);
  $("order-programs").append(row);
}

function ownError(message, control) {
  const box = $("order-own-error");
  for (const node of $("order-own").querySelectorAll("[aria-invalid]")) node.removeAttribute("aria-invalid");
  box.hidden = !message;
  box.textContent = message || "";
  if (control) {
    control.setAttribute("aria-invalid", "true");
    control.closest(".program").insertAdjacentElement("afterend", box);
  }
}

// Analyse the user's modules: one with no devices is SPMD; else each with its devices.
async function analyseOwn() {
  const rows = [...$("order-programs").querySelectorAll(".program")];
  const programs = [];
  for (const [index, row] of rows.entries()) {
    const [file, devices] = row.querySelectorAll("input");
    if (!file.files.length) { ownError(`program ${index + 1}: choose its HLO module file`, file); return; }
    const text = devices.value.trim();
    if (text && !/^\d+(\s*[,\s]\s*\d+)*$/.test(text)) {
      ownError(`program ${index + 1}: devices are ids separated by commas, e.g. 0,2,3; got "${text}"`, devices);
      return;
    }
    programs.push({ name: file.files[0].name, text: await file.files[0].text(),
      devices: text ? text.split(/[\s,]+/).map(Number) : null });
  }
  if (!programs.length) { ownError("add a program first", null); return; }
  const spmd = programs.length === 1 && programs[0].devices === null;
  const missing = programs.findIndex((p) => p.devices === null);
  if (!spmd && missing >= 0) {
    ownError(`program ${missing + 1}: with several programs each needs its devices`, rows[missing].querySelectorAll("input")[1]);
    return;
  }
  ownError(null, null);
  setShown("");
  const body = spmd ? { text: programs[0].text }
    : { programs: programs.map((p) => ({ text: p.text, devices: p.devices })) };
  const source = spmd ? `${programs[0].name} on every device`
    : programs.map((p) => `${p.name} on ${p.devices.join(",")}`).join("; ");
  await analyseOrder(body, source);
}

export function wirePrograms() {
  addProgram();
  addProgram();
  $("order-add").addEventListener("click", addProgram);
  $("order-run").addEventListener("click", analyseOwn);
}
