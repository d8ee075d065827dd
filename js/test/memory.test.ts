import { describe, expect, it } from "vitest";
import { decodeFrame, encodeFrame } from "../src/codec";
import { curvesFromFrame, formatValue, type SeriesInfo } from "../src/memory";
import { axisOf, fitMiddle, layoutTracks, seriesLabel, colorOf, dashOf, SERIES_COLORS } from "../src/counter_tracks";

const info = (unit: string, max: number): SeriesInfo =>
  ({ device: "d", kind: "k", peak_bytes: NaN, peak_time: NaN, unit, max });

describe("counters panel series", () => {
  it("reads the unit and max of each series, memory by default", () => {
    const frame = decodeFrame(encodeFrame(
      { series: new Uint16Array([0, 1, 1]), time: new Float64Array([5, 1, 2]), bytes: new Float64Array([9, 0.5, 0.25]) },
      { series: [{ device: "cuda:0", kind: "measured", peak_bytes: 9, peak_time: 5 },
        { device: "GPU 0 utilisation", kind: "utilisation", unit: "fraction", peak_bytes: null, max: 1 }],
      t0: 0, t1: 10 }));
    const c = curvesFromFrame(frame);
    expect(c.series.map((s) => s.unit)).toEqual(["bytes", "fraction"]);
    expect(c.series[0].max).toBe(9);
    expect(Number.isNaN(c.series[1].peak_bytes)).toBe(true); // null peak: no peak marker
    expect(Array.from(c.curves[1].bytes)).toEqual([0.5, 0.25]);
  });

  it("never puts two units on one axis: memory, %, queued launches, each counter its own", () => {
    const s = (unit: string, device: string, max: number, axis?: string): SeriesInfo =>
      ({ device, kind: "k", peak_bytes: max, peak_time: 1, unit, max, ...(axis ? { axis } : {}) });
    const series = [s("bytes", "cuda:0", 4096), s("bytes", "cpu", 100), s("fraction", "GPU 0 utilisation", 1),
      s("count", "GPU 0 / stream 7 queue", 8), s("count", "GPU 0 / stream 13 queue", 3),
      s("value", "temp: a", 60, "temp"), s("value", "temp: b", 70, "temp"), s("value", "power", 250, "power")];
    const tracks = layoutTracks(series, () => true);
    expect(tracks.map((t) => t.key)).toEqual(["bytes", "fraction", "count", "value:temp", "value:power"]);
    expect(tracks.map((t) => t.series)).toEqual([[0, 1], [2], [3, 4], [5, 6], [7]]);
    // each track's top is the largest of its own series, never another unit's
    expect(tracks.map((t) => t.scale)).toEqual([4096, 1, 8, 70, 250]);
    for (const t of tracks) expect(new Set(t.series.map((i) => series[i].unit)).size).toBe(1);
    // stacked without overlap, each tall enough for its legend
    for (let i = 1; i < tracks.length; i++) expect(tracks[i].top).toBe(tracks[i - 1].top + tracks[i - 1].h);
    // a hidden series leaves its track; a track with none left goes
    expect(layoutTracks(series, (i) => i !== 7).map((t) => t.key)).not.toContain("value:power");
    // the memory curve's own largest sample raises the memory scale
    expect(layoutTracks(series, () => true, (i) => (i === 1 ? 9000 : NaN))[0].scale).toBe(9000);
    expect(axisOf(series[3]).title).toBe("queued launches");
  });

  it("labels a series by what its track's title does not say, cut in the middle only", () => {
    const q: SeriesInfo = { device: "GPU 1 · Tesla V100-SXM2-16GB / stream 13 queue", kind: "queue",
      peak_bytes: 8, peak_time: 0, unit: "count", max: 8 };
    expect(seriesLabel(q)).toBe("GPU 1 · Tesla V100-SXM2-16GB / stream 13");
    expect(seriesLabel({ ...q, device: "temp: gpu0", unit: "value", axis: "temp" })).toBe("gpu0");
    const cut = fitMiddle(seriesLabel(q), 22);
    expect(cut.length).toBe(22);
    expect(cut.startsWith("GPU 1")).toBe(true);
    expect(cut.endsWith("stream 13")).toBe(true);
    expect(fitMiddle("cpu", 22)).toBe("cpu");
  });

  it("gives 12 distinct colours, then dashes, so that 36 series stay apart", () => {
    expect(new Set(SERIES_COLORS).size).toBe(12);
    const looks = new Set(Array.from({ length: 36 }, (_, i) => `${colorOf(i)} ${dashOf(i, false).join(",")}`));
    expect(looks.size).toBe(36);
  });

  it("formats values in their unit", () => {
    expect(formatValue(info("fraction", 1), 0.456)).toBe("45.6 %");
    expect(formatValue(info("fraction", 1), 1)).toBe("100 %");
    expect(formatValue(info("fraction", 1), NaN)).toBe("–");
    expect(formatValue(info("count", 9), 3)).toBe("3 queued");
    expect(formatValue(info("value", 9), 59.94123)).toBe("59.94");
  });

  // the edge values, for a counter's plain numbers (decimal prefixes, 4 significant digits)
  it.each([
    [0, "0"], [1, "1"], [9.995, "9.995"], [9.9995, "10"], [10, "10"], [100, "100"], [400.4, "400.4"],
    [999.95, "1 k"], [1000, "1 k"], [999_999, "1 M"], [123_456, "123.5 k"], [1e9, "1 G"], [1e21, "1000 E"],
    [-400.4, "-400.4"], [-0.00001, "0"], [NaN, "–"], [Infinity, "–"], [-Infinity, "–"],
  ])("counter value %s → %s", (v, want) => {
    expect(formatValue(info("value", 9), v)).toBe(want);
    expect(formatValue(info("count", 9), v)).toBe(Number.isFinite(v) ? `${want} queued` : want);
  });
});

