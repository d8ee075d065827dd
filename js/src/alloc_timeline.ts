// The active memory timeline of a CUDA memory snapshot (`_alloc_timeline` frame,
// jupyter_profview/widget/alloc_timeline.py), as PyTorch's memory_viz draws it: each live
// allocation a band from its alloc to its free, stacked (the earlier allocation lower) on one band
// that sums up all the smaller ones, so that the top edge is the allocated total; on the view's
// time axis (the timeline's gutter and plot width). Hover: size and address; click: the
// allocation's stack (text) and the segments at that time (segments.ts).

import { formatBytes, formatTime, type TimeUnit } from "./axis";
import type { Frame } from "./codec";
import { el } from "./dom";
import type { PanelModule } from "./panel";
import { GUTTER_W } from "./scene";
import { hex, parseSegments, SegmentView } from "./segments";

export interface Band { start: number; end: number; size: number; addr: number; open: boolean; row: number; stack: number }
export interface AllocTimeline {
  device: string; devices: string[]; window: [number, number]; extent: [number, number];
  bands: Band[]; count: number; complete: boolean;
  restTime: number[]; restBytes: number[]; frames: string[]; stacks: number[][];
}
/** One band's pieces: over [t0[i], t1[i]) its bottom edge is bottom[i]. */
export interface Piece { t0: number[]; t1: number[]; bottom: number[] }
export interface Stacked { pieces: Piece[]; restT0: number[]; restT1: number[]; rest: number[]; peak: number; peakTime: number }

const H = 180;

export function parseAllocTimeline(frame: Frame): AllocTimeline | null {
  const c = frame.columns;
  const m = frame.meta as Record<string, unknown>;
  if (!c.size) return null;
  const bands: Band[] = [];
  for (let i = 0; i < c.size.length; i++) {
    bands.push({ start: c.start[i], end: c.end[i], size: c.size[i], addr: c.addr[i], open: c.open[i] === 1,
      row: c.row[i], stack: c.stack[i] });
  }
  const nums = (v: unknown): number[] => (Array.isArray(v) ? v.map(Number) : []);
  const pair = (v: unknown): [number, number] => { const a = nums(v); return [a[0] ?? 0, a[1] ?? 0]; };
  return {
    device: String(m.device ?? ""), devices: Array.isArray(m.devices) ? m.devices.map(String) : [],
    window: pair(m.window), extent: pair(m.extent), bands, count: Number(m.bands) || 0, complete: m.complete === true,
    restTime: c.rest_time ? Array.from(c.rest_time) : [], restBytes: c.rest_bytes ? Array.from(c.rest_bytes) : [],
    frames: Array.isArray(m.frames) ? m.frames.map(String) : [],
    stacks: Array.isArray(m.stacks) ? m.stacks.map((s) => nums(s)) : [],
  };
}

/** Stack the bands over [from, to]: between consecutive breakpoints (a band's alloc or free, a
 * point of the rest curve) the rest at the bottom, then every live band in order. */
export function stack(d: AllocTimeline, from: number, to: number): Stacked {
  const times = new Set<number>([from]);
  for (const b of d.bands) {
    if (b.start > from && b.start < to) times.add(b.start);
    if (b.end > from && b.end < to) times.add(b.end);
  }
  for (const t of d.restTime) if (t > from && t < to) times.add(t);
  const ts = [...times].sort((a, b) => a - b);
  const out: Stacked = { pieces: d.bands.map(() => ({ t0: [], t1: [], bottom: [] })), restT0: [], restT1: [], rest: [],
    peak: 0, peakTime: from };
  let r = 0;
  for (let i = 0; i < ts.length; i++) {
    const t0 = ts[i];
    const t1 = i + 1 < ts.length ? ts[i + 1] : to;
    while (r + 1 < d.restTime.length && d.restTime[r + 1] <= t0) r++;
    let level = d.restTime.length && d.restTime[r] <= t0 ? d.restBytes[r] : 0;
    out.restT0.push(t0); out.restT1.push(t1); out.rest.push(level);
    d.bands.forEach((b, k) => {
      if (b.start <= t0 && t0 < b.end) {
        const p = out.pieces[k];
        p.t0.push(t0); p.t1.push(t1); p.bottom.push(level);
        level += b.size;
      }
    });
    if (level > out.peak) { out.peak = level; out.peakTime = t0; }
  }
  return out;
}

const COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"];

