"""analysis.summary / phases / top: against the seed files and brute-force definitions."""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jupyter_profview as profview
from jupyter_profview import analysis
from jupyter_profview.builder import build_events, make_trace
from jupyter_profview.errors import ProfviewError
from jupyter_profview.model import PHASES, Quality


def synthetic(rows: list[tuple], unit: str = "ns"):
    """A Trace from (name, category, process, thread, start, dur[, phase]) rows."""
    cols: dict = {k: [r[i] for r in rows] for i, k in
                  enumerate(["name", "category", "process", "thread", "start", "dur"])}
    if rows and len(rows[0]) > 6:
        cols["phase"] = [r[6] for r in rows]
    q = Quality()
    events, _, base = build_events(cols, q)
    return make_trace("test", unit, events, q, base=base)


# ---------------------------------------------------------------------------
# Seed 004 (MegEngine): numbers straight from the JSON
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def megengine():
    path = profview.example("megengine_json")
    raw = json.loads(path.read_text())
    return profview.load(path), raw


def test_megengine_device_totals_match_the_json(megengine):
    trace, raw = megengine
    ops = raw["graph_exec"]["operator"]
    seconds: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    flops: dict[str, float] = defaultdict(float)
    flop_seconds: dict[str, float] = defaultdict(float)
    mem: dict[str, float] = defaultdict(float)
    for opr_id, per_node in raw["profiler"]["device"].items():
        (timing,) = per_node.values()  # one comp node in this file
        kind = ops[opr_id]["type"]
        dt = timing["end"] - timing["start"]
        seconds[kind] += dt
        count[kind] += 1
        foot = raw["profiler"]["opr_footprint"][opr_id]
        mem[kind] += foot["memory"]
        if foot["computation"] is not None:
            flops[kind] += foot["computation"]
            flop_seconds[kind] += dt
    (device,) = {node for per in raw["profiler"]["device"].values() for node in per}

    gpu = trace.events[trace.events["process"] == device]
    table = analysis.summary(trace, by="category", events=gpu)
    assert set(table.index) == set(seconds)
    for kind, secs in seconds.items():
        row = table.loc[kind]
        assert row["count"] == count[kind]
        # the loader rounds each start and end to the nearest ns: at most 1 ns per event
        assert abs(row["total"] - secs * 1e9) <= count[kind], kind
        rounding = count[kind] / (secs * 1e9)  # relative error the ns rounding allows
        assert row["bytes"] == mem[kind]
        assert row["bandwidth"] == pytest.approx(mem[kind] / secs, rel=rounding)
        if kind in flops:
            assert row["flops"] == flops[kind]
            assert row["flop_rate"] == pytest.approx(flops[kind] / flop_seconds[kind], rel=rounding)
        else:
            assert np.isnan(row["flops"]) and np.isnan(row["flop_rate"])
    assert list(table["total"]) == sorted(table["total"], reverse=True)
    # The device runs one operator at a time: shares are each type's part of the device time.
    total = sum(seconds.values())
    for kind, secs in seconds.items():
        assert table.loc[kind, "share"] == pytest.approx(100 * secs / total, abs=1e-4)


@pytest.mark.parametrize("by", ["category", "name", "phase", "process", "track", "op_type"])
def test_megengine_self_le_total_and_shares_sum_to_100(megengine, by):
    trace, _ = megengine
    table = analysis.summary(trace, by=by)
    assert (table["self"] <= table["total"]).all()
    assert table["share"].sum() == pytest.approx(100.0, abs=1e-7)  # percent
    assert table["count"].sum() == len(trace.events)
    assert table["mean"].to_numpy() == pytest.approx((table["total"] / table["count"]).to_numpy())


def test_megengine_phases_cover_device_span(megengine):
    trace, raw = megengine
    table = analysis.phases(trace)
    assert set(table.index) == {"host", "gpu0:0"}
    for process, row in table.iterrows():
        ev = trace.events[trace.events["process"] == process]
        assert row["span"] == (ev["start"] + ev["dur"]).max() - ev["start"].min()
        assert row["idle"] + row["busy"] == row["span"]
        # one track per device, no nesting: phases partition the busy time
        assert row[list(PHASES)].sum() == row["busy"] == ev["dur"].sum()


