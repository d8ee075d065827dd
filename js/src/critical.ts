// The critical path of a step (`_critical_path` frame, jupyter_profview/widget/critical_path.py):
// its breakdown as one stacked bar, the step picker, and its segments as a table above the event
// table; its launch / gap / sync edges become arrows on the timeline (overlays.ts).

import { formatTime, shareText, type TimeUnit } from "./axis";
import type { Frame } from "./codec";
import { el } from "./dom";
import type { PanelModule } from "./panel";
import { BOUND_COLORS as PALETTE_BOUND_COLORS } from "./palette_gen";
import type { Flow } from "./scene";

export interface BreakdownPart { type: string; time: number; share: number }

export interface Segment {
  order: number; type: string; bound: string; event: number; name: string;
  start: number; end: number; weight: number;
}

export interface CriticalPathData {
  length: number;
  events: number;
  annotation: string | null;
  instance: number | null;
  rank: number | null;
  steps: string[];
  breakdown: BreakdownPart[];
  /** Edges with time on the path (weight > 0), in path order. */
  segments: Segment[];
  /** Launch, gap and sync edges of the path (drawn as arrows). */
  arrows: Flow[];
}

/** The order the segments table lists the path in: along the path, or by time on it (longest first, ties in path order). */
export type SegmentSort = "order" | "time";

/** Indices into `segments` in the order of `by`. */
export function segmentOrder(segments: Segment[], by: SegmentSort): number[] {
  const idx = segments.map((_, i) => i);
  if (by === "time") idx.sort((a, b) => segments[b].weight - segments[a].weight || a - b);
  return idx;
}

/** The colour of each breakdown category (the bar, its legend and the path's arrows). */
export const BOUND_COLORS: Readonly<Record<string, string>> = PALETTE_BOUND_COLORS;
export const PATH_COLOR = PALETTE_BOUND_COLORS.kernel_gap;
/** At most this many segments are listed (the rest are counted in the header). */
export const MAX_SEGMENTS = 2000;
const ARROW_TYPES = new Set(["launch", "kernel", "sync"]);

const asStrings = (v: unknown): string[] => (Array.isArray(v) ? v.map((x) => String(x)) : []);

/** The path of a `_critical_path` frame; null when the frame is empty (no path shown). */
export function parseCriticalPath(frame: Frame): CriticalPathData | null {
  const c = frame.columns;
  const m = frame.meta as Record<string, unknown>;
  if (!c.order || m.length === undefined) return null;
  const edgeTypes = asStrings(m.edge_types);
  const boundTypes = asStrings(m.bound_types);
  const names = asStrings(m.names);
  const segments: Segment[] = [];
  const arrows: Flow[] = [];
  for (let i = 0; i < c.order.length; i++) {
    const type = edgeTypes[c.type[i]] ?? "?";
    const label = c.label[i];
    const seg: Segment = {
      order: c.order[i], type, bound: boundTypes[c.bound[i]] ?? "?", event: c.event[i],
      name: label >= 0 ? names[label] ?? "" : "", start: c.src_time[i], end: c.dst_time[i], weight: c.weight[i],
    };
    if (seg.weight > 0) segments.push(seg);
    if (ARROW_TYPES.has(type) && c.src_track[i] >= 0 && c.dst_track[i] >= 0) {
      arrows.push({
        source: c.src[i], target: c.dst[i], source_track: c.src_track[i], target_track: c.dst_track[i],
        source_time: c.src_time[i], target_time: c.dst_time[i],
      });
    }
  }
  const breakdown = Array.isArray(m.breakdown)
    ? (m.breakdown as Array<Record<string, unknown>>).map((b) => ({
      type: String(b.type), time: Number(b.time), share: Number(b.share),
    }))
    : [];
  return {
    length: Number(m.length), events: Number(m.events ?? 0),
    annotation: typeof m.annotation === "string" ? m.annotation : null,
    instance: typeof m.instance === "number" ? m.instance : null,
    rank: typeof m.rank === "number" ? m.rank : null,
    steps: asStrings(m.steps), breakdown, segments, arrows,
  };
}

/**
 * The panel: a title line (what, length, how many events), the step picker, the breakdown bar
 * with its legend, and the segments table.  Clicking a segment calls `onSegment`; picking a step
 * calls `onStep` with its 0-based instance.
 */
export class CriticalPanel {
  readonly el: HTMLDivElement;
  private title: HTMLSpanElement;
  private picker: HTMLSelectElement;
  private bar: HTMLDivElement;
  private legend: HTMLDivElement;
  private rows: HTMLDivElement;
  private path: CriticalPathData | null = null;
  private sortBy: SegmentSort = "order";
  unit: TimeUnit = "ns";

