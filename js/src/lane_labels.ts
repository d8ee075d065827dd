// Lane names that keep their informative end, cut by measured text width (pure: the caller
// passes how wide a text draws, `ctx.measureText` on the page, a fixed width per character in
// tests), and the label column's width fitted to them.

/** How wide `text` draws (CSS px). */
export type Measure = (text: string) => number;

/** The label column fits its lanes' names up to this width (CSS px) ... */
export const LABEL_COLUMN_CAP = 300;
/** ... and never narrower than this (the column's old fixed width: short names keep room). */
export const LABEL_COLUMN_MIN = 150;
/** Left padding of a lane name inside its group (labels.ts draws it at `8 + indent`). */
export const LANE_PAD = 8;

/** A trailing id: "tf_XLAPjRtCpuClient/7435379619830985549" -> name, "/", digits. */
const TRAILING_ID = /^(.*[^\s/:#_-])([/:#_-]|\s)(-?\d{4,})$/;
/** Kineto's "thread 23695 (python3.8)": the thread's id and its name. */
const KINETO_THREAD = /^thread (\d+) \((.+)\)$/;

/**
 * `text` cut to draw within `widthPx`, keeping what tells a lane from its neighbours:
 * - a trailing id ("tf_XLAPjRtCpuClient/7435379619830985549") keeps the whole name and the
 *   id's last digits ("tf_XLAPjRtCpuClient/…85549"), never the id at the cost of the name;
 * - Kineto's "thread 23695 (python3.8)" drops the word "thread" first ("23695 (python3.8)"), then
 *   reads as a name with a trailing id ("python3.8 …695", "python3.8");
 * - otherwise whole words (or path components) are dropped from the middle ("Trace … Profiler",
 *   "/…task:0/device:CPU:0 Compute"), never a cut inside a word when a cut between words
 *   fits; a single word too long for the column is cut at its end ("__cupti_prof…").
 * Returns "" when not even "…" fits.
 */
export function fitLane(text: string, widthPx: number, measure: Measure): string {
  if (measure(text) <= widthPx) return text;
  if (measure("…") > widthPx) return "";
  const id = TRAILING_ID.exec(text);
  if (id) {
    const [, name, sep, digits] = id;
    for (let k = digits.length - 1; k >= 3; k--) {
      const out = `${name}${sep}…${digits.slice(-k)}`;
      if (measure(out) <= widthPx) return out;
    }
    return fitWords(name, widthPx, measure);
  }
  const kineto = KINETO_THREAD.exec(text);
  if (kineto) {
    const short = `${kineto[1]} (${kineto[2]})`;
    if (measure(short) <= widthPx) return short;
    return fitLane(`${kineto[2]} ${kineto[1]}`, widthPx, measure); // the name, then its id's end
  }
  return fitWords(text, widthPx, measure);
}

/** Whole words dropped from the middle (the most text kept, the end counting double), else an end cut. */
export function fitWords(text: string, widthPx: number, measure: Measure): string {
  if (measure(text) <= widthPx) return text;
  // words with their separator: "Trace ", "PyTorch ", "Profiler"; "/job:localhost/", "replica:0/" ...
  const words = text.match(/[^\s/]+[\s/]*|[\s/]+/g) ?? [text];
  let best = "";
  let score = 0;
  for (let head = 0; head < words.length; head++) {
    for (let tail = words.length - 1; tail > head; tail--) {
      const front = words.slice(0, head).join("");
      const back = words.slice(tail).join("");
      // the most text kept, the end counting double (the informative end: "…/device:CPU:0 Compute")
      const n = front.length + 2 * back.length;
      if (n <= score) continue;
      const out = front.endsWith(" ") ? `${front}… ${back}` : `${front}…${back}`;
      if (measure(out) > widthPx) continue;
      best = out;
      score = n;
    }
  }
  if (best) return best;
  return cutEnd(text, widthPx, measure);
}

/** `text` cut at its end ("__cupti_prof…") to draw within `widthPx`. */
export function cutEnd(text: string, widthPx: number, measure: Measure): string {
  if (measure(text) <= widthPx) return text;
  let lo = 0;
  let hi = text.length - 1;
  while (lo < hi) { // the longest prefix that fits with its "…"
    const mid = Math.ceil((lo + hi) / 2);
    if (measure(`${text.slice(0, mid)}…`) <= widthPx) lo = mid;
    else hi = mid - 1;
  }
  return measure(`${text.slice(0, lo)}…`) <= widthPx ? `${text.slice(0, lo)}…` : "";
}

/**
 * Width of the label column that shows every name whole: the widest `name` drawn at its
 * `indent` (plus the lane padding and a margin), between `LABEL_COLUMN_MIN` and `cap`.
 */
export function labelColumnWidth(names: Array<{ name: string; indent: number }>, measure: Measure,
  cap = LABEL_COLUMN_CAP): number {
  let widest = 0;
  for (const { name, indent } of names) widest = Math.max(widest, LANE_PAD + indent + measure(name) + 8);
  return Math.round(Math.min(cap, Math.max(LABEL_COLUMN_MIN, widest)));
}

/** Text explaining a lane named "... [overlap N]" (`model.OVERLAP_TAG`), or null for another lane. */
export function overlapNote(name: string): string | null {
  const m = /\[overlap (\d+)\]$/.exec(name);
  if (!m) return null;
  return `overlap lane ${m[1]}: slices of this thread that partly overlap another slice (start inside it, `
    + "end after it: no nesting), moved with what runs inside them to an extra lane; the longer slice "
    + "keeps the thread's lane";
}
