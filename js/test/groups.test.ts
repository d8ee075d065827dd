// The collapse / rank-filter state as the browser changes it: what goes to the kernel's traits.
import { describe, expect, it } from "vitest";
import type { AnyModel } from "@anywidget/types";
import { GroupControls } from "../src/groups";
import { parseTracks } from "../src/layout";

const tracks = parseTracks([0, 1, 2].map((r) => ({ process: "python", rank: r, section: `rank ${r}`, key: `rank ${r}/python` })));

function setup(initial: Record<string, unknown>) {
  const values: Record<string, unknown> = { ...initial };
  const saved: Array<Record<string, unknown>> = [];
  const model = {
    get: (k: string) => values[k],
    set: (k: string, v: unknown) => { values[k] = v; },
    save_changes: () => saved.push({ ...values }),
  } as unknown as AnyModel;
  const classes = new Set<string>();
  const el = () => ({ style: { display: "" }, textContent: "", value: "",
    classList: { toggle: (c: string, on: boolean) => (on ? classes.add(c) : classes.delete(c)), remove: (c: string) => classes.delete(c) } });
  const expand = el() as unknown as HTMLButtonElement;
  const ranks = el() as unknown as HTMLInputElement;
  let relayouts = 0;
  const g = new GroupControls(model, expand, ranks, () => tracks, () => relayouts++);
  g.load();
  return { g, values, saved, expand, ranks, classes, relayouts: () => relayouts };
}

describe("group controls", () => {
  it("reads the traits the kernel set, and the rank selector shows them", () => {
    const { g, ranks } = setup({ collapsed_groups: ["rank 0", "rank 2"], shown_ranks: [0, 1, 2] });
    expect(Array.from(g.collapsed)).toEqual(["rank 0", "rank 2"]);
    expect(ranks.value).toBe("0-2");
  });

  it("a header click, expand all and collapse all go to collapsed_groups", () => {
    const { g, values, saved, expand, relayouts } = setup({ collapsed_groups: ["rank 0", "rank 1", "rank 2"] });
    g.toggle("rank 1");
    expect(values.collapsed_groups).toEqual(["rank 0", "rank 2"]);
    g.update();
    expect(expand.textContent).toBe("Expand all ranks");
    g.setAll("expand");
    expect(values.collapsed_groups).toEqual([]);
    g.update();
    expect(expand.textContent).toBe("Collapse all ranks");
    g.setAll("collapse");
    expect(values.collapsed_groups).toEqual(["rank 0", "rank 1", "rank 2"]);
    expect(saved).toHaveLength(3);
    expect(relayouts()).toBe(3);
  });

  it("a model without the traits (the serve page) is left alone, the layout still follows", () => {
    const { g, values, saved, relayouts } = setup({ _info: {} });
    g.toggle("rank 1");
    expect(Array.from(g.collapsed)).toEqual(["rank 1"]);
    expect(values).toEqual({ _info: {} });
    expect(saved).toHaveLength(0);
    expect(relayouts()).toBe(1);
  });

  it("the rank selector sets shown_ranks; bad text is flagged and changes nothing", () => {
    const { g, values, ranks, classes } = setup({ collapsed_groups: [], shown_ranks: [] });
    ranks.value = "2, 0";
    g.applyRanks();
    expect(values.shown_ranks).toEqual([0, 2]);
    ranks.value = "two";
    g.applyRanks();
    expect(classes.has("pv-invalid")).toBe(true);
    expect(values.shown_ranks).toEqual([0, 2]);
    ranks.value = "";
    g.applyRanks();
    expect(values.shown_ranks).toEqual([]);
    expect(classes.has("pv-invalid")).toBe(false);
  });
});
