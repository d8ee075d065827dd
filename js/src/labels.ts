// Text layers of the timeline: process group headers (with a collapsed group's busy lane), lane
// names in the label column, and event names clipped inside boxes wide enough for them.

import type { Slices } from "./lod";
import { GROUP_H, ROW_H } from "./layout";
import { AXIS_H, GUTTER_W, type LabelRect, type Surface, type TimelineScene } from "./scene";
import { cutEnd, fitLane, LANE_PAD, type Measure } from "./lane_labels";
import type { Layout, TrackInfo } from "./layout";
import { laneColors, laneRuns, type SummaryLane } from "./summary";
import { colorAt, textOn } from "./theme";
import { isolated } from "./bidi";

/** Indent (CSS px) of a process group's label inside a rank section. */
const INDENT = 10;

/**
 * `text` cut at its end with an ellipsis to fit `widthPx` at `charW` px per character (a box's
 * label; lane names are cut by measured width: `lane_labels.fitLane`).
 */
export function fitText(text: string, widthPx: number, charW: number): string {
  const max = Math.floor(widthPx / charW);
  if (max <= 0) return "";
  if (text.length <= max) return text;
  if (max <= 1) return "…";
  return `${text.slice(0, max - 1)}…`;
}

/**
 * An event's name in a box `widthPx` wide: the whole name when it fits, else its informative
 * end: a path-like name ("tower_0/gradients/conv2d/Conv2D", "/job:w/replica:0/Adam") keeps its
 * last component ("…/Conv2D") rather than the prefix every op of a tower shares. The full name is
 * in the tooltip.
 */
export function boxLabel(text: string, widthPx: number, charW: number): string {
  const max = Math.floor(widthPx / charW);
  if (text.length <= max) return text;
  const cut = text.lastIndexOf("/", text.length - 2);
  if (cut > 0 && max >= 3) return fitText(`…${text.slice(cut)}`, widthPx, charW);
  return fitText(text, widthPx, charW);
}

/** Indent (CSS px) of the texts of a group at `level` (0, or 1 inside a rank section). */
const indentOf = (level: number): number => 6 + level * INDENT;

/** The lane names the label column shows, each with its group's indent (`labelColumnWidth`). */
export function laneNames(layout: Layout, tracks: TrackInfo[]): Array<{ name: string; indent: number }> {
  const out: Array<{ name: string; indent: number }> = [];
  for (const g of layout.groups) {
    if (g.collapsed || g.kind === "section") continue;
    for (const t of g.tracks) if (layout.trackY[t] >= 0) out.push({ name: tracks[t]?.name ?? "", indent: indentOf(g.level) });
  }
  return out;
}

/** Draw `text` at (x, y) (middle baseline) and keep its box in `surf.labels`. */
function put(surf: Surface, kind: LabelRect["kind"], text: string, x: number, y: number): void {
  surf.ctx.fillText(isolated(text), x, y);
  if (surf.labels && text) {
    const tw = surf.ctx.measureText(text).width;
    surf.labels.push({ kind, text, x0: x, y0: y - 6, x1: x + tw, y1: y + 6 });
  }
}

