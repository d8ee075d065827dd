// Overlay layer of the timeline: the selected range, the hovered and selected boxes' outlines and
// the selected event's flow arrows.

import { PATH_COLOR } from "./critical";
import type { Slices } from "./lod";
import { GROUP_H, ROW_H } from "./layout";
import { AXIS_H, GUTTER_W, type Flow, type Shading, type Surface, type TimelineScene } from "./scene";

/** At most this many flow arrows are drawn (critical-path arrows: those in view, up to MAX_PATH_FLOWS). */
const MAX_FLOWS = 200;
const MAX_PATH_FLOWS = 2000;

/**
 * y (canvas) of the middle of (track, depth); for a track inside a collapsed group the middle
 * of that group's header row (flow arrows end there); NaN when not shown at all.
 */
export function rowMid(sc: TimelineScene, track: number, depth: number): number {
  const ty = sc.layout.trackY[track];
  if (ty === undefined) return NaN;
  if (ty < 0) {
    const home = sc.layout.home?.[track] ?? -1;
    return home >= 0 ? AXIS_H - sc.scrollY + home + GROUP_H / 2 : NaN;
  }
  const d = Math.min(depth, Math.max(0, sc.layout.trackDepths[track] - 1));
  return AXIS_H - sc.scrollY + ty + d * ROW_H + ROW_H / 2;
}

export function drawOverlays(surf: Surface, sc: TimelineScene, s: Slices | null, k: number, oy: number): void {
  const xOf = (t: number): number => GUTTER_W + (t - sc.view.start) * k;
  if (sc.shading) drawShading(surf, sc, sc.shading, xOf, oy);
  if (sc.range) drawRange(surf, sc, sc.range, xOf, oy);
  const { ctx } = surf;
  ctx.lineWidth = 1;
  if (s && sc.hoverBox >= 0 && sc.hoverBox < s.n) {
    const i = sc.hoverBox;
    const y = rowMid(sc, s.track[i], s.depth[i]) - ROW_H / 2;
    ctx.strokeStyle = sc.theme.fg;
    ctx.globalAlpha = 0.6;
    ctx.strokeRect(xOf(s.start[i]) - 0.5, y + 0.5, Math.max(1, s.dur[i] * k) + 1, ROW_H - 1);
    ctx.globalAlpha = 1;
  }
  const sel = sc.selected;
  if (sel) {
    const y = rowMid(sc, sel.track, sel.depth) - ROW_H / 2;
    if (Number.isFinite(y) && sc.layout.trackY[sel.track] >= 0) {
      ctx.strokeStyle = sc.theme.fg;
      ctx.lineWidth = 2;
      ctx.strokeRect(xOf(sel.start) - 1, y, Math.max(2, sel.dur * k) + 2, ROW_H);
      ctx.lineWidth = 1;
    }
  }
  if (sc.pathFlows?.length) {
    const { start, end } = sc.view;
    const inView = sc.pathFlows.filter((f) => Math.max(f.source_time, f.target_time) >= start &&
      Math.min(f.source_time, f.target_time) <= end).slice(0, MAX_PATH_FLOWS);
    drawFlows(surf, sc, s, xOf, inView, PATH_COLOR);
  }
  if (sc.flows.length) drawFlows(surf, sc, s, xOf, sc.flows.slice(0, MAX_FLOWS), sc.theme.accent);
}

/**
 * Shaded intervals on their tracks (a collapsed group's: on its header row), one path filled once
 * so that sub-pixel neighbours do not darken each other; `shading.drawn` counts the rectangles.
 */
