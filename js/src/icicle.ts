// The icicle (flame graph, root on top) of the kernel's `attribute(...)` tree (`_icicle` frame,
// jupyter_profview/widget/icicle.py): boxes sized by GPU or CPU time, a node-kind switch, the
// numbers of the hovered node, and a click that highlights and selects what is under the node.

import { formatTime, shareText } from "./axis";
import type { Frame } from "./codec";
import { el } from "./dom";
import { isolated } from "./bidi";
import type { PanelModule } from "./panel";

export interface IcicleNode {
  node: number; parent: number; depth: number; x0: number; width: number;
  gpu: number; cpu: number; count: number; kernels: number; name: string;
}

export interface IcicleData {
  nodes: IcicleNode[]; total: number; by: string; measure: "gpu" | "cpu"; window: [number, number] | null;
}

export const ICICLE_ROW_H = 18;
const BY = ["annotation", "module", "stack", "op"];
const PALETTE = ["#4e79a7", "#59a14f", "#9c755f", "#f28e2b", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"];

export function parseIcicle(frame: Frame): IcicleData | null {
  const c = frame.columns;
  const m = frame.meta as Record<string, unknown>;
  if (!c.node) return null;
  const names = Array.isArray(m.names) ? m.names.map(String) : [];
  const nodes: IcicleNode[] = [];
  for (let i = 0; i < c.node.length; i++) {
    nodes.push({
      node: c.node[i], parent: c.parent[i], depth: c.depth[i], x0: c.x0[i], width: c.width[i], gpu: c.gpu[i],
      cpu: c.cpu[i], count: c.count[i], kernels: c.kernels[i], name: names[c.label[i]] ?? "",
    });
  }
  const w = m.window as [number, number] | null | undefined;
  return {
    nodes, total: Number(m.total) || 0, by: String(m.by ?? ""), measure: m.measure === "cpu" ? "cpu" : "gpu",
    window: Array.isArray(w) ? [Number(w[0]), Number(w[1])] : null,
  };
}

/** The path of a node: its ancestors' names and its own, joined by " / ". */
export function nodePath(data: IcicleData, i: number): string {
  const byNode = new Map(data.nodes.map((n, k) => [n.node, k]));
  const parts: string[] = [];
  let k: number | undefined = i;
  while (k !== undefined) {
    const n: IcicleNode = data.nodes[k];
    parts.unshift(n.name);
    k = n.parent >= 0 ? byNode.get(n.parent) : undefined;
  }
  return parts.join(" / ");
}

/** The hover text of a node (durations by the shared rule). */
export function nodeText(data: IcicleData, i: number): string {
  const n = data.nodes[i];
  const share = data.total > 0 ? (100 * n.width) / data.total : 0;
  return `${nodePath(data, i)}\nGPU ${formatTime(n.gpu)} · CPU ${formatTime(n.cpu)} · ` +
    `${n.count.toLocaleString("en-US")} × · ${n.kernels.toLocaleString("en-US")} kernels · ` +
    `${shareText(share)} of ${data.measure.toUpperCase()} time`;
}

/** The node under (x, y) in CSS px of a canvas `width` wide, or -1. */
export function nodeAt(data: IcicleData, width: number, x: number, y: number): number {
  if (!(data.total > 0)) return -1;
  const depth = Math.floor(y / ICICLE_ROW_H);
  const t = (x / width) * data.total;
  for (let i = 0; i < data.nodes.length; i++) {
    const n = data.nodes[i];
    if (n.depth === depth && n.width > 0 && t >= n.x0 && t < n.x0 + n.width) return i;
  }
  return -1;
}

export class IciclePanel {
  readonly el: HTMLDivElement;
  private by: HTMLSelectElement;
  private measure: HTMLSelectElement;
  private note: HTMLSpanElement;
  private canvas: HTMLCanvasElement;
  private hover: HTMLDivElement;
  data: IcicleData | null = null;
  private width = 800;

  constructor(private onPick: (node: number) => void, private onControls: (by: string, measure: string) => void) {
    this.el = el("div", "pv-icicle");
    this.el.style.display = "none";
    const head = el("div", "pv-icicle-head", this.el);
    el("span", "pv-icicle-title", head).textContent = "GPU time by";
    this.by = el("select", "pv-icicle-by", head);
    for (const k of BY) {
      const o = document.createElement("option");
      o.value = k;
      o.textContent = k;
      this.by.appendChild(o);
    }
    this.measure = el("select", "pv-icicle-measure", head);
    for (const [k, text] of [["gpu", "sized by GPU time"], ["cpu", "sized by CPU time"]]) {
      const o = document.createElement("option");
      o.value = k;
      o.textContent = text;
      this.measure.appendChild(o);
    }
    this.note = el("span", "pv-icicle-note", head);
    const change = (): void => this.onControls(this.by.value, this.measure.value);
    this.by.addEventListener("change", change);
    this.measure.addEventListener("change", change);
    this.canvas = el("canvas", "pv-icicle-canvas", this.el);
    this.hover = el("div", "pv-icicle-hover", this.el);
    this.canvas.addEventListener("mousemove", (e) => this.onMove(e));
    this.canvas.addEventListener("mouseleave", () => { this.hover.textContent = ""; });
    this.canvas.addEventListener("click", (e) => {
      const i = this.at(e);
      if (i >= 0 && this.data) this.onPick(this.data.nodes[i].node);
    });
  }

  private at(e: MouseEvent): number {
    if (!this.data) return -1;
    const r = this.canvas.getBoundingClientRect();
    return nodeAt(this.data, this.width, e.clientX - r.left, e.clientY - r.top);
  }

  private onMove(e: MouseEvent): void {
    const i = this.at(e);
    this.hover.textContent = i >= 0 && this.data ? nodeText(this.data, i) : "";
    this.canvas.dataset.hover = i >= 0 && this.data ? String(this.data.nodes[i].node) : "";
  }

  update(data: IcicleData | null, width: number): void {
    this.data = data;
    this.el.style.display = data ? "" : "none";
    if (!data) return;
    this.by.value = data.by;
    this.measure.value = data.measure;
    this.by.previousElementSibling!.textContent = data.measure === "gpu" ? "GPU time by" : "CPU time by";
    this.note.textContent = data.window
      ? `in the selected range ${formatTime(data.window[0])} – ${formatTime(data.window[1])}` : "";
    this.resize(width);
  }

  resize(width: number): void {
    this.width = Math.max(100, width);
    if (this.data) this.draw();
  }

  draw(): void {
    const data = this.data;
    if (!data) return;
    const t0 = performance.now();
    const dpr = window.devicePixelRatio || 1;
    const depth = data.nodes.reduce((d, n) => Math.max(d, n.depth), 0) + 1;
    const h = Math.min(depth, 24) * ICICLE_ROW_H;
    this.canvas.width = Math.round(this.width * dpr);
    this.canvas.height = Math.round(h * dpr);
    this.canvas.style.width = `${this.width}px`;
    this.canvas.style.height = `${h}px`;
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, this.width, h);
    ctx.font = "11px sans-serif";
    ctx.textBaseline = "middle";
    const k = data.total > 0 ? this.width / data.total : 0;
    let drawn = 0;
    data.nodes.forEach((n, i) => {
      const w = n.width * k;
      if (w < 0.5 || n.depth >= 24) return;
      const x = n.x0 * k;
      const y = n.depth * ICICLE_ROW_H;
      ctx.fillStyle = n.name === "(unattributed)" ? "#bab0ac" : PALETTE[(n.depth + i) % PALETTE.length];
      ctx.fillRect(x, y, Math.max(w - 1, 0.5), ICICLE_ROW_H - 1);
      drawn++;
      if (w > 40) {
        ctx.save();
        ctx.beginPath();
        ctx.rect(x, y, w - 1, ICICLE_ROW_H);
        ctx.clip();
        ctx.fillStyle = "#fff";
        ctx.fillText(`${isolated(n.name)} ${formatTime(n.width)}`, x + 3, y + ICICLE_ROW_H / 2);
        ctx.restore();
      }
    });
    this.el.dataset.nodes = String(data.nodes.length);
    this.el.dataset.drawn = String(drawn);
    this.el.dataset.drawMs = (performance.now() - t0).toFixed(2);
  }
}

/** The icicle ("Breakdown" in the toolbar; jupyter_profview/widget/icicle.py): a click on a node
 * selects what is under it, the node kind and measure switches ask for another tree. */
export const ICICLE_PANEL: PanelModule = {
  name: "icicle",
  traits: ["_icicle"],
  toolbar: "Breakdown",
  create: (host) => {
    const panel = new IciclePanel((node) => host.send({ _icicle_pick: { node, token: Date.now() } }),
      (by, measure) => host.send({ icicle_by: by, icicle_measure: measure }));
    return {
      el: panel.el,
      shown: () => panel.data !== null,
      load: () => {
        const t0 = performance.now();
        panel.update(parseIcicle(host.frame("_icicle")), host.root.clientWidth || 800);
        // decode + parse + first draw of this tree (benchmarks/bench_icicle.py reads it)
        host.root.dataset.icicleMs = (performance.now() - t0).toFixed(2);
      },
      resize: (width) => panel.resize(width - 12),
    };
  },
};
