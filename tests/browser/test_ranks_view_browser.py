"""The many-ranks view of a 4-rank run in JupyterLab: a Rank column in the table (each
row's rank is its event's), the memory panel's per-rank peak labels clear of each other, a legend
whose labels tell the series apart, and draggable splits kept in the widget's state."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jupyter_profview as profview
from tests.browser.lab import LabNotebook, LabServer, wait_until

MEMORY_RUN = Path(profview.__file__).parent / "examples" / "torch_memory" / "mlp_adam.trace.json.gz"


def overlaps(a: list[float], b: list[float]) -> bool:
    return not (a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1])


def test_rank_column_peak_labels_legend_and_splits(lab: LabServer, page: Any, tmp_path: Path) -> None:
    # four ranks of one real torch run with profile_memory: each rank's peak at the same place,
    # the case where the labels printed on top of each other
    run = tmp_path / "run"
    run.mkdir()
    for r in range(4):
        shutil.copyfile(MEMORY_RUN, run / f"rank-{r}.pt.trace.json.gz")
    cells = ["import jupyter_profview as profview\n"
             f"ts = profview.load_many(r'{run}', cache=False, progress=False)\n"
             "w = profview.show(ts)\n"
             "w"]
    nb = LabNotebook(lab, page, "ranks_view", cells)
    nb.run_all()
    root = nb.wait_widget()
    memory = page.locator(".pv-memory canvas").first
    # every rank's memory peak is labelled, and no two labels overlap
    # one series per (rank, device): the combined trace keeps each rank's device, with its rank
    series = nb.value("sorted({(int(r), str(d)) for r, d in zip(w.trace.memory['rank'], "
                      "w.trace.memory['device'])})")
    assert len(series) == 4
    assert wait_until(lambda: memory.get_attribute("data-peak-labels") == "4")
    boxes = json.loads(memory.get_attribute("data-peak-boxes") or "[]")
    assert len(boxes) == 4
    assert not any(overlaps(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]), boxes
    # one memory track (bytes) whose legend lists the four series, read apart
    tracks = json.loads(memory.get_attribute("data-tracks") or "[]")
    assert [t["unit"] for t in tracks] == ["bytes"], tracks
    legend = tracks[0]["legend"]
    assert len(legend) == 4 and len(set(legend)) == 4, legend
    # the table of a selection across ranks has a Rank column with each event's rank
    nb.step("sel = w.select(w.trace.events.groupby('rank').head(3))")
    table = page.locator(".pv-table").first
    assert wait_until(lambda: table.get_attribute("data-count") == "12")
    assert page.locator(".pv-table-head .pv-col-rank").inner_text().startswith("Rank")
    rows = page.locator(".pv-table-row")
    assert wait_until(lambda: rows.count() >= 12 and rows.nth(0).locator(".pv-col-name").inner_text() != "…")
    ranks = nb.value("{int(i): int(r) for i, r in sel['rank'].items()}")
    for i in range(12):
        row = rows.nth(i)
        assert int(row.locator(".pv-col-rank").inner_text()) == ranks[row.get_attribute("data-id")]
    page.screenshot(path=str(tmp_path / "ranks_view.png"), full_page=True)
    # drag the split under the timeline down 120 px: the timeline grows by that, the kernel keeps it
    scroll = page.locator(".pv-tl-scroll").first
    before = scroll.bounding_box()["height"]
    handle = page.locator(".pv-split-timeline").first
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    page.mouse.move(box["x"] + 50, box["y"] + 3)
    page.mouse.down()
    page.mouse.move(box["x"] + 50, box["y"] + 63, steps=4)
    page.mouse.move(box["x"] + 50, box["y"] + 123, steps=4)
    page.mouse.up()
    after = scroll.bounding_box()["height"]
    assert abs(after - (before + 120)) <= 2, (before, after)
    assert wait_until(lambda: nb.value("w.split_layout.get('timeline')") == round(after))
    # the table's split: drag up 50 px, the rows' area grows by that
    body = page.locator(".pv-table-body").first
    b0 = body.bounding_box()["height"]
    handle = page.locator(".pv-split-table").first
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    page.mouse.move(box["x"] + 50, box["y"] + 3)
    page.mouse.down()
    page.mouse.move(box["x"] + 50, box["y"] - 47, steps=4)
    page.mouse.up()
    assert abs(body.bounding_box()["height"] - (b0 + 50)) <= 2
    assert wait_until(lambda: nb.value("w.split_layout.get('table')") == round(b0 + 50))
    assert root.get_attribute("data-layout") is not None
    assert page.page_errors == []  # type: ignore[attr-defined]
