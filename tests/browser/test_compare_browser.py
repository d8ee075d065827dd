"""``profview.show(comparison)`` in JupyterLab under Debian Chromium (marked ``browser``): two timelines
whose zoom and pan are synced through the alignment offset both ways (A -> B and B -> A), and an
ops table whose rows highlight in both.  Every step waits for state (the front ends' view
attributes, the kernel's ``visible``), never for a fixed time."""

from __future__ import annotations

import gzip
import json
from typing import Any

from tests.browser.lab import REPO, LabNotebook, LabServer, wait_until

BASE = REPO / "tests" / "data" / "compare" / "base.pt.trace.json.gz"
TEST = REPO / "tests" / "data" / "compare" / "test.pt.trace.json.gz"
READY = ".pv-root[data-pv-state='ready']"
CELLS = ["import jupyter_profview as profview\n"
         "c = profview.compare(profview.example('compare_base'), profview.example('compare_test'))\n"
         "view = profview.show(c)\n"
         "view"]


def x_events(path: Any, name: str) -> int:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return sum(1 for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and e.get("name") == name)


def view_of(root: Any) -> tuple[float, float]:
    return float(root.get_attribute("data-view-start")), float(root.get_attribute("data-view-end"))


def digest(root: Any) -> str:
    """Fingerprint of the pixels of the timeline canvas under ``root``."""
    return str(root.locator(".pv-timeline canvas").first.evaluate("""(c) => {
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let h = 0;
      for (let i = 0; i < d.length; i++) h = (Math.imul(h, 31) + d[i]) | 0;
      return h + ':' + d.length;
    }"""))


def wheel_zoom(page: Any, root: Any, times: int, at: float = 0.4) -> None:
    """Wheel-zoom into ``root``'s timeline at ``at`` of its width, one notch at a time: each notch
    waits until that timeline's view has changed (paced by the page, not by a clock)."""
    canvas = root.locator(".pv-timeline canvas").first
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] * at, box["y"] + box["height"] * 0.3)
    for _ in range(times):
        before = view_of(root)
        page.keyboard.down("Control")  # Ctrl+wheel zooms (a plain wheel over the unfocused view scrolls)
        page.mouse.wheel(0, -300)
        page.keyboard.up("Control")
        changed = wait_until(lambda before=before: view_of(root) != before, timeout=10)
        assert changed, "a wheel notch did nothing"


def drag_pan(page: Any, root: Any, fraction: float) -> None:
    """Drag ``root``'s timeline left by ``fraction`` of its width (later times come into view)."""
    canvas = root.locator(".pv-timeline canvas").first
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    x0, y = box["x"] + box["width"] * 0.7, box["y"] + box["height"] * 0.3
    page.mouse.move(x0, y)
    page.mouse.down()
    page.mouse.move(x0 - box["width"] * fraction, y, steps=12)
    page.mouse.up()


def in_step(a: tuple[float, float], b: tuple[float, float], offset: float) -> bool:
    """B's window is A's moved by the offset (to 1e-3 of the span)."""
    span = a[1] - a[0]
    return span > 0 and abs(b[0] - (a[0] + offset)) < 1e-3 * span \
        and abs(b[1] - (a[1] + offset)) < 1e-3 * span


def test_compare_view_syncs_zoom_and_highlights_rows(lab: LabServer, page: Any) -> None:
    nb = LabNotebook(lab, page, "compare", CELLS)
    nb.run_all()
    roots = page.locator(READY)
    assert wait_until(lambda: roots.count() == 2, timeout=60), "two timelines did not render"
    root_a, root_b = roots.nth(0), roots.nth(1)
    offset = nb.value("view.offset")
    assert offset == nb.value("c.offset") and offset != 0

    # both start on the common window, B's shifted by the offset (front-end state)
    assert wait_until(lambda: abs(view_of(root_b)[0] - view_of(root_a)[0] - offset) < 1e-3 * offset + 1)
    full_a = view_of(root_a)

    # wheel-zoom A's timeline: B's front end follows, and so does B's visible in the kernel
    wheel_zoom(page, root_a, 4)

    def synced() -> bool:
        a, b = view_of(root_a), view_of(root_b)
        return a[1] - a[0] < (full_a[1] - full_a[0]) * 0.8 and in_step(a, b, offset)

    assert wait_until(synced, timeout=20), (view_of(root_a), view_of(root_b))

    def kernel_views() -> tuple[tuple[float, float], tuple[float, float]]:
        (a0, a1), (b0, b1) = nb.value("[list(view.a.visible), list(view.b.visible)]")
        return (a0, a1), (b0, b1)

    def kernel_synced(front: tuple[float, float]) -> bool:  # the front ends send _view debounced
        a, b = kernel_views()
        return abs(a[0] - front[0]) < 1e-3 * (a[1] - a[0]) and in_step(a, b, offset)

    zoomed_a = view_of(root_a)
    assert wait_until(lambda: kernel_synced(zoomed_a), timeout=20), kernel_views()

    # pan A by dragging: the window moves to later times at the same span; B follows
    drag_pan(page, root_a, 0.3)
    span = zoomed_a[1] - zoomed_a[0]

    def panned() -> bool:
        a, b = view_of(root_a), view_of(root_b)
        moved = a[0] > zoomed_a[0] + 0.1 * span and abs((a[1] - a[0]) - span) < 1e-3 * span
        return moved and in_step(a, b, offset)

    assert wait_until(panned, timeout=20), (zoomed_a, view_of(root_a), view_of(root_b))
    panned_a = view_of(root_a)
    assert wait_until(lambda: kernel_synced(panned_a), timeout=20), kernel_views()

    # now zoom B: A follows, mapped back through the offset (B -> A)
    wheel_zoom(page, root_b, 3, at=0.6)

    def b_led() -> bool:
        a, b = view_of(root_a), view_of(root_b)
        return b[1] - b[0] < 0.8 * span and in_step(a, b, offset)

    assert wait_until(b_led, timeout=20), (view_of(root_a), view_of(root_b))
    zoomed_b_a = view_of(root_a)
    assert zoomed_b_a[1] - zoomed_b_a[0] < 0.8 * span  # A zoomed in with B
    assert wait_until(lambda: kernel_synced(zoomed_b_a), timeout=20), kernel_views()

    # click the aten::mm row of the ops table: both timelines highlight its events
    before = digest(root_a), digest(root_b)
    index = nb.value("[v for _, v in view.table.options].index(('name', 'aten::mm'))")
    option = page.locator(".pv-compare-ops select option").nth(index)
    option.scroll_into_view_if_needed()
    option.click()
    expected_a, expected_b = x_events(BASE, "aten::mm"), x_events(TEST, "aten::mm")
    assert expected_a > 0 and expected_b > 0
    assert wait_until(lambda: root_a.get_attribute("data-highlight") == str(expected_a)
                      and root_b.get_attribute("data-highlight") == str(expected_b), timeout=20), (
        root_a.get_attribute("data-highlight"), root_b.get_attribute("data-highlight"))
    assert nb.value("list(view.highlighted)") == ["name", "aten::mm"]
    assert wait_until(lambda: digest(root_a) != before[0] and digest(root_b) != before[1]), \
        "the highlight drew nothing"
    assert not [e for e in page.page_errors if "profview" in e.lower()]
