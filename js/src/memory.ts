// Memory / counters panel: one step curve per series on the shared x viewport. Memory series
// (bytes) share one scale, their peak marked and labelled, simulated series tagged; counter series
// (GPU utilisation as a 0-1 fraction, queue lengths, the trace's own counters) are drawn on their
// own scale (0 to their max). A row of checkboxes shows or hides each series. A click lists what
// is live at that time (`_live`).

import { formatBytes, formatNumber, formatTime, type TimeUnit } from "./axis";
import { timeColumn, type Frame } from "./codec";
import { renderLive, type LiveReply } from "./live";
import type { Theme } from "./theme";
import { GUTTER_W, plotWidth } from "./scene";
import type { View } from "./viewport";

export interface SeriesInfo {
  device: string; kind: string; peak_bytes: number; peak_time: number;
  unit: string; // "bytes" (memory) | "fraction" | "count" | "value" (counters)
  max: number;
  /** Several ranks in one view: whose device it is. */
  rank?: number;
}
interface Curve { time: Float64Array; bytes: Float64Array }
/** Geometry of one draw: x of a time, y of a value on a series' scale (its top value). */
interface Plot {
  view: View; th: Theme; h: number; top: number;
  xOf: (t: number) => number;
  yOf: (b: number, scale: number) => number;
}


const PALETTE = ["#1a73e8", "#e8710a", "#188038", "#d01884", "#9334e6", "#12a4af", "#c5221f"];
export const MEMORY_H = 110;

/** Split a memory frame into per-series curves sorted by time. */
export function curvesFromFrame(frame: Frame): { series: SeriesInfo[]; curves: Curve[]; t0: number; t1: number } {
  const raw = Array.isArray(frame.meta.series) ? (frame.meta.series as Array<Record<string, unknown>>) : [];
  const series: SeriesInfo[] = raw.map((s) => ({
    device: String(s?.device ?? ""),
    kind: String(s?.kind ?? "measured"),
    peak_bytes: Number(s?.peak_bytes ?? NaN),
    peak_time: Number(s?.peak_time ?? NaN),
    unit: String(s?.unit ?? "bytes"),
    max: Number(s?.max ?? s?.peak_bytes ?? NaN),
    ...(typeof s?.rank === "number" && Number.isInteger(s.rank) ? { rank: s.rank } : {}),
  }));
  const sc = frame.columns.series;
  const tc = timeColumn(frame, "time");
  const bc = frame.columns.bytes;
  const curves: Curve[] = series.map(() => ({ time: new Float64Array(0), bytes: new Float64Array(0) }));
  if (sc && tc && bc) {
    const counts = new Array<number>(series.length).fill(0);
    for (let i = 0; i < sc.length; i++) if (sc[i] < series.length) counts[sc[i]]++;
    counts.forEach((c, s) => (curves[s] = { time: new Float64Array(c), bytes: new Float64Array(c) }));
    const fill = new Array<number>(series.length).fill(0);
    for (let i = 0; i < sc.length; i++) {
      const s = sc[i];
      if (s >= series.length) continue;
      curves[s].time[fill[s]] = tc[i];
      curves[s].bytes[fill[s]++] = bc[i];
    }
    for (const c of curves) {
      let sorted = true;
      for (let i = 1; i < c.time.length && sorted; i++) sorted = c.time[i] >= c.time[i - 1];
      if (!sorted) {
        const idx = Array.from(c.time, (_, i) => i).sort((a, b) => c.time[a] - c.time[b]);
        c.time = Float64Array.from(idx, (i) => c.time[i]);
        c.bytes = Float64Array.from(idx, (i) => c.bytes[i]);
      }
    }
  }
  const num = (v: unknown): number => (typeof v === "number" ? v : NaN);
  return { series, curves, t0: num(frame.meta.t0), t1: num(frame.meta.t1) };
}

/** The value that maps to the top of the panel for series `s` (memory: the largest memory peak). */
export function scaleTop(s: SeriesInfo, maxBytes: number): number {
  if (s.unit === "bytes") return maxBytes;
  if (s.unit === "fraction") return 1;
  return Number.isFinite(s.max) && s.max > 0 ? s.max : 1;
}

