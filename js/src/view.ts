// One rendered view of the widget: DOM, state, trait handlers, kernel requests and drawing.
// Input handling (mouse, wheel, keys) lives in input.ts.

import type { AnyModel, Experimental } from "@anywidget/types";
import type { TimeUnit } from "./axis";
import { decodeFrame, emptyFrame, type Frame } from "./codec";
import { el, renderLegend, skeleton } from "./dom";
import { boxCenter, buildBoxIndex, hitTest, type BoxIndex, type Hit } from "./hittest";
import { GroupControls } from "./groups";
import { ROW_H, computeLayout, parseTracks, type Layout, type TrackInfo } from "./layout";
import { allocSlices, slicesFromFrame, type Slices } from "./lod";
import { MemoryPanel, type LiveReply } from "./memory";
import { renderNodes } from "./nodes";
import { FrameProbe } from "./probe";
import { LatestWins, Rpc, debounce } from "./rpc";
import { selectionValue } from "./selection";
import { SliceSource, detailCovers, detailRequest, type DetailRequest } from "./source";
import { parseRanksInfo, sectionNotes, summaryFromFrame, type SummaryLane } from "./summary";
import { TablePanel, type TableRow } from "./table";
import { parseLegend, readTheme, type LegendEntry, type Theme } from "./theme";
import { AXIS_H, GUTTER_W, TimelineRenderer, plotWidth, type Flow, type SelectedBox } from "./timeline";
import { EventCache, Tooltip, type EventInfo } from "./tooltip";
import { boundsFor, clampView, sameView, zoomToRange, type Bounds, type View } from "./viewport";

export interface Info {
  format?: string; source?: string; time_unit?: string; duration?: number; base_time_ns?: number;
  /** The first event's start when negative (ranks aligned on a step), else 0. */
  start?: number;
  event_count?: number; color_by?: string; legend?: unknown; has_memory?: boolean;
  has_allocations?: boolean; has_flows?: boolean; static?: boolean; message?: string;
  /** Several ranks (a TraceSet): each rank's clock offset; the step they are aligned on. */
  ranks?: unknown; align?: { step?: number; at?: number } | null;
}

const MAX_TL_H = 460;

interface DetailJob extends DetailRequest { queued: number }
interface DetailReply { t0?: number; t1?: number; width?: number; kernel_ms?: number; kernel_at?: number }

export class ProfView {
  readonly root: HTMLDivElement;
  readonly tlScroll: HTMLDivElement;
  readonly timeline: TimelineRenderer;
  readonly memory: MemoryPanel;
  readonly table: TablePanel;
  readonly tooltip: Tooltip;
  private statusEl: HTMLDivElement;
  private legendEl: HTMLDivElement;
  private tlSpacer: HTMLDivElement;
  private tlEl: HTMLDivElement;
  private messageEl: HTMLDivElement;
  private nodesEl: HTMLDivElement;
  private colorBy: HTMLSelectElement;
  private resetEl: HTMLButtonElement;
  readonly rpc: Rpc;
  readonly events: EventCache;
  private probe: FrameProbe;
  private cleanups: Array<() => void> = [];

  info: Info = {};
  unit: TimeUnit = "ns";
  tracks: TrackInfo[] = [];
  layout: Layout = computeLayout([], new Set());
  readonly groups: GroupControls;
  summary = new Map<string, SummaryLane>();
  notes = new Map<string, string>();
  legend: LegendEntry[] = [];
  theme: Theme;
  bounds: Bounds = boundsFor(1, "ns");
  view: View = { start: 0, end: 1 };
  private source = new SliceSource();
  drawn: Slices = allocSlices(0);
  private drawnKey = "";
  private boxIndex: BoxIndex | null = null;
  private highlight: Set<number> | null = null;
  private zoomToken: unknown = undefined;

  selected: SelectedBox | null = null;
  range: [number, number] | null = null;
  /** Tracks of a shift-drag rectangle (null: all tracks). */
  rangeTracks: number[] | null = null;
  flows: Flow[] = [];
  hoverBox = -1;
  scrollY = 0;
  private raf = 0;
  private dataDirty = true;

