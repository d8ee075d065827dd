// The list under the memory panel: the allocations live at a clicked time (a `_live` reply).

import { formatBytes, formatTime, type TimeUnit } from "./axis";
import { isolated } from "./bidi";

export interface LiveRow {
  device?: string; address?: number | string | null; bytes?: number;
  alloc_time?: number | null; free_time?: number | null; owner?: string;
}
export interface LiveReply { time: number; total?: number; rows?: LiveRow[] }

/** The list of live allocations from a `_live` reply (text only; `message` when there is none). */
export function renderLive(box: HTMLDivElement, reply: LiveReply | null, unit: TimeUnit, message?: string): void {
  box.replaceChildren();
  if (!reply) {
    if (message) {
      const d = document.createElement("div");
      d.className = "pv-live-head";
      d.textContent = message;
      box.appendChild(d);
    }
    return;
  }
  const rows = Array.isArray(reply.rows) ? reply.rows : [];
  const head = document.createElement("div");
  head.className = "pv-live-head";
  const total = typeof reply.total === "number" ? reply.total : NaN;
  head.textContent = `Live at ${formatTime(reply.time, unit)}: ${rows.length}${rows.length >= 200 ? "+" : ""} ` +
    `allocation${rows.length === 1 ? "" : "s"}` + (Number.isFinite(total) ? `, ${formatBytes(total)} in use` : "") +
    (rows.length ? " (largest first)" : "");
  box.appendChild(head);
  for (const r of rows) {
    const d = document.createElement("div");
    d.className = "pv-live-row";
    d.textContent = liveRowText(r, unit);
    box.appendChild(d);
  }
}

/** One live allocation: bytes, device, address, owner (trace text, isolated) and [alloc → free]. */
export function liveRowText(r: LiveRow, unit: TimeUnit): string {
  const span = [r.alloc_time, r.free_time].map((t) => (typeof t === "number" ? formatTime(t, unit) : "?")).join(" → ");
  const addr = r.address === null || r.address === undefined ? "" : `  @${String(r.address)}`;
  return `${formatBytes(Number(r.bytes ?? 0)).padStart(10)}  ${isolated(r.device ?? "")}${addr}  ${isolated(r.owner ?? "")}  [${span}]`;
}