export function drawShading(surf: Surface, sc: TimelineScene, shading: Shading, xOf: (t: number) => number,
  oy: number): void {
  const { ctx, w } = surf;
  const rows: Array<[number, number]> = [];
  const seen = new Set<number>();
  for (const t of shading.tracks) {
    const ty = sc.layout.trackY[t];
    if (ty === undefined) continue;
    const y = ty >= 0 ? ty : sc.layout.home?.[t] ?? -1;
    if (y < 0 || seen.has(y)) continue;
    seen.add(y);
    rows.push([oy + y, ty >= 0 ? sc.layout.trackDepths[t] * ROW_H : GROUP_H]);
  }
  const { start, end } = sc.view;
  let n = 0;
  ctx.beginPath();
  for (let i = 0; i < shading.start.length; i++) {
    if (shading.end[i] <= start || shading.start[i] >= end) continue;
    const a = Math.max(GUTTER_W, xOf(shading.start[i]));
    const b = Math.min(w, xOf(shading.end[i]));
    for (const [y, h] of rows) ctx.rect(a, y, Math.max(1, b - a), h);
    n += rows.length;
  }
  ctx.fillStyle = shading.color;
  ctx.globalAlpha = shading.alpha;
  ctx.fill();
  ctx.globalAlpha = 1;
  shading.drawn = n;
}

/** The selected time range: shaded on its tracks (all tracks when none), edges as lines. */
function drawRange(surf: Surface, sc: TimelineScene, range: [number, number], xOf: (t: number) => number,
  oy: number): void {
  const { ctx, h } = surf;
  const a = xOf(Math.min(...range));
  const b = xOf(Math.max(...range));
  ctx.fillStyle = sc.theme.accent;
  ctx.globalAlpha = 0.14;
  if (sc.rangeTracks) {
    for (const t of sc.rangeTracks) {
      const ty = sc.layout.trackY[t];
      if (ty >= 0) ctx.fillRect(a, oy + ty, Math.max(1, b - a), sc.layout.trackDepths[t] * ROW_H);
    }
  } else ctx.fillRect(a, AXIS_H, Math.max(1, b - a), h - AXIS_H);
  ctx.globalAlpha = 0.8;
  ctx.fillRect(a, AXIS_H, 1, h - AXIS_H);
  ctx.fillRect(b, AXIS_H, 1, h - AXIS_H);
  ctx.globalAlpha = 1;
}

/** Flow arrows (bezier curves with a head) from source to target event. */
function drawFlows(surf: Surface, sc: TimelineScene, s: Slices | null, xOf: (t: number) => number,
  flows: Flow[], color: string): void {
  const { ctx } = surf;
  // Depth rows of the flow ends drawn as their own boxes: one pass over the boxes.
  const depths = new Map<number, number>();
  for (const f of flows) {
    depths.set(f.source, 0);
    depths.set(f.target, 0);
  }
  if (s) for (let i = 0; i < s.n; i++) if (s.id[i] >= 0 && depths.has(s.id[i])) depths.set(s.id[i], s.depth[i]);
  if (sc.selected) depths.set(sc.selected.id, sc.selected.depth);
  const depthOf = (id: number): number => depths.get(id) ?? 0;
  ctx.strokeStyle = color;
  ctx.fillStyle = color;
  ctx.lineWidth = 1.5;
  for (const f of flows) {
    const x0 = xOf(f.source_time);
    const x1 = xOf(f.target_time);
    const y0 = rowMid(sc, f.source_track, depthOf(f.source));
    const y1 = rowMid(sc, f.target_track, depthOf(f.target));
    if (!Number.isFinite(y0) || !Number.isFinite(y1)) continue;
    ctx.beginPath();
    ctx.moveTo(x0, y0);
    const cx = (x0 + x1) / 2;
    ctx.bezierCurveTo(cx, y0, cx, y1, x1, y1);
    ctx.stroke();
    const ang = Math.atan2(y1 - y0, Math.max(4, x1 - cx));
    ctx.beginPath();
    ctx.moveTo(x1, y1);
    ctx.lineTo(x1 - 7 * Math.cos(ang - 0.4), y1 - 7 * Math.sin(ang - 0.4));
    ctx.lineTo(x1 - 7 * Math.cos(ang + 0.4), y1 - 7 * Math.sin(ang + 0.4));
    ctx.closePath();
    ctx.fill();
  }
  ctx.lineWidth = 1;
}
