// Mouse, wheel and keyboard on the timeline and memory panels (keys only while focused).

import { formatTime } from "./axis";
import { rowAt, tracksBetween, type Group } from "./layout";
import { AXIS_H, GUTTER_W, setGutterWidth } from "./scene";
import { flashNote, scrollPage, wheelIsOurs } from "./help";
import { eventLines } from "./tooltip";
import { overlapNote } from "./lane_labels";
import type { ProfView } from "./view";
import { applyKey, keyAction, panPixels, wheelFactor, zoomAt, zoomToRange } from "./viewport";

const CLICK_SLOP = 4;
/** Pixels either side of the label column's edge where a drag resizes the column. */
const EDGE_SLOP = 4;
const nearGutterEdge = (x: number): boolean => Math.abs(x - GUTTER_W) <= EDGE_SLOP;

/** Pointer state shared by the gestures of one view. */
interface Pointer {
  /** Last pointer x over either canvas (CSS px; -1 when outside): the zoom anchor of keys and wheel. */
  mouseX: number;
}

type Drag = { mode: "pan" | "range" | "gutter"; x0: number; y0: number; moved: boolean; view: ProfView["view"]; t0: number };

export function attachInput(v: ProfView): void {
  const p: Pointer = { mouseX: -1 };
  attachTimelineWheel(v, p);
  attachTimelineDrag(v, p);
  attachMemoryInput(v, p);
  attachKeys(v, p);
}

function local(e: MouseEvent, target: HTMLElement): [number, number] {
  const r = target.getBoundingClientRect();
  return [e.clientX - r.left, e.clientY - r.top];
}

const timeAtX = (v: ProfView, x: number): number =>
  v.view.start + ((x - GUTTER_W) / v.plotWidth) * (v.view.end - v.view.start);

/** Where a zoom without a pointer position stays put: the pointer's x, else the middle. */
const anchor = (v: ProfView, p: Pointer): number => (p.mouseX >= GUTTER_W ? (p.mouseX - GUTTER_W) / v.plotWidth : 0.5);

/**
 * The page's wheel unless the view is focused or Ctrl/⌘ is held (then true, and the event is the
 * view's): a user scrolling the notebook scrolls past the widget, and is told how to zoom.
 */
function ownWheel(v: ProfView, e: WheelEvent): boolean {
  e.preventDefault();
  if (wheelIsOurs(e, v.root, document.activeElement)) return true;
  scrollPage(v.root, e);
  const note = v.root.querySelector<HTMLElement>(".pv-wheel-note");
  if (note && Math.abs(e.deltaY) > 0) flashNote(note);
  return false;
}

/** Wheel (focused or Ctrl/⌘): zoom at the pointer; horizontal wheel pans; shift+wheel scrolls the lanes. */
function attachTimelineWheel(v: ProfView, p: Pointer): void {
  const canvas = v.timeline.canvas;
  v.listen<WheelEvent>(canvas, "wheel", (e) => {
    if (!ownWheel(v, e)) return;
    const [x] = local(e, canvas);
    p.mouseX = x;
    if (e.shiftKey && !e.ctrlKey) {
      v.tlScroll.scrollTop += e.deltaY || e.deltaX;
      return;
    }
    let nv = v.view;
    if (Math.abs(e.deltaX) > Math.abs(e.deltaY) && !e.ctrlKey) {
      nv = panPixels(nv, -e.deltaX, v.plotWidth, v.bounds);
    } else {
      nv = zoomAt(nv, wheelFactor(e.deltaY, e.deltaMode), anchor(v, p), v.bounds);
    }
    v.setView(nv);
  }, { passive: false });
}

/** Drag pans (or widens the label column at its edge; shift-drag selects a range); click selects. */
function attachTimelineDrag(v: ProfView, p: Pointer): void {
  const canvas = v.timeline.canvas;
  let drag: Drag | null = null;

  v.listen<PointerEvent>(canvas, "pointerdown", (e) => {
    if (e.button !== 0) return;
    v.root.focus({ preventScroll: true });
    const [x, y] = local(e, canvas);
    const mode = nearGutterEdge(x) ? "gutter" : e.shiftKey && x >= GUTTER_W ? "range" : "pan";
    drag = { mode, x0: x, y0: y, moved: false, view: v.view, t0: timeAtX(v, x) };
    canvas.setPointerCapture(e.pointerId);
    v.tooltip.hide();
  });

  v.listen<PointerEvent>(canvas, "pointermove", (e) => {
    const [x, y] = local(e, canvas);
    p.mouseX = x;
    if (drag) {
      if (Math.abs(x - drag.x0) + Math.abs(y - drag.y0) > CLICK_SLOP) drag.moved = true;
      if (drag.moved) dragTo(v, drag, x, y, e);
      return;
    }
    hoverTimeline(v, x, y, e);
  });

  const endDrag = (e: PointerEvent): void => {
    if (!drag) return;
    const d = drag;
    drag = null;
    if (canvas.hasPointerCapture(e.pointerId)) canvas.releasePointerCapture(e.pointerId);
    if (d.mode === "gutter") {
      v.root.dataset.gutter = String(GUTTER_W);
      return;
    }
    if (d.mode === "range" && d.moved && v.sel.range) {
      v.sel.select(null, [Math.min(...v.sel.range), Math.max(...v.sel.range)], v.sel.rangeTracks);
      return;
    }
    if (!d.moved && e.type === "pointerup") click(v, d.x0, d.y0);
  };
  v.listen<PointerEvent>(canvas, "pointerup", endDrag);
  v.listen<PointerEvent>(canvas, "pointercancel", endDrag);
  v.listen<PointerEvent>(canvas, "pointerleave", () => {
    if (!drag) {
      p.mouseX = -1;
      v.tooltip.hide();
      if (v.hoverBox !== -1) {
        v.hoverBox = -1;
        v.requestDraw();
      }
    }
  });

  v.listen<MouseEvent>(canvas, "dblclick", (e) => {
    const [x, y] = local(e, canvas);
    const h = v.hit(x, y);
    if (h && h.kind === "box") v.sel.zoomTo();
  });
}

