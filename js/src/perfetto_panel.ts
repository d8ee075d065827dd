// "Open in Perfetto" (`_perfetto` trait, jupyter_profview/widget/perfetto_panel.py): the kernel or
// the server wrote the trace as a .pftrace next to its file; this says where, and how to open it
// at ui.perfetto.dev (a link the user follows: profview itself makes no network call).

import { formatBytes } from "./axis";
import { el } from "./dom";
import type { PanelModule } from "./panel";

export const PERFETTO_UI = "https://ui.perfetto.dev";

/** The `_perfetto` trait's value: where the file was saved and its size, or null (hidden). */
export function parsePerfetto(value: unknown): { path: string; bytes: number } | null {
  const v = value as Record<string, unknown> | null | undefined;
  return v && typeof v.path === "string" ? { path: v.path, bytes: Number(v.bytes) } : null;
}

export const PERFETTO_PANEL: PanelModule = {
  name: "perfetto",
  traits: ["_perfetto"],
  toolbar: "Open in Perfetto",
  create: (host) => {
    const root = el("div", "pv-perfetto");
    root.style.display = "none";
    const saved = el("div", "pv-perfetto-saved", root);
    const how = el("div", "pv-perfetto-how", root);
    how.append("Open ");
    const link = el("a", "pv-perfetto-link", how);
    link.href = PERFETTO_UI;
    link.target = "_blank";
    link.rel = "noopener noreferrer";
    link.textContent = PERFETTO_UI;
    how.append(" and choose “Open trace file” with this file.");
    let shown = false;
    return {
      el: root,
      shown: () => shown,
      load: () => {
        const v = parsePerfetto(host.model.get("_perfetto"));
        shown = v !== null;
        root.style.display = shown ? "" : "none";
        saved.textContent = v ? `Saved ${v.path} (${formatBytes(v.bytes)})` : "";
        saved.dataset.path = v ? v.path : "";
      },
    };
  },
};