/** A series value as text in its unit. */
export function formatValue(s: SeriesInfo, v: number): string {
  if (s.unit === "bytes") return formatBytes(v);
  if (s.unit === "fraction") return Number.isFinite(v) ? `${formatNumber(v * 100)} %` : formatNumber(v);
  return formatNumber(v);
}

/** A label box on the canvas: x0, y0 (top), x1, y1 (bottom), in CSS px. */
export type LabelBox = [number, number, number, number];

/**
 * Where a label `w` x `h` px whose preferred top is `y` goes so that it overlaps none of
 * `placed`: moved down a line at a time (then up from the preferred place), within [top, bottom];
 * null when there is no room.  The box taken is appended to `placed`.
 */
export function placeLabel(placed: LabelBox[], x: number, y: number, w: number, h: number, top: number,
  bottom: number): number | null {
  const free = (yy: number): boolean => placed.every(([a, b, c, d]) => x + w <= a || x >= c || yy + h <= b || yy >= d);
  const start = Math.min(Math.max(y, top), bottom - h);
  for (let k = 0; ; k++) {
    const down = start + k * h;
    const up = start - k * h;
    if (down > bottom - h && up < top) return null;
    for (const yy of [down, up]) {
      if (yy >= top && yy <= bottom - h && free(yy)) {
        placed.push([x, yy, x + w, yy + h]);
        return yy;
      }
    }
  }
}

/**
 * Legend labels of at most `max` characters that keep what tells the series apart: the prefix
 * all of them share (up to a separator) is cut first, then, if still too long, the middle.
 */
export function legendLabels(names: string[], max = 22): string[] {
  let cut = 0;
  if (names.every((n) => n.length <= max)) return names.slice();
  if (names.length > 1) {
    let common = names[0];
    for (const n of names) while (!n.startsWith(common)) common = common.slice(0, -1);
    // back to the end of a separator, so that no word is cut in two
    const seps = [" · ", " / ", " "];
    let best = 0;
    for (const sep of seps) {
      const at = common.lastIndexOf(sep);
      if (at >= 0) best = Math.max(best, at + sep.length);
    }
    if (names.every((n) => n.length > best)) cut = best;
  }
  return names.map((n) => {
    const rest = cut > 0 ? `…${n.slice(cut).replace(/^[/·]\s*/, "")}` : n;
    if (rest.length <= max) return rest;
    const head = Math.ceil((max - 1) / 2);
    return `${rest.slice(0, head)}…${rest.slice(rest.length - (max - 1 - head))}`;
  });
}

function seriesName(s: SeriesInfo): string {
  const rank = s.rank === undefined ? "" : `rank ${s.rank} · `;
  return `${rank}${s.device || "memory"}${s.kind === "simulated" ? " (simulated)" : ""}`;
}

/** Index of the last sample with time <= t (or 0). */
function floorIndex(times: Float64Array, t: number): number {
  let lo = 0;
  let hi = times.length - 1;
  let r = 0;
  while (lo <= hi) {
    const m = (lo + hi) >> 1;
    if (times[m] <= t) {
      r = m;
      lo = m + 1;
    } else hi = m - 1;
  }
  return r;
}

export class MemoryPanel {
  readonly el: HTMLDivElement;
  readonly canvas: HTMLCanvasElement;
  readonly live: HTMLDivElement;
  readonly toggles: HTMLDivElement;
  /** Indices of the series not drawn (unticked in the checkbox row). */
  readonly hidden = new Set<number>();
  private last: [View, Theme, [number, number] | null] | null = null;
  private ctx: CanvasRenderingContext2D;
  private w = 1;
  private series: SeriesInfo[] = [];
  private overview: Curve[] = [];
  private detail: { curves: Curve[]; t0: number; t1: number } | null = null;
  private maxBytes = 1;
  liveTime: number | null = null;
  hoverTime: number | null = null;

