// Canvas renderer of the timeline: axis, process group headers, lanes, boxes batched per
// colour, labels clipped inside wide boxes, highlight/selection/flows/range overlays.

import { ticks, type TimeUnit } from "./axis";
import type { Slices } from "./lod";
import { GROUP_H, ROW_H, type Layout, type TrackInfo } from "./layout";
import { laneRuns, type SummaryLane } from "./summary";
import { colorAt, textOn, type LegendEntry, type Theme } from "./theme";
import type { View } from "./viewport";

export const AXIS_H = 22;
/**
 * Width (CSS px) of the lane-label column; the user widens it by dragging its edge (input.ts).
 * A live binding: every importer sees the new value (one width for the views on a page).
 */
export let GUTTER_W = 150;
export const GUTTER_MIN = 60;

/** Set the label column's width, keeping at least 120 px of plot in a `totalW` wide canvas. */
export function setGutterWidth(w: number, totalW: number): number {
  GUTTER_W = Math.round(Math.max(GUTTER_MIN, Math.min(w, Math.max(GUTTER_MIN, totalW - 120))));
  return GUTTER_W;
}
const MERGED_ALPHA = [1, 0.4, 0.6, 0.8];
/** Indent (CSS px) of a process group's label inside a rank section. */
const INDENT = 10;
/** Colour of communication in summary lanes (work takes the accent colour). */
export const COMM_COLOR = "#f28e2b";
const DIM = 0.18;

export interface Flow {
  source: number; target: number;
  source_track: number; target_track: number;
  source_time: number; target_time: number;
}

export interface SelectedBox { id: number; track: number; depth: number; start: number; dur: number }

export interface TimelineScene {
  view: View;
  unit: TimeUnit;
  tracks: TrackInfo[];
  layout: Layout;
  legend: LegendEntry[];
  theme: Theme;
  scrollY: number;
  selected: SelectedBox | null;
  hoverBox: number;
  range: [number, number] | null;
  rangeTracks: number[] | null;
  flows: Flow[];
  /** Busy lanes of collapsed groups, by group key (`_summary`). */
  summary?: Map<string, SummaryLane>;
  /** Text after a group's name in its header, by group key (a rank's clock offset). */
  notes?: Map<string, string>;
}

