import { describe, expect, it } from "vitest";
import { formatBytes, formatTime, niceStep, ticks, unitFor } from "../src/axis";

describe("axis", () => {
  it("nice steps are 1, 2 or 5 times a power of ten, at least the raw step", () => {
    expect(niceStep(0.7)).toBeCloseTo(1);
    expect(niceStep(1)).toBe(1);
    expect(niceStep(1.3)).toBe(2);
    expect(niceStep(2.01)).toBe(5);
    expect(niceStep(7)).toBe(10);
    expect(niceStep(1000)).toBe(1000);
    expect(niceStep(1001)).toBe(2000);
    expect(niceStep(0.03)).toBeCloseTo(0.05);
  });

  it("units switch at 1e3, 1e6 and 1e9 ns", () => {
    expect(unitFor(999)[1]).toBe("ns");
    expect(unitFor(1e3)[1]).toBe("µs");
    expect(unitFor(999_999)[1]).toBe("µs");
    expect(unitFor(1e6)[1]).toBe("ms");
    expect(unitFor(1e9)[1]).toBe("s");
  });

  it("ticks over 1000 ns at 100 px spacing on 1000 px are every 100 ns", () => {
    const t = ticks(0, 1000, 1000, "ns", 100);
    expect(t.step).toBe(100);
    expect(t.ticks.map((x) => x.t)).toEqual([0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]);
    expect(t.ticks[1].label).toBe("100 ns");
  });

  it("labels use the unit of the step", () => {
    const us = ticks(0, 20_000, 1000, "ns", 100); // raw 2000 → 2 µs
    expect(us.step).toBe(2000);
    expect(us.ticks.slice(0, 3).map((x) => x.label)).toEqual(["0 µs", "2 µs", "4 µs"]);
    const ms = ticks(0, 5e6, 1000, "ns", 100); // raw 5e5 → 500 µs
    expect(ms.unit).toBe("µs");
    expect(ms.ticks[1].label).toBe("500 µs");
    const s = ticks(0, 3e10, 1000, "ns", 100); // raw 3e9 → 5 s
    expect(s.step).toBe(5e9);
    expect(s.ticks[1].label).toBe("5 s");
    // 1 µs window 1 ms in: absolute labels would need 5 digits ("1000.1 µs"): offsets instead
    const frac = ticks(1e6, 1.001e6, 1000, "ns", 100);
    expect(frac.step).toBe(100);
    expect(frac.origin).toBe(1e6);
    expect(frac.originLabel).toBe("1.0000 ms");
    expect(frac.ticks.slice(0, 2).map((x) => x.label)).toEqual(["+0.0 µs", "+0.1 µs"]);
    const near = ticks(0, 1000, 1000, "ns", 100); // near the start the step decides: ns
    expect(near.unit).toBe("ns");
    const frac2 = ticks(0, 2.5e6, 1000, "ns", 100); // raw 250 µs → 500 µs
    expect(frac2.step).toBe(5e5);
    // 1.5 ms window one second in: step 200 µs, offsets from the second
    const dec = ticks(1e9, 1.0015e9, 1000, "ns", 100); // raw 150 µs → 200 µs
    expect(dec.step).toBe(2e5);
    expect(dec.originLabel).toBe("1.0000 s");
    expect(dec.ticks.slice(0, 3).map((x) => x.label)).toEqual(["+0.0 ms", "+0.2 ms", "+0.4 ms"]);
    // the offset origin is the last tick at or before the window start: the grid moves with a pan
    const panned = ticks(1e9 + 3e4, 1.0015e9 + 3e4, 1000, "ns", 100);
    expect(panned.origin).toBe(1e9);
    expect(panned.ticks[0].t).toBe(1e9 + 2e5);
    expect(panned.ticks[0].label).toBe("+0.2 ms");
  });

  it("keeps decimals when the step is a fraction of the unit", () => {
    const t = ticks(0, 2e9, 1000, "ns", 20); // raw 4e7 → 5e7 = 50 ms
    expect(t.unit).toBe("ms");
    const s = ticks(0, 5e10, 1000, "ns", 10); // raw 5e8 = 500 ms
    expect(s.ticks[1].label).toBe("0.5 s"); // "50000 ms" would need 5 digits
    const tenth = ticks(0, 1.5e9, 1000, "ns", 100); // raw 1.5e8 → 2e8 = 200 ms
    expect(tenth.ticks[5].label).toBe("1000 ms");
  });

  it("step traces get integer steps and plain labels", () => {
    const t = ticks(0, 10, 1000, "step", 100);
    expect(t.step).toBe(1);
    expect(t.unit).toBe("step");
    expect(t.ticks.map((x) => x.label)).toEqual(["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]);
    const zoomed = ticks(3, 4, 1000, "step", 100); // would be 0.1 steps: never below 1
    expect(zoomed.step).toBe(1);
    const wide = ticks(0, 10_000, 1000, "step", 100);
    expect(wide.step).toBe(1000);
    expect(wide.ticks[2].label).toBe("2000");
  });

  it("formats durations and bytes", () => {
    expect(formatTime(1500)).toBe("1.5 µs");
    expect(formatTime(2e6)).toBe("2 ms");
    expect(formatTime(999)).toBe("999 ns");
    expect(formatTime(3, "step")).toBe("3 steps");
    expect(formatBytes(512)).toBe("512 B");
    expect(formatBytes(1536)).toBe("1.5 KiB");
    expect(formatBytes(1.5 * 1024 ** 3)).toBe("1.5 GiB");
    expect(formatBytes(300 * 1024 ** 2)).toBe("300 MiB");
  });
});