  constructor(parent: HTMLElement) {
    this.el = document.createElement("div");
    this.el.className = "pv-memory";
    this.canvas = document.createElement("canvas");
    this.live = document.createElement("div");
    this.live.className = "pv-live";
    this.toggles = document.createElement("div");
    this.toggles.className = "pv-counters";
    this.el.append(this.toggles, this.canvas, this.live);
    parent.appendChild(this.el);
    const ctx = this.canvas.getContext("2d", { alpha: false });
    if (!ctx) throw new Error("profview: no 2D canvas context");
    this.ctx = ctx;
  }

  get hasData(): boolean { return this.series.length > 0; }

  setOverview(frame: Frame): void {
    const c = curvesFromFrame(frame);
    this.series = c.series;
    this.overview = c.curves;
    this.detail = null;
    let max = 0;
    c.series.forEach((s, si) => {
      if (s.unit !== "bytes") return;
      if (Number.isFinite(s.peak_bytes)) max = Math.max(max, s.peak_bytes);
      const cv = c.curves[si];
      for (let i = 0; i < cv.bytes.length; i++) max = Math.max(max, cv.bytes[i]);
    });
    this.maxBytes = max > 0 ? max : 1;
    this.el.style.display = this.hasData ? "" : "none";
    this.buildToggles();
  }

  /** One checkbox per series (only when there is more than one), ticked = drawn. */
  private buildToggles(): void {
    this.toggles.replaceChildren();
    this.hidden.clear();
    if (this.series.length < 2) return;
    this.series.forEach((s, si) => {
      const label = document.createElement("label");
      label.className = "pv-counter";
      const box = document.createElement("input");
      box.type = "checkbox";
      box.checked = true;
      box.dataset.series = String(si);
      box.addEventListener("change", () => {
        if (box.checked) this.hidden.delete(si);
        else this.hidden.add(si);
        if (this.last) this.draw(...this.last);
      });
      const swatch = document.createElement("span");
      swatch.className = "pv-counter-swatch";
      swatch.style.background = PALETTE[si % PALETTE.length];
      label.append(box, swatch, document.createTextNode(seriesName(s)));
      this.toggles.appendChild(label);
    });
  }

  setDetail(frame: Frame): void {
    const c = curvesFromFrame(frame);
    if (c.curves.length === this.series.length && c.t1 > c.t0) this.detail = { curves: c.curves, t0: c.t0, t1: c.t1 };
  }

  resize(cssW: number, dpr: number): void {
    this.w = Math.max(1, Math.floor(cssW));
    const pw = Math.round(this.w * dpr);
    const ph = Math.round(MEMORY_H * dpr);
    if (this.canvas.width !== pw || this.canvas.height !== ph) {
      this.canvas.width = pw;
      this.canvas.height = ph;
    }
    this.canvas.style.width = `${this.w}px`;
    this.canvas.style.height = `${MEMORY_H}px`;
    this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }

  /** Tooltip lines: bytes in use per series at time t (step curve: last sample at or before t). */
  linesAt(view: View, t: number, unit: TimeUnit): string[] {
    const curves = this.curvesFor(view);
    const lines = [`at ${formatTime(t, unit)}`];
    this.series.forEach((s, i) => {
      const c = curves[i];
      if (!c || c.time.length === 0 || this.hidden.has(i)) return;
      const j = floorIndex(c.time, t);
      const b = c.time[j] <= t ? c.bytes[j] : 0;
      lines.push(`${seriesName(s)}: ${formatValue(s, b)}`);
    });
    lines.push("click: list what is live then");
    return lines;
  }

  timeAt(view: View, x: number): number {
    return view.start + ((x - GUTTER_W) / plotWidth(this.w)) * (view.end - view.start);
  }

  /** The detail curves when they cover the view, else the overview's. */
  private curvesFor(view: View): Curve[] {
    const useDetail = this.detail && this.detail.t0 <= view.start && this.detail.t1 >= view.end;
    return useDetail && this.detail ? this.detail.curves : this.overview;
  }

