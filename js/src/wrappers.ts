// The toolbar's "profiler wrappers" switch: the `show_wrappers` trait (both ways, kept by the
// session). The kernel decides which lanes are hidden (`_tracks[i].hidden`: a lane with no event
// to show, i.e. only the profiler's own records while the switch is off); this only says so and
// flips the trait. Shown only where the trace has such records and a kernel answers.

import type { AnyModel } from "@anywidget/types";
import { el } from "./dom";
import type { TrackInfo } from "./layout";

/** What the switch says: how many lanes are hidden and how many events they hold. */
export function wrapperText(tracks: TrackInfo[]): { lanes: number; wrappers: number; hidden: number; events: number } {
  let lanes = 0;
  let wrappers = 0;
  let hidden = 0;
  let events = 0;
  for (const t of tracks) {
    if ((t.wrappers ?? 0) > 0) {
      lanes++;
      wrappers += t.wrappers ?? 0;
    }
    if (t.hidden) {
      hidden++;
      events += t.events ?? 0;
    }
  }
  return { lanes, wrappers, hidden, events };
}

export class WrapperToggle {
  readonly el: HTMLLabelElement;
  readonly box: HTMLInputElement;
  private text: HTMLSpanElement;

  constructor(bar: HTMLElement, private model: AnyModel) {
    this.el = el("label", "pv-wrappers", bar);
    this.box = el("input", "", this.el);
    this.box.type = "checkbox";
    this.text = el("span", "", this.el);
    this.el.style.display = "none";
  }

  /** `listen` removes the handler on dispose. */
  attach(listen: (target: EventTarget, type: string, fn: (e: Event) => void) => void): void {
    listen(this.box, "change", () => {
      this.model.set("show_wrappers", this.box.checked);
      this.model.save_changes();
    });
  }

  /** Show the switch and its counts for these lanes (`usable`: a kernel answers). */
  update(tracks: TrackInfo[], usable: boolean): void {
    const n = wrapperText(tracks);
    const shown = Boolean(this.model.get("show_wrappers"));
    this.box.checked = shown;
    this.el.style.display = usable && n.lanes > 0 ? "" : "none";
    this.text.textContent = shown ? "profiler wrappers" : `profiler wrappers (${n.hidden} lane${n.hidden === 1 ? "" : "s"} hidden)`;
    this.el.title = "The profiler's own records (Kineto's whole-recording span \"PyTorch Profiler (N)\", category "
      + "Trace, and its markers \"Iteration Start\", \"Record Window End\"), not the program's work: their "
      + `lanes are hidden unless this is ticked. ${n.hidden} lane(s) hidden now, holding ${n.events} event(s); `
      + "the events stay in the table and the search.";
    this.el.dataset.hidden = String(n.hidden);
    this.el.dataset.events = String(n.events);
  }
}
