"""Many ranks and GPU launches in the widget (JupyterLab + Debian Chromium, marked ``browser``):
the DDP example's ranks start collapsed to one busy lane each (read back from the pixels), a
click expands one rank, a shift-drag across two ranks selects events of both; on the GPU
example, a shift-drag over kernels of one stream lists their launches with the launch delay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jupyter_profview as profview
from jupyter_profview import palette
from jupyter_profview.widget.numbers import format_duration
from tests.browser.lab import LabNotebook, LabServer, canvas_ink, pixel, wait_until

TIMELINE = ".pv-timeline canvas"
COMM_RGB = [int(palette.COMMUNICATION_COLOR[i:i + 2], 16) for i in (1, 3, 5)]
DDP = Path(profview.__file__).parent / "examples" / "ddp"
AXIS_H, GROUP_H, GUTTER_W = 22, 20, 150  # js/src/scene.ts, layout.ts


def canvas_row(page: Any, y: float) -> list[list[int]]:
    """RGB of every plot pixel (right of the label column) of the timeline canvas's row at CSS y."""
    return list(page.evaluate("""([y, gutter]) => {
      const c = document.querySelector('.pv-timeline canvas');
      const r = c.getBoundingClientRect();
      const sx = c.width / r.width, sy = c.height / r.height;
      const x0 = Math.ceil(gutter * sx), w = c.width - x0;
      const d = c.getContext('2d').getImageData(x0, Math.round(y * sy), w, 1).data;
      const out = [];
      for (let i = 0; i < d.length; i += 4) out.push([d[i], d[i + 1], d[i + 2]]);
      return out;
    }""", [y, GUTTER_W]))


def shoot(page: Any, where: Path, name: str) -> Path:
    """A screenshot of the widget into the test's temporary directory (kept by pytest)."""
    path = where / name
    page.locator(".pv-root").first.screenshot(path=str(path))
    print(f"screenshot: {path}")
    return path


def test_ranks_collapse_expand_and_select_across_ranks(lab: LabServer, page: Any, tmp_path: Path) -> None:
    cells = ["import jupyter_profview as profview\n"
             f"ts = profview.load_many(r'{DDP}', cache=False, progress=False)\n"
             "w = profview.show(ts)\n"
             "w"]
    nb = LabNotebook(lab, page, "ranks", cells)
    nb.run_all()
    nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000), "nothing drawn on the timeline"
    ranks = nb.value("ts.ranks")
    assert nb.value("w.collapsed_groups") == [f"rank {r}" for r in ranks]
    page.locator(TIMELINE).first.scroll_into_view_if_needed()
    shoot(page, tmp_path, "ranks_collapsed.png")

    # each collapsed rank is one header row with its busy lane (upper half) and communication lane
    # (lower half, in the palette's communication colour, as the legend lists it): the painted
    # share of each matches the kernel's busy time over the trace duration
    totals = nb.value("{k: [b, c] for k, b, c in zip(*(__import__('jupyter_profview').widget.codec"
                      ".decode_frame(w._summary).meta[m] for m in ('keys', 'busy', 'comm')))}")
    duration = nb.value("float(w.trace.duration)")
    header_bg = canvas_row(page, AXIS_H + len(ranks) * GROUP_H + 2)[0]  # below the last header: background
    shares = {}
    for i, r in enumerate(ranks):
        top = AXIS_H + i * GROUP_H
        work_row = canvas_row(page, top + 5)  # upper part: work only
        comm_row = canvas_row(page, top + GROUP_H - 6)  # lower half: communication
        blank = work_row[-1] if work_row[-1] != header_bg else work_row[0]
        painted = sum(px != blank for px in work_row) / len(work_row)
        comm_share = sum(p == COMM_RGB for p in comm_row) / len(comm_row)
        busy, comm = totals[f"rank {r}"]
        shares[r] = (painted, comm_share)
        assert abs(painted - busy / duration) < 0.06, (r, painted, busy / duration)
        assert abs(comm_share - comm / duration) < 0.06, (r, comm_share, comm / duration)
    slow = min(ranks, key=lambda r: shares[r][1])
    assert slow == 2, shares  # the fixture's slow rank waits least in collectives

    # a click on rank 2's header expands it (and tells the kernel); then rank 1's, above it, whose
    # header has not moved
    box = page.locator(TIMELINE).first.bounding_box()
    for r in (2, 1):
        page.mouse.click(box["x"] + 40, box["y"] + AXIS_H + ranks.index(r) * GROUP_H + GROUP_H / 2)
        want = [f"rank {k}" for k in ranks if k not in (2, r)]
        assert wait_until(lambda want=want: nb.value("w.collapsed_groups") == want), r
    steps = nb.value("{int(r): int(i) for i, r in w.trace.events[w.trace.events['name'].astype(str) == "
                     "'ProfilerStep#3'][['rank']].itertuples()}")
    shoot(page, tmp_path, "ranks_expanded.png")  # before locating: the screenshot may scroll the page
    page.locator(TIMELINE).first.scroll_into_view_if_needed()
    hook = "window.__profview.at(-1)"
    one = wait_until(lambda: page.evaluate(f"{hook}.locate({steps['1']})"))
    two = wait_until(lambda: page.evaluate(f"{hook}.locate({steps['2']})"))
    assert one and two, "the expanded ranks' ProfilerStep#3 boxes are not drawn"
    assert page.evaluate(f"{hook}.locate({steps['0']})") is None  # rank 0 stays collapsed

    # shift-drag from rank 1's step to rank 2's: a range over the lanes of both ranks
    page.keyboard.down("Shift")
    page.mouse.move(min(one["x"], two["x"]) - 30, one["y"])
    page.mouse.down()
    page.mouse.move(max(one["x"], two["x"]) + 30, two["y"], steps=8)
    page.mouse.up()
    page.keyboard.up("Shift")
    got = wait_until(lambda: nb.value("sorted(set(w.selection['rank'].tolist()))"), timeout=30)
    assert got == [1, 2], got
    assert nb.value(f"int(w.selection.index.isin([{steps['1']}, {steps['2']}]).sum())") == 2
    shoot(page, tmp_path, "ranks_selected.png")

    # aligned on the first common step: that step starts at 0 on every rank, earlier events are
    # at negative times (the axis starts there) and the view opens on the steps: the earliest
    # ProfilerStep#'s start, counted from the events
    start, first = nb.value("(lambda ev: [float(ev['start'].min()), float(ev.loc[ev['name'].astype(str)"
                            ".str.startswith('ProfilerStep#'), 'start'].min())])"
                            "(profview.show(ts, align='step').trace.events)")
    assert start < 0 and first > start
    # (the widget lives in the step cell's output: no other step until the checks are done)
    nb.step("from IPython.display import display\ndisplay(profview.show(ts, align='step'))")
    aligned = page.locator(".pv-root[data-pv-state='ready']").nth(1)
    aligned.wait_for(timeout=60_000)
    assert wait_until(lambda: float(aligned.get_attribute("data-view-start") or "nan") == first)
    aligned.scroll_into_view_if_needed()
    aligned.screenshot(path=str(tmp_path / "ranks_aligned.png"))
    print(f"screenshot: {tmp_path / 'ranks_aligned.png'}")
    assert page.page_errors == []  # type: ignore[attr-defined]


