// One rendered view of the widget: state, trait handlers and selection. Input handling (mouse,
// wheel, keys) lives in input.ts, the drawing loop, sizing and hit testing in view_paint.ts, the
// split handles in split.ts, the `_detail` requests in detail.ts, reading the traits in traits.ts
// and the text around the canvases in header.ts.

import type { AnyModel, Experimental } from "@anywidget/types";
import type { TimeUnit } from "./axis";
import type { Frame } from "./codec";
import type { DrawnPanel, PanelHost } from "./panel";
import { PANELS } from "./panels";
import { PanelButtons, type PanelRequest } from "./toolbar";
import type { TraitName } from "./trait_spec";
import { addSplits, loadLayout, type SplitLayout } from "./split";
import { DetailLoader, type DetailHost } from "./detail";
import { skeleton } from "./dom";
import { GroupControls } from "./groups";
import { ViewHeader } from "./header";
import type { Hit } from "./hittest";
import { computeLayout, parseTracks, type Layout, type TrackInfo } from "./layout";
import { allocSlices, slicesFromFrame, type Slices } from "./lod";
import type { LiveReply } from "./live";
import { MemoryPanel } from "./memory";
import { FrameProbe } from "./probe";
import { Rpc, debounce } from "./rpc";
import { GUTTER_W, type Flow } from "./scene";
import { WrapperToggle } from "./wrappers";
import { ViewSelection } from "./selection";
import { SliceSource } from "./source";
import { parseRanksInfo, sectionNotes, summaryFromFrame, type SummaryLane } from "./summary";
import { TablePanel } from "./table";
import { parseLegend, readTheme, type LegendEntry, type Theme } from "./theme";
import { TimelineRenderer } from "./timeline";
import { EventCache, Tooltip, type EventInfo } from "./tooltip";
import { HIGHLIGHT_CLEARED, highlightChip, scrollToTrack } from "./evidence";
import { SearchBox } from "./search";
import { DetailsStrip } from "./details";
import type { SelectedBox, Shading } from "./scene";
import { VIEW_TRAITS, highlightIds, initialView, readFrame, readInfo, zoomRequest, type Info, type ViewTrait } from "./traits";
import { boundsFor, clampView, sameView, zoomToRange, type Bounds, type View } from "./viewport";
import { ViewPainter } from "./view_paint";

export class ProfView implements DetailHost, PanelHost {
  readonly root: HTMLDivElement;
  readonly tlScroll: HTMLDivElement;
  readonly timeline: TimelineRenderer;
  readonly memory: MemoryPanel;
  readonly table: TablePanel;
  /** The panels the registry builds (panels.ts: findings, critical path, icicle), by name. */
  readonly panels = new Map<string, DrawnPanel>();
  /** trait -> the panel that draws it */
  private panelOf = new Map<string, DrawnPanel>();
  private panelButtons: PanelButtons;
  /** The shown critical path's launch / gap / sync edges, drawn as arrows. */
  pathArrows: Flow[] = [];
  /** Intervals shaded on some lanes: the picked gpu_idle finding's idle time (advice.ts). */
  shading: Shading | null = null;
  /** The dragged heights of the timeline and the table (the `split_layout` trait). */
  split: SplitLayout = {};
  readonly tooltip: Tooltip;
  private header: ViewHeader;
  private readonly painter: ViewPainter;
  readonly rpc: Rpc;
  readonly events: EventCache;
  readonly probe: FrameProbe;
  private detail: DetailLoader;
  /** The `/` search box (search.ts) and the selected slice's details strip (details.ts). */
  readonly search: SearchBox;
  readonly details: DetailsStrip;
  private cleanups: Array<() => void> = [];