# ---------------------------------------------------------------------------
# Definitions on small hand-made traces
# ---------------------------------------------------------------------------

def test_nested_same_name_counts_total_twice_self_once():
    t = synthetic([
        ("recurse", "py", "p", "t", 0, 100),
        ("recurse", "py", "p", "t", 10, 50),
        ("leaf", "py", "p", "t", 20, 10),
    ])
    table = analysis.summary(t, by="name")
    assert table.loc["recurse", "total"] == 150      # 100 + 50: nested event counted in both
    assert table.loc["recurse", "self"] == 90        # (100 - 50) + (50 - 10)
    assert table.loc["leaf", "self"] == 10
    assert table["self"].sum() == 100                # busy time: the top-level slice
    assert table.loc["recurse", "share"] == pytest.approx(90.0)  # percent


def test_rates_need_a_clock_and_missing_columns_are_absent():
    t = synthetic([("a", "x", "p", "t", 0, 10)], unit="step")
    table = analysis.summary(t)
    assert "flops" not in table and "bandwidth" not in table
    t.events["flops"] = pd.array([100], dtype="Int64")
    table = analysis.summary(t)
    assert table.loc["x", "flops"] == 100 and "flop_rate" not in table


def test_phases_attribute_time_to_the_innermost_slice():
    # A PyTorch-like step: a top-level "other" slice enclosing forward, backward and optimizer work,
    # and a communication kernel on a second stream of the same device overlapping the backward.
    t = synthetic([
        ("ProfilerStep#1", "user", "cpu", "main", 0, 100, "other"),
        ("fwd", "op", "cpu", "main", 10, 20, "forward"),
        ("bwd", "op", "cpu", "main", 40, 30, "backward"),
        ("opt", "op", "cpu", "main", 80, 15, "optimizer"),
        ("allreduce", "k", "gpu", "s1", 0, 50, "communication"),
        ("gemm", "k", "gpu", "s2", 30, 40, "forward"),
        ("gemm", "k", "gpu", "s2", 120, 10, "forward"),
    ])
    table = analysis.phases(t)
    cpu = table.loc["cpu"]
    assert (cpu["forward"], cpu["backward"], cpu["optimizer"], cpu["other"]) == (20, 30, 15, 35)
    assert (cpu["busy"], cpu["idle"], cpu["span"]) == (100, 0, 100)
    gpu = table.loc["gpu"]
    assert (gpu["communication"], gpu["forward"]) == (50, 50)
    # union over streams: [0, 70) and [120, 130) busy; the overlap [30, 50) counts once
    assert (gpu["busy"], gpu["span"], gpu["idle"]) == (80, 130, 50)


def test_top_and_bad_columns():
    t = synthetic([(f"e{i}", "c", "p", "t", 10 * i, i + 1) for i in range(8)])
    top = analysis.top(t, n=3, by="dur")
    assert list(top["name"]) == ["e7", "e6", "e5"]
    assert list(top.index) == list(t.events.sort_values("dur", ascending=False).index[:3])
    assert len(analysis.top(t, 100)) == 8
    with pytest.raises(ProfviewError, match="no column 'nope'"):
        analysis.summary(t, by="nope")
    with pytest.raises(ProfviewError, match="not numeric"):
        analysis.top(t, by="name")


def test_empty_trace():
    t = synthetic([])
    assert analysis.summary(t).empty
    assert analysis.phases(t).empty
    assert analysis.top(t).empty


# ---------------------------------------------------------------------------
# Property: summary/phases against brute force over a unit time grid
# ---------------------------------------------------------------------------

@st.composite
def nested_rows(draw):
    """Random properly nested slices on up to 2 devices x 2 threads."""
    rows = []
    for process in ("d0", "d1")[: draw(st.integers(1, 2))]:
        for thread in ("t0", "t1")[: draw(st.integers(1, 2))]:
            def fill(lo, hi, depth, process=process, thread=thread):
                t = lo
                while t < hi and depth < 3 and draw(st.booleans()):
                    s = draw(st.integers(t, hi))
                    e = draw(st.integers(s, hi))
                    rows.append((draw(st.sampled_from("abc")), draw(st.sampled_from("xy")), process,
                                 thread, s, e - s, draw(st.sampled_from(PHASES))))
                    fill(s, e, depth + 1, process, thread)
                    t = e + 1
            fill(0, 40, 0)
    return rows