def test_kernel_range_lists_launches_with_delay(lab: LabServer, page: Any, tmp_path: Path) -> None:
    path = profview.example("gpu_trace")
    cells = ["import jupyter_profview as profview\n"
             f"w = profview.show(r'{path}')\n"
             "w"]
    nb = LabNotebook(lab, page, "launches", cells)
    nb.run_all()
    nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000), "nothing drawn on the timeline"
    # two kernels of one stream, 30 kernels apart; zoom so that both are their own boxes
    a, b, t0, t1 = nb.value(
        "(lambda ev, tr: (lambda on: [int(on.index[10]), int(on.index[40]), float(on['start'].iloc[10]),"
        " float(on['start'].iloc[40] + on['dur'].iloc[40])])(ev[tr == next(i for i, t in enumerate(w._tracks)"
        " if 'stream' in t['name'])]))(w.trace.events, w._data.timeline.event_track)")
    pad = (t1 - t0) * 0.05
    nb.step(f"w.zoom_to({t0 - pad}, {t1 + pad})")
    page.locator(TIMELINE).first.scroll_into_view_if_needed()
    hook = "window.__profview.at(-1)"
    ka = wait_until(lambda: page.evaluate(f"{hook}.locate({a})"))
    kb = wait_until(lambda: page.evaluate(f"{hook}.locate({b})"))
    assert ka and kb, "the kernels are not drawn as boxes"
    # a tall shift-drag inside the stream's lane: a range over that lane only
    page.keyboard.down("Shift")
    page.mouse.move(ka["x"] - 2, ka["y"] - 6)
    page.mouse.down()
    page.mouse.move(kb["x"], kb["y"] + 6, steps=8)
    page.mouse.up()
    page.keyboard.up("Shift")
    table = page.locator(".pv-table[data-kind='launches']")
    table.wait_for(timeout=30_000)
    # the widget manager may hold the `_selection` update until the kernel has answered earlier ones
    assert wait_until(lambda: nb.value("len(w.selection)") > 0), "the selection did not reach the kernel"
    launches = json.loads(nb.step("print(w.selected_launches().sort_values('delay', ascending=False)"
                                  "[['kernel', 'name', 'delay', 'launch_name', 'cpu_op_name']]"
                                  ".astype(str).to_json(orient='records'))").splitlines()[-1])
    assert launches, "the selection has no launch rows"
    assert wait_until(lambda: table.get_attribute("data-count") == str(len(launches)))
    first = page.locator(".pv-table-row[data-index='0']")
    assert wait_until(lambda: first.locator(".pv-col-delay").inner_text() != "")
    top = launches[0]
    assert first.locator(".pv-col-delay").inner_text() == format_duration(float(top["delay"]))
    delays = sorted({float(x["delay"]) for x in launches}, reverse=True)
    assert float(top["delay"]) == delays[0]
    assert first.locator(".pv-col-launch").inner_text() == top["launch_name"]
    assert page.locator(".pv-table-tab.pv-active").inner_text().startswith("Launches")
    shoot(page, tmp_path, "launches_table.png")

    # collapse the CPU process (its header is the first row), then select kernel a: the arrow from
    # its launch call ends on that collapsed group's header row (the timeline's top scrolled into
    # view: the lanes may be taller than what is left of the page below the notebook's toolbar)
    page.locator(TIMELINE).first.evaluate("e => e.scrollIntoView({block: 'center'})")
    box = page.locator(TIMELINE).first.bounding_box()
    page.mouse.click(box["x"] + 40, box["y"] + AXIS_H + GROUP_H / 2)
    cpu = nb.value("w._tracks[0]['process']")
    assert wait_until(lambda: nb.value("w.collapsed_groups") == [cpu])
    (flow,) = [f for f in nb.value(f"w._event({{'id': {a}}}, [])[0]['flows']") if f["target"] == a]
    assert nb.value(f"w._tracks[{flow['source_track']}]['process']") == cpu
    ka = wait_until(lambda: page.evaluate(f"{hook}.locate({a})"))
    assert ka, "kernel a is not drawn after collapsing the CPU group"
    # the kernel's row, relative to the canvas (the page scrolls when the step cell runs)
    ka_rel = ka["y"] - page.locator(TIMELINE).first.bounding_box()["y"]
    # the arrow's middle, in a view showing both ends (the launch ends ~10 ms before the kernel)
    span = flow["target_time"] - flow["source_time"]
    wide = (flow["source_time"] - 0.3 * span, flow["target_time"] + 0.3 * span)

    def zoom(lo: float, hi: float) -> None:
        nb.step(f"w.zoom_to({lo}, {hi})")
        page.locator(TIMELINE).first.scroll_into_view_if_needed()
        assert wait_until(lambda: abs(page.evaluate(f"{hook}.view()")["start"] - lo) < 1e-6 * (hi - lo))
        page.wait_for_timeout(300)  # the next frame is painted

    def middle() -> tuple[float, float]:
        """The curve's middle (a symmetric cubic Bézier), in page coordinates as they are now."""
        box = page.locator(TIMELINE).first.bounding_box()
        k = (box["width"] - GUTTER_W) / (wide[1] - wide[0])
        x0 = box["x"] + GUTTER_W + (flow["source_time"] - wide[0]) * k
        x1 = box["x"] + GUTTER_W + (flow["target_time"] - wide[0]) * k
        y0 = AXIS_H + GROUP_H / 2  # the collapsed group's header row
        return (x0 + x1) / 2, box["y"] + (y0 + ka_rel) / 2

    zoom(*wide)
    before = pixel(page, *middle())
    zoom(t0 - pad, t1 + pad)
    ka = wait_until(lambda: page.evaluate(f"{hook}.locate({a})"))
    page.mouse.click(ka["x"], ka["y"])
    assert wait_until(lambda: nb.value("w.selection.index.tolist()") == [a])
    zoom(*wide)
    after = pixel(page, *middle())
    assert after != before, "no arrow to the collapsed group's header"
    accent = page.evaluate("getComputedStyle(document.querySelector('.pv-root'))"
                           ".getPropertyValue('--pv-accent').trim() || '#1a73e8'")
    if accent.startswith("#") and len(accent) == 7:
        # the changed pixel moved towards the arrow's colour (anti-aliased over what lies below)
        want = [int(accent[i:i + 2], 16) for i in (1, 3, 5)]
        dist = [sum(abs(g - w) for g, w in zip(px[:3], want, strict=True)) for px in (before, after)]
        assert dist[1] < dist[0] - 60, (before, after, accent)
    shoot(page, tmp_path, "arrow_to_collapsed.png")
    assert page.page_errors == []  # type: ignore[attr-defined]
