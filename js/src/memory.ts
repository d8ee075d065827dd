// Memory / counters panel: one step curve per series on the shared x viewport, in tracks of one
// unit each (counter_tracks.ts): memory in bytes, GPU utilisation in %, queue lengths in queued
// launches, each trace counter on its own axis; every track has its title, its labelled maximum
// and a legend of all its series, and every peak label is in its series' unit and overlaps no
// other. A row of checkboxes shows or hides each series. A click lists what is live at that time
// (`_live`).

import { formatTime, type TimeUnit } from "./axis";
import { timeColumn, type Frame } from "./codec";
import {
  colorOf, dashOf, fitMiddle, formatValue, layoutTracks, maxLabel, seriesLabel, tracksHeight,
  LEGEND_ROW, type SeriesInfo, type Track,
} from "./counter_tracks";
import { renderLive, type LiveReply } from "./live";
import type { Theme } from "./theme";
import { GUTTER_W, plotWidth } from "./scene";
import type { View } from "./viewport";

export { formatValue, type SeriesInfo } from "./counter_tracks";

interface Curve { time: Float64Array; bytes: Float64Array }
/** Geometry of one draw: x of a time, y of a value on a series' scale (its top value). */
interface Plot {
  view: View; th: Theme; h: number; top: number;
  xOf: (t: number) => number;
  yOf: (b: number, scale: number) => number;
}


