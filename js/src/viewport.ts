// The shared x viewport [start, end] (trace time) of timeline and memory panels.
// Pure functions: zoom around an anchor, pan, clamp, zoom-to-range, keyboard and wheel.

export interface View { start: number; end: number }
export interface Bounds {
  /** Allowed time range (trace start .. end). */
  min: number;
  max: number;
  /** Narrowest span one can zoom to. */
  minSpan: number;
}

/**
 * The trace's time range: 0 (or `start` when negative: ranks aligned on a step start at 0 there,
 * with what came before it at negative times) to `duration` (the last event's end).
 */
export function boundsFor(duration: number, unit: "ns" | "step", start = 0): Bounds {
  const min = Number.isFinite(start) && start < 0 ? start : 0;
  const max = duration > min ? duration : min + 1;
  // Narrowest window: 1 ns, or 2 steps for clock-less graph traces (one step and its context).
  return { min, max, minSpan: Math.min(max - min, unit === "step" ? 2 : 1) };
}

export const span = (v: View): number => v.end - v.start;

/** Keep the span within [minSpan, max - min] and the window inside the bounds. */
export function clampView(v: View, b: Bounds): View {
  const full = b.max - b.min;
  let s = span(v);
  if (!Number.isFinite(s) || !Number.isFinite(v.start)) return { start: b.min, end: b.max };
  s = Math.min(Math.max(s, b.minSpan), full);
  let start = v.start;
  if (span(v) !== s) start = (v.start + v.end) / 2 - s / 2;
  start = Math.min(Math.max(start, b.min), b.max - s);
  return { start, end: start + s };
}

/**
 * Zoom by `factor` (< 1 zooms in) keeping the time at fraction `anchor` (0 = left edge,
 * 1 = right edge) of the window fixed, unless clamping has to move it.
 */
export function zoomAt(v: View, factor: number, anchor: number, b: Bounds): View {
  const a = Math.min(1, Math.max(0, anchor));
  const t = v.start + a * span(v);
  const full = b.max - b.min;
  const s = Math.min(Math.max(span(v) * factor, b.minSpan), full);
  return clampView({ start: t - a * s, end: t - a * s + s }, b);
}

/** Shift the window by dt (time units). */
export function pan(v: View, dt: number, b: Bounds): View {
  return clampView({ start: v.start + dt, end: v.end + dt }, b);
}

/** Pan by a pixel distance on a plot `widthPx` wide (dragging right moves the view left). */
export function panPixels(v: View, dxPx: number, widthPx: number, b: Bounds): View {
  return pan(v, (-dxPx * span(v)) / Math.max(1, widthPx), b);
}

/** Window showing [t0, t1] with `padFrac` of margin each side (an instant gets minSpan). */
export function zoomToRange(t0: number, t1: number, b: Bounds, padFrac = 0.1): View {
  const lo = Math.min(t0, t1);
  const hi = Math.max(t0, t1);
  const s = Math.max(hi - lo, b.minSpan);
  const mid = (lo + hi) / 2;
  const w = s * (1 + 2 * padFrac);
  return clampView({ start: mid - w / 2, end: mid + w / 2 }, b);
}

export const xToTime = (v: View, x: number, widthPx: number): number => v.start + (x / widthPx) * span(v);
export const timeToX = (v: View, t: number, widthPx: number): number => ((t - v.start) / span(v)) * widthPx;

/** Zoom factor for a wheel delta (pixels; lines are ×16): smooth and symmetric. */
export function wheelFactor(deltaY: number, deltaMode = 0): number {
  const px = deltaMode === 1 ? deltaY * 16 : deltaMode === 2 ? deltaY * 400 : deltaY;
  const clamped = Math.max(-300, Math.min(300, px));
  return Math.exp(clamped * 0.002);
}

export type KeyAction = { zoom: number } | { pan: number } | null;

/** W/S zoom in/out, A/D pan left/right (chrome://tracing, Perfetto). Shift = bigger steps. */
export function keyAction(key: string, shift = false): KeyAction {
  const k = key.toLowerCase();
  const big = shift ? 2.5 : 1;
  if (k === "w") return { zoom: Math.pow(0.8, big) };
  if (k === "s") return { zoom: Math.pow(1.25, big) };
  if (k === "a") return { pan: -0.15 * big };
  if (k === "d") return { pan: 0.15 * big };
  return null;
}

/** Apply a key action around the anchor (fraction of width) — pan is a fraction of the span. */
export function applyKey(v: View, act: KeyAction, anchor: number, b: Bounds): View {
  if (!act) return v;
  if ("zoom" in act) return zoomAt(v, act.zoom, anchor, b);
  return pan(v, act.pan * span(v), b);
}

export const sameView = (a: View, b: View): boolean => a.start === b.start && a.end === b.end;
