"""The table's efficiency tab on a real MI250 (ROCm) trace with shapes: select the run's kernels
from Python (``w.select``), the tab lists the GEMMs that issued them with the DataFrame's numbers
(shared rules)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jupyter_profview as profview
from jupyter_profview.analysis import op_efficiency
from jupyter_profview.numbers import format_duration, tflops_text
from tests.browser.lab import LabNotebook, LabServer, wait_until

AMD = Path(__file__).parents[1] / "data" / "hta" / "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"


def test_efficiency_tab(lab: LabServer, page: Any) -> None:
    eff = op_efficiency(profview.load(AMD)).sort_values("gpu_time", ascending=False)
    cells = ["import jupyter_profview as profview\n"
             f"t = profview.load(r'{AMD}')\n"
             "w = profview.show(t)\n"
             "w"]
    nb = LabNotebook(lab, page, "efficiency", cells)
    nb.run_all()
    nb.wait_widget()
    nb.step("w.select(t.events.loc[t.launches['kernel']])")
    tab = page.locator(".pv-table-tab[data-kind='efficiency']")
    assert wait_until(lambda: tab.count() == 1), "no efficiency tab"
    assert tab.inner_text() == f"Efficiency ({len(eff)})"
    tab.click()
    table = page.locator(".pv-table[data-kind='efficiency']")
    table.wait_for()
    rows = page.locator(".pv-table[data-kind='efficiency'] .pv-table-row")
    assert wait_until(lambda: rows.count() == len(eff)
                      and rows.nth(0).locator(".pv-col-name").inner_text() != "…")
    for i, r in enumerate(eff.itertuples()):
        keys = ("name", "shapes", "dur", "tflops", "pct", "bound")
        cells_text = [rows.nth(i).locator(f".pv-col-{k}").inner_text() for k in keys]
        assert cells_text == [r.name, r.shapes, format_duration(r.gpu_time), tflops_text(r.tflops), "–", "–"]
    assert page.page_errors == []  # type: ignore[attr-defined]
