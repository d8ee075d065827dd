"""charts: spec data within Altair's row limit, peaks kept, offline SVG rendering."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd
import pytest

import jupyter_profview as profview
from jupyter_profview import charts
from jupyter_profview.builder import build_events, make_trace
from jupyter_profview.model import PHASES, Quality, memory_frame


def chart_rows(chart: alt.TopLevelMixin) -> list[dict]:
    """The inline data rows of a chart's spec (raises MaxRowsError beyond 5000)."""
    spec = chart.to_dict()
    (rows,) = spec["datasets"].values()
    return rows


def trace_with_memory(n_per_device: int, devices: int = 2):
    rng = np.random.default_rng(0)
    q = Quality()
    events, _, base = build_events({
        "name": ["a"], "category": ["c"], "process": ["p"], "thread": ["t"],
        "start": [0], "dur": [10 * n_per_device],
    }, q)
    time, device, nbytes = [], [], []
    for d in range(devices):
        t = np.sort(rng.integers(0, 10 * n_per_device, n_per_device))
        b = np.cumsum(rng.integers(-1000, 1001, n_per_device)) + 10**9
        b[rng.integers(n_per_device)] += 5 * 10**8  # a single sharp peak
        time.append(t)
        device += [f"dev{d}"] * n_per_device
        nbytes.append(b)
    memory = memory_frame(np.concatenate(time), device, np.concatenate(nbytes), "measured")
    return make_trace("test", "ns", events, q, base=base, memory=memory)


def test_downsample_keeps_each_device_peak_first_and_last():
    trace = trace_with_memory(60_000, devices=3)
    mem = trace.memory
    small = charts.downsample_memory(mem, 4000)
    assert len(small) <= 4000
    for device, full in mem.groupby("device", observed=True):
        part = small[small["device"] == device]
        peak = full.loc[full["bytes"].idxmax()]
        assert part["bytes"].max() == peak["bytes"]
        assert peak["time"] in set(part.loc[part["bytes"] == peak["bytes"], "time"])
        assert part["bytes"].min() == full["bytes"].min()
        assert part.iloc[0]["time"] == full.iloc[0]["time"]
        assert part.iloc[-1]["time"] == full.iloc[-1]["time"]
        assert part["time"].is_monotonic_increasing
    # every kept row is a row of the original table
    merged = small.merge(mem, on=["time", "device", "bytes"], how="left", indicator=True)
    assert (merged["_merge"] == "both").all()


def test_small_memory_tables_are_kept_whole():
    trace = trace_with_memory(100)
    assert len(charts.downsample_memory(trace.memory, 4000)) == 200
    with pytest.raises(ValueError):
        charts.downsample_memory(trace.memory, 3)


def test_memory_chart_stays_under_altair_limit_with_peak():
    trace = trace_with_memory(50_000)
    rows = chart_rows(charts.memory_chart(trace))
    assert len(rows) <= 5000
    for device, full in trace.memory.groupby("device", observed=True):
        peak_mib = full["bytes"].max() / 2**20
        assert max(r["MiB"] for r in rows if r["device"] == device) == pytest.approx(peak_mib)
    with pytest.raises(ValueError):
        charts.memory_chart(trace, max_points=6000)


def test_memory_chart_of_tf_step_stats_seed():
    trace = profview.load(profview.example("tf_step_stats"))
    rows = chart_rows(charts.memory_chart(trace))
    assert 0 < len(rows) <= 5000
    for device, full in trace.memory.groupby("device", observed=True):
        chart_peak = max(r["MiB"] for r in rows if r["device"] == device)
        assert chart_peak == pytest.approx(full["bytes"].max() / 2**20)
        assert max(r["time"] for r in rows if r["device"] == device) == pytest.approx(
            full["time"].max() / 1e6)


def test_summary_chart_data_is_the_summary():
    trace = profview.load(profview.example("megengine_json"))
    table = profview.summary(trace)
    rows = chart_rows(charts.summary_chart(trace, n=3))
    expected = table.sort_values("self", ascending=False).head(3)
    assert [r["category"] for r in rows] == list(expected.index)
    assert [r["value"] for r in rows] == pytest.approx(list(expected["self"] / 1e6))
    flops = chart_rows(charts.summary_chart(trace, measure="flops", n=100))
    assert {r["category"] for r in flops} == set(table.index)
    with pytest.raises(ValueError, match="not a summary column"):
        charts.summary_chart(trace, measure="nope")


def test_phases_chart_data_is_the_phases_table():
    trace = profview.load(profview.example("megengine_json"))
    table = profview.phases(trace)
    rows = chart_rows(charts.phases_chart(trace))
    assert len(rows) == len(table) * (len(PHASES) + 1)
    for r in rows:
        assert r["time"] == pytest.approx(table.loc[r["process"], r["phase"]] / 1e6)


def test_step_traces_keep_step_units():
    trace = profview.load(profview.example("chainer_graph"))
    assert trace.time_unit == "step"
    spec = charts.memory_chart(trace).to_dict()
    assert spec["encoding"]["x"]["title"] == "time (step)"
    rows = chart_rows(charts.memory_chart(trace))
    assert max(r["time"] for r in rows) == trace.memory["time"].max()


def test_enable_offline_renders_svg_without_vega_embed():
    previous = alt.renderers.active
    try:
        charts.enable_offline()
        chart = charts.phases_chart(profview.load(profview.example("megengine_json")))
        bundle = chart._repr_mimebundle_()
        bundle = bundle[0] if isinstance(bundle, tuple) else bundle
        assert set(bundle) == {"image/svg+xml"}
        assert "<svg" in bundle["image/svg+xml"]
        with pytest.raises(ValueError):
            charts.enable_offline("html")
    finally:
        alt.renderers.enable(previous)
    svg = charts.to_svg(alt.Chart(pd.DataFrame({"x": [1, 2]})).mark_bar().encode(x="x"))
    assert svg.data.lstrip().startswith("<svg")
