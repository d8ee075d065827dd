"""Where a view opens (the steps, not the profiler's wrapper span) and which y axis each counter
series is drawn on (one per unit; the trace's own counters one per counter name). Expected
values are read from the trace's events and JSON, not from the code under test."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import jupyter_profview as profview
from jupyter_profview.widget.codec import decode_frame
from jupyter_profview.widget.lod import first_view
from jupyter_profview.widget.memory_lod import MemoryIndex
from jupyter_profview.widget.session import ViewSession

DATA = Path(__file__).parent / "data"


def test_first_view_is_first_step_start_to_last_step_end() -> None:
    trace = profview.load(profview.example("gpu_trace"))
    ev = trace.events
    steps = ev[ev["name"].astype(str).str.startswith("ProfilerStep#")
               & (ev["category"].astype(str) == "user_annotation")]
    assert len(steps) == 2
    want = (float(steps["start"].min()), float((steps["start"] + steps["dur"]).max()))
    whole = (float(ev["start"].min()), float((ev["start"] + ev["dur"]).max()))
    assert want[1] - want[0] < 0.5 * (whole[1] - whole[0])  # the wrapper span is far wider
    session = ViewSession(trace)
    assert session.first_view == want
    assert session.state()["_view"] == {"start": want[0], "end": want[1]}
    assert profview.show(trace).visible == want


def test_first_view_without_steps_is_the_whole_trace() -> None:
    trace = profview.load(DATA / "chrome_counters_async.json")
    ev = trace.events
    assert not ev["name"].astype(str).str.startswith("ProfilerStep").any()
    extent = (0.0, 123.0)
    assert first_view(trace, extent) == extent


def test_each_counter_gets_the_axis_of_its_own_name() -> None:
    """``fps`` and ``queue 2`` are two counters of the JSON: two axes, never one."""
    path = DATA / "chrome_counters_async.json"
    raw = json.loads(path.read_text())["traceEvents"]
    names = {f"{e['name']} {e['id']}" if "id" in e else e["name"]
             for e in raw if e.get("ph") == "C" and e.get("cat") != "memory"
             and any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in e["args"].values())}
    meta = decode_frame(MemoryIndex(profview.load(path)).overview()).meta["series"]
    axes = {s["device"]: s.get("axis") for s in meta if s["unit"] == "value"}
    assert set(axes.values()) == names
    for device, axis in axes.items():
        assert device.startswith(f"{axis}: ")


def test_queue_series_carry_their_peak_in_launches() -> None:
    """A stream's queue peak is its largest queue length (a count), sent with its time; memory
    peaks stay bytes; utilisation has no peak (its scale is 0-100 %)."""
    trace = profview.load(profview.example("gpu_trace"))
    index = MemoryIndex(trace)
    meta = decode_frame(index.overview()).meta["series"]
    queues = [(s, m) for s, m in zip(index.series, meta, strict=True) if m["unit"] == "count"]
    assert queues
    for s, m in queues:
        assert m["peak_bytes"] == float(np.max(s.bytes))
        assert s.time[int(np.argmax(s.bytes))] == m["peak_time"]
    assert all(m["peak_bytes"] is None for m in meta if m["unit"] == "fraction")