describe("peak labels and the legend (several ranks)", () => {
  it("labels at the same place stack without overlapping", async () => {
    const { placeLabel } = await import("../src/memory");
    const placed: Array<[number, number, number, number]> = [];
    const ys = [0, 1, 2, 3].map(() => placeLabel(placed, 100, 10, 80, 12, 0, 100));
    expect(ys).toEqual([10, 22, 34, 46]);
    for (let i = 0; i < placed.length; i++) {
      for (let j = i + 1; j < placed.length; j++) {
        const [a, b] = [placed[i], placed[j]];
        expect(a[3] <= b[1] || b[3] <= a[1] || a[2] <= b[0] || b[2] <= a[0]).toBe(true);
      }
    }
    // no room left below or above: null
    const tight: Array<[number, number, number, number]> = [];
    expect(placeLabel(tight, 0, 0, 10, 12, 0, 20)).toBe(0);
    expect(placeLabel(tight, 0, 0, 10, 12, 0, 20)).toBeNull();
    // elsewhere on the x axis: its own place
    expect(placeLabel(placed, 300, 10, 80, 12, 0, 100)).toBe(10);
  });
});

describe("a highlight scrolls its first lane into view", () => {
  it("scrolls only when the lane is outside the visible part, to a lane's top with a margin", async () => {
    const { scrollFor } = await import("../src/evidence");
    const layout = {
      groups: [], trackY: new Float64Array([20, 200, 600, -1]), trackDepths: new Uint16Array([1, 1, 1, 1]),
      home: new Float64Array([-1, -1, -1, 580]), height: 2000,
    };
    // 300 px tall: 22 px of axis, lanes 0..278 visible at scrollTop 0
    expect(scrollFor(layout, 0, 0, 300)).toBeNull();
    expect(scrollFor(layout, 1, 0, 300)).toBeNull();
    expect(scrollFor(layout, 2, 0, 300)).toBe(600 - 32);
    // a lane of a collapsed group: its group's header
    expect(scrollFor(layout, 3, 0, 300)).toBe(580 - 32);
    // above the visible part
    expect(scrollFor(layout, 0, 400, 300)).toBe(0);
    // never past the end of the lanes
    expect(scrollFor({ ...layout, height: 650 }, 2, 0, 300)).toBe(650 - 278);
    expect(scrollFor(layout, 9, 0, 300)).toBeNull();
  });
});
