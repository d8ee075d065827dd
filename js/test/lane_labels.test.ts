import { describe, expect, it } from "vitest";
import { cutEnd, fitLane, labelColumnWidth, LABEL_COLUMN_CAP, LABEL_COLUMN_MIN, overlapNote } from "../src/lane_labels";

// a monospace measure: 6 px a character
const mono = (s: string): number => s.length * 6;
const chars = (n: number): number => n * 6;

describe("lane names keep their informative end (issue 36 item 6)", () => {
  it("a name that fits is left whole", () => {
    expect(fitLane("stream 7", chars(8), mono)).toBe("stream 7");
  });

  it("a thread name with a trailing id keeps the name, not the id", () => {
    const name = "tf_XLAPjRtCpuClient/7435379619830985549";
    const out = fitLane(name, chars(26), mono);
    expect(out).toBe("tf_XLAPjRtCpuClient/…85549");
    expect(out.startsWith("tf_XLAPjRtCpuClient")).toBe(true);
    // two threads of one name stay apart by their id's end
    expect(fitLane("tf_XLAPjRtCpuClient/-5094019982205962677", chars(26), mono)).toBe("tf_XLAPjRtCpuClient/…62677");
    // no room for 3 digits: the id goes, the name stays (cut at its end only when it must)
    expect(fitLane(name, chars(20), mono)).toBe("tf_XLAPjRtCpuClient");
    expect(fitLane(name, chars(12), mono)).toBe("tf_XLAPjRtC…");
  });

  it("Kineto's thread drops the word 'thread' before its name or id", () => {
    expect(fitLane("thread 23695 (python3.8)", chars(18), mono)).toBe("23695 (python3.8)");
    expect(fitLane("thread 4037 (python3.8)", chars(18), mono)).toBe("4037 (python3.8)");
    // narrower: the name, then the id's end; the name before the id
    expect(fitLane("thread 23695 (python3.8)", chars(14), mono)).toBe("python3.8 …695");
    expect(fitLane("thread 23695 (python3.8)", chars(12), mono)).toBe("python3.8");
  });

  it("whole words are dropped from the middle, never a cut inside a word when one between words fits", () => {
    expect(fitLane("Trace PyTorch Profiler", chars(17), mono)).toBe("…PyTorch Profiler");
    const out = fitLane("Trace PyTorch Profiler", chars(16), mono);
    expect(out).toBe("Trace … Profiler");
    expect(out).not.toContain("P…");
    // the end first: the device and the thread, then what else fits
    expect(fitLane("/job:localhost/replica:0/task:0/device:CPU:0 Compute", chars(34), mono))
      .toBe("/…task:0/device:CPU:0 Compute");
    expect(fitLane("/job:localhost/replica:0/task:0/device:CPU:0 Compute", chars(24), mono))
      .toBe("/…device:CPU:0 Compute");
  });

  it("every result fits its width, whatever the width", () => {
    const names = ["tf_XLAPjRtCpuClient/7435379619830985549", "thread 23695 (python3.8)", "Trace PyTorch Profiler",
      "GPU 0 · NVIDIA A100-SXM4-80GB", "python [overlap 1]", "__cupti_profiler__", "(no thread)"];
    for (const name of names) {
      for (let w = 0; w <= chars(45); w += 3) {
        const out = fitLane(name, w, mono);
        expect(mono(out)).toBeLessThanOrEqual(w);
        if (w >= chars(2)) expect(out.length).toBeGreaterThan(0);
      }
    }
  });

  it("a single long word is cut at its end", () => {
    expect(cutEnd("__cupti_profiler__", chars(13), mono)).toBe("__cupti_prof…");
    expect(cutEnd("ab", 0, mono)).toBe("");
  });
});

describe("the label column fits its labels up to a cap", () => {
  it("is as wide as the widest name at its indent, within [min, cap]", () => {
    expect(labelColumnWidth([{ name: "x", indent: 6 }], mono)).toBe(LABEL_COLUMN_MIN);
    const long = "tf_data_iterator_resource/7435379619830985549"; // 45 chars = 270 px
    expect(labelColumnWidth([{ name: long, indent: 6 }, { name: "python", indent: 6 }], mono))
      .toBe(8 + 6 + 270 + 8);
    expect(labelColumnWidth([{ name: long + long, indent: 6 }], mono)).toBe(LABEL_COLUMN_CAP);
    expect(labelColumnWidth([{ name: long, indent: 6 }], mono, 200)).toBe(200);
  });
});

describe("overlap lanes explain themselves", () => {
  it("says what an overlap lane is", () => {
    expect(overlapNote("thread 9 (python) [overlap 2]")).toMatch(/^overlap lane 2: .*partly overlap.*extra lane/);
    expect(overlapNote("thread 9 (python)")).toBeNull();
  });
});
