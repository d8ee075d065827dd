import { describe, expect, it } from "vitest";
import { boxAt, boxCenter, buildBoxIndex, hitTest } from "../src/hittest";
import { GROUP_H, ROW_H, TRACK_GAP, computeLayout, parseTracks, rowAt, tracksBetween, type TrackInfo } from "../src/layout";
import { allocSlices } from "../src/lod";

const tracks: TrackInfo[] = [
  { id: 0, process: "cpu", key: "cpu", thread: "main", label: "main", group: "cpu", name: "main", depths: 2 },
  { id: 1, process: "gpu", key: "gpu", thread: "s7", label: "s7", group: "gpu", name: "s7", depths: 1 },
  { id: 2, process: "cpu", key: "cpu", thread: "aux", label: "aux", group: "cpu", name: "aux", depths: 1 },
];

// Boxes: [track, depth, start, dur, id]
const rows: Array<[number, number, number, number, number]> = [
  [0, 0, 0, 100, 10], [0, 0, 200, 50, 11], [0, 1, 10, 20, 12], [1, 0, 0, 1000, 13], [2, 0, 500, 10, 14],
];
const s = allocSlices(rows.length);
rows.forEach(([t, d, st, du, id], i) => {
  s.track[i] = t; s.depth[i] = d; s.start[i] = st; s.dur[i] = du; s.id[i] = id; s.count[i] = 1;
});
const index = buildBoxIndex(s);

describe("layout", () => {
  it("groups tracks by process in first-seen order, one sub-row per depth", () => {
    const L = computeLayout(tracks, new Set());
    expect(L.groups.map((g) => g.process)).toEqual(["cpu", "gpu"]);
    expect(L.groups[0].tracks).toEqual([0, 2]);
    // cpu header, main (2 rows), aux (1 row), gpu header, s7 (1 row)
    expect(L.trackY[0]).toBe(GROUP_H);
    expect(L.trackY[2]).toBe(GROUP_H + 2 * ROW_H + TRACK_GAP);
    const gpuY = GROUP_H + 3 * ROW_H + 2 * TRACK_GAP;
    expect(L.groups[1].y).toBe(gpuY);
    expect(L.trackY[1]).toBe(gpuY + GROUP_H);
    expect(L.height).toBe(2 * GROUP_H + 4 * ROW_H + 3 * TRACK_GAP);
  });

  it("a collapsed group keeps only its header", () => {
    const L = computeLayout(tracks, new Set(["cpu"]));
    expect(L.trackY[0]).toBe(-1);
    expect(L.trackY[2]).toBe(-1);
    expect(L.groups[1].y).toBe(GROUP_H);
    expect(L.height).toBe(2 * GROUP_H + ROW_H + TRACK_GAP);
    expect(rowAt(L, 5)).toEqual({ kind: "group", group: 0 });
  });
});

describe("hit testing", () => {
  const L = computeLayout(tracks, new Set());
  const yOf = (track: number, depth: number): number => L.trackY[track] + depth * ROW_H + ROW_H / 2;

  it("finds the box under a point, per depth row", () => {
    expect(hitTest(s, index, L, 50, yOf(0, 0))).toMatchObject({ kind: "box", id: 10, track: 0, depth: 0 });
    expect(hitTest(s, index, L, 220, yOf(0, 0))).toMatchObject({ kind: "box", id: 11 });
    expect(hitTest(s, index, L, 15, yOf(0, 1))).toMatchObject({ kind: "box", id: 12, depth: 1 });
    expect(hitTest(s, index, L, 505, yOf(2, 0))).toMatchObject({ kind: "box", id: 14, track: 2 });
    expect(hitTest(s, index, L, 999, yOf(1, 0))).toMatchObject({ kind: "box", id: 13 });
  });

  it("points between or beside boxes hit nothing; tolerance catches near misses", () => {
    expect(hitTest(s, index, L, 150, yOf(0, 0))).toEqual({ kind: "empty", track: 0, depth: 0 });
    expect(hitTest(s, index, L, 50, yOf(0, 1))).toEqual({ kind: "empty", track: 0, depth: 1 });
    expect(boxAt(s, index, 0, 0, 103, 0)).toBe(-1);
    expect(boxAt(s, index, 0, 0, 103, 5)).toBe(0);
    expect(boxAt(s, index, 0, 0, -3, 5)).toBe(0);
    expect(boxAt(s, index, 0, 0, 1000, 5)).toBe(-1);
  });

  it("headers hit the group; gaps and collapsed groups hit no box", () => {
    expect(hitTest(s, index, L, 50, 2)).toEqual({ kind: "group", group: 0 });
    const gap = L.trackY[0] + 2 * ROW_H + 1; // between main and aux
    expect(hitTest(s, index, L, 50, gap)).toBeNull();
    const C = computeLayout(tracks, new Set(["cpu"]));
    expect(hitTest(s, index, C, 50, GROUP_H + 2)).toEqual({ kind: "group", group: 1 });
    expect(hitTest(s, index, C, 50, C.trackY[1] + 2)).toMatchObject({ kind: "box", id: 13 });
    expect(hitTest(s, index, C, 50, 10_000)).toBeNull();
  });
});

