// Time axis: nice 1/2/5 tick steps, adaptive units, labels; plus small formatters.

export type TimeUnit = "ns" | "step";

export interface Tick { t: number; label: string }
export interface Ticks { step: number; unit: string; ticks: Tick[] }

const UNITS: Array<[number, string]> = [[1e9, "s"], [1e6, "ms"], [1e3, "µs"], [1, "ns"]];

/** The smallest 1, 2 or 5 × 10^k that is >= raw (raw > 0). */
export function niceStep(raw: number): number {
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const m = raw / p;
  // Guard against log10 rounding (e.g. raw = 1000 giving p = 100 and m = 10).
  const f = m <= 1 + 1e-9 ? 1 : m <= 2 + 1e-9 ? 2 : m <= 5 + 1e-9 ? 5 : 10;
  return f * p;
}

/** Display unit (scale, name) for a time step in nanoseconds: switches at 1e3, 1e6, 1e9. */
export function unitFor(stepNs: number): [number, string] {
  for (const u of UNITS) if (stepNs >= u[0]) return u;
  return [1, "ns"];
}

function decimalsFor(step: number): number {
  if (step >= 1) return 0;
  return Math.min(9, Math.max(0, Math.ceil(-Math.log10(step) - 1e-9)));
}

export interface AxisTicks extends Ticks {
  /** Offset mode (deep zoom far from the start): tick labels are "+…" offsets from `origin`. */
  origin: number | null;
  /** The absolute origin, shown once ("13.92 ms"); "" in absolute mode. */
  originLabel: string;
}

/** Most significant digits an absolute tick label may need before the axis switches to offsets. */
const MAX_LABEL_DIGITS = 4;

function intDigits(x: number): number {
  return x < 1 ? 1 : Math.floor(Math.log10(x) + 1e-9) + 1;
}

/**
 * Ticks for [t0, t1] drawn over `widthPx` pixels, at least `minSpacingPx` apart.
 * For "step" traces, steps are integers >= 1 and labels are plain step numbers.
 *
 * Times: labels are absolute ("200 µs", "13.92 ms") while they need at most 4 significant digits
 * in the step's unit or the next larger one; deeper in (e.g. a 20 µs window 13.9 ms into the
 * trace: "13920 µs", "13.922 ms") they become offsets ("+2 µs") from `origin` = the last tick at
 * or before the window start, whose absolute time is shown once as `originLabel`.
 */
export function ticks(t0: number, t1: number, widthPx: number, unit: TimeUnit = "ns", minSpacingPx = 90): AxisTicks {
  const span = t1 - t0;
  if (!(span > 0) || !(widthPx > 0)) {
    return { step: 1, unit: unit === "step" ? "step" : "ns", ticks: [], origin: null, originLabel: "" };
  }
  let step = niceStep((span * minSpacingPx) / widthPx);
  const first = Math.ceil(t0 / step);
  const last = Math.floor(t1 / step);
  const out: Tick[] = [];
  if (unit === "step") {
    step = Math.max(1, step);
    for (let k = Math.ceil(t0 / step); k <= Math.floor(t1 / step) && out.length < 1000; k++) {
      out.push({ t: k * step, label: String(k * step) });
    }
    return { step, unit: "step", ticks: out, origin: null, originLabel: "" };
  }
  const far = Math.max(Math.abs(t0), Math.abs(t1));
  // Absolute labels in the step's unit or the next larger one, if either needs <= 4 digits.
  const u = UNITS.indexOf(unitFor(step));
  let [scale, name] = UNITS[u];
  let dec = decimalsFor(step / scale);
  let origin: number | null = null;
  let originLabel = "";
  if (intDigits(far / scale) + dec > MAX_LABEL_DIGITS) {
    const bigger = UNITS[Math.max(0, u - 1)];
    const dec2 = decimalsFor(step / bigger[0]);
    if (u > 0 && intDigits(far / bigger[0]) + dec2 <= MAX_LABEL_DIGITS) {
      [scale, name] = bigger;
      dec = dec2;
    } else {
      origin = Math.floor(t0 / step) * step;
      [scale, name] = unitFor(Math.max(step, t1 - origin));
      dec = decimalsFor(step / scale);
      const [os, on] = unitFor(Math.abs(origin) || 1);
      originLabel = `${(origin / os).toFixed(decimalsFor(step / os))} ${on}`;
    }
  }
  for (let k = first; k <= last && out.length < 1000; k++) {
    const t = k * step;
    const v = (origin === null ? t : (k * step - origin)) / scale;
    const text = (Math.abs(v) < 1e-12 ? 0 : v).toFixed(dec);
    out.push({ t, label: origin === null ? `${text} ${name}` : `+${text} ${name}` });
  }
  return { step, unit: name, ticks: out, origin, originLabel };
}

