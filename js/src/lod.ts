// Slices frames and the level-of-detail merge rule (docs/widget-protocol.md, same rule as
// merge_sorted in jupyter_profview/widget/merge.py; both checked against
// tests/shared_fixtures/lod_merge.json): with px = (t1 - t0) / width, a box with dur >= px stays
// its own box; consecutive boxes of one (track, depth) row that are each shorter than px
// and whose starts fall in the same pixel column floor((start - t0) / px) merge into one
// box that keeps the summed `count` and `busy` and the colour of its longest event
// (`longest`; on a tie the earliest box's).

import { timeColumn, type Frame } from "./codec";

export interface Slices {
  n: number;
  track: Uint32Array;
  depth: Uint16Array;
  start: Float64Array;
  dur: Float64Array;
  id: Int32Array;
  count: Uint32Array;
  busy: Float64Array;
  color: Uint16Array;
  label: Int32Array;
  /** Duration of the longest event in the box (its colour is that event's). */
  longest: Float64Array;
  labels: string[];
  /** Window and resolution the boxes were computed for. */
  t0: number;
  t1: number;
  width: number;
  /** Events in the window (meta.total), or the summed counts. */
  total: number;
}

export function allocSlices(n: number, labels: string[] = []): Slices {
  return {
    n, labels, t0: 0, t1: 0, width: 1, total: 0,
    track: new Uint32Array(n), depth: new Uint16Array(n), start: new Float64Array(n),
    dur: new Float64Array(n), id: new Int32Array(n), count: new Uint32Array(n),
    busy: new Float64Array(n), color: new Uint16Array(n), label: new Int32Array(n),
    longest: new Float64Array(n),
  };
}

function col<T>(frame: Frame, name: string, ctor: { new (n: number): T; from(a: ArrayLike<number>): T }, n: number, fill = 0): T {
  const c = frame.columns[name];
  if (!c) {
    const out = new ctor(n) as unknown as { fill(v: number): T };
    return out.fill(fill);
  }
  if (c instanceof (ctor as unknown as typeof Float64Array)) return c as unknown as T;
  return ctor.from(c);
}

/** View a decoded slices frame as typed columns (no copy when the dtypes match the protocol). */
export function slicesFromFrame(frame: Frame): Slices {
  const n = frame.columns.start ? frame.columns.start.length : 0;
  const m = frame.meta;
  const num = (v: unknown, d: number): number => (typeof v === "number" && Number.isFinite(v) ? v : d);
  const count = col(frame, "count", Uint32Array, n, 1);
  const labels = Array.isArray(m.labels) ? (m.labels as unknown[]).map(String) : [];
  const s: Slices = {
    n, labels,
    track: col(frame, "track", Uint32Array, n),
    depth: col(frame, "depth", Uint16Array, n),
    start: timeColumn(frame, "start") ?? new Float64Array(n),
    dur: col(frame, "dur", Float64Array, n),
    id: col(frame, "id", Int32Array, n, -1),
    count,
    busy: frame.columns.busy ? col(frame, "busy", Float64Array, n) : Float64Array.from(col(frame, "dur", Float64Array, n)),
    color: col(frame, "color", Uint16Array, n),
    label: col(frame, "label", Int32Array, n, -1),
    // absent (an older kernel): the extent, exact for single events
    longest: col(frame, frame.columns.longest ? "longest" : "dur", Float64Array, n),
    t0: num(m.t0, 0), t1: num(m.t1, 0), width: num(m.width, 1), total: 0,
  };
  let total = 0;
  for (let i = 0; i < n; i++) total += count[i];
  s.total = num(m.total, total);
  if (!(s.t1 > s.t0) && n > 0) {
    let lo = Infinity;
    let hi = -Infinity;
    for (let i = 0; i < n; i++) {
      lo = Math.min(lo, s.start[i]);
      hi = Math.max(hi, s.start[i] + s.dur[i]);
    }
    s.t0 = lo;
    s.t1 = hi;
  }
  return s;
}

/** Boxes grouped by row ((track, depth), rows in first-seen order), each row in start order. */
export interface RowOrder {
  /** Box indices, row after row. */
  order: Uint32Array;
  /** Row r is order[rowStart[r] .. rowStart[r + 1]). */
  rowStart: Uint32Array;
  rows: number;
}