def innermost_phase_grid(events: pd.DataFrame, horizon: int) -> dict:
    """process -> phase -> boolean array over unit time steps (innermost slice wins per track)."""
    out: dict = defaultdict(lambda: defaultdict(lambda: np.zeros(horizon, bool)))
    for (process, _track), ev in events.groupby(["process", "track"], observed=True):
        best_depth = np.full(horizon, -1)
        phase = np.empty(horizon, object)
        for _, e in ev.iterrows():
            span = slice(e["start"], e["start"] + e["dur"])
            deeper = best_depth[span] < e["depth"]
            best_depth[span][deeper] = e["depth"]
            phase[span][deeper] = e["phase"]
        for t in np.flatnonzero(best_depth >= 0):
            out[process][phase[t]][t] = True
    return out


@settings(max_examples=60, deadline=None)
@given(nested_rows())
def test_property_summary_and_phases(rows):
    t = synthetic(rows)
    ev = t.events
    if len(ev) == 0:
        return
    for by in ("name", "category", "phase"):
        table = analysis.summary(t, by=by)
        expected_total = ev.groupby(by, observed=True)["dur"].sum()
        assert (table["total"] == expected_total.reindex(table.index)).all()
        assert (table["self"] <= table["total"]).all()
        if ev["dur"].sum() > 0:
            assert table["share"].sum() == pytest.approx(100.0)
            assert table["self"].sum() == ev.loc[ev["depth"] == 0, "dur"].sum()
    horizon = int((ev["start"] + ev["dur"]).max()) + 1
    grid = innermost_phase_grid(ev, horizon)
    table = analysis.phases(t)
    for process, row in table.iterrows():
        busy = np.zeros(horizon, bool)
        for phase in PHASES:
            mask = grid[process][phase]
            busy |= mask
            assert row[phase] == mask.sum(), (process, phase)
        assert row["busy"] == busy.sum()
        dev = ev[ev["process"] == process]
        assert row["span"] == (dev["start"] + dev["dur"]).max() - dev["start"].min()
        assert row["idle"] == row["span"] - row["busy"]


@pytest.mark.parametrize("name", ["torch_overlap.json.gz", "torch_selftime.json.gz"])
def test_self_intervals_follow_the_self_column_on_with_stack_traces(name):
    """On a ``with_stack`` trace (Python frames partly overlapping the ``record_function``
    ranges), each slice's self intervals add up to its ``self``, the intervals of the thread
    are disjoint, and the phases of the one-thread process add up to its busy time: the union
    of the file's own intervals (computed here from the JSON, µs to ns)."""
    import gzip
    from pathlib import Path

    from jupyter_profview.derived.self_time import self_intervals

    path = Path(__file__).parent / "data" / name
    raw = json.loads(gzip.decompress(path.read_bytes()))
    spans = sorted((round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000))
                   for e in raw["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "Trace")
    union, reach = 0, None
    for s, e in spans:
        if reach is None or s > reach:
            union += e - s
            reach = e
        elif e > reach:
            union += e - reach
            reach = e
    trace = profview.load(path)
    ev = trace.events[(trace.events["process"] != "Spans") & (trace.events["kind"] == "slice")]
    assert trace.quality.overlaps > 0 and ev["thread"].astype(str).nunique() == 1
    cut = self_intervals(ev).sort_values("start")
    assert (cut["start"].to_numpy()[1:] >= cut["end"].to_numpy()[:-1]).all()  # disjoint
    assert abs(int((cut["end"] - cut["start"]).sum()) - union) <= len(spans)  # ns rounding
    assert int((cut["end"] - cut["start"]).sum()) == int(ev["self"].sum())
    phases = analysis.phases(trace).loc["python"]
    assert int(phases[list(PHASES)].sum()) == int(phases["busy"]) == int(ev["self"].sum())
