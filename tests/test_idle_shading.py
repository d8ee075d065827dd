"""A picked finding shows its evidence (issue 36 item 1), kernel side: `w.pick_finding(k)` sends
`_finding`, which names the picked row; a `gpu_idle` finding's frame holds its idle intervals and
its GPU's lanes, which the front end shades.

The expected idle intervals are counted here from `trace.events` alone, with the tests' own
interval walk (`pipeline_walk.minus`): the step window (first ``ProfilerStep#`` start to last end)
minus the union of the GPU's kernels, memcpy and memset (categories ``kernel``, ``gpu_memcpy``,
``gpu_memset`` of the GPU's process), on a real HTA trace (notebook 13's:
``trace_filter_sampled_rank-0``) and on a small hand-written Kineto file with two GPUs and no sync
call or DataLoader (findings with 0 events).
The browser side (the row marked, the shading drawn) is tests/browser/test_evidence_browser.py.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pipeline_walk import minus

import jupyter_profview as profview
from jupyter_profview.widget.codec import decode_frame
from jupyter_profview.widget.widget import TraceWidget

ROOT = Path(__file__).parents[1]
SHARED = ROOT.parent / "shared" / "traces" / "hta" / "trace_filter_sampled_rank-0.json.gz"
#: notebook 13's trace (`profview.example("gpu_trace")`), a copy of the shared HTA file
HTA = SHARED if SHARED.is_file() else ROOT / "jupyter_profview" / "examples" / "hta" / SHARED.name
TINY = ROOT / "tests" / "data" / "gpu_idle_two_gpus.json"
DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def idle_by_hand(trace: Any, process: str) -> list[tuple[int, int]]:
    """The step window minus the union of `process`'s device events, by the tests' own interval
    walk (`pipeline_walk.minus`, not the package's)."""
    ev = trace.events
    name, cat = ev["name"].astype(str), ev["category"].astype(str)
    steps = ev[name.str.startswith("ProfilerStep#").to_numpy() & (cat == "user_annotation").to_numpy()]
    lo = int(steps["start"].min())
    hi = int((steps["start"] + steps["dur"]).max())
    dev = ev[cat.isin(DEVICE_CATEGORIES).to_numpy() & (ev["process"].astype(str) == process).to_numpy()]
    starts = dev["start"].tolist()
    return minus([(lo, hi)], list(zip(starts, (dev["start"] + dev["dur"]).tolist(), strict=True)))


def evidence_cell(trace: Any, row: Any) -> str:
    """The findings panel's evidence column for `row` of `advise(trace).findings`: "N events", and
    for gpu_idle its idle intervals (counted here) first, "N idle intervals · M events"."""
    def plural(n: int, what: str) -> str:
        return f"{n:,} {what}{'' if n == 1 else 's'}"
    events = plural(int(row["count"]), "event")
    if row["rule"] != "gpu_idle":
        return events
    idle = plural(len(idle_by_hand(trace, str(row["device"]))), "idle interval")
    return f"{idle} · {events}" if int(row["count"]) else idle


def picked(w: TraceWidget) -> Any:
    return decode_frame(w._finding)


@pytest.mark.parametrize("path", [HTA, TINY], ids=["hta_rank0", "hand_written"])
def test_the_shaded_intervals_are_the_gpus_idle_time(path: Path) -> None:
    trace = profview.load(path)
    w = TraceWidget(trace)
    advice = w.show_advice()
    idle_rows = advice.findings.index[advice.findings["rule"] == "gpu_idle"].tolist()
    gpus = {str(p) for p in trace.events["process"][trace.events["category"].isin(DEVICE_CATEGORIES)]}
    assert len(idle_rows) == len(gpus) >= 1  # one finding per GPU (each idle >= 1 % here)
    for k in idle_rows:
        gpu = str(advice.findings.loc[k, "device"])
        expected = idle_by_hand(trace, gpu)
        w.pick_finding(k)
        frame = picked(w)
        assert frame.meta["finding"] == k and frame.meta["rule"] == "gpu_idle"
        got = list(zip(frame.columns["start"].astype(np.int64).tolist(),
                       frame.columns["end"].astype(np.int64).tolist(), strict=True))
        assert got == expected
        total = sum(e - s for s, e in expected)
        assert frame.meta["idle"] == total == int(advice.findings.loc[k, "time"])
        assert frame.meta["intervals"] == len(expected) == w._advice["findings"][k]["intervals"]
        # the lanes shaded: every track of the GPU's process, no other; the lanes scroll to them
        assert frame.meta["tracks"] == [t["id"] for t in w._tracks if t["process"] == gpu]
        assert decode_frame(w._highlight).meta["first_track"] == frame.meta["tracks"][0]
        # the view zooms to the window the idle time is counted in
        assert (w._zoom_request["start"], w._zoom_request["end"]) == tuple(float(x) for x in advice.window)
        # the public API says the same
        table = advice.idle_intervals(k)
        assert list(zip(table["start"].tolist(), table["end"].tolist(), strict=True)) == expected


def test_a_finding_without_events_still_shows_its_idle_time() -> None:
    """The hand-written trace has no sync call and no DataLoader: its gpu_idle findings have 0
    events, yet each pick sends its intervals (and the view zooms to the window)."""
    w = TraceWidget(profview.load(TINY))
    advice = w.show_advice()
    assert (advice.findings["count"] == 0).all()
    for k in range(len(advice.findings)):
        assert len(w.pick_finding(k)) == 0
        assert picked(w).meta["intervals"] > 0 and len(picked(w).columns["start"]) > 0


def test_a_pick_names_its_row_and_a_new_advice_clears_it() -> None:
    w = TraceWidget(profview.load(HTA))
    advice = w.show_advice()
    k = int(advice.findings.index[advice.findings["rule"] == "exposed_communication"][0])
    evidence = w.pick_finding(k)
    frame = picked(w)
    assert frame.meta["finding"] == k and frame.meta["rule"] == "exposed_communication"
    assert len(frame.columns["start"]) == 0 and "tracks" not in frame.meta  # nothing shaded
    assert sorted(evidence.index.tolist()) == sorted(advice.findings.loc[k, "events"])
    w.show_advice()
    assert picked(w).meta["finding"] == -1


def test_each_rank_of_a_traceset_shades_its_own_gpu_on_the_sets_clock(tmp_path: Path) -> None:
    """Ranks 0 and 1 of the sampled HTA run in one all-ranks view: a rank's gpu_idle intervals are
    its own trace's idle time (counted here) moved by its clock offset, on its own GPU's lanes."""
    for r in (0, 1):
        shutil.copy(HTA.with_name(f"trace_filter_sampled_rank-{r}.json.gz"), tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the files name 128 ranks; 2 are here
        ts = profview.load_many(tmp_path, progress=False)
    w = profview.show(ts, advice=True)
    advice = w.advice
    rows = advice.findings.index[advice.findings["rule"] == "gpu_idle"].tolist()
    assert sorted(int(advice.findings.loc[k, "rank"]) for k in rows) == [0, 1]
    for k in rows:
        rank, gpu = int(advice.findings.loc[k, "rank"]), str(advice.findings.loc[k, "device"])
        w.pick_finding(k)
        frame = picked(w)
        shift = ts.offsets[rank]
        expected = [(s + shift, e + shift) for s, e in idle_by_hand(ts[rank], gpu)]
        got = list(zip(frame.columns["start"].astype(np.int64).tolist(),
                       frame.columns["end"].astype(np.int64).tolist(), strict=True))
        assert got == expected
        mine = [t["id"] for t in w._tracks if t["process"] == gpu and t["rank"] == rank]
        assert frame.meta["tracks"] == mine
