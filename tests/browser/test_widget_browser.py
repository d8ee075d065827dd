"""The widget in JupyterLab / Notebook 7 under Debian Chromium (marked ``browser``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jupyter_profview as profview
from jupyter_profview.widget.numbers import format_duration
from tests.browser.lab import (
    LabNotebook,
    LabServer,
    canvas_digest,
    canvas_ink,
    copy_into,
    wait_until,
)

TIMELINE = ".pv-timeline canvas"
MEMORY = ".pv-memory canvas"
XSS = ["<img src=x onerror=window.__pwned=1>", "<script>window.__pwned=2</script>"]


def show_cells(path_expr: str) -> list[str]:
    return ["import jupyter_profview as profview\n"
            f"w = profview.show({path_expr})\n"
            "w"]


def wheel(page: Any, dy: float) -> None:
    """One wheel step on the timeline, waiting until the view has moved."""
    root = page.locator(".pv-root").last
    before = root.get_attribute("data-view-end")
    page.keyboard.down("Control")  # Ctrl+wheel zooms (a plain wheel over an unfocused view scrolls the page)
    page.mouse.wheel(0, dy)
    page.keyboard.up("Control")
    moved = wait_until(lambda: root.get_attribute("data-view-end") != before, timeout=10)
    assert moved, "the wheel did nothing"


def longest_top_event(trace: Any) -> int:
    """Id of the longest depth-0 event drawn at full zoom-out: not one of the profiler's own
    records (`derived.wrapper_mask`), whose lanes the view hides by default."""
    from jupyter_profview.derived import wrapper_mask

    ev = trace.events
    return int(ev[(ev["depth"] == 0).to_numpy() & ~wrapper_mask(ev)]["dur"].idxmax())


def test_seed_002_draws_zooms_selects_and_highlights(lab: LabServer, page: Any) -> None:
    seed = profview.example("tf_step_stats")
    nb = LabNotebook(lab, page, "seed002", show_cells(f"r'{seed}'"))
    nb.run_all()
    nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000), "nothing drawn on the timeline"
    assert wait_until(lambda: canvas_ink(page, MEMORY) > 200), "nothing drawn on the memory panel"

    full = nb.value("list(w.visible)")
    duration = nb.value("w.trace.duration")
    assert full[0] <= 0 + 1e-6 * duration and full[1] >= duration * 0.99

    # wheel-zoom on the timeline: the kernel's w.visible narrows
    box = page.locator(TIMELINE).first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.3)
    for _ in range(4):
        wheel(page, -300)
    # the front end debounces _view by ~150 ms
    def narrowed() -> bool:
        zoomed = nb.value("list(w.visible)")
        return bool(zoomed[1] - zoomed[0] < (full[1] - full[0]) * 0.8)

    assert wait_until(narrowed), (full, nb.value("list(w.visible)"))

    # back to the full view (from the kernel), then click the longest top-level event
    nb.step("w.zoom_to(0, w.trace.duration)")
    trace = profview.load(seed)
    target = longest_top_event(trace)
    point = wait_until(lambda: page.evaluate(f"window.__profview.at(-1).locate({target})"))
    assert point, f"event {target} is not drawn as its own box"
    page.mouse.click(point["x"], point["y"])
    assert wait_until(lambda: nb.value("w.selection.index.tolist()") == [target])

    # highlight from the kernel (without zooming): the timeline's pixels change
    nb.step("w.highlight(None, zoom=False)")
    root = page.locator(".pv-root").last
    assert wait_until(lambda: root.get_attribute("data-highlight") == "0")
    before = canvas_digest(page, TIMELINE)
    name = str(trace.events["name"].iat[target])
    assert nb.value(f"len(w.highlight(w.trace.events['name'] == {name!r}, zoom=False))") >= 1
    assert wait_until(lambda: canvas_digest(page, TIMELINE) != before), "highlight drew nothing"
    assert not [e for e in page.page_errors if "profview" in e.lower()]


def test_pytorch_example_numbers_table_axis_labels_and_screenshot(lab: LabServer, page: Any,
                                                                  tmp_path: Path) -> None:
    """The PyTorch example: table and tooltip durations are the DataFrame's ``dur`` under the
    shared formatting rule; a row click selects and zooms but keeps the list; deep zoom labels
    the axis with offsets; the label column widens by dragging its edge."""
    path = profview.example("torch_mlp_train")
    name = copy_into(lab, path)
    nb = LabNotebook(lab, page, "torch", show_cells(f"r'{name}'"))
    nb.run_all()
    root = nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000)
    assert wait_until(lambda: canvas_ink(page, MEMORY) > 200)
    assert nb.value("w.trace.format") == "chrome"
    trace = profview.load(path)
    ev = trace.events

    # the table lists the events in view, longest first: each duration is the DataFrame's
    table = root.locator(".pv-table")
    rows = root.locator(".pv-table-row")
    assert wait_until(lambda: rows.count() > 5 and rows.nth(2).get_attribute("data-id"))
    count = table.get_attribute("data-count")
    assert int(count or 0) > 5
    for i in range(3):
        row = rows.nth(i)
        eid = int(row.get_attribute("data-id") or -1)
        assert row.locator(".pv-col-dur").inner_text() == format_duration(int(ev.loc[eid, "dur"])), eid
        assert row.locator(".pv-col-name").inner_text() == str(ev.loc[eid, "name"])

    # hover the longest top-level event: the tooltip says the same duration
    target = longest_top_event(trace)
    point = wait_until(lambda: page.evaluate(f"window.__profview.at(-1).locate({target})"))
    assert point, f"event {target} is not drawn as its own box"
    page.mouse.move(point["x"], point["y"])
    tip = root.locator(".pv-tooltip")
    want = f"duration {format_duration(int(ev.loc[target, 'dur']))}"
    assert wait_until(lambda: want in tip.inner_text()), tip.inner_text()

    # click the third row: selected (in the kernel too) and zoomed to; the list stays as it was
    third = rows.nth(2)
    tid = int(third.get_attribute("data-id") or -1)
    third.click()
    assert wait_until(lambda: root.get_attribute("data-selected") == str(tid))
    assert wait_until(lambda: nb.value("w.selection.index.tolist()") == [tid])
    assert table.get_attribute("data-count") == count and rows.count() > 3
    start, dur = float(ev.loc[tid, "start"]), float(ev.loc[tid, "dur"])
    view = page.evaluate("window.__profview.at(-1).view()")
    assert view["start"] <= start and view["end"] >= start + dur
    assert view["end"] - view["start"] < trace.duration

    # deep zoom, 2 µs wide well inside the trace: labels are offsets from a start shown once
    mid = int(trace.duration * 0.8)
    nb.step(f"w.zoom_to({mid}, {mid + 2000})")
    assert wait_until(lambda: float(root.get_attribute("data-view-start") or "nan") == mid)
    origin = wait_until(lambda: root.get_attribute("data-axis-origin"))
    assert origin and re.fullmatch(r"\d+\.\d{4} ms", origin), origin

    # the lane-label column widens by dragging its edge (the canvas in view: the step cell scrolled
    # the notebook, and the selected row's details strip made the widget taller)
    page.locator(TIMELINE).first.scroll_into_view_if_needed()
    box = page.locator(TIMELINE).first.bounding_box()
    y = box["y"] + 60
    edge = page.evaluate("window.__profview.at(-1).labels().gutter")  # fitted to the lanes' names
    page.mouse.move(box["x"] + edge, y)
    page.mouse.down()
    page.mouse.move(box["x"] + 260, y, steps=6)
    page.mouse.up()
    assert wait_until(lambda: root.get_attribute("data-gutter") == "260")

    nb.step("w.zoom_to(0, w.trace.duration)")
    page.mouse.move(5, 5)
    shot = tmp_path / "torch_widget.png"
    root.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    assert not [e for e in page.page_errors if "profview" in e.lower()]


def test_hostile_names_are_text_not_html(lab: LabServer, page: Any) -> None:
    cells = [
        "from tests.widget_helpers import trace_from_rows\n"
        "import jupyter_profview as profview\n"
        f"XSS = {XSS!r}\n"
        "rows = [dict(name=XSS[i % 2], category=XSS[(i + 1) % 2], process=XSS[0], thread=XSS[1],\n"
        "             start=i * 1000, dur=900) for i in range(40)]\n"
        "w = profview.show(trace_from_rows(rows))\n"
        "w"
    ]
    nb = LabNotebook(lab, page, "xss", cells)
    nb.run_all()
    nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 500)
    # hover and click a slice so that tooltips, details and the table render the names too
    point = wait_until(lambda: page.evaluate("window.__profview.at(-1).locate(0)"))
    page.mouse.move(point["x"], point["y"])
    tip = page.locator(".pv-tooltip").last
    assert wait_until(lambda: tip.is_visible() and XSS[0] in tip.inner_text() + XSS[1])
    page.mouse.click(point["x"], point["y"])
    assert wait_until(lambda: nb.value("w.selection.index.tolist()") == [0])
    root_text = page.locator(".pv-root").first.inner_text()
    assert XSS[0] in root_text or XSS[1] in root_text  # shown, as text
    assert page.evaluate("window.__pwned") is None
    assert page.locator(".pv-root img, .pv-root script").count() == 0


def test_notebook7_smoke(lab: LabServer, page: Any) -> None:
    seed = profview.example("tf_step_stats")
    nb = LabNotebook(lab, page, "nb7", show_cells(f"r'{seed}'"), ui="notebook")
    nb.run_all()
    nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000)
    assert nb.value("w.trace.format") == "tf_step_stats"


def test_graph_without_events_shows_message_and_nodes(lab: LabServer, page: Any) -> None:
    seed = profview.example("tf_node_shapes")
    nb = LabNotebook(lab, page, "nodes", show_cells(f"r'{seed}'"))
    nb.run_all()
    root = nb.wait_widget()
    text = root.inner_text()
    assert "no timed events" in text
    assert "ConstantFolding/gradients/conv1/Conv2D_grad/ShapeN-matshapes-1" in text


def test_save_html_renders_offline(lab: LabServer, page: Any, tmp_path: Path) -> None:
    trace = profview.load(profview.example("tf_step_stats"))
    from jupyter_profview.widget import TraceWidget

    out = TraceWidget(trace).save_html(tmp_path / "view.html")
    page.route("**/*", lambda route: route.abort() if not route.request.url.startswith(("file:", "blob:",
                                                                                          "data:"))
               else route.continue_())
    page.goto(out.as_uri())
    page.locator(".pv-root[data-pv-state='ready']").wait_for(timeout=30_000)
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000)


def test_detail_is_one_round_trip_at_a_time_with_memory(lab: LabServer, page: Any) -> None:
    """CHANGED (perf): one `_detail` (slices + memory) per view change, never two in flight;
    the drawn boxes come from the compact (f32, origin-relative) detail after zooming."""
    seed = profview.example("tf_step_stats")
    nb = LabNotebook(lab, page, "detail_rt", show_cells(f"r'{seed}'"))
    nb.run_all()
    nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000), "nothing drawn on the timeline"
    page.evaluate("""() => {
      const h = window.__profview.at(-1);
      h.detailLog.length = 0; h.detailTimes.length = 0;
    }""")
    box = page.locator(TIMELINE).first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.3)
    for _ in range(8):  # a burst of zooms: at most one request in flight, the latest view last
        wheel(page, -200)
    root = page.locator(".pv-root").last
    assert wait_until(lambda: root.get_attribute("data-source") == "detail"), "the detail never drew"
    # settled: the last reply covers the view the burst ended at
    assert wait_until(lambda: page.evaluate("""() => {
      const h = window.__profview.at(-1), log = h.detailLog;
      return log.length > 0 && log.length === h.detailTimes.length && log[log.length - 1].stale === 0;
    }"""))
    log = page.evaluate("window.__profview.at(-1).detailLog.slice()")
    times = page.evaluate("window.__profview.at(-1).detailTimes.slice()")
    assert log and len(times) == len(log)
    assert all(e["memBytes"] > 0 for e in log), "memory did not come with the slices"
    # never overlapping: each request went out after the previous reply was decoded
    for a, b in zip(log, log[1:], strict=False):
        assert b["sent"] >= a["sent"] + a["done"] - 1, (a, b)
    view = page.evaluate("window.__profview.at(-1).view()")
    last = log[-1]
    assert last["stale"] == 0 and view["end"] > view["start"]
    assert not [e for e in page.page_errors if "profview" in e.lower()]


def test_self_time_on_screen_is_never_negative(lab: LabServer, page: Any, tmp_path: Path) -> None:
    """A real torch 2.13 trace with ``with_stack`` + ``record_function``: the frames whose
    children partly overlap (torch's own "Self CPU" is negative for them) show their
    non-negative self time in the table, the DataFrame's value under the shared rule; so does
    every row in view."""
    import json

    data = Path(__file__).resolve().parents[1] / "data"
    path = data / "torch_overlap.json.gz"
    torch_self = json.loads((data / "torch_overlap_key_averages.json").read_text())["key_averages"]
    negative = sorted(n for n, v in torch_self.items() if v["self_cpu_time_total"] < 0)
    assert negative  # torch reports these negative
    trace = profview.load(path)
    ev = trace.events
    target = int(ev[ev["name"] == negative[0]].index[0])
    name = copy_into(lab, path)
    nb = LabNotebook(lab, page, "selfs", show_cells(f"r'{name}'"))
    nb.run_all()
    root = nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000)
    start, dur = int(ev.loc[target, "start"]), int(ev.loc[target, "dur"])
    nb.step(f"w.zoom_to({start}, {start + dur})")
    rows = root.locator(".pv-table-row")
    assert wait_until(lambda: root.locator(f'.pv-table-row[data-id="{target}"]').count() == 1)
    row = root.locator(f'.pv-table-row[data-id="{target}"]')
    assert row.locator(".pv-col-name").inner_text() == negative[0]
    assert row.locator(".pv-col-self").inner_text() == format_duration(int(ev.loc[target, "self"]))
    assert int(ev.loc[target, "self"]) >= 0
    shown = 0
    for i in range(min(rows.count(), 40)):
        r = rows.nth(i)
        eid = int(r.get_attribute("data-id") or -1)
        text = r.locator(".pv-col-self").inner_text()
        assert not text.startswith("-") and text == format_duration(int(ev.loc[eid, "self"])), eid
        shown += 1
    assert shown >= 10
    page.mouse.move(5, 5)
    shot = tmp_path / "self_time.png"
    root.screenshot(path=str(shot))
    print("screenshot", shot)
