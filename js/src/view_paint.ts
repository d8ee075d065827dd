// The view's drawing loop (view.ts): the canvases sized to the view's element, one draw per
// animation frame, the boxes to draw prepared again when the data or the view changed, and hit
// testing and locating on what was drawn. What is drawn (view, lanes, theme, selection) is the
// view's own state, read through PaintHost.

import type { TimeUnit } from "./axis";
import { boxCenter, buildBoxIndex, hitTest, type BoxIndex, type Hit } from "./hittest";
import { ROW_H, type Layout, type TrackInfo } from "./layout";
import { labelColumnWidth } from "./lane_labels";
import { laneNames } from "./labels";
import type { Slices } from "./lod";
import type { MemoryPanel } from "./memory";
import type { DrawnPanel } from "./panel";
import type { FrameProbe } from "./probe";
import { AXIS_H, GUTTER_W, plotWidth, setGutterWidth, type Flow, type Shading } from "./scene";
import type { ViewSelection } from "./selection";
import type { SliceSource } from "./source";
import type { SummaryLane } from "./summary";
import { readTheme, type LegendEntry, type Theme } from "./theme";
import type { TimelineRenderer } from "./timeline";
import type { View } from "./viewport";

const MAX_TL_H = 460;

/** What the painter reads of its view; it writes `theme` (resolved once attached), `drawn` and `hoverBox`. */
export interface PaintHost {
  readonly root: HTMLDivElement;
  readonly tlScroll: HTMLDivElement;
  readonly timeline: TimelineRenderer;
  readonly memory: MemoryPanel;
  readonly panels: Map<string, DrawnPanel>;
  readonly source: SliceSource;
  readonly sel: ViewSelection;
  readonly probe: FrameProbe;
  readonly view: View;
  readonly unit: TimeUnit;
  readonly tracks: TrackInfo[];
  readonly layout: Layout;
  readonly legend: LegendEntry[];
  readonly highlight: Set<number> | null;
  readonly split: { timeline?: number };
  readonly scrollY: number;
  readonly pathArrows: Flow[];
  readonly summary: Map<string, SummaryLane>;
  readonly notes: Map<number, string>;
  readonly shading: Shading | null;
  theme: Theme;
  drawn: Slices;
  hoverBox: number;
}

export class ViewPainter {
  private raf = 0;
  private dirty = true;
  private drawnKey = "";
  private boxIndex: BoxIndex | null = null;

  constructor(private readonly v: PaintHost, private readonly tlSpacer: HTMLDivElement) {}

  /** The boxes must be prepared again before the next draw (new data, a new highlight...). */
  invalidate(): void {
    this.dirty = true;
  }

  dispose(): void {
    cancelAnimationFrame(this.raf);
  }

  get plotWidth(): number {
    return plotWidth(this.v.timeline.width);
  }

  resize(): void {
    const v = this.v;
    if (v.root.isConnected) v.theme = readTheme(v.root); // variables resolve only once attached
    const w = v.root.clientWidth || 800;
    const dpr = window.devicePixelRatio || 1;
    const content = v.layout.height + AXIS_H + 4;
    const css = parseFloat(getComputedStyle(v.root).getPropertyValue("--pv-timeline-max-height"));
    const h = v.split.timeline !== undefined ? Math.max(AXIS_H + 24, v.split.timeline)
      : Math.max(AXIS_H + 24, Math.min(css > 0 ? css : MAX_TL_H, content));
    v.tlScroll.style.height = `${h}px`;
    const sw = v.tlScroll.offsetWidth - v.tlScroll.clientWidth; // scrollbar
    const tw = w - (content > h ? Math.max(sw, 0) : 0);
    // the label column fits its lanes' names (up to a cap) until the user drags its edge
    if (!v.root.dataset.gutter) {
      setGutterWidth(labelColumnWidth(laneNames(v.layout, v.tracks), (t) => v.timeline.measure(t, v.theme.font)), tw);
    }
    v.timeline.resize(tw, h, dpr);
    this.tlSpacer.style.height = `${Math.max(0, content - h)}px`;
    v.memory.resize(v.timeline.width, dpr); // same plot width: x positions line up
    for (const panel of v.panels.values()) panel.resize?.(w);
    this.dirty = true;
    this.request();
  }

  /** Boxes to draw: the detail when it covers the view, else the overview; re-merged for the view. */
  private prepare(): void {
    const v = this.v;
    const { start, end } = v.view;
    const pw = this.plotWidth;
    const { slices, fromDetail } = v.source.boxes(v.view, pw);
    v.drawn = slices;
    v.timeline.setData(v.drawn, v.legend.length, v.highlight);
    this.boxIndex = null;
    v.hoverBox = -1;
    v.root.dataset.source = fromDetail ? "detail" : "overview";
    this.drawnKey = `${start}:${end}:${pw}`;
  }

  hit(x: number, y: number): Hit {
    const v = this.v;
    if (y < AXIS_H) return null;
    if (x < GUTTER_W) {
      const h = hitTest(v.drawn, this.index(), v.layout, v.view.start - 1, y - AXIS_H + v.scrollY);
      return h && h.kind === "group" ? h : null;
    }
    const px = (v.view.end - v.view.start) / this.plotWidth;
    const t = v.view.start + (x - GUTTER_W) * px;
    return hitTest(v.drawn, this.index(), v.layout, t, y - AXIS_H + v.scrollY, 2 * px);
  }

  private index(): BoxIndex {
    if (!this.boxIndex) this.boxIndex = buildBoxIndex(this.v.drawn);
    return this.boxIndex;
  }

  request(): void {
    if (this.raf) return;
    this.raf = requestAnimationFrame(() => {
      this.raf = 0;
      this.draw();
    });
  }

  draw(): void {
    const v = this.v;
    const t0 = performance.now();
    if (this.dirty || this.drawnKey !== `${v.view.start}:${v.view.end}:${this.plotWidth}`) {
      this.dirty = false;
      this.prepare();
      v.root.dataset.prepareMs = (performance.now() - t0).toFixed(2);
    }
    v.timeline.draw({
      view: v.view, unit: v.unit, tracks: v.tracks, layout: v.layout, legend: v.legend,
      theme: v.theme, scrollY: v.scrollY, selected: v.sel.selected, hoverBox: v.hoverBox,
      range: v.sel.range, rangeTracks: v.sel.rangeTracks, flows: v.sel.flows, pathFlows: v.pathArrows,
      summary: v.summary, notes: v.notes, shading: v.shading,
    });
    v.root.dataset.shaded = String(v.shading?.drawn ?? 0);
    v.memory.draw(v.view, v.theme, v.sel.range);
    v.root.dataset.boxes = String(v.timeline.boxesDrawn);
    v.root.dataset.axisOrigin = v.timeline.axisOrigin;
    v.root.dataset.drawMs = v.timeline.timings.map((x) => x.toFixed(1)).join(",");
    v.probe.record(performance.now() - t0);
    v.probe.painted();
  }

  /** Client (CSS px) centre of the visible part of event `id`'s own box, or null. */
  locate(id: number): { x: number; y: number } | null {
    const v = this.v;
    if (this.dirty) this.prepare();
    const p = boxCenter(v.drawn, v.layout, v.view, id, {
      x0: GUTTER_W, width: v.timeline.width, top: AXIS_H, height: v.timeline.height,
      scrollY: v.scrollY, rowH: ROW_H,
    });
    if (!p) return null;
    const r = v.timeline.canvas.getBoundingClientRect();
    return { x: r.left + p.x, y: r.top + p.y };
  }
}
