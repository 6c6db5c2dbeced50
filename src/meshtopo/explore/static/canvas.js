// A large grid on one canvas with zoom, pan and fit. Only the visible part is painted, pixel
// by pixel into an ImageData, so a frame costs the canvas's size whatever the device count.
// Marks are thinned as cells shrink: gaps from 6 px a cell, group boundaries from 4 px,
// flattened-id != device-id corners from 14 px, device ids printed from 30 px; a permute's
// pairs are drawn as arrows from 6 px a cell. The innermost axis headers stay on the top and
// left edges at every zoom, thinned so that drawn labels never touch.

import { rgbOf, rgbOfColour, colourOf, colourBy, colourKeys } from "/grid.js";

const BACKGROUND = 255;
const LINE = [20, 32, 46];
const MAX_SCALE = 64;
export const ARROWS_FROM = 6; // px a cell
const MAX_ARROWS = 20000; // drawn per frame (about as many cells as fit on screen at 6 px)

export class CanvasView {
  constructor(canvas, { onHover, onPick }) {
    this.canvas = canvas;
    this.onHover = onHover;
    this.onPick = onPick;
    this.scale = 1;
    this.ox = 0;
    this.oy = 0;
    this.highlight = -1; // a group to pick out (others faded), -1 for none
    this.active = null; // a Set of cells to pick out (a step), or null
    this.cursor = -1;
    this.view = null;
    this.drag = null;
    canvas.addEventListener("mousemove", (e) => this.mouseMove(e));
    canvas.addEventListener("mouseleave", () => { this.drag = null; this.onHover(-1); });
    canvas.addEventListener("mousedown", (e) => { this.drag = { x: e.clientX, y: e.clientY, moved: false }; });
    window.addEventListener("mouseup", (e) => {
      if (this.drag && !this.drag.moved && e.target === canvas) this.onPick(this.cellAt(e.clientX, e.clientY));
      this.drag = null;
    });
    canvas.addEventListener("wheel", (e) => {
      if (!e.ctrlKey && !e.metaKey) return;
      e.preventDefault();
      const rect = canvas.getBoundingClientRect();
      this.zoom(e.deltaY < 0 ? 1.25 : 0.8, e.clientX - rect.left, e.clientY - rect.top);
    }, { passive: false });
  }

  // Take a new answer and view; keep the zoom when the view's shape is unchanged.
  show(result, view, roles, deviceCell) {
    const same = this.view && this.view.rows === view.rows && this.view.cols === view.cols;
    this.result = result;
    this.view = view;
    const n = result.grid.devices;
    this.rgb = new Uint8Array(3 * n);
    const byGroup = colourBy(result) === "group";
    const keys = colourKeys(result);
    for (let f = 0; f < n; f++) {
      const [r, g, b] = roles && byGroup ? rgbOfColour(colourOf(result, f, roles)) : rgbOf(keys[f]);
      this.rgb[3 * f] = r; this.rgb[3 * f + 1] = g; this.rgb[3 * f + 2] = b;
    }
    this.pairs = result.pairs && result.device_groups ? result.device_groups.groups : null;
    this.colLabels = leafLabels(view.colHeads, view.cols);
    this.rowLabels = leafLabels(view.rowHeads, view.rows);
    this.deviceCell = deviceCell;
    this.mismatched = new Uint8Array(n);
    for (const f of result.cells.mismatched) this.mismatched[f] = 1;
    this.resize();
    if (!same) this.fit();
    else this.clamp();
    this.draw();
  }

  resize() {
    const wrap = this.canvas.parentElement;
    this.maxWidth = Math.max(240, wrap.clientWidth - 2);
    this.maxHeight = Math.max(240, Math.floor(window.innerHeight * 0.62));
  }

  fit() {
    const { rows, cols } = this.view;
    this.scale = Math.min(MAX_SCALE, this.maxWidth / cols, this.maxHeight / rows);
    this.ox = 0;
    this.oy = 0;
    this.clamp();
  }

  zoom(factor, x = this.canvas.width / 2, y = this.canvas.height / 2) {
    const { rows, cols } = this.view;
    const least = Math.min(this.maxWidth / cols, this.maxHeight / rows, 1);
    const next = Math.max(least, Math.min(MAX_SCALE, this.scale * factor));
    this.ox = ((this.ox + x) / this.scale) * next - x;
    this.oy = ((this.oy + y) / this.scale) * next - y;
    this.scale = next;
    this.clamp();
    this.draw();
  }

  clamp() {
    const { rows, cols } = this.view;
    this.canvas.width = Math.min(this.maxWidth, Math.ceil(cols * this.scale));
    this.canvas.height = Math.min(this.maxHeight, Math.ceil(rows * this.scale));
    this.ox = Math.max(0, Math.min(this.ox, cols * this.scale - this.canvas.width));
    this.oy = Math.max(0, Math.min(this.oy, rows * this.scale - this.canvas.height));
    Object.assign(this.canvas.dataset, {
      scale: this.scale.toFixed(3), ox: Math.round(this.ox), oy: Math.round(this.oy),
    });
  }

