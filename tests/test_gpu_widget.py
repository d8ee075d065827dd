"""Kernel side of the widget on GPU traces: launch <-> kernel arrows for a
selected event, ``w.selection_with_flows()``, and the per-column GPU
utilisation series (brute force over a fine grid)."""

from __future__ import annotations

import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jupyter_profview as profview
from jupyter_profview import analysis
from jupyter_profview.errors import ProfviewError
from jupyter_profview.widget import TraceWidget
from jupyter_profview.widget.counters import counter_series
from jupyter_profview.widget.legend import LEGEND_TOP, build_legend
from jupyter_profview.widget.memory_lod import MemoryIndex
from tests.format_helpers import ns, read_json

DATA = Path(__file__).parent / "data"
HTA = DATA / "hta"


def x(name: str, cat: str, pid: Any, tid: Any, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def launch_trace() -> Any:
    """Two launches; the first has an ac2g flow, the second (as in files without flows) none."""
    events = [
        x("aten::mm", "cpu_op", 1, 1, 0, 40),
        x("cudaLaunchKernel", "cuda_runtime", 1, 1, 2, 3, correlation=1),
        x("cudaLaunchKernel", "cuda_runtime", 1, 1, 10, 3, correlation=2),
        {"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 3, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 20, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        x("gemm_a", "kernel", 0, 7, 20, 5, correlation=1, stream=7),
        x("gemm_b", "kernel", 0, 7, 30, 5, correlation=2, stream=7),
        x("other", "cpu_op", 1, 1, 50, 5),
    ]
    return profview.load(json.dumps({"traceEvents": events}).encode())


def ids_by_name(trace: Any) -> dict[str, int]:
    return {str(n): int(i) for i, n in zip(trace.events.index, trace.events["name"], strict=True)
            if str(n) != "cudaLaunchKernel"}


def test_selected_kernel_shows_its_launch_arrow_with_or_without_a_flow_record() -> None:
    trace = launch_trace()
    w = TraceWidget(trace)
    ids = ids_by_name(trace)
    launches = dict(zip(trace.launches["kernel"], trace.launches["launch"].astype(int), strict=True))
    for kernel in ("gemm_a", "gemm_b"):
        reply, _ = w._event({"id": ids[kernel]}, [])
        arrows = [(f["source"], f["target"]) for f in reply["flows"]]
        assert arrows == [(launches[ids[kernel]], ids[kernel])]  # one arrow, not the flow and a duplicate
        # and from the launch's side, the same arrow
        back, _ = w._event({"id": launches[ids[kernel]]}, [])
        assert [(f["source"], f["target"]) for f in back["flows"]] == arrows
    reply, _ = w._event({"id": ids["gemm_b"]}, [])
    (arrow,) = reply["flows"]
    # times count from the first event (aten::mm at 0): the launch call ends at 13 µs, the kernel starts at 30
    assert arrow["target_time"] == 30_000 and arrow["source_time"] == 13_000
    assert arrow["source_track"] != arrow["target_track"]
    assert w._event({"id": ids["other"]}, [])[0]["flows"] == []


def test_selection_with_flows_adds_both_ends() -> None:
    trace = launch_trace()
    w = TraceWidget(trace)
    ids = ids_by_name(trace)
    w._selection = {"ids": [ids["gemm_a"], ids["gemm_b"]]}
    both = w.selection_with_flows()
    names = both["name"].astype(str).tolist()
    assert sorted(names) == ["cudaLaunchKernel", "cudaLaunchKernel", "gemm_a", "gemm_b"]
    assert both.loc[both["linked"], "name"].astype(str).tolist() == ["cudaLaunchKernel", "cudaLaunchKernel"]
    w._selection = {"ids": [ids["other"]]}
    assert w.selection_with_flows()["linked"].sum() == 0
    assert len(w.selected_launches()) == 0
    w._selection = {"ids": [ids["gemm_b"]]}
    (row,) = w.selected_launches().itertuples()
    assert (row.kernel, row.delay, row.cpu_op_name) == (ids["gemm_b"], 17_000, "aten::mm")


def test_linked_events_on_a_real_trace() -> None:
    trace = profview.load(HTA / "nccl_parser_config_nccl_data.json.gz")
    la = trace.launches
    kernels = la["kernel"].to_numpy()[:50]
    got = analysis.linked_events(trace, kernels)
    flows = trace.flows
    want = set(la["launch"].dropna().astype(int)[:50]) \
        | set(flows.loc[flows["target"].isin(kernels), "source"]) \
        | set(flows.loc[flows["source"].isin(kernels), "target"])
    assert set(got.tolist()) == want - set(kernels.tolist())


def grid_means(covered: np.ndarray, grid: np.ndarray, start: Any, end: Any) -> list[tuple[float, int]]:
    """Share of the grid points in each ``[start, end)`` that are covered, and how many points
    there are (counted with a running sum over the grid, one lookup per column)."""
    running = np.concatenate([[0], np.cumsum(covered)])
    lo = np.searchsorted(grid, np.asarray(start, np.float64), side="left")
    hi = np.searchsorted(grid, np.asarray(end, np.float64), side="left")
    return [((running[b] - running[a]) / (b - a), int(b - a)) for a, b in zip(lo, hi, strict=True)]


@pytest.mark.parametrize("columns", [1, 7, 300])
def test_utilisation_per_column_matches_a_fine_grid(columns: int) -> None:
    trace = profview.load(HTA / "critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz")
    la = trace.launches
    start = la["kernel_start"].to_numpy()
    end = start + la["kernel_dur"].to_numpy()
    t0, t1 = float(start.min() - 5_000), float(end.max() + 5_000)
    util = analysis.utilisation(trace, t0, t1, columns)
    assert len(util) == columns and util["gpu"].nunique() == 1
    # brute force: 1 ns resolution, busy where any activity covers the instant
    grid = np.arange(int(t0), int(t1))
    busy = np.zeros(len(grid), bool)
    for s, e in zip(start, end, strict=True):
        busy[(grid >= s) & (grid < e)] = True
    means = grid_means(busy, grid, util["start"], util["end"])
    for row, (mean, n) in zip(util.itertuples(), means, strict=True):
        assert row.busy == pytest.approx(mean, abs=2 / n)
    with pytest.raises(ProfviewError):
        analysis.utilisation(trace, t1, t0, 10)


# -- colours: device activity by type --------------------------------------------------------


def test_nccl_kernels_get_the_communication_colour() -> None:
    """On the real A100 + NCCL trace, NCCL kernels (Kineto files them as ``kernel`` like compute
    kernels) get the legend entry ``communication``, copies and sets ``memcpy`` / ``memset``; so
    does the CPU side of the collectives (torch's ``nccl:<op>`` ranges on both sides, its
    ``c10d::<op>_`` ops and ``record_param_comms``): communication has one colour everywhere.
    The events keep their raw category.  Counted from the JSON by category and name."""
    path = HTA / "nccl_parser_config_nccl_data.json.gz"
    raw = read_json(path)["traceEvents"]
    device = [e for e in raw if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    nccl = sorted(e["name"] for e in device if e["cat"] == "kernel" and e["name"].lower().startswith("nccl"))
    calls = sorted(e["name"] for e in raw if e.get("ph") == "X" and e.get("cat") != "kernel" and (
        e["name"].startswith(("nccl:", "c10d::")) or e["name"] == "record_param_comms"))
    want = {"communication": len(nccl) + len(calls),
            "kernel": sum(e["cat"] == "kernel" for e in device) - len(nccl),
            "memcpy": sum(e["cat"] == "gpu_memcpy" for e in device),
            "memset": sum(e["cat"] == "gpu_memset" for e in device)}
    assert len(nccl) == 21 and len(calls) == 90 and all(want.values())
    trace = profview.load(path)
    w = TraceWidget(trace)
    legend = w._data.legend
    assert legend.color_by == "category"
    keys = [e["key"] for e in legend.entries]
    assert {k: legend.entries[keys.index(k)]["count"] for k in want} == want
    assert "gpu_memcpy" not in keys and "gpu_memset" not in keys
    colours = [e["color"] for e in legend.entries]
    assert len(set(colours)) == len(colours)  # communication does not look like compute
    # exactly the NCCL kernels and the collective calls carry the communication colour code,
    # with their raw category kept
    comm = trace.events[legend.codes == keys.index("communication")]  # codes: one per event, in order
    assert sorted(comm["name"].astype(str)) == sorted(nccl + calls)
    assert set(comm["category"].astype(str)) == {"kernel", "cpu_op", "user_annotation", "gpu_user_annotation"}
    # colouring by phase does not look at the device types
    w.color_by = "phase"
    assert w._data.legend.color_by == "phase"
    assert w._data.legend.entries == build_legend(trace.events, "phase").entries


def test_device_types_keep_their_legend_entry_among_many_categories() -> None:
    """Device types are never folded into "other", however many (longer) categories there are."""
    events = [x(f"op{i}", f"cat{i}", 1, 1, i * 100, 90) for i in range(14)]
    events += [x("cudaLaunchKernel", "cuda_runtime", 1, 2, 0, 1, correlation=1),
               x("ncclDevKernel_AllReduce", "kernel", 0, 7, 5, 1, correlation=1, stream=7)]
    trace = profview.load(json.dumps({"traceEvents": events}).encode())
    legend = TraceWidget(trace)._data.legend
    keys = [e["key"] for e in legend.entries]
    assert "communication" in keys and keys[-1] == "other"
    assert len(keys) == LEGEND_TOP + 1


# -- the counters panel's series ---------------------------------------------------------------


def test_counter_series_are_the_traces_own_counters() -> None:
    """``ph: "C"`` records that are not memory, one series per (name, arg), sorted by time; the
    memory counters stay memory series.  Expected values from the JSON."""
    path = DATA / "chrome_counters_async.json"
    raw = read_json(path)["traceEvents"]
    base = min(ns(e["ts"]) for e in raw if e.get("ph") != "M" and "ts" in e)
    want: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for e in raw:
        if e.get("ph") != "C" or e.get("cat") == "memory":
            continue
        name = f"{e['name']} {e['id']}" if "id" in e else e["name"]
        for key, value in e["args"].items():
            if isinstance(value, (int, float, Decimal)) and not isinstance(value, bool):
                want[name if key == name else f"{name}: {key}"].append((ns(e["ts"]) - base, float(value)))
    assert set(want) == {"fps: value", "queue 2: depth"}
    trace = profview.load(path)
    got = {c["device"]: c for c in counter_series(trace)}
    assert set(got) == set(want)
    for label, points in want.items():
        c = got[label]
        assert (c["kind"], c["unit"]) == ("counter", "value")
        assert list(zip(c["time"].tolist(), c["values"].tolist(), strict=True)) == sorted(points)
    memory = {s.device for s in MemoryIndex(trace).series if s.unit == "bytes"}
    assert memory == {"GPU memory: allocated", "GPU memory: reserved"}


def test_counter_series_sorts_points_and_splits_args() -> None:
    """Points out of order in the file, two args of one counter, a memory counter beside it."""
    events = [x("frame", "cpu", 1, 1, 0, 50),
              {"ph": "C", "name": "temp", "pid": 1, "ts": 30, "args": {"cpu0": 3, "cpu1": 30}},
              {"ph": "C", "name": "temp", "pid": 1, "ts": 10, "args": {"cpu0": 1, "cpu1": 10}},
              {"ph": "C", "name": "temp", "pid": 1, "ts": 20, "args": {"cpu0": 2.5}},
              {"ph": "C", "name": "GPU memory", "cat": "memory", "pid": 1, "ts": 5, "args": {"allocated": 7}}]
    trace = profview.load(json.dumps({"traceEvents": events}).encode())
    got = {c["device"]: (c["time"].tolist(), c["values"].tolist()) for c in counter_series(trace)}
    assert got == {"temp: cpu0": ([10_000, 20_000, 30_000], [1.0, 2.5, 3.0]),
                   "temp: cpu1": ([10_000, 30_000], [10.0, 30.0])}


@pytest.mark.parametrize("columns", [1, 7, 300])
def test_counter_series_utilisation_matches_a_brute_force_grid(columns: int) -> None:
    """The widget's utilisation series: busy fraction per column against a 1 ns grid built from
    the JSON's device events, and the very numbers of ``analysis.utilisation``."""
    path = HTA / "critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz"
    raw = read_json(path)["traceEvents"]
    base = min(ns(e["ts"]) for e in raw if e.get("ph") not in ("M", None) and "ts" in e)
    device = [(ns(e["ts"]) - base, ns(e["ts"]) + ns(e["dur"]) - base) for e in raw
              if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    first, last = min(s for s, _ in device), max(e for _, e in device)
    trace = profview.load(path)
    (util,) = [c for c in counter_series(trace) if c["kind"] == "utilisation"]
    assert (util["device"], util["unit"]) == (f"{trace.launches['gpu'].iloc[0]} utilisation", "fraction")
    assert util["time"].tolist() == [first, last]
    t0, t1 = first - 5_000, last + 5_000
    edges = np.linspace(t0, t1, columns + 1)
    busy = util["busy"](edges)
    grid = np.arange(t0, t1)
    covered = np.zeros(len(grid), bool)
    for s, e in device:
        covered[(grid >= s) & (grid < e)] = True
    for k, (mean, n) in enumerate(grid_means(covered, grid, edges[:-1], edges[1:])):
        assert busy[k] == pytest.approx(mean, abs=2 / n)
    assert busy.tolist() == analysis.utilisation(trace, t0, t1, columns)["busy"].tolist()
    # a column of width 0 (a zero-width window) is idle, not NaN
    assert util["busy"](np.array([first + 1.0, first + 1.0])).tolist() == [0.0]


def test_counter_series_queue_lengths_from_the_json() -> None:
    """Queue-length series per stream: +1 at each launch call, -1 when its kernel starts, counted
    from the JSON's runtime and device events by correlation."""
    path = HTA / "critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz"
    raw = read_json(path)["traceEvents"]
    base = min(ns(e["ts"]) for e in raw if e.get("ph") not in ("M", None) and "ts" in e)
    calls = {}
    for e in raw:
        if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver"):
            calls.setdefault(e["args"]["correlation"], e)
    changes: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for e in raw:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") \
                and e["args"].get("correlation") in calls:
            call = calls[e["args"]["correlation"]]
            changes[int(e["args"]["stream"])] += [(ns(call["ts"]) - base, 1), (ns(e["ts"]) - base, -1)]
    assert len(changes) > 1
    trace = profview.load(path)
    got = {c["device"]: c for c in counter_series(trace) if c["kind"] == "queue"}
    gpu = str(trace.launches["gpu"].iloc[0])
    assert set(got) == {f"{gpu} / stream {s} queue" for s in changes}
    for stream, steps in changes.items():
        steps.sort()  # at equal times the kernel start (-1) first
        times = sorted({t for t, _ in steps})
        value, level, i = [], 0, 0
        for t in times:
            while i < len(steps) and steps[i][0] == t:
                level += steps[i][1]
                i += 1
            value.append(level)
        c = got[f"{gpu} / stream {stream} queue"]
        assert c["unit"] == "count"
        assert c["time"].tolist() == times and c["values"].tolist() == value
