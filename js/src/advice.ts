// The findings of `profview.advise` (`_advice` trait, jupyter_profview/widget/advice.py): one line
// per finding with its severity, time at stake and share of the window, above the table. Clicking
// a finding asks the kernel (`_advice_pick`) to highlight its evidence, zoom to it and list it.

import { formatTime, shareText } from "./axis";
import { el } from "./dom";
import { HIGHLIGHT_CLEARED } from "./evidence";
import type { PanelModule } from "./panel";

export interface Finding {
  rule: string; severity: string; time: number; share: number; count: number; device: string;
  message: string; fix: string; rank: number | null;
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
    })),
  };
}

/** One finding's line: "high  host_sync  5.8 ms  12.6 %  2 events  GPU 0". */
export function findingCells(f: Finding): string[] {
  const where = [f.rank !== null ? `rank ${f.rank}` : "", f.device].filter(Boolean).join(" · ");
  return [f.severity, f.rule, formatTime(f.time), shareText(f.share),
    `${f.count.toLocaleString("en-US")} event${f.count === 1 ? "" : "s"}`, where];
}

export class AdvicePanel {
  readonly el: HTMLDivElement;
  private title: HTMLSpanElement;
  private rows: HTMLDivElement;
  private detail: HTMLDivElement;
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
    this.rows.addEventListener("click", (e) => {
      const row = (e.target as HTMLElement).closest<HTMLElement>(".pv-advice-row");
      const k = Number(row?.dataset.index);
      if (!row || !this.data || !Number.isInteger(k) || !this.data.findings[k]) return;
      for (const r of this.rows.querySelectorAll(".pv-row-selected")) r.classList.remove("pv-row-selected");
      row.classList.add("pv-row-selected");
      const f = this.data.findings[k];
      this.detail.textContent = `${f.message} Try: ${f.fix}`;
      this.el.dataset.picked = String(k);
      this.onPick(k);
    });
  }

  /** No finding picked: Reset view and the highlight chip's ✕ clear the row and its text. */
  unpick(): void {
    for (const r of this.rows.querySelectorAll(".pv-row-selected")) r.classList.remove("pv-row-selected");
    this.detail.textContent = "";
    delete this.el.dataset.picked;
  }

  update(data: AdviceData | null): void {
    this.data = data;
    this.rows.textContent = "";
    this.detail.textContent = "";
    delete this.el.dataset.picked;
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
  traits: ["_advice"],
  toolbar: "What's wrong",
  create: (host) => {
    const panel = new AdvicePanel((finding) => host.send({ _advice_pick: { finding, token: Date.now() } }));
    host.root.addEventListener(HIGHLIGHT_CLEARED, () => panel.unpick());
    return {
      el: panel.el,
      shown: () => panel.data !== null,
      load: () => {
        const data = parseAdvice(host.model.get("_advice"));
        panel.update(data);
        host.root.dataset.findings = String(data ? data.findings.length : 0);
      },
    };
  },
};
