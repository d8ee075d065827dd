"""The widget of a TraceSet and the launch rows of the table, driven as the front end drives
them (synced traits assigned, command handlers called).

Ranks: ``tests/data/ddp`` (4 CPU ranks over gloo); launches: ``profview.example("gpu_trace")``
(a real A100 rank).  Expected values come from the JSON files (floats parsed as Decimal) or
from hand-built traces, never from the code under test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jupyter_profview as profview
from jupyter_profview import TraceSet, load_many
from jupyter_profview.widget.codec import decode_frame
from jupyter_profview.widget.numbers import format_duration
from tests.format_helpers import ns, read_json

pytest.importorskip("anywidget")
pytest.importorskip("pyarrow")

DDP = Path(__file__).parent / "data" / "ddp"
STEP = re.compile(r"ProfilerStep#(\d+)$")


@pytest.fixture(scope="module")
def docs() -> dict[int, dict[str, Any]]:
    return {doc["distributedInfo"]["rank"]: doc for doc in map(read_json, sorted(DDP.glob("*.json.gz")))}


@pytest.fixture(scope="module")
def ts(tmp_path_factory: pytest.TempPathFactory) -> TraceSet:
    return load_many(DDP, cache=tmp_path_factory.mktemp("cache"), progress=False)


def union_ns(intervals: list[tuple[int, int]], gap: float) -> int:
    """Total length of the union of intervals, gaps <= gap closed (plain Python)."""
    total, cur = 0, None
    for a, b in sorted(intervals):
        if cur is not None and a <= cur[1] + gap:
            cur[1] = max(cur[1], b)
            continue
        if cur is not None:
            total += cur[1] - cur[0]
        cur = [a, b]
    return total + (cur[1] - cur[0] if cur else 0)


def summary(w: Any) -> dict[str, Any]:
    f = decode_frame(w._summary)
    return {"frame": f, "busy": dict(zip(f.meta["keys"], f.meta["busy"], strict=True)),
            "comm": dict(zip(f.meta["keys"], f.meta["comm"], strict=True))}


# -- collapsed ranks, offsets, the rank filter ---------------------------------------------------

def test_ranks_start_collapsed_with_their_clock_offsets(ts: TraceSet, docs: dict[int, Any]) -> None:
    w = profview.show(ts)
    assert w.collapsed_groups == [f"rank {r}" for r in sorted(docs)]
    for t in w._tracks:  # every track knows its rank and section; its process is the rank's own
        assert t["section"] == f"rank {t['rank']}" and t["key"] == f"rank {t['rank']}/{t['process']}"
        assert t["process"] in set(ts[t["rank"]].events["process"].astype(str))
    # each rank's own origin (baseTimeNanoseconds + its first timestamp) against the earliest rank's
    base = {r: int(d["baseTimeNanoseconds"]) + min(ns(e["ts"]) for e in d["traceEvents"]
                                                    if e.get("ph") == "X") for r, d in docs.items()}
    offsets = {r["rank"]: r["offset"] for r in w._info["ranks"]}
    earliest = min(offsets.values())
    first = min(base.values())
    assert {r: o - earliest for r, o in offsets.items()} == {r: b - first for r, b in base.items()}
    assert w._info["align"] is None
    expanded = profview.show(ts, collapsed=False)
    assert expanded.collapsed_groups == []


def test_each_rank_section_lists_its_lanes_as_the_rank_alone_does(ts: TraceSet) -> None:
    """A rank's section has the lanes, names and order of that rank shown on its own (its own
    track order, not an order mixed with the other ranks' labels)."""
    w = profview.show(ts)
    for rank in ts.ranks:
        alone = profview.show(ts[rank])._tracks
        mine = [t for t in w._tracks if t["rank"] == rank]
        assert [(t["group"], t["name"], t["depths"]) for t in mine] == \
            [(t["group"], t["name"], t["depths"]) for t in alone], rank


def test_collapse_and_rank_filter_are_two_way_traits(ts: TraceSet) -> None:
    w = profview.show(ts)
    w.collapsed_groups = ["rank 1"]  # as the browser sets it after a click on rank 0's header
    assert w.collapsed_groups == ["rank 1"]
    ev = w.trace.events
    # a shift-drag over the whole trace while ranks 1 and 3 are shown selects only their events
    w.shown_ranks = [1, 3]
    w._selection = {"range": [0.0, float(w.trace.duration)], "tracks": None}
    assert set(w.selection["rank"]) == {1, 3}
    assert len(w.selection) == int(ev["rank"].isin([1, 3]).sum())
    # ... and so does the table of the window (nothing selected)
    reply, _ = w._table({"mode": "window", "t0": 0.0, "t1": float(w.trace.duration)}, [])
    assert reply["count"] == int(ev["rank"].isin([1, 3]).sum())
    w.shown_ranks = []
    w._selection = {"range": [0.0, float(w.trace.duration) + 1], "tracks": None}
    assert len(w.selection) == len(ev)


