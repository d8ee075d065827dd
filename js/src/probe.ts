// Test and benchmark hooks (docs/widget-protocol.md, "Test and benchmark hooks"):
// - root `data-pv-state`: "loading", then "ready" once the overview has been painted;
// - `window.__profview`: one entry per rendered view with firstPaint, frameTimes,
//   detailTimes, locate(id), view(), labels();
// - root data-frame-p95 / data-frame-max / data-frames summarise the recent frame times.

import type { View } from "./viewport";

export interface ViewHook {
  firstPaint: number | null;
  frameTimes: number[];
  detailTimes: number[];
  /** One entry per `_detail` reply: where its round trip went (see docs, test hooks). */
  detailLog: Array<Record<string, number>>;
  locate(id: number): { x: number; y: number } | null;
  view(): View;
  /** The texts the timeline drew last and their boxes, with the label column's width. */
  labels?: () => unknown;
}

declare global {
  interface Window { __profview?: ViewHook[] }
}

const KEEP = 2000;

export function percentile(values: ArrayLike<number>, q: number): number {
  if (values.length === 0) return 0;
  const sorted = Array.from(values).sort((a, b) => a - b);
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

export class FrameProbe {
  readonly hook: ViewHook;

  constructor(private root: HTMLElement, locate: ViewHook["locate"], view: ViewHook["view"]) {
    root.dataset.pvState = "loading";
    this.hook = { firstPaint: null, frameTimes: [], detailTimes: [], detailLog: [], locate, view };
    if (typeof window !== "undefined") (window.__profview ??= []).push(this.hook);
  }

  painted(): void {
    if (this.hook.firstPaint === null) {
      this.hook.firstPaint = performance.now();
      this.root.dataset.pvState = "ready";
    }
  }

  record(ms: number): void {
    const t = this.hook.frameTimes;
    t.push(ms);
    if (t.length > KEEP) t.splice(0, t.length - KEEP);
    const d = this.root.dataset;
    d.frames = String(Number(d.frames ?? 0) + 1);
    d.frameLast = ms.toFixed(2);
    const recent = t.length > 300 ? t.slice(-300) : t;
    d.frameP95 = percentile(recent, 0.95).toFixed(2);
    d.frameMax = Math.max(...recent).toFixed(2);
  }

  detail(ms: number): void {
    const t = this.hook.detailTimes;
    t.push(ms);
    if (t.length > KEEP) t.splice(0, t.length - KEEP);
  }

  log(entry: Record<string, number>): void {
    const t = this.hook.detailLog;
    t.push(entry);
    if (t.length > KEEP) t.splice(0, t.length - KEEP);
  }

  dispose(): void {
    const list = typeof window !== "undefined" ? window.__profview : undefined;
    const i = list ? list.indexOf(this.hook) : -1;
    if (list && i >= 0) list.splice(i, 1);
  }
}