  constructor(private model: AnyModel, parent: HTMLElement, experimental: Experimental | undefined) {
    const dom = skeleton();
    this.root = dom.root;
    this.colorBy = dom.colorBy;
    this.resetEl = dom.reset;
    this.groups = new GroupControls(model, dom.expand, dom.ranks, () => this.tracks, () => this.relayout());
    this.statusEl = dom.status;
    this.legendEl = dom.legend;
    this.messageEl = dom.message;
    this.tlEl = dom.timeline;
    this.tlScroll = dom.tlScroll;
    this.tlSpacer = dom.tlSpacer;
    this.timeline = new TimelineRenderer(dom.canvas);
    this.memory = new MemoryPanel(this.root);
    this.rpc = new Rpc(experimental as { invoke?: never } | undefined, false, (t, k) => this.status(t, k), 30000,
      { onKernel: () => this.showKernel() });
    this.table = new TablePanel(this.root, this.rpc, (row) => this.onTableRow(row));
    this.nodesEl = el("div", "pv-nodes", this.root);
    this.tooltip = new Tooltip(this.root);
    this.events = new EventCache(async (id) => {
      const r = await this.rpc.call<EventInfo>("_event", { id });
      return r ? r.msg : null;
    });
    this.probe = new FrameProbe(this.root, (id) => this.locate(id), () => ({ ...this.view }));
    parent.appendChild(this.root);
    this.theme = readTheme(this.root);

    this.listen(dom.reset, "click", () => this.setView({ start: this.bounds.min, end: this.bounds.max }));
    this.listen(this.colorBy, "change", () => {
      this.model.set("color_by", this.colorBy.value);
      this.model.save_changes();
    });
    this.groups.attach((target, type, fn) => this.listen(target, type, fn));
    this.listen(this.tlScroll, "scroll", () => {
      this.scrollY = this.tlScroll.scrollTop;
      this.requestDraw();
    });
    for (const name of ["_info", "_tracks", "_overview", "_memory", "_nodes", "_highlight", "_zoom_request", "color_by",
      "_summary", "collapsed_groups", "shown_ranks"]) {
      const cb = (): void => this.onTrait(name);
      model.on(`change:${name}`, cb);
      this.cleanups.push(() => model.off(`change:${name}`, cb));
    }
    // Browser zoom changes devicePixelRatio and fires a window resize (not always a ResizeObserver one).
    this.listen(window, "resize", () => this.resize());
    const ro = new ResizeObserver(() => this.resize());
    ro.observe(this.root);
    this.cleanups.push(() => ro.disconnect());
    const mq = typeof matchMedia === "function" ? matchMedia("(prefers-color-scheme: dark)") : null;
    if (mq) this.listen(mq, "change", () => this.refreshTheme());
    // JupyterLab switches themes by swapping CSS variables and body attributes.
    const mo = new MutationObserver(() => this.refreshTheme());
    mo.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light", "data-jp-theme-name", "class"] });
    this.cleanups.push(() => mo.disconnect());
    this.loadAll();
  }

  /** addEventListener with automatic removal on dispose. */
  listen<E extends Event = Event>(target: EventTarget, type: string, fn: (e: E) => void, opts?: AddEventListenerOptions): void {
    const h = fn as EventListener;
    target.addEventListener(type, h, opts);
    this.cleanups.push(() => target.removeEventListener(type, h, opts));
  }

  dispose(): void {
    cancelAnimationFrame(this.raf);
    this.syncView.cancel();
    this.syncSelection.cancel();
    this.disposed = true;
    this.fetchDetail.cancel();
    this.detailQueue.dispose();
    this.refreshWindowTable.cancel();
    for (const c of this.cleanups.splice(0)) c();
    this.table.dispose();
    this.rpc.dispose();
    this.probe.dispose();
    this.tooltip.hide();
    this.root.remove();
  }

  status(text: string, kind: "info" | "error" = "info"): void {
    this.statusEl.textContent = text;
    this.statusEl.classList.toggle("pv-error", kind === "error");
  }

  refreshTheme(): void {
    this.theme = readTheme(this.root);
    this.requestDraw();
  }

  // ---- traits -------------------------------------------------------------------------

