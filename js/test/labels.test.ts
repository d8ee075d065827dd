import { describe, expect, it } from "vitest";
import { fitText } from "../src/labels";

describe("box labels cut at their end", () => {
  it("leaves text that fits, and cuts the end", () => {
    expect(fitText("stream 7", 20, 1)).toBe("stream 7");
    expect(fitText("pyper:trainer:0:0 (4037)", 10, 1)).toBe("pyper:tra…");
    expect(fitText("abc", 1, 1)).toBe("…");
    expect(fitText("abc", 0, 1)).toBe("");
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
