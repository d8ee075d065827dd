"""Widget benchmark: headless Chromium + JupyterLab on a 1,000,000-event PyTorch-shaped trace.

    python benchmarks/bench_widget.py [--events 1000000] [--repeat 5]

Generates the trace once with ``benchmarks/make_pytorch_trace.py`` (into
``benchmarks/data/``), loads it in a notebook kernel, then displays a fresh
widget ``--repeat`` times and prints medians of:

* first paint: from the widget output appearing in the page to the overview
  painted (the front end's ``window.__profview[i].firstPaint``; target <= 2 s);
* bytes received by the browser over the kernel websocket from "display" to
  first paint, and the widget's synced state as the kernel counts it (<= 4 MB);
* pan/zoom frame time p95 over wheel-zoom and drag-pan (``frameTimes``; <= 16 ms);
* ``_detail`` round trip (``detailTimes``, request sent -> reply decoded and drawable, for every
  request the front end sends; <= 150 ms), and where it went (``detailLog``): browser -> kernel
  handler start (websocket, server, kernel queue), handler time, handler end -> reply in the
  browser, decode, the wait for an in-flight request (not in the round trip), reply kB;
* kernel side: index build, overview, and one ``_detail`` computation.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.browser.lab import CHROMIUM, LabNotebook, headless_lab  # noqa: E402

DATA = REPO / "benchmarks" / "data"

OUTPUT_PROBE = """
window.__pvOutputs = [];
new MutationObserver((records) => {
  for (const r of records) for (const n of r.addedNodes) {
    if (n.nodeType !== 1) continue;
    const hit = n.matches?.('.pv-root') ? [n] : [...(n.querySelectorAll?.('.pv-root') || [])];
    for (const _ of hit) window.__pvOutputs.push(performance.now());
  }
}).observe(document, { childList: true, subtree: true });
"""


def ensure_trace(events: int) -> Path:
    path = DATA / f"pytorch_{events}_events.json"
    if not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        # make_pytorch_trace.py --events N now means N timeline (X) events (memory, flow and
        # metadata records come on top), which is what --events means here too.
        print(f"generating {path.name} ({events} timeline events) ...", flush=True)
        subprocess.run([sys.executable, str(REPO / "benchmarks" / "make_pytorch_trace.py"),
                        "--events", str(events), "--out", str(path)], check=True)
    return path


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


def kernel_side(path: Path) -> dict[str, float]:
    import jupyter_profview as profview
    from jupyter_profview.widget.rpc import WidgetData, detail

    t = time.perf_counter()
    trace = profview.load(path)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    data = WidgetData(trace)
    index_s = time.perf_counter() - t
    times = []
    for _ in range(5):
        t = time.perf_counter()
        data.overview()
        times.append(time.perf_counter() - t)
    t0, t1 = data.timeline.extent()
    dtimes = []
    for i in range(20):
        a = t0 + (t1 - t0) * i / 25
        t = time.perf_counter()
        detail(data, {"t0": a, "t1": a + (t1 - t0) / 10, "width": 1400})
        dtimes.append(time.perf_counter() - t)
    return {"events": len(trace.events), "load_s": load_s, "index_s": index_s,
            "overview_ms": statistics.median(times) * 1e3, "detail_ms": statistics.median(dtimes) * 1e3,
            "overview_bytes": len(data.overview()), "memory_bytes": len(data.memory_overview())}


def interact(page: Any, hook: str) -> tuple[list[float], list[float], list[dict[str, float]]]:
    """Wheel-zoom and drag-pan over the timeline; the hook's frame and detail times and log."""
    canvas = page.locator(".pv-timeline canvas").last
    box = canvas.bounding_box()
    cx, cy = box["x"] + box["width"] * 0.55, box["y"] + min(box["height"] * 0.3, 120)
    page.evaluate(f"{hook}.frameTimes.length = 0; {hook}.detailTimes.length = 0;"
                  f" ({hook}.detailLog || []).length = 0")
    page.mouse.move(cx, cy)
    page.keyboard.down("Control")  # Ctrl+wheel zooms (a plain wheel over an unfocused view scrolls the page)
    for direction in (-1, 1):
        for _ in range(12):
            page.mouse.wheel(0, direction * 240)
            time.sleep(0.05)
        time.sleep(0.6)  # let the debounced _detail go out and come back
    for _ in range(6):
        page.mouse.wheel(0, -240)
        time.sleep(0.05)
    page.keyboard.up("Control")
    time.sleep(0.6)
    for dx in (300, -300, 200):
        page.mouse.move(cx, cy)
        page.mouse.down()
        for k in range(1, 21):
            page.mouse.move(cx + dx * k / 20, cy)
            time.sleep(0.016)
        page.mouse.up()
        time.sleep(0.6)
    frames = page.evaluate(f"{hook}.frameTimes.slice()")
    details = page.evaluate(f"{hook}.detailTimes.slice()")
    log = page.evaluate(f"({hook}.detailLog || []).slice()")
    return frames, details, log


