import { describe, expect, it } from "vitest";
import { findingCells, parseAdvice, parseFinding } from "../src/advice";
import { decodeFrame, encodeFrame } from "../src/codec";
import { IDLE_SHADE_ALPHA, IDLE_SHADE_COLOR } from "../src/palette_gen";

describe("_advice trait", () => {
  it("reads the findings and formats each line with the shared number rules", () => {
    const data = parseAdvice({
      window: [0, 46_000_000],
      findings: [{ rule: "host_sync", severity: "high", time: 5_800_000, share: 12.608695652, count: 2,
        device: "", message: "m", fix: "f", rank: null },
      { rule: "gpu_idle", severity: "low", time: 1_000, share: 1.04, count: 1, device: "GPU 0", message: "",
        fix: "", rank: 3, intervals: 932 },
      { rule: "gpu_idle", severity: "low", time: 1_000, share: 1.04, count: 0, device: "GPU 1", message: "",
        fix: "", rank: null, intervals: 1 }],
    });
    expect(data?.findings.length).toBe(3);
    expect(findingCells(data!.findings[0])).toEqual(["high", "host_sync", "5.8 ms", "12.6 %", "2 events", ""]);
    expect(findingCells(data!.findings[1])).toEqual(["low", "gpu_idle", "1 µs", "1.0 %",
      "932 idle intervals · 1 event", "rank 3 · GPU 0"]);
    // a gpu_idle finding without events says what its evidence is, never "0 events"
    expect(findingCells(data!.findings[2])[4]).toBe("1 idle interval");
  });
  it("is null when no advice is shown", () => {
    expect(parseAdvice({})).toBeNull();
    expect(parseAdvice(undefined)).toBeNull();
  });
});

describe("_finding frame", () => {
  it("says which finding is picked and shades a gpu_idle finding's intervals on its tracks", () => {
    const bytes = encodeFrame({ start: new Float64Array([10, 50]), end: new Float64Array([20, 70]) },
      { finding: 2, rule: "gpu_idle", token: 1, device: "GPU 0", tracks: [3, 4], intervals: 2, idle: 30 });
    const p = parseFinding(decodeFrame(bytes));
    expect(p.finding).toBe(2);
    expect(p.idle).toBe(30);
    expect(p.shading?.tracks).toEqual([3, 4]);
    expect(Array.from(p.shading!.start)).toEqual([10, 50]);
    expect(Array.from(p.shading!.end)).toEqual([20, 70]);
    expect(p.shading?.color).toBe(IDLE_SHADE_COLOR);
    expect(p.shading?.alpha).toBe(IDLE_SHADE_ALPHA);
  });
  it("has no shading for another rule, and no pick when empty", () => {
    const other = encodeFrame({ start: new Float64Array(0), end: new Float64Array(0) },
      { finding: 1, rule: "exposed_communication", token: 2 });
    expect(parseFinding(decodeFrame(other))).toMatchObject({ finding: 1, shading: null });
    expect(parseFinding(decodeFrame(null)).finding).toBe(-1);
  });
});
