// Kernel and collective numbers: the tooltip lines of an event's `metrics` (from `_event`) and the
// colour-by choices a trace offers (`_info.color_options`, see widget/metric_colors.py).

import { formatBytes } from "./axis";
import type { PanelModule } from "./panel";

/** `_event`'s `metrics`: a kernel's SM efficiency / occupancy (%) / tensor core, a collective's
 * bytes and bandwidths (GB/s); null where the trace does not say. */
export type Metrics = Record<string, number | boolean | null | undefined>;

const pct = (v: number): string => `${v.toFixed(2)} %`;
const gbps = (v: number): string => `${v.toPrecision(4)} GB/s`;

/** Tooltip lines of `metrics`, in a fixed order ("n/a" where null). */
export function metricLines(m: Metrics | undefined): string[] {
  if (!m || typeof m !== "object") return [];
  const lines: string[] = [];
  const show = (key: string, label: string, fmt: (v: number) => string): void => {
    if (!(key in m)) return;
    const v = m[key];
    lines.push(`${label} ${typeof v === "number" && Number.isFinite(v) ? fmt(v) : "n/a"}`);
  };
  show("sm_efficiency", "SM efficiency", pct);
  show("occupancy", "occupancy", pct);
  if ("tensor_core" in m) lines.push(`tensor core: ${m.tensor_core === true ? "yes" : "no"}`);
  show("bytes", "bytes", formatBytes);
  show("algbw", "algbw", gbps);
  show("busbw", "busbw", gbps);
  return lines;
}

const BASE = ["category", "phase"];
const LABEL: Record<string, string> = {
  sm_efficiency: "SM efficiency", occupancy: "occupancy", tensor_core: "tensor core", busbw: "bus bandwidth",
};

/** The colour-by `<select>`'s options: category, phase and the trace's metric choices; keeps
 * `current` selected. */
export function setColorOptions(select: HTMLSelectElement, options: unknown, current: string): void {
  const extra = Array.isArray(options) ? options.filter((o): o is string => typeof o === "string") : [];
  const wanted = [...BASE, ...extra.filter((o) => !BASE.includes(o))];
  const have = Array.from(select.options).map((o) => o.value);
  if (have.join("\n") !== wanted.join("\n")) {
    select.replaceChildren(...wanted.map((k) => {
      const o = document.createElement("option");
      o.value = k;
      o.textContent = `colour: ${LABEL[k] ?? k}`;
      return o;
    }));
  }
  if (wanted.includes(current)) select.value = current;
}

/** Colour by (the toolbar's colour switch, drawn by the header; jupyter_profview/widget/metric_colors.py). */
export const COLOUR_PANEL: PanelModule = { name: "colour", traits: ["color_by"] };