  constructor(private onSegment: (s: Segment) => void, private onStep: (instance: number) => void) {
    this.el = el("div", "pv-critical");
    this.el.style.display = "none";
    const head = el("div", "pv-critical-head", this.el);
    this.title = el("span", "pv-critical-title", head);
    this.picker = el("select", "pv-critical-step", head);
    this.picker.title = "The step whose critical path is shown (the kernel recomputes it)";
    this.picker.addEventListener("change", () => this.onStep(Number(this.picker.value)));
    this.bar = el("div", "pv-critical-bar", this.el);
    this.legend = el("div", "pv-critical-legend", this.el);
    const table = el("div", "pv-critical-table", this.el);
    const th = el("div", "pv-critical-row pv-critical-th", table);
    for (const [cls, text] of [["n", "#"], ["type", "bound by"], ["name", "event"], ["time", "on path"],
      ["start", "start"]]) el("span", `pv-c-${cls}`, th).textContent = text;
    // sort: "on path" lists the longest segments first, "#" goes back to path order
    for (const [cls, by] of [["n", "order"], ["time", "time"]] as const) {
      const head = th.querySelector<HTMLElement>(`.pv-c-${cls}`);
      if (!head) continue;
      head.classList.add("pv-c-sortable");
      head.title = by === "time" ? "Sort by time on the path, longest first" : "Sort along the path";
      head.addEventListener("click", () => {
        this.sortBy = by;
        this.el.dataset.sort = by;
        if (this.path) this.drawRows(this.path);
      });
    }
    this.rows = el("div", "pv-critical-rows", table);
    this.rows.addEventListener("click", (e) => {
      const row = (e.target as HTMLElement).closest<HTMLElement>(".pv-critical-row");
      const k = Number(row?.dataset.index);
      const seg = this.path && Number.isInteger(k) ? this.path.segments[k] : undefined;
      if (!seg || !row) return;
      for (const r of this.rows.querySelectorAll(".pv-row-selected")) r.classList.remove("pv-row-selected");
      row.classList.add("pv-row-selected");
      this.onSegment(seg);
    });
  }

  get shown(): CriticalPathData | null {
    return this.path;
  }

  /** Show `path` (null: hide the panel). */
  update(path: CriticalPathData | null, static_ = false): void {
    this.path = path;
    this.el.style.display = path ? "" : "none";
    this.el.dataset.length = path ? String(path.length) : "";
    if (!path) return;
    const what = path.annotation === null ? "the whole trace"
      : path.steps[path.instance ?? -1] ?? `${path.annotation} #${path.instance}`;
    const rank = path.rank === null ? "" : ` · rank ${path.rank}`;
    this.title.textContent = `Critical path of ${what}${rank}: ${formatTime(path.length, this.unit)} over ` +
      `${path.events.toLocaleString("en-US")} events`;
    this.picker.replaceChildren();
    path.steps.forEach((name, i) => {
      const o = document.createElement("option");
      o.value = String(i);
      o.textContent = name;
      this.picker.appendChild(o);
    });
    this.picker.value = String(path.instance ?? 0);
    this.picker.style.display = path.steps.length > 1 && path.annotation !== null ? "" : "none";
    this.picker.disabled = static_;
    this.drawBar(path);
    this.drawRows(path);
  }

  private drawBar(path: CriticalPathData): void {
    this.bar.replaceChildren();
    this.legend.replaceChildren();
    for (const part of path.breakdown) {
      const text = `${part.type} ${formatTime(part.time, this.unit)} (${shareText(part.share)})`;
      if (part.time > 0) {
        const seg = el("div", "pv-critical-part", this.bar);
        seg.style.flexGrow = String(part.time);
        seg.style.background = BOUND_COLORS[part.type] ?? "#888";
        seg.dataset.type = part.type;
        seg.dataset.time = String(part.time);
        seg.title = text;
      }
      const item = el("span", "pv-critical-key", this.legend);
      item.dataset.type = part.type;
      const sw = el("span", "pv-swatch", item);
      sw.style.background = BOUND_COLORS[part.type] ?? "#888";
      el("span", "", item).textContent = text;
      if (part.time === 0) item.classList.add("pv-critical-zero");
    }
  }

  private drawRows(path: CriticalPathData): void {
    this.rows.replaceChildren();
    const shown = segmentOrder(path.segments, this.sortBy).slice(0, MAX_SEGMENTS);
    shown.forEach((k) => {
      const s = path.segments[k];
      const row = el("div", "pv-critical-row", this.rows);
      row.dataset.index = String(k);
      row.dataset.event = String(s.event);
      el("span", "pv-c-n", row).textContent = String(k + 1);
      const type = el("span", "pv-c-type", row);
      const sw = el("span", "pv-swatch", type);
      sw.style.background = BOUND_COLORS[s.bound] ?? "#888";
      el("span", "", type).textContent = s.bound;
      el("span", "pv-c-name", row).textContent = s.name || s.type;
      el("span", "pv-c-time", row).textContent = formatTime(s.weight, this.unit);
      el("span", "pv-c-start", row).textContent = formatTime(s.start, this.unit);
    });
    if (path.segments.length > shown.length) {
      el("div", "pv-critical-more", this.rows).textContent =
        `${(path.segments.length - shown.length).toLocaleString("en-US")} more segments: cp.path in Python lists them all`;
    }
  }
}

/** A step's critical path ("Critical path" in the toolbar; jupyter_profview/widget/critical_path.py):
 * its segments zoom the view, its step picker asks for another step's path. */
export const CRITICAL_PANEL: PanelModule = {
  name: "critical_path",
  traits: ["_critical_path"],
  toolbar: "Critical path",
  create: (host) => {
    const panel = new CriticalPanel((seg) => host.zoomTo(seg.start, seg.end, 1),
      (instance) => host.send({ critical_path_instance: instance }));
    return {
      el: panel.el,
      shown: () => panel.shown !== null,
      load: () => {
        const path = parseCriticalPath(host.frame("_critical_path"));
        panel.unit = host.unit;
        panel.update(path, host.noKernel);
        host.setArrows(path ? path.arrows : []);
        host.root.dataset.criticalArrows = String(path ? path.arrows.length : 0);
      },
    };
  },
};
