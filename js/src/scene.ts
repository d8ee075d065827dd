// What the timeline draws (TimelineScene) and the geometry shared by the timeline, its label and
// overlay layers, the memory panel and the input handlers.

import type { TimeUnit } from "./axis";
import type { Layout, TrackInfo } from "./layout";
import { COMMUNICATION_COLOR } from "./palette_gen";
import type { SummaryLane } from "./summary";
import type { LegendEntry, Theme } from "./theme";
import type { View } from "./viewport";

export const AXIS_H = 22;
/**
 * Width (CSS px) of the lane-label column; the user widens it by dragging its edge (input.ts).
 * A live binding: every importer sees the new value (one width for the views on a page).
 */
export let GUTTER_W = 150;
export const GUTTER_MIN = 60;

/** Set the label column's width, keeping at least 120 px of plot in a `totalW` wide canvas. */
export function setGutterWidth(w: number, totalW: number): number {
  GUTTER_W = Math.round(Math.max(GUTTER_MIN, Math.min(w, Math.max(GUTTER_MIN, totalW - 120))));
  return GUTTER_W;
}
/** Colour of communication (the palette's: jupyter_profview/palette.py). */
export const COMM_COLOR = COMMUNICATION_COLOR;

export interface Flow {
  source: number; target: number;
  source_track: number; target_track: number;
  source_time: number; target_time: number;
}

export interface SelectedBox { id: number; track: number; depth: number; start: number; dur: number }

export interface TimelineScene {
  view: View;
  unit: TimeUnit;
  tracks: TrackInfo[];
  layout: Layout;
  legend: LegendEntry[];
  theme: Theme;
  scrollY: number;
  selected: SelectedBox | null;
  hoverBox: number;
  range: [number, number] | null;
  rangeTracks: number[] | null;
  flows: Flow[];
  /** The shown critical path's launch / gap / sync edges (arrows in the path's colour). */
  pathFlows?: Flow[];
  /** Busy lanes of collapsed groups, by group key (`_summary`). */
  summary?: Map<string, SummaryLane>;
  /** Text after a rank section's name in its header, by rank (its clock offset). */
  notes?: Map<number, string>;
  /** Intervals shaded on some lanes (a gpu_idle finding's idle time). */
  shading?: Shading | null;
}

/**
 * Time intervals shaded on some tracks: a gpu_idle finding's idle intervals on its GPU's lanes
 * (advice.ts). `drawn` is set by the drawing: the rectangles drawn last (tests read it).
 */
export interface Shading {
  tracks: number[];
  start: Float64Array;
  end: Float64Array;
  color: string;
  alpha: number;
  drawn: number;
}

/** Geometry shared by the timeline and memory panels. */
export const plotWidth = (cssWidth: number): number => Math.max(1, cssWidth - GUTTER_W);

/** A text drawn on the timeline, its box in canvas CSS px (the test hook's `labels()`). */
export interface LabelRect { kind: "lane" | "group" | "box"; text: string; x0: number; y0: number; x1: number; y1: number }

/** The canvas a layer draws on: its 2D context, CSS size and mean character width (px). */
export interface Surface {
  ctx: CanvasRenderingContext2D;
  w: number;
  h: number;
  charW: number;
  /** Where the texts drawn go (their boxes), when the caller keeps them. */
  labels?: LabelRect[];
}
