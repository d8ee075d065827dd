import { describe, expect, it } from "vitest";
import { decodeFrame, emptyFrame, encodeFrame } from "../src/codec";
import { shareText } from "../src/axis";
import { parseCriticalPath, segmentOrder, type Segment } from "../src/critical";

// A path of four edges as jupyter_profview/widget/critical_path.py encodes it: op start -> launch
// start (operator, 10 ns, cpu), launch -> kernel (launch, 20 ns), kernel start -> end (operator,
// 100 ns, kernel), kernel end -> sync call end (sync, 0 ns; the call's lane is not shown: -1).
const frame = decodeFrame(encodeFrame({
  order: new Uint32Array([0, 1, 2, 3]),
  type: new Uint8Array([0, 1, 0, 3]),
  bound: new Uint8Array([0, 3, 1, 5]),
  event: new Int32Array([5, -1, 7, -1]),
  src: new Int32Array([5, 6, 7, 7]), dst: new Int32Array([6, 7, 7, 9]),
  src_time: new Float64Array([0, 10, 30, 130]), dst_time: new Float64Array([10, 30, 130, 140]),
  src_track: new Int32Array([0, 0, 2, 2]), dst_track: new Int32Array([0, 2, 2, -1]),
  weight: new Float64Array([10, 20, 100, 0]),
  label: new Int32Array([0, -1, 1, -1]),
}, {
  length: 130, events: 4, annotation: "ProfilerStep", instance: 1, rank: null,
  steps: ["ProfilerStep#1", "ProfilerStep#2"], names: ["aten::mm", "gemm"],
  edge_types: ["operator", "launch", "kernel", "sync", "dependency"],
  bound_types: ["cpu", "kernel", "communication", "launch", "kernel_gap", "sync"],
  breakdown: [{ type: "cpu", time: 10, share: 10 / 1.3 }, { type: "launch", time: 20, share: 20 / 1.3 }],
}));

describe("_critical_path frame", () => {
  it("segments are the edges with time on the path, named by their event", () => {
    const p = parseCriticalPath(frame)!;
    expect(p.length).toBe(130);
    expect(p.segments.map((s) => [s.type, s.bound, s.name, s.weight])).toEqual([
      ["operator", "cpu", "aten::mm", 10], ["launch", "launch", "", 20], ["operator", "kernel", "gemm", 100]]);
    expect(p.steps).toEqual(["ProfilerStep#1", "ProfilerStep#2"]);
    expect(p.instance).toBe(1);
  });

  it("arrows are the launch, gap and sync edges whose two lanes are shown", () => {
    const p = parseCriticalPath(frame)!;
    expect(p.arrows).toEqual([{ source: 6, target: 7, source_track: 0, target_track: 2, source_time: 10, target_time: 30 }]);
  });

  it("an empty trait is no path", () => {
    expect(parseCriticalPath(emptyFrame())).toBeNull();
  });

  it("shares print with one decimal", () => {
    expect(shareText(93.648)).toBe("93.6 %");
    expect(shareText(0)).toBe("0.0 %");
    expect(shareText(100)).toBe("100.0 %");
  });
});

describe("segments table order", () => {
  const seg = (order: number, weight: number): Segment => ({
    order, type: "operator", bound: "cpu", event: order, name: `e${order}`, start: order, end: order + 1, weight,
  });
  const segments = [seg(0, 5), seg(1, 40), seg(2, 5), seg(3, 1)];
  it("lists the path in order, or the longest segments first with ties in path order", () => {
    expect(segmentOrder(segments, "order")).toEqual([0, 1, 2, 3]);
    expect(segmentOrder(segments, "time")).toEqual([1, 0, 2, 3]);
  });
});
