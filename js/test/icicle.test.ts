import { describe, expect, it } from "vitest";
import { decodeFrame, encodeFrame } from "../src/codec";
import { nodeAt, nodePath, nodeText, parseIcicle, ICICLE_ROW_H } from "../src/icicle";

// step (100 ns of GPU) with children fwd (60) and bwd (30), and (unattributed) 50 beside it,
// laid out as jupyter_profview/widget/icicle.py does: roots largest first, children inside.
const frame = decodeFrame(encodeFrame({
  node: new Uint32Array([0, 1, 2, 3]), parent: new Int32Array([-1, 0, 0, -1]),
  depth: new Uint16Array([0, 1, 1, 0]), x0: new Float64Array([0, 0, 60, 100]),
  width: new Float64Array([100, 60, 30, 50]), gpu: new Float64Array([100, 60, 30, 50]),
  cpu: new Float64Array([2000, 900, 800, 0]), count: new Uint32Array([1, 1, 1, 0]),
  kernels: new Uint32Array([9, 5, 3, 4]), label: new Int32Array([0, 1, 2, 3]),
}, { names: ["step", "fwd", "bwd", "(unattributed)"], by: "annotation", measure: "gpu", total: 150, window: null }));

describe("_icicle frame", () => {
  const data = parseIcicle(frame)!;
  it("parses nodes with their names and the measure", () => {
    expect(data.nodes.map((n) => [n.name, n.depth, n.x0, n.width])).toEqual([
      ["step", 0, 0, 100], ["fwd", 1, 0, 60], ["bwd", 1, 60, 30], ["(unattributed)", 0, 100, 50]]);
    expect(data.total).toBe(150);
  });
  it("hit-tests by depth row and time share", () => {
    expect(nodeAt(data, 150, 10, 2)).toBe(0);
    expect(nodeAt(data, 150, 10, ICICLE_ROW_H + 2)).toBe(1);
    expect(nodeAt(data, 150, 65, ICICLE_ROW_H + 2)).toBe(2);
    expect(nodeAt(data, 150, 95, ICICLE_ROW_H + 2)).toBe(-1); // the step's self time: no child
    expect(nodeAt(data, 150, 120, 2)).toBe(3);
  });
  it("names a node by its path and its numbers by the shared rules", () => {
    expect(nodePath(data, 2)).toBe("step / bwd");
    expect(nodeText(data, 2)).toBe("step / bwd\nGPU 30 ns · CPU 800 ns · 1 × · 3 kernels · 20.0 % of GPU time");
  });
});
