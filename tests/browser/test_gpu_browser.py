"""A real GPU trace in the widget (JupyterLab + Debian Chromium, marked ``browser``): the
launch -> kernel arrow of a selected kernel and the counters panel (GPU utilisation and
queue lengths next to memory, each toggleable); and the arrow of a real ``ac2g`` flow record
(the AMD ROCm fixture has them; the bundled example links launches by correlation only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

import jupyter_profview as profview
from tests.browser.lab import LabNotebook, LabServer, canvas_digest, canvas_ink, pixel, wait_until

TIMELINE = ".pv-timeline canvas"
COUNTERS = ".pv-memory canvas"
AMD = Path(__file__).parents[1] / "data" / "hta" / "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"


def drawable(la: pd.DataFrame) -> pd.Series:
    """The launch of each row long enough to be its own box next to its kernel once zoomed to both."""
    return ((la["delay"] > 0) & (la["delay"] < 5 * la["launch_dur"])
            & (la["kernel_dur"] < 20 * la["launch_dur"]) & (la["kernel_dur"] * 3 > la["launch_dur"]))


def open_widget(lab: LabServer, page: Any, name: str, path: Path | str) -> LabNotebook:
    cells = ["import jupyter_profview as profview\n"
             f"w = profview.show(profview.load(r'{path}'))\n"
             "w"]
    nb = LabNotebook(lab, page, name, cells)
    nb.run_all()
    nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000), "nothing drawn on the timeline"
    return nb


def check_arrow(page: Any, nb: LabNotebook, row: pd.Series, t0: float, t1: float) -> None:
    """Zoom to the launch and its kernel, select the kernel: the arrow from time ``t0`` on the
    launch to ``t1`` on the kernel is drawn (the pixel at the middle of the curve changes), and
    the kernel side knows both ends."""
    kernel, launch = int(row["kernel"]), int(row["launch"])
    ls, ld, ks, kd = (float(row[c]) for c in ("launch_start", "launch_dur", "kernel_start", "kernel_dur"))
    pad = (ks + kd - ls) * 0.2
    nb.step(f"w.zoom_to({ls - pad}, {ks + kd + pad})")
    page.locator(TIMELINE).first.scroll_into_view_if_needed()  # running the step cell scrolled away
    hook = "window.__profview.at(-1)"
    k = wait_until(lambda: page.evaluate(f"{hook}.locate({kernel})"))
    src = wait_until(lambda: page.evaluate(f"{hook}.locate({launch})"))
    assert k and src, "the launch and its kernel are not drawn as boxes"
    # x is linear in time: fit it on the two box centres, then place the curve's ends
    tk, tl = ks + kd / 2, ls + ld / 2
    b = (k["x"] - src["x"]) / (tk - tl)
    x0, x1 = src["x"] + b * (t0 - tl), k["x"] + b * (t1 - tk)
    mid = ((x0 + x1) / 2, (src["y"] + k["y"]) / 2)
    before_px = pixel(page, *mid)
    page.mouse.click(k["x"], k["y"])
    # the pixels first: running the step cell below scrolls the notebook, and the timeline with it
    assert wait_until(lambda: pixel(page, *mid) != before_px), "no arrow between the launch and the kernel"
    accent = page.evaluate("getComputedStyle(document.querySelector('.pv-root'))"
                           ".getPropertyValue('--pv-accent').trim() || '#1a73e8'")
    hex_colour = accent.startswith("#") and len(accent) == 7
    want = [int(accent[i:i + 2], 16) for i in (1, 3, 5)] if hex_colour else None
    if want:  # the changed pixel is the arrow's colour (anti-aliased)
        got = pixel(page, *mid)[:3]
        assert sum(abs(g - w) for g, w in zip(got, want, strict=True)) < 150, (got, accent)
    assert wait_until(lambda: nb.value("w.selection.index.tolist()") == [kernel])
    assert nb.value("sorted(w.selection_with_flows().index.tolist())") == sorted([kernel, launch])
    assert page.page_errors == []  # type: ignore[attr-defined]


def test_kernel_arrow_and_counters_panel(lab: LabServer, page: Any) -> None:
    path = profview.example("gpu_trace")
    trace = profview.load(path)
    la = trace.launches.dropna(subset=["launch"])
    near = la[drawable(la)]
    row = near.loc[near["launch_dur"].idxmax()]
    nb = open_widget(lab, page, "gpu", path)

    # counters panel: one checkbox per series, drawn, and unticking one changes the drawing
    series = nb.value("[s['device'] for s in __import__('jupyter_profview').widget.codec.decode_frame("
                      "w._memory).meta['series']]")
    assert any(s.endswith("utilisation") for s in series) and any(s.endswith("queue") for s in series)
    boxes = page.locator(".pv-counters input[type=checkbox]")
    assert wait_until(lambda: boxes.count() == len(series))
    assert wait_until(lambda: canvas_ink(page, COUNTERS) > 200), "nothing drawn on the counters panel"
    before = canvas_digest(page, COUNTERS)
    util = next(i for i, s in enumerate(series) if s.endswith("utilisation"))
    boxes.nth(util).uncheck()
    assert wait_until(lambda: canvas_digest(page, COUNTERS) != before), "hiding a series changed nothing"
    boxes.nth(util).check()
    assert wait_until(lambda: canvas_digest(page, COUNTERS) == before), "showing it again did not restore"

    # a launch without flow record: the arrow goes from the end of the launch call
    check_arrow(page, nb, row, row["launch_start"] + row["launch_dur"], row["kernel_start"])


def test_arrow_of_a_real_ac2g_flow_record(lab: LabServer, page: Any) -> None:
    """The AMD file's kernels carry Kineto ``ac2g`` flow records (``s`` on the launch call, ``f``
    on the kernel): pick a kernel whose pair is such a record and check its arrow."""
    trace = profview.load(AMD)
    flows = trace.flows[trace.flows["category"].astype(str) == "ac2g"]
    assert len(flows)
    la = trace.launches.dropna(subset=["launch"]).astype({"launch": "int64"})
    recorded = la.merge(flows[["source", "target", "start", "end"]], left_on=["launch", "kernel"],
                        right_on=["source", "target"])
    near = recorded[drawable(recorded)]
    assert len(near), "no flow-recorded launch is drawable next to its kernel"
    row = near.loc[near["launch_dur"].idxmax()]
    nb = open_widget(lab, page, "gpu_amd", AMD)
    # the arrow of a flow record goes from the record's time (the start of the launch call)
    assert row["start"] == row["launch_start"] and row["end"] == row["kernel_start"]
    check_arrow(page, nb, row, row["start"], row["end"])
