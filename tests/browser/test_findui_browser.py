"""Issue #36 items 7, 8 and 11 in JupyterLab + Debian Chromium (marked ``browser``), on real traces:
notebooks 07/13/14's GPU trace (HTA's ``trace_filter_sampled_rank-0``), two ranks of it as an
all-ranks view, and a torch CPU trace with its ``key_averages()``.

- one palette: every fill colour the timeline canvas draws (recorded from the canvas calls
  themselves, ``fillRect``) is a swatch of the legend on screen, colour by a metric and the
  collapsed ranks' lanes included; cpu_op and kernels in their palette colours;
- bad is loud: a 15 %-SM-efficiency kernel is drawn darker and more colourful than a 100 % one,
  each in its legend class's swatch colour;
- find and inspect: ``/`` opens the search box, the count ("1 / 10"), Enter / Shift+Enter / the
  buttons, the highlight, the view moved to a match that was not drawn, an invalid regex's
  message; the details strip's numbers equal ``trace.events`` (and torch's self time), its args
  ``trace.args(id)``, and its launch link selects the launch.
"""

from __future__ import annotations

import colorsys
import gzip
import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np

import jupyter_profview as profview
from jupyter_profview import analysis, palette
from jupyter_profview.numbers import format_duration
from tests.browser.lab import LabNotebook, LabServer, canvas_ink, pixel, wait_until

TIMELINE = ".pv-timeline canvas"
GPU = profview.example("gpu_trace")
# ../shared: both ranks of the GPU run
HTA = Path(__file__).resolve().parents[3] / "shared" / "traces" / "hta"
TORCH_CPU = Path(__file__).parents[1] / "data" / "torch_selftime.json.gz"
TORCH_KEY_AVERAGES = Path(__file__).parents[1] / "data" / "torch_selftime_key_averages.json"

# records the colour of every fillRect on the timeline canvas (the boxes, the collapsed lanes,
# the header bands, the background): what is drawn, read from the drawing calls themselves
RECORD_FILLS = """
(() => {
  const fill = CanvasRenderingContext2D.prototype.fillRect;
  window.__fills = new Map();
  CanvasRenderingContext2D.prototype.fillRect = function (x, y, w, h) {
    if (this.canvas.classList.contains('pv-tl-canvas') && w > 0 && h > 0) {
      const k = String(this.fillStyle);
      window.__fills.set(k, (window.__fills.get(k) || 0) + 1);
    }
    return fill.call(this, x, y, w, h);
  };
})();
"""

# the legend's swatches, the theme's background and header colours, all in the canvas's own
# notation (a 2D context normalises any CSS colour the same way for fillStyle)
LEGEND_AND_THEME = """
() => {
  const ctx = document.createElement('canvas').getContext('2d');
  const norm = (c) => { ctx.fillStyle = '#010203'; ctx.fillStyle = c; return String(ctx.fillStyle); };
  const root = document.querySelector('.pv-root');
  const cs = getComputedStyle(root);
  const v = (name, fallback) => cs.getPropertyValue(name).trim() || fallback;
  const swatches = [...root.querySelectorAll('.pv-legend .pv-legend-item')].map((it) => ({
    key: it.querySelector('.pv-legend-key').textContent,
    color: norm(getComputedStyle(it.querySelector('.pv-swatch')).backgroundColor),
  }));
  const theme = [norm(v('--pv-bg', '#ffffff')), norm(v('--pv-header', 'rgba(128,128,128,0.12)'))];
  return { swatches, theme };
}
"""


def fills_after_redraw(page: Any) -> dict[str, int]:
    """The fill colours (and how many fills each) of the timeline's next frames: once the detail
    of the view is drawn, the record is cleared and a redraw forced (a window resize)."""
    root = page.locator(".pv-root").first
    assert wait_until(lambda: root.get_attribute("data-source") == "detail"), "the detail never came"
    page.wait_for_timeout(1000)
    page.evaluate("window.__fills.clear(); window.dispatchEvent(new Event('resize'))")
    page.wait_for_timeout(500)
    fills = dict(page.evaluate("Object.fromEntries(window.__fills)"))
    assert fills, "nothing was drawn after the resize"
    return fills


