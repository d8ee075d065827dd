import { describe, expect, it } from "vitest";
import { isolated, plain } from "../src/bidi";
import { liveRowText } from "../src/live";
import { eventLines } from "../src/tooltip";

// Trace text must not reorder the numbers drawn beside it (issue 35, item 8).
const RLO = "\u202E"; // right-to-left override
const CONTROLS = /[\u202A-\u202E\u2066-\u2069]/;

describe("trace text is isolated from the numbers beside it", () => {
  it("drops the bidi controls and isolates right-to-left text", () => {
    expect(plain(`a${RLO}b\u2066c\u2069\u202Ad`)).toBe("abcd");
    expect(isolated("aten::mm")).toBe("aten::mm"); // left-to-right text as it is
    expect(isolated(`op${RLO}`)).toBe("op");
    expect(isolated("שלום")).toBe("\u2068שלום\u2069");
    // a planted pop-isolate cannot end the isolation early
    expect(isolated("שלום\u2069 x")).toBe("\u2068שלום x\u2069");
  });
  it("keeps a live allocation's span readable whatever its owner's name", () => {
    const row = liveRowText({ bytes: 1024, device: "cuda:0", owner: `evil${RLO}`, alloc_time: 375_000, free_time: null }, "ns");
    expect(CONTROLS.test(row)).toBe(false);
    expect(row.endsWith("[375 µs → ?]")).toBe(true);
    const rtl = liveRowText({ bytes: 1024, device: "cuda:0", owner: "שלום", alloc_time: 375_000 }, "ns");
    expect(rtl).toContain("\u2068שלום\u2069  [375 µs → ?]");
  });
  it("isolates an event's name and args in the tooltip", () => {
    const lines = eventLines({ name: `x${RLO}`, dur: 180_000, args: { [`k${RLO}`]: `v${RLO}` } } as never, "ns");
    expect(lines.some((l) => CONTROLS.test(l))).toBe(false);
    expect(lines[0]).toBe("x");
    expect(lines).toContain("duration 180 µs");
  });
});
