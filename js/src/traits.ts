// Reading the kernel's synced traits for a view: which traits it follows, `_info`, the binary
// frames, the highlight, and the view to start with (a saved `_view` or a pending zoom request).

import type { AnyModel } from "@anywidget/types";
import { decodeFrame, emptyFrame, type Frame } from "./codec";
import { TRAIT_SPEC, type TraitName } from "./trait_spec";
import { clampView, sameView, zoomToRange, type Bounds, type View } from "./viewport";

export interface Info {
  format?: string; source?: string; time_unit?: string; duration?: number; base_time_ns?: number;
  /** The first event's start when negative (ranks aligned on a step), else 0. */
  start?: number;
  event_count?: number; color_by?: string; legend?: unknown; has_memory?: boolean;
  /** The kernel / collective numbers this trace can be coloured by (widget/metric_colors.py). */
  color_options?: string[];
  has_allocations?: boolean; has_flows?: boolean; static?: boolean; message?: string;
  /** Several ranks (a TraceSet): each rank's clock offset; the step they are aligned on. */
  ranks?: unknown; align?: { step?: number; at?: number } | null;
}

/** The traits whose `change:` a view handles (ProfView.onTrait): those the spec marks `view`. */
export const VIEW_TRAITS: readonly TraitName[] = (Object.keys(TRAIT_SPEC) as TraitName[]).filter((n) => TRAIT_SPEC[n].view);
export type ViewTrait = TraitName;

/** The traits the server's session keeps that the browser sets (the HTTP model sends these). */
export const SESSION_TRAITS: ReadonlySet<string> = new Set((Object.keys(TRAIT_SPEC) as TraitName[])
  .filter((n) => TRAIT_SPEC[n].session && TRAIT_SPEC[n].setBy !== "kernel"));

interface ZoomRequest { start?: number; end?: number; token?: unknown }

export function readInfo(model: AnyModel): Info {
  return (model.get("_info") as Info | undefined) ?? {};
}

/** A binary frame trait, decoded; an empty frame (and `onError`) when it does not decode. */
export function readFrame(model: AnyModel, name: string, onError: (text: string) => void): Frame {
  try {
    return decodeFrame(model.get(name) as DataView | undefined);
  } catch (err) {
    onError(`${name}: ${String(err)}`);
    return emptyFrame();
  }
}

/** The ids of a `_highlight` frame (null: nothing highlighted). */
export function highlightIds(frame: Frame): Set<number> | null {
  const ids = frame.columns.id;
  return ids && ids.length ? new Set(Array.from(ids)) : null;
}

/**
 * The view to open with: a zoom request made before the view was shown wins over a whole-trace
 * `_view`; else the saved `_view`, else the whole trace. Also the zoom request's token (seen).
 */
export function initialView(model: AnyModel, bounds: Bounds): { view: View; zoomToken: unknown } {
  const v = model.get("_view") as Partial<View> | undefined;
  const z = model.get("_zoom_request") as ZoomRequest | undefined;
  const full = { start: bounds.min, end: bounds.max };
  const saved = v && Number(v.end) > Number(v.start) ? clampView({ start: Number(v.start), end: Number(v.end) }, bounds) : null;
  if (z && Number(z.end) > Number(z.start) && (!saved || sameView(saved, full))) {
    return { view: zoomToRange(Number(z.start), Number(z.end), bounds, 0), zoomToken: z.token };
  }
  return { view: saved ?? full, zoomToken: z?.token };
}

/** A new `_zoom_request` (its token differs from `seen`): the view it asks for, else null. */
export function zoomRequest(model: AnyModel, seen: unknown, bounds: Bounds): { view: View; token: unknown } | null {
  const z = model.get("_zoom_request") as ZoomRequest | undefined;
  if (!z || z.token === seen || !(Number(z.end) > Number(z.start))) return null;
  return { view: zoomToRange(Number(z.start), Number(z.end), bounds, 0), token: z.token };
}
