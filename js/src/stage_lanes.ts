// A pipeline run's stage lanes ("Stage lanes" in the toolbar; `_stage_lanes`,
// jupyter_profview/widget/stage_lanes.py): one lane per stage with its actions coloured by kind and
// labelled by microbatch, the stage's bubbles shaded behind them, the legend of every colour drawn,
// and the per-stage compute / bubble table. A row click selects the stage's actions (`_stage_pick`
// {stage}); an action click selects it and its stage's row ({action}). Every number is the kernel's:
// this module only formats them (axis.ts).

import { formatTime, shareText } from "./axis";
import { el } from "./dom";
import type { PanelModule } from "./panel";

export interface LaneGroup { group: string; color: string }
export interface LaneStage {
  stage: number; rank: number; actions: number; compute: number; bubble: number; dur: number; share: number;
  bubbles: Array<[number, number]>;
}
export interface LaneStep { step: string; rank: number; start: number; end: number }
export interface LaneActions {
  stage: number[]; kind: string[]; step: string[]; group: string[]; microbatch: number[]; start: number[]; end: number[];
  id: number[];
}
export interface StageLanesData {
  origin: number; groups: LaneGroup[]; steps: LaneStep[]; stages: LaneStage[]; actions: LaneActions;
  selected: number;
}

const SVG = "http://www.w3.org/2000/svg";
const LABEL_W = 118;
const LANE_H = 22;
const LANE_GAP = 4;
const AXIS_H = 16;
/** the narrowest action (px) that gets its microbatch label */
const MIN_LABEL_PX = 9;

/** The lanes of a `_stage_lanes` value; null while they are not shown. */
export function parseStageLanes(value: unknown): StageLanesData | null {
  const v = (value ?? {}) as Record<string, unknown>;
  if (!Array.isArray(v.stages) || typeof v.actions !== "object" || v.actions === null) return null;
  return {
    origin: Number(v.origin ?? 0), groups: (v.groups ?? []) as LaneGroup[], steps: (v.steps ?? []) as LaneStep[],
    stages: v.stages as LaneStage[], actions: v.actions as LaneActions,
    selected: typeof v.selected === "number" ? v.selected : -1,
  };
}

/** Whether the trace names pipeline actions (the toolbar shows the button). */
export function lanesAvailable(value: unknown): boolean {
  return Boolean((value as { available?: unknown } | null)?.available);
}

function svg<K extends keyof SVGElementTagNameMap>(tag: K, parent: Element, attrs: Record<string, string | number>):
  SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  parent.appendChild(node);
  return node;
}

/** The panel: title, lanes (SVG), legend, table. */
export class StageLanes {
  readonly el: HTMLDivElement;
  private title: HTMLSpanElement;
  private picker: HTMLSelectElement;
  /** the step the lanes show ("": every step; null: not picked yet, the first step) */
  private step: string | null = null;
  private plot: SVGSVGElement;
  private legend: HTMLDivElement;
  private rows: HTMLDivElement;
  private data: StageLanesData | null = null;
  private width = 800;

  constructor(private onStage: (stage: number) => void, private onAction: (index: number) => void) {
    this.el = el("div", "pv-stage-lanes");
    this.el.style.display = "none";
    const head = el("div", "pv-sl-head", this.el);
    this.title = el("span", "pv-sl-title", head);
    this.picker = el("select", "pv-sl-picker", head);
    this.picker.title = "The step the lanes show (the table counts every profiled step)";
    this.picker.addEventListener("change", () => {
      this.step = this.picker.value;
      this.draw();
      this.select(Number(this.el.dataset.selectedStage ?? -1), -1);
    });
    this.plot = document.createElementNS(SVG, "svg");
    this.plot.classList.add("pv-sl-plot");
    this.el.appendChild(this.plot);
    this.plot.addEventListener("click", (e) => {
      const k = Number((e.target as Element).getAttribute("data-index"));
      if (!this.data || !(e.target as Element).classList.contains("pv-sl-action") || !Number.isInteger(k)) return;
      this.select(this.data.actions.stage[k], k);
      this.onAction(k);
    });
    this.legend = el("div", "pv-sl-legend", this.el);
    const table = el("div", "pv-sl-table", this.el);
    const th = el("div", "pv-sl-row pv-sl-th", table);
    for (const [cls, text] of [["stage", "stage"], ["rank", "rank"], ["actions", "actions"],
      ["compute", "compute"], ["bubble", "bubble"], ["share", "bubble share"]]) {
      el("span", `pv-sl-${cls}`, th).textContent = text;
    }
    this.rows = el("div", "pv-sl-rows", table);
    this.rows.addEventListener("click", (e) => {
      const row = (e.target as HTMLElement).closest<HTMLElement>(".pv-sl-row");
      const stage = Number(row?.dataset.stage);
      if (!this.data || !row || !Number.isInteger(stage)) return;
      this.select(stage, -1);
      this.onStage(stage);
    });
  }

