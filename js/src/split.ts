// Draggable splits between the timeline, the counters panel and the table: a handle under the
// timeline sets its height, one above the table sets the table's; both are kept in the synced
// `split_layout` trait ({"timeline": px, "table": px}), so a saved notebook opens as it was left.

import type { AnyModel } from "@anywidget/types";
import { el } from "./dom";

export interface SplitLayout { timeline?: number; table?: number }

export const MIN_TIMELINE = 80;
export const MIN_TABLE = 60;
export const MAX_PANEL = 4000;

/** A height dragged to `h` px, kept within [min, MAX_PANEL]. */
export function clampHeight(h: number, min: number): number {
  return Math.round(Math.min(MAX_PANEL, Math.max(min, Number.isFinite(h) ? h : min)));
}

/** The `split_layout` trait's value, validated (unknown or bad entries dropped). */
export function parseLayout(v: unknown): SplitLayout {
  const out: SplitLayout = {};
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    if (typeof o.timeline === "number" && Number.isFinite(o.timeline)) out.timeline = clampHeight(o.timeline, MIN_TIMELINE);
    if (typeof o.table === "number" && Number.isFinite(o.table)) out.table = clampHeight(o.table, MIN_TABLE);
  }
  return out;
}

/**
 * A horizontal handle: dragging it calls `onDrag(dy)` with the distance from where the drag
 * started, and `onDone()` when released.
 */
export function splitHandle(name: string, onStart: () => void, onDrag: (dy: number) => void,
  onDone: () => void): HTMLDivElement {
  const h = el("div", `pv-split pv-split-${name}`);
  h.title = "Drag to resize";
  let y0: number | null = null;
  h.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return;
    y0 = e.clientY;
    h.setPointerCapture(e.pointerId);
    onStart();
    e.preventDefault();
  });
  h.addEventListener("pointermove", (e) => {
    if (y0 !== null) onDrag(e.clientY - y0);
  });
  const end = (e: PointerEvent): void => {
    if (y0 === null) return;
    y0 = null;
    if (h.hasPointerCapture(e.pointerId)) h.releasePointerCapture(e.pointerId);
    onDone();
  };
  h.addEventListener("pointerup", end);
  h.addEventListener("pointercancel", end);
  return h;
}

/** What the splits read and set of their view (view.ts). */
export interface SplitHost {
  readonly model: AnyModel;
  readonly root: HTMLElement;
  readonly tlScroll: HTMLElement;
  readonly table: { readonly el: HTMLElement; readonly bodyHeight: number; setBodyHeight(h: number): void };
  split: SplitLayout;
  resize(): void;
}

/** Handles under the timeline and above the table; a drag ends in the `split_layout` trait. */
export function addSplits(v: SplitHost, timeline: HTMLElement): void {
  let t0 = 0;
  let b0 = 0;
  const save = (): void => {  // loadLayout follows the trait's change event
    v.model.set("split_layout", { ...v.split });
    v.model.save_changes();
  };
  const below = splitHandle("timeline", () => { t0 = v.tlScroll.offsetHeight; }, (dy) => {
    v.split = { ...v.split, timeline: clampHeight(t0 + dy, MIN_TIMELINE) };
    v.resize();
  }, save);
  timeline.after(below);
  const above = splitHandle("table", () => { b0 = v.table.bodyHeight; }, (dy) => {
    v.split = { ...v.split, table: clampHeight(b0 - dy, MIN_TABLE) };
    v.table.setBodyHeight(v.split.table ?? 0);
  }, save);
  v.table.el.before(above);
}

/** The `split_layout` trait applied: the table's and the timeline's heights. */
export function loadLayout(v: SplitHost): void {
  v.split = parseLayout(v.model.get("split_layout"));
  if (v.split.table) v.table.setBodyHeight(v.split.table);
  v.root.dataset.layout = JSON.stringify(v.split);
  v.resize();
}
