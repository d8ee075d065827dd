// The `_selection` trait value (docs/widget-protocol.md): {} for none, {"ids": [id]} for a
// clicked slice, {"range": [t0, t1], "tracks": [int] | null} for a shift-drag.  Its own module:
// the view's selection (selection.ts) and the table (table.ts) both use it.

export type SelectionTrait =
  | Record<string, never>
  | { ids: number[] }
  | { range: [number, number]; tracks: number[] | null };

export function selectionValue(
  id: number | null, range: [number, number] | null, tracks: number[] | null,
): SelectionTrait {
  if (id !== null && id >= 0) return { ids: [id] };
  if (range && Number.isFinite(range[0]) && Number.isFinite(range[1])) {
    return { range: [Math.min(...range), Math.max(...range)], tracks: tracks ? [...tracks] : null };
  }
  return {};
}
