// Rank sections (a TraceSet in one widget): collapse/expand, the rank filter, summary lanes and
// flow arrows that end on a collapsed group's header row.
import { describe, expect, it } from "vitest";
import { encodeFrame, decodeFrame } from "../src/codec";
import { rowAt } from "../src/layout";
import {
  GROUP_H, ROW_H, TRACK_GAP, computeLayout, parseRanks, parseTracks, ranksText, sectionKeys, tracksBetween,
  type TrackInfo,
} from "../src/layout";
import { laneRuns, parseRanksInfo, sectionNotes, summaryFromFrame } from "../src/summary";
import { AXIS_H, COMM_COLOR, GUTTER_W, type TimelineScene } from "../src/scene";
import { TimelineRenderer } from "../src/timeline";
import { allocSlices } from "../src/lod";
import type { Theme } from "../src/theme";

// Two ranks, each with a "python" process (two threads) and a "Spans" process; as WidgetData.tracks()
// sends them: the rank's own process names, the group key and section key made kernel-side.
const raw = [0, 1].flatMap((r) => [
  { id: 0, process: "python", thread: "main", label: "m", group: "CPU", name: "main", depths: 3, rank: r, section: `rank ${r}`, key: `rank ${r}/python` },
  { id: 0, process: "python", thread: "gloo", label: "g", group: "CPU", name: "gloo", depths: 1, rank: r, section: `rank ${r}`, key: `rank ${r}/python` },
  { id: 0, process: "Spans", thread: "p", label: "p", group: "Spans", name: "p", depths: 1, rank: r, section: `rank ${r}`, key: `rank ${r}/Spans` },
]).map((t, i) => ({ ...t, id: i }));
const tracks: TrackInfo[] = parseTracks(raw);

describe("rank sections", () => {
  it("parses rank and section, and lists the sections", () => {
    expect(tracks[3]).toMatchObject({ rank: 1, section: "rank 1" });
    expect(parseTracks([{ process: "p" }])[0].section).toBeUndefined();
    expect(sectionKeys(tracks)).toEqual(["rank 0", "rank 1"]);
  });

  it("a collapsed rank is one header row; its tracks point at it", () => {
    const L = computeLayout(tracks, new Set(["rank 0", "rank 1"]));
    expect(L.groups.map((g) => [g.kind, g.key, g.y])).toEqual([["section", "rank 0", 0], ["section", "rank 1", GROUP_H]]);
    expect(L.height).toBe(2 * GROUP_H);
    expect(Array.from(L.trackY)).toEqual([-1, -1, -1, -1, -1, -1]);
    expect(Array.from(L.home)).toEqual([0, 0, 0, GROUP_H, GROUP_H, GROUP_H]);
    expect(rowAt(L, GROUP_H + 3)).toEqual({ kind: "group", group: 1 });
    expect(rowAt(L, 2 * GROUP_H + 3)).toBeNull();
    expect(tracksBetween(L, 0, 1000)).toEqual([]);
  });

  it("expanding one rank shows its process groups (the same process of two ranks is two groups), indented", () => {
    const L = computeLayout(tracks, new Set(["rank 1"]));
    expect(L.groups.map((g) => [g.kind, g.name, g.level])).toEqual([
      ["section", "rank 0", 0], ["process", "CPU", 1], ["process", "Spans", 1], ["section", "rank 1", 0],
    ]);
    // rank 0 header, python header, main (3 rows), gloo (1 row), Spans header, p (1 row), rank 1 header
    expect(L.trackY[0]).toBe(2 * GROUP_H);
    expect(L.trackY[1]).toBe(2 * GROUP_H + 3 * ROW_H + TRACK_GAP);
    const spans = 2 * GROUP_H + 4 * ROW_H + 2 * TRACK_GAP;
    expect(L.groups[2].y).toBe(spans);
    expect(L.trackY[2]).toBe(spans + GROUP_H);
    const rank1 = spans + GROUP_H + ROW_H + TRACK_GAP;
    expect(L.groups[3].y).toBe(rank1);
    expect(L.height).toBe(rank1 + GROUP_H);
    expect(Array.from(L.home)).toEqual([-1, -1, -1, rank1, rank1, rank1]);
    // a range over everything: each visible track once (sections do not repeat their tracks)
    expect(tracksBetween(L, 0, 10_000)).toEqual([0, 1, 2]);
  });

  it("a collapsed process group inside an expanded rank is the home of its tracks", () => {
    const L = computeLayout(tracks, new Set(["rank 0/python", "rank 1"]));
    expect(L.home[0]).toBe(GROUP_H);
    expect(L.home[1]).toBe(GROUP_H);
    expect(L.trackY[2]).toBe(3 * GROUP_H);
  });

  it("the rank filter hides other ranks entirely", () => {
    const L = computeLayout(tracks, new Set(), new Set([1]));
    expect(L.groups.map((g) => g.key)).toEqual(["rank 1", "rank 1/python", "rank 1/Spans"]);
    expect(L.trackY[0]).toBe(-1);
    expect(L.home[0]).toBe(-1); // not shown at all: no arrow end
    expect(L.trackY[3]).toBe(2 * GROUP_H);
  });

  it("reads and writes the rank selector's text", () => {
    expect(parseRanks("")).toBeNull();
    expect(parseRanks("all")).toBeNull();
    expect(Array.from(parseRanks("0, 2-4 7") ?? [])).toEqual([0, 2, 3, 4, 7]);
    expect(parseRanks("3-1")).toBeUndefined();
    expect(parseRanks("rank 1")).toBeUndefined();
    expect(ranksText([7, 0, 2, 3, 4])).toBe("0, 2-4, 7");
    expect(ranksText(null)).toBe("");
  });

  it("notes each rank's clock offset from the earliest rank", () => {
    const ranks = parseRanksInfo([{ rank: 0, offset: 4033097 }, { rank: 1, offset: 0 }, { rank: "x", offset: 1 }]);
    expect(ranks).toEqual([{ rank: 0, offset: 4033097 }, { rank: 1, offset: 0 }]);
    const notes = sectionNotes(ranks, null, "ns");
    expect(notes.get(0)).toBe("clock +4.033 ms");
    expect(notes.get(1)).toBe("clock +0 ns");
    expect(sectionNotes(ranks, { step: 2 }, "ns").get(0)).toBe("shift +4.033 ms");
  });
});

