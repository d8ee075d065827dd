// Virtualized events table of the selection (or of the visible window) through `_table`:
// only the visible rows exist in the DOM; rows arrive in pages of `offset/limit`. When the
// selection holds device kernels (or their launch calls) the table switches to their launch
// rows (kernel, launch call, issuing cpu_op, launch delay); tabs switch back and forth.

import { formatTime, shareText, toFixedHalfUp, type TimeUnit } from "./axis";
import { decodeFrame } from "./codec";
import type { Rpc } from "./rpc";
import type { SelectionTrait } from "./selection_value";

export type SortKey = "start" | "dur" | "self" | "name" | "delay" | "tflops" | "pct";
export type TableKind = "events" | "launches" | "efficiency";
/** What the table lists: the events of `selection` (the `_selection` value it was made for) or of the window. */
export interface TableQuery { mode: "selection" | "window"; t0: number; t1: number; selection?: SelectionTrait }
export interface TableRow {
  id: number; start: number; dur: number; self: number; name: string; category: string; track: number;
  /** The event's rank, in a view of several ranks (absent otherwise). */
  rank?: number;
  /** Launch rows: the launch call's and the cpu_op's event ids (-1: none), names and the delay. */
  launch?: number; launchName?: string; cpuOp?: number; cpuOpName?: string; delay?: number;
  /** Efficiency rows: the op's shapes, FLOPs, achieved TFLOP/s, % of the device's peak, bound. */
  shapes?: string; flops?: number; tflops?: number; pct?: number; bound?: string;
}
interface TableReply {
  kind?: string; rows?: number; count?: number; total?: number; self?: number; mean?: number | null;
  launches?: number; efficiency?: number; tflops?: number | null;
}

export const TABLE_ROW_H = 20;
const PAGE = 200;
const BODY_H = 200;
const MAX_ROWS = 1_500_000; // keeps the scroll spacer under browsers' element-height limit

type Col = { key: string; label: string; sort: SortKey | null; text: (r: TableRow, unit: TimeUnit) => string };
const RANK_COLUMN: Col = { key: "rank", label: "Rank", sort: null, text: (r) => (r.rank === undefined ? "" : String(r.rank)) };
const EVENT_COLUMNS: Col[] = [
  { key: "name", label: "Name", sort: "name", text: (r) => r.name },
  { key: "category", label: "Category", sort: null, text: (r) => r.category },
  { key: "start", label: "Start", sort: "start", text: (r, u) => formatTime(r.start, u) },
  { key: "dur", label: "Duration", sort: "dur", text: (r, u) => formatTime(r.dur, u) },
  { key: "self", label: "Self", sort: "self", text: (r, u) => formatTime(r.self, u) },
];
const LAUNCH_COLUMNS: Col[] = [
  { key: "name", label: "Kernel", sort: "name", text: (r) => r.name },
  { key: "launch", label: "Launch", sort: null, text: (r) => r.launchName ?? "" },
  { key: "cpu_op", label: "CPU op", sort: null, text: (r) => r.cpuOpName ?? "" },
  { key: "start", label: "Start", sort: "start", text: (r, u) => formatTime(r.start, u) },
  { key: "dur", label: "Duration", sort: "dur", text: (r, u) => formatTime(r.dur, u) },
  { key: "delay", label: "Delay", sort: "delay", text: (r, u) => formatTime(r.delay ?? NaN, u) },
];
const EFFICIENCY_COLUMNS: Col[] = [
  { key: "name", label: "Op", sort: "name", text: (r) => r.name },
  { key: "shapes", label: "Shapes", sort: null, text: (r) => r.shapes ?? "" },
  { key: "dur", label: "GPU time", sort: "dur", text: (r, u) => formatTime(r.dur, u) },
  { key: "tflops", label: "TFLOP/s", sort: "tflops", text: (r) => tflopsText(r.tflops ?? NaN) },
  { key: "pct", label: "% of peak", sort: "pct", text: (r) => (Number.isFinite(r.pct) ? shareText(r.pct ?? NaN) : "–") },
  { key: "bound", label: "Bound", sort: null, text: (r) => r.bound || "–" },
];
/** The columns of a kind of rows; a view of several ranks leads the events with their rank. */
export const columnsOf = (kind: TableKind, ranks = false): Col[] =>
  (kind === "launches" ? LAUNCH_COLUMNS : kind === "efficiency" ? EFFICIENCY_COLUMNS
    : ranks ? [RANK_COLUMN, ...EVENT_COLUMNS] : EVENT_COLUMNS);

