// Summary lanes of collapsed groups (`_summary` frame, docs/widget-protocol.md): where each
// group is busy (kind 0: its top-level work) and communicating (kind 1), drawn in the group's
// header row while it is collapsed; and the rank sections' header notes (clock offsets).

import { formatTime, type TimeUnit } from "./axis";
import type { Frame } from "./codec";

export interface SummaryLane {
  /** Intervals per kind (0 work, 1 communication), in frame order (by colour, then start). */
  start: [Float64Array, Float64Array];
  dur: [Float64Array, Float64Array];
  /** Each interval's legend entry (the colour of the slices it covers; 0 when the frame has none). */
  color: [Uint16Array, Uint16Array];
  busy: number;
  comm: number;
}

/** The lanes of a `_summary` frame by group key. */
export function summaryFromFrame(f: Frame): Map<string, SummaryLane> {
  const out = new Map<string, SummaryLane>();
  const keys = Array.isArray(f.meta.keys) ? (f.meta.keys as unknown[]).map(String) : [];
  const busy = Array.isArray(f.meta.busy) ? (f.meta.busy as unknown[]).map(Number) : [];
  const comm = Array.isArray(f.meta.comm) ? (f.meta.comm as unknown[]).map(Number) : [];
  const { key, kind, start, dur, color } = f.columns;
  if (!key || !start || !dur) return out;
  const counts = keys.map(() => [0, 0]);
  for (let i = 0; i < f.length; i++) {
    const c = counts[key[i]];
    if (c) c[kind ? Math.min(1, kind[i]) : 0]++;
  }
  const lanes = keys.map((_, k) => ({
    start: [new Float64Array(counts[k][0]), new Float64Array(counts[k][1])] as [Float64Array, Float64Array],
    dur: [new Float64Array(counts[k][0]), new Float64Array(counts[k][1])] as [Float64Array, Float64Array],
    color: [new Uint16Array(counts[k][0]), new Uint16Array(counts[k][1])] as [Uint16Array, Uint16Array],
    busy: busy[k] ?? NaN, comm: comm[k] ?? NaN,
  }));
  const fill = keys.map(() => [0, 0]);
  for (let i = 0; i < f.length; i++) {
    const lane = lanes[key[i]];
    if (!lane) continue;
    const k = kind ? Math.min(1, kind[i]) : 0;
    const j = fill[key[i]][k]++;
    lane.start[k][j] = start[i];
    lane.dur[k][j] = dur[i];
    lane.color[k][j] = color ? color[i] : 0;
  }
  keys.forEach((name, k) => out.set(name, lanes[k]));
  return out;
}

/**
 * A lane's intervals of one kind split by colour (legend entry), the entries drawn last first:
 * the first legend entries (the largest categories, a metric's worst class) end on top.
 */
export function laneColors(lane: SummaryLane, kind: 0 | 1): Array<{ color: number; start: Float64Array; dur: Float64Array }> {
  const codes = lane.color[kind];
  const by = new Map<number, number[]>();
  for (let i = 0; i < codes.length; i++) {
    const list = by.get(codes[i]);
    if (list) list.push(i);
    else by.set(codes[i], [i]);
  }
  return [...by.entries()].sort((a, b) => b[0] - a[0]).map(([color, idx]) => {
    const order = idx.sort((a, b) => lane.start[kind][a] - lane.start[kind][b]);
    return {
      color,
      start: Float64Array.from(order, (i) => lane.start[kind][i]),
      dur: Float64Array.from(order, (i) => lane.dur[kind][i]),
    };
  });
}

/**
 * Pixel runs [x0, x1) of intervals in the view, at least 1 px wide, touching runs joined.
 * `x0` is where the plot starts (the gutter), `width` the canvas width.
 */
export function laneRuns(start: Float64Array, dur: Float64Array, view: { start: number; end: number },
  x0: number, width: number): number[] {
  const k = (width - x0) / (view.end - view.start);
  const runs: number[] = [];
  for (let i = 0; i < start.length; i++) {
    const a = x0 + (start[i] - view.start) * k;
    const b = a + dur[i] * k;
    if (b < x0 || a > width) continue;
    let p0 = Math.max(x0, Math.floor(a));
    let p1 = Math.min(width, Math.max(Math.round(b), Math.floor(a) + 1));
    if (p1 <= p0) p1 = p0 + 1;
    const n = runs.length;
    if (n && p0 <= runs[n - 1]) {
      runs[n - 1] = Math.max(runs[n - 1], p1);
      continue;
    }
    p0 = Math.max(p0, x0);
    runs.push(p0, p1);
  }
  return runs;
}

export interface RankInfo { rank: number; offset: number }

/** `_info.ranks` (absent for one trace). */
export function parseRanksInfo(raw: unknown): RankInfo[] {
  if (!Array.isArray(raw)) return [];
  return raw.filter((r) => r && Number.isInteger(r.rank) && Number.isFinite(Number(r.offset)))
    .map((r) => ({ rank: Number(r.rank), offset: Number(r.offset) }));
}

/**
 * The note after a rank section's name, by rank: its clock offset from the earliest rank's
 * ("clock +4.033 ms"), and "aligned on step N" when the ranks were lined up on a step.
 */
export function sectionNotes(ranks: RankInfo[], align: { step?: number } | null | undefined,
  unit: TimeUnit): Map<number, string> {
  const out = new Map<number, string>();
  if (!ranks.length) return out;
  const base = Math.min(...ranks.map((r) => r.offset));
  const what = align && Number.isFinite(Number(align.step)) ? `shift ` : "clock ";
  for (const r of ranks) out.set(r.rank, `${what}+${formatTime(r.offset - base, unit)}`);
  return out;
}
