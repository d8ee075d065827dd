"""A recorded pipeline run (interleaved 1F1B, 2 ranks) in the all-ranks widget under Debian Chromium:
`highlight_stage` lights exactly the slow stage's actions, and the findings panel shows each rank's
`pipeline_bubble` finding with the DataFrame's time and share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jupyter_profview as profview
from jupyter_profview.analysis import pipeline_bubbles
from jupyter_profview.numbers import share_text
from jupyter_profview.widget.numbers import format_duration
from tests.browser.lab import LabNotebook, LabServer, wait_until

RUN = Path(__file__).resolve().parents[1] / "data" / "pipeline" / "interleaved"


def test_stage_and_bubble_finding_in_the_browser(lab: LabServer, page: Any, tmp_path: Path) -> None:
    ts = profview.load_many(RUN, cache=tmp_path / "cache", progress=False)
    pp = pipeline_bubbles(ts)
    stage1 = int((pp.actions["stage"] == 1).sum())
    f = profview.advise(ts).findings
    bubble = f[f["rule"] == "pipeline_bubble"]
    assert len(bubble) == 2
    nb = LabNotebook(lab, page, "pipeline", [
        "import jupyter_profview as profview\n"
        "from jupyter_profview.analysis import pipeline_bubbles\n"
        "from jupyter_profview.widget.pipeline import highlight_stage\n"
        f"ts = profview.load_many(r'{RUN}', cache=r'{tmp_path / 'kcache'}', progress=False)\n"
        "pp = pipeline_bubbles(ts)\n"
        "w = profview.show(ts, advice=True)\n"
        "rows = highlight_stage(w, pp, 1)\n"
        "w"])
    nb.run_all()
    root = nb.wait_widget()
    assert wait_until(lambda: root.get_attribute("data-highlight") == str(stage1)), \
        root.get_attribute("data-highlight")
    assert nb.value("len(rows)") == stage1
    shown = root.locator(".pv-advice-row:not(.pv-advice-th)")
    assert wait_until(lambda: shown.count() == len(f)), shown.count()
    for i in range(len(f)):
        if f["rule"].iat[i] != "pipeline_bubble":
            continue
        r = shown.nth(i)
        assert r.locator(".pv-a-rule").inner_text() == "pipeline_bubble"
        assert r.locator(".pv-a-time").inner_text() == format_duration(int(f["time"].iat[i]))
        assert r.locator(".pv-a-share").inner_text() == share_text(float(f["share"].iat[i]))
    page.mouse.move(5, 5)
    shot = tmp_path / "pipeline.png"
    root.screenshot(path=str(shot))
    print("screenshot", shot)
