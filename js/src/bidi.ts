// Trace text kept apart from the numbers drawn beside it. A name is untrusted: a U+202E
// (right-to-left override) in it would reverse what follows ("180 µs" read as "sµ 081"), and a
// right-to-left name pulls an adjacent number to its side. Every name the viewer draws next to
// other text (canvas or DOM) goes through `isolated`: the explicit bidi controls removed, and a
// name with right-to-left characters wrapped in FIRST STRONG ISOLATE ... POP DIRECTIONAL ISOLATE
// (the in-text form of `<bdi>` / `unicode-bidi: isolate`), which canvas text honours too.

/** The explicit embedding, override and isolate controls: U+202A–202E, U+2066–2069. */
const CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;
/** Strong right-to-left characters (Hebrew, Arabic, Syriac, Thaana, NKo ..., their presentation
 * forms, the RLM and ALM marks, and the right-to-left planes of the SMP). */
const RTL = /[\u0590-\u08FF\uFB1D-\uFDFF\uFE70-\uFEFF\u200F\u061C]|[\u{10800}-\u{10FFF}\u{1E800}-\u{1EFFF}]/u;

/** `text` without bidi controls. */
export function plain(text: string): string {
  return text.replace(CONTROLS, "");
}

/** `text` without bidi controls and, if it has right-to-left characters, isolated (FSI … PDI). */
export function isolated(text: string): string {
  const t = plain(text);
  return RTL.test(t) ? `\u2068${t}\u2069` : t;
}