export class AllocTimelinePanel {
  readonly el: HTMLDivElement;
  private head: HTMLDivElement;
  private device: HTMLSelectElement;
  private canvas: HTMLCanvasElement;
  private hover: HTMLDivElement;
  readonly stackText: HTMLPreElement;
  readonly segments: SegmentView;
  data: AllocTimeline | null = null;
  private stacked: Stacked | null = null;
  private width = 800;
  private view: [number, number] = [0, 1];
  selected: number | null = null;

  constructor(private unit: TimeUnit, private ask: (req: Record<string, unknown>) => void) {
    this.el = el("div", "pv-memview");
    this.el.style.display = "none";
    const bar = el("div", "pv-memview-bar", this.el);
    this.head = el("div", "pv-memview-head", bar);
    this.device = el("select", "pv-memview-device", bar);
    this.device.addEventListener("change", () => this.ask({ device: this.device.value }));
    this.canvas = el("canvas", "pv-memview-canvas", this.el);
    this.hover = el("div", "pv-memview-hover", this.el);
    this.stackText = el("pre", "pv-memview-stack", this.el);
    this.segments = new SegmentView(unit, (text) => { this.stackText.textContent = text; });
    this.el.appendChild(this.segments.el);
    this.canvas.addEventListener("mousemove", (e) => this.onMove(e));
    this.canvas.addEventListener("mouseleave", () => { this.hover.textContent = ""; this.canvas.dataset.hover = ""; });
    this.canvas.addEventListener("click", (e) => this.onClick(e));
  }

  private xOf(t: number): number {
    const [s, e] = this.view;
    return GUTTER_W + ((t - s) * (this.width - GUTTER_W)) / Math.max(e - s, 1e-9);
  }

  private at(e: MouseEvent): { time: number; band: number } {
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left;
    const y = e.clientY - r.top;
    const [s, en] = this.view;
    const time = s + ((x - GUTTER_W) * (en - s)) / Math.max(this.width - GUTTER_W, 1);
    const st = this.stacked;
    if (!st || !this.data || x < GUTTER_W) return { time, band: -1 };
    const bytes = ((H - y) / H) * this.scale();
    for (let k = 0; k < st.pieces.length; k++) {
      const p = st.pieces[k];
      for (let i = 0; i < p.t0.length; i++) {
        if (p.t0[i] <= time && time < p.t1[i] && bytes >= p.bottom[i] && bytes < p.bottom[i] + this.data.bands[k].size) {
          return { time, band: k };
        }
      }
    }
    return { time, band: -1 };
  }

  private scale(): number {
    return Math.max(this.stacked?.peak ?? 0, 1) * 1.05;
  }

  bandText(k: number): string {
    const b = this.data!.bands[k];
    const freed = b.open ? "not freed" : `freed ${formatTime(b.end, this.unit)}`;
    return `${formatBytes(b.size)} at ${hex(b.addr)} · allocated ${formatTime(b.start, this.unit)} · ${freed}`;
  }

  bandFrames(k: number): string[] {
    const d = this.data!;
    return (d.stacks[d.bands[k].stack] ?? []).map((i) => d.frames[i] ?? "");
  }

  private onMove(e: MouseEvent): void {
    const { band } = this.at(e);
    this.hover.textContent = band >= 0 ? this.bandText(band) : "";
    this.canvas.dataset.hover = band >= 0 ? String(this.data!.bands[band].row) : "";
  }

  private onClick(e: MouseEvent): void {
    const { time, band } = this.at(e);
    if (!this.data) return;
    if (band >= 0) {
      this.stackText.textContent = [this.bandText(band), ...this.bandFrames(band)].join("\n");
      this.stackText.dataset.row = String(this.data.bands[band].row);
    }
    this.selected = time;
    this.el.dataset.selected = String(time);
    this.ask({ time });
    this.draw();
  }

  update(d: AllocTimeline | null, view: [number, number], width: number): void {
    this.data = d;
    this.el.style.display = d ? "" : "none";
    if (!d) return;
    this.device.replaceChildren(...d.devices.map((name) => {
      const o = document.createElement("option");
      o.value = name; o.textContent = name;
      return o;
    }));
    this.device.value = d.device;
    this.device.style.display = d.devices.length > 1 ? "" : "none";
    this.setView(view, width);
  }

  setView(view: [number, number], width: number): void {
    this.view = view;
    this.width = Math.max(GUTTER_W + 50, width);
    if (this.data) this.draw();
  }

