// The number formatters against the fixture shared with pytest (tests/test_format_numbers.py).
import { describe, expect, it } from "vitest";
import { formatBytes, formatTime, shareText, ticks, toFixedHalfUp } from "../src/axis";
import { tflopsText } from "../src/table";
import shared from "../../tests/shared_fixtures/format_numbers.json";

interface TickCase { t0: number; t1: number; width: number; spacing: number; step: number; originLabel: string; labels: string[] }
interface Fixture {
  duration_ns: Array<[number | string, string]>;
  duration_step: Array<[number | string, string]>;
  bytes: Array<[number | string, string]>;
  share: Array<[number, string]>;
  tflops: Array<[number | string, string]>;
  ticks: TickCase[];
}

const fixture = shared as unknown as Fixture;
const num = (v: number | string): number => (typeof v === "number" ? v : Number(v)); // "NaN", "Infinity"

describe("number formatters (shared fixture)", () => {
  it.each(fixture.duration_ns)("duration %s ns → %s", (v, want) => {
    expect(formatTime(num(v), "ns")).toBe(want);
  });
  it.each(fixture.duration_step)("duration %s steps → %s", (v, want) => {
    expect(formatTime(num(v), "step")).toBe(want);
  });
  it.each(fixture.bytes)("%s bytes → %s", (v, want) => {
    expect(formatBytes(num(v))).toBe(want);
  });
  it.each(fixture.tflops)("tflops %s → %s", (v, want) => {
    expect(tflopsText(num(v))).toBe(want);
  });
  it.each(fixture.share)("share %s → %s", (v, want) => {
    expect(shareText(v)).toBe(want);
  });
  it.each(fixture.ticks)("axis [$t0, $t1] → $originLabel $labels", (c) => {
    const t = ticks(c.t0, c.t1, c.width, "ns", c.spacing);
    expect(t.step).toBe(c.step);
    expect(t.originLabel).toBe(c.originLabel);
    expect(t.origin === null).toBe(c.originLabel === "");
    expect(t.ticks.map((x) => x.label)).toEqual(c.labels);
  });

  it("rounds ties of the decimal text away from zero, where toFixed rounds the binary value", () => {
    expect((1.005).toFixed(2)).toBe("1.00"); // the double is 1.00499999999999989...
    expect(toFixedHalfUp(1.005, 2)).toBe("1.01");
    expect(toFixedHalfUp(-2.5, 0)).toBe("-3");
    expect(toFixedHalfUp(-0.0004, 3)).toBe("0.000");
    expect(toFixedHalfUp(1e-7, 9)).toBe("0.000000100");
    expect(toFixedHalfUp(123456789012, 0)).toBe("123456789012");
  });
});
