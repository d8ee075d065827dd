// Colours read from JupyterLab's CSS variables (with fallbacks), and small colour helpers. The
// palette itself (categories, metric scales, series) is palette_gen.ts, generated from
// jupyter_profview/palette.py.

import { UNKNOWN_COLORS } from "./palette_gen";

export interface Theme {
  bg: string;
  fg: string;
  fgDim: string;
  grid: string;
  header: string;
  accent: string;
  font: string;
}

export function readTheme(el: HTMLElement): Theme {
  const cs = getComputedStyle(el);
  const v = (name: string, fallback: string): string => cs.getPropertyValue(name).trim() || fallback;
  return {
    bg: v("--pv-bg", "#ffffff"),
    fg: v("--pv-fg", "#1f1f1f"),
    fgDim: v("--pv-fg-dim", "#6b6b6b"),
    grid: v("--pv-grid", "rgba(128,128,128,0.22)"),
    header: v("--pv-header", "rgba(128,128,128,0.12)"),
    accent: v("--pv-accent", "#1a73e8"),
    font: v("--pv-font", "system-ui, -apple-system, 'Segoe UI', sans-serif"),
  };
}

/** Dark or light text for a background colour given as #rgb / #rrggbb / rgb(...). */
export function textOn(color: string): string {
  let r = 128;
  let g = 128;
  let b = 128;
  const hex = color.trim().match(/^#([0-9a-f]{3}|[0-9a-f]{6})$/i);
  if (hex) {
    const h = hex[1].length === 3 ? hex[1].split("").map((c) => c + c).join("") : hex[1];
    r = parseInt(h.slice(0, 2), 16);
    g = parseInt(h.slice(2, 4), 16);
    b = parseInt(h.slice(4, 6), 16);
  } else {
    const m = color.match(/rgba?\(\s*(\d+)[ ,]+(\d+)[ ,]+(\d+)/i);
    if (m) [r, g, b] = [Number(m[1]), Number(m[2]), Number(m[3])];
  }
  const lum = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return lum > 140 ? "#111111" : "#ffffff";
}

/** A colour for a legend entry the kernel sent without one (the palette's unknown-category colours). */
const FALLBACK = UNKNOWN_COLORS;

export interface LegendEntry { key: string; color: string; count?: number }

export function parseLegend(raw: unknown): LegendEntry[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((e: Record<string, unknown>, i) => ({
    key: String(e?.key ?? i),
    color: typeof e?.color === "string" && e.color ? e.color : FALLBACK[i % FALLBACK.length],
    count: typeof e?.count === "number" ? e.count : undefined,
  }));
}

export const colorAt = (legend: LegendEntry[], i: number): string =>
  legend[i]?.color ?? FALLBACK[i % FALLBACK.length];
