// Draggable splits between the timeline, the counters panel and the table: a handle under the
// timeline sets its height, one above the table sets the table's; both are kept in the synced
// `split_layout` trait ({"timeline": px, "table": px}), so a saved notebook opens as it was left.

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