  // Scroll so that cell f is on screen.
  reveal(f) {
    const s = this.scale;
    const x = this.view.col[f] * s;
    const y = this.view.row[f] * s;
    if (x < this.ox) this.ox = x;
    if (x + s > this.ox + this.canvas.width) this.ox = x + s - this.canvas.width;
    if (y < this.oy) this.oy = y;
    if (y + s > this.oy + this.canvas.height) this.oy = y + s - this.canvas.height;
    this.clamp();
  }

  // Where cell f is drawn, in client coordinates (for a tooltip beside it).
  cellRect(f) {
    const rect = this.canvas.getBoundingClientRect();
    const s = this.scale;
    const left = rect.left + this.view.col[f] * s - this.ox;
    const top = rect.top + this.view.row[f] * s - this.oy;
    return { left, top, right: left + s, bottom: top + s };
  }

  cellAt(clientX, clientY) {
    const rect = this.canvas.getBoundingClientRect();
    const c = Math.floor((clientX - rect.left + this.ox) / this.scale);
    const r = Math.floor((clientY - rect.top + this.oy) / this.scale);
    if (!this.view || c < 0 || r < 0 || c >= this.view.cols || r >= this.view.rows) return -1;
    return this.view.at[r * this.view.cols + c];
  }

  mouseMove(e) {
    if (this.drag) {
      const dx = e.clientX - this.drag.x;
      const dy = e.clientY - this.drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) this.drag.moved = true;
      if (this.drag.moved) {
        this.ox -= dx;
        this.oy -= dy;
        this.drag.x = e.clientX;
        this.drag.y = e.clientY;
        this.clamp();
        this.draw();
        return;
      }
    }
    this.onHover(this.cellAt(e.clientX, e.clientY));
  }

  draw() {
    if (!this.view) return;
    const { canvas, view, scale: s } = this;
    const W = canvas.width;
    const H = canvas.height;
    const ctx = canvas.getContext("2d");
    const image = ctx.createImageData(W, H);
    const data = image.data;
    const colOf = new Int32Array(W);
    const inX = new Float32Array(W);
    for (let x = 0; x < W; x++) {
      const c = Math.floor((x + this.ox) / s);
      colOf[x] = c < view.cols ? c : -1;
      inX[x] = x + this.ox - c * s;
    }
    const groups = this.result.cells.group;
    const gaps = s >= 6;
    const lines = s >= 4;
    const marks = s >= 14;
    const cut = 2 * s - 2 - s * 0.4;
    const { highlight, active } = this;
    for (let y = 0; y < H; y++) {
      const r = Math.floor((y + this.oy) / s);
      const iy = y + this.oy - r * s;
      const rowOk = r < view.rows;
      const base = r * view.cols;
      let i = y * W * 4;
      for (let x = 0; x < W; x++, i += 4) {
        const c = colOf[x];
        const f = rowOk && c >= 0 ? view.at[base + c] : -1;
        let R = BACKGROUND; let G = BACKGROUND; let B = BACKGROUND;
        const ix = inX[x];
        if (f >= 0 && !(gaps && (ix >= s - 1 || iy >= s - 1))) {
          const g = groups[f];
          R = this.rgb[3 * f]; G = this.rgb[3 * f + 1]; B = this.rgb[3 * f + 2];
          if ((highlight >= 0 && g !== highlight) || (active && !active.has(f))) {
            R = 255 - (255 - R) * 0.18; G = 255 - (255 - G) * 0.18; B = 255 - (255 - B) * 0.18;
          }
          if (lines && ((ix < 1 && c > 0 && groups[view.at[base + c - 1]] !== g) ||
              (iy < 1 && r > 0 && groups[view.at[base - view.cols + c]] !== g))) {
            [R, G, B] = LINE;
          } else if (marks && this.mismatched[f] && ix + iy >= cut) {
            R = G = B = 17;
          }
        }
        data[i] = R; data[i + 1] = G; data[i + 2] = B; data[i + 3] = 255;
      }
    }
    ctx.putImageData(image, 0, 0);
    if (s >= 30) this.labels(ctx);
    this.canvas.dataset.arrows = String(this.pairs && s >= ARROWS_FROM ? this.arrows(ctx) : 0);
    this.headers(ctx);
    if (this.cursor >= 0 && view.row[this.cursor] >= 0) {
      ctx.strokeStyle = "#111";
      ctx.lineWidth = 2;
      ctx.strokeRect(view.col[this.cursor] * s - this.ox + 1, view.row[this.cursor] * s - this.oy + 1, s - 2, s - 2);
    }
    this.canvas.dataset.drawn = String(Number(this.canvas.dataset.drawn || 0) + 1);
  }

  // Source -> target arrows for the pairs with an end on screen; returns how many were drawn.
  arrows(ctx) {
    const { view, scale: s } = this;
    const W = this.canvas.width;
    const H = this.canvas.height;
    ctx.strokeStyle = "#14202e";
    ctx.fillStyle = "#14202e";
    ctx.lineWidth = 1.5;
    const head = Math.min(9, s / 2);
    let drawn = 0;
    for (const [src, dst] of this.pairs) {
      const a = this.deviceCell.get(src);
      const b = this.deviceCell.get(dst);
      if (a === undefined || b === undefined || view.row[a] < 0 || view.row[b] < 0) continue;
      const x1 = (view.col[a] + 0.5) * s - this.ox;
      const y1 = (view.row[a] + 0.5) * s - this.oy;
      const x2 = (view.col[b] + 0.5) * s - this.ox;
      const y2 = (view.row[b] + 0.5) * s - this.oy;
      if (Math.max(x1, x2) < 0 || Math.min(x1, x2) > W || Math.max(y1, y2) < 0 || Math.min(y1, y2) > H) continue;
      const len = Math.hypot(x2 - x1, y2 - y1);
      if (len < 1) continue;
      if (++drawn > MAX_ARROWS) break;
      const ux = (x2 - x1) / len;
      const uy = (y2 - y1) / len;
      const ex = x2 - ux * s * 0.3;
      const ey = y2 - uy * s * 0.3;
      ctx.beginPath();
      ctx.moveTo(x1, y1);
      ctx.lineTo(ex, ey);
      ctx.stroke();
      ctx.beginPath();
      ctx.moveTo(ex, ey);
      ctx.lineTo(ex - ux * head - uy * head * 0.5, ey - uy * head + ux * head * 0.5);
      ctx.lineTo(ex - ux * head + uy * head * 0.5, ey - uy * head - ux * head * 0.5);
      ctx.fill();
    }
    return Math.min(drawn, MAX_ARROWS);
  }

  // The visible columns' and rows' labels in bands on the top and left edges, each drawn only
  // where it clears the one before; counts drawn go to data-col-heads / data-row-heads.
  headers(ctx) {
    const { view, scale: s } = this;
    const W = this.canvas.width;
    const H = this.canvas.height;
    const band = 16;
    ctx.font = '11px "DejaVu Sans Mono", monospace';
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    const c0 = Math.max(0, Math.floor(this.ox / s));
    const c1 = Math.min(view.cols - 1, Math.floor((this.ox + W) / s));
    const r0 = Math.max(0, Math.floor(this.oy / s));
    const r1 = Math.min(view.rows - 1, Math.floor((this.oy + H) / s));
    let left = 0;
    for (let r = r0; r <= r1; r++) left = Math.max(left, ctx.measureText(this.rowLabels[r]).width);
    left = Math.min(left + 8, W / 3);
    ctx.fillStyle = "rgba(255,255,255,0.88)";
    ctx.fillRect(0, 0, W, band);
    ctx.fillRect(0, band, left, H - band);
    ctx.fillStyle = "#333";
    let free = left;
    let cols = 0;
    for (let c = c0; c <= c1; c++) {
      const label = this.colLabels[c];
      const x = Math.max(c * s - this.ox + 2, left);
      const width = ctx.measureText(label).width;
      if (!label || x < free || x + width > W) continue;
      ctx.fillText(label, x, band / 2);
      free = x + width + 8;
      cols++;
    }
    let top = band;
    let rows = 0;
    for (let r = r0; r <= r1; r++) {
      const label = this.rowLabels[r];
      const y = Math.max(r * s - this.oy + Math.min(s, 14) / 2, band + 7);
      if (!label || y - 7 < top || y + 7 > H) continue;
      ctx.fillText(label, 3, y);
      top = y + 7;
      rows++;
    }
    this.canvas.dataset.colHeads = String(cols);
    this.canvas.dataset.rowHeads = String(rows);
  }

  // Device ids on the visible cells, when they are large enough to read.
  labels(ctx) {
    const { view, scale: s } = this;
    ctx.font = `${Math.min(14, Math.floor(s / 3))}px "DejaVu Sans Mono", monospace`;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    const c0 = Math.floor(this.ox / s);
    const r0 = Math.floor(this.oy / s);
    const c1 = Math.min(view.cols - 1, Math.floor((this.ox + this.canvas.width) / s));
    const r1 = Math.min(view.rows - 1, Math.floor((this.oy + this.canvas.height) / s));
    for (let r = r0; r <= r1; r++) {
      for (let c = c0; c <= c1; c++) {
        const f = view.at[r * view.cols + c];
        if (f < 0) continue;
        const lum = 0.3 * this.rgb[3 * f] + 0.59 * this.rgb[3 * f + 1] + 0.11 * this.rgb[3 * f + 2];
        ctx.fillStyle = lum < 110 ? "#fff" : "#111";
        ctx.fillText(String(this.result.cells.device_id[f]), c * s - this.ox + s / 2, r * s - this.oy + s / 2);
      }
    }
  }
}

// The innermost header level as one label per column (or row): the label of the header
// spanning it, or "" where there is none.
function leafLabels(levels, count) {
  const out = new Array(count).fill("");
  const leaf = levels[levels.length - 1];
  if (!leaf) return out;
  let at = 0;
  for (const { label, span } of leaf) {
    for (let k = 0; k < span && at < count; k++, at++) out[at] = label;
  }
  return out;
}
