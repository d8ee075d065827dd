import { describe, expect, it } from "vitest";
import { stack, type AllocTimeline } from "../src/alloc_timeline";

const band = (start: number, end: number, size: number, row: number) =>
  ({ start, end, size, addr: 0, open: false, row, stack: 0 });

describe("stack", () => {
  // rest: 10 from t=0, 30 from t=5; band A [1, 8) 100 B, band B [3, 6) 50 B (allocated later: on top)
  const d: AllocTimeline = {
    device: "cuda:0", devices: ["cuda:0"], window: [0, 10], extent: [0, 10], count: 2, complete: true,
    bands: [band(1, 8, 100, 0), band(3, 6, 50, 1)], restTime: [0, 5], restBytes: [10, 30], frames: [], stacks: [],
  };
  it("puts each band on the rest and the bands allocated before it", () => {
    const s = stack(d, 0, 10);
    expect(s.restT0).toEqual([0, 1, 3, 5, 6, 8]);
    expect(s.rest).toEqual([10, 10, 10, 30, 30, 30]);
    expect(s.pieces[0]).toEqual({ t0: [1, 3, 5, 6], t1: [3, 5, 6, 8], bottom: [10, 10, 30, 30] });
    expect(s.pieces[1]).toEqual({ t0: [3, 5], t1: [5, 6], bottom: [110, 130] });
  });
  it("its top edge is the total: the peak is rest + both bands at [5, 6)", () => {
    const s = stack(d, 0, 10);
    expect([s.peak, s.peakTime]).toEqual([180, 5]);
  });
  it("a window keeps the level of the rest before it", () => {
    const s = stack(d, 5.5, 7);
    expect(s.rest).toEqual([30, 30]);
    expect(s.peak).toBe(180);
  });
});
