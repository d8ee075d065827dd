// Vertical layout of the timeline: process groups (collapsible headers), then one lane per
// track with one sub-row per depth. All y values are content coordinates (before scrolling).

export interface TrackInfo {
  id: number;
  process: string;
  thread: string;
  /** The full track label ("python / thread 9428 (python)"): shown on hover. */
  label: string;
  /** On-screen group ("GPU 0", "(global)") and lane ("thread 9428 (python)") names. */
  group: string;
  name: string;
  depths: number;
}

export interface Group {
  process: string;
  /** Shown in the header (the first track's `group`). */
  name: string;
  /** Header top. */
  y: number;
  collapsed: boolean;
  /** Indices into the tracks list. */
  tracks: number[];
}

export interface Layout {
  groups: Group[];
  /** y of depth 0 of each track (by index into the tracks list); -1 when hidden (collapsed). */
  trackY: Float64Array;
  /** Sub-rows drawn per track (at least 1). */
  trackDepths: Uint16Array;
  height: number;
}

export const GROUP_H = 20;
export const ROW_H = 16;
export const TRACK_GAP = 3;

export function parseTracks(raw: unknown): TrackInfo[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((t: Record<string, unknown>, i) => {
    const process = String(t?.process ?? "");
    const thread = String(t?.thread ?? "");
    const depths = Number(t?.depths);
    const label = String(t?.label ?? (thread || process));
    return {
      id: typeof t?.id === "number" ? t.id : i,
      process, thread, label,
      group: typeof t?.group === "string" ? t.group : process,
      name: typeof t?.name === "string" ? t.name : label,
      depths: Number.isFinite(depths) && depths > 0 ? Math.min(depths, 65535) : 1,
    };
  });
}

export function computeLayout(tracks: TrackInfo[], collapsed: ReadonlySet<string>): Layout {
  const byProcess = new Map<string, number[]>();
  tracks.forEach((t, i) => {
    const list = byProcess.get(t.process);
    if (list) list.push(i);
    else byProcess.set(t.process, [i]);
  });
  const trackY = new Float64Array(tracks.length).fill(-1);
  const trackDepths = new Uint16Array(tracks.length);
  const groups: Group[] = [];
  let y = 0;
  for (const [process, idx] of byProcess) {
    const isCollapsed = collapsed.has(process);
    groups.push({ process, name: tracks[idx[0]].group, y, collapsed: isCollapsed, tracks: idx });
    y += GROUP_H;
    for (const i of idx) {
      trackDepths[i] = tracks[i].depths;
      if (isCollapsed) continue;
      trackY[i] = y;
      y += tracks[i].depths * ROW_H + TRACK_GAP;
    }
  }
  return { groups, trackY, trackDepths, height: y };
}

export type RowHit =
  | { kind: "group"; group: number }
  | { kind: "row"; track: number; depth: number }
  | null;

/** What lies at content y: a group header, a (track, depth) row, or nothing. */
export function rowAt(layout: Layout, y: number): RowHit {
  const { groups, trackY, trackDepths } = layout;
  let g = -1;
  for (let i = 0; i < groups.length; i++) {
    if (groups[i].y <= y) g = i;
    else break;
  }
  if (g < 0) return null;
  const group = groups[g];
  if (y < group.y + GROUP_H) return { kind: "group", group: g };
  if (group.collapsed) return null;
  for (const t of group.tracks) {
    const top = trackY[t];
    if (y >= top && y < top + trackDepths[t] * ROW_H) {
      return { kind: "row", track: t, depth: Math.floor((y - top) / ROW_H) };
    }
  }
  return null;
}

/** Visible tracks whose lanes intersect content rows [y0, y1] (in display order). */
export function tracksBetween(layout: Layout, y0: number, y1: number): number[] {
  const lo = Math.min(y0, y1);
  const hi = Math.max(y0, y1);
  const out: number[] = [];
  for (const g of layout.groups) {
    for (const t of g.tracks) {
      const top = layout.trackY[t];
      if (top < 0) continue;
      if (top <= hi && top + layout.trackDepths[t] * ROW_H >= lo) out.push(t);
    }
  }
  return out;
}
