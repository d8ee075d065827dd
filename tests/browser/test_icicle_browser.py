"""The icicle of GPU time by annotation on a real A100 + NCCL DDP trace, in JupyterLab: the hovered
node's numbers are the DataFrame's (shared number rule), a click highlights and selects every
slice and kernel under the node, the node-kind switch and a timeline range redraw it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jupyter_profview as profview
from jupyter_profview.analysis import attribute
from jupyter_profview.numbers import format_duration, share_text
from jupyter_profview.widget.icicle import layout
from tests.browser.lab import LabNotebook, LabServer, wait_until

NCCL = Path(__file__).parents[1] / "data" / "hta" / "nccl_parser_config_nccl_data.json.gz"
CANVAS = ".pv-icicle-canvas"


def test_icicle_linked_both_ways(lab: LabServer, page: Any, tmp_path: Path) -> None:
    tree = attribute(profview.load(NCCL), "annotation", merge_steps=True)  # the widget's default
    cells = ["import jupyter_profview as profview\n"
             f"t = profview.load(r'{NCCL}')\n"
             "w = profview.show(t, icicle='annotation')\n"
             "w"]
    nb = LabNotebook(lab, page, "icicle", cells)
    nb.run_all()
    nb.wait_widget()
    panel = page.locator(".pv-icicle")
    panel.wait_for(state="visible")
    assert wait_until(lambda: panel.get_attribute("data-nodes") == str(len(tree)))
    canvas = page.locator(CANVAS)
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    assert box is not None
    # the largest root sits at the left: hover its middle, read its numbers
    total = float(tree.loc[tree["parent"] == -1, "gpu_total"].sum())
    roots = tree[tree["parent"] == -1].sort_values(["gpu_total", "node"], ascending=[False, True])
    first = roots.iloc[0]
    x = box["x"] + box["width"] * (first["gpu_total"] / total) / 2
    page.mouse.move(x, box["y"] + 9)
    assert wait_until(lambda: canvas.get_attribute("data-hover") == str(int(first["node"])))
    text = page.locator(".pv-icicle-hover").inner_text()
    share = share_text(100 * first["gpu_total"] / total)
    assert text == (f"{first['path']}\nGPU {format_duration(first['gpu_total'])} · "
                    f"CPU {format_duration(first['cpu_total'])} · {first['count']:,} × · "
                    f"{first['kernels']:,} kernels · {share} of GPU time")
    page.screenshot(path=str(tmp_path / "icicle.png"), full_page=True)

    # click the step (every ProfilerStep#N in one node): every annotation instance and kernel
    # under it is selected and highlighted
    step = tree[tree["name"] == "ProfilerStep"].iloc[0]
    x0 = layout(tree, "gpu")[int(step["node"])]
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + box["width"] * (x0 + step["gpu_total"] / 2) / total, box["y"] + 9)
    assert wait_until(lambda: nb.value("len(w.selection)") == int(step["kernels"]) + nb.value(
        f"int(w._attribution.nodes['row'].isin(w._attribution.descendants({int(step['node'])})).sum())"))
    steps = int(step["count"])
    assert steps >= 2
    assert nb.value("int(w.selection['name'].astype(str).str.fullmatch(r'ProfilerStep#\\d+').sum())") == steps
    under = f"w._attribution.events_under({int(step['node'])}).tolist()"
    assert nb.value(f"sorted(w.selection.index.tolist()) == sorted({under})")
    root = page.locator(".pv-root").first
    n = nb.value("len(w.selection)")
    assert root.get_attribute("data-highlight") == str(n)
    # ... and the table lists them (the kernel's selection; its kernels' launch rows first)
    events_tab = page.locator(".pv-table-tab[data-kind='events']")
    assert wait_until(lambda: events_tab.count() == 1 and events_tab.inner_text() == f"Events ({n:,})")
    launches_tab = page.locator(".pv-table-tab[data-kind='launches']")
    assert launches_tab.inner_text() == f"Launches ({int(step['kernels']):,})"

    # the switch: by op; then a range selection from Python redraws it for the range
    page.locator(".pv-icicle-by").select_option("op")
    ops = attribute(profview.load(NCCL), "op", merge_steps=True)
    assert wait_until(lambda: panel.get_attribute("data-nodes") == str(len(ops)))
    assert nb.value("w.icicle_by") == "op"
    half = nb.value("t.duration") / 2
    nb.step(f"w._selection = {{'range': [0, {half}], 'tracks': None}}")
    windowed = attribute(profview.load(NCCL), "op", window=(0, half), merge_steps=True)
    assert wait_until(lambda: panel.get_attribute("data-nodes") == str(len(windowed)))
    assert "in the selected range" in page.locator(".pv-icicle-note").inner_text()
    assert page.page_errors == []  # type: ignore[attr-defined]
