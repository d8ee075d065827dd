"""A finding shows its evidence (issue 36 item 1), read from the page of a real JupyterLab
(Debian Chromium, marked ``browser``), on notebook 13's trace (HTA ``trace_filter_sampled_rank-0``):

* ``w.pick_finding(k)`` run in the kernel marks finding k's row as a click does (selected row,
  ``data-picked``, its message), and the table lists exactly its evidence events;
* picking ``gpu_idle`` shades the GPU's idle intervals: the panel says how many and how long (equal to
  the idle time counted here from ``trace.events``), the canvas's pixels inside the longest idle
  interval turn to the palette's idle shade over exactly the GPU's lanes, and not where the GPU is
  busy; the chip's ✕ takes the shading away;
* a gpu_idle finding without events (a hand-written two-GPU trace) says "N idle intervals", not
  "0 events", and is shaded.

The expected idle intervals come from tests/test_idle_shading.py's sort-and-sweep count.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jupyter_profview as profview
from jupyter_profview import palette
from tests.browser.lab import LabNotebook, LabServer, canvas_ink, wait_until
from tests.test_idle_shading import TINY, idle_by_hand

TIMELINE = ".pv-timeline canvas"
HOOK = "window.__profview.at(-1)"
ROW_H = int(re.search(r"export const ROW_H = (\d+)",  # the lane height the layout draws
                      (Path(__file__).parents[2] / "js" / "src" / "layout.ts").read_text()).group(1))


def open_advice(lab: LabServer, page: Any, name: str, path: Path | str) -> LabNotebook:
    cells = ["import jupyter_profview as profview\n"
             f"w = profview.show(profview.load(r'{path}'), advice=True)\nw"]
    nb = LabNotebook(lab, page, name, cells)
    nb.run_all()
    nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000), "nothing drawn on the timeline"
    assert wait_until(lambda: page.locator(".pv-advice-row:not(.pv-advice-th)").count() >= 1)
    return nb


def column(page: Any, x: float) -> list[list[int]]:
    """RGBA of every device pixel of the timeline canvas's column at client x."""
    return list(page.evaluate("""(x) => {
      const c = document.querySelector('.pv-timeline canvas');
      const r = c.getBoundingClientRect();
      const px = Math.round((x - r.left) * c.width / r.width);
      const d = c.getContext('2d').getImageData(px, 0, 1, c.height).data;
      const out = [];
      for (let i = 0; i < d.length; i += 4) out.push([d[i], d[i + 1], d[i + 2], d[i + 3]]);
      return out;
    }""", x))


def blend(over: str, alpha: float, under: list[int]) -> list[float]:
    rgb = [int(over[i:i + 2], 16) for i in (1, 3, 5)]
    return [alpha * c + (1 - alpha) * u for c, u in zip(rgb, under[:3], strict=True)]


def near(a: list[int], b: list[float], tol: float = 3) -> bool:
    return all(abs(x - y) <= tol for x, y in zip(a[:3], b, strict=True))


def client_x(page: Any, nb: LabNotebook, steps: list[tuple[int, int, int]]) -> Any:
    """time -> client x, from the drawn centres of two step boxes (their own boxes in the view)."""
    (i0, s0, e0), (i1, s1, e1) = steps[0], steps[-1]
    p0 = wait_until(lambda: page.evaluate(f"{HOOK}.locate({i0})"))
    p1 = wait_until(lambda: page.evaluate(f"{HOOK}.locate({i1})"))
    assert p0 and p1, "the step boxes are not drawn"
    t0, t1 = (s0 + e0) / 2, (s1 + e1) / 2
    return lambda t: p0["x"] + (t - t0) * (p1["x"] - p0["x"]) / (t1 - t0), p0["y"]


def rows_shown(page: Any) -> list[int]:
    """The event ids of the table's rows on screen."""
    return [int(i) for i in page.eval_on_selector_all(
        ".pv-table .pv-table-row", "rows => rows.map(r => r.dataset.id).filter(Boolean)")]


