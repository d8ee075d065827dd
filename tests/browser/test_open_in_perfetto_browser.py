""""Open in Perfetto" without a kernel, under Debian Chromium: in a JupyterLab "Profile viewer" tab
and on the `profview serve` page (a real A100 + NCCL trace, HTA's test data) the toolbar action
writes the trace as a .pftrace next to its file, the message names that file (relative to the
root) and links ui.perfetto.dev; the file is there and `profview.load` reads it back with one
slice per complete or instant event of the JSON (counted here from the file itself).  Where the
file cannot be written the package's error is the message."""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jupyter_profview as profview
from tests.browser.lab import LabServer, canvas_ink, wait_until
from tests.browser.test_lab_extension import NEEDS_LABEXTENSION, lab_tab_server, open_lab_tab, viewer_page
from tests.server_helpers import profview_serve

NCCL = Path(__file__).parents[1] / "data" / "hta" / "nccl_parser_config_nccl_data.json.gz"
NAME, SAVED = "nccl.pt.trace.json.gz", "nccl.pt.trace.pftrace"

pytestmark = NEEDS_LABEXTENSION


@pytest.fixture(scope="module")
def slices() -> int:
    """Complete ('X') and instant ('i'/'I') events of the JSON file, counted from the file."""
    with gzip.open(NCCL) as f:
        events = json.load(f)["traceEvents"]
    return sum(1 for e in events if e.get("ph") in ("X", "i", "I"))


def check_export(page: Any, scope: str, root: Path, slices: int, shot: Path) -> None:
    assert wait_until(lambda: canvas_ink(page, f"{scope} .pv-timeline canvas") > 2000), "nothing drawn"
    button = page.locator(f"{scope} .pv-panel-btn[data-panel='perfetto']")
    assert wait_until(lambda: button.is_visible())
    assert button.inner_text() == "Open in Perfetto"
    status = page.locator(f"{scope} .pv-status")

    # the target taken by a directory: the package's error, no server path
    (root / SAVED).mkdir()
    button.click()
    refused = f"Open in Perfetto: {SAVED}: cannot be written: Is a directory"
    assert wait_until(lambda: status.inner_text() == refused), status.inner_text()
    (root / SAVED).rmdir()

    button.click()
    saved = page.locator(f"{scope} .pv-perfetto-saved")
    assert wait_until(lambda: saved.is_visible() and saved.inner_text().startswith("Saved ")), \
        status.inner_text()
    where = saved.get_attribute("data-path")
    assert where == SAVED
    path = root / where
    assert path.is_file()
    assert saved.inner_text().startswith(f"Saved {SAVED} (")
    link = page.locator(f"{scope} .pv-perfetto-link")
    assert link.get_attribute("href") == "https://ui.perfetto.dev"
    assert "Open trace file" in page.locator(f"{scope} .pv-perfetto-how").inner_text()
    back = profview.load(path)
    assert len(back.events) == slices
    page.locator(f"{scope} .pv-perfetto").scroll_into_view_if_needed()
    page.screenshot(path=str(shot), full_page=True)
    print("screenshot", shot)


@pytest.fixture(scope="module")
def export_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabServer, Path]]:
    with lab_tab_server(tmp_path_factory, "perfetto", {NAME: NCCL}) as server:
        yield server, server.root


def test_lab_tab_opens_in_perfetto(browser: Any, export_lab: tuple[LabServer, Path], slices: int,
                                   request: pytest.FixtureRequest, tmp_path: Path) -> None:
    server, root = export_lab
    with viewer_page(browser, request, tmp_path, height=1200) as page:
        scope = open_lab_tab(page, server, "perfetto", NAME)
        check_export(page, scope, root, slices, tmp_path / "lab-perfetto.png")


def test_serve_page_opens_in_perfetto(browser: Any, slices: int, request: pytest.FixtureRequest,
                                      tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(NCCL, root / NAME)
    with viewer_page(browser, request, tmp_path, height=1200) as page, \
            profview_serve(root / NAME, tmp_path / "serve.log") as (_http, url):
        page.goto(url)
        page.wait_for_selector("#profview-root .pv-timeline canvas")
        check_export(page, "#profview-root", root, slices, tmp_path / "serve-perfetto.png")
