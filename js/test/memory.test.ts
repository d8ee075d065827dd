import { describe, expect, it } from "vitest";
import { decodeFrame, encodeFrame } from "../src/codec";
import { curvesFromFrame, formatValue, scaleTop, type SeriesInfo } from "../src/memory";

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

  it("scales memory together and each counter on its own", () => {
    expect(scaleTop(info("bytes", 10), 4096)).toBe(4096);
    expect(scaleTop(info("fraction", 0.3), 4096)).toBe(1);
    expect(scaleTop(info("count", 80), 4096)).toBe(80);
    expect(scaleTop(info("value", 0), 4096)).toBe(1);
  });

  it("formats values in their unit", () => {
    expect(formatValue(info("fraction", 1), 0.456)).toBe("45.6 %");
    expect(formatValue(info("fraction", 1), 1)).toBe("100 %");
    expect(formatValue(info("fraction", 1), NaN)).toBe("–");
    expect(formatValue(info("count", 9), 3)).toBe("3");
    expect(formatValue(info("value", 9), 59.94123)).toBe("59.94");
  });

  // the edge values, for a counter's plain numbers (decimal prefixes, 4 significant digits)
  it.each([
    [0, "0"], [1, "1"], [9.995, "9.995"], [9.9995, "10"], [10, "10"], [100, "100"], [400.4, "400.4"],
    [999.95, "1 k"], [1000, "1 k"], [999_999, "1 M"], [123_456, "123.5 k"], [1e9, "1 G"], [1e21, "1000 E"],
    [-400.4, "-400.4"], [-0.00001, "0"], [NaN, "–"], [Infinity, "–"], [-Infinity, "–"],
  ])("counter value %s → %s", (v, want) => {
    expect(formatValue(info("value", 9), v)).toBe(want);
    expect(formatValue(info("count", 9), v)).toBe(want);
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

  it("the legend cuts the common prefix, not the end that tells series apart", async () => {
    const { legendLabels } = await import("../src/memory");
    const names = ["GPU 1 · Tesla V100-SXM2-16GB / stream 7 queue", "GPU 1 · Tesla V100-SXM2-16GB / stream 13 queue",
      "GPU 1 · Tesla V100-SXM2-16GB utilisation"];
    const got = legendLabels(names);
    expect(new Set(got).size).toBe(3);
    expect(got).toEqual(["…stream 7 queue", "…stream 13 queue", "…utilisation"]);
    expect(got.every((l) => l.length <= 22)).toBe(true);
    // one series: as it is, the middle cut when long
    expect(legendLabels(["rank 0 · cuda:0 allocated"])).toEqual(["rank 0 · cu… allocated"]); // 11 + … + 10
    expect(legendLabels(["cpu"])).toEqual(["cpu"]);
    // short enough: as they are
    expect(legendLabels(["rank 0 · cpu", "rank 1 · cpu"])).toEqual(["rank 0 · cpu", "rank 1 · cpu"]);
  });
});
