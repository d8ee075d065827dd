"""Kernel side of the widget on GPU traces: launch <-> kernel arrows for a
selected event, ``w.selection_with_flows()``, and the per-column GPU
utilisation series (brute force over a fine grid)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jupyter_profview as profview
from jupyter_profview import analysis
from jupyter_profview.errors import ProfviewError
from jupyter_profview.widget import TraceWidget

HTA = Path(__file__).parent / "data" / "hta"


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
    for row in util.itertuples():
        inside = (grid >= row.start) & (grid < row.end)
        assert row.busy == pytest.approx(busy[inside].mean(), abs=2 / inside.sum())
    with pytest.raises(ProfviewError):
        analysis.utilisation(trace, t1, t0, 10)