  get shown(): boolean {
    return this.data !== null;
  }

  update(data: StageLanesData | null): void {
    this.data = data;
    this.el.style.display = data ? "" : "none";
    this.el.dataset.stages = data ? String(data.stages.length) : "0";
    if (!data) return;
    const steps = [...new Set(data.steps.map((s) => s.step))];
    this.title.textContent = `Stage lanes: ${data.stages.length} stages, ${data.actions.stage.length} actions over ` +
      `${steps.length} step${steps.length === 1 ? "" : "s"}; shaded: each stage's bubble. Showing`;
    if (this.step === null || (this.step !== "" && !steps.includes(this.step))) this.step = steps[0] ?? "";
    this.picker.replaceChildren();
    for (const [value, text] of [...steps.map((s) => [s, s]), ["", "all steps"]]) {
      const o = el("option", "", this.picker);
      o.value = value;
      o.textContent = text;
    }
    this.picker.value = this.step;
    this.draw();
    this.drawLegend(data);
    this.drawRows(data);
    this.select(data.selected, -1);
  }

  resize(width: number): void {
    this.width = Math.max(320, width);
    if (this.data) this.draw();
  }

  /** Mark `stage`'s row and actions selected (-1: none), and action `action` (-1: none). */
  private select(stage: number, action: number): void {
    this.el.dataset.selectedStage = String(stage);
    for (const r of this.rows.querySelectorAll<HTMLElement>(".pv-sl-row")) {
      r.classList.toggle("pv-row-selected", Number(r.dataset.stage) === stage);
    }
    let n = 0;
    for (const a of this.plot.querySelectorAll<SVGRectElement>(".pv-sl-action")) {
      const k = Number(a.dataset.index);
      const on = action >= 0 ? k === action : Number(a.dataset.stage) === stage;
      a.classList.toggle("pv-sl-selected", on);
      if (on) n++;
    }
    this.el.dataset.selectedActions = String(n);
  }

