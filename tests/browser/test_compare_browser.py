"""``Comparison.show()`` in JupyterLab under Debian Chromium (marked ``browser``): two timelines
whose zoom is synced through the alignment offset, and an ops table whose rows highlight in both."""

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
         "view = c.show()\n"
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
    canvas = root_a.locator(".pv-timeline canvas").first
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.4, box["y"] + box["height"] * 0.3)
    for _ in range(4):
        page.mouse.wheel(0, -300)
        page.wait_for_timeout(100)  # paced like a hand on a wheel

    def synced() -> bool:
        a, b = view_of(root_a), view_of(root_b)
        span = a[1] - a[0]
        return span < (full_a[1] - full_a[0]) * 0.8 and abs(b[0] - (a[0] + offset)) < 1e-3 * span \
            and abs(b[1] - (a[1] + offset)) < 1e-3 * span

    assert wait_until(synced, timeout=20), (view_of(root_a), view_of(root_b))
    def kernel_synced() -> bool:  # the front ends send _view debounced (~150 ms)
        (a0, a1), (b0, b1) = nb.value("[list(view.a.visible), list(view.b.visible)]")
        return a1 - a0 < (full_a[1] - full_a[0]) * 0.8 \
            and abs(b0 - (a0 + offset)) < 1e-3 * (a1 - a0) and abs(b1 - (a1 + offset)) < 1e-3 * (a1 - a0)

    assert wait_until(kernel_synced, timeout=20), nb.value("[list(view.a.visible), list(view.b.visible)]")

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
