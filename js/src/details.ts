// The details strip of the selected slice (issue #36, item 11; as Perfetto's details panel): name,
// start, end, duration, self time (the `self` column: duration minus direct children, as torch's
// key_averages counts it; jupyter_profview/nesting.py), category, lane, rank, its kernel numbers,
// its args, and its launch / kernel links (a click selects the linked event and zooms to it).
// Everything comes from the `_event` reply (the one the tooltip reads); every trace string is
// set as text (textContent), never as HTML. Not to be confused with detail.ts (the `_detail`
// level-of-detail round trips).

import { formatTime, type TimeUnit } from "./axis";
import { isolated } from "./bidi";
import { el } from "./dom";
import type { TrackInfo } from "./layout";
import { metricLines } from "./metrics";
import type { SelectedBox } from "./scene";
import type { EventCache, EventInfo } from "./tooltip";

/** At most this many args are listed (the rest counted). */
export const MAX_ARGS = 40;

/** What the strip needs of its view. */
export interface DetailsHost {
  readonly root: HTMLElement;
  readonly events: EventCache;
  readonly unit: TimeUnit;
  readonly tracks: TrackInfo[];
  /** Select a slice, zoom to it and scroll its lane into view. */
  goTo(box: SelectedBox): void;
}

/** One row of the strip: a label, the text shown, and the exact number behind it (if any). */
export interface DetailRow { key: string; label: string; text: string; value?: number }

/** The lane's on-screen name: "GPU 0 / stream 7". */
export function laneText(tracks: TrackInfo[], track: number | undefined): string {
  const t = track === undefined ? undefined : tracks[track];
  if (!t) return "";
  return t.group && t.group !== t.name ? `${t.group} / ${t.name}` : t.name || t.label;
}