  private loadAll(): void {
    this.loadInfo();
    this.groups.load();
    this.loadSummary();
    this.loadTracks();
    this.loadOverview();
    this.loadMemory();
    this.loadHighlight();
    this.loadNodes();
    const v = this.model.get("_view") as Partial<View> | undefined;
    const z = this.model.get("_zoom_request") as { start?: number; end?: number; token?: unknown } | undefined;
    this.zoomToken = z?.token;
    const full = { start: this.bounds.min, end: this.bounds.max };
    const saved = v && Number(v.end) > Number(v.start) ? clampView({ start: Number(v.start), end: Number(v.end) }, this.bounds) : null;
    // A zoom request made before the view was shown wins over a whole-trace _view.
    if (z && Number(z.end) > Number(z.start) && (!saved || sameView(saved, full))) {
      this.view = zoomToRange(Number(z.start), Number(z.end), this.bounds, 0);
    } else this.view = saved ?? full;
    this.resize();
    this.afterViewChange(false);
  }

  private onTrait(name: string): void {
    if (name === "_info") this.loadInfo();
    else if (name === "_tracks") this.loadTracks();
    else if (name === "_overview") {
      this.loadOverview();
      // e.g. recoloured: the old detail is gone, ask again for this view
      this.detailSent = null;
      this.detailForce = true;
      this.fetchDetail();
    }
    else if (name === "_memory") this.loadMemory();
    else if (name === "_highlight") this.loadHighlight();
    else if (name === "_nodes") this.loadNodes();
    else if (name === "_summary") this.loadSummary();
    else if (name === "collapsed_groups" || name === "shown_ranks") {
      this.groups.load();
      this.relayout();
    }
    else if (name === "color_by") this.colorBy.value = String(this.model.get("color_by") ?? "category");
    else if (name === "_zoom_request") {
      const z = this.model.get("_zoom_request") as { start?: number; end?: number; token?: unknown } | undefined;
      if (z && z.token !== this.zoomToken && Number(z.end) > Number(z.start)) {
        this.zoomToken = z.token;
        this.setView(zoomToRange(Number(z.start), Number(z.end), this.bounds, 0));
      }
    }
    this.dataDirty = true;
    this.requestDraw();
  }

  private loadInfo(): void {
    this.info = (this.model.get("_info") as Info | undefined) ?? {};
    this.unit = this.info.time_unit === "step" ? "step" : "ns";
    this.table.unit = this.unit;
    this.legend = parseLegend(this.info.legend);
    this.bounds = boundsFor(Number(this.info.duration) || this.source.overviewEnd || 1, this.unit,
      Number(this.info.start ?? 0));
    this.view = clampView(this.view, this.bounds);
    this.colorBy.value = String(this.model.get("color_by") ?? this.info.color_by ?? "category");
    if (this.info.static) this.rpc.dispose();
    this.showKernel();
    const message = typeof this.info.message === "string" ? this.info.message : "";
    this.messageEl.textContent = message;
    this.messageEl.style.display = message ? "" : "none";
    const noEvents = this.info.event_count === 0;
    this.tlEl.style.display = noEvents ? "none" : "";
    this.legendEl.style.display = noEvents ? "none" : "";
    this.resetEl.style.display = noEvents ? "none" : "";
    if (noEvents) this.probe.painted();
    renderLegend(this.legendEl, this.legend);
    this.notes = sectionNotes(parseRanksInfo(this.info.ranks), this.info.align, this.unit);
  }

  private loadSummary(): void {
    this.summary = summaryFromFrame(this.frame("_summary"));
  }

  /**
   * `data-static` and the colour-by switch: static when `_info.static` (save_html) or when no kernel
   * answers (a notebook reopened from its saved widget state: the model has no comm).
   */
  private showKernel(): void {
    const noKernel = Boolean(this.info.static) || this.rpc.kernel === "none";
    this.root.dataset.static = noKernel ? "1" : "0";
    const hasColorBy = typeof this.model.get("color_by") === "string" && !noKernel && this.info.event_count !== 0;
    this.colorBy.style.display = hasColorBy ? "" : "none";
  }

  private loadNodes(): void {
    const n = this.info.event_count === 0 ? renderNodes(this.nodesEl, this.frame("_nodes")) : 0;
    if (n === 0) this.nodesEl.replaceChildren();
    this.nodesEl.style.display = n ? "" : "none";
    this.table.el.style.display = this.info.event_count === 0 ? "none" : "";
  }

