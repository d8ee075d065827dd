"""The explain panels without a kernel, under Debian Chromium: a JupyterLab "Profile viewer" tab and
the `profview serve` page open a real A100 + NCCL trace (HTA's test data), and their toolbar shows
the findings, a step's critical path (and another step's, from the picker) and the icicle.  Every
number read off the screen is the DataFrame's (`advise`, `critical_path`, `attribute`, computed
here) under the shared number rule; a click on a finding highlights exactly its evidence and the
table lists it -- through the server worker's session, the one the notebook widget wraps."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jupyter_profview as profview
from jupyter_profview.analysis import attribute, critical_path
from jupyter_profview.numbers import format_duration, share_text
from tests.browser.lab import LabServer, canvas_ink, wait_until
from tests.browser.test_lab_extension import NEEDS_LABEXTENSION, lab_tab_server, open_lab_tab, viewer_page
from tests.server_helpers import profview_serve
from tests.test_idle_shading import evidence_cell, idle_by_hand

NCCL = Path(__file__).parents[1] / "data" / "hta" / "nccl_parser_config_nccl_data.json.gz"
NAME = "nccl.pt.trace.json.gz"  # a profiler's file name: the file browser opens it in the viewer
BUTTONS = ["What's wrong", "Critical path", "Breakdown", "Compare with…", "Open in Perfetto"]

pytestmark = NEEDS_LABEXTENSION


@pytest.fixture(scope="module")
def expected() -> dict[str, Any]:
    """What the screen must show, computed from the trace by the analyses themselves."""
    t = profview.load(NCCL)
    return {"trace": t, "advice": profview.advise(t), "cp0": critical_path(t, instance=0),
            "cp1": critical_path(t, instance=1), "tree": attribute(t, "annotation", merge_steps=True)}


@pytest.fixture(scope="module")
def panels_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    with lab_tab_server(tmp_path_factory, "panels", {NAME: NCCL}) as server:
        yield server


def legend_texts(cp: Any) -> list[str]:
    return [f"{r.type} {format_duration(r.time)} ({share_text(r.share)})" for r in cp.breakdown.itertuples()]


def check_panels(page: Any, scope: str, want: dict[str, Any], shot: Path) -> None:
    """Open the three panels from the toolbar of the view inside `scope` and read their numbers."""
    root = page.locator(f"{scope} .pv-root").first
    assert wait_until(lambda: canvas_ink(page, f"{scope} .pv-timeline canvas") > 2000), "nothing drawn"
    buttons = page.locator(f"{scope} .pv-panel-btn:visible")  # Stage lanes: only on a pipeline run
    assert wait_until(lambda: buttons.count() == len(BUTTONS) and buttons.first.is_visible())
    assert buttons.all_inner_texts() == BUTTONS

    # What's wrong: one row per finding, its numbers the DataFrame's
    f = want["advice"].findings
    w0, w1 = want["advice"].window
    page.locator(f"{scope} .pv-panel-btn[data-panel='advice']").click()
    rows = page.locator(f"{scope} .pv-advice-row:not(.pv-advice-th)")
    assert wait_until(lambda: rows.count() == len(f)), rows.count()
    assert page.locator(f"{scope} .pv-advice-title").inner_text() == \
        f"What's wrong: {len(f)} findings in the {format_duration(w1 - w0)} window"
    for i in range(len(f)):
        r = rows.nth(i)
        assert r.locator("span").all_inner_texts()[:5] == [
            f["severity"].iat[i], f["rule"].iat[i], format_duration(int(f["time"].iat[i])),
            share_text(float(f["share"].iat[i])), evidence_cell(want["trace"], f.iloc[i])]
    # a click highlights the evidence and the table lists it
    k = int(f.index[f["rule"] == "exposed_communication"][0])
    evidence = {int(e) for e in f["events"].iat[k]}
    rows.nth(k).click()
    assert wait_until(lambda: root.get_attribute("data-highlight") == str(len(evidence)))
    totals = page.locator(f"{scope} .pv-table-totals")
    assert wait_until(lambda: totals.inner_text().startswith(f"{len(evidence)} kernel launches selected")), \
        totals.inner_text()
    assert page.locator(f"{scope} .pv-panel-btn[data-panel='advice']").get_attribute("aria-pressed") == "true"
    assert page.locator(f"{scope} .pv-advice").get_attribute("data-picked") == str(k)
    # gpu_idle: the session's reply marks its row and shades its idle intervals (counted from the
    # trace) on its GPU's lanes, the whole window in view
    k = int(f.index[f["rule"] == "gpu_idle"][0])
    idle = idle_by_hand(want["trace"], str(f["device"].iat[k]))
    rows.nth(k).click()
    panel = page.locator(f"{scope} .pv-advice")
    assert wait_until(lambda: panel.get_attribute("data-idle-intervals") == str(len(idle)))
    assert panel.get_attribute("data-picked") == str(k)
    total = sum(b - a for a, b in idle)
    assert panel.get_attribute("data-idle-ns") == str(total) == str(int(f["time"].iat[k]))
    lanes = len(panel.get_attribute("data-idle-tracks").split(","))
    assert wait_until(lambda: root.get_attribute("data-shaded") == str(len(idle) * lanes))
    assert (root.get_attribute("data-view-start"), root.get_attribute("data-view-end")) == (str(w0), str(w1))

    # Critical path: the first step's, then the second one's from the picker
    cp0, cp1 = want["cp0"], want["cp1"]
    page.locator(f"{scope} .pv-panel-btn[data-panel='critical_path']").click()
    title = page.locator(f"{scope} .pv-critical-title")
    assert wait_until(lambda: title.is_visible() and title.inner_text() == (
        f"Critical path of {cp0.steps['name'].iat[0]}: {format_duration(cp0.length)} over "
        f"{len(cp0.events):,} events")), title.inner_text()
    assert page.locator(f"{scope} .pv-critical-key").all_inner_texts() == legend_texts(cp0)
    assert wait_until(lambda: root.get_attribute("data-highlight") == str(len(cp0.events)))
    arrows = cp0.path["type"].astype(str).isin(["launch", "kernel", "sync"]).sum()  # critical.ts ARROW_TYPES
    assert root.get_attribute("data-critical-arrows") == str(arrows)
    page.locator(f"{scope} .pv-critical-step").select_option("1")
    assert wait_until(lambda: title.inner_text() == (
        f"Critical path of {cp1.steps['name'].iat[1]}: {format_duration(cp1.length)} over "
        f"{len(cp1.events):,} events")), title.inner_text()
    assert page.locator(f"{scope} .pv-critical-key").all_inner_texts() == legend_texts(cp1)

    # Breakdown: the icicle of GPU time by annotation, steps merged; the largest root's numbers
    tree = want["tree"]
    page.locator(f"{scope} .pv-panel-btn[data-panel='icicle']").click()
    icicle = page.locator(f"{scope} .pv-icicle")
    assert wait_until(lambda: icicle.get_attribute("data-nodes") == str(len(tree)))
    canvas = page.locator(f"{scope} .pv-icicle-canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    assert box is not None
    total = float(tree.loc[tree["parent"] == -1, "gpu_total"].sum())
    first = tree[tree["parent"] == -1].sort_values(["gpu_total", "node"], ascending=[False, True]).iloc[0]
    page.mouse.move(box["x"] + box["width"] * (first["gpu_total"] / total) / 2, box["y"] + 9)
    assert wait_until(lambda: canvas.get_attribute("data-hover") == str(int(first["node"])))
    assert page.locator(f"{scope} .pv-icicle-hover").inner_text() == (
        f"{first['path']}\nGPU {format_duration(first['gpu_total'])} · "
        f"CPU {format_duration(first['cpu_total'])} · {first['count']:,} × · {first['kernels']:,} kernels · "
        f"{share_text(100 * first['gpu_total'] / total)} of GPU time")
    page.screenshot(path=str(shot), full_page=True)
    print("screenshot", shot)

    # Colour by: the kernel and collective numbers this trace has (its kernels carry them all)
    colour = page.locator(f"{scope} .pv-colorby")
    assert colour.is_visible()
    assert colour.locator("option").all_inner_texts() == [
        "colour: category", "colour: phase", "colour: SM efficiency", "colour: occupancy",
        "colour: tensor core", "colour: bus bandwidth"]
    legend = page.locator(f"{scope} .pv-legend")
    before = legend.inner_text()
    colour.select_option("sm_efficiency")
    assert wait_until(lambda: legend.inner_text() != before and "SM efficiency" in legend.inner_text()), \
        legend.inner_text()

    # a second click hides a panel
    page.locator(f"{scope} .pv-panel-btn[data-panel='advice']").click()
    assert wait_until(lambda: not page.locator(f"{scope} .pv-advice").is_visible())


def test_lab_tab_toolbar_shows_the_panels(browser: Any, panels_lab: LabServer, expected: dict[str, Any],
                                          request: pytest.FixtureRequest, tmp_path: Path) -> None:
    with viewer_page(browser, request, tmp_path) as page:
        scope = open_lab_tab(page, panels_lab, "panels", NAME)
        check_panels(page, scope, expected, tmp_path / "lab-panels.png")


def test_serve_page_toolbar_shows_the_panels(browser: Any, expected: dict[str, Any],
                                             request: pytest.FixtureRequest, tmp_path: Path) -> None:
    trace = tmp_path / NAME
    shutil.copy(NCCL, trace)
    with viewer_page(browser, request, tmp_path) as page, \
            profview_serve(trace, tmp_path / "serve.log") as (_http, url):
        page.goto(url)
        page.wait_for_selector("#profview-root .pv-timeline canvas")
        check_panels(page, "#profview-root", expected, tmp_path / "serve-panels.png")
