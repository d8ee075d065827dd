"""A view a newcomer understands (issue 36) and units on screen (issue 31 item 2), read from the
page of a real JupyterLab (Debian Chromium, marked ``browser``):

* the counters panel: one track per unit, each track's series of one unit, its maximum and
  every peak label in that unit and equal to the DataFrames, a legend row (and a distinct
  colour) for every series drawn, and no two peak labels overlapping;
* the wheel over an unfocused view scrolls the notebook and leaves the view; after a click in
  the view (or with Ctrl held) it zooms; the "?" box lists the keys;
* the first view is the first step's start to the last step's end;
* lanes cut by the timeline's height are counted in a "+N tracks below" hint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jupyter_profview as profview
from jupyter_profview import analysis
from tests.browser.lab import LabNotebook, LabServer, canvas_ink, wait_until

TIMELINE = ".pv-timeline canvas"
COUNTERS = ".pv-memory canvas"
COUNTERS_JSON = Path(__file__).parents[1] / "data" / "chrome_counters_async.json"
HOOK = "window.__profview.at(-1)"
FILLER = "print('\\n'.join(f'line {i}' for i in range(120)))"


def open_widget(lab: LabServer, page: Any, name: str, path: Path | str, filler: bool = False) -> LabNotebook:
    cells = ["import jupyter_profview as profview\n"
             f"w = profview.show(profview.load(r'{path}'))\n"
             "w", *([FILLER] if filler else [])]
    nb = LabNotebook(lab, page, name, cells)
    nb.run_all()
    nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000), "nothing drawn on the timeline"
    return nb


def tracks_on_screen(page: Any) -> list[dict[str, Any]]:
    raw = wait_until(lambda: page.evaluate(f"document.querySelector('{COUNTERS}').dataset.tracks"))
    assert raw, "the counters panel drew no track"
    return list(json.loads(raw))


def no_overlap(boxes: list[list[float]]) -> bool:
    return all(a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
               for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_counters_one_axis_per_unit_labels_in_their_unit(lab: LabServer, page: Any) -> None:
    trace = profview.load(profview.example("gpu_trace"))
    nb = open_widget(lab, page, "units_gpu", profview.example("gpu_trace"))
    page.locator(COUNTERS).scroll_into_view_if_needed()
    tracks = tracks_on_screen(page)
    meta = nb.value("__import__('jupyter_profview').widget.codec.decode_frame(w._memory).meta['series']")
    # one track per unit: every series drawn once, each track one unit
    drawn = sorted(i for t in tracks for i in t["series"])
    assert drawn == list(range(len(meta)))
    for t in tracks:
        assert {meta[i]["unit"] for i in t["series"]} == {t["unit"]}
    fixed = [t["unit"] for t in tracks if t["unit"] != "value"]
    assert len(set(fixed)) == len(fixed)
    by_unit = {t["unit"]: t for t in tracks}
    # utilisation: 0-100 %; queues: the largest queue length of any stream, in queued launches
    assert by_unit["fraction"]["max"] == "100 %"
    q = analysis.queue_length_series(trace)
    per_stream = q.groupby(["gpu", "stream"], observed=True)["queue_length"].max()
    assert by_unit["count"]["max"] == f"{int(per_stream.max())} queued"
    # every peak label is in its series' unit: queue peaks "peak N queued", N a stream's maximum
    peaks = json.loads(page.evaluate(f"document.querySelector('{COUNTERS}').dataset.peakTexts"))
    assert peaks, "no peak label drawn"
    for text in peaks:
        assert text.startswith("peak ") and text.endswith(" queued"), text
        assert int(text.split()[1]) in set(per_stream.astype(int).tolist())
    assert not any(text.endswith(" B") for text in peaks)  # no byte unit off the memory track
    boxes = json.loads(page.evaluate(f"document.querySelector('{COUNTERS}').dataset.peakBoxes"))
    assert no_overlap(boxes), boxes
    # a legend row and a colour for every series on screen, colours all different
    colours = [c for t in tracks for c in t["colors"]]
    assert sum(len(t["legend"]) for t in tracks) == len(meta)
    assert len(set(colours)) == len(colours)
    legend_dom = page.locator(".pv-counters label").all_inner_texts()
    assert [s.strip() for s in legend_dom] == [m["device"] for m in meta]
    # the queue legend names the stream: the end of the name kept, not cut at the front
    for i, label in zip(by_unit["count"]["series"], by_unit["count"]["legend"], strict=True):
        stream = meta[i]["device"].removesuffix(" queue").split("stream ")[-1]
        assert label.endswith(f"stream {stream}"), (label, meta[i]["device"])
    assert page.page_errors == []  # type: ignore[attr-defined]


def read_number(text: str) -> float:
    """A number as the widget writes it ("1.5 KiB", "59.94", "1 k") back to a float."""
    num, _, unit = text.partition(" ")
    scale = {"": 1, "B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
             "k": 1e3, "M": 1e6, "G": 1e9}[unit]
    return float(num) * scale


def test_memory_and_counters_never_share_an_axis(lab: LabServer, page: Any) -> None:
    """The JSON has memory (bytes) and two counters (``fps``, ``queue 2``): three tracks, the
    memory maximum in bytes equal to the DataFrame's, each counter's maximum its own."""
    trace = profview.load(COUNTERS_JSON)
    open_widget(lab, page, "units_counters", COUNTERS_JSON)
    page.locator(COUNTERS).scroll_into_view_if_needed()
    tracks = tracks_on_screen(page)
    assert [t["title"] for t in tracks] == ["memory", "fps", "queue 2"]
    assert [t["unit"] for t in tracks] == ["bytes", "value", "value"]
    # 4 significant digits on screen
    top_bytes = float(trace.memory["bytes"].max())
    assert tracks[0]["max"].endswith("B")
    assert abs(read_number(tracks[0]["max"]) - top_bytes) <= 5e-4 * top_bytes, (tracks[0]["max"], top_bytes)
    counters = trace.counters
    for t in tracks[1:]:
        assert not t["max"].endswith("B")
        top = float(counters.loc[counters["name"].astype(str) == t["title"], "value"].max())
        assert abs(read_number(t["max"]) - top) <= 5e-4 * abs(top), (t["title"], t["max"], top)
    boxes = json.loads(page.evaluate(f"document.querySelector('{COUNTERS}').dataset.peakBoxes"))
    assert no_overlap(boxes)


def notebook_scroll(page: Any) -> float:
    """scrollTop of what scrolls the notebook (the nearest scrollable ancestor of the view)."""
    return float(page.evaluate("""() => {
      for (let n = document.querySelector('.pv-root').parentElement; n; n = n.parentElement) {
        const oy = getComputedStyle(n).overflowY;
        if ((oy === 'auto' || oy === 'scroll') && n.scrollHeight > n.clientHeight) return n.scrollTop;
      }
      return window.scrollY;
    }"""))


def test_wheel_scrolls_the_notebook_until_the_view_is_focused(lab: LabServer, page: Any) -> None:
    trace = profview.load(profview.example("gpu_trace"))
    ev = trace.events
    steps = ev[ev["name"].astype(str).str.startswith("ProfilerStep#")]
    first = (float(steps["start"].min()), float((steps["start"] + steps["dur"]).max()))
    nb = open_widget(lab, page, "wheel", profview.example("gpu_trace"), filler=True)
    # the first view: first step's start to the last step's end (not the 0-3.37 s wrapper span)
    view = page.evaluate(f"{HOOK}.view()")
    tol = 1e-6 * first[1]
    assert abs(view["start"] - first[0]) < tol and abs(view["end"] - first[1]) < tol, (view, first)
    assert nb.value("list(w.visible)") == list(first)  # the kernel knows it too
    # unfocused: the wheel scrolls the notebook, the view stays
    page.evaluate("document.activeElement && document.activeElement.blur()")
    assert page.evaluate("document.querySelector('.pv-root').contains(document.activeElement)") is False
    canvas = page.locator(TIMELINE).first
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 60)
    before = notebook_scroll(page)
    page.mouse.wheel(0, 240)
    assert wait_until(lambda: notebook_scroll(page) > before + 100, timeout=5), "the notebook did not scroll"
    assert page.evaluate(f"{HOOK}.view()") == view, "an unfocused wheel zoomed the view"
    assert page.locator(".pv-wheel-note.pv-show").count() == 1, "no note says how to zoom"
    # Ctrl + wheel zooms without focus (as Perfetto)
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 60)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -240)
    page.keyboard.up("Control")
    def moved_from(old: Any) -> Any:
        return wait_until(lambda: (v := page.evaluate(f"{HOOK}.view()")) != old and v, timeout=5)

    zoomed = moved_from(view)
    assert zoomed and zoomed["end"] - zoomed["start"] < view["end"] - view["start"], "Ctrl+wheel: no zoom"
    # a click focuses the view: the plain wheel zooms, the notebook stays
    page.mouse.click(box["x"] + box["width"] * 0.95, box["y"] + 8)  # the axis row: nothing selected
    still = notebook_scroll(page)
    page.mouse.wheel(0, 240)
    out = moved_from(zoomed)
    assert out and out["end"] - out["start"] > zoomed["end"] - zoomed["start"], "a focused wheel: no zoom"
    assert abs(notebook_scroll(page) - still) < 1, "the focused wheel scrolled the notebook"
    # the "?" box says the keys
    page.locator(".pv-help").click()
    text = page.locator(".pv-help-box").inner_text()
    assert page.locator(".pv-help-box").is_visible()
    for key in ("Ctrl/⌘ + wheel", "W / S", "A / D", "F:", "Esc"):
        assert key in text, key
    assert page.page_errors == []  # type: ignore[attr-defined]


def test_more_tracks_hint_counts_the_lanes_below(lab: LabServer, page: Any) -> None:
    nb = open_widget(lab, page, "more_tracks", profview.example("gpu_trace"))
    tracks = nb.value("len(w._tracks)")
    hint = page.locator(".pv-more-tracks")
    scroller = page.locator(".pv-tl-scroll").first
    # the timeline grows to its lanes (this trace's fit under the 640 px cap): no lane cut, no hint
    assert wait_until(lambda: scroller.evaluate("e => e.scrollHeight <= e.clientHeight + 1")), "lanes cut off"
    assert hint.count() == 0 or not hint.is_visible()
    # a lower cap cuts lanes off: the hint counts them
    page.evaluate("() => { document.querySelector('.pv-root').style.setProperty("
                  "'--pv-timeline-max-height', '260px'); window.dispatchEvent(new Event('resize')); }")
    assert wait_until(lambda: hint.count() == 1 and hint.is_visible()), "no hint while lanes are cut off"
    n = int(hint.get_attribute("data-count") or 0)
    assert 0 < n < tracks
    assert hint.inner_text().startswith(f"+{n} track")
    # scrolled to the bottom of the lanes: nothing below
    page.evaluate("document.querySelector('.pv-tl-scroll').scrollTop = 1e6")
    assert wait_until(lambda: not hint.is_visible()), "the hint stayed at the bottom of the lanes"


def test_a_finding_click_scrolls_to_its_evidence_and_says_so(lab: LabServer, page: Any) -> None:
    """Notebook 13: *exposed_communication*'s NCCL kernels lie on a GPU lane below the visible
    part of the timeline. Clicking the finding scrolls the lanes to them (their boxes are inside
    the visible canvas), a chip counts the highlighted events, ✕ clears it, so does Reset."""
    trace = profview.load(profview.example("gpu_trace"))
    advice = profview.advise(trace)
    k = int(advice.findings.index[advice.findings["rule"] == "exposed_communication"][0])
    evidence = sorted(int(i) for i in advice.findings.loc[k, "events"])
    cells = ["import jupyter_profview as profview\n"
             f"trace = profview.load(r'{profview.example('gpu_trace')}')\n"
             "w = profview.show(trace, advice=True)\nw"]
    nb = LabNotebook(lab, page, "finding", cells)
    nb.run_all()
    nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000)
    scroll = page.locator(".pv-tl-scroll").first
    # a timeline shorter than its lanes (a small screen, a trace with more lanes): the GPU lanes
    # are below the visible part
    page.evaluate("() => { document.querySelector('.pv-root').style.setProperty("
                  "'--pv-timeline-max-height', '260px'); window.dispatchEvent(new Event('resize')); }")
    assert wait_until(lambda: scroll.evaluate("e => e.scrollHeight > e.clientHeight + 100"))
    assert scroll.evaluate("e => e.scrollTop") == 0
    rows = page.locator(".pv-advice-row:not(.pv-advice-th)")
    assert wait_until(lambda: rows.count() >= 2)
    row = rows.filter(has_text="exposed_communication").first
    row.scroll_into_view_if_needed()
    row.click()
    ids = wait_until(lambda: nb.value("__import__('jupyter_profview.widget.codec', fromlist=['x'])"
                                      ".decode_frame(w._highlight).columns['id'].tolist()"))
    assert sorted(ids) == evidence, "the click did not highlight the finding's evidence"
    chip = page.locator(".pv-highlight-chip")
    assert wait_until(lambda: chip.is_visible())
    assert chip.inner_text().startswith(f"Highlight: {len(ids)} event")
    assert wait_until(lambda: scroll.evaluate("e => e.scrollTop") > 0), "the lanes did not scroll"
    # the first evidence lane's boxes are inside the visible part of the canvas
    canvas = page.locator(TIMELINE).first
    box = canvas.bounding_box()
    shown = [p for p in (page.evaluate(f"{HOOK}.locate({i})") for i in ids) if p]
    assert shown, "no evidence box drawn"
    assert any(box["y"] + 22 <= p["y"] <= box["y"] + box["height"] for p in shown), (shown, box)
    advice_el = page.locator(".pv-advice").first
    assert row.evaluate("e => e.classList.contains('pv-row-selected')")
    assert advice_el.get_attribute("data-picked") == str(k)
    # ✕ clears the dimming and the chip
    page.locator(".pv-highlight-clear").click()
    assert wait_until(lambda: not chip.is_visible())
    assert page.locator(".pv-root").first.get_attribute("data-highlight") == "0"
    # Reset view clears a highlight set from Python too
    nb.step(f"w.pick_finding({k})")
    assert wait_until(lambda: chip.is_visible())
    page.locator(".pv-reset").first.click()
    assert wait_until(lambda: not chip.is_visible())
    # ... and the finding picked by a click: its row, its text, its chip
    row.click()
    assert wait_until(lambda: chip.is_visible())
    assert advice_el.get_attribute("data-picked") == str(k)
    page.locator(".pv-reset").first.click()
    assert wait_until(lambda: not chip.is_visible())
    assert wait_until(lambda: advice_el.get_attribute("data-picked") is None), "Reset kept the picked finding"
    assert page.locator(".pv-advice .pv-row-selected").count() == 0
    assert page.locator(".pv-advice-detail").first.inner_text() == ""
    assert page.page_errors == []  # type: ignore[attr-defined]