  private loadTracks(): void {
    this.tracks = parseTracks(this.model.get("_tracks"));
    this.relayout();
  }

  relayout(): void {
    this.layout = computeLayout(this.tracks, this.groups.collapsed, this.groups.shown);
    this.groups.update();
    this.root.dataset.collapsed = String(this.layout.groups.filter((g) => g.collapsed).length);
    this.resize();
    this.requestDraw();
  }

  private frame(name: string): Frame {
    try {
      return decodeFrame(this.model.get(name) as DataView | undefined);
    } catch (err) {
      this.status(`${name}: ${String(err)}`, "error");
      return emptyFrame();
    }
  }

  private loadOverview(): void {
    this.source.setOverview(slicesFromFrame(this.frame("_overview")));
    if (!(Number(this.info.duration) > 0) && this.source.overviewEnd > 0) {
      this.bounds = boundsFor(this.source.overviewEnd, this.unit);
    }
    this.dataDirty = true;
  }

  private loadMemory(): void {
    this.memory.setOverview(this.frame("_memory"));
    this.resize();
  }

  private loadHighlight(): void {
    const f = this.frame("_highlight");
    const ids = f.columns.id;
    this.highlight = ids && ids.length ? new Set(Array.from(ids)) : null;
    this.root.dataset.highlight = String(this.highlight?.size ?? 0);
    this.dataDirty = true;
  }

  // ---- view, selection ---------------------------------------------------------------

  get plotWidth(): number {
    return plotWidth(this.timeline.width);
  }

  setView(v: View, sync = true): void {
    const nv = clampView(v, this.bounds);
    if (sameView(nv, this.view)) return;
    this.view = nv;
    this.afterViewChange(sync);
  }

  private afterViewChange(sync: boolean): void {
    this.root.dataset.viewStart = String(this.view.start);
    this.root.dataset.viewEnd = String(this.view.end);
    this.dataDirty = true;
    this.requestDraw();
    this.fetchDetail();
    if (sync) this.syncView();
    if (!this.hasSelection()) this.refreshWindowTable();
  }

  private syncView = debounce(() => {
    this.model.set("_view", { start: this.view.start, end: this.view.end });
    this.model.save_changes();
  }, 150);

  private keepTable = false;
  private syncSelection = debounce(() => {
    this.model.set("_selection", selectionValue(this.selected?.id ?? null, this.range, this.rangeTracks));
    this.model.save_changes();
    // After the selection reached the kernel (same channel, in order).
    if (!this.keepTable) this.updateTable(true);
  }, 150);

  private refreshWindowTable = debounce(() => this.updateTable(false), 300);

  hasSelection(): boolean {
    return this.selected !== null || this.range !== null;
  }

  private updateTable(force: boolean): void {
    const q = this.hasSelection()
      ? { mode: "selection" as const, t0: this.view.start, t1: this.view.end,
          selection: selectionValue(this.selected?.id ?? null, this.range, this.rangeTracks) }
      : { mode: "window" as const, t0: this.view.start, t1: this.view.end };
    this.table.selectedId = this.selected?.id ?? -1;
    this.table.setQuery(q, force);
  }

  /**
   * Select one slice, a time range (optionally on some tracks) or nothing. The table follows
   * the selection, except when the click came from the table itself (`keepTable`).
   */
  select(box: SelectedBox | null, range: [number, number] | null = null, tracks: number[] | null = null,
    keepTable = false): void {
    this.selected = box;
    this.range = range;
    this.rangeTracks = range ? tracks : null;
    this.keepTable = keepTable;
    this.flows = [];
    this.root.dataset.selected = box ? String(box.id) : range ? "range" : "";
    this.syncSelection();
    this.requestDraw();
    if (box) {
      void this.events.get(box.id).then((info) => {
        if (!info || this.selected?.id !== box.id) return;
        this.flows = Array.isArray(info.flows) ? info.flows : [];
        if (typeof info.depth === "number" && typeof info.track === "number") {
          this.selected = { id: box.id, track: info.track, depth: info.depth,
            start: Number(info.start ?? box.start), dur: Number(info.dur ?? box.dur) };
        }
        this.requestDraw();
      });
    }
  }

