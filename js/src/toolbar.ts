// The toolbar's panel buttons (a `toolbar` label in panels.ts): a click shows the panel, or hides it
// when it is shown, through the `_panel_request` trait; the session answers with the panel's
// traits and `_panel_status` (shown, or why it could not be). The same buttons in the notebook
// widget, the JupyterLab tab and `profview serve`.

import type { DrawnPanel, PanelModule } from "./panel";

export interface PanelRequest { panel: string; show: boolean; token: number }

export class PanelButtons {
  readonly buttons = new Map<string, HTMLButtonElement>();
  private visible = true;

  constructor(
    bar: HTMLElement, before: Element | null, modules: readonly PanelModule[],
    private panels: ReadonlyMap<string, DrawnPanel>, private send: (request: PanelRequest) => void,
    private status: (text: string, kind: "info" | "error") => void,
  ) {
    for (const m of modules) {
      if (!m.toolbar) continue;
      const b = document.createElement("button");
      b.type = "button";
      b.className = "pv-panel-btn";
      b.dataset.panel = m.name;
      b.textContent = m.toolbar;
      b.title = `Show or hide: ${m.toolbar}`;
      const label = m.toolbar;
      b.addEventListener("click", () => {
        const show = !(this.panels.get(m.name)?.shown() ?? false);
        b.dataset.busy = "1";
        if (show) this.status(`${label}: computing…`, "info");
        this.send({ panel: m.name, show, token: Date.now() });
      });
      bar.insertBefore(b, before);
      this.buttons.set(m.name, b);
    }
  }

  /** The buttons' pressed state: what the panels show now. */
  update(): void {
    for (const [name, b] of this.buttons) {
      const on = this.panels.get(name)?.shown() ?? false;
      b.setAttribute("aria-pressed", String(on));
      b.classList.toggle("pv-panel-on", on);
      b.style.display = this.visible && this.panels.get(name)?.available?.() !== false ? "" : "none";
    }
  }

  /** `_panel_status`: the answer to the last request. */
  answered(value: unknown): void {
    const v = (value ?? {}) as { panel?: unknown; error?: unknown };
    const b = typeof v.panel === "string" ? this.buttons.get(v.panel) : undefined;
    if (!b) return;
    delete b.dataset.busy;
    const error = typeof v.error === "string" ? v.error : "";
    this.status(error ? `${b.textContent}: ${error}` : "", error ? "error" : "info");
    this.update();
  }

  /** Shown only where a kernel or a server answers. */
  show(visible: boolean): void {
    this.visible = visible;
    this.update();
  }
}
