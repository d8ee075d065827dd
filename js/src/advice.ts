// The findings of `profview.advise` (`_advice` trait, jupyter_profview/widget/advice.py): one line
// per finding with its severity, time at stake and share of the window, above the table. Clicking
// a finding asks the kernel (`_advice_pick`) to highlight its evidence, zoom to it and list it.
// The kernel answers with `_finding` (also after `w.pick_finding(k)` from Python): the picked row,
// marked here, and for a gpu_idle finding its idle intervals, shaded on its GPU's lanes.

import { formatTime, shareText } from "./axis";
import type { Frame } from "./codec";
import { el } from "./dom";
import { HIGHLIGHT_CLEARED } from "./evidence";
import { IDLE_SHADE_ALPHA, IDLE_SHADE_COLOR } from "./palette_gen";
import type { PanelModule } from "./panel";
import type { Shading } from "./scene";

export interface Finding {
  rule: string; severity: string; time: number; share: number; count: number; device: string;
  message: string; fix: string; rank: number | null;
  /** a gpu_idle finding: the number of its idle intervals (null for other rules) */
  intervals: number | null;
}

/** What `_finding` says: the picked row (-1: none) and, for gpu_idle, the shading of its idle time. */
export interface PickedFinding {
  finding: number;
  device: string;
  /** total idle time (ns) */
  idle: number;
  shading: Shading | null;
}

/** The `_finding` frame's content (jupyter_profview/widget/advice.py `finding_frame`). */
export function parseFinding(frame: Frame): PickedFinding {
  const m = frame.meta;
  const k = typeof m.finding === "number" ? m.finding : -1;
  const start = frame.columns.start;
  const end = frame.columns.end;
  const tracks = Array.isArray(m.tracks) ? m.tracks.map(Number) : [];
  const shading = m.rule === "gpu_idle" && start && end ? {
    tracks, start: Float64Array.from(start), end: Float64Array.from(end),
    color: IDLE_SHADE_COLOR, alpha: IDLE_SHADE_ALPHA, drawn: 0,
  } : null;
  return { finding: k, device: String(m.device ?? ""), idle: Number(m.idle ?? 0), shading };
}

export interface AdviceData { findings: Finding[]; window: [number, number] }

/** The `_advice` trait's value; null when no advice is shown. */
export function parseAdvice(value: unknown): AdviceData | null {
  const v = value as Record<string, unknown> | null | undefined;
  if (!v || !Array.isArray(v.findings)) return null;
  const w = Array.isArray(v.window) ? v.window : [0, 0];
  return {
    window: [Number(w[0]), Number(w[1])],
    findings: (v.findings as Array<Record<string, unknown>>).map((f) => ({
      rule: String(f.rule), severity: String(f.severity), time: Number(f.time), share: Number(f.share),
      count: Number(f.count), device: String(f.device ?? ""), message: String(f.message ?? ""),
      fix: String(f.fix ?? ""), rank: typeof f.rank === "number" ? f.rank : null,
      intervals: typeof f.intervals === "number" ? f.intervals : null,
    })),
  };
}

const plural = (n: number, what: string): string => `${n.toLocaleString("en-US")} ${what}${n === 1 ? "" : "s"}`;

/** One finding's line: "high  host_sync  5.8 ms  12.6 %  2 events  GPU 0"; a gpu_idle finding's
 * evidence is its idle intervals first ("932 idle intervals · 18 events", never "0 events"). */
export function findingCells(f: Finding): string[] {
  const where = [f.rank !== null ? `rank ${f.rank}` : "", f.device].filter(Boolean).join(" · ");
  const events = plural(f.count, "event");
  const evidence = f.intervals === null ? events
    : [plural(f.intervals, "idle interval"), f.count > 0 ? events : ""].filter(Boolean).join(" · ");
  return [f.severity, f.rule, formatTime(f.time), shareText(f.share), evidence, where];
}

export class AdvicePanel {
  readonly el: HTMLDivElement;
  private title: HTMLSpanElement;
  private rows: HTMLDivElement;
  private detail: HTMLDivElement;
  /** the legend of the shading: "▇ GPU 0 idle: 932 intervals, 682.6 ms (shaded on its lanes)" */
  private shadeKey: HTMLDivElement;
  data: AdviceData | null = null;

