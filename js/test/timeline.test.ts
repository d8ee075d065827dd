import { describe, expect, it } from "vitest";
import { computeLayout, ROW_H, type TrackInfo } from "../src/layout";
import { allocSlices, type Slices } from "../src/lod";
import { AXIS_H, GUTTER_W, type TimelineScene } from "../src/scene";
import { TimelineRenderer } from "../src/timeline";
import type { Theme } from "../src/theme";

/** A 2D context that records fillRect calls (with the fill style and alpha at the time). */
function fakeCanvas() {
  const rects: Rect[] = [];
  const texts: string[] = [];
  const ctx: Record<string, unknown> = {
    fillStyle: "", strokeStyle: "", globalAlpha: 1, lineWidth: 1, font: "", textBaseline: "",
    setTransform() {}, save() {}, restore() {}, beginPath() {}, rect() {}, clip() {}, moveTo() {},
    lineTo() {}, stroke() {}, fill() {}, closePath() {}, strokeRect() {}, bezierCurveTo() {}, setLineDash() {},
    measureText: (t: string) => ({ width: t.length * 6 }),
    fillText: (t: string) => texts.push(t),
    fillRect(x: number, y: number, w: number, h: number) {
      rects.push({ x, y, w, h, style: String(ctx.fillStyle), alpha: Number(ctx.globalAlpha) });
    },
  };
  const canvas = { width: 0, height: 0, style: {}, getContext: () => ctx } as unknown as HTMLCanvasElement;
  return { canvas, rects, texts };
}

const theme: Theme = { bg: "#fff", fg: "#000", fgDim: "#666", grid: "#ccc", header: "#eee", accent: "#00f", font: "sans" };
const tracks: TrackInfo[] = [{ id: 0, process: "p", key: "p", thread: "t", label: "t", group: "p", name: "t", depths: 2 }];
const legend = [{ key: "a", color: "#111111" }, { key: "b", color: "#222222" }];

function scene(view = { start: 0, end: 1000 }, extra: Partial<TimelineScene> = {}): TimelineScene {
  return {
    view, unit: "ns", tracks, layout: computeLayout(tracks, new Set()), legend, theme, scrollY: 0,
    selected: null, hoverBox: -1, range: null, rangeTracks: null, flows: [], ...extra,
  };
}

function slices(rows: Array<[number, number, number, number, number]>): Slices {
  const s = allocSlices(rows.length, ["conv", "relu"]);
  rows.forEach(([depth, start, dur, id, color], i) => {
    s.depth[i] = depth; s.start[i] = start; s.dur[i] = dur; s.id[i] = id; s.count[i] = id < 0 ? 5 : 1;
    s.busy[i] = dur; s.color[i] = color; s.label[i] = id < 0 ? -1 : 0;
  });
  return s;
}

type Rect = { x: number; y: number; w: number; h: number; style: string; alpha: number };
/** The rects painted in legend colours (boxes), not background, headers or overlays. */
const boxRects = (rects: Rect[]): Rect[] =>
  rects.filter((r) => r.x >= GUTTER_W - 1 && r.y > AXIS_H && (r.style === "#111111" || r.style === "#222222"));

describe("timeline renderer", () => {
  it("draws each box at its time and depth row, in whole pixels, at least 1 px wide", () => {
    const f = fakeCanvas();
    const r = new TimelineRenderer(f.canvas);
    r.resize(GUTTER_W + 1000, 300, 1); // 1 px per ns
    r.setData(slices([[0, 100, 50, 1, 0], [1, 300.4, 0.2, 2, 1]]), 2, null);
    r.draw(scene());
    const boxes = boxRects(f.rects);
    expect(r.boxesDrawn).toBe(2);
    const y0 = AXIS_H + 20; // one group header above the lane
    expect(boxes).toContainEqual(expect.objectContaining({ x: GUTTER_W + 100, y: y0 + 1, w: 50, h: ROW_H - 2, style: "#111111" }));
    expect(boxes).toContainEqual(expect.objectContaining({ x: GUTTER_W + 300, y: y0 + ROW_H + 1, w: 1, style: "#222222" }));
  });

  it("never draws more than one box per pixel column of a row", () => {
    const n = 100_000;
    const rows: Array<[number, number, number, number, number]> = [];
    for (let i = 0; i < n; i++) rows.push([0, i / 100, 0.001, i, 0]); // 100 boxes per pixel
    const f = fakeCanvas();
    const r = new TimelineRenderer(f.canvas);
    r.resize(GUTTER_W + 1000, 300, 1);
    r.setData(slices(rows), 2, null);
    r.draw(scene());
    expect(r.boxesDrawn).toBe(1000);
  });

  it("skips boxes outside the view and dims everything but the highlighted ids", () => {
    const f = fakeCanvas();
    const r = new TimelineRenderer(f.canvas);
    r.resize(GUTTER_W + 1000, 300, 1);
    r.setData(slices([[0, 100, 50, 1, 0], [0, 400, 50, 2, 0], [0, 5000, 10, 3, 0]]), 2, new Set([2]));
    r.draw(scene());
    expect(r.boxesDrawn).toBe(2);
    const boxes = boxRects(f.rects);
    const lit = boxes.find((b) => b.x === GUTTER_W + 400) as Rect;
    const dim = boxes.find((b) => b.x === GUTTER_W + 100) as Rect;
    expect(lit.alpha).toBe(1);
    expect(dim.alpha).toBeLessThan(0.5);
  });

  it("merged boxes are translucent by busy fraction; labels only on wide single events", () => {
    const f = fakeCanvas();
    const r = new TimelineRenderer(f.canvas);
    r.resize(GUTTER_W + 1000, 300, 1);
    r.setData(slices([[0, 0, 200, 7, 0], [0, 300, 100, -1, 0], [1, 600, 3, 8, 0]]), 2, null);
    r.draw(scene());
    const merged = boxRects(f.rects).find((b) => b.x === GUTTER_W + 300) as Rect;
    expect(merged.alpha).toBeGreaterThan(0);
    expect(merged.alpha).toBeLessThan(1);
    expect(f.texts.filter((t) => t === "conv")).toHaveLength(1); // the 200 px box only
  });

  it("a collapsed group draws no boxes", () => {
    const f = fakeCanvas();
    const r = new TimelineRenderer(f.canvas);
    r.resize(GUTTER_W + 1000, 300, 1);
    r.setData(slices([[0, 100, 50, 1, 0]]), 2, null);
    r.draw(scene(undefined, { layout: computeLayout(tracks, new Set(["p"])) }));
    expect(r.boxesDrawn).toBe(0);
  });
});
