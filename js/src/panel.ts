// The interface of a panel of the view (js/src/panels.ts lists them; the Python side of each is a
// `Panel` of jupyter_profview/widget/panels.py, inside the one ViewSession). A panel module
// exports one `PanelModule`: its name (the same as the Python panel's), the synced traits it
// draws, its toolbar label, and `create`, which builds what it draws inside the view.

import type { AnyModel } from "@anywidget/types";
import type { TimeUnit } from "./axis";
import type { Frame } from "./codec";
import type { Flow, Shading } from "./scene";
import type { TraitName } from "./trait_spec";

/** What the view gives a panel. */
export interface PanelHost {
  readonly model: AnyModel;
  readonly root: HTMLDivElement;
  /** the time unit of the trace ("ns", or "step" for a graph) */
  readonly unit: TimeUnit;
  /** no kernel or server answers (save_html, a notebook reopened without its kernel) */
  readonly noKernel: boolean;
  /** a binary trait's frame (an empty frame when unset or unreadable) */
  frame(name: TraitName): Frame;
  /** set browser traits and send them (to the kernel, or to the server's session) */
  send(changes: Partial<Record<TraitName, unknown>>): void;
  /** show [start, end] with a margin of `margin` times its length on each side */
  zoomTo(start: number, end: number, margin: number): void;
  /** the arrows drawn over the timeline for this panel (the critical path's edges) */
  setArrows(flows: Flow[]): void;
  /** intervals shaded on some lanes (a gpu_idle finding's idle time), null for none */
  setShading(shading: Shading | null): void;
}

/** A panel as the view holds it. */
export interface DrawnPanel {
  /** what it draws (placed above the table) */
  readonly el: HTMLElement;
  /** one of its traits changed (and once when the view opens, for each of them) */
  load(trait: TraitName): void;
  /** the view's width changed */
  resize?(width: number): void;
  /** whether it shows something (its toolbar button is pressed) */
  shown(): boolean;
  /** whether its toolbar button applies to this trace (absent: always; the stage lanes: a pipeline run) */
  available?(): boolean;
}

/** One entry of the panel list (js/src/panels.ts). */
export interface PanelModule {
  /** the name of the panel, the same on the Python side (jupyter_profview/widget/panels.py) */
  readonly name: string;
  /** the synced traits it draws */
  readonly traits: readonly TraitName[];
  /** its button in the view's toolbar ("What's wrong"), if it has one */
  readonly toolbar?: string;
  /** builds it; absent for the panels the view itself draws (timeline, memory, table ...) */
  readonly create?: (host: PanelHost) => DrawnPanel;
}