/** One step of a drag that has moved: resize the label column, pan, or grow the range. */
function dragTo(v: ProfView, drag: Drag, x: number, y: number, e: PointerEvent): void {
  if (drag.mode === "gutter") {
    // Widen or narrow the label column; the plot (and the memory panel) follow.
    setGutterWidth(x, v.timeline.width);
    v.root.dataset.gutter = String(GUTTER_W); // the user's width from now on: no longer fitted to the names
    v.resize();
  } else if (drag.mode === "pan") {
    v.setView(panPixels(drag.view, x - drag.x0, v.plotWidth, v.bounds));
    v.tlScroll.scrollTop -= e.movementY;
  } else {
    v.sel.range = [drag.t0, timeAtX(v, Math.max(GUTTER_W, x))];
    // A tall drag selects the lanes it crosses; a flat one selects every track.
    v.sel.rangeTracks = Math.abs(y - drag.y0) >= 8
      ? tracksBetween(v.layout, drag.y0 - AXIS_H + v.scrollY, y - AXIS_H + v.scrollY) : null;
    v.requestDraw();
  }
}

/** A click: toggle a group, zoom into a merged box, select an event, or clear the selection. */
function click(v: ProfView, x: number, y: number): void {
  const h = v.hit(x, y);
  if (!h) return;
  if (h.kind === "group") {
    v.toggleGroup(h.group);
    return;
  }
  if (h.kind === "empty") {
    if (v.sel.has()) v.sel.select(null);
    return;
  }
  const s = v.drawn;
  const b = h.box;
  if (h.id < 0) {
    // A merged box: zoom into it so its events separate.
    v.setView(zoomToRange(s.start[b], s.start[b] + s.dur[b], v.bounds));
    return;
  }
  v.sel.select({ id: h.id, track: s.track[b], depth: s.depth[b], start: s.start[b], dur: s.dur[b] });
}

/** Hover over the timeline: cursor, hover outline and the tooltip of a box or group header. */
function hoverTimeline(v: ProfView, x: number, y: number, e: MouseEvent): void {
  const canvas = v.timeline.canvas;
  if (nearGutterEdge(x)) {
    canvas.style.cursor = "col-resize";
    v.tooltip.hide();
    return;
  }
  if (x < GUTTER_W && y >= AXIS_H) {
    gutterHover(v, y, e);
    return;
  }
  const h = v.hit(x, y);
  const box = h && h.kind === "box" ? h.box : -1;
  if (box !== v.hoverBox) {
    v.hoverBox = box;
    v.requestDraw();
  }
  canvas.style.cursor = h && h.kind === "group" ? "pointer" : box >= 0 ? "pointer" : "default";
  if (box < 0) {
    if (h && h.kind === "group" && v.layout.groups[h.group]?.collapsed) {
      // a collapsed group's busy lane: what the group is and its totals
      const [gx, gy] = local(e, v.root);
      v.tooltip.show(gx, gy, groupLines(v, v.layout.groups[h.group]));
    } else v.tooltip.hide();
    return;
  }
  const s = v.drawn;
  const [rx, ry] = local(e, v.root);
  if (s.id[box] < 0) {
    v.tooltip.show(rx, ry, [
      `${s.count[box].toLocaleString()} events (merged)`,
      `span ${formatTime(s.dur[box], v.unit)} · busy ${formatTime(s.busy[box], v.unit)}`,
      "click to zoom in",
    ]);
    return;
  }
  const id = s.id[box];
  const base = { id, name: s.labels[s.label[box]] ?? "", start: s.start[box], dur: s.dur[box] };
  const token = v.tooltip.show(rx, ry, eventLines(base, v.unit));
  void v.events.get(id).then((info) => {
    if (info) v.tooltip.update(token, eventLines({ ...base, ...info }, v.unit));
  });
}

