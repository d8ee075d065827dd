// Canvas renderer of the timeline: axis, grid, lanes and boxes batched per colour. The text layer
// (group headers, lane names, labels inside wide boxes) is in labels.ts; the highlight of the
// selection, the range and the flow arrows in overlays.ts; shared geometry in scene.ts.

import { ticks } from "./axis";
import { drawGroups, drawLabels, fitText } from "./labels";
import type { Slices } from "./lod";
import { ROW_H, tracksBelow } from "./layout";
import { drawOverlays } from "./overlays";
import { AXIS_H, GUTTER_W, plotWidth, type LabelRect, type Surface, type TimelineScene } from "./scene";
import { colorAt } from "./theme";

const MERGED_ALPHA = [1, 0.4, 0.6, 0.8];
const DIM = 0.18;

export class TimelineRenderer {
  readonly canvas: HTMLCanvasElement;
  private ctx: CanvasRenderingContext2D;
  private w = 1;
  private h = 1;
  private slices: Slices | null = null;
  private order: Uint32Array = new Uint32Array(0);
  /** Start of each key's run in `order`; key = ((lit * 4) + bucket) * nColors + color. */
  private keyStart = new Uint32Array(1);
  private nColors = 1;
  private row: Int32Array = new Int32Array(0);
  private keys = new Uint32Array(0);
  private orderBuf = new Uint32Array(0);
  private rowBuf = new Int32Array(0);
  private lastEnd = new Float64Array(0);
  private highlight: ReadonlySet<number> | null = null;
  private charW = 6.2;
  boxesDrawn = 0;
  /** The axis origin shown in the corner in offset mode ("" when labels are absolute). */
  axisOrigin = "";
  /** ms spent on boxes and on labels in the last draw (for the dev harness). */
  timings: [number, number] = [0, 0];
  /** The texts of the last draw and their boxes (lane names, headers, box labels): the test hook. */
  labelBoxes: LabelRect[] = [];

  constructor(canvas: HTMLCanvasElement) {
    this.canvas = canvas;
    const ctx = canvas.getContext("2d", { alpha: false });
    if (!ctx) throw new Error("profview: no 2D canvas context");
    this.ctx = ctx;
  }

  resize(cssW: number, cssH: number, dpr: number): void {
    this.w = Math.max(1, Math.floor(cssW));
    this.h = Math.max(1, Math.floor(cssH));
    const pw = Math.round(this.w * dpr);
    const ph = Math.round(this.h * dpr);
    if (this.canvas.width !== pw || this.canvas.height !== ph) {
      this.canvas.width = pw;
      this.canvas.height = ph;
    }
    this.canvas.style.width = `${this.w}px`;
    this.canvas.style.height = `${this.h}px`;
    this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }

  get width(): number { return this.w; }
  get height(): number { return this.h; }

  /** New boxes or highlight: rebuild the draw order (counting sort by style key). */
  setData(s: Slices, nColors: number, highlight: ReadonlySet<number> | null): void {
    this.slices = s;
    this.highlight = highlight && highlight.size ? highlight : null;
    let maxColor = 0;
    for (let i = 0; i < s.n; i++) if (s.color[i] > maxColor) maxColor = s.color[i];
    this.nColors = Math.max(1, nColors, maxColor + 1);
    const nk = 2 * 4 * this.nColors;
    if (this.keys.length < s.n) {
      const cap = Math.max(s.n, Math.ceil(this.keys.length * 1.5));
      this.keys = new Uint32Array(cap);
      this.orderBuf = new Uint32Array(cap);
      this.rowBuf = new Int32Array(cap);
    }
    const keys = this.keys;
    const row = this.rowBuf;
    const counts = new Uint32Array(nk + 1);
    let r = -1;
    let lastKey = -1;
    for (let i = 0; i < s.n; i++) {
      const rk = s.track[i] * 65536 + s.depth[i];
      if (rk !== lastKey) {
        r++;
        lastKey = rk;
      }
      row[i] = r;
      const merged = s.id[i] < 0 || s.count[i] > 1;
      let bucket = 0;
      if (merged) {
        const frac = s.dur[i] > 0 ? s.busy[i] / s.dur[i] : 1;
        bucket = frac < 0.34 ? 1 : frac < 0.67 ? 2 : 3;
      }
      const lit = this.highlight ? (this.highlight.has(s.id[i]) ? 1 : 0) : 1;
      const k = (lit * 4 + bucket) * this.nColors + s.color[i];
      keys[i] = k;
      counts[k + 1]++;
    }
    for (let k = 0; k < nk; k++) counts[k + 1] += counts[k];
    this.keyStart = counts.slice();
    const order = this.orderBuf;
    for (let i = 0; i < s.n; i++) order[counts[keys[i]]++] = i;
    this.order = order.subarray(0, s.n);
    this.row = row;
    if (this.lastEnd.length < r + 1) this.lastEnd = new Float64Array(Math.max(r + 1, this.lastEnd.length * 2));
  }