def check_fills_in_legend(page: Any, fills: dict[str, int]) -> set[str]:
    """Every fill is a legend swatch or the theme's background / header band; the legend colours
    drawn."""
    got = page.evaluate(LEGEND_AND_THEME)
    legend = {s["color"] for s in got["swatches"]}
    theme = set(got["theme"])
    stray = {c: n for c, n in fills.items() if c not in legend | theme}
    assert not stray, f"colours drawn that the legend does not list: {stray}; legend {got['swatches']}"
    return set(fills) & legend


def swatch(page: Any, key: str) -> str:
    got = page.evaluate(LEGEND_AND_THEME)
    (color,) = [s["color"] for s in got["swatches"] if s["key"] == key]
    return str(color)


def hls(rgb: list[int]) -> tuple[float, float, float]:
    return colorsys.rgb_to_hls(*(c / 255 for c in rgb[:3]))


def box_colour(page: Any, event: int) -> list[int]:
    """The colour drawn inside event `event`'s own box: the most common pixel along its top
    quarter (clear of the label text, which sits in the middle)."""
    point = wait_until(lambda: page.evaluate(f"window.__profview.at(-1).locate({event})"))
    assert point, f"event {event} is not drawn as its own box"
    samples = [tuple(pixel(page, point["x"] + dx, point["y"] - 6)) for dx in range(-6, 7, 2)]
    return list(max(set(samples), key=samples.count))


def hex_rgb(color: str) -> list[int]:
    return [int(color[i:i + 2], 16) for i in (1, 3, 5)]


def shoot(root: Any, tmp_path: Path, name: str) -> None:
    """A screenshot of the widget for a person to read (the test's temporary directory)."""
    shot = tmp_path / name
    root.screenshot(path=str(shot))
    print("screenshot", shot)