/** Series' full names in the checkbox row and the tooltip. */
function seriesName(s: SeriesInfo): string {
  const rank = s.rank === undefined ? "" : `rank ${s.rank} · `;
  return `${rank}${s.device || "memory"}${s.kind === "simulated" ? " (simulated)" : ""}`;
}

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
    ...(typeof s?.axis === "string" && s.axis ? { axis: s.axis } : {}),
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
  private dpr = 1;
  private series: SeriesInfo[] = [];
  private overview: Curve[] = [];
  private detail: { curves: Curve[]; t0: number; t1: number } | null = null;
  /** The largest sample of each series' overview curve (memory: may exceed the reported peak). */
  private curveMax: number[] = [];
  private tracks: Track[] = [];
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

  /** Height of the panel (CSS px): its tracks stacked. */
  get height(): number { return tracksHeight(this.tracks); }

  setOverview(frame: Frame): void {
    const c = curvesFromFrame(frame);
    this.series = c.series;
    this.overview = c.curves;
    this.detail = null;
    this.curveMax = c.curves.map((cv) => cv.bytes.reduce((m, v) => (v > m ? v : m), -Infinity));
    this.el.style.display = this.hasData ? "" : "none";
    this.buildToggles();
    this.relayout();
  }

  /** Tracks of the series drawn; the canvas follows their height. */
  private relayout(): void {
    this.tracks = layoutTracks(this.series, (i) => !this.hidden.has(i),
      (i) => (this.series[i].unit === "bytes" ? this.curveMax[i] : NaN));
    this.resize(this.w, this.dpr);
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
        this.relayout();
        if (this.last) this.draw(...this.last);
      });
      const swatch = document.createElement("span");
      swatch.className = "pv-counter-swatch";
      swatch.style.background = colorOf(si);
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
    this.dpr = dpr;
    const h = this.height;
    const pw = Math.round(this.w * dpr);
    const ph = Math.round(h * dpr);
    if (this.canvas.width !== pw || this.canvas.height !== ph) {
      this.canvas.width = pw;
      this.canvas.height = ph;
    }
    this.canvas.style.width = `${this.w}px`;
    this.canvas.style.height = `${h}px`;
    this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  }

  /** Tooltip lines: each shown series' value at time t (step curve: last sample at or before t). */
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
    const h = this.height;
    const pw = plotWidth(w);
    const k = pw / (view.end - view.start);
    ctx.fillStyle = th.bg;
    ctx.fillRect(0, 0, w, h);
    ctx.font = `11px ${th.font}`;
    ctx.textBaseline = "middle";
    const curves = this.curvesFor(view);
    const placed: LabelBox[] = [];
    const peaks: string[] = [];
    const xOf = (t: number): number => GUTTER_W + (t - view.start) * k;
    for (const t of this.tracks) {
      const p: Plot = {
        view, th, h: t.h, top: t.top, xOf,
        yOf: (b, scale) => t.top + t.h - 4 - (b / scale) * (t.h - 12),
      };
      this.drawTrackFrame(p, t);
      ctx.save();
      ctx.beginPath();
      ctx.rect(GUTTER_W, t.top, pw, t.h);
      ctx.clip();
      if (range) this.drawRange(p, range);
      const shown = t.series.filter((si) => curves[si] && curves[si].time.length > 0);
      for (const si of shown) this.drawCurve(p, si, curves[si], t.scale);
      // the peaks over every curve, so that no later curve crosses an earlier label
      for (const si of shown) {
        const text = this.drawPeak(p, this.series[si], colorOf(si), t.scale, placed);
        if (text) peaks.push(text);
      }
      ctx.lineWidth = 1;
      this.drawCursors(p);
      ctx.restore();
      this.drawGutter(p, t);
    }
    this.canvas.dataset.peakLabels = String(peaks.length);
    this.canvas.dataset.peakTexts = JSON.stringify(peaks);
    this.canvas.dataset.peakBoxes = JSON.stringify(placed.map((b) => b.map((v) => Math.round(v * 10) / 10)));
  }

  /** A track's top edge, the gutter's edge and the line of the track's maximum. */
  private drawTrackFrame(p: Plot, t: Track): void {
    const { ctx, w } = this;
    ctx.strokeStyle = p.th.grid;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(0, t.top + 0.5);
    ctx.lineTo(w, t.top + 0.5);
    ctx.moveTo(GUTTER_W - 0.5, t.top);
    ctx.lineTo(GUTTER_W - 0.5, t.top + t.h);
    const yMax = Math.round(p.yOf(t.scale, t.scale)) + 0.5;
    ctx.moveTo(GUTTER_W, yMax);
    ctx.lineTo(w, yMax);
    ctx.stroke();
  }

  /** The selected time range, shaded across the track. */
  private drawRange(p: Plot, range: [number, number]): void {
    const { ctx } = this;
    const a = p.xOf(Math.min(...range));
    const b = p.xOf(Math.max(...range));
    ctx.fillStyle = p.th.accent;
    ctx.globalAlpha = 0.14;
    ctx.fillRect(a, p.top, Math.max(1, b - a), p.h);
    ctx.globalAlpha = 1;
  }

  /** One series as a step curve (dashed when simulated, or past the twelfth colour) over a light fill. */
  private drawCurve(p: Plot, si: number, c: Curve, scale: number): void {
    const { ctx, w } = this;
    const s = this.series[si];
    const color = colorOf(si);
    const { view } = p;
    const bottom = p.top + p.h;
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
    ctx.setLineDash(dashOf(si, s.kind === "simulated"));
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.lineTo(w + 1, bottom);
    ctx.lineTo(GUTTER_W - 1, bottom);
    ctx.closePath();
    ctx.fillStyle = color;
    ctx.globalAlpha = s.unit === "bytes" ? 0.1 : 0.05;
    ctx.fill();
    ctx.globalAlpha = 1;
  }

  /**
   * A series' peak: a marker and a `peak …` label in the series' unit (when the peak is in view),
   * placed inside its track clear of the labels drawn before it (`placed`); the text when drawn.
   */
  private drawPeak(p: Plot, s: SeriesInfo, color: string, scale: number, placed: LabelBox[]): string | null {
    if (!Number.isFinite(s.peak_time) || !Number.isFinite(s.peak_bytes)) return null;
    const { ctx, w } = this;
    const px = p.xOf(s.peak_time);
    const py = p.yOf(s.peak_bytes, scale);
    if (px < GUTTER_W - 2 || px > w + 2) return null;
    ctx.fillStyle = color;
    ctx.beginPath();
    ctx.moveTo(px, py - 1);
    ctx.lineTo(px - 4, py - 8);
    ctx.lineTo(px + 4, py - 8);
    ctx.closePath();
    ctx.fill();
    // several ranks: say whose peak it is
    const text = `${s.rank === undefined ? "" : `rank ${s.rank} `}peak ${formatValue(s, s.peak_bytes)}`;
    const tw = ctx.measureText(text).width;
    const lx = px + 6 + tw > w ? px - 6 - tw : px + 6;
    const lineH = 12;
    // the text's baseline is 4 px above the peak; its box is the line above that
    const at = placeLabel(placed, lx, Math.max(p.top, py - 4) - lineH + 2, tw, lineH, p.top + 1, p.top + p.h - 2);
    if (at === null) return null;
    ctx.fillStyle = p.th.bg;  // over the curves, so that the text stays legible
    ctx.globalAlpha = 0.85;
    ctx.fillRect(lx - 1, at, tw + 2, lineH);
    ctx.globalAlpha = 1;
    ctx.fillStyle = color;
    ctx.fillRect(lx - 1, at + lineH - 1, tw + 2, 1);
    ctx.fillStyle = p.th.fg;
    ctx.fillText(text, lx, at + lineH / 2);
    return text;
  }

  /** Vertical lines at the hovered time and at the time whose live allocations are listed. */
  private drawCursors(p: Plot): void {
    const { ctx } = this;
    if (this.hoverTime !== null) {
      ctx.fillStyle = p.th.fgDim;
      ctx.fillRect(Math.round(p.xOf(this.hoverTime)), p.top, 1, p.h);
    }
    if (this.liveTime !== null) {
      ctx.fillStyle = p.th.fg;
      ctx.fillRect(Math.round(p.xOf(this.liveTime)), p.top, 1, p.h);
    }
  }

  /** `text` cut in the middle until it fits `maxW` px. */
  private fit(text: string, maxW: number): string {
    let out = text;
    for (let n = text.length; n > 1 && this.ctx.measureText(out).width > maxW; n--) out = fitMiddle(text, n - 1);
    return out;
  }

  /** A track's gutter: its title, its maximum in its unit, 0, and a legend row per series. */
  private drawGutter(p: Plot, t: Track): void {
    const { ctx } = this;
    const { th } = p;
    const right = GUTTER_W - 6;
    const first = this.series[t.series[0]];
    const max = maxLabel(t, first);
    ctx.fillStyle = th.fg;
    ctx.textAlign = "left";
    // each text's box (x0, y0, x1, y1) in `data-gutter-boxes`: tests check none leaves the column
    const boxes: number[][] = [];
    const put = (text: string, x: number, y: number): void => {
      ctx.fillText(text, x, y);
      const tw = ctx.measureText(text).width;
      const x0 = ctx.textAlign === "right" ? x - tw : x;
      boxes.push([x0, y - 6, x0 + tw, y + 6].map((v) => Math.round(v * 10) / 10));
    };
    const title = this.fit(t.title, right - 6);
    put(title, 6, t.top + 9);
    ctx.fillStyle = th.fgDim;
    put(this.fit(`max ${max}`, right - 6), 6, t.top + 21);
    ctx.textAlign = "right";
    put("0", right, t.top + t.h - 7);
    ctx.textAlign = "left";
    const legend: string[] = [];
    t.series.forEach((si, row) => {
      const y = t.top + 30 + row * LEGEND_ROW + LEGEND_ROW / 2;
      ctx.fillStyle = colorOf(si);
      ctx.fillRect(6, y - 4, 10, 8);
      ctx.fillStyle = th.fg;
      const label = this.fit(seriesLabel(this.series[si]), right - 20 - 12);
      put(label, 20, y);
      legend.push(label);
    });
    const all = this.canvas.dataset.tracks && t !== this.tracks[0] ? JSON.parse(this.canvas.dataset.tracks) as unknown[] : [];
    all.push({ title: t.title, unit: t.unit, top: t.top, h: t.h, max, legend, boxes,
      colors: t.series.map(colorOf), series: t.series });
    this.canvas.dataset.tracks = JSON.stringify(all);
  }

  /** Fill the list under the panel from a `_live` reply (text only). */
  showLive(reply: LiveReply | null, unit: TimeUnit, message?: string): void {
    renderLive(this.live, reply, unit, message);
  }
}
