// The compare panel ("Compare with…", `_compare` trait, jupyter_profview/widget/compare_panel.py):
// a form for the second trace's path (relative to the server root in a JupyterLab tab or on the
// `profview serve` page), then the comparison's summary and its ops/kernels table (largest change
// first), each number formatted by the shared rule from the DataFrame's value.

import { formatTime, type TimeUnit } from "./axis";
import { el } from "./dom";
import type { PanelModule } from "./panel";

export interface CompareRow {
  name: string; what: string; status: string; delta: number; count_a: number; count_b: number;
  self_a: number; self_b: number;
}

export interface CompareData {
  a: string; b: string; align: string; offset: number; unit: TimeUnit; summary: string; rows: CompareRow[];
  total: number;
}

/** The `_compare` trait's value: "ask" (show the form), the comparison, or null (hidden). */
export function parseCompare(value: unknown): CompareData | "ask" | null {
  const v = value as Record<string, unknown> | null | undefined;
  if (!v) return null;
  if (v.ask === true) return "ask";
  if (!Array.isArray(v.rows)) return null;
  return {
    a: String(v.a ?? ""), b: String(v.b ?? ""), align: String(v.align ?? ""), offset: Number(v.offset),
    unit: v.unit === "step" ? "step" : "ns", summary: String(v.summary ?? ""), total: Number(v.total),
    rows: (v.rows as Array<Record<string, unknown>>).map((r) => ({
      name: String(r.name), what: String(r.what), status: String(r.status), delta: Number(r.delta),
      count_a: Number(r.count_a), count_b: Number(r.count_b), self_a: Number(r.self_a), self_b: Number(r.self_b),
    })),
  };
}

/** One row's cells: signed change, status, self time A, self time B, counts, op/kernel, name. */
export function compareCells(r: CompareRow, unit: TimeUnit): string[] {
  const sign = r.delta > 0 ? "+" : r.delta < 0 ? "-" : "";
  return [`${sign}${formatTime(Math.abs(r.delta), unit)}`, r.status, formatTime(r.self_a, unit),
    formatTime(r.self_b, unit), `${r.count_a} -> ${r.count_b}`, r.what, r.name];
}

const HEAD = ["change", "status", "self A", "self B", "count A -> B", "what", "name"];

export const COMPARE_PANEL: PanelModule = {
  name: "compare",
  traits: ["_compare"],
  toolbar: "Compare with…",
  create: (host) => {
    const root = el("div", "pv-compare");
    root.style.display = "none";
    const form = el("form", "pv-compare-form", root);
    const label = el("label", "pv-compare-label", form);
    label.textContent = "Compare with (path of a second trace): ";
    const input = el("input", "pv-compare-path", label);
    input.type = "text";
    input.size = 48;
    input.placeholder = "runs/after/trace.json.gz";
    const go = el("button", "pv-compare-go", form);
    go.type = "submit";
    go.textContent = "Compare";
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const path = input.value.trim();
      if (path) host.send({ _panel_request: { panel: "compare", show: true, path, token: Date.now() } });
    });
    const title = el("div", "pv-compare-title", root);
    const summary = el("div", "pv-compare-summary", root);
    const table = el("div", "pv-compare-table", root);
    table.addEventListener("click", (e) => {
      const row = (e.target as HTMLElement).closest<HTMLElement>(".pv-compare-row");
      const k = Number(row?.dataset.index);
      if (!row || !Number.isInteger(k)) return;
      for (const r of table.querySelectorAll(".pv-row-selected")) r.classList.remove("pv-row-selected");
      row.classList.add("pv-row-selected");
      host.send({ _compare_pick: { row: k, token: Date.now() } });
    });
    let shown = false;
    return {
      el: root,
      shown: () => shown,
      load: () => {
        const data = parseCompare(host.model.get("_compare"));
        shown = data !== null;
        root.style.display = shown ? "" : "none";
        table.replaceChildren();
        title.textContent = "";
        summary.textContent = "";
        if (data === null) return;
        if (data === "ask") {
          input.focus();
          return;
        }
        input.value = data.b;
        title.textContent = `A ${data.a}  ·  B ${data.b}  (aligned on ${data.align}, offset `
          + `${formatTime(data.offset, data.unit)}; ${data.rows.length} of ${data.total} ops and kernels)`;
        summary.textContent = data.summary;
        const th = el("div", "pv-compare-row pv-compare-th", table);
        for (const h of HEAD) el("span", "pv-c-cell", th).textContent = h;
        data.rows.forEach((r, i) => {
          const row = el("div", "pv-compare-row", table);
          row.dataset.index = String(i);
          for (const text of compareCells(r, data.unit)) el("span", "pv-c-cell", row).textContent = text;
        });
      },
    };
  },
};