/** Group header rows (name, rank note, track count) and the names of the lanes under them. */
export function drawGroups(surf: Surface, sc: TimelineScene, oy: number): void {
  const { ctx, h, w } = surf;
  const th = sc.theme;
  const measure: Measure = (text) => ctx.measureText(text).width;
  for (const g of sc.layout.groups) {
    const y = oy + g.y;
    const indent = indentOf(g.level);
    if (y + GROUP_H >= AXIS_H && y <= h) {
      ctx.fillStyle = th.header;
      ctx.fillRect(0, y, w, GROUP_H - 1);
      if (g.kind === "section") ctx.fillRect(0, y, w, GROUP_H - 1); // a darker band for a rank
      const lane = g.collapsed ? sc.summary?.get(g.key) : undefined;
      ctx.fillStyle = th.fg;
      ctx.font = `bold 11px ${th.font}`;
      const name = isolated(g.name || g.process || "(no process)");
      const note = g.rank === undefined ? undefined : sc.notes?.get(g.rank);
      const count = `(${g.tracks.length} track${g.tracks.length === 1 ? "" : "s"})`;
      // with a busy lane the label has the gutter only: the short note ("+4.033 ms"), no count
      const label = lane
        ? `▸ ${name}${note ? ` ${note.slice(note.indexOf(" ") + 1)}` : ""}`
        : `${g.collapsed ? "▸" : "▾"} ${name}${note ? `  ${note}` : ""}  ${count}`;
      put(surf, "group", cutEnd(label, (lane ? GUTTER_W : w) - indent - 4, measure), indent, y + GROUP_H / 2);
      ctx.font = `11px ${th.font}`;
      if (lane) drawLane(surf, sc, lane, y);
    }
    if (g.collapsed || g.kind === "section") continue;
    ctx.fillStyle = th.fgDim;
    for (const t of g.tracks) {
      const ty = oy + sc.layout.trackY[t];
      if (ty + ROW_H < AXIS_H || ty > h) continue;
      // the lane's informative end, by measured width (lane_labels.ts); the tooltip has it whole
      put(surf, "lane", fitLane(sc.tracks[t]?.name ?? "", GUTTER_W - LANE_PAD - indent - 6, measure), LANE_PAD + indent,
        ty + ROW_H / 2);
    }
  }
}

/** A collapsed group's summary lane in its header row: work, and communication below it. */
function drawLane(surf: Surface, sc: TimelineScene, lane: SummaryLane, y: number): void {
  const { ctx } = surf;
  ctx.save();
  ctx.beginPath();
  ctx.rect(GUTTER_W, y, surf.w - GUTTER_W, GROUP_H);
  ctx.clip();
  // work above, communication below, each in its slices' legend colours (summary.ts laneColors)
  const bands: Array<[0 | 1, number, number]> = [[0, y + 3, GROUP_H / 2 - 4], [1, y + GROUP_H / 2, GROUP_H / 2 - 4]];
  for (const [kind, top, height] of bands) {
    for (const part of laneColors(lane, kind)) {
      const runs = laneRuns(part.start, part.dur, sc.view, GUTTER_W, surf.w);
      ctx.fillStyle = colorAt(sc.legend, part.color);
      for (let i = 0; i < runs.length; i += 2) ctx.fillRect(runs[i], top, runs[i + 1] - runs[i], height);
    }
  }
  ctx.restore();
}

/** Event names inside the boxes at least three characters wide (dimmed when not highlighted). */
export function drawLabels(surf: Surface, sc: TimelineScene, s: Slices | null,
  highlight: ReadonlySet<number> | null, k: number, oy: number): void {
  if (!s) return;
  const { ctx, h } = surf;
  const { trackY, trackDepths } = sc.layout;
  const minW = surf.charW * 3 + 6;
  const textColors = sc.legend.map((e) => textOn(e.color));
  for (let i = 0; i < s.n; i++) {
    if (s.label[i] < 0 || s.dur[i] * k < minW) continue;
    const ty = trackY[s.track[i]];
    if (ty < 0 || s.depth[i] >= trackDepths[s.track[i]]) continue;
    const y = oy + ty + s.depth[i] * ROW_H;
    if (y + ROW_H < AXIS_H || y > h) continue;
    const x0 = Math.max(GUTTER_W, GUTTER_W + (s.start[i] - sc.view.start) * k);
    const x1 = Math.min(surf.w, GUTTER_W + (s.start[i] + s.dur[i] - sc.view.start) * k);
    if (x1 - x0 < minW) continue;
    const room = x1 - x0 - 6;
    let text = boxLabel(s.labels[s.label[i]] ?? "", room, surf.charW);
    // the mean character width is a guess: a name of wide letters is cut again to its measured width
    if (text && ctx.measureText(text).width > room) text = cutEnd(text, room, (t) => ctx.measureText(t).width);
    if (!text) continue;
    const lit = !highlight || highlight.has(s.id[i]);
    ctx.globalAlpha = lit ? 1 : 0.35;
    ctx.fillStyle = textColors[s.color[i]] ?? "#111";
    put(surf, "box", text, x0 + 3, y + ROW_H / 2);
  }
  ctx.globalAlpha = 1;
}