  /** The "+N tracks" hint over the timeline's bottom right when lanes lie below the visible part. */
  private moreTracks(sc: TimelineScene): void {
    const box = this.canvas.parentElement?.parentElement;
    if (!box) return;
    let hint = box.querySelector<HTMLDivElement>(":scope > .pv-more-tracks");
    const n = tracksBelow(sc.layout, sc.scrollY + this.h - AXIS_H);
    if (!hint) {
      if (n === 0) return;
      hint = document.createElement("div");
      hint.className = "pv-more-tracks";
      box.appendChild(hint);
    }
    hint.textContent = n ? `+${n} track${n === 1 ? "" : "s"} below ↓ (scroll)` : "";
    hint.style.display = n ? "" : "none";
    hint.dataset.count = String(n);
  }

  draw(sc: TimelineScene): void {
    this.moreTracks(sc);
    const { ctx, w, h } = this;
    const th = sc.theme;
    ctx.fillStyle = th.bg;
    ctx.fillRect(0, 0, w, h);
    ctx.font = `11px ${th.font}`;
    ctx.textBaseline = "middle";
    this.charW = ctx.measureText("abcdefghijklmnopqrstuvwxyz").width / 26 || 6.2;
    const pw = plotWidth(w);
    const k = pw / (sc.view.end - sc.view.start);
    const tk = ticks(sc.view.start, sc.view.end, pw, sc.unit);

    // Lanes (scrolled, clipped below the axis).
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, AXIS_H, w, h - AXIS_H);
    ctx.clip();
    const oy = AXIS_H - sc.scrollY;
    this.drawGrid(sc, tk.ticks, k, oy);
    const surf: Surface = { ctx, w, h, charW: this.charW, labels: [] };
    drawGroups(surf, sc, oy);
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER_W, AXIS_H, pw, h - AXIS_H);
    ctx.clip();
    const tb = performance.now();
    this.boxesDrawn = this.drawBoxes(sc, k, oy);
    const tl = performance.now();
    drawLabels(surf, sc, this.slices, this.highlight, k, oy);
    this.timings = [tl - tb, performance.now() - tl];
    drawOverlays(surf, sc, this.slices, k, oy);
    ctx.restore();
    ctx.restore();

    // Axis on top.
    ctx.fillStyle = th.bg;
    ctx.fillRect(0, 0, w, AXIS_H);
    ctx.fillStyle = th.fgDim;
    ctx.strokeStyle = th.grid;
    ctx.beginPath();
    for (const t of tk.ticks) {
      const x = Math.round(GUTTER_W + (t.t - sc.view.start) * k) + 0.5;
      ctx.moveTo(x, AXIS_H - 6);
      ctx.lineTo(x, AXIS_H);
      if (x + 3 + ctx.measureText(t.label).width <= w) ctx.fillText(t.label, x + 3, AXIS_H / 2 - 1);
    }
    ctx.moveTo(0, AXIS_H - 0.5);
    ctx.lineTo(w, AXIS_H - 0.5);
    ctx.moveTo(GUTTER_W - 0.5, 0);
    ctx.lineTo(GUTTER_W - 0.5, AXIS_H); // below the axis: drawGrid's, under the group headers' text
    ctx.stroke();
    ctx.fillStyle = th.bg;
    ctx.fillRect(0, 0, GUTTER_W - 1, AXIS_H - 1);
    ctx.fillStyle = th.fgDim;
    this.axisOrigin = tk.originLabel;
    const corner = sc.unit === "step" ? "steps" : tk.originLabel ? `from ${tk.originLabel}` : "time";
    ctx.fillText(fitText(corner, GUTTER_W - 10, this.charW), 6, AXIS_H / 2 - 1);
    this.labelBoxes = surf.labels ?? [];
  }

  /** How wide `text` draws in the lanes' font (CSS px): what the label column is sized by. */
  measure(text: string, font: string): number {
    this.ctx.font = `11px ${font}`;
    return this.ctx.measureText(text).width;
  }

  private drawGrid(sc: TimelineScene, tks: { t: number }[], k: number, oy: number): void {
    const { ctx, h } = this;
    ctx.strokeStyle = sc.theme.grid;
    ctx.beginPath();
    for (const t of tks) {
      const x = Math.round(GUTTER_W + (t.t - sc.view.start) * k) + 0.5;
      ctx.moveTo(x, AXIS_H);
      ctx.lineTo(x, h);
    }
    // The label column's edge, drawn before the group headers: an expanded group's name and track
    // count run across it without a line through them.
    ctx.moveTo(GUTTER_W - 0.5, AXIS_H);
    ctx.lineTo(GUTTER_W - 0.5, h);
    // Lane separators.
    const { trackY, trackDepths } = sc.layout;
    for (let t = 0; t < trackY.length; t++) {
      if (trackY[t] < 0) continue;
      const y = Math.round(oy + trackY[t] + trackDepths[t] * ROW_H) + 1.5;
      if (y < AXIS_H || y > h) continue;
      ctx.moveTo(0, y);
      ctx.lineTo(this.w, y);
    }
    ctx.stroke();
  }

  private drawBoxes(sc: TimelineScene, k: number, oy: number): number {
    const s = this.slices;
    if (!s || s.n === 0) return 0;
    const { ctx, order, keyStart, row, lastEnd, h } = this;
    const { trackY, trackDepths } = sc.layout;
    const v0 = sc.view.start;
    const xMax = this.w;
    const nc = this.nColors;
    let drawn = 0;
    for (let key = 0; key < keyStart.length - 1; key++) {
      const a = keyStart[key];
      const b = keyStart[key + 1];
      if (a === b) continue;
      const color = key % nc;
      const bucket = Math.floor(key / nc) % 4;
      const lit = key >= 4 * nc || !this.highlight;
      ctx.fillStyle = colorAt(sc.legend, color);
      ctx.globalAlpha = MERGED_ALPHA[bucket] * (lit ? 1 : DIM);
      lastEnd.fill(-Infinity);
      for (let j = a; j < b; j++) {
        const i = order[j];
        const ty = trackY[s.track[i]];
        const d = s.depth[i];
        if (ty < 0 || d >= trackDepths[s.track[i]]) continue;
        const y = oy + ty + d * ROW_H;
        if (y + ROW_H < AXIS_H || y > h) continue;
        const xs = GUTTER_W + (s.start[i] - v0) * k;
        const xe = xs + s.dur[i] * k;
        if (xe < GUTTER_W || xs > xMax) continue;
        // Whole CSS pixels (no anti-aliased edges: crisper and much cheaper to rasterize);
        // a box is at least one pixel wide and skipped when that pixel is already covered.
        let x0 = Math.floor(xs); // the pixel column holding the start
        if (x0 >= xMax) continue;
        let x1 = Math.round(xe);
        if (x1 <= x0) x1 = x0 + 1;
        const r = row[i];
        if (x1 <= lastEnd[r]) continue;
        if (x0 < lastEnd[r]) x0 = lastEnd[r];
        lastEnd[r] = x1;
        if (x0 < GUTTER_W - 1) x0 = GUTTER_W - 1;
        if (x1 > xMax + 1) x1 = xMax + 1;
        ctx.fillRect(x0, y + 1, x1 - x0, ROW_H - 2);
        drawn++;
      }
    }
    ctx.globalAlpha = 1;
    return drawn;
  }
}