  private draw(): void {
    const data = this.data;
    if (!data) return;
    const plot = this.plot;
    plot.replaceChildren();
    const shown = data.steps.filter((s) => this.step === "" || s.step === this.step);
    const begin = Math.min(...shown.map((s) => s.start));
    const end = Math.max(begin + 1, ...shown.map((s) => s.end));
    const w = this.width - LABEL_W - 12;
    const x = (t: number): number => LABEL_W + ((t - begin) / (end - begin)) * w;
    this.el.dataset.step = this.step ?? "";
    const height = AXIS_H + data.stages.length * (LANE_H + LANE_GAP);
    plot.setAttribute("width", String(this.width));
    plot.setAttribute("height", String(height));
    const colors = new Map(data.groups.map((g) => [g.group, g.color]));
    const laneOf = new Map(data.stages.map((s, i) => [s.stage, i]));
    const y = (i: number): number => i * (LANE_H + LANE_GAP);
    data.stages.forEach((s, i) => {
      const label = svg("text", plot, { x: 4, y: y(i) + LANE_H / 2 + 4, class: "pv-sl-lane-label" });
      label.textContent = `stage ${s.stage} · rank ${s.rank}`;
      const lane = svg("g", plot, { class: "pv-sl-lane", "data-stage": s.stage });
      for (const st of shown) {
        if (st.rank !== s.rank) continue;
        svg("rect", lane, { x: x(st.start), y: y(i), width: Math.max(1, x(st.end) - x(st.start)), height: LANE_H,
          class: "pv-sl-step" });
      }
      // the bubbles: one path per lane (thousands of gaps stay one element)
      const mine = shown.filter((st) => st.rank === s.rank);
      const d = s.bubbles.filter(([a]) => mine.some((st) => st.start <= a && a < st.end)).map(([a, b]) => `M${x(a).toFixed(2)},${y(i)}h${Math.max(0.5, x(b) - x(a)).toFixed(2)}` +
        `v${LANE_H}h${-Math.max(0.5, x(b) - x(a)).toFixed(2)}z`).join("");
      svg("path", lane, { d, fill: colors.get("bubble") ?? "#eee", class: "pv-sl-bubble",
        "data-color": colors.get("bubble") ?? "" });
    });
    const a = data.actions;
    for (let k = 0; k < a.stage.length; k++) {
      const i = laneOf.get(a.stage[k]);
      if (i === undefined || (this.step !== "" && a.step[k] !== this.step)) continue;
      const x0 = x(a.start[k]);
      const wpx = Math.max(1, x(a.end[k]) - x0);
      const color = colors.get(a.group[k]) ?? "#888";
      const r = svg("rect", plot, { x: x0, y: y(i) + 2, width: wpx, height: LANE_H - 4, fill: color,
        class: "pv-sl-action", "data-index": k, "data-stage": a.stage[k], "data-group": a.group[k],
        "data-color": color });
      const title = svg("title", r, {});
      const mb = a.microbatch[k] >= 0 ? ` microbatch ${a.microbatch[k]}` : "";
      title.textContent = `stage ${a.stage[k]} ${a.kind[k]}${mb} (${a.step[k]}): ${formatTime(a.end[k] - a.start[k])}`;
      if (a.microbatch[k] >= 0 && wpx >= MIN_LABEL_PX) {
        const t = svg("text", plot, { x: x0 + wpx / 2, y: y(i) + LANE_H / 2 + 4, class: "pv-sl-mb",
          "text-anchor": "middle", "data-index": k });
        t.textContent = String(a.microbatch[k]);
      }
    }
    const axisY = height - 4;
    for (let j = 0; j <= 4; j++) {
      const t = begin + ((end - begin) * j) / 4;
      const tick = svg("text", plot, { x: x(t), y: axisY, class: "pv-sl-tick",
        "text-anchor": j === 0 ? "start" : j === 4 ? "end" : "middle" });
      tick.textContent = `+${formatTime(t - begin)}`;
    }
  }

  private drawLegend(data: StageLanesData): void {
    this.legend.replaceChildren();
    for (const g of data.groups) {
      const item = el("span", "pv-sl-key", this.legend);
      item.dataset.color = g.color;
      item.dataset.group = g.group;
      el("span", "pv-swatch", item).style.background = g.color;
      el("span", "", item).textContent = g.group === "bubble" ? "bubble (not this stage's compute)" : g.group;
    }
  }

  private drawRows(data: StageLanesData): void {
    this.rows.replaceChildren();
    for (const s of data.stages) {
      const row = el("div", "pv-sl-row", this.rows);
      row.dataset.stage = String(s.stage);
      row.title = "Select this stage's actions";
      el("span", "pv-sl-stage", row).textContent = String(s.stage);
      el("span", "pv-sl-rank", row).textContent = String(s.rank);
      el("span", "pv-sl-actions", row).textContent = s.actions.toLocaleString("en-US");
      el("span", "pv-sl-compute", row).textContent = formatTime(s.compute);
      el("span", "pv-sl-bubble", row).textContent = formatTime(s.bubble);
      el("span", "pv-sl-share", row).textContent = shareText(100 * s.share);
    }
  }
}

/** The stage lanes of a pipeline run ("Stage lanes" in the toolbar; widget/stage_lanes.py). */
export const STAGE_LANES_PANEL: PanelModule = {
  name: "stage_lanes",
  traits: ["_stage_lanes"],
  toolbar: "Stage lanes",
  create: (host) => {
    const lanes = new StageLanes(
      (stage) => host.send({ _stage_pick: { stage, token: Date.now() } }),
      (action) => host.send({ _stage_pick: { action, token: Date.now() } }));
    let available = false;
    return {
      el: lanes.el,
      shown: () => lanes.shown,
      available: () => available,
      resize: (width) => lanes.resize(width - 12),
      load: () => {
        const value = host.model.get("_stage_lanes");
        available = lanesAvailable(value);
        lanes.resize(host.root.clientWidth || 800);
        lanes.update(parseStageLanes(value));
      },
    };
  },
};