/** Geometry shared by the timeline and memory panels. */
export const plotWidth = (cssWidth: number): number => Math.max(1, cssWidth - GUTTER_W);

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

  draw(sc: TimelineScene): void {
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
    this.drawGroups(sc, oy);
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER_W, AXIS_H, pw, h - AXIS_H);
    ctx.clip();
    const tb = performance.now();
    this.boxesDrawn = this.drawBoxes(sc, k, oy);
    const tl = performance.now();
    this.drawLabels(sc, k, oy);
    this.timings = [tl - tb, performance.now() - tl];
    this.drawOverlays(sc, k, oy);
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
    ctx.lineTo(GUTTER_W - 0.5, h);
    ctx.stroke();
    ctx.fillStyle = th.bg;
    ctx.fillRect(0, 0, GUTTER_W - 1, AXIS_H - 1);
    ctx.fillStyle = th.fgDim;
    this.axisOrigin = tk.originLabel;
    const corner = sc.unit === "step" ? "steps" : tk.originLabel ? `from ${tk.originLabel}` : "time";
    ctx.fillText(this.fit(corner, GUTTER_W - 10), 6, AXIS_H / 2 - 1);
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

  private drawGroups(sc: TimelineScene, oy: number): void {
    const { ctx, h, w } = this;
    const th = sc.theme;
    for (const g of sc.layout.groups) {
      const y = oy + g.y;
      const indent = 6 + g.level * INDENT;
      if (y + GROUP_H >= AXIS_H && y <= h) {
        ctx.fillStyle = th.header;
        ctx.fillRect(0, y, w, GROUP_H - 1);
        if (g.kind === "section") ctx.fillRect(0, y, w, GROUP_H - 1); // a darker band for a rank
        const lane = g.collapsed ? sc.summary?.get(g.key) : undefined;
        ctx.fillStyle = th.fg;
        ctx.font = `bold 11px ${th.font}`;
        const name = g.name || g.process || "(no process)";
        const note = sc.notes?.get(g.key);
        const count = `(${g.tracks.length} track${g.tracks.length === 1 ? "" : "s"})`;
        // with a busy lane the label has the gutter only: the short note ("+4.033 ms"), no count
        const label = lane
          ? `▸ ${name}${note ? ` ${note.slice(note.indexOf(" ") + 1)}` : ""}`
          : `${g.collapsed ? "▸" : "▾"} ${name}${note ? `  ${note}` : ""}  ${count}`;
        ctx.fillText(this.fit(label, (lane ? GUTTER_W : w) - indent - 4), indent, y + GROUP_H / 2);
        ctx.font = `11px ${th.font}`;
        if (lane) this.drawLane(sc, lane, y);
      }
      if (g.collapsed || g.kind === "section") continue;
      ctx.fillStyle = th.fgDim;
      for (const t of g.tracks) {
        const ty = oy + sc.layout.trackY[t];
        if (ty + ROW_H < AXIS_H || ty > h) continue;
        ctx.fillText(this.fit(sc.tracks[t]?.name ?? "", GUTTER_W - 14 - indent, true), 8 + indent, ty + ROW_H / 2);
      }
    }
  }

  /** A collapsed group's summary lane in its header row: work, and communication below it. */
  private drawLane(sc: TimelineScene, lane: SummaryLane, y: number): void {
    const { ctx } = this;
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER_W, y, this.w - GUTTER_W, GROUP_H);
    ctx.clip();
    const bands: Array<[number, string, number, number]> = [
      [0, sc.theme.accent, y + 3, GROUP_H - 7], [1, COMM_COLOR, y + GROUP_H / 2, GROUP_H / 2 - 4],
    ];
    for (const [kind, color, top, height] of bands) {
      const runs = laneRuns(lane.start[kind], lane.dur[kind], sc.view, GUTTER_W, this.w);
      ctx.fillStyle = color;
      ctx.globalAlpha = kind === 0 ? 0.55 : 0.9;
      for (let i = 0; i < runs.length; i += 2) ctx.fillRect(runs[i], top, runs[i + 1] - runs[i], height);
    }
    ctx.globalAlpha = 1;
    ctx.restore();
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

  private fit(text: string, widthPx: number, middle = false): string {
    const max = Math.floor(widthPx / this.charW);
    if (max <= 0) return "";
    if (text.length <= max) return text;
    if (max <= 1) return "…";
    if (!middle) return `${text.slice(0, max - 1)}…`;
    // Track names differ at both ends ("/job:localhost/.../device:GPU:0 stream 7"): keep both.
    const tail = Math.ceil((max - 1) * 0.6);
    return `${text.slice(0, max - 1 - tail)}…${text.slice(text.length - tail)}`;
  }

  private drawLabels(sc: TimelineScene, k: number, oy: number): void {
    const s = this.slices;
    if (!s) return;
    const { ctx, h } = this;
    const { trackY, trackDepths } = sc.layout;
    const minW = this.charW * 3 + 6;
    const textColors = sc.legend.map((e) => textOn(e.color));
    for (let i = 0; i < s.n; i++) {
      if (s.label[i] < 0 || s.dur[i] * k < minW) continue;
      const ty = trackY[s.track[i]];
      if (ty < 0 || s.depth[i] >= trackDepths[s.track[i]]) continue;
      const y = oy + ty + s.depth[i] * ROW_H;
      if (y + ROW_H < AXIS_H || y > h) continue;
      const x0 = Math.max(GUTTER_W, GUTTER_W + (s.start[i] - sc.view.start) * k);
      const x1 = Math.min(this.w, GUTTER_W + (s.start[i] + s.dur[i] - sc.view.start) * k);
      if (x1 - x0 < minW) continue;
      const text = this.fit(s.labels[s.label[i]] ?? "", x1 - x0 - 6);
      if (!text) continue;
      const lit = !this.highlight || this.highlight.has(s.id[i]);
      ctx.globalAlpha = lit ? 1 : 0.35;
      ctx.fillStyle = textColors[s.color[i]] ?? "#111";
      ctx.fillText(text, x0 + 3, y + ROW_H / 2);
    }
    ctx.globalAlpha = 1;
  }

  /**
   * y (canvas) of the middle of (track, depth); for a track inside a collapsed group the middle
   * of that group's header row (flow arrows end there); NaN when not shown at all.
   */
  rowMid(sc: TimelineScene, track: number, depth: number): number {
    const ty = sc.layout.trackY[track];
    if (ty === undefined) return NaN;
    if (ty < 0) {
      const home = sc.layout.home?.[track] ?? -1;
      return home >= 0 ? AXIS_H - sc.scrollY + home + GROUP_H / 2 : NaN;
    }
    const d = Math.min(depth, Math.max(0, sc.layout.trackDepths[track] - 1));
    return AXIS_H - sc.scrollY + ty + d * ROW_H + ROW_H / 2;
  }

  private drawOverlays(sc: TimelineScene, k: number, oy: number): void {
    const { ctx, h } = this;
    const s = this.slices;
    const xOf = (t: number): number => GUTTER_W + (t - sc.view.start) * k;
    if (sc.range) {
      const a = xOf(Math.min(...sc.range));
      const b = xOf(Math.max(...sc.range));
      ctx.fillStyle = sc.theme.accent;
      ctx.globalAlpha = 0.14;
      if (sc.rangeTracks) {
        for (const t of sc.rangeTracks) {
          const ty = sc.layout.trackY[t];
          if (ty >= 0) ctx.fillRect(a, oy + ty, Math.max(1, b - a), sc.layout.trackDepths[t] * ROW_H);
        }
      } else ctx.fillRect(a, AXIS_H, Math.max(1, b - a), h - AXIS_H);
      ctx.globalAlpha = 0.8;
      ctx.fillRect(a, AXIS_H, 1, h - AXIS_H);
      ctx.fillRect(b, AXIS_H, 1, h - AXIS_H);
      ctx.globalAlpha = 1;
    }
    ctx.lineWidth = 1;
    if (s && sc.hoverBox >= 0 && sc.hoverBox < s.n) {
      const i = sc.hoverBox;
      const y = this.rowMid(sc, s.track[i], s.depth[i]) - ROW_H / 2;
      ctx.strokeStyle = sc.theme.fg;
      ctx.globalAlpha = 0.6;
      ctx.strokeRect(xOf(s.start[i]) - 0.5, y + 0.5, Math.max(1, s.dur[i] * k) + 1, ROW_H - 1);
      ctx.globalAlpha = 1;
    }
    const sel = sc.selected;
    if (sel) {
      const y = this.rowMid(sc, sel.track, sel.depth) - ROW_H / 2;
      if (Number.isFinite(y) && sc.layout.trackY[sel.track] >= 0) {
        ctx.strokeStyle = sc.theme.fg;
        ctx.lineWidth = 2;
        ctx.strokeRect(xOf(sel.start) - 1, y, Math.max(2, sel.dur * k) + 2, ROW_H);
        ctx.lineWidth = 1;
      }
    }
    if (sc.flows.length) this.drawFlows(sc, xOf, oy);
  }

  private drawFlows(sc: TimelineScene, xOf: (t: number) => number, _oy: number): void {
    const { ctx } = this;
    // Depth rows of the flow ends drawn as their own boxes: one pass over the boxes.
    const flows = sc.flows.slice(0, 200);
    const depths = new Map<number, number>();
    for (const f of flows) {
      depths.set(f.source, 0);
      depths.set(f.target, 0);
    }
    const s = this.slices;
    if (s) for (let i = 0; i < s.n; i++) if (s.id[i] >= 0 && depths.has(s.id[i])) depths.set(s.id[i], s.depth[i]);
    if (sc.selected) depths.set(sc.selected.id, sc.selected.depth);
    const depthOf = (id: number): number => depths.get(id) ?? 0;
    ctx.strokeStyle = sc.theme.accent;
    ctx.fillStyle = sc.theme.accent;
    ctx.lineWidth = 1.5;
    for (const f of flows) {
      const x0 = xOf(f.source_time);
      const x1 = xOf(f.target_time);
      const y0 = this.rowMid(sc, f.source_track, depthOf(f.source));
      const y1 = this.rowMid(sc, f.target_track, depthOf(f.target));
      if (!Number.isFinite(y0) || !Number.isFinite(y1)) continue;
      ctx.beginPath();
      ctx.moveTo(x0, y0);
      const cx = (x0 + x1) / 2;
      ctx.bezierCurveTo(cx, y0, cx, y1, x1, y1);
      ctx.stroke();
      const ang = Math.atan2(y1 - y0, Math.max(4, x1 - cx));
      ctx.beginPath();
      ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - 7 * Math.cos(ang - 0.4), y1 - 7 * Math.sin(ang - 0.4));
      ctx.lineTo(x1 - 7 * Math.cos(ang + 0.4), y1 - 7 * Math.sin(ang + 0.4));
      ctx.closePath();
      ctx.fill();
    }
    ctx.lineWidth = 1;
  }
}
