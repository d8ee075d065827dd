// Hover tooltip: text only (textContent), details fetched once per event id by `_event`.

import { formatTime, type TimeUnit } from "./axis";
import { metricLines, type Metrics } from "./metrics";
import { isolated } from "./bidi";

export interface EventInfo {
  id: number;
  /** In a view of several ranks: the event's rank. */
  rank?: number;
  name?: string;
  category?: string;
  phase?: string;
  track?: number;
  start?: number;
  dur?: number;
  self?: number;
  depth?: number;
  args?: Record<string, unknown>;
  /** A kernel's SM efficiency, occupancy, tensor core; a collective's bytes and bandwidths. */
  metrics?: Metrics;
  flows?: Array<{
    source: number; target: number; source_track: number; target_track: number;
    source_time: number; target_time: number;
  }>;
}

/** Small LRU-ish cache of `_event` replies (and the in-flight promises). */
export class EventCache {
  private map = new Map<number, Promise<EventInfo | null>>();
  constructor(private fetch: (id: number) => Promise<EventInfo | null>, private max = 500) {}

  get(id: number): Promise<EventInfo | null> {
    let p = this.map.get(id);
    if (!p) {
      p = this.fetch(id).then((info) => {
        if (!info) this.map.delete(id); // do not cache failures
        return info;
      });
      this.map.set(id, p);
      if (this.map.size > this.max) {
        const first = this.map.keys().next().value;
        if (first !== undefined) this.map.delete(first);
      }
    }
    return p;
  }

  clear(): void { this.map.clear(); }
}

function argText(v: unknown): string {
  if (v === null || v === undefined) return String(v);
  if (typeof v === "object") {
    try {
      return JSON.stringify(v);
    } catch {
      return String(v);
    }
  }
  return String(v);
}

/** Tooltip lines for an event (name first). */
export function eventLines(e: EventInfo, unit: TimeUnit, maxArgs = 12): string[] {
  const lines: string[] = [];
  if (e.name !== undefined) lines.push(isolated(e.name));
  const cat = [e.rank !== undefined ? `rank ${e.rank}` : "", e.category, e.phase]
    .filter((x) => x !== undefined && x !== "").join(" · ");
  if (cat) lines.push(cat);
  if (e.start !== undefined) lines.push(`start ${formatTime(e.start, unit)}`);
  if (e.dur !== undefined) lines.push(`duration ${formatTime(e.dur, unit)}`);
  if (e.self !== undefined) lines.push(`self ${formatTime(e.self, unit)}`);
  lines.push(...metricLines(e.metrics));
  const args = e.args && typeof e.args === "object" ? Object.entries(e.args) : [];
  for (const [k, v] of args.slice(0, maxArgs)) {
    let t = argText(v);
    if (t.length > 120) t = `${t.slice(0, 119)}…`;
    lines.push(`${isolated(k)}: ${isolated(t)}`);
  }
  if (args.length > maxArgs) lines.push(`… ${args.length - maxArgs} more args`);
  return lines;
}

export class Tooltip {
  readonly el: HTMLDivElement;
  private token = 0;

  constructor(parent: HTMLElement) {
    this.el = document.createElement("div");
    this.el.className = "pv-tooltip";
    this.el.style.display = "none";
    parent.appendChild(this.el);
  }

  /** Show `lines` near (x, y) relative to the parent; returns a token for later updates. */
  show(x: number, y: number, lines: string[]): number {
    this.setLines(lines);
    const el = this.el;
    el.style.display = "block";
    const parent = el.parentElement;
    const pw = parent ? parent.clientWidth : 800;
    const w = el.offsetWidth;
    const left = x + 14 + w > pw ? Math.max(0, x - 14 - w) : x + 14;
    el.style.left = `${left}px`;
    el.style.top = `${y + 14}px`;
    return ++this.token;
  }

  /** Replace the text if the tooltip still shows what `token` was issued for. */
  update(token: number, lines: string[]): void {
    if (token === this.token && this.el.style.display !== "none") this.setLines(lines);
  }

  hide(): void {
    this.token++;
    this.el.style.display = "none";
  }

  private setLines(lines: string[]): void {
    this.el.replaceChildren(
      ...lines.map((l, i) => {
        const d = document.createElement("div");
        d.className = i === 0 ? "pv-tooltip-title" : "pv-tooltip-line";
        d.textContent = l;
        return d;
      }),
    );
  }
}
