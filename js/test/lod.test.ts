import { describe, expect, it } from "vitest";
import { allocSlices, mergeSlices, slicesFromFrame, type Slices } from "../src/lod";
import { decodeFrame, encodeFrame } from "../src/codec";
import lodShared from "../../tests/shared_fixtures/lod_merge.json";

/** Events given as [track, depth, start, dur]; ids are their positions. */
function events(rows: Array<[number, number, number, number]>): Slices {
  const s = allocSlices(rows.length);
  rows.forEach(([t, d, start, dur], i) => {
    s.track[i] = t; s.depth[i] = d; s.start[i] = start; s.dur[i] = dur;
    s.id[i] = i; s.count[i] = 1; s.busy[i] = dur; s.label[i] = 0; s.longest[i] = dur;
  });
  return s;
}
const sum = (a: ArrayLike<number>): number => Array.from(a).reduce((x, y) => x + y, 0);

describe("level-of-detail merge", () => {
  it("1000 events of 1 ns at width 10 merge into one box per pixel column", () => {
    const s = events(Array.from({ length: 1000 }, (_, i) => [0, 0, i, 1] as [number, number, number, number]));
    const m = mergeSlices(s, 0, 1000, 10); // px = 100 ns: columns of 100 events
    expect(m.n).toBeLessThanOrEqual(10);
    expect(m.n).toBe(10);
    expect(sum(m.count)).toBe(1000);
    expect(sum(m.busy)).toBe(1000);
    for (let c = 0; c < 10; c++) {
      expect(m.start[c]).toBe(100 * c); // first event's start
      expect(m.dur[c]).toBe(100); // to the last event's end: 100c + 99 + 1
      expect(m.id[c]).toBe(-1);
      expect(m.label[c]).toBe(-1);
      expect(m.count[c]).toBe(100);
    }
  });

  it("events at least one pixel long stay their own boxes", () => {
    const s = events([[0, 0, 0, 100], [0, 0, 100, 250], [0, 0, 400, 100]]);
    const m = mergeSlices(s, 0, 1000, 10);
    expect(m.n).toBe(3);
    expect(Array.from(m.id)).toEqual([0, 1, 2]);
    expect(Array.from(m.count)).toEqual([1, 1, 1]);
  });

  it("a long event breaks a run; rows (track, depth) never merge together", () => {
    const s = events([
      [0, 0, 0, 10], [0, 1, 5, 10], [0, 0, 20, 150], [0, 0, 180, 5], [1, 0, 30, 10], [0, 0, 190, 5],
    ]);
    const m = mergeSlices(s, 0, 1000, 10); // px = 100
    // row (0,0): [0,10] alone in column 0 until the long event; long event; [180] + [190] merged
    const row00 = Array.from({ length: m.n }, (_, i) => i).filter((i) => m.track[i] === 0 && m.depth[i] === 0);
    expect(row00.map((i) => m.count[i])).toEqual([1, 1, 2]);
    expect(m.dur[row00[2]]).toBe(15); // 180 .. 195
    expect(m.busy[row00[2]]).toBe(10);
    expect(m.n).toBe(5);
    expect(sum(m.count)).toBe(6);
  });

  it("keeps a single short event as itself (its id and label)", () => {
    const s = events([[0, 0, 350, 3]]);
    const m = mergeSlices(s, 0, 1000, 10);
    expect(m.n).toBe(1);
    expect(m.id[0]).toBe(0);
    expect(m.count[0]).toBe(1);
  });

  it("drops boxes outside the window and counts only those inside", () => {
    const s = events([[0, 0, 0, 10], [0, 0, 500, 10], [0, 0, 2000, 10]]);
    const m = mergeSlices(s, 400, 1000, 600);
    expect(m.n).toBe(1);
    expect(m.start[0]).toBe(500);
    expect(m.total).toBe(1);
  });

  it("re-merging already merged boxes adds their counts and busy time", () => {
    const s = events(Array.from({ length: 1000 }, (_, i) => [0, 0, i, 1] as [number, number, number, number]));
    const fine = mergeSlices(s, 0, 1000, 100); // 100 boxes of 10 events
    expect(fine.n).toBe(100);
    const coarse = mergeSlices(fine, 0, 1000, 10);
    expect(coarse.n).toBe(10);
    expect(Array.from(coarse.count)).toEqual(new Array(10).fill(100));
    expect(sum(coarse.busy)).toBe(1000);
  });

  it("reads a slices frame with the protocol's columns", () => {
    const bytes = encodeFrame({
      track: Uint32Array.from([0, 1]), depth: Uint16Array.from([0, 2]), start: Float64Array.from([0, 5]),
      dur: Float64Array.from([10, 1]), id: Int32Array.from([7, -1]), count: Uint32Array.from([1, 4]),
      busy: Float64Array.from([10, 0.5]), color: Uint16Array.from([3, 1]), label: Int32Array.from([0, -1]),
    }, { t0: 0, t1: 10, width: 4096, labels: ["conv"], total: 5 });
    const s = slicesFromFrame(decodeFrame(bytes));
    expect(s.n).toBe(2);
    expect(s.labels).toEqual(["conv"]);
    expect(s.total).toBe(5);
    expect(Array.from(s.depth)).toEqual([0, 2]);
    expect(Array.from(s.id)).toEqual([7, -1]);
  });
});

interface LodCase { name: string; t0: number; t1: number; width: number; total: number; boxes: number[][]; expected: number[][] }
const lodCases = (lodShared as unknown as { cases: LodCase[] }).cases;

describe("level-of-detail merge: the fixture shared with pytest (tests/test_overview.py)", () => {
  it.each(lodCases)("$name", (c) => {
    const s = allocSlices(c.boxes.length);
    c.boxes.forEach(([track, depth, start, dur, count, busy, color, longest], i) => {
      s.track[i] = track; s.depth[i] = depth; s.start[i] = start; s.dur[i] = dur; s.id[i] = i;
      s.count[i] = count; s.busy[i] = busy; s.color[i] = color; s.longest[i] = longest; s.label[i] = 0;
    });
    const m = mergeSlices(s, c.t0, c.t1, c.width);
    const got = Array.from({ length: m.n }, (_, i) => [
      m.track[i], m.depth[i], m.start[i], m.dur[i], m.id[i], m.count[i], m.busy[i], m.color[i], m.longest[i],
    ]);
    const key = (b: number[]): string => b.map((x) => String(x).padStart(12, "0")).join(",");
    const sorted = (bs: number[][]): number[][] => [...bs].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
    expect(sorted(got)).toEqual(sorted(c.expected));
    expect(m.total).toBe(c.total);
  });

  it("a frame without `longest` (older kernel) takes each box's extent", () => {
    const f = decodeFrame(encodeFrame({ start: Float64Array.from([0, 5]), dur: Float64Array.from([3, 9]) }));
    expect(Array.from(slicesFromFrame(f).longest)).toEqual([3, 9]);
  });
});
