"""The critical path (``jupyter_profview.analysis.critical_path``).

Expected values come from two places, never from the code under test:
* HTA 0.5.0's own answers on the shared real GPU traces, computed in a separate environment by
  ``scripts/crosscheck/hta_critical_path.py`` and stored in ``tests/data/hta_reference/``;
* small hand-written Kineto traces whose path is worked out in the comments from the definition.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jupyter_profview as profview
from jupyter_profview.analysis import critical_path, critical_path_steps
from jupyter_profview.errors import ProfviewError
from tests.format_helpers import ns, read_json

DATA = Path(__file__).parent / "data"
HTA = DATA / "hta"
REFERENCE = json.loads(gzip.decompress((DATA / "hta_reference" / "critical_path.json.gz").read_bytes()))
CASES = [r for r in REFERENCE if "error" not in r]
US = 1000
HTA_BOUND = {"cpu_bound": "cpu", "gpu_compute_bound": "kernel", "gpu_communication_bound": "communication",
             "gpu_kernel_launch_overhead": "launch", "gpu_kernel_kernel_overhead": "kernel_gap"}


def _load(name: str) -> Any:
    return profview.load(HTA / name)


def test_reference_covers_every_gpu_trace_with_a_step() -> None:
    # HTA answered on 7 (file, step) cases of 6 files; it fails on 3 files (TypeError inside HTA)
    assert len(CASES) == 8 and len({r["file"] for r in CASES}) == 7
    assert {r["file"] for r in REFERENCE if "error" in r} == {
        "cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
        "cupti_profiler_benchmark_result_924719_1679055439_trace.json.gz",
        "distributed_info_unavailable_distributed_info_not_found.json.gz"}


@pytest.mark.parametrize("case", CASES, ids=[f"{r['file'][:32]}-{r['instance']}" for r in CASES])
def test_matches_hta_length_events_and_breakdown(case: dict[str, Any]) -> None:
    trace = _load(case["file"])
    cp = critical_path(trace, annotation=case["annotation"], instance=case["instance"] or 0)
    n_edges = int(cp.edges["on_path"].sum())
    # HTA keeps whole µs per timestamp: at most 1 µs per edge of the path apart (equal on these files)
    assert abs(cp.length / US - case["length_us"]) <= max(n_edges, 1) * 1.0
    assert abs(cp.length / US - case["length_us"]) < 0.001  # measured: equal to the ns on every file
    # the events on the path: (name, start from the path's first event, µs), HTA within its 1 µs
    ours = sorted(zip(cp.events["name"].astype(str), (cp.events["start"] - cp.events["start"].min()) // US,
                      cp.events["on_path"], strict=True))
    theirs = sorted((e[0], e[1] - min(x[1] for x in case["events"])) for e in case["events"])
    unmatched = list(theirs)
    extra = []
    for name, t, spent in ours:
        hit = next((i for i, (n, u) in enumerate(unmatched) if n == name and abs(u - t) <= 1), None)
        if hit is None:
            extra.append((name, t, spent))
        else:
            unmatched.pop(hit)
    assert unmatched == []
    # an equally long path may end on a zero-weight sync edge HTA did not take (its tie break)
    assert all(spent == 0 for _, _, spent in extra), extra
    hta = {HTA_BOUND[k]: v for k, v in case["breakdown_us"].items() if k}
    got = dict(zip(cp.breakdown["type"], cp.breakdown["time"] / US, strict=True))
    for key, value in got.items():
        assert abs(value - hta.get(key, 0.0)) < 0.001, (key, value, hta)


@pytest.mark.parametrize("name", sorted(p.name for p in HTA.glob("*.json.gz")))
def test_every_shared_trace_gives_a_path_or_a_profview_error(name: str) -> None:
    trace = _load(name)
    for annotation in ("ProfilerStep", None):
        try:
            cp = critical_path(trace, annotation=annotation)
        except ProfviewError as exc:
            assert annotation is not None and "ProfilerStep" in str(exc)
            continue
        _check_path_invariants(cp)


def _check_path_invariants(cp: Any) -> None:
    path = cp.path
    assert int(path["weight"].sum()) == cp.length == int(cp.breakdown["time"].sum())
    assert int(cp.events["on_path"].sum()) == int(path.loc[path["event"] >= 0, "weight"].sum())
    if len(path):
        # one chain: each segment starts where the previous ended
        heads = list(zip(path["src"], path["src_at"].astype(str), strict=True))[1:]
        tails = list(zip(path["dst"], path["dst_at"].astype(str), strict=True))[:-1]
        assert heads == tails
        assert np.isclose(cp.breakdown["share"].sum(), 100.0)
    assert (cp.edges["weight"] >= 0).all()


# ---------------------------------------------------------------------------------------------
# Hand-written traces, one per edge type
# ---------------------------------------------------------------------------------------------

def x(name: str, cat: str, pid: Any, tid: Any, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def kineto(events: list[dict[str, Any]]) -> Any:
    return profview.load(json.dumps({"traceEvents": events}).encode())


def step(dur: float, *events: dict[str, Any]) -> list[dict[str, Any]]:
    return [x("ProfilerStep#7", "user_annotation", 1, 1, 0, dur), *events]


def test_sync_waiting_on_a_long_kernel_puts_the_kernel_on_the_path() -> None:
    # aten::mm [0, 100] launches gemm at 10 (call 10-20); gemm runs 30-10030 on stream 7;
    # cudaDeviceSynchronize 120-10040 waits for it (Context Sync).  Path: mm.start -(10 cpu)->
    # launch.start -(20 launch)-> gemm.start -(10000 kernel)-> gemm.end -(0 sync)-> sync.end.
    trace = kineto(step(
        10100,
        x("aten::mm", "cpu_op", 1, 1, 0, 100),
        x("cudaLaunchKernel", "cuda_runtime", 1, 1, 10, 10, correlation=1),
        x("gemm", "kernel", 0, 7, 30, 10000, correlation=1, stream=7, device=0),
        x("cudaDeviceSynchronize", "cuda_runtime", 1, 1, 120, 9920, correlation=2),
        x("Context Sync", "cuda_sync", 0, -1, 121, 9918, correlation=2, stream=-1, device=0,
          cuda_sync_kind="Context Sync"),
    ))
    cp = critical_path(trace)
    assert cp.length == (10 + 20 + 10000) * US
    got = dict(zip(cp.breakdown["type"], cp.breakdown["time"], strict=True))
    assert got == {"cpu": 10 * US, "kernel": 10000 * US, "communication": 0, "launch": 20 * US,
                   "kernel_gap": 0, "sync": 0}
    assert list(cp.path["type"].astype(str)) == ["operator", "launch", "operator", "sync"]
    assert list(cp.events["name"].astype(str)) == ["aten::mm", "cudaLaunchKernel", "gemm",
                                                  "cudaDeviceSynchronize"]
    assert list(cp.events["on_path"]) == [10 * US, 0, 10000 * US, 0]
    _check_path_invariants(cp)


def test_without_the_sync_event_the_wait_is_cpu_time_that_weighs_nothing() -> None:
    # the same step without Kineto's cuda_sync record: nothing ties the kernel to the wait, the
    # blocking call's exit edge weighs 0, so the path is the kernel's chain: 10 + 20 + 10000.
    trace = kineto(step(
        10100,
        x("aten::mm", "cpu_op", 1, 1, 0, 100),
        x("cudaLaunchKernel", "cuda_runtime", 1, 1, 10, 10, correlation=1),
        x("gemm", "kernel", 0, 7, 30, 10000, correlation=1, stream=7, device=0),
        x("cudaDeviceSynchronize", "cuda_runtime", 1, 1, 120, 9920, correlation=2),
    ))
    cp = critical_path(trace)
    assert cp.length == 10030 * US
    assert list(cp.path["type"].astype(str)) == ["operator", "launch", "operator"]


def test_cpu_bound_step() -> None:
    # three top-level ops of 300 µs each launch a 1 µs kernel at their start: the GPU idles.  The
    # gaps between top-level ops (dependency edges) weigh 0, so the path is the longest op chain
    # reachable: op1 start ... op3 end = 3 * 300 µs of op time (the 50 µs gaps are not on it).
    events = []
    for i in range(3):
        t0 = i * 350
        events += [x(f"op{i}", "cpu_op", 1, 1, t0, 300),
                   x("cudaLaunchKernel", "cuda_runtime", 1, 1, t0 + 1, 5, correlation=i + 1),
                   x("k", "kernel", 0, 7, t0 + 10, 1, correlation=i + 1, stream=7, device=0)]
    cp = critical_path(kineto(step(1000, *events)))
    assert cp.length == 900 * US
    got = dict(zip(cp.breakdown["type"], cp.breakdown["time"], strict=True))
    assert got["cpu"] == 900 * US and got["kernel"] == 0
    assert list(cp.path["type"].astype(str)).count("dependency") == 2


def test_launch_bound_step_of_tiny_kernels() -> None:
    # one op [0, 50] launches 5 kernels back to back (calls of 10 µs); kernel i starts 8 µs after
    # its call starts and ends before the next call: the stream is empty at every launch, so 5
    # launch edges.  The last kernel runs 48-53, past the op's end.  Path: op.start -(40 cpu: the
    # op's time up to the last call)-> launch5.start -(8 launch)-> k5.start -(5 kernel)-> k5.end.
    events = [x("op", "cpu_op", 1, 1, 0, 50)]
    for i in range(5):
        events += [x("cudaLaunchKernel", "cuda_runtime", 1, 1, 10 * i, 10, correlation=i + 1),
                   x("tiny", "kernel", 0, 7, 10 * i + 8, 5 if i == 4 else 1, correlation=i + 1, stream=7,
                     device=0)]
    cp = critical_path(kineto(step(60, *events)))
    assert cp.length == 53 * US
    assert (cp.edges["type"].astype(str) == "launch").sum() == 5   # every kernel hangs off its launch
    got = dict(zip(cp.breakdown["type"], cp.breakdown["time"], strict=True))
    assert got == {"cpu": 40 * US, "kernel": 5 * US, "communication": 0, "launch": 8 * US,
                   "kernel_gap": 0, "sync": 0}
    assert cp.unlinked == 0


def test_a_kernel_queued_behind_a_later_launch_at_its_start_gets_no_edge() -> None:
    # HTA's rule: a launch edge needs the queue empty at the launch AND when the kernel starts.
    # Kernel i starts 12 µs after its call, 2 µs after the next call: k1 has no launch edge (a
    # later launch is queued when it starts) and no kernel before it -> unlinked; k2..k5 hang off
    # the previous kernel, which hangs off nothing.  The path stays the op's 50 µs.
    events = [x("op", "cpu_op", 1, 1, 0, 50)]
    for i in range(5):
        events += [x("cudaLaunchKernel", "cuda_runtime", 1, 1, 10 * i, 10, correlation=i + 1),
                   x("tiny", "kernel", 0, 7, 10 * i + 12, 1, correlation=i + 1, stream=7, device=0)]
    cp = critical_path(kineto(step(60, *events)))
    assert cp.unlinked == 1 and cp.length == 50 * US
    assert (cp.edges["type"].astype(str) == "kernel").sum() == 4


def test_queued_kernels_hang_off_the_previous_kernel() -> None:
    # launches at 0 and 2 (1 µs calls); k1 runs 1.5-101.5 (it started before the second launch:
    # launch edge); k2 is queued behind it and runs 103.5-203.5: its edge is the 2 µs gap from
    # k1's end.  Path: op.start -(0)-> launch1.start -(1.5 launch)-> k1 -(100)-> gap 2 -> k2 (100).
    events = [x("op", "cpu_op", 1, 1, 0, 10),
              x("cudaLaunchKernel", "cuda_runtime", 1, 1, 0, 1, correlation=1),
              x("cudaLaunchKernel", "cuda_runtime", 1, 1, 2, 1, correlation=2),
              x("k1", "kernel", 0, 7, 1.5, 100, correlation=1, stream=7, device=0),
              x("k2", "kernel", 0, 7, 103.5, 100, correlation=2, stream=7, device=0)]
    cp = critical_path(kineto(step(300, *events)))
    into = cp.edges[cp.edges["dst_at"] == "start"].set_index("dst")["type"].astype(str)
    ev = cp.events.set_index("name")["event"]
    assert into[ev["k1"]] == "launch" and into[ev["k2"]] == "kernel"
    assert cp.length == 203_500
    got = dict(zip(cp.breakdown["type"], cp.breakdown["time"], strict=True))
    assert got["kernel_gap"] == 2 * US and got["kernel"] == 200 * US and got["launch"] == 1_500


def test_stream_wait_event_links_kernels_across_streams() -> None:
    # k1 on stream 7 (launched at 0, runs 5-1005); cudaEventRecord on stream 7 at 3; stream 8
    # waits for it (cudaStreamWaitEvent at 6) and k2 launched at 8 on stream 8 runs 1010-1020.
    # Path: launch1 -(5)-> k1 -(1000)-> sync(0) -> k2 -(10)-> = 1015 µs.
    events = [x("op", "cpu_op", 1, 1, 0, 20),
              x("cudaLaunchKernel", "cuda_runtime", 1, 1, 0, 1, correlation=1),
              x("cudaEventRecord", "cuda_runtime", 1, 1, 3, 1, correlation=2),
              x("cudaStreamWaitEvent", "cuda_runtime", 1, 1, 6, 1, correlation=3),
              x("Stream Wait Event", "cuda_sync", 0, 8, 7, 1, correlation=3, stream=8, device=0,
                cuda_sync_kind="Stream Wait Event", wait_on_stream=7, wait_on_cuda_event_record_corr_id=2),
              x("cudaLaunchKernel", "cuda_runtime", 1, 1, 8, 1, correlation=4),
              x("k1", "kernel", 0, 7, 5, 1000, correlation=1, stream=7, device=0),
              x("k2", "kernel", 0, 8, 1010, 10, correlation=4, stream=8, device=0)]
    cp = critical_path(kineto(step(2000, *events)))
    assert cp.length == 1015 * US
    assert "sync" in set(cp.path["type"].astype(str))
    assert list(cp.events["name"].astype(str)) == ["op", "cudaLaunchKernel", "k1", "k2"]


def test_instances_steps_and_errors() -> None:
    events = step(100, x("a", "cpu_op", 1, 1, 0, 50))
    events += [x("ProfilerStep#8", "user_annotation", 1, 1, 200, 100), x("b", "cpu_op", 1, 1, 210, 80),
               # a GPU-side copy of the annotation is not an instance
               x("ProfilerStep#8", "gpu_user_annotation", 0, 7, 205, 90)]
    trace = kineto(events)
    table = critical_path_steps(trace)
    assert list(table["name"]) == ["ProfilerStep#7", "ProfilerStep#8"]
    assert critical_path(trace, instance=1).length == 80 * US
    assert critical_path(trace, instance=0).length == 50 * US
    with pytest.raises(ProfviewError, match="instance 2 .* has 2"):
        critical_path(trace, instance=2)
    with pytest.raises(ProfviewError, match="no CPU-side slice named like 'Iteration'"):
        critical_path(trace, annotation="Iteration")
    whole = critical_path(trace, annotation=None)  # a -(0 dependency)-> b: 50 + 80
    assert whole.length == 130 * US and whole.annotation is None


def test_a_window_without_ops_is_an_empty_path() -> None:
    trace = kineto(step(100, x("python frame", "python_function", 1, 1, 0, 50)))
    cp = critical_path(trace)
    assert cp.length == 0 and len(cp.events) == 0 and len(cp.edges) == 0
    assert list(cp.breakdown["time"]) == [0] * 6


def test_cpu_only_trace() -> None:
    # HTA 0.5.0 stops with a TypeError on this real CPU-only rank.  Its ProfilerStep holds no op
    # (its 4 cpu_ops come after it): an empty path.  The whole trace: the 4 top-level ops of one
    # thread chained by zero-weight dependency edges = the sum of their durations (from the JSON).
    name = "cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
    trace = _load(name)
    assert critical_path(trace).length == 0
    ops = [e for e in read_json(HTA / name)["traceEvents"] if e.get("cat") == "cpu_op"]
    assert len(ops) == 4
    cp = critical_path(trace, annotation=None)
    assert cp.length == sum(ns(e["dur"]) for e in ops)
    got = dict(zip(cp.breakdown["type"], cp.breakdown["time"], strict=True))
    assert got["cpu"] == cp.length


def test_traceset_needs_a_rank() -> None:
    pytest.importorskip("duckdb")
    files = [HTA / "trace_filter_sampled_rank-0.json.gz", HTA / "trace_filter_sampled_rank-1.json.gz"]
    ts = profview.load_many(files, progress=False, cache=False)
    with pytest.raises(ProfviewError, match="pass rank="):
        critical_path(ts)
    one = critical_path(ts, rank=1)
    ref = next(r for r in CASES if r["file"] == "trace_filter_sampled_rank-1.json.gz")
    assert one.rank == 1 and abs(one.length / US - ref["length_us"]) < 0.001


def test_explain_says_what_bounds_the_step_in_the_shared_number_rule() -> None:
    from jupyter_profview.numbers import format_duration

    case = next(r for r in CASES if r["file"] == "trace_filter_sampled_rank-1.json.gz")
    cp = critical_path(_load(case["file"]))
    text = cp.explain()
    # HTA: cpu_bound 255,413 of 272,736 µs -> CPU-bound, 93.6 %; gaps 17,099 µs -> 6.3 %
    assert f"is {format_duration(case['length_us'] * US)} long" in text
    assert "It is CPU-bound: CPU ops 93.6 %" in text and "gaps between kernels 6.3 %" in text
    top = cp.events.sort_values("on_path", ascending=False).iloc[0]
    assert f"Longest on the path: {top['name']} ({format_duration(top['on_path'])})" in text
    launch = critical_path(_load("trace_compare_base_base.json.gz")).explain()
    assert "bound by kernel launch delays" in launch and "launch delays 100.0 %" in launch
    empty = critical_path(_load("cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")).explain()
    assert "is empty" in empty