def test_selecting_across_two_ranks_gives_both_ranks(ts: TraceSet, docs: dict[int, Any]) -> None:
    w = profview.show(ts)
    tracks = {t["rank"]: i for i, t in enumerate(w._tracks) if t["name"].endswith("(python)")}
    w._selection = {"range": [0.0, float(w.trace.duration)], "tracks": [tracks[0], tracks[2]]}
    got = w.selection
    assert sorted(set(got["rank"])) == [0, 2]
    # the python thread's slices of both ranks, counted in the files
    for r in (0, 2):
        tids = {e["tid"] for e in docs[r]["traceEvents"]
                if e.get("ph") == "M" and e.get("name") == "thread_name"
                and "(python)" in e["args"]["name"] and str(e["tid"]) in w._tracks[tracks[r]]["label"]}
        want = sum(1 for e in docs[r]["traceEvents"] if e.get("ph") == "X" and e.get("tid") in tids)
        assert int((got["rank"] == r).sum()) == want


# -- summary lanes ----------------------------------------------------------------------------------

def test_communication_lane_of_each_rank_is_the_union_of_its_collective_slices(
        ts: TraceSet, docs: dict[int, Any]) -> None:
    w = profview.show(ts)
    s = summary(w)
    f = s["frame"]
    gap = (f.meta["t1"] - f.meta["t0"]) / f.meta["width"]
    comm = re.compile(r"^(gloo:|nccl|c10d::|record_param_comms)", re.I)
    for r, doc in docs.items():
        spans = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in doc["traceEvents"]
                 if e.get("ph") == "X" and comm.match(str(e.get("name", ""))) and ns(e["dur"]) > 0]
        want = union_ns(spans, gap)
        assert want > 0
        assert abs(s["comm"][f"rank {r}"] - want) <= 1, r
    # the slow rank (2, see the fixture's README) waits least for the others
    assert min(docs, key=lambda r: s["comm"][f"rank {r}"]) == 2


def test_work_lane_counts_what_is_inside_steps_and_profiler_spans() -> None:
    def x(name: str, cat: str, pid: Any, tid: int, ts: int, dur: int) -> dict[str, Any]:
        return {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur}

    events = [  # µs; a profiler span over everything, two steps, ops inside and between them
        x("PyTorch Profiler (0)", "Trace", "Spans", 1, 0, 1000),
        x("ProfilerStep#1", "user_annotation", 1, 1, 0, 400),
        x("aten::mm", "cpu_op", 1, 1, 10, 100),
        x("aten::add", "cpu_op", 1, 1, 20, 50),  # nested
        x("aten::relu", "cpu_op", 1, 1, 200, 100),
        x("ProfilerStep#2", "user_annotation", 1, 1, 500, 400),
        x("aten::mm", "cpu_op", 1, 1, 600, 100),
        x("gloo:all_reduce", "user_annotation", 1, 2, 650, 200),
    ]
    w = profview.show(profview.load(json.dumps({"traceEvents": events}).encode()))
    s = summary(w)
    process = next(t["process"] for t in w._tracks if t["thread"].endswith("1") and t["process"] != "Spans")
    # 10..110, 200..300, 600..700 on thread 1 and 650..850 on thread 2: 100 + 100 + 250 µs
    assert s["busy"][process] == 450_000
    assert s["comm"][process] == 200_000
    assert s["busy"]["Spans"] == 0  # the profiler span is a wrapper, not work


# -- align on a step -----------------------------------------------------------------------------

