"""The icicle, kernel side, driven as the front end drives it: the frame against
``attribute(...)``, the measure and node-kind switches, a pick, a range and clearing."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import jupyter_profview as profview
from jupyter_profview.analysis import attribute
from jupyter_profview.widget.codec import decode_frame
from jupyter_profview.widget.icicle import layout

NCCL = Path(__file__).parent / "data" / "hta" / "nccl_parser_config_nccl_data.json.gz"


def test_icicle_frame_switches_pick_and_range() -> None:
    trace = profview.load(NCCL)
    w = profview.show(trace, icicle="annotation")
    tree = attribute(trace, "annotation")
    f = decode_frame(w._icicle)
    assert f.meta["by"] == "annotation" and f.meta["measure"] == "gpu"
    assert np.array_equal(f["width"], tree["gpu_total"].to_numpy(np.float64))
    assert f.meta["total"] == float(trace.launches["kernel_dur"].sum())  # the roots add up
    # children sit inside their parent, side by side
    x0 = f["x0"]
    for r in np.flatnonzero(f["parent"] >= 0).tolist():
        p = int(f["parent"][r])
        assert x0[p] <= x0[r] and x0[r] + f["width"][r] <= x0[p] + f["width"][p] + 1e-6
    w.icicle_measure = "cpu"  # what the switch sets: the same tree, sized by CPU time
    f = decode_frame(w._icicle)
    assert np.array_equal(f["width"], tree["cpu_total"].to_numpy(np.float64))
    assert np.array_equal(f["x0"], layout(tree, "cpu"))
    w.icicle_by = "op"
    assert len(decode_frame(w._icicle)) == len(attribute(trace, "op"))
    w.icicle_by = "annotation"
    w.icicle_measure = "gpu"
    step = int(tree.index[tree["name"] == "ProfilerStep#5"][0])
    w._icicle_pick = {"node": step, "token": 1}
    assert sorted(w.selection.index) == sorted(w._attribution.events_under(step).tolist())
    assert int(w.selection.index.isin(trace.launches["kernel"]).sum()) == int(tree.loc[step, "kernels"])
    half = trace.duration / 2
    w._selection = {"range": [0, half], "tracks": None}
    windowed = attribute(trace, "annotation", window=(0, half))
    assert decode_frame(w._icicle).meta["window"] == [0, half] and len(w.icicle) == len(windowed)
    w._selection = {}
    assert decode_frame(w._icicle).meta["window"] is None and len(w.icicle) == len(tree)
    w.show_icicle("")
    assert w._icicle == b"" and w.icicle is None


def test_module_icicle_on_a_trace_without_module_frames() -> None:
    """The A100 trace was recorded without `with_modules`: the module icicle (and the stack one)
    is the one `(unattributed)` node holding all the device time, not an error."""
    trace = profview.load(NCCL)
    w = profview.show(trace, icicle="module")
    f = decode_frame(w._icicle)
    assert len(f) == 1 and f.meta["total"] == float(trace.launches["kernel_dur"].sum())
    assert w.icicle["name"].tolist() == ["(unattributed)"]
    w.icicle_by = "stack"
    assert w.icicle["name"].tolist() == ["(unattributed)"]


def test_the_widget_shows_torchs_self_cpu_for_ranges() -> None:
    """The self time the browser shows (the event details and the table's selection total) is
    torch's `key_averages()` Self CPU for a `record_function` range on a with_stack trace
    (torch's own number, saved by tests/data/make_torch_selftime.py; µs with 3 decimals)."""
    import json

    from jupyter_profview.widget import rpc

    data = Path(__file__).parent / "data"
    torch_self = json.loads((data / "torch_selftime_key_averages.json").read_text())["key_averages"]
    trace = profview.load(data / "torch_selftime.json.gz")
    w = profview.show(trace)
    ids = trace.events.index[trace.events["name"] == "## backward ##"].tolist()
    shown = [rpc.event(w._data, {"id": i})[0]["self"] for i in ids]
    assert len(shown) == torch_self["## backward ##"]["count"] == 3
    assert abs(sum(shown) - torch_self["## backward ##"]["self_cpu_time_total"] * 1000) <= 3 * 8
    reply, _ = rpc.table(w._data, {"mode": "selection"}, w._data.positions(ids))
    assert reply["self"] == sum(shown)
