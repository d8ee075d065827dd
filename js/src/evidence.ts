// What a highlight (a picked finding's evidence, `w.highlight(...)`) shows beyond the dimming:
// the lanes scroll to the first highlighted lane (a finding's kernels may sit on a lane below
// the visible part), and a "Highlight: N events ✕" chip in the toolbar says that the view is
// dimmed on purpose and clears it.

import { AXIS_H } from "./scene";
import { ROW_H, type Layout } from "./layout";

/**
 * The scrollTop that shows lane `track` (its first row) in a timeline whose lanes area is
 * `visible` px tall (the axis row included), or null when it is shown already or not drawn.
 * A lane hidden by a collapsed group scrolls to that group's header.
 */
/** Dispatched on the widget's root when the highlight is cleared (✕, Reset view): the findings
 *  panel drops its picked row (advice.ts). */
export const HIGHLIGHT_CLEARED = "pv-highlight-cleared";

export function scrollFor(layout: Layout, track: number, scrollTop: number, visible: number): number | null {
  if (!(track >= 0 && track < layout.trackY.length)) return null;
  const y = layout.trackY[track] >= 0 ? layout.trackY[track] : layout.home[track];
  if (!(y >= 0)) return null;
  const inner = visible - AXIS_H;
  if (y >= scrollTop && y + ROW_H <= scrollTop + inner) return null;
  return Math.max(0, Math.min(y - 2 * ROW_H, layout.height - inner));
}

/** Scroll the lanes (`scroll`, the timeline's scroll area) so that lane `track` is in view. */
export function scrollToTrack(scroll: HTMLElement, layout: Layout, track: number): void {
  const top = scrollFor(layout, track, scroll.scrollTop, scroll.clientHeight);
  if (top !== null) scroll.scrollTop = top;
}

/** The chip after the toolbar's reset button: shown while `n` > 0; ✕ calls `clear`. */
export function highlightChip(root: HTMLElement, n: number, clear: () => void): void {
  const bar = root.querySelector<HTMLElement>(".pv-toolbar");
  if (!bar) return;
  let chip = bar.querySelector<HTMLSpanElement>(":scope > .pv-highlight-chip");
  if (!chip) {
    chip = document.createElement("span");
    chip.className = "pv-highlight-chip";
    const text = document.createElement("span");
    text.className = "pv-highlight-text";
    const x = document.createElement("button");
    x.type = "button";
    x.className = "pv-highlight-clear";
    x.textContent = "✕";
    x.title = "Clear the highlight";
    chip.append(text, x);
    const reset = bar.querySelector(".pv-reset");
    if (reset) reset.after(chip);
    else bar.prepend(chip);
  }
  const x = chip.querySelector<HTMLButtonElement>(".pv-highlight-clear");
  if (x) x.onclick = () => clear();
  const text = chip.querySelector<HTMLSpanElement>(".pv-highlight-text");
  if (text) text.textContent = `Highlight: ${n.toLocaleString("en-US")} event${n === 1 ? "" : "s"}`;
  chip.style.display = n > 0 ? "" : "none";
  chip.dataset.count = String(n);
}
