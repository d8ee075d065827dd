// The content of a "Profile viewer" tab: the notebook widget's view (js/src/widget.ts) over the
// HTTP transport (js/src/transport_http.ts), with loading progress and the load error in the tab.

import { URLExt } from "@jupyterlab/coreutils";
import { ServerConnection } from "@jupyterlab/services";
import { Widget } from "@lumino/widgets";
import {
  HttpError, HttpModel, ProfviewClient, openTrace, progressText, runNote, type Fetcher, type SessionStatus,
} from "../../js/src/transport_http";
import widget from "../../js/src/widget";

/** Requests to the server extension with JupyterLab's own auth (token and XSRF header). */
export function labFetcher(settings: ServerConnection.ISettings = ServerConnection.makeSettings()): Fetcher {
  return (path, init = {}) =>
    ServerConnection.makeRequest(URLExt.join(settings.baseUrl, "profview", "api", path), init, settings);
}

export class ProfviewPanel extends Widget {
  private model: HttpModel | null = null;
  private cleanup: (() => void) | null = null;
  private status: HTMLDivElement;
  private abort = new AbortController();
  private settle: (s: SessionStatus | null) => void = () => {};
  /** The session's status once loaded (for a directory, `run` says what was loaded); null if the
   * load failed or the tab closed first. */
  readonly loaded: Promise<SessionStatus | null>;

  constructor(readonly path: string, private client = new ProfviewClient(labFetcher())) {
    super();
    this.loaded = new Promise((resolve) => (this.settle = resolve));
    this.addClass("jp-ProfviewPanel");
    this.status = document.createElement("div");
    this.status.className = "jp-ProfviewPanel-status";
    this.node.appendChild(this.status);
    this.status.textContent = `Opening ${path}…`;
  }

  /** Load the trace in the server's worker and draw it; the error text stays in the tab. */
  async load(): Promise<void> {
    try {
      const model = await openTrace(this.client, this.path, (s) => {
        if (!this.isDisposed) this.status.textContent = progressText(s);
      }, { signal: this.abort.signal, onError: (text) => console.error(`profview: ${text}`) });
      if (this.isDisposed) {
        model.dispose();
        this.settle(null);
        return;
      }
      this.model = model;
      this.status.remove();
      const note = runNote(model.status);
      if (note) {
        const line = document.createElement("div");
        line.className = "jp-ProfviewPanel-note";
        line.textContent = note;
        this.node.appendChild(line);
      }
      this.settle(model.status);
      type RenderProps = Parameters<typeof widget.render>[0];
      this.cleanup = widget.render({
        model: model as RenderProps["model"], el: this.node, experimental: model.experimental,
      });
    } catch (err) {
      this.settle(null);
      if (this.isDisposed) return;
      this.status.classList.add("jp-ProfviewPanel-error");
      const text = err instanceof Error ? err.message : String(err);
      this.status.textContent = err instanceof HttpError && err.status === 400 ? text : `profview: ${text}`;
    }
  }

  dispose(): void {
    if (this.isDisposed) return;
    this.abort.abort();
    this.settle(null);
    this.cleanup?.();
    this.model?.dispose();
    super.dispose();
  }
}
