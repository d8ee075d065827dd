// The memory / counters panel's tracks: series of one unit share a y axis, series of different
// units never do. Memory (bytes), GPU utilisation (%), queue lengths (launches) and each of the
// trace's own counters (unit unknown: one axis per counter name) get a track of their own, with
// the axis' title, its labelled maximum in the unit, and a legend row per series.

import { formatBytes, formatNumber } from "./axis";
import { SERIES_COLORS as PALETTE_SERIES_COLORS } from "./palette_gen";

export interface SeriesInfo {
  device: string; kind: string; peak_bytes: number; peak_time: number;
  unit: string; // "bytes" (memory) | "fraction" | "count" | "value" (counters)
  max: number;
  /** The trace's own counters: the counter's name (its series share the counter's unit). */
  axis?: string;
  /** Several ranks in one view: whose device it is. */
  rank?: number;
}

/** One track: the series drawn on one y axis, its place in the panel (CSS px) and its scale. */
export interface Track {
  key: string;
  /** What the axis measures, drawn at the track's top left ("memory", "GPU utilisation", …). */
  title: string;
  unit: string;
  series: number[];
  top: number;
  h: number;
  /** The value at the track's top: the largest value of its series (utilisation: 100 %). */
  scale: number;
}

/** Height of the memory track and of the others (more when their legend needs more rows). */
export const BYTES_H = 104;
export const COUNTER_H = 58;
export const LEGEND_ROW = 13;
/** Rows taken by the axis title and the max label above the legend, and the margin below. */
const LEGEND_TOP = 30;

/** Which axis a series is drawn on, and the axis' title. */
export function axisOf(s: SeriesInfo): { key: string; title: string } {
  if (s.unit === "bytes") return { key: "bytes", title: "memory" };
  if (s.unit === "fraction") return { key: "fraction", title: "GPU utilisation" };
  if (s.unit === "count") return { key: "count", title: "queued launches" };
  const name = s.axis || s.device;
  return { key: `value:${name}`, title: name };
}

/** A series value as text in its unit. */
export function formatValue(s: SeriesInfo, v: number): string {
  if (s.unit === "bytes") return formatBytes(v);
  if (s.unit === "fraction") return Number.isFinite(v) ? `${formatNumber(v * 100)} %` : formatNumber(v);
  if (s.unit === "count") return Number.isFinite(v) ? `${formatNumber(v)} queued` : formatNumber(v);
  return formatNumber(v);
}

/** The value that maps to the top of a track: the largest of its series' maxima (utilisation: 1). */
export function trackScale(series: SeriesInfo[]): number {
  if (series.some((s) => s.unit === "fraction")) return 1;
  let m = 0;
  for (const s of series) {
    const v = s.unit === "bytes" && Number.isFinite(s.peak_bytes) ? Math.max(s.peak_bytes, s.max || 0) : s.max;
    if (Number.isFinite(v)) m = Math.max(m, v);
  }
  return m > 0 ? m : 1;
}

/**
 * The tracks of the series for which `shown(i)` holds, in the series' order of first appearance,
 * stacked from y = 0; `maxOf(i)` may raise a series' max (memory: the curve's own largest sample).
 */
export function layoutTracks(series: SeriesInfo[], shown: (i: number) => boolean,
  maxOf: (i: number) => number = () => NaN): Track[] {
  const byKey = new Map<string, Track>();
  const tracks: Track[] = [];
  series.forEach((s, i) => {
    if (!shown(i)) return;
    const { key, title } = axisOf(s);
    let t = byKey.get(key);
    if (!t) {
      t = { key, title, unit: s.unit, series: [], top: 0, h: 0, scale: 1 };
      byKey.set(key, t);
      tracks.push(t);
    }
    t.series.push(i);
  });
  let y = 0;
  for (const t of tracks) {
    const members = t.series.map((i) => {
      const m = maxOf(i);
      return Number.isFinite(m) && m > series[i].max ? { ...series[i], max: m } : series[i];
    });
    t.scale = trackScale(members);
    const base = t.unit === "bytes" ? BYTES_H : COUNTER_H;
    t.top = y;
    t.h = Math.max(base, LEGEND_TOP + t.series.length * LEGEND_ROW + 4);
    y += t.h;
  }
  return tracks;
}

/** Total height of stacked tracks (a bare panel keeps one counter track's height). */
export const tracksHeight = (tracks: Track[]): number =>
  tracks.length ? tracks[tracks.length - 1].top + tracks[tracks.length - 1].h : COUNTER_H;

/** The text of a track's maximum: the scale in the track's unit. */
export function maxLabel(t: Track, s: SeriesInfo): string {
  return formatValue(s, t.scale);
}

/**
 * A series' name in its track's legend: the part the track's title does not already say (a
 * queue's GPU and stream, a utilisation's GPU, a counter's series), the rank first when several.
 */
export function seriesLabel(s: SeriesInfo): string {
  const rank = s.rank === undefined ? "" : `rank ${s.rank} · `;
  let name = s.device || "memory";
  if (s.unit === "count") name = name.replace(/ queue$/, "");
  else if (s.unit === "fraction") name = name.replace(/ utilisation$/, "");
  else if (s.unit === "value" && s.axis && name.startsWith(`${s.axis}: `)) name = name.slice(s.axis.length + 2);
  return `${rank}${name}${s.kind === "simulated" ? " (simulated)" : ""}`;
}

/**
 * Fit `text` into `max` characters keeping both ends (what tells series apart is usually at the
 * end: a stream number, a counter's series; the start names the device): the middle is cut.
 */
export function fitMiddle(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 1) return "…";
  const tail = Math.ceil((max - 1) * 0.6);
  const head = max - 1 - tail;
  return `${text.slice(0, head)}…${text.slice(text.length - tail)}`;
}

/** Twelve colours that stay apart on white and dark backgrounds (the palette's, palette_gen.ts:
 * neither communication's purple nor the launches' yellow). */
export const SERIES_COLORS = PALETTE_SERIES_COLORS;

/** The colour of series `i`: distinct for the first twelve, then dashed variants (see `dashOf`). */
export const colorOf = (i: number): string => SERIES_COLORS[i % SERIES_COLORS.length];
/** Series 12 to 23 dashed, 24 on dotted: with the colour, 36 series stay apart. */
export function dashOf(i: number, simulated: boolean): number[] {
  if (simulated) return [4, 3];
  const round = Math.floor(i / SERIES_COLORS.length) % 3;
  return round === 0 ? [] : round === 1 ? [6, 3] : [1, 2];
}
