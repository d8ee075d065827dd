import { describe, expect, it } from "vitest";
import { findingCells, parseAdvice } from "../src/advice";

describe("_advice trait", () => {
  it("reads the findings and formats each line with the shared number rules", () => {
    const data = parseAdvice({
      window: [0, 46_000_000],
      findings: [{ rule: "host_sync", severity: "high", time: 5_800_000, share: 12.608695652, count: 2,
        device: "", message: "m", fix: "f", rank: null },
      { rule: "gpu_idle", severity: "low", time: 1_000, share: 1.04, count: 1, device: "GPU 0", message: "",
        fix: "", rank: 3 }],
    });
    expect(data?.findings.length).toBe(2);
    expect(findingCells(data!.findings[0])).toEqual(["high", "host_sync", "5.8 ms", "12.6 %", "2 events", ""]);
    expect(findingCells(data!.findings[1])).toEqual(["low", "gpu_idle", "1 µs", "1.0 %", "1 event", "rank 3 · GPU 0"]);
  });
  it("is null when no advice is shown", () => {
    expect(parseAdvice({})).toBeNull();
    expect(parseAdvice(undefined)).toBeNull();
  });
});