/** Achieved TFLOP/s with three decimals, half up (numbers.py `tflops_text`); NaN → "–". */
export function tflopsText(v: number): string {
  return Number.isFinite(v) ? toFixedHalfUp(v, 3) : "–";
}

/** Rows of a `_table` reply frame of efficiency rows (`kind: "efficiency"`). */
export function efficiencyRowsFromFrame(buf: DataView | undefined): TableRow[] {
  if (!buf) return [];
  const f = decodeFrame(buf);
  const c = f.columns;
  const names = Array.isArray(f.meta.names) ? (f.meta.names as unknown[]).map(String) : [];
  const shapes = Array.isArray(f.meta.shapes) ? (f.meta.shapes as unknown[]).map(String) : [];
  const bounds = ["", "memory", "compute"];
  const rows: TableRow[] = [];
  for (let i = 0; i < f.length; i++) {
    rows.push({
      id: c.id[i], start: c.start[i], dur: c.dur[i], self: NaN, name: names[c.name[i]] ?? "", category: "",
      track: c.track ? c.track[i] : 0, shapes: shapes[c.shapes[i]] ?? "", flops: c.flops[i], tflops: c.tflops[i],
      pct: c.pct[i], bound: bounds[c.bound[i]] ?? "",
    });
  }
  return rows;
}

/** Rows of a `_table` reply frame of launch rows (`kind: "launches"`). */
export function launchRowsFromFrame(buf: DataView | undefined): TableRow[] {
  if (!buf) return [];
  const f = decodeFrame(buf);
  const c = f.columns;
  const list = (k: string): string[] => (Array.isArray(f.meta[k]) ? (f.meta[k] as unknown[]).map(String) : []);
  const names = list("names");
  const lnames = list("launch_names");
  const cnames = list("cpu_op_names");
  const at = (col: ArrayLike<number> | undefined, names: string[], i: number): string =>
    col && col[i] >= 0 ? names[col[i]] ?? "" : "";
  const rows: TableRow[] = [];
  for (let i = 0; i < f.length; i++) {
    rows.push({
      id: c.kernel ? c.kernel[i] : -1, start: c.start ? c.start[i] : NaN, dur: c.dur ? c.dur[i] : NaN,
      self: NaN, name: at(c.name, names, i), category: "", track: c.track ? c.track[i] : 0,
      launch: c.launch ? c.launch[i] : -1, launchName: at(c.launch_name, lnames, i),
      cpuOp: c.cpu_op ? c.cpu_op[i] : -1, cpuOpName: at(c.cpu_op_name, cnames, i),
      delay: c.delay ? c.delay[i] : NaN,
    });
  }
  return rows;
}

/** Rows of a `_table` reply frame. */
export function rowsFromFrame(buf: DataView | undefined): TableRow[] {
  if (!buf) return [];
  const f = decodeFrame(buf);
  const c = f.columns;
  const names = Array.isArray(f.meta.names) ? (f.meta.names as unknown[]).map(String) : [];
  const cats = Array.isArray(f.meta.categories) ? (f.meta.categories as unknown[]).map(String) : [];
  const rows: TableRow[] = [];
  for (let i = 0; i < f.length; i++) {
    rows.push({
      id: c.id ? c.id[i] : -1,
      start: c.start ? c.start[i] : NaN,
      dur: c.dur ? c.dur[i] : NaN,
      self: c.self ? c.self[i] : NaN,
      name: c.name ? names[c.name[i]] ?? "" : "",
      category: c.category ? cats[c.category[i]] ?? "" : "",
      track: c.track ? c.track[i] : 0,
      ...(c.rank ? { rank: c.rank[i] } : {}),
    });
  }
  return rows;
}

