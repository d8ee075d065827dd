// Vertical layout of the timeline: process groups (collapsible headers), then one lane per
// track with one sub-row per depth. Tracks of several ranks (a TraceSet) carry a `section`
// ("rank 3"): each section gets its own collapsible header above its process groups, and a
// collapsed section is that one header row (the view draws its busy lane there).
// All y values are content coordinates (before scrolling).

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
  /** What collapses its process group (a `collapsed_groups` entry); the process for one trace. */
  key: string;
  /** The rank of a TraceSet's track, and its section's key; absent for one trace. */
  rank?: number;
  section?: string;
  /** How many events the lane holds, how many of them are the profiler's own records (wrappers). */
  events?: number;
  wrappers?: number;
  /** Not drawn: the kernel says no event of it shows (`show_wrappers` off, or none at all). */
  hidden?: boolean;
}

export interface Group {
  /** What collapses it (the `collapsed_groups` trait): the process, or the section name. */
  key: string;
  /** "section": a rank's header above its process groups; "process": a process group. */
  kind: "section" | "process";
  /** Indent level: 1 for a process group inside a section. */
  level: number;
  process: string;
  /** Shown in the header (the first track's `group`, without its section's prefix). */
  name: string;
  /** The section's rank (sections only). */
  rank?: number;
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
  /**
   * y of the header row standing for each track hidden by a collapsed group (the outermost
   * one: a collapsed section before a collapsed process group); -1 for a track drawn as a lane
   * or not shown at all (a rank filtered out). Flow arrows to a hidden track end there.
   */
  home: Float64Array;
  height: number;
}

/**
 * Tracks drawn as lanes (not collapsed) whose first row starts below content y `bottom`: what a
 * "+N tracks" hint under a timeline cut at that height counts.
 */
export function tracksBelow(layout: Layout, bottom: number): number {
  let n = 0;
  for (let i = 0; i < layout.trackY.length; i++) if (layout.trackY[i] >= 0 && layout.trackY[i] + ROW_H > bottom) n++;
  return n;
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
    const out: TrackInfo = {
      id: typeof t?.id === "number" ? t.id : i,
      process, thread, label,
      group: typeof t?.group === "string" ? t.group : process,
      name: typeof t?.name === "string" ? t.name : label,
      depths: Number.isFinite(depths) && depths > 0 ? Math.min(depths, 65535) : 1,
      key: typeof t?.key === "string" ? t.key : process,
    };
    if (typeof t?.section === "string" && t.section) out.section = t.section;
    if (typeof t?.rank === "number" && Number.isInteger(t.rank)) out.rank = t.rank;
    if (typeof t?.events === "number") out.events = t.events;
    if (typeof t?.wrappers === "number") out.wrappers = t.wrappers;
    if (t?.hidden === true) out.hidden = true;
    return out;
  });
}

/**
 * Groups, lane positions and header rows. `collapsed` holds group keys (process names and
 * section names); `shown` the ranks to show (null: all; tracks without a rank always show).
 * A `hidden` track is not laid out (nor its group when all its tracks are hidden).
 */
export function computeLayout(tracks: TrackInfo[], collapsed: ReadonlySet<string>,
  shown: ReadonlySet<number> | null = null): Layout {
  // Blocks in first-seen order: a section (its processes in first-seen order) or a lone process.
  type Block = { section: string | null; rank?: number; processes: Map<string, number[]> };
  const blocks: Block[] = [];
  const bySection = new Map<string, Block>();
  const lone = new Map<string, Block>();
  tracks.forEach((t, i) => {
    if (t.hidden || (t.rank !== undefined && shown && !shown.has(t.rank))) return;
    let block: Block | undefined;
    if (t.section) {
      block = bySection.get(t.section);
      if (!block) {
        block = { section: t.section, rank: t.rank, processes: new Map() };
        bySection.set(t.section, block);
        blocks.push(block);
      }
    } else {
      block = lone.get(t.key);
      if (!block) {
        block = { section: null, processes: new Map() };
        lone.set(t.key, block);
        blocks.push(block);
      }
    }
    const list = block.processes.get(t.key);
    if (list) list.push(i);
    else block.processes.set(t.key, [i]);
  });
  const trackY = new Float64Array(tracks.length).fill(-1);
  const home = new Float64Array(tracks.length).fill(-1);
  const trackDepths = new Uint16Array(tracks.length);
  tracks.forEach((t, i) => (trackDepths[i] = t.depths));
  const groups: Group[] = [];
  let y = 0;
  for (const block of blocks) {
    let level = 0;
    let sectionHidden = false;
    if (block.section !== null) {
      const all = Array.from(block.processes.values()).flat();
      sectionHidden = collapsed.has(block.section);
      const title = block.rank === undefined ? block.section : `rank ${block.rank}`;
      groups.push({ key: block.section, kind: "section", level: 0, process: "", name: title,
        rank: block.rank, y, collapsed: sectionHidden, tracks: all });
      if (sectionHidden) for (const i of all) home[i] = y;
      y += GROUP_H;
      level = 1;
      if (sectionHidden) continue;
    }
    for (const [key, idx] of block.processes) {
      const isCollapsed = collapsed.has(key);
      const { process, group: name } = tracks[idx[0]];
      groups.push({ key, kind: "process", level, process, name, y, collapsed: isCollapsed, tracks: idx });
      const header = y;
      y += GROUP_H;
      for (const i of idx) {
        if (isCollapsed) {
          home[i] = header;
          continue;
        }
        trackY[i] = y;
        y += tracks[i].depths * ROW_H + TRACK_GAP;
      }
    }
  }
  return { groups, trackY, trackDepths, home, height: y };
}

/** The keys of every section (the "expand / collapse all ranks" button). */
export function sectionKeys(tracks: TrackInfo[]): string[] {
  const out: string[] = [];
  for (const t of tracks) if (t.section && !out.includes(t.section)) out.push(t.section);
  return out;
}

/**
 * Ranks typed into the rank selector: "0, 2-3" -> {0, 2, 3}; "" or "all" -> null (all ranks).
 * Anything else (a word, a reversed range) -> undefined, so the caller can flag the input.
 */
export function parseRanks(text: string): Set<number> | null | undefined {
  const t = text.trim();
  if (t === "" || t.toLowerCase() === "all") return null;
  const out = new Set<number>();
  for (const part of t.split(/[,\s]+/).filter(Boolean)) {
    const m = part.match(/^(\d+)(?:-(\d+))?$/);
    if (!m) return undefined;
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    if (b < a || b - a > 100_000) return undefined;
    for (let r = a; r <= b; r++) out.add(r);
  }
  return out;
}

/** The text of a set of ranks, ranges joined ("0, 2-3"); "" for null (all). */
export function ranksText(ranks: Iterable<number> | null): string {
  if (!ranks) return "";
  const sorted = Array.from(new Set(ranks)).sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; i++) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    parts.push(j > i ? `${sorted[i]}-${sorted[j]}` : String(sorted[i]));
    i = j;
  }
  return parts.join(", ");
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
    if (g.kind !== "process") continue; // a section's tracks are its process groups' tracks
    for (const t of g.tracks) {
      const top = layout.trackY[t];
      if (top < 0) continue;
      if (top <= hi && top + layout.trackDepths[t] * ROW_H >= lo) out.push(t);
    }
  }
  return out;
}
