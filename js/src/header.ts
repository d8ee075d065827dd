// The view's text around the canvases: status line, message, legend, the colour-by switch and
// the reset button (hidden without events), the `data-static` flag and the graph-node list.

import type { Frame } from "./codec";
import { el, renderLegend, type Skeleton } from "./dom";
import { setColorOptions } from "./metrics";
import { renderNodes } from "./nodes";
import type { LegendEntry } from "./theme";
import type { Info } from "./traits";

export class ViewHeader {
  private statusEl: HTMLDivElement;
  private legendEl: HTMLDivElement;
  private messageEl: HTMLDivElement;
  private tlEl: HTMLDivElement;
  private resetEl: HTMLButtonElement;
  readonly colorBy: HTMLSelectElement;
  readonly nodesEl: HTMLDivElement;

  constructor(private root: HTMLDivElement, dom: Skeleton) {
    this.statusEl = dom.status;
    this.legendEl = dom.legend;
    this.messageEl = dom.message;
    this.tlEl = dom.timeline;
    this.resetEl = dom.reset;
    this.colorBy = dom.colorBy;
    this.nodesEl = el("div", "pv-nodes");
  }

  status(text: string, kind: "info" | "error" = "info"): void {
    this.statusEl.textContent = text;
    this.statusEl.classList.toggle("pv-error", kind === "error");
  }

  /** `_info`'s message and legend; a trace without events shows no timeline, legend or reset. */
  showInfo(info: Info, legend: LegendEntry[]): void {
    const message = typeof info.message === "string" ? info.message : "";
    this.messageEl.textContent = message;
    this.messageEl.style.display = message ? "" : "none";
    const noEvents = info.event_count === 0;
    this.tlEl.style.display = noEvents ? "none" : "";
    this.legendEl.style.display = noEvents ? "none" : "";
    this.resetEl.style.display = noEvents ? "none" : "";
    renderLegend(this.legendEl, legend);
    setColorOptions(this.colorBy, info.color_options, String(info.color_by ?? this.colorBy.value));
  }

  /** `data-static`, and the colour-by switch only where a kernel can recolour. */
  showKernel(noKernel: boolean, hasColorBy: boolean): void {
    this.root.dataset.static = noKernel ? "1" : "0";
    this.colorBy.style.display = hasColorBy ? "" : "none";
  }

  /** The graph nodes (`_nodes`) of a trace without timed events, in place of the table. */
  showNodes(noEvents: boolean, frame: () => Frame, table: HTMLElement): void {
    const n = noEvents ? renderNodes(this.nodesEl, frame()) : 0;
    if (n === 0) this.nodesEl.replaceChildren();
    this.nodesEl.style.display = n ? "" : "none";
    table.style.display = noEvents ? "none" : "";
  }
}