/**
 * `x` rounded half away from zero to `d` decimals. The rounding works on the shortest decimal
 * text of `x` (what `String(x)` and Python's `repr` print), so 1.005 gives "1.01" and 9.995
 * gives "10.00" in both languages; `toFixed` rounds the binary value instead ("1.00").
 */
export function toFixedHalfUp(x: number, d: number): string {
  const [mant, expText] = Math.abs(x).toExponential().split("e");
  const digits = BigInt(mant.replace(".", ""));
  const shift = Number(expText) - (mant.replace(".", "").length - 1) + d; // |x|·10^d = digits·10^shift
  const ten = BigInt(10);
  let n: bigint;
  if (shift >= 0) n = digits * ten ** BigInt(shift);
  else {
    const div = ten ** BigInt(-shift);
    n = digits / div;
    if ((digits % div) * BigInt(2) >= div) n += BigInt(1);
  }
  let s = n.toString();
  if (d > 0) {
    s = s.padStart(d + 1, "0");
    s = `${s.slice(0, s.length - d)}.${s.slice(s.length - d)}`;
  }
  return (x < 0 && n !== BigInt(0) ? "-" : "") + s;
}

/** "1.500" → "1.5", "10.00" → "10", "400" stays "400" (only zeros after the point go). */
function stripZeros(text: string): string {
  return text.includes(".") ? text.replace(/0+$/, "").replace(/\.$/, "") : text;
}

/** Decimals for 4 significant digits of a value whose magnitude is `a` (integer digits are never dropped). */
function decimals4(a: number): number {
  return a >= 100 ? 1 : a >= 10 ? 2 : 3;
}

const NO_VALUE = "–";

/**
 * A duration or time, e.g. "400.4 µs", "1.5 ms", "12 steps" (the shared rule of
 * tests/shared_fixtures/format_numbers.json, same as jupyter_profview.widget.numbers):
 * the unit of |v| (ns, µs from 1e3, ms from 1e6, s from 1e9), 4 significant digits rounded
 * half away from zero (never fewer than the integer digits), trailing zeros after the point
 * dropped; a value that rounds to 1000 moves to the next unit; NaN/±Infinity → "–".
 */
export function formatTime(v: number, unit: TimeUnit = "ns"): string {
  if (!Number.isFinite(v)) return NO_VALUE;
  if (unit === "step") {
    const text = stripZeros(toFixedHalfUp(v, 3));
    return `${text} step${text === "1" || text === "-1" ? "" : "s"}`;
  }
  const a = Math.abs(v);
  let u = UNITS.length - 1;
  while (u > 0 && a >= UNITS[u - 1][0]) u--;
  for (;;) {
    const [scale, name] = UNITS[u];
    const x = v / scale;
    const text = toFixedHalfUp(x, decimals4(Math.abs(x)));
    if (u > 0 && Math.abs(Number(text)) >= 1000) {
      u--;
      continue;
    }
    return `${stripZeros(text)} ${name}`;
  }
}

const BYTE_UNITS = [" B", " KiB", " MiB", " GiB", " TiB", " PiB"];
const SI_PREFIXES = ["", " k", " M", " G", " T", " P", " E"];

/** |v| in the largest unit of `units` (each `base` times the last) that keeps it >= 1, by the
 * 4-significant-digit rule; a value that rounds to `base` moves to the next unit; whole numbers
 * in the first unit when `wholeFirst`; NaN → "–". */
function formatScaled(v: number, base: number, units: string[], wholeFirst: boolean): string {
  if (!Number.isFinite(v)) return NO_VALUE;
  let x = Math.abs(v);
  let i = 0;
  while (x >= base && i < units.length - 1) {
    x /= base;
    i++;
  }
  for (;;) {
    const text = toFixedHalfUp(x, i === 0 && wholeFirst ? 0 : decimals4(x));
    if (i < units.length - 1 && Number(text) >= base) {
      x /= base;
      i++;
      continue;
    }
    const out = stripZeros(text);
    return `${v < 0 && out !== "0" ? "-" : ""}${out}${units[i]}`;
  }
}

/**
 * Bytes with binary prefixes: 1536 → "1.5 KiB" (same rule as durations: 4 significant digits,
 * half away from zero, zeros after the point dropped; whole bytes below 1 KiB; a value that
 * rounds to 1024 moves to the next prefix; NaN → "–").
 */
/** A share (0-100) as "93.6 %": one decimal, rounded half up (numbers.py `share_text`). */
export function shareText(share: number): string {
  return `${toFixedHalfUp(share, 1)} %`;
}

export function formatBytes(b: number): string {
  return formatScaled(b, 1024, BYTE_UNITS, true);
}

/**
 * A plain number (a counter's value): the durations' rule with decimal prefixes — 4 significant
 * digits, half away from zero, zeros after the point dropped, k/M/G/T/P/E from 1000 on (a value
 * that rounds to 1000 moves to the next prefix); NaN and infinities → "–".
 */
export function formatNumber(v: number): string {
  return formatScaled(v, 1000, SI_PREFIXES, false);
}
