// The search box (issue #36, item 11): `/` opens it, typing finds events whose name contains the
// text (or matches it as a regular expression, the ".*" switch), Enter / Shift+Enter (and the
// ‹ › buttons) go to the next / previous match, "3 / 17" counts them. The matches are
// highlighted (the rest dimmed) and the current one is selected (the details strip shows it),
// the view zoomed to it and its lane scrolled into view.
//
// The search runs in the kernel (`_search`, jupyter_profview/widget/search.py, inside the one
// ViewSession: the notebook widget, the JupyterLab tab and `profview serve` alike), over every
// event of the trace: the front end holds only the boxes drawn now (merged at this zoom, or not
// loaded), so searching them would miss events. Without a kernel (save_html, a notebook
// reopened without one) the box says it needs one.

import { decodeFrame } from "./codec";
import { el } from "./dom";
import type { Rpc } from "./rpc";
import type { SelectedBox } from "./scene";

/** What `_search` answers (widget/search.py SearchPanel). */
export interface SearchReply {
  query: string;
  regex: boolean;
  count: number;
  /** The current match's index (0-based), -1 without matches. */
  index: number;
  /** Why nothing was searched (an invalid regular expression) or found. */
  message: string;
  truncated?: boolean;
  current?: { id: number; name: string; start: number; dur: number; track: number; depth: number };
}

/** What the search box needs of its view. */
export interface SearchHost {
  readonly root: HTMLElement;
  readonly rpc: Rpc;
  /** Highlight these events (null: clear the search's highlight). */
  showMatches(ids: Set<number> | null): void;
  /** Select a slice, zoom to it and scroll its lane into view. */
  goTo(box: SelectedBox): void;
}

/** The count text: "3 / 17", "0 / 0" without matches, "" before any search. */
export function countText(r: SearchReply | null): string {
  if (!r || !r.query) return "";
  return r.count ? `${(r.index + 1).toLocaleString("en-US")} / ${r.count.toLocaleString("en-US")}` : "0 / 0";
}

/** The next index to ask for: `step` (+1, -1) from `r`'s current one; 0 for a new query. */
export function nextIndex(r: SearchReply | null, query: string, regex: boolean, step: number): number {
  if (!r || r.query !== query || r.regex !== regex || r.count === 0) return step < 0 ? -1 : 0;
  return r.index + step; // the kernel wraps it around
}

/** Which match to ask for. Steps count from the index last asked for, not the last answer: two
 *  clicks on ‹ at "2 / 10" sent before the kernel answers the first reach "10 / 10". */
export class SearchCursor {
  private last: SearchReply | null = null;
  private asked: SearchReply | null = null;

  /** The index to send for `step` (0: the first match of a new search). */
  ask(query: string, regex: boolean, step: number): number {
    const index = step === 0 ? 0 : nextIndex(this.asked, query, regex, step);
    const last = this.last;
    this.asked = last && last.query === query && last.regex === regex ? { ...last, index } : null;
    return index;
  }

  /** The kernel's answer (null: the box was emptied). */
  answer(r: SearchReply | null): void {
    this.last = this.asked = r;
  }
}

export class SearchBox {
  readonly el: HTMLSpanElement;
  readonly input: HTMLInputElement;
  readonly regex: HTMLInputElement;
  private count: HTMLSpanElement;
  private message: HTMLSpanElement;
  private cursor = new SearchCursor();
  private seq = 0;
  private typing: ReturnType<typeof setTimeout> | undefined;

  constructor(bar: HTMLElement, private host: SearchHost) {
    this.el = el("span", "pv-search");
    this.input = el("input", "pv-search-input", this.el);
    this.input.type = "search";
    this.input.placeholder = "Find events ( / )";
    this.input.title = "Event names containing this text (or matching it, with .*); Enter: next, Shift+Enter: previous";
    const re = el("label", "pv-search-regex", this.el);
    this.regex = el("input", "", re);
    this.regex.type = "checkbox";
    re.append(".*");
    re.title = "Regular expression (Python's re)";
    const prev = el("button", "pv-search-prev", this.el);
    prev.type = "button";
    prev.textContent = "‹";
    prev.title = "Previous match (Shift+Enter)";
    const next = el("button", "pv-search-next", this.el);
    next.type = "button";
    next.textContent = "›";
    next.title = "Next match (Enter)";
    this.count = el("span", "pv-search-count", this.el);
    this.message = el("span", "pv-search-message", this.el);
    bar.insertBefore(this.el, bar.querySelector(":scope > .pv-status")); // before the status line

    prev.addEventListener("click", () => void this.step(-1));
    next.addEventListener("click", () => void this.step(1));
    this.regex.addEventListener("change", () => void this.step(0));
    this.input.addEventListener("input", () => {
      clearTimeout(this.typing);
      this.typing = setTimeout(() => void this.step(0), 250);
    });
    this.input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        clearTimeout(this.typing);
        void this.step(e.shiftKey ? -1 : 1);
      } else if (e.key === "Escape") {
        e.preventDefault();
        this.input.blur();
        host.root.focus();
      }
      e.stopPropagation(); // W/A/S/D typed here are text, not the view's keys
    });
    // `/` anywhere in the focused view opens the box
    host.root.addEventListener("keydown", (e) => {
      const t = e.target as HTMLElement | null;
      if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey) return;
      if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) return;
      e.preventDefault();
      e.stopPropagation();
      this.open();
    });
  }

  open(): void {
    this.input.focus();
    this.input.select();
  }

  /** Shown only where a kernel or a server answers (the search runs there). */
  show(visible: boolean): void {
    this.el.style.display = visible ? "" : "none";
  }

  /** Search again (`step` 0: the first match of a new query), or go to the next / previous match. */
  async step(step: number): Promise<void> {
    const query = this.input.value;
    const regex = this.regex.checked;
    if (!query) {
      this.cursor.answer(null);
      this.render(null);
      this.host.showMatches(null);
      return;
    }
    const index = this.cursor.ask(query, regex, step);
    const seq = ++this.seq;
    const r = await this.host.rpc.call<SearchReply>("_search", { query, regex, index }, "search");
    if (seq !== this.seq) return; // a newer search was sent
    if (!r) {
      this.render(null, "the search needs a running kernel");
      return;
    }
    const reply = r.msg;
    this.cursor.answer(reply);
    this.render(reply, reply.message);
    const frame = r.buffers[0] ? decodeFrame(r.buffers[0]) : null;
    const ids = frame?.columns.id;
    this.host.showMatches(reply.count && ids ? new Set(Array.from(ids)) : null);
    const c = reply.current;
    if (c) this.host.goTo({ id: c.id, track: c.track, depth: c.depth, start: c.start, dur: c.dur });
  }

  private render(r: SearchReply | null, message = ""): void {
    this.count.textContent = countText(r);
    this.message.textContent = message;
    this.el.classList.toggle("pv-search-invalid", Boolean(r && r.count === 0 && message.includes("invalid")));
    this.el.dataset.count = String(r?.count ?? 0);
    this.el.dataset.index = String(r?.index ?? -1);
  }
}