def check_pick(page: Any, nb: LabNotebook, row: Any, k: int) -> None:
    """`w.pick_finding(k)` in the kernel: row k marked, its text shown, the table lists its evidence."""
    panel = page.locator(".pv-advice").first
    nb.step(f"_ = w.pick_finding({k})")
    assert wait_until(lambda: panel.get_attribute("data-picked") == str(k)), \
        f"w.pick_finding({k}) did not mark its row"
    selected = page.locator(".pv-advice .pv-row-selected")
    assert selected.count() == 1 and selected.first.get_attribute("data-index") == str(k)
    assert page.locator(".pv-advice-detail").first.inner_text() == f"{row['message']} Try: {row['fix']}"
    # the table lists the evidence: its count, and every row shown is an evidence event (the Events
    # tab: a selection of launch calls opens on the Launches tab, which lists their kernels)
    table = page.locator(".pv-table").first
    evidence = {int(i) for i in row["events"]}
    tab = page.locator(".pv-table-tab[data-kind='events']").first
    assert wait_until(lambda: tab.is_visible() and f"({len(evidence)})" in tab.inner_text())
    if table.get_attribute("data-kind") != "events":
        tab.click()
        assert wait_until(lambda: table.get_attribute("data-kind") == "events")
    assert wait_until(lambda: table.get_attribute("data-count") == str(len(evidence)))
    wait_until(lambda: (r := rows_shown(page)) and set(r) <= evidence)
    shown = rows_shown(page)
    assert shown and set(shown) <= evidence, (sorted(shown), sorted(evidence))
    on_screen = page.locator(".pv-table .pv-table-row").count()
    assert len(set(shown)) == len(shown) == min(len(evidence), on_screen)


def test_pick_finding_from_python_marks_its_row_and_lists_its_evidence(lab: LabServer, page: Any) -> None:
    trace = profview.load(profview.example("gpu_trace"))
    advice = profview.advise(trace)
    nb = open_advice(lab, page, "evidence_pick", profview.example("gpu_trace"))
    for rule in ("exposed_communication", "gpu_idle"):
        k = int(advice.findings.index[advice.findings["rule"] == rule][0])
        check_pick(page, nb, advice.findings.loc[k], k)
    assert page.page_errors == []  # type: ignore[attr-defined]