/** First and last row index to render for a scroll position (with overscan). */
export function visibleRange(scrollTop: number, height: number, count: number, overscan = 5): [number, number] {
  const first = Math.max(0, Math.floor(scrollTop / TABLE_ROW_H) - overscan);
  const last = Math.min(count, Math.ceil((scrollTop + height) / TABLE_ROW_H) + overscan);
  return [first, Math.max(first, last)];
}

export class TablePanel {
  readonly el: HTMLDivElement;
  private head: HTMLDivElement;
  private totals: HTMLDivElement;
  private tabs: HTMLDivElement;
  /** What the rows are; `auto`: events, switching to launches when the selection has some. */
  kind: TableKind = "events";
  private auto = true;
  private launchCount = 0;
  private eventCount = 0;
  private sorts: Record<TableKind, [SortKey, boolean]> = {
    events: ["dur", true], launches: ["delay", true], efficiency: ["dur", true],
  };
  private efficiencyCount = 0;
  private body: HTMLDivElement;
  private spacer: HTMLDivElement;
  private pool: HTMLDivElement[] = [];
  private sort: SortKey = "dur";
  private descending = true;
  private query: TableQuery | null = null;
  private gen = 0;
  private count = 0;
  private pages = new Map<number, TableRow[] | "pending">();
  selectedId = -1;
  unit: TimeUnit = "ns";

  constructor(parent: HTMLElement, private rpc: Rpc, private onRow: (row: TableRow) => void) {
    this.el = document.createElement("div");
    this.el.className = "pv-table";
    this.totals = document.createElement("div");
    this.totals.className = "pv-table-totals";
    this.tabs = document.createElement("div");
    this.tabs.className = "pv-table-tabs";
    this.head = document.createElement("div");
    this.head.className = "pv-table-head";
    this.body = document.createElement("div");
    this.body.className = "pv-table-body";
    this.body.style.height = `${BODY_H}px`;
    this.spacer = document.createElement("div");
    this.spacer.className = "pv-table-spacer";
    this.body.appendChild(this.spacer);
    this.el.append(this.tabs, this.totals, this.head, this.body);
    parent.appendChild(this.el);
    this.buildHead();
    this.head.addEventListener("click", this.onHeadClick);
    this.tabs.addEventListener("click", this.onTabClick);
    this.body.addEventListener("scroll", this.onScroll);
    this.body.addEventListener("click", this.onBodyClick);
    this.renderHead();
  }

  dispose(): void {
    this.head.removeEventListener("click", this.onHeadClick);
    this.tabs.removeEventListener("click", this.onTabClick);
    this.body.removeEventListener("scroll", this.onScroll);
    this.body.removeEventListener("click", this.onBodyClick);
    this.rpc.cancel("table");
  }

  private onHeadClick = (ev: MouseEvent): void => {
    const key = (ev.target as HTMLElement).closest<HTMLElement>(".pv-cell")?.dataset.key;
    const col = this.columns().find((c) => c.key === key);
    if (!col || !col.sort) return;
    if (this.sort === col.sort) this.descending = !this.descending;
    else {
      this.sort = col.sort;
      this.descending = col.sort !== "name" && col.sort !== "start";
    }
    this.sorts[this.kind] = [this.sort, this.descending];
    this.renderHead();
    this.reload();
  };

  /** A view of several ranks (the front end sets it from `_tracks`): a Rank column. */
  ranks = false;

  private columns(): Col[] {
    return columnsOf(this.kind, this.ranks);
  }

  get bodyHeight(): number {
    return this.body.offsetHeight || BODY_H;
  }

  /** The rows' area `h` px high (the split above the table). */
  setBodyHeight(h: number): void {
    this.body.style.height = `${h}px`;
    this.renderRows();
  }

  /** Several ranks shown or not: the Rank column comes or goes. */
  setRanks(on: boolean): void {
    if (on === this.ranks) return;
    this.ranks = on;
    for (const r of this.pool) r.remove();
    this.pool = [];
    this.buildHead();
    this.renderRows();
  }