function argText(v: unknown): string {
  if (typeof v === "string") return v;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** The strip's rows for event `e` (times in `unit`). */
export function detailRows(e: EventInfo, unit: TimeUnit, tracks: TrackInfo[]): DetailRow[] {
  const rows: DetailRow[] = [{ key: "name", label: "name", text: e.name ?? "" }];
  const time = (key: string, label: string, v: number | undefined): void => {
    if (typeof v === "number" && Number.isFinite(v)) rows.push({ key, label, text: formatTime(v, unit), value: v });
  };
  time("start", "start", e.start);
  if (typeof e.start === "number" && typeof e.dur === "number") time("end", "end", e.start + e.dur);
  time("dur", "duration", e.dur);
  time("self", "self", e.self);
  if (e.category !== undefined) rows.push({ key: "category", label: "category", text: e.category });
  if (e.phase) rows.push({ key: "phase", label: "phase", text: e.phase });
  const lane = laneText(tracks, e.track);
  if (lane) rows.push({ key: "lane", label: "lane", text: lane });
  if (e.rank !== undefined) rows.push({ key: "rank", label: "rank", text: String(e.rank), value: e.rank });
  for (const line of metricLines(e.metrics)) rows.push({ key: "metric", label: "", text: line });
  return rows;
}

/** The launch / kernel links of `e`: the other end of each flow, and which way it goes. */
export function links(e: EventInfo): Array<{ id: number; outgoing: boolean }> {
  const out: Array<{ id: number; outgoing: boolean }> = [];
  const seen = new Set<number>();
  for (const f of e.flows ?? []) {
    const outgoing = f.source === e.id;
    const other = outgoing ? f.target : f.source;
    if (other === e.id || other < 0 || seen.has(other)) continue;
    seen.add(other);
    out.push({ id: other, outgoing });
  }
  return out;
}

export class DetailsStrip {
  readonly el: HTMLDivElement;
  private shownId = -1;
  private token = 0;

  constructor(private host: DetailsHost, after: HTMLElement) {
    this.el = el("div", "pv-details");
    this.el.style.display = "none";
    after.after(this.el);
    // the selection says which slice is selected (`data-selected`, selection.ts): follow it
    const mo = new MutationObserver(() => this.follow());
    mo.observe(host.root, { attributes: true, attributeFilter: ["data-selected"] });
  }

  private follow(): void {
    const raw = this.host.root.dataset.selected ?? "";
    const id = /^\d+$/.test(raw) ? Number(raw) : -1;
    if (id === this.shownId) return;
    this.shownId = id;
    const token = ++this.token;
    if (id < 0) {
      this.el.style.display = "none";
      this.el.replaceChildren();
      delete this.el.dataset.id;
      return;
    }
    void this.host.events.get(id).then((info) => {
      if (token !== this.token) return;
      if (info) this.render(info);
    });
  }

  private render(e: EventInfo): void {
    const { unit, tracks } = this.host;
    const head = el("div", "pv-details-head");
    const grid = el("div", "pv-details-grid");
    for (const r of detailRows(e, unit, tracks)) {
      if (r.key === "name") {
        const name = el("span", "pv-details-name", head);
        name.textContent = isolated(r.text);
        name.title = r.text;
        continue;
      }
      const cell = el("span", "pv-details-item", grid);
      cell.dataset.key = r.key;
      if (r.value !== undefined) cell.dataset.value = String(r.value);
      if (r.label) el("span", "pv-details-label", cell).textContent = r.label;
      const v = el("span", "pv-details-value", cell);
      v.textContent = isolated(r.text);
      if (r.value !== undefined && r.key !== "rank") v.title = `${r.value.toLocaleString("en-US")} ${unit}`;
    }
    const close = el("button", "pv-details-close", head);
    close.type = "button";
    close.textContent = "✕";
    close.title = "Hide (Esc clears the selection)";
    close.addEventListener("click", () => {
      this.el.style.display = "none";
      this.shownId = -1;
    });
    const linkBox = el("div", "pv-details-links");
    for (const l of links(e)) this.addLink(linkBox, e, l.id, l.outgoing);
    const args = this.argsTable(e.args);
    this.el.replaceChildren(head, grid, ...(linkBox.childElementCount ? [linkBox] : []), ...(args ? [args] : []));
    this.el.dataset.id = String(e.id);
    this.el.style.display = "";
  }

  /** "launches → <kernel>" / "launched by ← <call>": a button that selects the linked event. */
  private addLink(box: HTMLElement, e: EventInfo, other: number, outgoing: boolean): void {
    const b = el("button", "pv-details-link", box);
    b.type = "button";
    b.dataset.target = String(other);
    const what = outgoing ? "→ " : "← ";
    b.textContent = `${what}event ${other}`;
    void this.host.events.get(other).then((o) => {
      if (!o || this.el.dataset.id !== String(e.id)) return;
      const kind = outgoing ? "launches" : "launched by";
      b.textContent = `${kind} ${what}${isolated(o.name ?? `event ${other}`)}`;
      b.title = `${o.category ?? ""} · ${laneText(this.host.tracks, o.track)}`;
    });
    b.addEventListener("click", () => {
      void this.host.events.get(other).then((o) => {
        if (!o || typeof o.start !== "number" || typeof o.dur !== "number") return;
        this.host.goTo({ id: other, track: Number(o.track ?? 0), depth: Number(o.depth ?? 0), start: o.start, dur: o.dur });
      });
    });
  }

  private argsTable(args: Record<string, unknown> | undefined): HTMLElement | null {
    const entries = args && typeof args === "object" ? Object.entries(args) : [];
    if (!entries.length) return null;
    const box = el("div", "pv-details-args");
    for (const [k, v] of entries.slice(0, MAX_ARGS)) {
      const row = el("div", "pv-details-arg", box);
      el("span", "pv-details-arg-key", row).textContent = isolated(k);
      let t = argText(v);
      if (t.length > 300) t = `${t.slice(0, 299)}…`;
      el("span", "pv-details-arg-value", row).textContent = isolated(t);
    }
    if (entries.length > MAX_ARGS) el("div", "pv-details-more", box).textContent = `… ${entries.length - MAX_ARGS} more args`;
    return box;
  }
}
