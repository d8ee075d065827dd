// The search box's count and stepping, and the details strip's rows and links (search.ts, details.ts).
import { describe, expect, it } from "vitest";
import { detailRows, laneText, links } from "../src/details";
import { countText, nextIndex, SearchCursor, type SearchReply } from "../src/search";
import type { TrackInfo } from "../src/layout";

const reply = (count: number, index: number, query = "nccl", regex = false): SearchReply =>
  ({ query, regex, count, index, message: "" });

describe("search box", () => {
  it("counts from 1, with thousands separators, 0 / 0 without matches, nothing before a search", () => {
    expect(countText(reply(17, 2))).toBe("3 / 17");
    expect(countText(reply(12345, 0))).toBe("1 / 12,345");
    expect(countText(reply(0, -1))).toBe("0 / 0");
    expect(countText(null)).toBe("");
    expect(countText(reply(0, -1, ""))).toBe("");
  });
  it("steps from the current match; a new query or switch starts again (the kernel wraps)", () => {
    expect(nextIndex(reply(17, 2), "nccl", false, 1)).toBe(3);
    expect(nextIndex(reply(17, 0), "nccl", false, -1)).toBe(-1);
    expect(nextIndex(reply(17, 5), "other", false, 1)).toBe(0);
    expect(nextIndex(reply(17, 5), "nccl", true, 1)).toBe(0);
    expect(nextIndex(reply(17, 5), "nccl", true, -1)).toBe(-1);
    expect(nextIndex(null, "nccl", false, 1)).toBe(0);
  });
  it("steps from what was asked when clicks come faster than the answers", () => {
    const c = new SearchCursor();
    expect(c.ask("nccl", false, 0)).toBe(0);
    c.answer(reply(10, 0));
    expect(c.ask("nccl", false, 1)).toBe(1);
    c.answer(reply(10, 1)); // "2 / 10"
    expect(c.ask("nccl", false, -1)).toBe(0); // ‹
    expect(c.ask("nccl", false, -1)).toBe(-1); // ‹ again, unanswered: the kernel wraps to 10 / 10
    c.answer(reply(10, 9));
    expect(c.ask("nccl", false, 1)).toBe(10); // › from 10 / 10: the kernel wraps to 1 / 10
    expect(c.ask("other", false, 1)).toBe(0); // another query starts again
    c.answer(null);
    expect(c.ask("nccl", false, 1)).toBe(0);
  });
});

const tracks: TrackInfo[] = [
  { id: 0, process: "p", thread: "t", label: "p / t", group: "GPU 0", name: "stream 7", depths: 1, key: "p" },
];

describe("details strip", () => {
  it("lists name, start, end, duration, self, category, lane with the exact numbers", () => {
    const rows = detailRows({ id: 4, name: "k", start: 1000, dur: 2500, self: 1500, category: "kernel", track: 0 },
      "ns", tracks);
    const by = Object.fromEntries(rows.map((r) => [r.key, r]));
    expect(by.name.text).toBe("k");
    expect(by.start).toMatchObject({ text: "1 µs", value: 1000 });
    expect(by.end).toMatchObject({ text: "3.5 µs", value: 3500 });
    expect(by.dur).toMatchObject({ text: "2.5 µs", value: 2500 });
    expect(by.self).toMatchObject({ text: "1.5 µs", value: 1500 });
    expect(by.category.text).toBe("kernel");
    expect(by.lane.text).toBe("GPU 0 / stream 7");
    expect(laneText(tracks, 9)).toBe("");
  });
  it("links each flow's other end once, saying its direction", () => {
    const f = (source: number, target: number) =>
      ({ source, target, source_track: 0, target_track: 0, source_time: 0, target_time: 0 });
    expect(links({ id: 4, flows: [f(2, 4), f(4, 9), f(2, 4)] })).toEqual([
      { id: 2, outgoing: false }, { id: 9, outgoing: true },
    ]);
  });
});
