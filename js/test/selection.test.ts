import { describe, expect, it } from "vitest";
import { selectionValue } from "../src/selection_value";

describe("_selection trait values (protocol)", () => {
  it("one clicked slice is {ids: [id]}", () => {
    expect(selectionValue(42, null, null)).toEqual({ ids: [42] });
    expect(selectionValue(0, [1, 2], null)).toEqual({ ids: [0] });
  });

  it("a shift-drag is an ordered range with its tracks or null", () => {
    expect(selectionValue(null, [500, 100], null)).toEqual({ range: [100, 500], tracks: null });
    expect(selectionValue(null, [1, 2], [3, 0])).toEqual({ range: [1, 2], tracks: [3, 0] });
  });

  it("nothing selected is {}", () => {
    expect(selectionValue(null, null, null)).toEqual({});
    expect(selectionValue(-1, null, [1])).toEqual({});
    expect(selectionValue(null, [NaN, 1], null)).toEqual({});
  });
});
