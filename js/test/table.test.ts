// The table's launch rows (`_table` with kind "launches", docs/widget-protocol.md).
import { describe, expect, it } from "vitest";
import { encodeFrame } from "../src/codec";
import { columnsOf, launchRowsFromFrame, rowsFromFrame } from "../src/table";

const launchFrame = (): DataView => {
  const bytes = encodeFrame({
    kernel: new Int32Array([7, 9]), launch: new Int32Array([6, -1]), cpu_op: new Int32Array([2, -1]),
    name: new Int32Array([1, 0]), launch_name: new Int32Array([0, -1]), cpu_op_name: new Int32Array([0, -1]),
    start: new Float64Array([1000, 2000]), dur: new Float64Array([5, 6]), delay: new Float64Array([1500, NaN]),
    track: new Uint32Array([3, 3]),
  }, { names: ["gemm", "relu_kernel"], launch_names: ["cudaLaunchKernel"], cpu_op_names: ["aten::mm"] });
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
};

describe("launch rows", () => {
  it("decode kernel, launch call, cpu_op and delay; -1 / NaN for what is unknown", () => {
    const rows = launchRowsFromFrame(launchFrame());
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({ id: 7, name: "relu_kernel", launch: 6, launchName: "cudaLaunchKernel",
      cpuOp: 2, cpuOpName: "aten::mm", start: 1000, dur: 5, delay: 1500, track: 3 });
    expect(rows[1]).toMatchObject({ id: 9, name: "gemm", launch: -1, launchName: "", cpuOpName: "" });
    expect(Number.isNaN(rows[1].delay)).toBe(true);
  });

  it("show the delay with the shared number format, '–' when unknown", () => {
    const rows = launchRowsFromFrame(launchFrame());
    const cols = columnsOf("launches");
    expect(cols.map((c) => c.key)).toEqual(["name", "launch", "cpu_op", "start", "dur", "delay"]);
    const delay = cols[cols.length - 1];
    expect(delay.text(rows[0], "ns")).toBe("1.5 µs");
    expect(delay.text(rows[1], "ns")).toBe("–");
    expect(cols[1].text(rows[0], "ns")).toBe("cudaLaunchKernel");
  });

  it("event rows keep their columns", () => {
    expect(columnsOf("events").map((c) => c.key)).toEqual(["name", "category", "start", "dur", "self"]);
    expect(rowsFromFrame(undefined)).toEqual([]);
  });
});