describe("locating an event's box (browser-test hook)", () => {
  const L = computeLayout(tracks, new Set());
  const geom = { x0: 100, width: 1100, top: 20, height: 500, scrollY: 0, rowH: ROW_H };

  it("gives the centre of the visible part of the box", () => {
    // view 0..1000 over 1000 px from x0 = 100: box 11 is [200, 250] → x 300..350
    const p = boxCenter(s, L, { start: 0, end: 1000 }, 11, geom);
    expect(p).toEqual({ x: 325, y: 20 + L.trackY[0] + ROW_H / 2 });
    const deep = boxCenter(s, L, { start: 0, end: 1000 }, 12, geom);
    expect(deep?.y).toBe(20 + L.trackY[0] + ROW_H + ROW_H / 2);
    // clipped at the left edge of the plot: box 13 spans [0, 1000], view 500..1500 → 100..600
    expect(boxCenter(s, L, { start: 500, end: 1500 }, 13, geom)?.x).toBe(350);
  });

  it("is null for unknown, collapsed or scrolled-out events", () => {
    expect(boxCenter(s, L, { start: 0, end: 1000 }, 99, geom)).toBeNull();
    expect(boxCenter(s, computeLayout(tracks, new Set(["cpu"])), { start: 0, end: 1000 }, 10, geom)).toBeNull();
    expect(boxCenter(s, L, { start: 0, end: 1000 }, 10, { ...geom, scrollY: 200 })).toBeNull();
    expect(boxCenter(s, L, { start: 300, end: 400 }, 10, geom)).toBeNull();
  });
});

describe("tracks crossed by a shift-drag", () => {
  it("lists the visible lanes intersecting the rows", () => {
    const L = computeLayout(tracks, new Set());
    // from inside main (track 0) down into aux (track 2), both in the cpu group
    expect(tracksBetween(L, L.trackY[0] + 3, L.trackY[2] + 3)).toEqual([0, 2]);
    // upward drags too; across the gpu header into s7
    expect(tracksBetween(L, L.trackY[1] + 5, L.trackY[2] + 1)).toEqual([2, 1]);
    expect(tracksBetween(L, 0, 2)).toEqual([]);
    expect(tracksBetween(computeLayout(tracks, new Set(["cpu"])), 0, 1000)).toEqual([1]);
  });
});

describe("tracks from the kernel", () => {
  it("group headers and lane names come from `group`/`name`, the full label stays for the tooltip", () => {
    const raw = [
      { id: 0, process: "python (0)", thread: "stream 7", label: "python (0) / stream 7", group: "GPU 0", name: "stream 7", depths: 2 },
      { id: 1, process: "cpu", key: "cpu", thread: "t", label: "cpu / t", depths: 1 }, // an older kernel: no group/name
    ];
    const tracks = parseTracks(raw);
    expect(tracks.map((t) => [t.group, t.name, t.label])).toEqual([
      ["GPU 0", "stream 7", "python (0) / stream 7"], ["cpu", "cpu / t", "cpu / t"],
    ]);
    expect(computeLayout(tracks, new Set()).groups.map((g) => [g.process, g.name])).toEqual([
      ["python (0)", "GPU 0"], ["cpu", "cpu"],
    ]);
  });
});
