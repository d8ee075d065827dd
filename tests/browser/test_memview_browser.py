"""The memory snapshot panel in JupyterLab, on a generated snapshot with known allocations
(benchmarks/make_snapshot.py, a fragmentation OOM at the end): the peak of the stacked bands is
the true peak allocated, replayed here from the pickle's own entries; a clicked band's stack is
its alloc entry's frames; the segment view's blocks are `allocator_state`'s at the clicked time."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any

import jupyter_profview as profview
from jupyter_profview.analysis import allocator_state
from jupyter_profview.numbers import format_bytes, format_duration
from tests.browser.lab import LabNotebook, LabServer, wait_until

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import make_snapshot  # noqa: E402

LIVE = ("active_allocated", "active_awaiting_free", "active_pending_free")


def replayed_levels(snap: dict[str, Any]) -> tuple[int, list[tuple[int, int]]]:
    """(µs of the first entry, [(µs, allocated bytes after every entry at that µs)]) of device 0,
    from the snapshot's end state and its trace alone."""
    end = sum(b["size"] for s in snap["segments"] if s["device"] == 0
              for b in s["blocks"] if b["state"] in LIVE)
    trace = snap["device_traces"][0]
    level = end - sum(e["size"] for e in trace if e["action"] == "alloc") \
        + sum(e["size"] for e in trace if e["action"] == "free_completed")
    out: list[tuple[int, int]] = []
    for e in trace:
        level += {"alloc": e["size"], "free_completed": -e["size"]}.get(e["action"], 0)
        if out and out[-1][0] == e["time_us"]:
            out[-1] = (e["time_us"], level)
        else:
            out.append((e["time_us"], level))
    return trace[0]["time_us"], out


def frame_text(f: dict[str, Any]) -> str:
    return f"{f['name']} ({f['filename']}:{f['line']})"


def test_memview_numbers_are_the_snapshots(lab: LabServer, page: Any, tmp_path: Path) -> None:
    path = lab.root / "snap.pickle"
    make_snapshot.write(path, entries=3000, oom="fragmentation")
    with path.open("rb") as fh:
        snap = pickle.load(fh)  # our own generated file (the test's independent reading)
    t0_us, levels = replayed_levels(snap)
    trace = profview.load(path)
    cells = ["import jupyter_profview as profview\n"
             f"t = profview.load(r'{path}')\n"
             "w = profview.show(t)\n"
             "w"]
    nb = LabNotebook(lab, page, "memview", cells)
    nb.run_all()
    root = nb.wait_widget()
    panel = page.locator(".pv-memview")
    panel.wait_for(state="visible")
    assert wait_until(lambda: panel.get_attribute("data-peak") is not None)
    vs, ve = float(root.get_attribute("data-view-start")), float(root.get_attribute("data-view-end"))
    # the true peak over the window shown: the level at its start, then every time inside it
    rel = [((us - t0_us) * 1000, b) for us, b in levels]
    before = [b for t, b in rel if t <= vs]
    inside = [(t, b) for t, b in rel if vs < t <= ve]
    candidates = ([(vs, before[-1])] if before else []) + inside
    peak = max(b for _, b in candidates)
    peak_time = next(t for t, b in candidates if b == peak)
    assert float(panel.get_attribute("data-peak")) == peak
    head = page.locator(".pv-memview-head").inner_text()
    assert f"peak {format_bytes(peak)} at {format_duration(peak_time)}" in head, head
    panel.scroll_into_view_if_needed()
    panel.screenshot(path=str(tmp_path / "memview.png"))

    # hover down a column at the peak until a band answers; click it: its stack is its entry's frames
    canvas = page.locator(".pv-memview-canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    assert box is not None
    gutter = 150  # the timeline's gutter (scene.ts GUTTER_W)
    x = box["x"] + gutter + (peak_time - vs + (ve - vs) * 0.002) / (ve - vs) * (box["width"] - gutter)
    row = ""
    for k in range(1, 60):
        page.mouse.move(x, box["y"] + box["height"] * k / 60)
        row = canvas.get_attribute("data-hover") or ""
        if row:
            break
    assert row, "no band under the peak"
    hover = page.locator(".pv-memview-hover").inner_text()
    page.mouse.click(x, box["y"] + box["height"] * k / 60)
    alloc = trace.allocations.iloc[int(row)]
    assert hover.startswith(f"{format_bytes(alloc['bytes'])} at {hex(int(alloc['address']))} · ")
    stack_text = page.locator(".pv-memview-stack").inner_text().split("\n")
    entry = next(e for e in snap["device_traces"][0]
                 if e["action"] == "alloc" and e["addr"] == alloc["address"]
                 and (e["time_us"] - t0_us) * 1000 == alloc["alloc_time"])
    assert entry["size"] == alloc["bytes"]
    assert stack_text[1:] == [frame_text(f) for f in entry["frames"]]
    assert stack_text[1:] == list(alloc["frames"])  # and the DataFrame's

    # the segment view at the clicked time: allocator_state's blocks, sizes with units
    blocks = page.locator(".pv-seg-block")
    assert wait_until(lambda: blocks.count() > 0)
    time = nb.value("w.session.panels['memview'].time")
    assert time == float(page.locator(".pv-memview").get_attribute("data-selected"))
    state = allocator_state(trace, int(time), 0)
    shown = page.eval_on_selector_all(
        ".pv-seg-block", "els => els.map(e => [Number(e.dataset.address), Number(e.dataset.size), "
        "e.dataset.state, e.title])")
    assert len(shown) == len(state)
    for (addr, size, st, title), r in zip(shown, state.itertuples(), strict=True):
        assert (addr, size, st) == (r.address, r.size, r.state)
        assert title == f"{r.state} {format_bytes(r.size)} at {hex(r.address)}"
    alloc_sum = int(state.loc[state["state"] == "allocated", "size"].sum())
    free_sum = int(state.loc[state["state"] == "free", "size"].sum())
    summary = page.locator(".pv-segments-head").inner_text()
    assert f"reserved {format_bytes(alloc_sum + free_sum)} · allocated {format_bytes(alloc_sum)} · " \
        f"free {format_bytes(free_sum)}" in summary, summary
    page.screenshot(path=str(tmp_path / "segments.png"), full_page=True)
    assert page.page_errors == []  # type: ignore[attr-defined]
