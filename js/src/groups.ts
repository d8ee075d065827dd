// Which groups are collapsed and which ranks are shown: the `collapsed_groups` and `shown_ranks`
// traits (both ways), the toolbar's "Expand / Collapse all ranks" button and rank selector.

import type { AnyModel } from "@anywidget/types";
import { parseRanks, ranksText, sectionKeys, type TrackInfo } from "./layout";

export class GroupControls {
  /** Keys of the collapsed groups (processes, "rank N" sections). */
  collapsed = new Set<string>();
  /** Ranks shown (null: all). */
  shown: Set<number> | null = null;

  /** `changed` runs after the user changed something here (the view lays out again). */
  constructor(private model: AnyModel, private expandEl: HTMLButtonElement, private ranksEl: HTMLInputElement,
    private tracks: () => TrackInfo[], private changed: () => void) {}

  /** The toolbar's handlers (`listen` removes them on dispose). */
  attach(listen: (target: EventTarget, type: string, fn: (e: Event) => void) => void): void {
    listen(this.expandEl, "click", () => this.setAll(this.anyCollapsed() ? "expand" : "collapse"));
    listen(this.ranksEl, "keydown", (e) => {
      if ((e as KeyboardEvent).key === "Enter") this.applyRanks();
    });
    listen(this.ranksEl, "change", () => this.applyRanks());
  }

  /** Read both traits (the kernel may set them too). */
  load(): void {
    const c = this.model.get("collapsed_groups");
    this.collapsed = new Set(Array.isArray(c) ? c.map(String) : []);
    const r = this.model.get("shown_ranks");
    this.shown = Array.isArray(r) && r.length ? new Set(r.map(Number)) : null;
    if (typeof document === "undefined" || document.activeElement !== this.ranksEl) { // not while typing
      this.ranksEl.value = ranksText(this.shown);
      this.ranksEl.classList.remove("pv-invalid");
    }
  }

  /** Into the traits, where the model has them (the `profview serve` page's model does not). */
  private save(): void {
    const values: Record<string, unknown> = {
      collapsed_groups: Array.from(this.collapsed),
      shown_ranks: this.shown ? Array.from(this.shown).sort((a, b) => a - b) : [],
    };
    const names = Object.keys(values).filter((k) => this.model.get(k) !== undefined);
    for (const k of names) this.model.set(k, values[k]);
    if (names.length) this.model.save_changes();
    this.changed();
  }

  toggle(key: string): void {
    if (this.collapsed.has(key)) this.collapsed.delete(key);
    else this.collapsed.add(key);
    this.save();
  }

  anyCollapsed(): boolean {
    return sectionKeys(this.tracks()).some((k) => this.collapsed.has(k));
  }

  setAll(how: "expand" | "collapse"): void {
    for (const k of sectionKeys(this.tracks())) {
      if (how === "expand") this.collapsed.delete(k);
      else this.collapsed.add(k);
    }
    this.save();
  }

  /** The rank selector: "0, 2-3" shows those ranks (kernel-side, a range selection keeps to them). */
  applyRanks(): void {
    const ranks = parseRanks(this.ranksEl.value);
    this.ranksEl.classList.toggle("pv-invalid", ranks === undefined);
    if (ranks === undefined) return;
    this.shown = ranks;
    this.save();
  }

  /** Toolbar state after a new layout: shown only with several ranks. */
  update(): void {
    const sections = sectionKeys(this.tracks()).length > 0;
    this.expandEl.style.display = sections ? "" : "none";
    this.ranksEl.style.display = sections ? "" : "none";
    this.expandEl.textContent = this.anyCollapsed() ? "Expand all ranks" : "Collapse all ranks";
  }
}
