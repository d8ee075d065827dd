// The widget's DOM skeleton (stable class names for tests) and the legend.

import { helpControls, type Help } from "./help";
import type { LegendEntry } from "./theme";

export const el = <K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, parent?: HTMLElement): HTMLElementTagNameMap[K] => {
  const e = document.createElement(tag);
  e.className = cls;
  parent?.appendChild(e);
  return e;
};

export interface Skeleton {
  root: HTMLDivElement;
  reset: HTMLButtonElement;
  colorBy: HTMLSelectElement;
  /** Several ranks only (hidden otherwise): expand/collapse every rank, and the rank selector. */
  expand: HTMLButtonElement;
  ranks: HTMLInputElement;
  status: HTMLDivElement;
  legend: HTMLDivElement;
  message: HTMLDivElement;
  timeline: HTMLDivElement;
  tlScroll: HTMLDivElement;
  canvas: HTMLCanvasElement;
  tlSpacer: HTMLDivElement;
  /** The "?" keys box and the wheel note (help.ts). */
  help: Help;
}

/** Root (focusable), toolbar, legend, message line and the scrollable timeline canvas. */
export function skeleton(): Skeleton {
  const root = el("div", "pv-root");
  root.tabIndex = 0;
  // JupyterLab (Lumino) ignores its own shortcuts for keys pressed inside this element, so
  // W/A/S/D/F/Escape reach the widget instead of inserting or deleting cells.
  root.setAttribute("data-lm-suppress-shortcuts", "true");
  const bar = el("div", "pv-toolbar", root);
  const reset = el("button", "pv-reset", bar);
  reset.type = "button";
  reset.textContent = "Reset view";
  reset.title = "Back to the first view; clears the highlight and the picked finding";
  const colorBy = el("select", "pv-colorby", bar);
  for (const k of ["category", "phase"]) {
    const o = document.createElement("option");
    o.value = k;
    o.textContent = `colour: ${k}`;
    colorBy.appendChild(o);
  }
  const expand = el("button", "pv-expand", bar);
  expand.type = "button";
  expand.textContent = "Expand all ranks";
  expand.title = "Expand every rank (or collapse them all to one busy lane each); click a rank's header for one";
  expand.style.display = "none";
  const ranks = el("input", "pv-ranks", bar);
  ranks.type = "text";
  ranks.placeholder = "ranks: all";
  ranks.title = "Ranks to show, e.g. 0, 2-3 (empty: all); Enter applies";
  ranks.style.display = "none";
  const status = el("div", "pv-status", bar);
  const legend = el("div", "pv-legend", root);
  const message = el("div", "pv-message", root);
  const timeline = el("div", "pv-timeline", root);
  const tlScroll = el("div", "pv-tl-scroll", timeline);
  const canvas = el("canvas", "pv-tl-canvas", tlScroll);
  const tlSpacer = el("div", "pv-tl-spacer", tlScroll);
  const help = helpControls(bar, timeline);
  return { root, reset, colorBy, expand, ranks, status, legend, message, timeline, tlScroll, canvas, tlSpacer, help };
}

export function renderLegend(box: HTMLElement, legend: LegendEntry[]): void {
  box.replaceChildren(
    ...legend.map((e) => {
      const item = el("span", "pv-legend-item");
      if (typeof e.count === "number") item.title = `${e.key}: ${e.count.toLocaleString()} events`;
      const sw = el("span", "pv-swatch", item);
      sw.style.background = e.color;
      const t = el("span", "pv-legend-key", item);
      t.textContent = e.key === "" ? "(none)" : e.key;
      return item;
    }),
  );
}
