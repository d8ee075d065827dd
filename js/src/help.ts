// The keys, said where a user sees them: a "?" button in the toolbar that opens a box listing
// the mouse and keyboard controls, and a short note over the timeline when the wheel scrolled
// the page instead of zooming (the widget is not focused and no Ctrl/⌘ was held).

const el = <K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, parent?: HTMLElement): HTMLElementTagNameMap[K] => {
  const e = document.createElement(tag);
  e.className = cls;
  parent?.appendChild(e);
  return e;
};

/** The controls, one line each (the box's text; also what the browser test reads). */
export const HELP_LINES = [
  "Ctrl/⌘ + wheel: zoom at the pointer (or plain wheel once the view is focused by a click)",
  "W / S: zoom in / out · A / D: pan left / right",
  "drag: pan · shift+drag: select a time range · shift+wheel (focused): scroll the lanes",
  "click: select · double-click: zoom to it · F: zoom to the selection · Esc: clear it",
  "/: find events by name (Enter / Shift+Enter: next / previous match; .* for a regular expression)",
  "click outside the view: the wheel scrolls the page again",
];

/** The note shown when a wheel over the unfocused view scrolled the page. */
export const WHEEL_NOTE = "Ctrl/⌘ + wheel zooms · click the view to zoom with the wheel alone";

export interface Help {
  button: HTMLButtonElement;
  box: HTMLDivElement;
  note: HTMLDivElement;
  /** Show the wheel note for a moment. */
  flashNote(): void;
}

/** The "?" button (into `bar`), its box (after `bar`) and the wheel note (into `over`). */
export function helpControls(bar: HTMLElement, over: HTMLElement): Help {
  const button = el("button", "pv-help", bar);
  button.type = "button";
  button.textContent = "?";
  button.title = "Mouse and keys";
  button.setAttribute("aria-expanded", "false");
  const box = el("div", "pv-help-box");
  bar.after(box);
  box.style.display = "none";
  for (const line of HELP_LINES) el("div", "pv-help-line", box).textContent = line;
  button.addEventListener("click", () => {
    const open = box.style.display === "none";
    box.style.display = open ? "" : "none";
    button.setAttribute("aria-expanded", String(open));
  });
  const note = el("div", "pv-wheel-note", over);
  note.textContent = WHEEL_NOTE;
  return { button, box, note, flashNote: () => flashNote(note) };
}

const timers = new WeakMap<HTMLElement, ReturnType<typeof setTimeout>>();

/** Show a note element for 1.5 s (again from the start when already shown). */
export function flashNote(note: HTMLElement): void {
  note.classList.add("pv-show");
  clearTimeout(timers.get(note));
  timers.set(note, setTimeout(() => note.classList.remove("pv-show"), 1500));
}

/**
 * Whether a wheel event over the view is the view's (zoom, pan, scroll the lanes) or the page's:
 * the view's with Ctrl/⌘ held (also a trackpad's pinch) or once the view has the focus (a click
 * in it); otherwise the page scrolls past the widget.
 */
export function wheelIsOurs(e: { ctrlKey: boolean; metaKey: boolean }, root: HTMLElement, active: Element | null): boolean {
  return e.ctrlKey || e.metaKey || (active !== null && root.contains(active));
}

/**
 * Scroll what holds the view (the notebook's scroll area, else the window) by a wheel's delta:
 * the lanes' own scroll area is skipped, so that an unfocused view never traps the wheel.
 */
export function scrollPage(root: HTMLElement, e: { deltaX: number; deltaY: number; deltaMode: number }): void {
  const k = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? window.innerHeight : 1;
  for (let n = root.parentElement; n; n = n.parentElement) {
    const oy = getComputedStyle(n).overflowY;
    if ((oy === "auto" || oy === "scroll" || oy === "overlay") && n.scrollHeight > n.clientHeight) {
      n.scrollBy(e.deltaX * k, e.deltaY * k);
      return;
    }
  }
  window.scrollBy(e.deltaX * k, e.deltaY * k);
}
