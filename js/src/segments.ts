// The segment view of a CUDA memory snapshot at the selected time (`_segments` frame,
// jupyter_profview/widget/alloc_timeline.py `segments_frame`, from analysis.allocator_state): each
// segment one bar, its blocks coloured by state (allocated / free), sizes with units. Names and
// frames are text (textContent), never HTML.

import { formatBytes, formatTime, type TimeUnit } from "./axis";
import type { Frame } from "./codec";
import { el } from "./dom";

export interface SegBlock { segment: number; address: number; size: number; free: boolean; stack: number }
export interface SegmentsData {
  device: string; time: number; segments: Array<{ address: number; size: number }>;
  blocks: SegBlock[]; stacks: string[][];
}

/** Blocks drawn at most (the rest are counted in the header). */
export const MAX_BLOCKS = 20000;
const COLORS = { allocated: "#4e79a7", free: "#e8e8e8" };

export const hex = (a: number): string => (Number.isFinite(a) ? `0x${a.toString(16)}` : "–");

export function parseSegments(frame: Frame): SegmentsData | null {
  const c = frame.columns;
  const m = frame.meta as Record<string, unknown>;
  if (!c.size) return null;
  const blocks: SegBlock[] = [];
  for (let i = 0; i < c.size.length; i++) {
    blocks.push({ segment: c.segment[i], address: c.address[i], size: c.size[i], free: c.state[i] === 1,
      stack: c.stack[i] });
  }
  const segs = Array.isArray(m.segments) ? (m.segments as Array<Record<string, unknown>>) : [];
  const stacks = Array.isArray(m.stacks) ? (m.stacks as unknown[]).map((s) => (Array.isArray(s) ? s.map(String) : [])) : [];
  return {
    device: String(m.device ?? ""), time: Number(m.time), blocks, stacks,
    segments: segs.map((s) => ({ address: Number(s.address), size: Number(s.size) })),
  };
}

/** The header line: the numbers of all segments at that time. */
export function segmentsSummary(d: SegmentsData, unit: TimeUnit): string {
  let allocated = 0;
  let free = 0;
  let largest = 0;
  for (const b of d.blocks) {
    if (b.free) { free += b.size; largest = Math.max(largest, b.size); } else allocated += b.size;
  }
  return `${d.device} at ${formatTime(d.time, unit)}: ${d.segments.length.toLocaleString("en-US")} segments · ` +
    `reserved ${formatBytes(allocated + free)} · allocated ${formatBytes(allocated)} · ` +
    `free ${formatBytes(free)} · largest free block ${formatBytes(largest)}`;
}

export class SegmentView {
  readonly el: HTMLDivElement;
  private head: HTMLDivElement;
  private body: HTMLDivElement;
  data: SegmentsData | null = null;

  constructor(private unit: TimeUnit, private onBlock: (text: string) => void) {
    this.el = el("div", "pv-segments");
    this.head = el("div", "pv-segments-head", this.el);
    this.body = el("div", "pv-segments-body", this.el);
    this.head.textContent = "Click the memory timeline: the segments at that time";
  }

  update(d: SegmentsData | null): void {
    this.data = d;
    this.body.replaceChildren();
    if (!d) return;
    this.head.textContent = segmentsSummary(d, this.unit);
    const biggest = d.segments.reduce((m, s) => Math.max(m, s.size), 1);
    const rows = d.segments.map((s) => {
      const row = el("div", "pv-seg", this.body);
      row.dataset.address = String(s.address);
      row.dataset.size = String(s.size);
      el("span", "pv-seg-label", row).textContent = `${hex(s.address)} · ${formatBytes(s.size)}`;
      const bar = el("div", "pv-seg-bar", row);
      bar.style.width = `calc((100% - 230px) * ${s.size / biggest})`;
      return bar;
    });
    d.blocks.slice(0, MAX_BLOCKS).forEach((b) => {
      const bar = rows[b.segment];
      const seg = d.segments[b.segment];
      if (!bar || !seg) return;
      const blk = el("span", "pv-seg-block", bar);
      const state = b.free ? "free" : "allocated";
      blk.dataset.state = state;
      blk.dataset.size = String(b.size);
      blk.dataset.address = String(b.address);
      blk.style.width = `${(100 * b.size) / seg.size}%`;
      blk.style.background = COLORS[state];
      const text = `${state} ${formatBytes(b.size)} at ${hex(b.address)}`;
      blk.title = text;
      if (b.size / biggest > 0.08) blk.textContent = formatBytes(b.size);
      blk.addEventListener("click", () => {
        const frames = b.free ? [] : d.stacks[b.stack] ?? [];
        this.onBlock([text, ...frames].join("\n"));
      });
    });
    if (d.blocks.length > MAX_BLOCKS) {
      el("div", "pv-segments-more", this.body).textContent =
        `${(d.blocks.length - MAX_BLOCKS).toLocaleString("en-US")} more blocks not drawn`;
    }
    this.el.dataset.blocks = String(Math.min(d.blocks.length, MAX_BLOCKS));
  }
}
