"""Colour by SM efficiency on a real A100 trace in JupyterLab + Debian Chromium (marked
``browser``): the legend's classes count what ``analysis.kernel_efficiency`` says, and the tooltip
of a hovered kernel shows its row's SM efficiency and occupancy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

import jupyter_profview as profview
from jupyter_profview import analysis
from tests.browser.lab import LabNotebook, LabServer, canvas_digest, canvas_ink, copy_into, wait_until

TIMELINE = ".pv-timeline canvas"
NCCL = Path(__file__).parents[1] / "data" / "hta" / "nccl_parser_config_nccl_data.json.gz"


def test_colour_by_sm_efficiency_legend_and_tooltip(lab: LabServer, page: Any, tmp_path: Path) -> None:
    name = copy_into(lab, NCCL)
    nb = LabNotebook(lab, page, "kernels", ["import jupyter_profview as profview\n"
                                            f"w = profview.show(profview.load(r'{name}'))\n"
                                            "w"])
    nb.run_all()
    root = nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000), "nothing drawn on the timeline"
    trace = profview.load(NCCL)
    table = analysis.kernel_efficiency(trace)

    # the switch offers SM efficiency; choosing it recolours the timeline and the legend
    before = canvas_digest(page, TIMELINE)
    root.locator(".pv-colorby").select_option("sm_efficiency")
    assert wait_until(lambda: nb.value("w.color_by") == "sm_efficiency")
    items = root.locator(".pv-legend-item")
    assert wait_until(lambda: "SM efficiency" in (items.first.inner_text() if items.count() else ""))
    assert wait_until(lambda: canvas_digest(page, TIMELINE) != before), "the timeline was not recoloured"
    values = table["sm_efficiency"].to_numpy()
    for i in range(5):  # each class's count (the item's title) is the DataFrame's, counted here
        lo, hi = 20.0 * i, 20.0 * (i + 1)
        want = int(((values >= lo) & ((values < hi) if i < 4 else (values <= hi))).sum())
        assert items.nth(i).inner_text() == f"SM efficiency {lo:g}–{hi:g} %"
        assert items.nth(i).get_attribute("title") == f"SM efficiency {lo:g}–{hi:g} %: {want:,} events"

    # hover the longest compute kernel: the tooltip shows its row's numbers
    compute = table[~table["name"].astype(str).str.startswith("nccl")]
    row = compute.loc[compute["dur"].idxmax()]
    start = float(trace.events.loc[int(row["event"]), "start"])
    dur = float(row["dur"])
    nb.step(f"w.zoom_to({start - dur * 0.2}, {start + dur * 1.2})")
    page.locator(TIMELINE).first.scroll_into_view_if_needed()
    point = wait_until(lambda: page.evaluate(f"window.__profview.at(-1).locate({int(row['event'])})"))
    assert point, "the kernel is not drawn as its own box"
    page.mouse.move(point["x"], point["y"])
    tip = root.locator(".pv-tooltip")
    want_sm = f"SM efficiency {row['sm_efficiency']:.2f} %"
    want_occ = f"occupancy {row['occupancy']:.2f} %"
    assert wait_until(lambda: want_sm in tip.inner_text() and want_occ in tip.inner_text()), tip.inner_text()
    assert np.isfinite(row["sm_efficiency"])
    shot = tmp_path / "kernel_metrics.png"  # for a person to read: the legend and the tooltip
    root.screenshot(path=str(shot))
    print("screenshot", shot)
    assert not page.page_errors, page.page_errors  # type: ignore[attr-defined]
