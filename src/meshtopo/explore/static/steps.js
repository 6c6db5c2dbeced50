// The step-through of XLA's multiplying-out loop: one device group (or pair) at a time.
import { $, el, shortList, plural } from "/grid.js";
import { resultView } from "/links.js";

const STEP_MS = 750;

// The step-through's own state: the step shown (-1: every group) and the play timer.
export const player = { step: -1, timer: null };

export function renderSteps(result) {
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

export function showStep(i) {
  const result = resultView.result;
  player.step = i;
  let active = null;
  if (i >= 0 && result && result.device_groups) {
    active = new Set(result.device_groups.groups[i].map((d) => resultView.deviceCell.get(d)));
    $("step-range").value = String(i);
    $("step-text").replaceChildren(describeStep(result, i));
  }
  $("views-box").dataset.step = String(i);
  if ($("views-box").dataset.render === "dom") {
    $("views").classList.toggle("stepping", active !== null);
    for (const pane of resultView.panes) {
      pane.cells.forEach((cell, f) => cell && cell.classList.toggle("active", active !== null && active.has(f)));
      pane.grid.querySelectorAll("svg.arrows path").forEach((path) =>
        path.classList.toggle("active", Number(path.dataset.pair) === i));
    }
  } else if (result) {
    resultView.canvas.active = active;
    resultView.canvas.draw();
  }
}

export function stopPlaying() {
  if (player.timer) clearInterval(player.timer);
  player.timer = null;
  $("step-play").textContent = "play";
  $("step-play").setAttribute("aria-label", "play");
}

export function togglePlay() {
  if (player.timer) { stopPlaying(); return; }
  const steps = resultView.result && resultView.result.steps;
  if (!steps) return;
  if (player.step >= steps.count - 1) showStep(-1);
  $("step-play").textContent = "pause";
  $("step-play").setAttribute("aria-label", "pause");
  const tick = () => {
    showStep(Math.min(steps.count - 1, player.step + 1));
    if (player.step >= steps.count - 1) stopPlaying();
  };
  tick();
  player.timer = setInterval(tick, STEP_MS);
}

export function wireSteps() {
  $("step-first").addEventListener("click", () => { stopPlaying(); showStep(0); });
  $("step-prev").addEventListener("click", () => { stopPlaying(); showStep(Math.max(0, player.step - 1)); });
  $("step-next").addEventListener("click", () => {
    stopPlaying();
    if (resultView.result && resultView.result.steps) showStep(Math.min(resultView.result.steps.count - 1, player.step + 1));
  });
  $("step-clear").addEventListener("click", () => { stopPlaying(); showStep(-1); });
  $("step-play").addEventListener("click", togglePlay);
  $("step-range").addEventListener("input", () => { stopPlaying(); showStep(Number($("step-range").value)); });
  document.addEventListener("keydown", (event) => {
    const active = document.activeElement;
    const busy = /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName) ||
      active.closest(".tabs, .pane, .mode-col, .collectives, .canvas-pane");
    if (busy || !resultView.result || !resultView.result.steps) return;
    if (event.key === "ArrowRight") {
      stopPlaying();
      showStep(Math.min(resultView.result.steps.count - 1, player.step + 1));
    } else if (event.key === "ArrowLeft") {
      stopPlaying();
      showStep(Math.max(0, player.step - 1));
    }
  });
}