  draw(view: View, th: Theme, range: [number, number] | null): void {
    if (!this.hasData) return;
    this.last = [view, th, range];
    const { ctx, w } = this;
    const h = MEMORY_H;
    const pw = plotWidth(w);
    const k = pw / (view.end - view.start);
    const top = 8;
    const p: Plot = {
      view, th, h, top,
      xOf: (t) => GUTTER_W + (t - view.start) * k,
      yOf: (b, scale) => h - 4 - (b / scale) * (h - 4 - top),
    };
    this.drawBackground(p);
    const curves = this.curvesFor(view);
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER_W, 0, pw, h);
    ctx.clip();
    if (range) this.drawRange(p, range);
    const placed: LabelBox[] = [];
    let peaks = 0;
    const shown = this.series.map((s, si) => [s, si] as const)
      .filter(([, si]) => curves[si] && curves[si].time.length > 0 && !this.hidden.has(si));
    for (const [s, si] of shown) this.drawCurve(p, s, curves[si], PALETTE[si % PALETTE.length], scaleTop(s, this.maxBytes));
    // the peaks over every curve, so that no later curve crosses an earlier label
    for (const [s, si] of shown) {
      if (this.drawPeak(p, s, PALETTE[si % PALETTE.length], scaleTop(s, this.maxBytes), placed)) peaks++;
    }
    this.canvas.dataset.peakLabels = String(peaks);
    this.canvas.dataset.peakBoxes = JSON.stringify(placed.map((b) => b.map((v) => Math.round(v * 10) / 10)));
    ctx.lineWidth = 1;
    this.drawCursors(p);
    ctx.restore();
    this.drawGutter(p);
  }

  /** Background, the panel's top edge, the gutter's edge and the line of the memory scale's top. */
  private drawBackground(p: Plot): void {
    const { ctx, w } = this;
    const { th, h } = p;
    ctx.fillStyle = th.bg;
    ctx.fillRect(0, 0, w, h);
    ctx.font = `11px ${th.font}`;
    ctx.textBaseline = "middle";
    ctx.strokeStyle = th.grid;
    ctx.beginPath();
    ctx.moveTo(0, 0.5);
    ctx.lineTo(w, 0.5);
    ctx.moveTo(GUTTER_W - 0.5, 0);
    ctx.lineTo(GUTTER_W - 0.5, h);
    ctx.moveTo(GUTTER_W, p.yOf(this.maxBytes, this.maxBytes) + 0.5);
    ctx.lineTo(w, p.yOf(this.maxBytes, this.maxBytes) + 0.5);
    ctx.stroke();
  }

  /** The selected time range, shaded across the panel. */
  private drawRange(p: Plot, range: [number, number]): void {
    const { ctx } = this;
    const a = p.xOf(Math.min(...range));
    const b = p.xOf(Math.max(...range));
    ctx.fillStyle = p.th.accent;
    ctx.globalAlpha = 0.14;
    ctx.fillRect(a, 0, Math.max(1, b - a), p.h);
    ctx.globalAlpha = 1;
  }

  /** One series as a step curve (dashed when simulated) over a light fill. */
  private drawCurve(p: Plot, s: SeriesInfo, c: Curve, color: string, scale: number): void {
    const { ctx, w } = this;
    const { view, h } = p;
    const yOf = (b: number): number => p.yOf(b, scale);
    let i = floorIndex(c.time, view.start);
    ctx.beginPath();
    let y = yOf(c.time[i] <= view.start ? c.bytes[i] : 0);
    ctx.moveTo(Math.max(GUTTER_W - 1, p.xOf(c.time[i])), y);
    for (i = i + 1; i < c.time.length; i++) {
      const x = p.xOf(c.time[i]);
      ctx.lineTo(x, y);
      y = yOf(c.bytes[i]);
      ctx.lineTo(x, y);
      if (c.time[i] > view.end) break;
    }
    ctx.lineTo(w + 1, y);
    ctx.strokeStyle = color;
    ctx.lineWidth = 1.5;
    ctx.setLineDash(s.kind === "simulated" ? [4, 3] : []);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.lineTo(w + 1, h);
    ctx.lineTo(GUTTER_W - 1, h);
    ctx.closePath();
    ctx.fillStyle = color;
    ctx.globalAlpha = s.unit === "bytes" ? 0.1 : 0.04;
    ctx.fill();
    ctx.globalAlpha = 1;
  }

  /**
   * A series' peak: a marker and a `peak …` label (when the peak is in view), placed clear of the
   * labels drawn before it (`placed`); true when the label was drawn.
   */
  private drawPeak(p: Plot, s: SeriesInfo, color: string, scale: number, placed: LabelBox[]): boolean {
    if (!Number.isFinite(s.peak_time) || !Number.isFinite(s.peak_bytes)) return false;
    const { ctx, w } = this;
    const px = p.xOf(s.peak_time);
    const py = p.yOf(s.peak_bytes, scale);
    if (px < GUTTER_W - 2 || px > w + 2) return false;
    ctx.fillStyle = color;
    ctx.beginPath();
    ctx.moveTo(px, py - 1);
    ctx.lineTo(px - 4, py - 8);
    ctx.lineTo(px + 4, py - 8);
    ctx.closePath();
    ctx.fill();
    // several ranks: say whose peak it is
    const text = `${s.rank === undefined ? "" : `rank ${s.rank} `}peak ${formatBytes(s.peak_bytes)}`;
    const tw = ctx.measureText(text).width;
    const lx = px + 6 + tw > w ? px - 6 - tw : px + 6;
    const lineH = 12;
    // the text's baseline is 4 px above the peak; its box is the line above that
    const at = placeLabel(placed, lx, Math.max(p.top, py - 4) - lineH + 2, tw, lineH, 0, p.h - 2);
    if (at === null) return false;
    ctx.fillStyle = p.th.bg;  // over the curves, so that the text stays legible
    ctx.globalAlpha = 0.85;
    ctx.fillRect(lx - 1, at, tw + 2, lineH);
    ctx.globalAlpha = 1;
    ctx.fillStyle = p.th.fg;
    ctx.fillText(text, lx, at + lineH - 2);
    return true;
  }

  /** Vertical lines at the hovered time and at the time whose live allocations are listed. */
  private drawCursors(p: Plot): void {
    const { ctx } = this;
    if (this.hoverTime !== null) {
      ctx.fillStyle = p.th.fgDim;
      ctx.fillRect(Math.round(p.xOf(this.hoverTime)), 0, 1, p.h);
    }
    if (this.liveTime !== null) {
      ctx.fillStyle = p.th.fg;
      ctx.fillRect(Math.round(p.xOf(this.liveTime)), 0, 1, p.h);
    }
  }

  /** Gutter: the scale's top and zero, and a legend of the first four series drawn. */
  private drawGutter(p: Plot): void {
    const { ctx } = this;
    const { th, h } = p;
    ctx.fillStyle = th.fgDim;
    const bytesShown = this.series.some((s, si) => s.unit === "bytes" && !this.hidden.has(si));
    ctx.fillText(bytesShown ? formatBytes(this.maxBytes) : "max", 6, p.yOf(this.maxBytes, this.maxBytes) + 6);
    ctx.fillText("0", 6, h - 8);
    const shown = this.series.map((s, si) => [s, si] as const).filter(([, si]) => !this.hidden.has(si)).slice(0, 4);
    const labels = legendLabels(shown.map(([s]) => seriesName(s)));
    shown.forEach(([, si], row) => {
      const y = 34 + row * 14;
      ctx.fillStyle = PALETTE[si % PALETTE.length];
      ctx.fillRect(6, y - 4, 10, 8);
      ctx.fillStyle = th.fg;
      ctx.fillText(labels[row], 20, y);
    });
    this.canvas.dataset.legend = JSON.stringify(labels);
  }

  /** Fill the list under the panel from a `_live` reply (text only). */
  showLive(reply: LiveReply | null, unit: TimeUnit, message?: string): void {
    renderLive(this.live, reply, unit, message);
  }
}