def test_one_palette_and_bad_is_loud(lab: LabServer, page: Any, tmp_path: Path) -> None:
    page.add_init_script(RECORD_FILLS)
    nb = LabNotebook(lab, page, "palette", ["import jupyter_profview as profview\n"
                                             f"w = profview.show(profview.load(r'{GPU}'))\n"
                                             "w"])
    nb.run_all()
    nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000), "nothing drawn on the timeline"
    trace = profview.load(GPU)

    # colour by category: every colour drawn is in the legend; cpu_op, launches and kernels in
    # the palette's colours (the same in every notebook)
    drawn = check_fills_in_legend(page, fills_after_redraw(page))
    assert swatch(page, "cpu_op") == palette.CATEGORY_COLORS["cpu_op"]
    assert swatch(page, "kernel") == palette.KERNEL_COLOR
    assert swatch(page, "cuda_runtime") == palette.LAUNCH_COLOR
    assert swatch(page, "communication") == palette.COMMUNICATION_COLOR
    assert {palette.CATEGORY_COLORS["cpu_op"], palette.KERNEL_COLOR, palette.LAUNCH_COLOR} <= drawn, drawn

    # colour by SM efficiency: the legend's classes run from loud (0–20 %) to pale (80–100 %)
    root = page.locator(".pv-root").first
    root.locator(".pv-colorby").select_option("sm_efficiency")
    assert wait_until(lambda: nb.value("w.color_by") == "sm_efficiency")
    items = root.locator(".pv-legend-item")
    assert wait_until(lambda: items.count() and "SM efficiency" in items.first.inner_text())
    classes = [swatch(page, f"SM efficiency {20 * i}–{20 * (i + 1)} %") for i in range(5)]
    light = [hls(hex_rgb(c))[1] for c in classes]
    assert light == sorted(light) and light[0] < light[-1], (classes, light)
    page.wait_for_timeout(1000)  # the recoloured overview, then its detail
    drawn = check_fills_in_legend(page, fills_after_redraw(page))
    assert classes[0] in drawn and classes[-1] in drawn, (drawn, classes)

    # a low-efficiency kernel is drawn louder than a high-efficiency one, each in its swatch
    table = analysis.kernel_efficiency(trace)
    low = table[table["sm_efficiency"] < 20].sort_values("dur").iloc[-1]
    high = table[table["sm_efficiency"] >= 80].sort_values("dur").iloc[-1]
    colours = {}
    for name, row in (("low", low), ("high", high)):
        event = int(row["event"])
        t0, d = float(trace.events.loc[event, "start"]), float(trace.events.loc[event, "dur"])
        nb.step(f"w.zoom_to({t0 - d}, {t0 + 2 * d})")
        page.locator(TIMELINE).first.scroll_into_view_if_needed()
        assert wait_until(lambda: root.get_attribute("data-source") == "detail")
        colours[name] = box_colour(page, event)
        want = classes[min(int(row["sm_efficiency"] // 20), 4)]
        off = sum(abs(a - b) for a, b in zip(colours[name][:3], hex_rgb(want), strict=True))
        assert off <= 6, (name, colours, want)
    (_, l_low, _), (_, l_high, _) = hls(colours["low"]), hls(colours["high"])
    chroma = {k: max(c[:3]) - min(c[:3]) for k, c in colours.items()}
    assert l_low < l_high - 0.2, colours
    assert chroma["low"] > chroma["high"], colours
    t_low = float(trace.events.loc[int(low["event"]), "start"])
    nb.step(f"w.zoom_to({t_low - 3e6}, {t_low + 3e6})")  # the low kernel among its neighbours
    page.locator(TIMELINE).first.scroll_into_view_if_needed()
    page.wait_for_timeout(1500)
    shoot(root, tmp_path, "sm_efficiency.png")
    assert page.page_errors == []  # type: ignore[attr-defined]


def test_all_ranks_collapsed_lanes_use_the_legend(lab: LabServer, page: Any, tmp_path: Path) -> None:
    """Both ranks of the GPU run (HTA's rank-0 is notebook 07's trace), collapsed (as they open):
    the busy lanes are drawn in colours the legend lists, and colour by bus bandwidth recolours
    them."""
    run = tmp_path / "run"
    run.mkdir()
    for r in range(2):
        shutil.copyfile(HTA / f"trace_filter_sampled_rank-{r}.json.gz", run / f"rank-{r}.pt.trace.json.gz")
    page.add_init_script(RECORD_FILLS)
    nb = LabNotebook(lab, page, "palette_ranks", [
        "import jupyter_profview as profview\n"
        f"w = profview.show(profview.load_many(r'{run}', cache=False, progress=False))\n"
        "w"])
    nb.run_all()
    root = nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 500), "nothing drawn on the timeline"
    collapsed = wait_until(lambda: int(root.get_attribute("data-collapsed") or 0) >= 2)
    assert collapsed, "the ranks are not collapsed"
    boxes = root.get_attribute("data-boxes")
    drawn = check_fills_in_legend(page, fills_after_redraw(page))
    assert drawn, f"the collapsed lanes drew no legend colour (boxes drawn: {boxes})"
    assert palette.CATEGORY_COLORS["cpu_op"] in drawn
    assert palette.COMMUNICATION_COLOR in drawn, "the collectives' lane is not in communication's colour"

    root.locator(".pv-colorby").select_option("busbw")
    assert wait_until(lambda: nb.value("w.color_by") == "busbw")
    items = root.locator(".pv-legend-item")
    assert wait_until(lambda: items.count() and "bus bandwidth" in items.first.inner_text())
    page.wait_for_timeout(1000)
    drawn = check_fills_in_legend(page, fills_after_redraw(page))
    got = page.evaluate(LEGEND_AND_THEME)
    classes = {s["color"] for s in got["swatches"] if s["key"].startswith("bus bandwidth")}
    assert drawn & classes, f"the communication lanes are not in a bandwidth class: {drawn}"
    shoot(root, tmp_path, "ranks_busbw.png")

    # a search match inside a collapsed rank: its rank (and process group) expand, the match is a box
    files = [HTA / f"trace_filter_sampled_rank-{r}.json.gz" for r in range(2)]
    want = sum("ncclKernel" in n for f in files for n in json_names(f))  # counted from both files
    before = int(root.get_attribute("data-collapsed") or 0)
    root.locator(".pv-search-input").fill("ncclKernel")
    assert wait_until(lambda: root.locator(".pv-search-count").inner_text() == f"1 / {want}")
    current = wait_until(lambda: root.get_attribute("data-selected"))
    expanded = wait_until(lambda: int(root.get_attribute("data-collapsed") or 0) < before)
    assert expanded, "its rank stayed collapsed"
    drawn_box = wait_until(lambda: page.evaluate(f"window.__profview.at(-1).locate({current})"))
    assert drawn_box, "the match is not drawn"
    assert page.page_errors == []  # type: ignore[attr-defined]


def json_names(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [str(e["name"]) for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def strip_values(root: Any) -> dict[str, dict[str, str]]:
    return dict(root.evaluate("""(r) => Object.fromEntries(
      [...r.querySelectorAll('.pv-details-item')].map((c) => [c.dataset.key,
        { text: c.querySelector('.pv-details-value').textContent, value: c.dataset.value ?? '' }]))"""))


def test_search_and_details_strip(lab: LabServer, page: Any, tmp_path: Path) -> None:
    nb = LabNotebook(lab, page, "find", ["import jupyter_profview as profview\n"
                                          f"w = profview.show(profview.load(r'{GPU}'))\n"
                                          "w"])
    nb.run_all()
    root = nb.wait_widget()
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000)
    trace = profview.load(GPU)
    ev = trace.events
    query = "ncclKernel"
    want = sum(query in n for n in json_names(GPU))  # counted from the file, not by the package
    assert want == 10
    matches = ev[ev["name"].astype(str).str.contains(query, regex=False)].sort_values("start", kind="stable")
    assert len(matches) == want
    first = matches.iloc[0]
    # a view that does not show the first match (it is not among the boxes drawn)
    nb.step(f"w.zoom_to({float(ev['start'].min())}, {float(first['start']) - 5 * float(first['dur']) - 1e6})")
    assert wait_until(lambda: float(root.get_attribute("data-view-end") or 0) < float(first["start"]))
    assert page.evaluate(f"window.__profview.at(-1).locate({int(matches.index[0])})") is None

    # `/` in the focused view opens the box; typing searches
    box = root.locator(".pv-search-input")
    page.locator(TIMELINE).first.click(position={"x": 60, "y": 10})  # the axis corner: focus, no selection
    page.keyboard.press("/")
    assert wait_until(lambda: page.evaluate("document.activeElement?.classList.contains('pv-search-input')"))
    box.press_sequentially(query)
    count = root.locator(".pv-search-count")
    assert wait_until(lambda: count.inner_text() == f"1 / {want}"), count.inner_text()
    ids = [int(i) for i in matches.index]

    def at_match(k: int) -> bool:
        sel = root.get_attribute("data-selected")
        v0, v1 = float(root.get_attribute("data-view-start")), float(root.get_attribute("data-view-end"))
        row = matches.iloc[k]
        return sel == str(ids[k]) and v0 <= float(row["start"]) and float(row["start"] + row["dur"]) <= v1

    assert wait_until(lambda: at_match(0)), "the view did not move to the first match"
    highlighted = wait_until(lambda: root.get_attribute("data-highlight") == str(want))
    assert highlighted, "the matches are not highlighted"
    assert wait_until(lambda: page.evaluate(f"window.__profview.at(-1).locate({ids[0]})") is not None)
    box.press("Enter")
    assert wait_until(lambda: count.inner_text() == f"2 / {want}" and at_match(1))
    box.press("Enter")
    assert wait_until(lambda: count.inner_text() == f"3 / {want}" and at_match(2))
    box.press("Shift+Enter")
    assert wait_until(lambda: count.inner_text() == f"2 / {want}" and at_match(1))
    root.locator(".pv-search-prev").click()
    root.locator(".pv-search-prev").click()  # before the first: wraps to the last
    assert wait_until(lambda: count.inner_text() == f"{want} / {want}" and at_match(want - 1))
    root.locator(".pv-search-next").click()
    assert wait_until(lambda: count.inner_text() == f"1 / {want}" and at_match(0))
    # the kernel's selection is the match
    assert wait_until(lambda: nb.value("w.selection.index.tolist()") == [ids[0]])

    # the details strip of the selected kernel: the DataFrame's numbers
    strip = root.locator(".pv-details")
    assert wait_until(lambda: strip.is_visible() and strip.get_attribute("data-id") == str(ids[0]))
    row = ev.loc[ids[0]]
    assert strip.locator(".pv-details-name").inner_text() == str(row["name"])
    vals = strip_values(root)
    for key, value in (("start", row["start"]), ("end", row["start"] + row["dur"]), ("dur", row["dur"]),
                       ("self", row["self"])):
        assert float(vals[key]["value"]) == float(value), (key, vals[key], value)
        assert vals[key]["text"] == format_duration(float(value)), (key, vals[key])
    assert vals["category"]["text"] == str(row["category"])
    tracks = nb.value("w._tracks")
    (lane,) = [t for t in tracks if t["process"] == str(row["process"]) and t["thread"] == str(row["thread"])]
    assert vals["lane"]["text"] == f"{lane['group']} / {lane['name']}"
    args = trace.args(ids[0])
    keys = root.locator(".pv-details-arg-key").all_inner_texts()
    values = root.locator(".pv-details-arg-value").all_inner_texts()
    assert keys == list(args)
    for k, v in zip(keys, values, strict=True):
        assert (v == args[k]) if isinstance(args[k], str) else json.loads(v) == args[k], (k, v, args[k])
    # its launch: a link that selects the cudaLaunchKernel call
    launch = int(trace.launches.set_index("kernel").loc[ids[0], "launch"])
    link = root.locator(f".pv-details-link[data-target='{launch}']")
    assert wait_until(lambda: link.count() == 1 and "launched by" in link.inner_text()), root.locator(
        ".pv-details-links").all_inner_texts()
    assert str(ev.loc[launch, "name"]) in link.inner_text()
    link.click()
    selected = wait_until(lambda: root.get_attribute("data-selected") == str(launch))
    assert selected, "the link did not select the launch"
    assert wait_until(lambda: strip.get_attribute("data-id") == str(launch))
    assert strip.locator(".pv-details-name").inner_text() == str(ev.loc[launch, "name"])
    assert root.locator(f".pv-details-link[data-target='{ids[0]}']").count() == 1  # and back to its kernel
    root.locator(f".pv-details-link[data-target='{ids[0]}']").click()
    assert wait_until(lambda: strip.get_attribute("data-id") == str(ids[0]))
    page.wait_for_timeout(800)
    shoot(root, tmp_path, "search_details.png")

    # a regular expression; an invalid one says so (no exception, no page error)
    regex = r"^aten::(mm|addmm)$"
    want_re = sum(re.search(regex, n) is not None for n in json_names(GPU))  # Python's re, on the file
    assert want_re not in (0, want)
    root.locator(".pv-search-regex input").check()
    box.fill(regex)
    assert wait_until(lambda: count.inner_text() == f"1 / {want_re:,}"), count.inner_text()
    box.fill("ncclKernel_(")
    message = root.locator(".pv-search-message")
    assert wait_until(lambda: "invalid regular expression" in message.inner_text()), message.inner_text()
    assert count.inner_text() == "0 / 0"
    assert page.page_errors == []  # type: ignore[attr-defined]


def test_details_self_time_of_a_torch_cpu_trace(lab: LabServer, page: Any) -> None:
    """On a torch CPU trace recorded with_stack, the strip's self time of a frame torch reports
    once equals ``key_averages()``'s Self CPU (µs, 3 decimals in the export: whole ns)."""
    name = "torch/autograd/profiler.py(414): _start_trace"
    torch_self_us = json.loads(TORCH_KEY_AVERAGES.read_text())["key_averages"][name]["self_cpu_time_total"]
    nb = LabNotebook(lab, page, "find_cpu", ["import jupyter_profview as profview\n"
                                              f"w = profview.show(profview.load(r'{TORCH_CPU}'))\n"
                                              "w"])
    nb.run_all()
    root = nb.wait_widget()
    trace = profview.load(TORCH_CPU)
    ev = trace.events
    (event,) = ev.index[ev["name"].astype(str) == name]
    root.locator(".pv-search-regex input").check()
    root.locator(".pv-search-input").fill("^" + re.escape(name) + "$")
    assert wait_until(lambda: root.locator(".pv-search-count").inner_text() == "1 / 1")
    strip = root.locator(".pv-details")
    assert wait_until(lambda: strip.get_attribute("data-id") == str(event))
    vals = strip_values(root)
    self_ns = float(vals["self"]["value"])
    assert self_ns == float(ev.loc[event, "self"])
    assert abs(self_ns - torch_self_us * 1000) <= 1, (self_ns, torch_self_us)
    assert vals["self"]["text"] == format_duration(self_ns) == "95.55 µs"
    assert np.isclose(float(vals["dur"]["value"]), float(ev.loc[event, "dur"]))
    assert page.page_errors == []  # type: ignore[attr-defined]


def check_search_without_a_kernel(page: Any, scope: str) -> None:
    """The search box and the details strip of a view whose session lives in a server (the Lab
    tab, `profview serve`): the same `_search` command, the same strip."""
    trace = profview.load(GPU)
    ev = trace.events
    want = sum("ncclKernel" in n for n in json_names(GPU))
    first = ev[ev["name"].astype(str).str.contains("ncclKernel", regex=False)].sort_values("start").index[0]
    assert wait_until(lambda: canvas_ink(page, f"{scope} .pv-timeline canvas") > 2000), "nothing drawn"
    box = page.locator(f"{scope} .pv-search-input")
    assert wait_until(lambda: box.is_visible()), "no search box"
    box.fill("ncclKernel")
    count = page.locator(f"{scope} .pv-search-count")
    assert wait_until(lambda: count.inner_text() == f"1 / {want}"), count.inner_text()
    root = page.locator(f"{scope} .pv-root").first
    assert wait_until(lambda: root.get_attribute("data-selected") == str(first))
    strip = page.locator(f"{scope} .pv-details")
    assert wait_until(lambda: strip.get_attribute("data-id") == str(first))
    assert strip.locator(".pv-details-name").inner_text() == str(ev.loc[first, "name"])
    dur = strip.locator(".pv-details-item[data-key='dur']")
    assert float(dur.get_attribute("data-value") or "nan") == float(ev.loc[first, "dur"])
    box.press("Enter")
    assert wait_until(lambda: count.inner_text() == f"2 / {want}")


def test_search_on_the_serve_page(browser: Any, request: Any, tmp_path: Path) -> None:
    from tests.browser.test_lab_extension import viewer_page
    from tests.server_helpers import profview_serve

    trace = tmp_path / "root" / "gpu.pt.trace.json.gz"
    trace.parent.mkdir()
    shutil.copyfile(GPU, trace)
    with viewer_page(browser, request, tmp_path) as page, \
            profview_serve(trace, tmp_path / "serve.log") as (_http, url):
        page.goto(url)
        page.wait_for_selector("#profview-root .pv-timeline canvas")
        check_search_without_a_kernel(page, "#profview-root")


def test_search_in_a_lab_tab(browser: Any, request: Any, tmp_path_factory: Any, tmp_path: Path) -> None:
    from tests.browser.test_lab_extension import lab_tab_server, open_lab_tab, viewer_page

    with lab_tab_server(tmp_path_factory, "findlab", {"gpu.pt.trace.json.gz": GPU}) as server, \
            viewer_page(browser, request, tmp_path) as page:
        scope = open_lab_tab(page, server, "find", "gpu.pt.trace.json.gz")
        check_search_without_a_kernel(page, scope)