describe("summary lanes", () => {
  const frame = decodeFrame(encodeFrame({
    key: new Uint16Array([0, 0, 0, 1]), kind: new Uint8Array([0, 0, 1, 0]),
    start: new Float64Array([0, 500, 100, 10]), dur: new Float64Array([100, 0.1, 50, 20]),
  }, { keys: ["rank 0", "rank 1"], busy: [100.1, 20], comm: [50, 0] }));

  it("splits the frame by group and kind", () => {
    const lanes = summaryFromFrame(frame);
    const r0 = lanes.get("rank 0");
    expect(Array.from(r0?.start[0] ?? [])).toEqual([0, 500]);
    expect(Array.from(r0?.start[1] ?? [])).toEqual([100]);
    expect(r0?.busy).toBe(100.1);
    expect(Array.from(lanes.get("rank 1")?.dur[0] ?? [])).toEqual([20]);
  });

  it("turns intervals into pixel runs, at least 1 px, touching runs joined, clipped to the plot", () => {
    const start = new Float64Array([-50, 100, 150, 400, 400.5, 2000]);
    const dur = new Float64Array([100, 50, 10, 0.01, 0.01, 5]);
    // 1 px per time unit, plot from x=10 to x=1010
    expect(laneRuns(start, dur, { start: 0, end: 1000 }, 10, 1010)).toEqual([10, 60, 110, 170, 410, 411]);
  });
});

const theme: Theme = { bg: "#fff", fg: "#000", fgDim: "#666", grid: "#ccc", header: "#eee", accent: "#00f", font: "sans" };

function recordingCanvas() {
  const rects: Array<{ x: number; y: number; w: number; h: number; style: string }> = [];
  const curves: number[][] = [];
  let at: number[] = [];
  const ctx: Record<string, unknown> = {
    fillStyle: "", strokeStyle: "", globalAlpha: 1, lineWidth: 1, font: "", textBaseline: "",
    setTransform() {}, save() {}, restore() {}, beginPath() {}, rect() {}, clip() {},
    moveTo: (x: number, y: number) => (at = [x, y]), lineTo() {}, stroke() {}, fill() {}, closePath() {},
    strokeRect() {}, setLineDash() {}, fillText() {},
    bezierCurveTo: (_a: number, _b: number, _c: number, _d: number, x: number, y: number) => curves.push([...at, x, y]),
    measureText: (t: string) => ({ width: t.length * 6 }),
    fillRect(x: number, y: number, w: number, h: number) { rects.push({ x, y, w, h, style: String(ctx.fillStyle) }); },
  };
  const canvas = { width: 0, height: 0, style: {}, getContext: () => ctx } as unknown as HTMLCanvasElement;
  return { canvas, rects, curves };
}