def breakdown(log: list[dict[str, float]]) -> str:
    """Where the `_detail` round trips went: browser -> kernel handler start (websocket, server,
    kernel queue), handler, handler end -> reply in the browser, decode; and reply bytes."""
    parts: dict[str, list[float]] = {"to kernel": [], "kernel": [], "back": [], "decode": [],
                                     "waited": [], "kB": []}
    for e in log:
        sent, kat, kms = e.get("sent"), e.get("kernelAt"), e.get("kernelMs")
        if sent is not None and kat is not None and kms is not None and kat == kat:
            parts["to kernel"].append(kat - sent)
            parts["kernel"].append(kms)
            parts["back"].append(sent + e["arrived"] - (kat + kms))
        parts["decode"].append(e["done"] - e["arrived"])
        if "waited" in e:
            parts["waited"].append(e["waited"])
        parts["kB"].append((e.get("bytes", 0) + e.get("memBytes", 0)) / 1e3)
    return "; ".join(f"{k} {statistics.median(v):.1f}/{pct(v, 0.95):.1f}" for k, v in parts.items() if v)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is absent: apt-get install chromium fonts-liberation", file=sys.stderr)
        return 2
    path = ensure_trace(args.events)
    ks = kernel_side(path)
    print(f"kernel: {ks['events']:,} events; load {ks['load_s']:.1f} s; index {ks['index_s'] * 1e3:.0f} ms; "
          f"overview {ks['overview_ms']:.1f} ms ({ks['overview_bytes'] / 1e6:.2f} MB); "
          f"memory frame {ks['memory_bytes'] / 1e6:.2f} MB; _detail compute {ks['detail_ms']:.1f} ms",
          flush=True)

    with headless_lab(120_000, OUTPUT_PROBE) as (lab, page):
        received: list[tuple[float, int]] = []

        def on_ws(ws: Any) -> None:
            ws.on("framereceived", lambda payload: received.append(
                (time.monotonic(), len(payload) if payload else 0)))

        page.on("websocket", on_ws)
        nb = LabNotebook(lab, page, "bench", [
            "import jupyter_profview as profview\n"
            f"t = profview.load(r'{path}')\n"
            "print(len(t.events))",
        ])
        nb.run_all()
        nb.step("print('loaded', len(t.events))", timeout=180_000)
        paints, totals, sizes, state, logs = [], [], [], [], []
        p95s, frame_medians, details = [], [], []
        for i in range(args.repeat):
            page.evaluate("(window.__profview || []).forEach((h) => { h.__old = true; })")
            outs_before = page.evaluate("window.__pvOutputs.length")
            t_start = time.monotonic()
            p_start = page.evaluate("performance.now()")
            text = nb.step(
                "from IPython.display import clear_output, display\n"
                "clear_output()\n"
                "w = profview.show(t)\n"
                "display(w)\n"
                "_s = w.get_state()\n"
                "print('STATE', sum(len(v) if isinstance(v, (bytes, memoryview)) "
                "else len(str(v)) for v in _s.values()))", timeout=120_000)
            page.wait_for_function(
                "(window.__pvCurrent = (window.__profview || []).find((h) => !h.__old"
                " && h.firstPaint !== null)) !== undefined", timeout=120_000)
            first = page.evaluate("window.__pvCurrent.firstPaint")
            appeared = page.evaluate(f"window.__pvOutputs[{outs_before}]")
            t_paint = time.monotonic()
            paints.append((first - appeared) / 1e3)
            totals.append((first - p_start) / 1e3)
            sizes.append(sum(n for t, n in received if t_start <= t <= t_paint + 0.05))
            state.append(int(text.split("STATE")[-1].split()[0]))
            frames, det, log = interact(page, "window.__pvCurrent")
            logs.extend(log)
            if frames:
                p95s.append(pct(frames, 0.95))
                frame_medians.append(statistics.median(frames))
            details.extend(det)
            det_median = statistics.median(det) if det else float("nan")
            print(f"  run {i + 1}: first paint {paints[-1]:.2f} s "
                  f"(run cell -> paint {totals[-1]:.2f} s), ws bytes {sizes[-1] / 1e6:.2f} MB, "
                  f"frames {len(frames)} (p95 {pct(frames, 0.95):.1f} ms), "
                  f"_detail {len(det)} (median {det_median:.0f} ms)", flush=True)
            if log:
                print(f"    _detail median/p95 ms: {breakdown(log)}", flush=True)

    print("\nmedians over", args.repeat, "displays of", f"{ks['events']:,}", "events:")
    print(f"  first paint after the output appears : {statistics.median(paints):.2f} s   (target <= 2 s)")
    print(f"  cell run (show + display) -> paint   : {statistics.median(totals):.2f} s")
    print(f"  pan/zoom frame p95                   : {statistics.median(p95s):.1f} ms  "
          f"(median frame {statistics.median(frame_medians):.1f} ms; target <= 16 ms)")
    print(f"  _detail round trip                   : {statistics.median(details):.0f} ms  "
          f"(p95 {pct(details, 0.95):.0f} ms over {len(details)}; target <= 150 ms)")
    if logs:
        print(f"  _detail breakdown (median/p95)       : {breakdown(logs)}")
    print(f"  bytes received at display (websocket): {statistics.median(sizes) / 1e6:.2f} MB; "
          f"widget state {statistics.median(state) / 1e6:.2f} MB   (target <= 4 MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