  draw(): void {
    const d = this.data;
    if (!d) return;
    const t0 = performance.now();
    const [s, e] = this.view;
    const st = stack(d, Math.max(s, d.extent[0]), Math.min(e, d.extent[1]));
    this.stacked = st;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(this.width * dpr);
    this.canvas.height = Math.round(H * dpr);
    this.canvas.style.width = `${this.width}px`;
    this.canvas.style.height = `${H}px`;
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, this.width, H);
    const k = H / this.scale();
    const y = (b: number): number => H - b * k;
    const poly = (t0: number[], t1: number[], lo: number[], size: number | number[]): void => {
      ctx.beginPath();
      for (let i = 0; i < t0.length; i++) {
        const top = lo[i] + (typeof size === "number" ? size : size[i]);
        ctx.moveTo(this.xOf(t0[i]), y(lo[i]));
        ctx.lineTo(this.xOf(t0[i]), y(top));
        ctx.lineTo(this.xOf(t1[i]), y(top));
        ctx.lineTo(this.xOf(t1[i]), y(lo[i]));
        ctx.closePath();
      }
      ctx.fill();
    };
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER_W, 0, this.width - GUTTER_W, H);
    ctx.clip();
    ctx.fillStyle = "#bab0ac";
    poly(st.restT0, st.restT1, st.restT0.map(() => 0), st.rest);
    st.pieces.forEach((p, i) => {
      ctx.fillStyle = COLORS[i % COLORS.length];
      poly(p.t0, p.t1, p.bottom, d.bands[i].size);
    });
    if (this.selected !== null) {
      ctx.fillStyle = "#d62728";
      ctx.fillRect(Math.round(this.xOf(this.selected)), 0, 1, H);
    }
    ctx.restore();
    ctx.fillStyle = "#555";
    ctx.font = "11px sans-serif";
    ctx.textAlign = "right";
    ctx.fillText(formatBytes(st.peak), GUTTER_W - 6, y(st.peak) + 10);
    const shown = d.bands.length;
    const others = d.count - shown;
    this.head.textContent = `Active memory ${d.device}: peak ${formatBytes(st.peak)} at ` +
      `${formatTime(st.peakTime, this.unit)} · ${shown.toLocaleString("en-US")} largest allocations drawn` +
      (others > 0 ? `, ${others.toLocaleString("en-US")} smaller ones as one grey band` : "");
    this.el.dataset.peak = String(st.peak);
    this.el.dataset.bands = String(shown);
    this.el.dataset.drawMs = (performance.now() - t0).toFixed(2);
  }
}

/** The memory snapshot panel (jupyter_profview/widget/memview.py): shown by itself on a snapshot. */
export const MEMVIEW_PANEL: PanelModule = {
  name: "memview",
  traits: ["_alloc_timeline", "_segments"],
  create: (host) => {
    const panel = new AllocTimelinePanel(host.unit, (req) => {
      if (!host.noKernel) host.send({ _memview_request: { ...req, token: Date.now() } });
    });
    const view = (): [number, number] => {
      const s = Number(host.root.dataset.viewStart);
      const e = Number(host.root.dataset.viewEnd);
      if (Number.isFinite(s) && Number.isFinite(e) && e > s) return [s, e];
      return panel.data ? panel.data.window : [0, 1];
    };
    let asked = "";
    host.model.on("change:_view", () => {
      if (!panel.data) return;
      const v = view();
      panel.setView(v, host.root.clientWidth || 800);
      const key = `${v[0]}:${v[1]}`;
      if (!panel.data.complete && key !== asked && !host.noKernel) {
        asked = key;
        host.send({ _memview_request: { start: v[0], end: v[1], token: Date.now() } });
      }
    });
    return {
      el: panel.el,
      shown: () => panel.data !== null,
      load: (trait) => {
        const t0 = performance.now();
        if (trait === "_segments") panel.segments.update(parseSegments(host.frame("_segments")));
        else {
          panel.update(parseAllocTimeline(host.frame("_alloc_timeline")), view(), host.root.clientWidth || 800);
          // decode + parse + first draw (benchmarks/bench_memview.py reads it)
          host.root.dataset.memviewMs = (performance.now() - t0).toFixed(2);
          host.root.dataset.memviewAt = String(Date.now());  // epoch ms of the draw (show() -> draw)
        }
      },
      resize: (width) => panel.setView(view(), width),
    };
  },
};