def test_align_step_lines_ranks_up_on_their_first_common_step(ts: TraceSet, docs: dict[int, Any]) -> None:
    steps = [{int(m.group(1)) for e in d["traceEvents"] if e.get("ph") == "X"
              and (m := STEP.match(str(e.get("name", ""))))} for d in docs.values()]
    first = min(set.intersection(*steps))
    w = profview.show(ts, align="step")
    assert w._info["align"]["step"] == first
    ev = w.trace.events
    starts = ev[ev["name"].astype(str) == f"ProfilerStep#{first}"].groupby("rank")["start"].min()
    assert sorted(starts.index) == sorted(docs) and starts.nunique() == 1
    assert int(starts.iloc[0]) == w._info["align"]["at"] == 0  # the step starts at 0 ...
    # ... what came before it is at negative times, and the widget's axis starts there
    assert w._info["start"] == float(ev["start"].min()) < 0
    # the view opens on the steps (first step's start to the last one's end), not the axis start
    step_ev = ev[ev["name"].astype(str).str.startswith("ProfilerStep#")]
    assert w._view["start"] == float(step_ev["start"].min()) > w._info["start"]
    # the next step keeps each rank's own step length (only whole ranks move)
    nxt = ev[ev["name"].astype(str) == f"ProfilerStep#{first + 1}"].groupby("rank")["start"].min()
    for r, doc in docs.items():
        (a,) = [ns(e["ts"]) for e in doc["traceEvents"] if e.get("name") == f"ProfilerStep#{first}"]
        (b,) = [ns(e["ts"]) for e in doc["traceEvents"] if e.get("name") == f"ProfilerStep#{first + 1}"]
        assert int(nxt[r] - starts[r]) == b - a
    with pytest.raises(ValueError, match="align"):
        profview.show(ts, align="middle")


# -- launch rows in the table ------------------------------------------------------------------

def test_a_kernel_range_lists_launches_with_their_delay() -> None:
    path = profview.example("gpu_trace")
    doc = read_json(path)
    w = profview.show(path)
    trace = w.trace
    # one GPU stream's track and a window over it
    stream = next(i for i, t in enumerate(w._tracks) if "stream" in t["name"])
    ev = trace.events
    on_stream = ev[w._data.timeline.event_track[np.arange(len(ev))] == stream]
    t0 = float(on_stream["start"].iloc[10])
    t1 = float(on_stream["start"].iloc[40])
    w._selection = {"range": [t0, t1], "tracks": [stream]}
    selected = w.selection
    reply, _ = w._table({"mode": "selection", "sort": "start"}, [])
    assert "kind" not in reply and reply["launches"] == len(selected) > 0
    reply, (frame,) = w._table({"mode": "selection", "kind": "launches", "sort": "delay", "descending": True,
                                "limit": 1000}, [])
    f = decode_frame(frame)
    assert reply["count"] == len(selected) and len(f.columns["kernel"]) == len(selected)
    delays = f.columns["delay"]
    assert (np.diff(delays) <= 0).all()
    # each row's delay, from the file: kernel ts - (end of the runtime call with its correlation id)
    base = min(ns(e["ts"]) for e in doc["traceEvents"] if e.get("ph") == "X")
    calls = {e["args"]["correlation"]: e for e in doc["traceEvents"]
             if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    for kernel, delay, name in zip(f.columns["kernel"].tolist(), delays.tolist(),
                                   f.columns["launch_name"].tolist(), strict=True):
        row = ev.loc[kernel]
        raw = next(e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "cuda_runtime"
                   and ns(e["ts"]) - base == row["start"] and e["name"] == str(row["name"]))
        call = calls[raw["args"]["correlation"]]
        assert delay == ns(raw["ts"]) - (ns(call["ts"]) + ns(call["dur"]))
        assert f.meta["launch_names"][name] == call["name"]
    # the same rows as w.selected_launches(), and the text the table shows for them
    la = w.selected_launches()
    assert sorted(la["kernel"].tolist()) == sorted(f.columns["kernel"].tolist())
    assert format_duration(float(la["delay"].max())) == format_duration(float(delays[0]))
    # a CPU-only selection has no launch rows
    cpu = next(i for i, t in enumerate(w._tracks) if "stream" not in t["name"])
    w._selection = {"range": [t0, t1], "tracks": [cpu]}
    reply, _ = w._table({"mode": "selection"}, [])
    assert reply["launches"] == len(trace.launches[trace.launches["launch"].isin(w.selection.index)])
    bad, _ = w._table({"mode": "selection", "kind": "launches", "sort": "self"}, [])
    assert "sort" in bad["error"]


def test_saved_html_keeps_the_collapsed_ranks_and_their_lanes(ts: TraceSet, tmp_path: Path) -> None:
    w = profview.show(ts, ranks=[0, 2])
    w.collapsed_groups = ["rank 2"]
    w.shown_ranks = [2]
    text = w.save_html(tmp_path / "ranks.html").read_text(encoding="utf-8")
    for name in ("_summary", "collapsed_groups", "shown_ranks"):
        assert f'"{name}"' in text, name
    assert '"rank 2"' in text
