"""Lanes fit (issue 36 item 2): the kernel's lane list hides the lanes that hold only the
profiler's own records (Kineto's ``PyTorch Profiler (0)`` span, its ``Iteration Start`` and
``Record Window End`` markers: `derived.wrapper_mask`) unless ``show_wrappers`` is on, counts
them, and never loses an event.  Expected values are counted from the trace's JSON here, with
Kineto's own record types (``ph``, ``cat``, ``pid``/``tid``), not from the package's code.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jupyter_profview as profview
from jupyter_profview.widget.codec import decode_frame
from jupyter_profview.widget.requests import RequestError
from jupyter_profview.widget.session import ViewSession

ROOT = Path(__file__).parent.parent
DDP0 = ROOT / "jupyter_profview" / "examples" / "ddp" / "rank-0.pt.trace.json.gz"
GPU = Path(profview.example("gpu_trace"))
#: what Kineto writes for its own records (libkineto's output_json: the whole-recording span of
#: category "Trace", and the two global instant markers)
KINETO_MARKERS = ("Iteration Start: ", "Record Window End")


def json_lanes(path: Path) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]]]:
    """Per (pid, tid): the timed events (``X`` complete, ``i`` instant) and how many of them are
    Kineto's own records, read straight from the file."""
    with gzip.open(path, "rt") as f:
        records = json.load(f)["traceEvents"]
    events: Counter[tuple[str, str]] = Counter()
    wrappers: Counter[tuple[str, str]] = Counter()
    for r in records:
        if r.get("ph") not in ("X", "i"):
            continue
        key = (str(r.get("pid", "")), str(r.get("tid", "")))
        events[key] += 1
        if r.get("cat") == "Trace" or str(r.get("name", "")).startswith(KINETO_MARKERS):
            wrappers[key] += 1
    return events, wrappers


def test_wrapper_lanes_hidden_by_default_counted_and_no_event_lost() -> None:
    events, wrappers = json_lanes(DDP0)
    only_wrappers = {k for k, n in events.items() if wrappers[k] == n}
    # this trace: the Spans / Traces / (no pid, no tid) lanes, one record each
    assert len(only_wrappers) == 3 and sum(events[k] for k in only_wrappers) == 3
    s = ViewSession(profview.load(DDP0))
    tracks: list[dict[str, Any]] = s.state()["_tracks"]
    assert s.state()["show_wrappers"] is False
    # every event of the file is in exactly one lane, hidden or not
    assert sum(t["events"] for t in tracks) == sum(events.values())
    assert sorted(t["events"] for t in tracks) == sorted(events.values())
    assert sum(t["wrappers"] for t in tracks) == sum(wrappers.values())
    hidden = [t for t in tracks if t["hidden"]]
    assert len(hidden) == len(only_wrappers)
    assert sum(t["events"] for t in hidden) == sum(events[k] for k in only_wrappers)
    assert {(t["group"], t["name"]) for t in hidden} == {
        ("Spans", "PyTorch Profiler"), ("Traces", "Trace PyTorch Profiler"), ("(global)", "(no thread)")}
    assert s.data.hidden_lanes() == {"lanes": 3, "events": 3}
    # the work's lanes all shown
    assert all(not t["hidden"] for t in tracks if t["wrappers"] == 0)
    # the slices frame still holds every event (hiding is a lane's, not an event's)
    frame = decode_frame(s.data.timeline.slices(*s.data.timeline.extent(), 1 << 20))
    assert frame.meta["total"] == sum(events.values())


def test_show_wrappers_brings_them_back_through_the_session() -> None:
    s = ViewSession(profview.load(DDP0))
    out = s.apply({"show_wrappers": True})
    assert out["show_wrappers"] is True
    assert not any(t["hidden"] for t in out["_tracks"])
    assert s.data.hidden_lanes() == {"lanes": 0, "events": 0}
    out = s.apply({"show_wrappers": False})
    assert sum(t["hidden"] for t in out["_tracks"]) == 3
    with pytest.raises(RequestError, match="show_wrappers"):
        s.apply({"show_wrappers": "yes"})


def test_the_widget_trait_toggles_the_lanes() -> None:
    pytest.importorskip("anywidget")
    from jupyter_profview.widget.widget import TraceWidget

    w = TraceWidget(profview.load(GPU))
    events, wrappers = json_lanes(GPU)
    # notebook 07's trace: the PyTorch Profiler span alone on its lane
    assert [t["name"] for t in w._tracks if t["hidden"]] == ["PyTorch Profiler"]
    assert sum(t["events"] for t in w._tracks) == sum(events.values()) == len(w.trace.events)
    w.show_wrappers = True
    assert not any(t["hidden"] for t in w._tracks)
    w.show_wrappers = False
    assert sum(t["hidden"] for t in w._tracks) == 1


def test_a_lane_with_work_and_a_wrapper_stays() -> None:
    from tests.widget_helpers import trace_from_rows

    rows = [
        {"name": "PyTorch Profiler (0)", "category": "Trace", "process": "p", "thread": "t", "start": 0,
         "dur": 100},
        {"name": "aten::mm", "category": "cpu_op", "process": "p", "thread": "t", "start": 10, "dur": 5},
        {"name": "Record Window End", "category": "", "process": "", "thread": "", "start": 100, "dur": 0},
    ]
    s = ViewSession(trace_from_rows(rows))
    by_name = {t["name"]: t for t in s.state()["_tracks"]}
    assert by_name["t"]["hidden"] is False and by_name["t"]["wrappers"] == 1 and by_name["t"]["events"] == 2
    assert by_name["(no thread)"]["hidden"] is True
    assert int(np.sum([t["events"] for t in by_name.values()])) == 3
