"""The critical path drawn on a real GPU trace (HTA's A100 test data, rank 1: CPU ops, launch
delays and kernel-to-kernel gaps on the path): the breakdown and length on screen equal the
DataFrame under the shared number rule, the path's events are highlighted, its arrows are drawn
in the path's colour, a segment click zooms to it and the step picker recomputes the path in the
kernel.  And one rank's path in the all-ranks widget, its rank sections collapsed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jupyter_profview as profview
from jupyter_profview.analysis import critical_path
from jupyter_profview.numbers import format_duration, share_text
from tests.browser.lab import LabNotebook, LabServer, canvas_ink, pixel, wait_until

TIMELINE = ".pv-timeline canvas"
HTA = Path(__file__).parents[1] / "data" / "hta"
RANK1 = HTA / "trace_filter_sampled_rank-1.json.gz"
RANK0 = HTA / "trace_filter_sampled_rank-0.json.gz"
PATH_RGB = (0xE1, 0x57, 0x59)  # critical.ts PATH_COLOR


def legend_texts(cp: Any) -> list[str]:
    """What the breakdown legend must read, from the DataFrame and the shared rule."""
    return [f"{r.type} {format_duration(r.time)} ({share_text(r.share)})" for r in cp.breakdown.itertuples()]


def test_critical_path_on_a_real_gpu_trace(lab: LabServer, page: Any, tmp_path: Path) -> None:
    cp = critical_path(profview.load(RANK1))
    cells = ["import jupyter_profview as profview\n"
             "from jupyter_profview.analysis import critical_path\n"
             f"t = profview.load(r'{RANK1}')\n"
             "cp = critical_path(t)\n"
             "w = profview.show(t, critical_path=cp)\n"
             "w"]
    nb = LabNotebook(lab, page, "critical", cells)
    nb.run_all()
    root = nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000), "nothing drawn on the timeline"
    panel = page.locator(".pv-critical")
    panel.wait_for(state="visible")
    # the numbers on screen are the DataFrame's
    title = page.locator(".pv-critical-title").inner_text()
    want = f"Critical path of ProfilerStep#551: {format_duration(cp.length)} over {len(cp.events)} events"
    assert title == want
    keys = [k.inner_text() for k in page.locator(".pv-critical-key").all()]
    assert keys == legend_texts(cp)
    parts = {p.get_attribute("data-type"): float(p.get_attribute("data-time") or "nan")
             for p in page.locator(".pv-critical-part").all()}
    assert parts == {r.type: float(r.time) for r in cp.breakdown.itertuples() if r.time > 0}
    segments = cp.path[cp.path["weight"] > 0]
    rows = page.locator(".pv-critical-rows .pv-critical-row")
    assert rows.count() == min(len(segments), 2000)
    first = rows.nth(0).locator("span").all_inner_texts()
    assert first[-2] == format_duration(segments["weight"].iloc[0])
    # the path's events are the highlight; the arrows are drawn in the path's colour
    assert root.get_attribute("data-highlight") == str(len(cp.events))
    arrows = cp.path[cp.path["type"].astype(str).isin(["launch", "kernel", "sync"])]
    assert int(root.get_attribute("data-critical-arrows") or 0) == len(arrows) > 0
    gap = arrows[arrows["type"].astype(str) == "kernel"].sort_values("weight").iloc[-1]  # the longest gap
    pad = float(gap["weight"])
    nb.step(f"w.zoom_to({float(gap['src_time']) - pad}, {float(gap['dst_time']) + pad})")
    page.locator(TIMELINE).first.scroll_into_view_if_needed()
    hook = "window.__profview.at(-1)"
    a = wait_until(lambda: page.evaluate(f"{hook}.locate({int(gap['src'])})"))
    b = wait_until(lambda: page.evaluate(f"{hook}.locate({int(gap['dst'])})"))
    assert a and b, "the two kernels around the gap are not drawn"
    mid = ((a["x"] + b["x"]) / 2, (a["y"] + b["y"]) / 2)  # one stream: the arrow runs along the lane
    near = [pixel(page, mid[0] + dx, mid[1] + dy)[:3] for dx in (-2, 0, 2) for dy in (-1, 0, 1)]
    assert any(sum(abs(c - w) for c, w in zip(px, PATH_RGB, strict=True)) < 120 for px in near), near
    page.screenshot(path=str(tmp_path / "critical_path.png"), full_page=True)

    # a segment click zooms to it
    k = 3 if len(segments) > 3 else 0
    seg = segments.iloc[k]
    rows.nth(k).click()

    def zoomed() -> bool:
        v0, v1 = (float(root.get_attribute(f"data-view-{x}") or "nan") for x in ("start", "end"))
        return v0 <= float(seg["src_time"]) and float(seg["dst_time"]) <= v1 and (v1 - v0) <= 4 * (
            float(seg["dst_time"]) - float(seg["src_time"])) + 1
    assert wait_until(zoomed), "the view did not move to the clicked segment"

    # the step picker recomputes the path in the kernel
    other = critical_path(profview.load(RANK1), instance=1)
    page.locator(".pv-critical-step").select_option("1")
    assert wait_until(lambda: nb.value("w.critical_path.instance") == 1)
    assert wait_until(lambda: page.locator(".pv-critical-title").inner_text().startswith(
        f"Critical path of ProfilerStep#552: {format_duration(other.length)}"))
    assert [k.inner_text() for k in page.locator(".pv-critical-key").all()] == legend_texts(other)
    assert page.page_errors == []  # type: ignore[attr-defined]


def test_one_ranks_path_in_the_all_ranks_widget(lab: LabServer, page: Any) -> None:
    cells = ["import warnings\nimport jupyter_profview as profview\n"
             "from jupyter_profview.analysis import critical_path\n"
             "warnings.simplefilter('ignore')\n"
             f"ts = profview.load_many([r'{RANK0}', r'{RANK1}'], progress=False, cache=False)\n"
             "cp = critical_path(ts, rank=1)\n"
             "w = profview.show(ts, critical_path=cp)\n"
             "w"]
    nb = LabNotebook(lab, page, "critical_ranks", cells)
    nb.run_all()
    root = nb.wait_widget()
    page.locator(".pv-critical").wait_for(state="visible")
    assert int(root.get_attribute("data-collapsed") or 0) >= 2  # both rank sections collapsed
    title = page.locator(".pv-critical-title").inner_text()
    length, length_events = nb.value("[cp.length, len(cp.events)]")
    assert title.startswith(f"Critical path of ProfilerStep#551 · rank 1: {format_duration(length)}")
    # the path's events are rank 1's, mapped to the combined trace
    lit = "decode_frame(w._highlight)['id'].astype('int64')"
    nb.step("from jupyter_profview.widget.codec import decode_frame")
    assert nb.value(f"sorted(set(w.trace.events.loc[{lit}, 'rank'].tolist()))") == [1]
    assert nb.value(f"len({lit})") == length_events
    assert int(root.get_attribute("data-critical-arrows") or 0) > 0
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000)
    page.locator(".pv-critical-step").select_option("1")
    assert wait_until(lambda: nb.value("[w.critical_path.instance, w.critical_path.rank]") == [1, 1])
    assert page.page_errors == []  # type: ignore[attr-defined]
