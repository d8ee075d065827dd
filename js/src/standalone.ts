// Entry of the `profview serve` page (jupyter_profview/server/page.py): the notebook widget's view
// driven by the HTTP transport. The page carries {baseUrl, path} in #profview-config.

import type { AnyModel, Experimental } from "@anywidget/types";
import { HttpModel, ProfviewClient, openTrace, progressText, runNote, type Fetcher } from "./transport_http";
import widget from "./widget";

function cookie(name: string): string | undefined {
  const m = document.cookie.match(new RegExp(`(?:^|;\\s*)${name}=([^;]*)`));
  return m ? decodeURIComponent(m[1]) : undefined;
}

/** fetch with the server's auth: the URL's token (as jupyter-server's Authorization header), else
 * the login cookie plus the XSRF header jupyter-server asks for on POST/DELETE. */
export function serverFetcher(baseUrl: string, token: string | null): Fetcher {
  const api = `${baseUrl.replace(/\/?$/, "/")}profview/api/`;
  return (path, init = {}) => {
    const headers = new Headers(init.headers);
    if (token) headers.set("Authorization", `token ${token}`);
    const xsrf = cookie("_xsrf");
    if (xsrf) headers.set("X-XSRFToken", xsrf);
    return fetch(api + path, { ...init, headers, credentials: "same-origin" });
  };
}

export async function mount(root: HTMLElement, baseUrl: string, path: string, token: string | null): Promise<HttpModel | null> {
  const status = document.createElement("div");
  status.className = "pv-standalone-status";
  root.appendChild(status);
  const client = new ProfviewClient(serverFetcher(baseUrl, token));
  let model: HttpModel;
  try {
    model = await openTrace(client, path, (s) => (status.textContent = progressText(s)),
      { onError: (text) => console.error(`profview: ${text}`) });
  } catch (err) {
    status.className = "pv-standalone-error";
    status.textContent = err instanceof Error ? err.message : String(err);
    return null;
  }
  status.remove();
  const note = runNote(model.status);
  if (note) {
    const line = document.createElement("div");
    line.className = "pv-standalone-note";
    line.textContent = note;
    root.appendChild(line);
  }
  const cleanup = widget.render({ model: model as AnyModel, el: root, experimental: model.experimental as Experimental });
  addEventListener("pagehide", () => {
    cleanup();
    model.dispose();
  });
  return model;
}

const config = document.getElementById("profview-config");
if (config) {
  const { baseUrl, path } = JSON.parse(config.textContent || "{}") as { baseUrl: string; path: string };
  const token = new URLSearchParams(location.search).get("token");
  const root = document.getElementById("profview-root") ?? document.body;
  void mount(root, baseUrl, path, token);
}