  info: Info = {};
  unit: TimeUnit = "ns";
  tracks: TrackInfo[] = [];
  layout: Layout = computeLayout([], new Set());
  readonly groups: GroupControls;
  /** The toolbar's "profiler wrappers" switch (`show_wrappers`). */
  readonly wrappers: WrapperToggle;
  summary = new Map<string, SummaryLane>();
  notes = new Map<number, string>();
  legend: LegendEntry[] = [];
  theme: Theme;
  bounds: Bounds = boundsFor(1, "ns");
  view: View = { start: 0, end: 1 };
  readonly source = new SliceSource();
  drawn: Slices = allocSlices(0);
  /** The events the finding or the search highlights (the rest dimmed); null: none. */
  highlight: Set<number> | null = null;
  private zoomToken: unknown = undefined;

  /** The selected slice or range, its flows; the table follows it. */
  readonly sel: ViewSelection = new ViewSelection(this);
  hoverBox = -1;
  scrollY = 0;

  constructor(readonly model: AnyModel, parent: HTMLElement, experimental: Experimental | undefined) {
    const dom = skeleton();
    this.root = dom.root;
    this.header = new ViewHeader(this.root, dom);
    this.groups = new GroupControls(model, dom.expand, dom.ranks, () => this.tracks, () => this.relayout());
    this.tlScroll = dom.tlScroll;
    this.painter = new ViewPainter(this, dom.tlSpacer);
    this.timeline = new TimelineRenderer(dom.canvas);
    this.memory = new MemoryPanel(this.root);
    this.rpc = new Rpc(experimental as { invoke?: never } | undefined, false, (t, k) => this.status(t, k), 30000,
      { onKernel: () => this.showKernel() });
    this.table = new TablePanel(this.root, this.rpc, (row) => this.sel.onTableRow(row));
    for (const m of PANELS) {  // the registry's panels, above the table in its order
      if (!m.create) continue;
      const panel = m.create(this);
      this.panels.set(m.name, panel);
      for (const t of m.traits) this.panelOf.set(t, panel);
      this.root.insertBefore(panel.el, this.table.el);
    }
    this.panelButtons = new PanelButtons(dom.colorBy.parentElement ?? this.root, dom.expand, PANELS, this.panels,
      (request: PanelRequest) => this.send({ _panel_request: request }), (t, k) => this.status(t, k));
    addSplits(this, dom.timeline);
    this.root.appendChild(this.header.nodesEl);
    this.tooltip = new Tooltip(this.root);
    this.events = new EventCache(async (id) => {
      const r = await this.rpc.call<EventInfo>("_event", { id });
      return r ? r.msg : null;
    });
    this.probe = new FrameProbe(this.root, (id) => this.locate(id), () => ({ ...this.view }));
    this.probe.hook.labels = () => ({ gutter: GUTTER_W, width: this.timeline.width, texts: this.timeline.labelBoxes });
    this.wrappers = new WrapperToggle(dom.colorBy.parentElement ?? this.root, this.model);
    this.detail = new DetailLoader(this);
    this.search = new SearchBox(dom.colorBy.parentElement ?? this.root, this);
    this.details = new DetailsStrip(this, dom.timeline.nextElementSibling as HTMLElement ?? dom.timeline);
    parent.appendChild(this.root);
    this.theme = readTheme(this.root);

    this.listen(dom.reset, "click", () => {
      this.setView({ start: this.bounds.min, end: this.bounds.max });
      this.clearHighlight();
    });
    const colorBy = this.header.colorBy;
    this.listen(colorBy, "change", () => {
      this.model.set("color_by", colorBy.value);
      this.model.save_changes();
    });
    this.groups.attach((target, type, fn) => this.listen(target, type, fn));
    this.wrappers.attach((target, type, fn) => this.listen(target, type, fn));
    this.listen(this.tlScroll, "scroll", () => {
      this.scrollY = this.tlScroll.scrollTop;
      this.requestDraw();
    });
    for (const name of VIEW_TRAITS) {
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
    this.painter.dispose();
    this.syncView.cancel();
    this.sel.dispose();
    this.detail.dispose();
    for (const c of this.cleanups.splice(0)) c();
    this.table.dispose();
    this.rpc.dispose();
    this.probe.dispose();
    this.tooltip.hide();
    this.root.remove();
  }

  status(text: string, kind: "info" | "error" = "info"): void {
    this.header.status(text, kind);
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
    for (const [trait, panel] of this.panelOf) panel.load(trait as TraitName);
    this.panelButtons.update();
    loadLayout(this);
    const start = initialView(this.model, this.bounds);
    this.view = start.view;
    this.zoomToken = start.zoomToken;
    this.resize();
    this.afterViewChange(false);
  }

  private onTrait(name: ViewTrait): void {
    if (name === "_info") this.loadInfo();
    else if (name === "_tracks" || name === "show_wrappers") this.loadTracks();
    else if (name === "_overview") {
      this.loadOverview();
      this.detail.refetch(); // e.g. recoloured: the old detail is gone
    }
    else if (name === "_memory") this.loadMemory();
    else if (name === "_highlight") this.loadHighlight();
    else if (name === "_nodes") this.loadNodes();
    else if (name === "_summary") this.loadSummary();
    else if (this.panelOf.has(name)) {
      this.panelOf.get(name)?.load(name);
      this.panelButtons.update();
    }
    else if (name === "_panel_status") this.panelButtons.answered(this.model.get("_panel_status"));
    else if (name === "_kernel_selection") this.sel.showKernelSelection();
    else if (name === "split_layout") loadLayout(this);
    else if (name === "collapsed_groups" || name === "shown_ranks") {
      this.groups.load();
      this.relayout();
    }
    else if (name === "color_by") this.header.colorBy.value = String(this.model.get("color_by") ?? "category");
    else if (name === "_zoom_request") {
      const z = zoomRequest(this.model, this.zoomToken, this.bounds);
      if (z) {
        this.zoomToken = z.token;
        this.setView(z.view);
      }
    }
    this.painter.invalidate();
    this.requestDraw();
  }

  private loadInfo(): void {
    this.info = readInfo(this.model);
    this.unit = this.info.time_unit === "step" ? "step" : "ns";
    this.table.unit = this.unit;
    this.legend = parseLegend(this.info.legend);
    this.bounds = boundsFor(Number(this.info.duration) || this.source.overviewEnd || 1, this.unit,
      Number(this.info.start ?? 0));
    this.view = clampView(this.view, this.bounds);
    this.header.colorBy.value = String(this.model.get("color_by") ?? this.info.color_by ?? "category");
    if (this.info.static) this.rpc.dispose();
    this.showKernel();
    if (this.info.event_count === 0) this.probe.painted();
    this.header.showInfo(this.info, this.legend);
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
    const hasColorBy = typeof this.model.get("color_by") === "string" && !noKernel && this.info.event_count !== 0;
    this.header.showKernel(noKernel, hasColorBy);
    this.panelButtons?.show(!noKernel && this.info.event_count !== 0);
    this.search?.show(!noKernel && this.info.event_count !== 0);
    this.wrappers?.update(this.tracks ?? [], !noKernel);
  }

  private loadNodes(): void {
    this.header.showNodes(this.info.event_count === 0, () => this.frame("_nodes"), this.table.el);
  }

  private loadTracks(): void {
    this.tracks = parseTracks(this.model.get("_tracks"));
    this.wrappers?.update(this.tracks, !this.info.static && this.rpc.kernel !== "none");
    this.table.setRanks(this.tracks.some((t) => t.rank !== undefined));
    this.relayout();
  }

  relayout(): void {
    this.layout = computeLayout(this.tracks, this.groups.collapsed, this.groups.shown);
    this.groups.update();
    this.root.dataset.collapsed = String(this.layout.groups.filter((g) => g.collapsed).length);
    this.resize();
    this.requestDraw();
  }

  frame(name: string): Frame {
    return readFrame(this.model, name, (text) => this.status(text, "error"));
  }

  private loadOverview(): void {
    this.source.setOverview(slicesFromFrame(this.frame("_overview")));
    if (!(Number(this.info.duration) > 0) && this.source.overviewEnd > 0) {
      this.bounds = boundsFor(this.source.overviewEnd, this.unit);
    }
    this.painter.invalidate();
  }

  private loadMemory(): void {
    this.memory.setOverview(this.frame("_memory"));
    this.resize();
  }

  private loadHighlight(): void {
    const frame = this.frame("_highlight");
    this.highlight = highlightIds(frame);
    this.root.dataset.highlight = String(this.highlight?.size ?? 0);
    this.painter.invalidate();
    highlightChip(this.root, this.highlight?.size ?? 0, () => this.clearHighlight());
    if (typeof frame.meta.first_track === "number") scrollToTrack(this.tlScroll, this.layout, frame.meta.first_track);
  }

  /** The search's matches highlighted (null: none), with the chip (search.ts). */
  showMatches(ids: Set<number> | null): void {
    this.highlight = ids;
    this.root.dataset.highlight = String(ids?.size ?? 0);
    highlightChip(this.root, ids?.size ?? 0, () => this.clearHighlight());
    this.painter.invalidate();
    this.requestDraw();
  }

  /** Select slice `box`, zoom to it and scroll its lane into view, expanding its group if collapsed
   * (a search match, a details link). */
  goTo(box: SelectedBox): void {
    const t = this.tracks[box.track]; // a lane in a collapsed rank or group: expand it first
    for (const key of [t?.section, t?.key]) if (key && this.groups.collapsed.has(key)) this.groups.toggle(key);
    this.sel.select(box);
    this.setView(zoomToRange(box.start, box.start + box.dur, this.bounds));
    scrollToTrack(this.tlScroll, this.layout, box.track);
  }

  /** Undim: the highlight's chip ✕ and the reset button (evidence.ts). */
  private clearHighlight(): void {
    this.highlight = null;
    this.root.dataset.highlight = "0";
    highlightChip(this.root, 0, () => undefined);
    this.root.dispatchEvent(new CustomEvent(HIGHLIGHT_CLEARED));
    this.painter.invalidate();
    this.requestDraw();
  }

  // ---- what the panels use (PanelHost) ------------------------------------------------

  get noKernel(): boolean {
    return Boolean(this.info.static) || this.rpc.kernel === "none";
  }

  send(changes: Partial<Record<TraitName, unknown>>): void {
    for (const [name, value] of Object.entries(changes)) this.model.set(name, value);
    this.model.save_changes();
  }

  /** Show [start, end] with a margin of `margin` times its length on each side (a segment clicked). */
  zoomTo(start: number, end: number, margin: number): void {
    this.setView(zoomToRange(start, end, this.bounds, margin));
  }

  setArrows(flows: Flow[]): void {
    this.pathArrows = flows;
  }

  setShading(shading: Shading | null): void {
    this.shading = shading;
    this.requestDraw();
  }

  // ---- view, selection ---------------------------------------------------------------

  get plotWidth(): number {
    return this.painter.plotWidth;
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
    this.painter.invalidate();
    this.requestDraw();
    this.detail.fetch();
    if (sync) this.syncView();
    if (!this.sel.has() && !this.sel.kernel) this.sel.refreshWindowTable();
  }

  private syncView = debounce(() => {
    this.model.set("_view", { start: this.view.start, end: this.view.end });
    this.model.save_changes();
  }, 150);

  toggleGroup(g: number): void {
    const group = this.layout.groups[g];
    if (!group) return;
    this.groups.toggle(group.key);
  }

  // ---- kernel: detail and live memory ------------------------------------------------

  /** New `_detail` boxes: prepare the drawn boxes again (DetailHost). */
  detailArrived(): void {
    this.painter.invalidate();
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

  // ---- geometry, hit testing, drawing (view_paint.ts) ---------------------------------

  resize(): void {
    this.painter.resize();
  }

  hit(x: number, y: number): Hit {
    return this.painter.hit(x, y);
  }

  requestDraw(): void {
    this.painter.request();
  }

  draw(): void {
    this.painter.draw();
  }

  /** Client (CSS px) centre of the visible part of event `id`'s own box, or null. */
  locate(id: number): { x: number; y: number } | null {
    return this.painter.locate(id);
  }
}
