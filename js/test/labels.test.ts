import { describe, expect, it } from "vitest";
import { fitText } from "../src/labels";

describe("lane labels cut to the label column", () => {
  it("keeps both ends of a long path", () => {
    const t = fitText("/job:localhost/replica:0/task:0/device:GPU:0 stream 7", 20, 1, true);
    expect(t).toHaveLength(20);
    expect(t).toBe("/job:lo…U:0 stream 7");
  });

  it("cuts a trailing (note) first, so threads stay apart", () => {
    const a = fitText("thread 23695 (python3.8)", 19, 1, true);
    const b = fitText("thread 4037 (python3.8)", 19, 1, true);
    expect(a).toBe("thread 23695 (pyt…)");
    expect(b).toBe("thread 4037 (pyth…)");
    expect(a).not.toBe(b);
  });

  it("falls back to both ends when even the part before the note does not fit", () => {
    expect(fitText("a very long thread name (python3.8)", 12, 1, true)).toBe("a ve…hon3.8)");
  });

  it("leaves text that fits, and cuts the end outside lanes", () => {
    expect(fitText("stream 7", 20, 1, true)).toBe("stream 7");
    expect(fitText("pyper:trainer:0:0 (4037)", 10, 1)).toBe("pyper:tra…");
  });
});

describe("box labels keep the informative end", () => {
  it("a path-like name keeps its last component, others are cut at the end", async () => {
    const { boxLabel } = await import("../src/labels");
    const cw = 6;
    expect(boxLabel("tower_0/gradients/conv2d/Conv2D", 1000, cw)).toBe("tower_0/gradients/conv2d/Conv2D");
    expect(boxLabel("tower_0/gradients/conv2d/Conv2D", 10 * cw, cw)).toBe("…/Conv2D");
    expect(boxLabel("tower_0/gradients/conv2d/Conv2D", 6 * cw, cw)).toBe("…/Con…");
    // the shared prefix alone would say nothing: two ops of a tower differ
    expect(boxLabel("tower_0/a/MatMul", 9 * cw, cw)).not.toBe(boxLabel("tower_0/a/Relu", 9 * cw, cw));
    expect(boxLabel("aten::linear_backward", 10 * cw, cw)).toBe("aten::lin…");
    expect(boxLabel("a/", 1 * cw, cw)).toBe("…");
  });
});