  private onTabClick = (ev: MouseEvent): void => {
    const kind = (ev.target as HTMLElement).closest<HTMLElement>(".pv-table-tab")?.dataset.kind;
    if (kind !== "events" && kind !== "launches" && kind !== "efficiency") return;
    this.auto = false; // the user's choice holds until the next selection
    this.setKind(kind);
    this.reload();
  };

  /** Show events or launch rows (columns, sort). */
  setKind(kind: TableKind): void {
    if (kind === this.kind) return;
    this.kind = kind;
    [this.sort, this.descending] = this.sorts[kind];
    for (const r of this.pool) r.remove();
    this.pool = [];
    this.buildHead();
  }

  private buildHead(): void {
    this.head.replaceChildren();
    for (const col of this.columns()) {
      const cell = document.createElement("div");
      cell.className = `pv-cell pv-col-${col.key}${col.sort ? " pv-sortable" : ""}`;
      cell.dataset.key = col.key;
      cell.textContent = col.label;
      this.head.appendChild(cell);
    }
    this.el.dataset.kind = this.kind;
    this.renderHead();
  }

  private renderTabs(): void {
    const sel = this.query?.mode === "selection";
    if (!sel || this.launchCount === 0) {
      this.tabs.replaceChildren();
      return;
    }
    const tab = (kind: TableKind, text: string): HTMLButtonElement => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = `pv-table-tab${this.kind === kind ? " pv-active" : ""}`;
      b.dataset.kind = kind;
      b.textContent = text;
      return b;
    };
    this.tabs.replaceChildren(tab("events", `Events (${this.eventCount.toLocaleString()})`),
      tab("launches", `Launches (${this.launchCount.toLocaleString()})`),
      ...(this.efficiencyCount > 0 ? [tab("efficiency", `Efficiency (${this.efficiencyCount.toLocaleString()})`)] : []));
  }

  private onScroll = (): void => this.renderRows();

  private onBodyClick = (ev: MouseEvent): void => {
    const rowEl = (ev.target as HTMLElement).closest<HTMLElement>(".pv-table-row");
    const idx = Number(rowEl?.dataset.index);
    if (!rowEl || !Number.isInteger(idx)) return;
    const row = this.rowAt(idx);
    if (row) this.onRow(row);
  };

  private renderHead(): void {
    for (const cell of Array.from(this.head.children) as HTMLElement[]) {
      const col = this.columns().find((c) => c.key === cell.dataset.key);
      const active = col?.sort === this.sort;
      cell.textContent = (col?.label ?? "") + (active ? (this.descending ? " ▾" : " ▴") : "");
      cell.classList.toggle("pv-sorted", active);
    }
  }

  /** Set what the table lists; refetches only when it changed (or `force`). */
  setQuery(q: TableQuery, force = false): void {
    const same = this.query && this.query.mode === q.mode && this.query.t0 === q.t0 && this.query.t1 === q.t1 &&
      JSON.stringify(this.query.selection) === JSON.stringify(q.selection);
    this.query = q;
    if (!same) {
      // a new list: events first, launch rows when the selection turns out to have some
      this.auto = true;
      this.launchCount = 0;
      this.efficiencyCount = 0;
      this.setKind("events");
    }
    if (!same || force) this.reload();
  }

  private rowAt(i: number): TableRow | undefined {
    const page = this.pages.get(Math.floor(i / PAGE));
    return page && page !== "pending" ? page[i % PAGE] : undefined;
  }

  reload(): void {
    this.gen++;
    this.pages.clear();
    this.rpc.cancel("table");
    const live = this.rpc.available;
    this.head.style.display = live ? "" : "none";
    this.body.style.display = live ? "" : "none";
    if (!live || !this.query) {
      this.count = 0;
      this.totals.textContent = live ? "" : "Events table: needs a running kernel";
      this.el.dataset.count = "0";
      this.renderRows();
      return;
    }
    this.totals.textContent = "Loading…";
    void this.fetchPage(0);
  }

  private async fetchPage(p: number): Promise<void> {
    const q = this.query;
    if (!q || this.pages.has(p)) return;
    const gen = this.gen;
    this.pages.set(p, "pending");
    const reply = await this.rpc.call<TableReply>("_table", {
      mode: q.mode, t0: q.t0, t1: q.t1, ...(q.selection ? { selection: q.selection } : {}), sort: this.sort, descending: this.descending,
      offset: p * PAGE, limit: PAGE, ...(this.kind !== "events" ? { kind: this.kind } : {}),
    }, p === 0 ? "table" : undefined);
    if (gen !== this.gen) return;
    if (!reply) {
      this.pages.delete(p);
      if (p === 0) this.totals.textContent = "Table unavailable";
      return;
    }
    const launches = reply.msg.kind === "launches";
    const efficiency = reply.msg.kind === "efficiency";
    if (p === 0 && !launches && !efficiency && this.kind === "events") {
      this.eventCount = Number(reply.msg.count ?? 0);
      this.launchCount = q.mode === "selection" ? Number(reply.msg.launches ?? 0) : 0;
      this.efficiencyCount = q.mode === "selection" ? Number(reply.msg.efficiency ?? 0) : 0;
      if (this.auto && this.launchCount > 0) { // kernels selected: list their launches
        this.setKind("launches");
        this.reload();
        return;
      }
    }
    this.pages.set(p, launches ? launchRowsFromFrame(reply.buffers[0])
      : efficiency ? efficiencyRowsFromFrame(reply.buffers[0]) : rowsFromFrame(reply.buffers[0]));
    if (p === 0) {
      const m = reply.msg;
      this.count = Math.min(MAX_ROWS, Math.max(0, Number(m.count ?? 0)));
      const what = q.mode === "selection" ? "selected" : "in view";
      this.totals.textContent = efficiency
        ? `${Number(m.count ?? 0).toLocaleString()} ops with modelled FLOPs · GPU time ${formatTime(Number(m.total ?? 0), this.unit)} · ${tflopsText(Number(m.tflops ?? NaN))} TFLOP/s overall`
        : launches
        ? `${Number(m.count ?? 0).toLocaleString()} kernel launches selected · mean delay ${formatTime(Number(m.mean ?? NaN), this.unit)} · total delay ${formatTime(Number(m.total ?? 0), this.unit)}`
        // sums over the events (nested ones and parallel lanes add up: not a wall-clock span)
        : `${Number(m.count ?? 0).toLocaleString()} events ${what} · sum of durations ${formatTime(Number(m.total ?? 0), this.unit)} · sum of self times ${formatTime(Number(m.self ?? 0), this.unit)}`;
      this.el.dataset.count = String(m.count ?? 0);
      this.body.scrollTop = 0;
      this.renderTabs();
    }
    this.renderRows();
  }

  renderRows(): void {
    this.spacer.style.height = `${this.count * TABLE_ROW_H}px`;
    const [first, last] = visibleRange(this.body.scrollTop, this.body.clientHeight || BODY_H, this.count);
    const need = last - first;
    while (this.pool.length < need) {
      const r = document.createElement("div");
      r.className = "pv-table-row";
      for (const col of this.columns()) {
        const c = document.createElement("div");
        c.className = `pv-cell pv-col-${col.key}`;
        r.appendChild(c);
      }
      this.pool.push(r);
    }
    for (let j = 0; j < this.pool.length; j++) {
      const el = this.pool[j];
      if (j >= need) {
        el.remove();
        continue;
      }
      const i = first + j;
      if (!el.parentElement) this.body.appendChild(el);
      el.style.top = `${i * TABLE_ROW_H}px`;
      el.dataset.index = String(i);
      const row = this.rowAt(i);
      if (!row) void this.fetchPage(Math.floor(i / PAGE));
      const cells = el.children;
      this.columns().forEach((col, c) => {
        cells[c].textContent = row ? col.text(row, this.unit) : c === 0 ? "…" : "";
      });
      el.classList.toggle("pv-row-selected", !!row && row.id === this.selectedId);
      el.dataset.id = row ? String(row.id) : "";
    }
  }
}
