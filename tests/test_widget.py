"""The widget's kernel side, driven as the front end drives it (traits + commands)."""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_profview.widget.widget as widget_module
from jupyter_profview.model import Quality, Trace, empty_allocations
from jupyter_profview.widget.codec import absolute_times, decode_frame
from jupyter_profview.widget.widget import BundleMissingError, TraceWidget
from tests.widget_helpers import flat_trace, trace_from_rows

XSS = ["<img src=x onerror=window.__pwned=1>", "<script>window.__pwned=2</script>", "</script><b>x"]


@pytest.fixture(autouse=True)
def bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The real bundle where built; otherwise a stub (these tests exercise the kernel side)."""
    if widget_module._ESM_PATH.is_file():
        return widget_module._ESM_PATH
    stub = tmp_path / "widget.js"
    stub.write_text("export default { render({ el }) { el.textContent = 'stub'; } };\n")
    monkeypatch.setattr(widget_module, "_ESM_PATH", stub)
    monkeypatch.setattr(widget_module, "_CSS_PATH", tmp_path / "widget.css")
    return stub


@pytest.fixture(scope="module")
def trace() -> Trace:
    return flat_trace(5000, threads=4, seed=2)


def test_missing_bundle_error_names_the_build_command(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(widget_module, "_ESM_PATH", tmp_path / "nope.js")
    monkeypatch.setattr(TraceWidget, "_esm", widget_module._MISSING_ESM)  # as if missing at import
    with pytest.raises(BundleMissingError, match="npm run build"):
        TraceWidget(flat_trace(10))


def test_initial_state_is_small_and_follows_the_protocol(trace: Trace) -> None:
    w = TraceWidget(trace)
    info = w._info
    assert info["event_count"] == len(trace.events) and info["time_unit"] == "ns"
    assert info["static"] is False and info["has_memory"] and info["message"] == ""
    assert [t["label"] for t in w._tracks] == sorted(trace.events["track"].astype(str).unique(),
                                                      key=lambda s: (not s.startswith("CPU"), s))
    overview = decode_frame(w._overview)
    assert int(overview["count"].sum()) == len(trace.events)
    assert decode_frame(w._memory).meta["series"][0]["device"] == "GPU 0"
    state = w.get_state()
    assert "selection" not in state and "visible" not in state
    size = sum(len(v) if isinstance(v, (bytes, memoryview)) else len(json.dumps(v)) for v in state.values())
    assert size < 1_000_000
    assert w.trace is trace and len(w.selection) == 0
    assert w.visible == (0.0, float(trace.duration))


def test_selection_by_ids_gives_those_rows_and_fires_observers(trace: Trace) -> None:
    w = TraceWidget(trace)
    seen: list[pd.DataFrame] = []
    w.observe(lambda change: seen.append(change["new"]), "selection")
    w._selection = {"ids": [42, 7, 42, 4999]}
    expected = trace.events.loc[[7, 42, 4999]]
    pd.testing.assert_frame_equal(w.selection, expected)
    assert len(seen) == 1 and seen[0].index.tolist() == [7, 42, 4999]
    w._selection = {}
    assert len(w.selection) == 0 and len(seen) == 2


def test_range_selection_on_tracks_matches_an_independent_mask(trace: Trace) -> None:
    w = TraceWidget(trace)
    t0, t1 = 100_000.0, 400_000.0
    w._selection = {"range": [t1, t0], "tracks": [1, 2]}  # reversed range is accepted
    labels = {w._tracks[1]["label"], w._tracks[2]["label"]}
    ev = trace.events
    mask = (ev["start"] <= t1) & (ev["start"] + ev["dur"] >= t0) & ev["track"].astype(str).isin(labels)
    assert mask.sum() > 10
    assert w.selection.index.tolist() == ev.index[mask].tolist()
    w._selection = {"range": [t0, t1], "tracks": None}
    all_tracks = (ev["start"] <= t1) & (ev["start"] + ev["dur"] >= t0)
    assert len(w.selection) == int(all_tracks.sum())


@pytest.mark.parametrize("bad", [{"ids": [10**9]}, {"ids": ["1"]}, {"ids": list(range(10_001))},
                                 {"range": [0, "x"]}, {"range": [0, 1], "tracks": [True]}, {"what": 1}])
def test_bad_selection_is_ignored_not_raised(trace: Trace, bad: dict[str, Any]) -> None:
    w = TraceWidget(trace)
    w._selection = {"ids": [1]}
    w._selection = bad
    assert len(w.selection) == 0 and w.selection_error


def test_view_sets_visible_and_notifies(trace: Trace) -> None:
    w = TraceWidget(trace)
    seen = []
    w.observe(lambda c: seen.append(c["new"]), "visible")
    w._view = {"start": 10.5, "end": 2000}
    assert w.visible == (10.5, 2000.0) and seen == [(10.5, 2000.0)]
    w._view = {"start": "nan?", "end": 1}
    assert w.visible == (10.5, 2000.0)


def _highlighted(w: TraceWidget) -> list[int]:
    return decode_frame(w._highlight)["id"].tolist()


def test_highlight_by_dataframe_mask_and_query(trace: Trace) -> None:
    w = TraceWidget(trace)
    ev = trace.events
    want = ev[(ev["name"] == "op_3") & (ev["dur"] > 20_000)]
    assert 0 < len(want) < len(ev)
    tokens = []
    for x in (want, ev["name"].eq("op_3") & ev["dur"].gt(20_000),
              ((ev["name"] == "op_3") & (ev["dur"] > 20_000)).to_numpy(), "name == 'op_3' and dur > 20000"):
        got = w.highlight(x)
        assert got.index.tolist() == want.index.tolist()
        assert _highlighted(w) == want.index.tolist()
        zoom = w._zoom_request
        lo, hi = float(want["start"].min()), float((want["start"] + want["dur"]).max())
        assert zoom["start"] < lo or zoom["start"] == 0.0
        assert zoom["end"] > hi or zoom["end"] == float(trace.duration)
        assert zoom["end"] - zoom["start"] <= (hi - lo) * 1.2 + 2
        tokens.append(zoom["token"])
    assert len(set(tokens)) == 4
    one = w.highlight(ev.iloc[[17]])
    assert one.index.tolist() == [17] and w._zoom_request["start"] < ev["start"].iat[17]
    assert w.highlight(None).empty and _highlighted(w) == []
    with pytest.raises(TypeError):
        w.highlight(3)
    with pytest.raises(ValueError):
        w.highlight(np.ones(3, bool))


def test_zoom_to_validates(trace: Trace) -> None:
    w = TraceWidget(trace)
    w.zoom_to(5, 10)
    assert {k: w._zoom_request[k] for k in ("start", "end")} == {"start": 5.0, "end": 10.0}
    for bad in ((10, 5), (float("nan"), 1), (1, 1)):
        with pytest.raises(ValueError):
            w.zoom_to(*bad)


def test_detail_and_memory_commands(trace: Trace) -> None:
    w = TraceWidget(trace)
    reply, buffers = w._detail({"t0": 1000, "t1": 50_000, "width": 200}, [])
    assert {k: reply[k] for k in ("t0", "t1", "width")} == {"t0": 1000.0, "t1": 50_000.0, "width": 200}
    assert reply["kernel_ms"] >= 0 and reply["kernel_at"] > 1e12  # benchmark hooks
    assert len(buffers) == 1  # no memory frame unless asked for
    frame = decode_frame(buffers[0])
    ev = trace.events
    inside = (ev["start"] <= 50_000) & (ev["start"] + ev["dur"] >= 1000)
    assert int(frame["count"].sum()) == int(inside.sum())
    reply, buffers = w._memory_detail({"t0": 0, "t1": 1e5, "width": 50}, [])
    mem = decode_frame(buffers[0])
    assert reply == {} and len(mem) > 0 and (mem["time"][1:] <= 1e5).all()


def test_detail_with_memory_is_one_round_trip_in_compact_frames(trace: Trace) -> None:
    """CHANGED (perf): `_detail` with `memory: true` answers slices + memory at once, times as
    float32 relative to the request's t0 (`meta.origin`), equal to the float64 frames to far
    below a pixel."""
    w = TraceWidget(trace)
    t0, t1, width = 12_345.0, 812_345.0, 300
    reply, buffers = w._detail({"t0": t0, "t1": t1, "width": width, "memory": True}, [])
    assert len(buffers) == 2 and reply["t0"] == t0
    slices, mem = decode_frame(buffers[0]), decode_frame(buffers[1])
    full = decode_frame(w._data.timeline.slices(t0, t1, width))
    assert slices.meta["origin"] == t0 and "origin" not in full.meta
    for name in ("start", "dur", "busy"):
        assert slices[name].dtype == np.float32
    for name in ("track", "depth", "id", "count", "color", "label"):
        np.testing.assert_array_equal(slices[name], full[name])
    px = (t1 - t0) / width
    np.testing.assert_allclose(absolute_times(slices, "start"), full["start"], rtol=0, atol=px / 1000)
    np.testing.assert_allclose(slices["dur"], full["dur"], rtol=1e-6, atol=px / 1000)
    np.testing.assert_allclose(slices["busy"], full["busy"], rtol=1e-6, atol=px / 1000)
    # the memory frame is the `_memory_detail` one with compact times
    _, (old,) = w._memory_detail({"t0": t0, "t1": t1, "width": width}, [])
    old_mem = decode_frame(old)
    assert mem.meta["origin"] == t0 and mem["time"].dtype == np.float32
    np.testing.assert_array_equal(mem["series"], old_mem["series"])
    np.testing.assert_array_equal(mem["bytes"], old_mem["bytes"])
    np.testing.assert_allclose(absolute_times(mem, "time"), old_mem["time"], rtol=0, atol=px / 1000)
    assert "error" in w._detail({"t0": 0, "t1": 1, "width": 10, "memory": "yes"}, [])[0]
    # a trace without memory data answers an empty memory frame
    bare = TraceWidget(flat_trace(50, with_memory=False))
    _, buffers = bare._detail({"t0": 0, "t1": 1e6, "width": 10, "memory": True}, [])
    assert len(buffers) == 2 and len(decode_frame(buffers[1])) == 0


def test_window_table_of_many_events_uses_the_cached_order_and_matches_sorting() -> None:
    big = flat_trace(120_000, threads=4, seed=5)
    w = TraceWidget(big)
    ev = big.events
    t0, t1 = 0.0, float(big.duration)
    for sort, descending in (("dur", True), ("start", False), ("self", True), ("name", False)):
        msg = {"mode": "window", "t0": t0, "t1": t1 * 0.8, "sort": sort, "descending": descending,
               "offset": 7, "limit": 40}
        reply, (buf,) = w._table(msg, [])
        inside = ev[(ev["start"] <= t1 * 0.8) & (ev["start"] + ev["dur"] >= t0)]
        assert reply["count"] == len(inside) >= 50_000  # the cached path
        key = (inside["name"].astype(str) if sort == "name" else inside[sort]).to_numpy()
        frame = pd.DataFrame({"key": key, "id": inside.index.to_numpy()})
        expected = frame.sort_values(["key", "id"], ascending=[not descending, True], kind="stable")
        assert decode_frame(buf)["id"].tolist() == expected["id"].tolist()[7:47]
        assert reply["total"] == float(inside["dur"].sum())


@pytest.mark.parametrize("bad", [
    {"t0": 1, "t1": 1, "width": 10}, {"t0": 0, "t1": 1, "width": 0}, {"t0": 0, "t1": 1, "width": 16385},
    {"t0": float("nan"), "t1": 1, "width": 10}, {"t0": "0", "t1": 1, "width": 10},
    {"t0": True, "t1": 2, "width": 10}, {"t0": 0, "t1": 1, "width": 2.5}, {"t1": 1, "width": 3}, [1, 2],
])
def test_bad_window_requests_get_an_error(trace: Trace, bad: Any) -> None:
    w = TraceWidget(trace)
    for handler in (w._detail, w._memory_detail):
        reply, buffers = handler(bad, [])
        assert set(reply) == {"error"} and buffers == []


def test_table_window_and_selection(trace: Trace) -> None:
    w = TraceWidget(trace)
    ev = trace.events
    t0, t1 = 200_000.0, 900_000.0
    reply, (buf,) = w._table({"mode": "window", "t0": t0, "t1": t1, "sort": "dur", "descending": True,
                              "offset": 5, "limit": 20}, [])
    inside = ev[(ev["start"] <= t1) & (ev["start"] + ev["dur"] >= t0)]
    expected = inside.sort_values(["dur"], ascending=False, kind="stable")
    expected = expected.assign(_id=expected.index).sort_values(["dur", "_id"], ascending=[False, True])
    assert reply == {"rows": 20, "count": len(inside), "total": float(inside["dur"].sum()),
                     "self": float(inside["self"].sum())}
    frame = decode_frame(buf)
    assert frame["id"].tolist() == expected.index[5:25].tolist()
    assert [frame.meta["names"][i] for i in frame["name"]] == expected["name"].astype(str)[5:25].tolist()
    w._selection = {"ids": [3, 1, 2]}
    reply, (buf,) = w._table({"mode": "selection", "sort": "name"}, [])
    names = ev.loc[[1, 2, 3], "name"].astype(str)
    assert decode_frame(buf)["id"].tolist() == names.sort_values(kind="stable").index.tolist()
    assert reply["count"] == 3
    for bad in ({"mode": "x"}, {"mode": "window", "t0": 1, "t1": 0}, {"mode": "selection", "limit": 1001},
                {"mode": "selection", "sort": "evil"}, {"mode": "selection", "descending": "yes"}):
        assert "error" in w._table(bad, [])[0]


def test_event_and_live_commands() -> None:
    rows = [dict(name="outer", category="cpu_op", process="p", thread="t", start=100, dur=50),
            dict(name="inner", category="kernel", process="p", thread="t", start=110, dur=20)]
    trace = trace_from_rows(rows, base=100)
    trace._args = lambda i: {"shape": np.array([2, 3]), "x": float("inf"), "o": object.__class__}
    trace.allocations = pd.DataFrame({
        "device": pd.Categorical(["GPU 0", "GPU 0", "GPU 0"]),
        "address": pd.array([16, None, 2**60], dtype="Int64"), "bytes": np.array([10, 300, 20]),
        "alloc_time": pd.array([0, 5, 20], dtype="Int64"),
        "free_time": pd.array([15, None, 40], dtype="Int64"),
        "owner": pd.array(["a", None, "c"], dtype="string"),
    })
    w = TraceWidget(trace)
    reply, buffers = w._event({"id": 1}, [])
    assert reply["name"] == "inner" and reply["depth"] == 1 and reply["start"] == 10.0
    assert reply["args"]["shape"] == [2, 3] and reply["args"]["x"] is None
    json.dumps(reply)
    assert reply["self"] == 20.0 and w._event({"id": 0}, [])[0]["self"] == 30.0
    assert "error" in w._event({"id": 99}, [])[0] and "error" in w._event({}, [])[0]
    reply, _ = w._live({"time": 10}, [])
    assert [r["bytes"] for r in reply["rows"]] == [300.0, 10.0] and reply["total"] == 310.0
    assert reply["rows"][1]["address"] == "0x10" and reply["rows"][0]["free_time"] is None
    assert [r["owner"] for r in w._live({"time": 30}, [])[0]["rows"]] == [None, "c"]
    # boundaries: live from alloc_time (inclusive) until free_time (exclusive)
    assert [r["bytes"] for r in w._live({"time": 15}, [])[0]["rows"]] == [300.0]
    assert [r["bytes"] for r in w._live({"time": 20}, [])[0]["rows"]] == [300.0, 20.0]
    assert "error" in w._live({"time": "now"}, [])[0]


def test_commands_go_through_the_anywidget_message_path(trace: Trace) -> None:
    w = TraceWidget(trace)
    sent: list[tuple[Any, Any]] = []
    w.send = lambda content, buffers=None: sent.append((content, buffers))  # type: ignore[method-assign]
    w._handle_custom_msg({"kind": "anywidget-command", "id": "abc", "name": "_detail",
                          "msg": {"t0": 0, "t1": 1e6, "width": 64}}, [])
    w._handle_custom_msg({"kind": "anywidget-command", "id": "def", "name": "_detail",
                          "msg": {"t0": "x"}}, [])
    assert sent[0][0]["id"] == "abc" and sent[0][0]["kind"] == "anywidget-command-response"
    assert decode_frame(sent[0][1][0]).meta["width"] == 64
    assert "error" in sent[1][0]["response"]


def test_step_traces_and_traces_without_events() -> None:
    rows = [dict(name=f"n{i}", category="MatMul", process="graph", thread="order", start=i, dur=1)
            for i in range(20)]
    step = TraceWidget(trace_from_rows(rows, time_unit="step"))
    assert step._info["time_unit"] == "step" and int(decode_frame(step._overview)["count"].sum()) == 20
    nodes = pd.DataFrame({
        "id": pd.array(["a", "b"], dtype="string"),
        "name": pd.array(["conv1", "<b>relu</b>"], dtype="string"),
        "op_type": pd.Categorical(["Conv2D", "Relu"]), "inputs": [[], ["a"]], "outputs": [["b"], []],
        "input_shapes": [[], [(1, 2)]], "output_shapes": [[(128, 224, 224, 3)], [(1, 2)]],
        "bytes": pd.array([1024, None], dtype="Int64"), "device": pd.Categorical(["GPU", "GPU"]),
        "order": pd.array([1, 0], dtype="Int64"),
    })
    trace = Trace("tf_node_shapes", "step", flat_trace(1).events.iloc[:0], pd.DataFrame(
        {"time": [], "device": [], "bytes": [], "kind": []}), empty_allocations(), nodes,
        pd.DataFrame(), Quality())
    w = TraceWidget(trace)
    assert w._info["event_count"] == 0 and "2 graph nodes" in w._info["message"]
    assert decode_frame(w._overview)["count"].sum() == 0 and w._tracks == []
    frame = decode_frame(w._nodes)
    # sent in execution order
    assert [frame.meta["names"][i] for i in frame["name"]] == ["<b>relu</b>", "conv1"]
    assert frame["order"].tolist() == [0, 1] and np.isnan(frame["bytes"][0]) and frame["bytes"][1] == 1024
    assert frame.meta["output_shapes"] == ["(1x2)", "(128x224x224x3)"]
    assert "error" not in w._detail({"t0": 0, "t1": 1, "width": 10}, [])[0]


def test_save_html_embeds_names_only_as_escaped_json(tmp_path: Path) -> None:
    rows = [dict(name=XSS[i % 3], category=XSS[(i + 1) % 3], process=XSS[2], thread="<i>t</i>",
                 start=i * 10, dur=8) for i in range(30)]
    trace = trace_from_rows(rows, metadata={"source": "<svg onload=alert(1)>.json"})
    w = TraceWidget(trace)
    w.highlight("dur > 0")
    out = w.save_html(tmp_path / "view.html")
    text = out.read_text(encoding="utf-8")
    for raw in [*XSS, "<i>t</i>", "<svg onload"]:
        assert raw not in text
    assert text.count("<script") == 2 and text.count("</script>") == 2
    payload = json.loads(re.search(r'<script type="application/json" id="pv-state">(.*?)</script>',
                                   text, re.S).group(1))
    traits = payload["traits"]
    assert traits["_info"]["static"] is True and "_overview" in payload["binary"]
    assert {e["key"] for e in traits["_info"]["legend"]} == set(XSS)
    labels = decode_frame(base64.b64decode(traits["_overview"])).meta["labels"]
    assert set(labels) == set(XSS)
    assert html.escape("<svg onload=alert(1)>.json") in text  # title escaped
    assert base64.b64decode(payload["esm"]) == widget_module._ESM_PATH.read_bytes()


def test_color_by_switch_recolours_the_overview(trace: Trace) -> None:
    w = TraceWidget(trace)
    assert w.color_by == "category" and w._info["color_by"] == "category"
    w.color_by = "phase"
    assert w._info["color_by"] == "phase" and [e["key"] for e in w._info["legend"]] == ["other"]
    assert set(decode_frame(w._overview)["color"].tolist()) == {0}
    w.color_by = "category"
    assert len(w._info["legend"]) == trace.events["category"].nunique()
    with pytest.raises(Exception, match="color_by"):
        w.color_by = "rainbow"


def _saved_traits(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="pv-state">(.*?)</script>', text, re.S)
    assert found is not None
    return json.loads(found.group(1))["traits"]


def test_save_html_opens_at_the_view_shown_now(trace: Trace, tmp_path: Path) -> None:
    w = TraceWidget(trace)
    full = w.visible
    a, b = full[0] + 1000.0, full[0] + 5000.0
    # 1. zoom_to, never displayed: the page opens at the request
    w.zoom_to(a, b)
    assert w.visible == (a, b)
    saved = _saved_traits(w.save_html(tmp_path / "one.html"))
    assert (saved["_view"]["start"], saved["_view"]["end"]) == (a, b)
    assert (saved["_zoom_request"]["start"], saved["_zoom_request"]["end"]) == (a, b)
    # 2. then the user zooms out to the whole trace in the browser (the reset button):
    # the earlier request must not win over it
    w._view = {"start": full[0], "end": full[1]}
    saved = _saved_traits(w.save_html(tmp_path / "two.html"))
    for key in ("_view", "_zoom_request"):
        assert (saved[key]["start"], saved[key]["end"]) == full
    # 3. a highlight zooms; the user then pans: the pan wins
    w.highlight(trace.events.iloc[[10]])
    w._view = {"start": a + 7.0, "end": b + 7.0}
    saved = _saved_traits(w.save_html(tmp_path / "three.html"))
    assert (saved["_zoom_request"]["start"], saved["_zoom_request"]["end"]) == (a + 7.0, b + 7.0)
    assert decode_frame(base64.b64decode(saved["_highlight"]))["id"].tolist() == [int(trace.events.index[10])]


def test_table_lists_the_selection_it_was_made_for(trace: Trace) -> None:
    """A click in the list changes `_selection`; pages asked for later still list the old range."""
    w = TraceWidget(trace)
    ev = trace.events
    t0, t1 = float(ev["start"].iloc[100]), float(ev["start"].iloc[400])
    rng = {"range": [t0, t1], "tracks": None}
    w._selection = rng
    first, _ = w._table({"mode": "selection", "selection": rng, "limit": 10}, [])
    w._selection = {"ids": [int(ev.index[150])]}  # the row clicked
    again, (buf,) = w._table({"mode": "selection", "selection": rng, "offset": 10, "limit": 10}, [])
    expected = int(((ev["start"] <= t1) & (ev["start"] + ev["dur"] >= t0)).sum())
    assert first["count"] == again["count"] == expected > 10
    assert decode_frame(buf)["id"].shape == (10,)
    plain, _ = w._table({"mode": "selection"}, [])
    assert plain["count"] == 1  # without "selection": the current _selection
    assert "error" in w._table({"mode": "selection", "selection": {"range": [0, "x"]}}, [])[0]


def test_tracks_name_threads_and_gpus_and_no_blank_group() -> None:
    rows = [dict(name="k", category="kernel", process=p, thread=t, start=i * 10, dur=5)
            for i, (p, t) in enumerate([("python (0)", "stream 7"), ("python (9428)", "thread 9428 (python)"),
                                        ('""', '""')])]
    labels = {"python (0)": "GPU 0", "python (9428)": "CPU"}
    trace = trace_from_rows(rows, metadata={"process_labels": labels})
    tracks = {t["process"]: t for t in TraceWidget(trace)._tracks}
    assert tracks["python (0)"]["group"] == "GPU 0" and tracks["python (0)"]["name"] == "stream 7"
    assert tracks["python (9428)"]["group"] == "python (9428)"
    assert tracks["python (9428)"]["name"] == "thread 9428 (python)"
    assert tracks['""']["group"] == "(global)" and tracks['""']["name"] == "(no thread)"
    assert tracks["python (0)"]["label"] == "python (0) / stream 7"  # the full name, for the tooltip