  constructor(private onPick: (k: number) => void) {
    this.el = el("div", "pv-advice");
    this.el.style.display = "none";
    this.title = el("span", "pv-advice-title", el("div", "pv-advice-head", this.el));
    const table = el("div", "pv-advice-table", this.el);
    const th = el("div", "pv-advice-row pv-advice-th", table);
    for (const [cls, text] of [["sev", "severity"], ["rule", "finding"], ["time", "time"], ["share", "share"],
      ["count", "evidence"], ["where", "where"]]) el("span", `pv-a-${cls}`, th).textContent = text;
    this.rows = el("div", "pv-advice-rows", table);
    this.detail = el("div", "pv-advice-detail", this.el);
    this.shadeKey = el("div", "pv-advice-shade", this.el);
    this.shadeKey.style.display = "none";
    this.rows.addEventListener("click", (e) => {
      const row = (e.target as HTMLElement).closest<HTMLElement>(".pv-advice-row");
      const k = Number(row?.dataset.index);
      if (!row || !this.mark(k)) return;
      this.onPick(k);
    });
  }

  /** Mark finding `k`'s row as picked (its row selected, its text shown): a click, or the kernel's
   * `_finding` after `w.pick_finding(k)`. False when there is no such finding. */
  mark(k: number): boolean {
    const row = this.rows.querySelector<HTMLElement>(`.pv-advice-row[data-index="${k}"]`);
    const f = this.data?.findings[k];
    if (!row || !f) return false;
    for (const r of this.rows.querySelectorAll(".pv-row-selected")) r.classList.remove("pv-row-selected");
    row.classList.add("pv-row-selected");
    this.detail.textContent = `${f.message} Try: ${f.fix}`;
    this.el.dataset.picked = String(k);
    return true;
  }

  /** The legend of a picked gpu_idle finding's shading (hidden for other findings). */
  showShading(picked: PickedFinding): void {
    const s = picked.shading;
    this.shadeKey.textContent = "";
    this.shadeKey.style.display = s ? "" : "none";
    for (const key of ["idleIntervals", "idleNs", "idleTracks"]) delete this.el.dataset[key];
    if (!s) return;
    const swatch = el("span", "pv-swatch", this.shadeKey);
    swatch.style.background = s.color;
    swatch.style.opacity = String(Math.min(1, 2 * s.alpha));
    el("span", "", this.shadeKey).textContent = ` ${picked.device} idle: ${plural(s.start.length, "interval")}, `
      + `${formatTime(picked.idle)} in total, shaded on its ${plural(s.tracks.length, "lane")}`;
    this.el.dataset.idleIntervals = String(s.start.length);
    this.el.dataset.idleNs = String(picked.idle);
    this.el.dataset.idleTracks = s.tracks.join(",");
  }

  /** No finding picked: Reset view and the highlight chip's ✕ clear the row and its text. */
  unpick(): void {
    for (const r of this.rows.querySelectorAll(".pv-row-selected")) r.classList.remove("pv-row-selected");
    this.detail.textContent = "";
    delete this.el.dataset.picked;
    this.showShading({ finding: -1, device: "", idle: 0, shading: null });
  }

  update(data: AdviceData | null): void {
    this.data = data;
    this.rows.textContent = "";
    this.unpick();
    this.el.style.display = data ? "" : "none";
    if (!data) return;
    const n = data.findings.length;
    this.title.textContent = n
      ? `What's wrong: ${n} finding${n === 1 ? "" : "s"} in the ${formatTime(data.window[1] - data.window[0])} window`
      : `No finding takes 1 % or more of the ${formatTime(data.window[1] - data.window[0])} window`;
    data.findings.forEach((f, k) => {
      const row = el("div", `pv-advice-row pv-sev-${f.severity}`, this.rows);
      row.dataset.index = String(k);
      row.title = `${f.message}\nTry: ${f.fix}`;
      const cells = findingCells(f);
      ["sev", "rule", "time", "share", "count", "where"].forEach((cls, i) => {
        el("span", `pv-a-${cls}`, row).textContent = cells[i];
      });
    });
  }
}

/** The findings panel ("What's wrong" in the toolbar; jupyter_profview/widget/advice.py). */
export const ADVICE_PANEL: PanelModule = {
  name: "advice",
  traits: ["_advice", "_finding"],
  toolbar: "What's wrong",
  create: (host) => {
    const panel = new AdvicePanel((finding) => host.send({ _advice_pick: { finding, token: Date.now() } }));
    host.root.addEventListener(HIGHLIGHT_CLEARED, () => {
      panel.unpick();
      host.setShading(null);
    });
    const loadFinding = (): void => {
      const picked = parseFinding(host.frame("_finding"));
      if (picked.finding >= 0 && panel.mark(picked.finding)) {
        panel.showShading(picked);
        host.setShading(picked.shading);
      } else {
        panel.unpick();
        host.setShading(null);
      }
    };
    return {
      el: panel.el,
      shown: () => panel.data !== null,
      load: (trait) => {
        if (trait === "_finding") return loadFinding();
        const data = parseAdvice(host.model.get("_advice"));
        panel.update(data);
        host.root.dataset.findings = String(data ? data.findings.length : 0);
        loadFinding();  // a view drawn again (a second display) shows the pick it had
      },
    };
  },
};