def test_gpu_idle_shades_the_idle_intervals_on_the_gpus_lanes(lab: LabServer, page: Any) -> None:
    trace = profview.load(profview.example("gpu_trace"))
    advice = profview.advise(trace)
    k = int(advice.findings.index[advice.findings["rule"] == "gpu_idle"][0])
    gpu = str(advice.findings.loc[k, "device"])
    idle = idle_by_hand(trace, gpu)
    lanes = trace.events[trace.events["process"].astype(str) == gpu]["thread"].astype(str).nunique()
    nb = open_advice(lab, page, "evidence_idle", profview.example("gpu_trace"))
    root = page.locator(".pv-root").first
    lo, hi = (float(x) for x in advice.window)
    # the same view as the pick's (the advice window), without the shading
    nb.step(f"w.zoom_to({lo}, {hi})")
    assert wait_until(lambda: (root.get_attribute("data-view-start"), root.get_attribute("data-view-end"))
                      == (str(int(lo)), str(int(hi))))
    ev = trace.events
    steps = ev[ev["name"].astype(str).str.startswith("ProfilerStep#")].sort_values("start")
    to_x, cpu_y = client_x(page, nb, [(int(i), int(s), int(s + d)) for i, s, d in
                                      zip(steps.index, steps["start"], steps["dur"], strict=True)])
    s, e = max(idle, key=lambda iv: iv[1] - iv[0])  # the longest idle interval: several px wide
    assert to_x(e) - to_x(s) > 6
    x_idle = to_x((s + e) / 2)
    before = column(page, x_idle)

    nb.step(f"_ = w.pick_finding({k})")
    panel = page.locator(".pv-advice").first
    assert wait_until(lambda: panel.get_attribute("data-picked") == str(k))
    assert (root.get_attribute("data-view-start"), root.get_attribute("data-view-end")) == \
        (str(int(lo)), str(int(hi))), "the pick did not show the window"
    # the panel's numbers: intervals, total idle time, lanes
    assert panel.get_attribute("data-idle-intervals") == str(len(idle))
    assert panel.get_attribute("data-idle-ns") == str(sum(b - a for a, b in idle)) == \
        str(int(advice.findings.loc[k, "time"]))
    assert len(panel.get_attribute("data-idle-tracks").split(",")) == lanes
    key = page.locator(".pv-advice-shade").first.inner_text()
    assert f"{gpu} idle: {len(idle)} intervals" in key and f"{lanes} lanes" in key, key
    cells = page.locator(f".pv-advice-row[data-index='{k}'] .pv-a-count").first.inner_text()
    assert cells.startswith(f"{len(idle)} idle intervals"), cells
    # every interval drawn on every lane (the whole window is in view)
    assert wait_until(lambda: root.get_attribute("data-shaded") == str(len(idle) * lanes))
    after = wait_until(lambda: (c := column(page, x_idle)) != before and c)
    assert after, "nothing changed on the canvas at the idle interval"
    dpr = page.evaluate("window.devicePixelRatio")
    shaded = [y for y, (b, a) in enumerate(zip(before, after, strict=True))
              if near(a, blend(palette.IDLE_SHADE_COLOR, palette.IDLE_SHADE_ALPHA, b)) and a[:3] != b[:3]]
    # exactly the GPU's lanes: runs of whole lanes (ROW_H px each), lanes * ROW_H px in all, below
    # the CPU lanes
    assert len(shaded) == round(lanes * ROW_H * dpr), (len(shaded), lanes)
    runs = [y for i, y in enumerate(shaded) if i == 0 or shaded[i - 1] != y - 1]
    lengths = [sum(1 for y in shaded if r <= y < (runs + [10**9])[j + 1]) for j, r in enumerate(runs)]
    assert all(n % round(ROW_H * dpr) == 0 for n in lengths), lengths
    canvas_top = page.locator(TIMELINE).first.bounding_box()["y"]
    assert shaded[0] / dpr + canvas_top > cpu_y
    # where the GPU is busy (the longest gap between idle intervals), no shading
    gaps = [(a[1], b[0]) for a, b in zip(idle, idle[1:], strict=False)]
    bs, be = max(gaps, key=lambda g: g[1] - g[0])
    assert to_x(be) - to_x(bs) > 6
    busy = column(page, to_x((bs + be) / 2))
    assert not any(near(busy[y], blend(palette.IDLE_SHADE_COLOR, palette.IDLE_SHADE_ALPHA, before[y]))
                   and busy[y][:3] != before[y][:3] for y in shaded)
    page.locator(".pv-root").first.screenshot(path=str(Path(lab.root) / "evidence_idle.png"))  # to look at
    # ✕ on the chip clears the highlight, the picked row and the shading
    page.locator(".pv-highlight-clear").click()
    assert wait_until(lambda: root.get_attribute("data-shaded") == "0")
    assert wait_until(lambda: column(page, x_idle) == before)
    assert panel.get_attribute("data-picked") is None
    # a timeline shorter than its lanes (the GPU's below the visible part): the pick scrolls the
    # lanes to the shaded ones
    scroll = page.locator(".pv-tl-scroll").first
    page.evaluate("() => { document.querySelector('.pv-root').style.setProperty("
                  "'--pv-timeline-max-height', '200px'); window.dispatchEvent(new Event('resize')); }")
    assert wait_until(lambda: scroll.evaluate("e => e.scrollHeight > e.clientHeight + 100"))
    scroll.evaluate("e => { e.scrollTop = 0; }")
    bg = max(before, key=before.count)  # the lanes' background: the column's most common colour
    shade = blend(palette.IDLE_SHADE_COLOR, palette.IDLE_SHADE_ALPHA, bg)
    assert not any(near(p, shade) for p in column(page, x_idle)), "shaded before the pick"
    nb.step(f"_ = w.pick_finding({k})")
    assert wait_until(lambda: scroll.evaluate("e => e.scrollTop") > 0), "the lanes did not scroll"
    assert wait_until(lambda: sum(near(p, shade) for p in column(page, x_idle)) >= ROW_H * dpr), \
        "no shaded lane in the visible part of the timeline"
    assert page.page_errors == []  # type: ignore[attr-defined]


def test_a_gpu_idle_finding_without_events_shows_its_intervals(lab: LabServer, page: Any) -> None:
    trace = profview.load(TINY)
    advice = profview.advise(trace)
    nb = open_advice(lab, page, "evidence_tiny", TINY)
    rows = page.locator(".pv-advice-row:not(.pv-advice-th) .pv-a-count")
    assert wait_until(lambda: rows.count() == len(advice.findings))
    root = page.locator(".pv-root").first
    panel = page.locator(".pv-advice").first
    for k in range(len(advice.findings)):
        idle = idle_by_hand(trace, str(advice.findings.loc[k, "device"]))
        text = rows.nth(k).inner_text()
        assert text == f"{len(idle)} idle interval{'s' if len(idle) != 1 else ''}", text
        assert "0 events" not in text
        nb.step(f"_ = w.pick_finding({k})")
        picked = str(k)
        assert wait_until(lambda: panel.get_attribute("data-picked") == picked)  # noqa: B023 -- waited here
        assert panel.get_attribute("data-idle-ns") == str(sum(b - a for a, b in idle))
        drawn = str(len(idle) * len(panel.get_attribute("data-idle-tracks").split(",")))
        assert wait_until(lambda: root.get_attribute("data-shaded") == drawn)  # noqa: B023 -- waited here
    root.screenshot(path=str(Path(lab.root) / "evidence_tiny.png"))  # to look at
    assert page.page_errors == []  # type: ignore[attr-defined]
