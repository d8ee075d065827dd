"""The findings panel in JupyterLab under Debian Chromium, on a real A100 trace (HTA's NCCL test
trace): every number on screen is the DataFrame's under the shared formatting rule, and a click
on a finding highlights exactly its evidence and selects it in the kernel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jupyter_profview as profview
from jupyter_profview.numbers import share_text
from jupyter_profview.widget.numbers import format_duration
from tests.browser.lab import LabNotebook, LabServer, copy_into, wait_until
from tests.test_idle_shading import evidence_cell

DATA = Path(__file__).resolve().parents[1] / "data"


def test_findings_panel_on_a_real_gpu_trace(lab: LabServer, page: Any, tmp_path: Path) -> None:
    path = DATA / "hta" / "nccl_parser_config_nccl_data.json.gz"
    trace = profview.load(path)
    advice = profview.advise(trace)
    f = advice.findings
    assert len(f) >= 3
    name = copy_into(lab, path)
    nb = LabNotebook(lab, page, "advice", ["import jupyter_profview as profview\n"
                                           f"w = profview.show(r'{name}', advice=True)\nw"])
    nb.run_all()
    root = nb.wait_widget()
    rows = root.locator(".pv-advice-row:not(.pv-advice-th)")
    assert wait_until(lambda: rows.count() == len(f)), rows.count()
    for i in range(len(f)):
        r = rows.nth(i)
        assert r.locator(".pv-a-rule").inner_text() == f["rule"].iat[i]
        assert r.locator(".pv-a-sev").inner_text() == f["severity"].iat[i]
        assert r.locator(".pv-a-time").inner_text() == format_duration(int(f["time"].iat[i]))
        assert r.locator(".pv-a-share").inner_text() == share_text(float(f["share"].iat[i]))
        assert r.locator(".pv-a-count").inner_text() == evidence_cell(trace, f.iloc[i])
    k = int(f.index[f["rule"] == "exposed_communication"][0])
    evidence = sorted(int(e) for e in f["events"].iat[k])
    rows.nth(k).click()
    assert wait_until(lambda: nb.value("sorted(w.selection.index.tolist())") == evidence)
    assert wait_until(lambda: root.get_attribute("data-highlight") == str(len(evidence)))
    # the table lists the evidence (its kernels' launch rows: the table's view of kernels), and
    # keeps it after the zoom to the first of them
    totals = root.locator(".pv-table-totals")
    assert wait_until(lambda: totals.inner_text().startswith(f"{len(evidence)} kernel launches selected")), \
        totals.inner_text()
    page.mouse.move(5, 5)
    shot = tmp_path / "advice.png"
    root.screenshot(path=str(shot))
    print("screenshot", shot)
