"""The compare panel without a kernel, under Debian Chromium: a JupyterLab "Profile viewer" tab and
the `profview serve --parent` page open HTA's compare base trace (a real GPU trace), "Compare with…" takes
the path of HTA's compare test trace (relative to the server root), and every row of the table
read off the screen equals `changes(profview.compare(a, b))` (the DataFrame the notebook's
`CompareView` lists) under the shared number rule.  A missing file, a path outside the root and
a file of no known format answer the package's error, shown in the status line, never a server
path."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jupyter_profview as profview
from jupyter_profview.analysis.compare_view import changes
from jupyter_profview.errors import ProfviewError
from jupyter_profview.numbers import format_duration
from tests.browser.lab import LabServer, canvas_ink, wait_until
from tests.browser.test_lab_extension import NEEDS_LABEXTENSION, lab_tab_server, open_lab_tab, viewer_page
from tests.server_helpers import profview_serve

HTA = Path(__file__).parents[1] / "data" / "hta"
BASE, TEST = HTA / "trace_compare_base_base.json.gz", HTA / "trace_compare_test_test.json.gz"
A, B, BAD = "base.pt.trace.json.gz", "test.pt.trace.json.gz", "notes.json"

pytestmark = NEEDS_LABEXTENSION


def fill(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(BASE, root / A)
    shutil.copy(TEST, root / B)
    (root / BAD).write_text('{"not": "a trace"}')


@pytest.fixture(scope="module")
def expected() -> dict[str, Any]:
    """The comparison the notebook makes (`profview.compare`), and the loader's own error text."""
    c = profview.compare(BASE, TEST)
    with pytest.raises(ProfviewError) as bad:
        _load_bad()
    return {"c": c, "table": changes(c), "bad": bad.value.reason}


def _load_bad() -> None:
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / BAD
        p.write_text('{"not": "a trace"}')
        profview.load(p)


def row_cells(name: str, r: Any, unit: str) -> list[str]:
    """The row as the screen must show it, from the DataFrame (shared number rule)."""
    d = float(r["delta"])
    sign = "+" if d > 0 else "-" if d < 0 else ""
    return [f"{sign}{format_duration(abs(d), unit)}", str(r["status"]),
            format_duration(float(r["self_a"]), unit), format_duration(float(r["self_b"]), unit),
            f"{int(r['count_a'])} -> {int(r['count_b'])}",
            str(r["what"]), name]


def shows(status: Any, text: str, *, prefix: bool) -> Any:
    """Whether the status line reads ``text`` (or starts with it, with ``prefix``)."""
    return lambda: status.inner_text() == text or (prefix and status.inner_text().startswith(text))


def check_compare(page: Any, scope: str, want: dict[str, Any], shot: Path) -> None:
    assert wait_until(lambda: canvas_ink(page, f"{scope} .pv-timeline canvas") > 2000), "nothing drawn"
    button = page.locator(f"{scope} .pv-panel-btn[data-panel='compare']")
    assert wait_until(lambda: button.is_visible())
    assert button.inner_text() == "Compare with…"
    button.click()
    path = page.locator(f"{scope} .pv-compare-path")
    assert wait_until(lambda: path.is_visible())
    status = page.locator(f"{scope} .pv-status")

    def ask(asked: str) -> None:
        path.fill(asked)
        page.locator(f"{scope} .pv-compare-go").click()

    # errors: the package's message, relative to the root
    for asked, text in ((f"missing-{B}", f"missing-{B}: no such file"),
                        (f"../outside/{B}", f"../outside/{B}: is outside the server root"),
                        (BAD, f"{BAD}: {want['bad']}")):
        ask(asked)
        # the status line shortens a long message in its middle: the unrecognised file's is long
        shown = shows(status, f"Compare with…: {text}", prefix=asked == BAD)
        assert wait_until(shown), (asked, status.inner_text())
        assert "/tmp" not in status.inner_text()

    ask(B)
    c, table = want["c"], want["table"]
    rows = page.locator(f"{scope} .pv-compare-row:not(.pv-compare-th)")
    assert wait_until(lambda: rows.count() == min(len(table), 200)), rows.count()
    assert status.inner_text() == ""
    assert page.locator(f"{scope} .pv-compare-summary").inner_text() == c.summary()
    shown = [rows.nth(i).locator("span").all_inner_texts() for i in range(rows.count())]
    assert shown == [row_cells(str(name), r, c.time_unit) for name, r in table.iterrows()]
    assert button.get_attribute("aria-pressed") == "true"
    # a click on a row highlights that op's events of A (counted in the trace here)
    k = [str(n) for n in table.index].index("nccl:all_reduce")
    events = profview.load(BASE).events
    n = int((events["name"].astype(str) == "nccl:all_reduce").sum())
    rows.nth(k).click()
    root = page.locator(f"{scope} .pv-root").first
    assert wait_until(lambda: root.get_attribute("data-highlight") == str(n)), \
        root.get_attribute("data-highlight")
    page.locator(f"{scope} .pv-compare").scroll_into_view_if_needed()
    page.screenshot(path=str(shot), full_page=True)
    print("screenshot", shot)
    button.click()
    assert wait_until(lambda: not page.locator(f"{scope} .pv-compare").is_visible())


@pytest.fixture(scope="module")
def compare_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    def fill_top(top: Path) -> None:
        fill(top / "root")
        (top / "outside").mkdir()
        shutil.copy(TEST, top / "outside" / B)

    with lab_tab_server(tmp_path_factory, "compare", {}, fill_top) as server:
        yield server


def test_lab_tab_compares_with_a_second_trace(browser: Any, compare_lab: LabServer, expected: dict[str, Any],
                                              request: pytest.FixtureRequest, tmp_path: Path) -> None:
    with viewer_page(browser, request, tmp_path) as page:
        scope = open_lab_tab(page, compare_lab, "compare", A)
        check_compare(page, scope, expected, tmp_path / "lab-compare.png")


def test_serve_page_compares_with_a_second_trace(browser: Any, expected: dict[str, Any],
                                                 request: pytest.FixtureRequest, tmp_path: Path) -> None:
    fill(tmp_path / "root")
    (tmp_path / "outside").mkdir()
    shutil.copy(TEST, tmp_path / "outside" / B)
    with viewer_page(browser, request, tmp_path) as page, \
            profview_serve(tmp_path / "root" / A, tmp_path / "serve.log", args=("--parent",)) as (_http, url):
        page.goto(url)
        page.wait_for_selector("#profview-root .pv-timeline canvas")
        check_compare(page, "#profview-root", expected, tmp_path / "serve-compare.png")
