// Tooltip lines of a kernel's / collective's numbers and the colour-by choices.
import { describe, expect, it } from "vitest";
import { metricLines } from "../src/metrics";
import { eventLines } from "../src/tooltip";

describe("metric tooltip lines", () => {
  it("formats a kernel's numbers, n/a where unknown", () => {
    expect(metricLines({ sm_efficiency: 7.4074, occupancy: null, tensor_core: false })).toEqual([
      "SM efficiency 7.41 %", "occupancy n/a", "tensor core: no",
    ]);
  });
  it("formats a collective's bytes and bandwidths", () => {
    expect(metricLines({ bytes: 4194304, algbw: 41.94304, busbw: 62.91456 })).toEqual([
      "bytes 4 MiB", "algbw 41.94 GB/s", "busbw 62.91 GB/s",
    ]);
  });
  it("adds nothing for an event without metrics, and follows the times in eventLines", () => {
    expect(metricLines(undefined)).toEqual([]);
    const lines = eventLines({ id: 1, name: "k", dur: 1000, metrics: { sm_efficiency: 50 } }, "ns");
    expect(lines.indexOf("SM efficiency 50.00 %")).toBe(lines.findIndex((l) => l.startsWith("duration")) + 1);
  });
});
