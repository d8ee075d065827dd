"""Lanes fit and labels keep their informative end (issue 36 items 2 and 6), read from the page
of a real JupyterLab (Debian Chromium, marked ``browser``):

* the texts the timeline drew (the test hook's ``labels()``: lane names, group headers, box
  labels, each with its drawn box) and the counters panel's texts (``data-tracks`` boxes, peak
  boxes): no two overprint, every lane name and counter-gutter text inside the label column,
  every box label right of it -- on notebook 07's trace (HTA's GPU trace) and on a JAX/XLA trace
  whose threads are named ``tf_XLAPjRtCpuClient/7435379619830985549``;
* the label column is as wide as its lanes' names (up to its cap): the JAX trace's names show
  whole, and a name longer than the cap keeps its name before its id;
* the profiler's wrapper lanes are hidden by default, a toolbar switch brings them back (the
  widget's ``show_wrappers`` follows), in a notebook and in a Lab "Profile viewer" tab;
* an ``[overlap N]`` lane says what it is in its tooltip.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jupyter_profview as profview
from tests.browser.lab import REPO, TIMEOUT_MS, LabServer, canvas_ink, wait_until
from tests.browser.test_gpu_browser import open_widget

TIMELINE = ".pv-timeline canvas"
COUNTERS = ".pv-memory canvas"
HOOK = "window.__profview.at(-1)"
GPU = Path(profview.example("gpu_trace"))  # notebook 07's trace
JAX = REPO / "tests" / "data" / "xspace" / "jax_cpu.xplane.pb.gz"
KERAS = REPO / "tests" / "data" / "xspace" / "tf_keras"
EPS = 0.01




def drawn(page: Any) -> dict[str, Any]:
    """The texts the timeline drew last: ``gutter`` (the label column's width), ``texts``."""
    out = wait_until(lambda: page.evaluate(f"{HOOK}.labels()") if page.evaluate(
        f"{HOOK}.labels().texts.length") else None)
    assert out, "the timeline drew no text"
    return dict(out)


def overprints(boxes: list[tuple[str, float, float, float, float]]) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes overlap (by more than a hundredth of a pixel)."""
    bad = []
    for i, (ta, ax0, ay0, ax1, ay1) in enumerate(boxes):
        for tb, bx0, by0, bx1, by1 in boxes[i + 1:]:
            if ax0 < bx1 - EPS and bx0 < ax1 - EPS and ay0 < by1 - EPS and by0 < ay1 - EPS:
                bad.append((ta, tb))
    return bad


def check_labels(page: Any) -> dict[str, Any]:
    """No two texts overprint; lane names and the counters' gutter texts inside the label column,
    box labels right of it.  Returns what the timeline drew."""
    page.locator(TIMELINE).first.scroll_into_view_if_needed()
    hook = drawn(page)
    gutter = float(hook["gutter"])
    texts = hook["texts"]
    lanes = [t for t in texts if t["kind"] == "lane"]
    boxes = [t for t in texts if t["kind"] == "box"]
    assert lanes, "no lane name drawn"
    for t in lanes:
        assert t["x0"] >= 0 and t["x1"] <= gutter + EPS, \
            f"lane name {t['text']!r} leaves the column ({gutter})"
    for t in boxes:
        assert t["x0"] >= gutter - EPS, f"box label {t['text']!r} in the label column"
    bad = overprints([(t["text"], t["x0"], t["y0"], t["x1"], t["y1"]) for t in texts])
    assert not bad, f"texts overprint: {bad[:5]}"
    # the counters panel under it: its gutter texts inside the same column, its peaks apart
    if page.locator(COUNTERS).count():
        raw = page.evaluate(f"document.querySelector('{COUNTERS}').dataset.tracks")
        tracks = json.loads(raw) if raw else []
        gutter_boxes = [("gutter", *b) for t in tracks for b in t["boxes"]]
        for _, x0, _, x1, _ in gutter_boxes:
            assert x0 >= 0 and x1 <= gutter + 0.1, f"a counter label leaves the column: {x0}..{x1} > {gutter}"
        peaks = json.loads(page.evaluate(f"document.querySelector('{COUNTERS}').dataset.peakBoxes") or "[]")
        peak_boxes = [("peak", *b) for b in peaks]
        assert not overprints(gutter_boxes + peak_boxes), "counter labels overprint"
        for _, x0, _, _, _ in peak_boxes:
            assert x0 >= gutter - 0.1, "a peak label in the label column"
    return hook


def kineto_wrapper_lanes(path: Path) -> int:
    """Lanes (pid, tid) of the file holding only Kineto's own records, counted from its JSON."""
    with gzip.open(path, "rt") as f:
        records = json.load(f)["traceEvents"]
    lanes: dict[tuple[str, str], list[bool]] = {}
    for r in records:
        if r.get("ph") in ("X", "i"):
            own = r.get("cat") == "Trace" or str(r.get("name", "")).startswith(("Iteration Start: ",
                                                                                 "Record Window End"))
            lanes.setdefault((str(r.get("pid")), str(r.get("tid"))), []).append(own)
    return sum(all(v) for v in lanes.values())


def lane_texts(page: Any) -> list[str]:
    return [t["text"] for t in drawn(page)["texts"] if t["kind"] == "lane"]


def test_gpu_trace_labels_apart_and_wrappers_behind_a_switch(lab: LabServer, page: Any) -> None:
    nb = open_widget(lab, page, "lanefit_gpu", GPU)
    check_labels(page)
    hidden = kineto_wrapper_lanes(GPU)
    assert hidden == 1  # the PyTorch Profiler span's lane
    switch = page.locator(".pv-wrappers").first
    assert switch.is_visible()
    assert switch.get_attribute("data-hidden") == str(hidden)
    assert "PyTorch Profiler" not in lane_texts(page)
    # the box label of the wrapper span is gone with its lane
    assert not any(t["text"].startswith("PyTorch Profiler") for t in drawn(page)["texts"])
    switch.locator("input").check()
    assert wait_until(lambda: "PyTorch Profiler" in lane_texts(page)), lane_texts(page)
    assert switch.get_attribute("data-hidden") == "0"
    assert nb.value("w.show_wrappers") is True
    check_labels(page)
    switch.locator("input").uncheck()
    assert wait_until(lambda: "PyTorch Profiler" not in lane_texts(page))
    assert nb.value("w.show_wrappers") is False
    # from Python too
    nb.step("w.show_wrappers = True")
    assert wait_until(lambda: "PyTorch Profiler" in lane_texts(page))
    assert switch.locator("input").is_checked()
    assert page.page_errors == []  # type: ignore[attr-defined]


def test_long_thread_names_whole_in_a_fitted_column_and_overlap_lane_explained(lab: LabServer,
                                                                               page: Any) -> None:
    nb = open_widget(lab, page, "lanefit_jax", JAX)
    hook = check_labels(page)
    tracks = nb.value("[(t['name'], t['hidden']) for t in w._tracks]")
    names = [n for n, hidden in tracks if not hidden]
    assert any(n.startswith("tf_XLAPjRtCpuClient/") for n in names)
    # the column fits the names (all under the cap here): each drawn whole, the column wider
    # than its old fixed 150 px
    assert sorted(lane_texts(page)) == sorted(names)
    assert 150 < hook["gutter"] <= 300
    # an overlap lane's tooltip says what it is
    lane = next(t for t in hook["texts"] if t["kind"] == "lane" and "[overlap" in t["text"])
    box = page.locator(TIMELINE).first.bounding_box()
    page.mouse.move(box["x"] + lane["x0"] + 5, box["y"] + (lane["y0"] + lane["y1"]) / 2)
    tip = page.locator(".pv-tooltip").first
    assert wait_until(lambda: tip.is_visible() and "overlap lane 1:" in tip.inner_text()), tip.inner_text()
    assert "partly overlap" in tip.inner_text()
    assert page.page_errors == []  # type: ignore[attr-defined]


def test_a_name_longer_than_the_cap_keeps_its_name_before_its_id(lab: LabServer, page: Any) -> None:
    nb = open_widget(lab, page, "lanefit_keras", KERAS)
    hook = check_labels(page)
    names = nb.value("[t['name'] for t in w._tracks if not t['hidden']]")
    texts = lane_texts(page)
    assert len(texts) == len(names)
    assert hook["gutter"] == 300  # the cap: the longest name does not fit whole
    cut = [(n, t) for n, t in zip(names, texts, strict=True) if n != t]
    assert cut, "every name fitted: the cap was not reached"
    for name, text in cut:
        head = name.rsplit("/", 1)[0]
        assert text.startswith(head), f"{name!r} drawn {text!r}: the name lost to its id"
        assert "…" in text


# -- the Lab "Profile viewer" tab (the server's session, as `profview serve` uses it) ----------

@pytest.fixture(scope="module")
def lab_tab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    from tests.browser.test_lab_extension import lab_tab_server

    with lab_tab_server(tmp_path_factory, "lanefit_tab", {"gpu.pt.trace.json.gz": GPU}) as server:
        yield server


def test_the_switch_in_a_lab_tab(browser: Any, lab_tab_server: LabServer) -> None:
    from tests.browser.test_lab_extension import open_lab_tab

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        tab = open_lab_tab(page, lab_tab_server, "lanefit_tab", "gpu.pt.trace.json.gz")
        assert wait_until(lambda: canvas_ink(page, f"{tab} {TIMELINE}") > 2000)
        check_labels(page)
        switch = page.locator(f"{tab} .pv-wrappers").first
        assert switch.is_visible() and switch.get_attribute("data-hidden") == "1"
        assert "PyTorch Profiler" not in lane_texts(page)
        switch.locator("input").check()
        assert wait_until(lambda: "PyTorch Profiler" in lane_texts(page)), "the server did not show the lane"
        switch.locator("input").uncheck()
        assert wait_until(lambda: "PyTorch Profiler" not in lane_texts(page))
    finally:
        context.close()