export function rowOrder(s: Slices): RowOrder {
  const map = new Map<number, number>();
  const rowOf = new Uint32Array(s.n);
  let lastKey = -1;
  let lastRow = 0;
  for (let i = 0; i < s.n; i++) {
    const key = s.track[i] * 65536 + s.depth[i];
    if (key !== lastKey) {
      let r = map.get(key);
      if (r === undefined) {
        r = map.size;
        map.set(key, r);
      }
      lastKey = key;
      lastRow = r;
    }
    rowOf[i] = lastRow;
  }
  const rows = map.size;
  const rowStart = new Uint32Array(rows + 1);
  for (let i = 0; i < s.n; i++) rowStart[rowOf[i] + 1]++;
  for (let r = 0; r < rows; r++) rowStart[r + 1] += rowStart[r];
  const fill = rowStart.slice(0, rows);
  const order = new Uint32Array(s.n);
  for (let i = 0; i < s.n; i++) order[fill[rowOf[i]]++] = i;
  return { order, rowStart, rows };
}

/** Reusable output storage for mergeSlices (grown, never shrunk: no per-frame allocation). */
export class SliceBuffer {
  private buf: Slices = allocSlices(0);
  ensure(n: number, labels: string[]): Slices {
    if (this.buf.track.length < n) this.buf = allocSlices(Math.max(n, Math.ceil(this.buf.track.length * 1.5)));
    this.buf.labels = labels;
    return this.buf;
  }
}

/** First position in order[a..b) whose box ends at or after t (ends rise along a row). */
function firstEndingAfter(src: Slices, order: Uint32Array, a: number, b: number, t: number): number {
  let lo = a;
  let hi = b;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const i = order[mid];
    if (src.start[i] + src.dur[i] < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Re-merge `src` for the window [t0, t1] drawn `width` pixels wide. Boxes entirely outside the
 * window are dropped; each row is entered by binary search, so the cost follows the boxes in
 * the window. The result is grouped by row, each row in start order. Pass `rows`
 * (from rowOrder, computed once per source) and a `buffer` to avoid recomputation/allocation.
 */
export function mergeSlices(
  src: Slices, t0: number, t1: number, width: number,
  rows: RowOrder = rowOrder(src), buffer?: SliceBuffer,
): Slices {
  const out = buffer ? buffer.ensure(src.n, src.labels) : allocSlices(src.n, src.labels);
  const px = (t1 - t0) / Math.max(1, width);
  const { start, dur, count, busy, longest, color } = src;
  const { order, rowStart } = rows;
  let n = 0;
  let total = 0;
  for (let r = 0; r < rows.rows; r++) {
    const b = rowStart[r + 1];
    let open = -1; // output index of the box that may still grow
    let openCol = 0;
    for (let j = firstEndingAfter(src, order, rowStart[r], b, t0); j < b; j++) {
      const i = order[j];
      const s = start[i];
      if (s > t1) break;
      const d = dur[i];
      if (s + d < t0) continue;
      total += count[i];
      if (d >= px || !(px > 0)) {
        copyBox(src, i, out, n++);
        open = -1;
        continue;
      }
      const c = Math.floor((s - t0) / px);
      if (open >= 0 && openCol === c) {
        // Grow the open box: extent to the furthest end, counts and busy summed.
        const end = Math.max(out.start[open] + out.dur[open], s + d);
        out.dur[open] = end - out.start[open];
        out.count[open] += count[i];
        out.busy[open] += busy[i];
        if (longest[i] > out.longest[open]) {
          // the longest event's colour; on a tie the earlier box keeps its colour
          out.longest[open] = longest[i];
          out.color[open] = color[i];
        }
        out.id[open] = -1;
        out.label[open] = -1;
        continue;
      }
      open = n;
      openCol = c;
      copyBox(src, i, out, n++);
    }
  }
  const res = shrink(out, n);
  res.t0 = t0;
  res.t1 = t1;
  res.width = width;
  res.total = total;
  return res;
}
function copyBox(a: Slices, i: number, b: Slices, j: number): void {
  b.track[j] = a.track[i];
  b.depth[j] = a.depth[i];
  b.start[j] = a.start[i];
  b.dur[j] = a.dur[i];
  b.id[j] = a.id[i];
  b.count[j] = a.count[i];
  b.busy[j] = a.busy[i];
  b.color[j] = a.color[i];
  b.label[j] = a.label[i];
  b.longest[j] = a.longest[i];
}

function shrink(s: Slices, n: number): Slices {
  return {
    ...s, n,
    track: s.track.subarray(0, n), depth: s.depth.subarray(0, n), start: s.start.subarray(0, n),
    dur: s.dur.subarray(0, n), id: s.id.subarray(0, n), count: s.count.subarray(0, n),
    busy: s.busy.subarray(0, n), color: s.color.subarray(0, n), label: s.label.subarray(0, n),
    longest: s.longest.subarray(0, n),
  };
}