  zoomToSelection(): void {
    if (this.selected) this.setView(zoomToRange(this.selected.start, this.selected.start + this.selected.dur, this.bounds));
    else if (this.range) this.setView(zoomToRange(this.range[0], this.range[1], this.bounds, 0.02));
  }

  /** A table row: select and zoom to its event, keeping the list as it is (no new table query). */
  private onTableRow(row: TableRow): void {
    this.refreshWindowTable.cancel(); // a pending window refresh would replace the list
    this.select({ id: row.id, track: row.track, depth: 0, start: row.start, dur: row.dur }, null, null, true);
    this.setView(zoomToRange(row.start, row.start + row.dur, this.bounds));
    this.table.selectedId = row.id;
    this.table.renderRows();
  }

  toggleGroup(g: number): void {
    const group = this.layout.groups[g];
    if (!group) return;
    this.groups.toggle(group.key);
  }

  // ---- kernel: detail and live memory ------------------------------------------------

  /** The last `_detail` window sent (in flight or answered); null after a failure or a new overview. */
  private detailSent: DetailRequest | null = null;
  private detailForce = false;
  private disposed = false;
  /** One `_detail` in flight at a time; a newer view replaces the one waiting (latest wins). */
  private detailQueue = new LatestWins<DetailJob>((job) => this.sendDetail(job));
  private fetchDetail = debounce(() => this.queueDetail(), 60);

  private queueDetail(): void {
    if (!this.rpc.available || this.disposed) return;
    const pw = this.plotWidth;
    const force = this.detailForce;
    this.detailForce = false;
    if (!force && this.detailSent && detailCovers(this.detailSent, this.view, this.bounds.min, this.bounds.max, pw)) {
      this.detailQueue.clear(); // what is in flight (or drawn) serves this view: nothing to wait for
      return;
    }
    const req = detailRequest(this.view, this.bounds.min, this.bounds.max, pw);
    this.detailQueue.request({ ...req, queued: performance.now() });
  }

  /** One round trip: the slices frame and (when the trace has memory data) the memory frame. */
  private async sendDetail(job: DetailJob): Promise<void> {
    if (!this.rpc.available || this.disposed) return;
    const { t0, t1, width } = job;
    const memory = this.memory.hasData;
    const req = { t0, t1, width };
    this.detailSent = req;
    const sent = performance.now();
    const r = await this.rpc.call<DetailReply>("_detail", { t0, t1, width, memory }, "detail");
    const arrived = performance.now();
    if (this.disposed) return;
    if (!r) {
      if (this.detailSent === req) this.detailSent = null;
      this.probe.detail(arrived - sent); // failures count too (error reply or timeout)
      return;
    }
    const [slicesBuf, memBuf] = r.buffers;
    if (slicesBuf) {
      try {
        const d = slicesFromFrame(decodeFrame(slicesBuf));
        d.t0 = Number(r.msg.t0 ?? t0);
        d.t1 = Number(r.msg.t1 ?? t1);
        this.source.setDetail(d);
        this.dataDirty = true;
        this.status("");
      } catch (err) {
        this.status(`_detail: ${String(err)}`, "error");
      }
    }
    if (memory && memBuf) {
      try {
        this.memory.setDetail(decodeFrame(memBuf));
      } catch (err) {
        this.status(`_detail (memory): ${String(err)}`, "error");
      }
    }
    const done = performance.now();
    this.probe.detail(done - sent);
    this.probe.log({
      sent: performance.timeOrigin + sent, waited: sent - job.queued, arrived: arrived - sent, done: done - sent,
      bytes: slicesBuf?.byteLength ?? 0, memBytes: memBuf?.byteLength ?? 0,
      kernelMs: Number(r.msg.kernel_ms ?? NaN), kernelAt: Number(r.msg.kernel_at ?? NaN),
      stale: t0 <= this.view.start && t1 >= this.view.end ? 0 : 1,
    });
    this.requestDraw();
  }

  async showLive(time: number): Promise<void> {
    this.memory.liveTime = time;
    this.requestDraw();
    if (!this.rpc.available) {
      this.memory.showLive(null, this.unit, "Live allocations need a running kernel");
      return;
    }
    const r = await this.rpc.call<LiveReply>("_live", { time }, "live");
    if (r) this.memory.showLive(r.msg, this.unit);
  }