function scene(extra: Partial<TimelineScene>): TimelineScene {
  return {
    view: { start: 0, end: 1000 }, unit: "ns", tracks, layout: computeLayout(tracks, new Set()), legend: [],
    theme, scrollY: 0, selected: null, hoverBox: -1, range: null, rangeTracks: null, flows: [], ...extra,
  };
}

describe("drawing rank sections", () => {
  it("a flow arrow to a track of a collapsed rank ends on that rank's header row", () => {
    const f = recordingCanvas();
    const r = new TimelineRenderer(f.canvas);
    r.resize(GUTTER_W + 1000, 600, 1);
    r.setData(allocSlices(0), 1, null);
    const layout = computeLayout(tracks, new Set(["rank 1"]));
    const flow = { source: 1, target: 2, source_track: 0, target_track: 4, source_time: 100, target_time: 300 };
    r.draw(scene({ layout, flows: [flow] }));
    expect(f.curves).toHaveLength(1);
    const [x0, y0, x1, y1] = f.curves[0];
    expect(x0).toBe(GUTTER_W + 100);
    expect(y0).toBe(AXIS_H + layout.trackY[0] + ROW_H / 2);
    expect(x1).toBe(GUTTER_W + 300);
    expect(y1).toBe(AXIS_H + layout.groups[3].y + GROUP_H / 2); // rank 1's header
    // ... and is not drawn when that rank is filtered out
    const g = recordingCanvas();
    const r2 = new TimelineRenderer(g.canvas);
    r2.resize(GUTTER_W + 1000, 600, 1);
    r2.setData(allocSlices(0), 1, null);
    r2.draw(scene({ layout: computeLayout(tracks, new Set(), new Set([0])), flows: [flow] }));
    expect(g.curves).toHaveLength(0);
  });

  it("draws a collapsed rank's busy and communication lanes in its header row, in the legend's colours", () => {
    const f = recordingCanvas();
    const r = new TimelineRenderer(f.canvas);
    r.resize(GUTTER_W + 1000, 600, 1);
    r.setData(allocSlices(0), 1, null);
    const layout = computeLayout(tracks, new Set(["rank 0", "rank 1"]));
    const legend = [{ key: "cpu_op", color: "#4e79a7" }, { key: "kernel", color: "#2e9e44" },
      { key: "communication", color: COMM_COLOR }];
    r.draw(scene({ layout, legend, summary: summaryFromFrame(decodeFrame(encodeFrame({
      key: new Uint16Array([0, 0, 0]), kind: new Uint8Array([0, 0, 1]), color: new Uint16Array([0, 1, 2]),
      start: new Float64Array([100, 500, 200]), dur: new Float64Array([300, 100, 50]),
    }, { keys: ["rank 1"] }))) }));
    const header1 = AXIS_H + GROUP_H;
    const inRow = (x: { y: number }): boolean => x.y >= header1 && x.y < header1 + GROUP_H;
    const cpu = f.rects.filter((x) => x.style === "#4e79a7" && inRow(x));
    expect(cpu).toEqual([expect.objectContaining({ x: GUTTER_W + 100, w: 300, y: header1 + 3 })]);
    const kernel = f.rects.filter((x) => x.style === "#2e9e44" && inRow(x));
    expect(kernel).toEqual([expect.objectContaining({ x: GUTTER_W + 500, w: 100, y: header1 + 3 })]);
    const comm = f.rects.filter((x) => x.style === COMM_COLOR);
    expect(comm).toEqual([expect.objectContaining({ x: GUTTER_W + 200, w: 50, y: header1 + GROUP_H / 2 })]);
    // nothing in a colour the legend does not list (the accent was used before), nothing in rank 0's row
    expect(f.rects.filter((x) => x.style === theme.accent)).toEqual([]);
    expect(f.rects.filter((x) => legend.some((e) => e.color === x.style) && x.y >= AXIS_H && x.y < header1)).toEqual([]);
  });
});

describe("ranks aligned on a step", () => {
  it("the time range starts at the first event's negative time; 0 otherwise", async () => {
    const { boundsFor, clampView } = await import("../src/viewport");
    const b = boundsFor(1000, "ns", -200);
    expect(b).toMatchObject({ min: -200, max: 1000 });
    expect(clampView({ start: -500, end: 100 }, b)).toEqual({ start: -200, end: 400 });
    expect(boundsFor(1000, "ns", 50)).toMatchObject({ min: 0, max: 1000 }); // a positive start changes nothing
    expect(boundsFor(1000, "ns")).toMatchObject({ min: 0, max: 1000, minSpan: 1 });
  });
});
