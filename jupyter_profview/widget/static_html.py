"""``TraceWidget.save_html``: one self-contained, offline HTML file.

The bundle, the CSS and the widget state are inlined.  Everything that comes
from the trace (names, labels, paths) is *data*: it travels inside a
``<script type="application/json">`` block (bytes as base64, ``<``, ``>`` and
``&`` escaped as ``\\u003c``... so no tag can close the block) and the front
end renders it as text.  A small model shim stands in for the Jupyter widget
model; with no kernel behind it ``_info.static`` is true and the front end
shows the embedded overview only.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping
from typing import Any

_SHIM = r"""
const state = JSON.parse(document.getElementById("pv-state").textContent);
function bytesOf(b64) {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
const values = Object.assign({}, state.traits);
for (const key of state.binary) { const u = bytesOf(values[key]); values[key] = new DataView(u.buffer); }
const listeners = new Map();
function emit(name, ...args) { for (const cb of [...(listeners.get(name) || [])]) cb(...args); }
const model = {
  get: (key) => values[key],
  set: (key, value) => { values[key] = value; emit("change:" + key, value); emit("change"); },
  on: (name, cb) => {
    if (!listeners.has(name)) listeners.set(name, new Set());
    listeners.get(name).add(cb);
  },
  off: (name, cb) => {
    if (!name) { listeners.clear(); return; }
    const set = listeners.get(name);
    if (set) { if (cb) set.delete(cb); else set.clear(); }
  },
  save_changes: () => {},
  send: () => {},
  widget_manager: { get_model: async () => { throw new Error("no kernel: static page"); } },
};
const experimental = { invoke: async () => { throw new Error("no kernel: static page"); } };
const url = URL.createObjectURL(new Blob([bytesOf(state.esm)], { type: "text/javascript" }));
let def = (await import(url)).default;
if (typeof def === "function") def = await def();
const el = document.getElementById("pv-widget");
const signal = new AbortController().signal;
await def.initialize?.({ model, experimental, signal });
await def.render?.({ model, el, experimental, signal });
"""


def json_for_script(value: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">``."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def widget_html(traits: Mapping[str, Any], esm: bytes, css: str, *, title: str) -> str:
    """The page: ``traits`` (bytes values go base64), the ESM bundle and its CSS."""
    plain: dict[str, Any] = {}
    binary = []
    for key, value in traits.items():
        if isinstance(value, (bytes, bytearray, memoryview)):
            plain[key] = base64.b64encode(bytes(value)).decode("ascii")
            binary.append(key)
        else:
            plain[key] = value
    payload = {"traits": plain, "binary": binary, "esm": base64.b64encode(esm).decode("ascii")}
    safe_css = css.replace("</", "<\\/")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{html.escape(title)}</title>\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<style>\nbody {{ margin: 16px; font-family: sans-serif; }}\n{safe_css}\n</style>\n"
        "</head>\n<body>\n<div id=\"pv-widget\"></div>\n"
        f"<script type=\"application/json\" id=\"pv-state\">{json_for_script(payload)}</script>\n"
        f"<script type=\"module\">{_SHIM}</script>\n</body>\n</html>\n"
    )