  // ---- geometry, hit testing, drawing ------------------------------------------------

  resize(): void {
    if (this.root.isConnected) this.theme = readTheme(this.root); // variables resolve only once attached
    const w = this.root.clientWidth || 800;
    const dpr = window.devicePixelRatio || 1;
    const content = this.layout.height + AXIS_H + 4;
    const css = parseFloat(getComputedStyle(this.root).getPropertyValue("--pv-timeline-max-height"));
    const h = Math.max(AXIS_H + 24, Math.min(css > 0 ? css : MAX_TL_H, content));
    this.tlScroll.style.height = `${h}px`;
    const sw = this.tlScroll.offsetWidth - this.tlScroll.clientWidth; // scrollbar
    this.timeline.resize(w - (content > h ? Math.max(sw, 0) : 0), h, dpr);
    this.tlSpacer.style.height = `${Math.max(0, content - h)}px`;
    this.memory.resize(this.timeline.width, dpr); // same plot width: x positions line up
    this.dataDirty = true;
    this.requestDraw();
  }

  /** Boxes to draw: the detail when it covers the view, else the overview; re-merged for the view. */
  private prepare(): void {
    const { start, end } = this.view;
    const pw = this.plotWidth;
    const { slices, fromDetail } = this.source.boxes(this.view, pw);
    this.drawn = slices;
    this.timeline.setData(this.drawn, this.legend.length, this.highlight);
    this.boxIndex = null;
    this.hoverBox = -1;
    this.root.dataset.source = fromDetail ? "detail" : "overview";
    this.drawnKey = `${start}:${end}:${pw}`;
  }

  hit(x: number, y: number): Hit {
    if (y < AXIS_H) return null;
    if (x < GUTTER_W) {
      const h = hitTest(this.drawn, this.index(), this.layout, this.view.start - 1, y - AXIS_H + this.scrollY);
      return h && h.kind === "group" ? h : null;
    }
    const px = (this.view.end - this.view.start) / this.plotWidth;
    const t = this.view.start + (x - GUTTER_W) * px;
    return hitTest(this.drawn, this.index(), this.layout, t, y - AXIS_H + this.scrollY, 2 * px);
  }

  private index(): BoxIndex {
    if (!this.boxIndex) this.boxIndex = buildBoxIndex(this.drawn);
    return this.boxIndex;
  }

  requestDraw(): void {
    if (this.raf) return;
    this.raf = requestAnimationFrame(() => {
      this.raf = 0;
      this.draw();
    });
  }

  draw(): void {
    const t0 = performance.now();
    if (this.dataDirty || this.drawnKey !== `${this.view.start}:${this.view.end}:${this.plotWidth}`) {
      this.dataDirty = false;
      this.prepare();
      this.root.dataset.prepareMs = (performance.now() - t0).toFixed(2);
    }
    this.timeline.draw({
      view: this.view, unit: this.unit, tracks: this.tracks, layout: this.layout, legend: this.legend,
      theme: this.theme, scrollY: this.scrollY, selected: this.selected, hoverBox: this.hoverBox,
      range: this.range, rangeTracks: this.rangeTracks, flows: this.flows,
      summary: this.summary, notes: this.notes,
    });
    this.memory.draw(this.view, this.theme, this.range);
    this.root.dataset.boxes = String(this.timeline.boxesDrawn);
    this.root.dataset.axisOrigin = this.timeline.axisOrigin;
    this.root.dataset.drawMs = this.timeline.timings.map((x) => x.toFixed(1)).join(",");
    this.probe.record(performance.now() - t0);
    this.probe.painted();
  }

  /** Client (CSS px) centre of the visible part of event `id`'s own box, or null. */
  locate(id: number): { x: number; y: number } | null {
    if (this.dataDirty) this.prepare();
    const p = boxCenter(this.drawn, this.layout, this.view, id, {
      x0: GUTTER_W, width: this.timeline.width, top: AXIS_H, height: this.timeline.height,
      scrollY: this.scrollY, rowH: ROW_H,
    });
    if (!p) return null;
    const r = this.timeline.canvas.getBoundingClientRect();
    return { x: r.left + p.x, y: r.top + p.y };
  }
}