/** Full track / process names in a tooltip (the gutter truncates them). */
function gutterHover(v: ProfView, y: number, e: MouseEvent): void {
  const canvas = v.timeline.canvas;
  if (v.hoverBox !== -1) {
    v.hoverBox = -1;
    v.requestDraw();
  }
  const row = rowAt(v.layout, y - AXIS_H + v.scrollY);
  const [rx, ry] = local(e, v.root);
  canvas.style.cursor = row && row.kind === "group" ? "pointer" : "default";
  if (!row) {
    v.tooltip.hide();
    return;
  }
  if (row.kind === "group") {
    const g = v.layout.groups[row.group];
    v.tooltip.show(rx, ry, groupLines(v, g));
    return;
  }
  const t = v.tracks[row.track];
  const overlap = t ? overlapNote(t.name) : null;
  if (t) v.tooltip.show(rx, ry, [t.name, t.label, ...(overlap ? [overlap] : []),
    `depth ${row.depth} · drag the column's edge to widen it`]);
}

/** Tooltip of a group header: its full name, a rank's clock offset, its busy lane's totals. */
function groupLines(view: ProfView, g: Group): string[] {
  const lines: string[] = [];
  if (g.kind === "section") {
    lines.push(g.name);
    const note = g.rank === undefined ? undefined : view.notes.get(g.rank);
    if (note) {
      const align = view.info.align;
      lines.push(align && Number.isFinite(Number(align.step))
        ? `aligned on ProfilerStep#${align.step}: ${note} (starts at ${formatTime(Number(align.at), view.unit)})`
        : `own clock origin vs the earliest rank's: ${note}`);
    }
  } else {
    lines.push(g.name && g.name !== g.process ? `${g.name} (process ${g.process || "\"\""})` : g.process || "(no process)");
  }
  const lane = view.summary.get(g.key);
  if (lane && g.collapsed) {
    lines.push(`busy ${formatTime(lane.busy, view.unit)} · communication ${formatTime(lane.comm, view.unit)}`);
  }
  lines.push(`${g.tracks.length} track(s) · click to ${g.collapsed ? "expand" : "collapse"}`);
  return lines;
}

/** Memory panel: hover shows the values, click lists what is live then; drag pans, wheel zooms. */
function attachMemoryInput(v: ProfView, p: Pointer): void {
  const mem = v.memory.canvas;
  let memDrag: { x0: number; view: typeof v.view; moved: boolean } | null = null;
  v.listen<PointerEvent>(mem, "pointerdown", (e) => {
    if (e.button !== 0) return;
    v.root.focus({ preventScroll: true });
    memDrag = { x0: local(e, mem)[0], view: v.view, moved: false };
    mem.setPointerCapture(e.pointerId);
  });
  v.listen<PointerEvent>(mem, "pointermove", (e) => {
    const [x] = local(e, mem);
    p.mouseX = x;
    if (!memDrag) {
      if (x < GUTTER_W) {
        v.tooltip.hide();
        v.memory.hoverTime = null;
      } else {
        const t = v.memory.timeAt(v.view, x);
        const [rx, ry] = local(e, v.root);
        v.tooltip.show(rx, ry, v.memory.linesAt(v.view, t, v.unit));
        v.memory.hoverTime = t;
      }
      v.requestDraw();
      return;
    }
    if (Math.abs(x - memDrag.x0) > CLICK_SLOP) memDrag.moved = true;
    if (memDrag.moved) v.setView(panPixels(memDrag.view, x - memDrag.x0, v.plotWidth, v.bounds));
  });
  v.listen<PointerEvent>(mem, "pointerup", (e) => {
    const d = memDrag;
    memDrag = null;
    if (mem.hasPointerCapture(e.pointerId)) mem.releasePointerCapture(e.pointerId);
    const [x] = local(e, mem);
    if (d && !d.moved && x >= GUTTER_W) void v.showLive(v.memory.timeAt(v.view, x));
  });
  v.listen<PointerEvent>(mem, "pointerleave", () => {
    v.tooltip.hide();
    v.memory.hoverTime = null;
    v.requestDraw();
  });
  v.listen<WheelEvent>(mem, "wheel", (e) => {
    if (!ownWheel(v, e)) return;
    p.mouseX = local(e, mem)[0];
    v.setView(zoomAt(v.view, wheelFactor(e.deltaY, e.deltaMode), anchor(v, p), v.bounds));
  }, { passive: false });
}

/** Keys while the view has focus: pan/zoom keys, f zooms to the selection, Escape clears it. */
function attachKeys(v: ProfView, p: Pointer): void {
  v.listen<KeyboardEvent>(v.root, "keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target as HTMLElement;
    if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) return;
    const act = keyAction(e.key, e.shiftKey);
    if (act) {
      v.setView(applyKey(v.view, act, anchor(v, p), v.bounds));
    } else if (e.key === "f" || e.key === "F") {
      v.sel.zoomTo();
    } else if (e.key === "Escape") {
      v.sel.select(null);
    } else return;
    e.preventDefault();
    e.stopPropagation();
  });
}
