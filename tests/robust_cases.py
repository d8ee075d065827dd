"""The traces and the calls of `test_no_raw_exceptions.py`: every fixture trace this checkout has
(real and hand-written), and every public analysis with each documented parameter value.

A case is `(analysis, label, call, target)`: `call(trace)` runs the analysis on a loaded
Trace (`target="trace"`), TraceSet (`"set"`) or either (`"both"`).  Traces load once per
process (`trace_of`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import jupyter_profview as profview
from jupyter_profview import analysis
from jupyter_profview.errors import ProfviewError
from tests.trace_files import SHARED_DIR, traces_under

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
EXAMPLES = ROOT / "jupyter_profview" / "examples"
# the shared traces and seeds beside the checkout (`../shared`, as CI lays it out), where present
SHARED = (SHARED_DIR / "traces" / "hta", SHARED_DIR / "seeds") if SHARED_DIR else ()
HUGE = 2**62


# -- traces ------------------------------------------------------------------------------------
def _kineto(events: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    return {"schemaVersion": 1, "traceEvents": events, **top}


def _x(name: str, cat: str, ts: float, dur: float, pid: int = 1, tid: int = 1, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "pid": pid, "tid": tid, "args": args}


def _kernel(name: str, ts: float, dur: float, correlation: int, stream: int = 7,
            cat: str = "kernel") -> dict[str, Any]:
    return _x(name, cat, ts, dur, pid=0, tid=stream, device=0, stream=stream, correlation=correlation)


def _launch(ts: float, dur: float, correlation: int, cat: str = "cuda_runtime",
            name: str = "cudaLaunchKernel") -> dict[str, Any]:
    return _x(name, cat, ts, dur, correlation=correlation)


#: hand-written traces for the shapes the real ones lack
EDGE_TRACES: dict[str, dict[str, Any]] = {
    "edge_empty": _kineto([]),
    "edge_one_event": _kineto([_x("aten::mm", "cpu_op", 10, 5)]),
    "edge_instants_only": _kineto([{"ph": "i", "name": "mark", "cat": "cpu_instant_event", "ts": t,
                                    "pid": 1, "tid": 1, "s": "t"} for t in (1, 2, 3)]),
    "edge_kernel_without_launch": _kineto([
        _x("ProfilerStep#0", "user_annotation", 0, 100),
        _x("aten::mm", "cpu_op", 10, 20),
        _kernel("sgemm", 40, 30, correlation=5),
    ]),
    "edge_device_only": _kineto([_kernel("sgemm", 0, 10, 1),
                                 _kernel("ncclKernel_AllReduce", 5, 20, 2, stream=9),
                                 _kernel("Memcpy HtoD", 30, 4, 3, cat="gpu_memcpy")]),
    "edge_empty_step": _kineto([
        _x("ProfilerStep#3", "user_annotation", 0, 100),
        _x("ProfilerStep#4", "user_annotation", 100, 100),
        _x("aten::add", "cpu_op", 120, 10),
        _launch(122, 3, correlation=1),
        _kernel("add_kernel", 130, 5, correlation=1),
    ]),
    "edge_mtia": _kineto([
        _x("ProfilerStep#0", "user_annotation", 0, 1000),
        _x("forward", "user_annotation", 10, 400),
        _x("hccl:all_to_all", "user_annotation", 300, 900),  # starts inside forward, outlasts it and the step
        _x("aten::mm", "cpu_op", 20, 50),
        _launch(25, 5, correlation=11, cat="mtia_runtime", name="mtiaLaunchKernel"),
        _launch(60, 5, correlation=12, cat="mtia_runtime", name="mtiaMemcpy"),
        _kernel("mtia_mm", 80, 40, correlation=11, cat="mtia_ccp_events"),
        _kernel("dma_request", 90, 20, correlation=12, stream=3, cat="mtia_ccp_events"),
        _kernel("dma_request", 95, 20, correlation=13, stream=3, cat="mtia_ccp_events"),
    ], deviceProperties=[{"id": 0, "name": "MTIA"}]),
    "edge_overlap_sync": _kineto([  # kernels that overlap on one stream, an event sync, a stream sync
        _x("ProfilerStep#1", "user_annotation", 0, 500),
        _x("aten::mm", "cpu_op", 5, 40, **{"Input Dims": [[64, 32], [32, 16]], "Sequence number": 4,
                                          "Fwd thread id": 0}),
        _launch(10, 4, correlation=1),
        _launch(20, 4, correlation=2),
        _launch(30, 4, correlation=3, name="cudaEventRecord"),
        _launch(40, 4, correlation=4, name="cudaStreamWaitEvent"),
        _launch(50, 100, correlation=5, name="cudaStreamSynchronize"),
        _kernel("sgemm", 30, 50, correlation=1),
        _kernel("relu", 60, 40, correlation=2),  # starts before sgemm ends
        _x("Event Sync", "cuda_sync", 150, 2, pid=0, tid=-1, device=0, stream=-1, correlation=5,
           wait_on_stream=7, wait_on_cuda_event_record_corr_id=3),
        _x("ProfilerStep#2", "user_annotation", 500, 0),  # an empty step, 0 long
        _kernel("late", 600, 0, correlation=6),  # zero-length, its launch missing
    ], deviceProperties=[{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}]),
    "edge_collectives": _kineto([
        _x("ProfilerStep#0", "user_annotation", 0, 400),
        _x("nccl:all_reduce", "user_annotation", 10, 100),
        _x("record_param_comms", "cpu_op", 12, 80,
           **{"Process Group Name": "0", "Collective name": "allreduce"}),
        _launch(20, 5, correlation=1),
        _kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 40, 200, correlation=1, stream=9),
        _x("gloo:broadcast", "user_annotation", 150, 20),
        _x("ProfilerStep#1", "user_annotation", 400, 400),
        _x("rccl:all_gather", "user_annotation", 410, 10),
        _x("[memory]", "cpu_instant_event", 5, 0) | {"ph": "i", "s": "t", "args": {
            "Bytes": 1024, "Total Allocated": 1024, "Total Reserved": 2048, "Device Type": 1, "Device Id": 0,
            "Addr": 1}},
        _x("[memory]", "cpu_instant_event", 300, 0) | {"ph": "i", "s": "t", "args": {
            "Bytes": -1024, "Total Allocated": 0, "Total Reserved": 2048, "Device Type": 1, "Device Id": 0,
            "Addr": 1}},
        _x("[memory]", "cpu_instant_event", 301, 0) | {"ph": "i", "s": "t", "args": {
            "Bytes": -4096, "Total Allocated": -4096, "Total Reserved": 0, "Device Type": 0, "Device Id": -1,
            "Addr": 9}},  # a free without its allocation
    ], distributedInfo={"backend": "nccl", "rank": 0, "world_size": 2}),
    "edge_modules_backward": _kineto([
        _x("ProfilerStep", "user_annotation", 0, 1000),  # a bare step name, no number
        _x("nn.Module: Linear_0", "python_function", 10, 200),
        _x("model.py(12): forward", "python_function", 15, 100),
        _x("aten::linear", "cpu_op", 20, 50, **{"Sequence number": 7, "Fwd thread id": 0}),
        _launch(30, 5, correlation=1),
        _kernel("gemm", 40, 30, correlation=1),
        _x("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op", 400, 100, tid=2,
           **{"Sequence number": 7, "Fwd thread id": 1}),
        _launch(410, 5, correlation=2) | {"tid": 2},
        _kernel("gemm_bwd", 420, 30, correlation=2),
        _x("nn.Module: Orphan", "python_function", 900, 300),  # outlasts the step
        _x("gpu_step", "gpu_user_annotation", 40, 30, pid=0, tid=7),
    ]),
}


@dataclass(frozen=True)
class TraceFile:
    id: str
    path: Path


@cache
def trace_files() -> list[TraceFile]:
    """Every loadable trace file and directory of tests/data, the bundled examples and the shared
    traces, each content once (tests/data/hta copies ../shared/traces/hta)."""
    candidates = [*traces_under(DATA, EXAMPLES, *SHARED), DATA / "xspace" / "tf_keras", DATA / "xspace"]
    seen: dict[str, TraceFile] = {}
    for path in candidates:
        digest = path.name if path.is_dir() else hashlib.sha1(path.read_bytes()).hexdigest()
        if digest not in seen:
            where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            seen[digest] = TraceFile(str(where).replace("/", ":"), path)
    return list(seen.values())


TRACE_SETS = {"set_ddp": DATA / "ddp", "set_hta_sampled": DATA / "hta", "set_edge": None}
#: the hand-written ranks of ``set_edge``: one with collectives and memory, one with neither
EDGE_RANKS = ("edge_collectives", "edge_overlap_sync")


def trace_ids() -> list[str]:
    return [f.id for f in trace_files()] + list(EDGE_TRACES) + list(TRACE_SETS)


@cache
def trace_of(trace_id: str, cache_dir: str) -> Any:
    """The loaded Trace / TraceSet, once per process."""
    if trace_id in EDGE_TRACES:
        return profview.load(json.dumps(EDGE_TRACES[trace_id]).encode(), name=trace_id)
    if trace_id in TRACE_SETS:
        root = TRACE_SETS[trace_id]
        if root is None:  # set_edge, written where the cache goes
            root = Path(cache_dir) / "edge_ranks"
            root.mkdir(parents=True, exist_ok=True)
            for rank, name in enumerate(EDGE_RANKS):
                info = {"backend": "nccl", "rank": rank, "world_size": 2}
                body = EDGE_TRACES[name] | {"distributedInfo": info}
                (root / f"rank-{rank}.json").write_text(json.dumps(body))
        files = sorted(root.glob("*rank-*.json*"))
        if trace_id == "set_hta_sampled":
            files = [f for f in files if f.name.startswith("trace_filter_sampled")]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return profview.load_many(files, cache=Path(cache_dir) / trace_id, progress=False, workers=1)
    path = {f.id: f.path for f in trace_files()}[trace_id]
    return profview.load(path)


# -- calls -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    analysis: str
    label: str
    call: Callable[[Any], Any]
    target: str = "both"  # "trace", "set" or "both"

    @property
    def id(self) -> str:
        return f"{self.analysis}({self.label})"


def _events_subset(trace: Any, which: str) -> pd.DataFrame:
    ev = trace.events
    return ev.iloc[:0] if which == "none" else ev.iloc[: max(1, len(ev) // 2)]


def _end(trace: Any) -> int:
    ev = trace.events
    return int((ev["start"] + ev["dur"]).max()) if len(ev) else 0


def _devices(trace: Any) -> list[str]:
    mem = trace.memory
    return sorted(map(str, mem["device"].unique()))[:2] if "device" in mem.columns else []


def _peak_then_live(trace: Any, device: str | None) -> Any:
    return analysis.live_at(trace, analysis.peak_time(trace, device), device)


_MEMO: dict[tuple[int, str], Any] = {}


def memo(trace: Any, key: str, make: Callable[[], Any]) -> Any:
    """``make()`` once per loaded trace and key (the traces live as long as the process)."""
    if (id(trace), key) not in _MEMO:
        _MEMO[id(trace), key] = make()
    return _MEMO[id(trace), key]


@cache
def _example(name: str) -> Any:
    return profview.load(profview.example(name))


def _comparison(trace: Any) -> Any:
    return memo(trace, "compare", lambda: analysis.compare(trace, trace))


def _comparison_members(trace: Any) -> list[Any]:
    comp = _comparison(trace)
    out: list[Any] = [comp.step_times(), comp.summary(), repr(comp), comp.phases, comp.kernels_by_type]
    for attr in ("ops_by_shape", "ops_by_rank", "memory"):
        with contextlib.suppress(ProfviewError):  # a documented refusal; the other members still run
            out.append(getattr(comp, attr))
    return out


def _charts(trace: Any) -> list[Any]:
    from jupyter_profview import charts, charts_gpu

    return [charts.summary_chart(trace), charts.phases_chart(trace), charts.memory_chart(trace),
            charts_gpu.temporal_breakdown_chart(trace), charts_gpu.comm_comp_overlap_chart(trace),
            charts_gpu.idle_time_chart(trace), charts_gpu.launch_delay_chart(trace),
            charts_gpu.queue_length_chart(trace), charts_gpu.roofline_chart(analysis.op_efficiency(trace))]


def _kernel_chart(trace: Any, by: str) -> Any:
    from jupyter_profview import charts_gpu

    return charts_gpu.kernel_breakdown_chart(trace, by)


def _aligned_kwargs(ts: Any, kw: Any) -> dict[str, Any]:
    """`kw`, or the first step / collective of the set (0 / "none" where it has none)."""
    if isinstance(kw, dict):
        return kw
    if kw is None:
        steps = analysis.step_times(ts)["step"]
        return {"step": int(steps.min()) if len(steps) else 0}
    calls = ts.collectives
    name = str(calls["name"].iloc[0]) if len(calls) else "none"
    return {"collective": name if kw == "first" else (name, HUGE)}


def _critical_explain(trace: Any, top: int, annotation: str | None) -> str:
    path = memo(trace, f"critical_path:{annotation}",
                lambda: analysis.critical_path(trace, annotation=annotation))
    return str(path.explain(top))


def cases() -> list[Case]:
    a = analysis
    out: list[Case] = []

    def add(name: str, label: str, call: Callable[[Any], Any], target: str = "both") -> None:
        out.append(Case(name, label, call, target))

    # summary, phases, top and the events-table helpers
    for by in ("category", "name", "phase", "process", "track", "thread", "depth", "incomplete", "kind",
               "no_such_column"):
        add("summary", f"by={by}", lambda t, by=by: a.summary(t, by))
    for which in ("none", "half"):
        add("summary", f"events={which}",
            lambda t, w=which: a.summary(t, "name", events=_events_subset(t, w)),
            "trace")
        add("phases", f"events={which}", lambda t, w=which: a.phases(t, events=_events_subset(t, w)), "trace")
    add("phases", "", lambda t: a.phases(t))
    for n in (0, 1, 10, -1, HUGE):
        add("top", f"n={n}", lambda t, n=n: a.top(t, n))
    for by in ("dur", "start", "depth", "name", "phase", "no_such_column"):
        add("top", f"by={by}", lambda t, by=by: a.top(t, 5, by))
    add("self_intervals", "", lambda t: a.self_intervals(t.events), "trace")
    add("bytes_column", "", lambda t: a.bytes_column(t.events), "trace")
    add("union_length", "events", lambda t: a.union_length(t.events["start"].to_numpy(),
                                                          (t.events["start"] + t.events["dur"]).to_numpy()),
        "trace")

    # memory
    for device in ("None", "first", "no_such_device"):
        def peak(t: Any, d: str = device) -> Any:
            return a.peak_time(t, None if d == "None" else (_devices(t) or ["?"])[0] if d == "first" else d)
        add("peak_time", f"device={device}", peak)
        add("live_at", f"time=peak,device={device}",
            lambda t, d=device: _peak_then_live(t, None if d == "None" else (_devices(t) or ["?"])[0]
                                                if d == "first" else d), "trace")
    for time in (0, -1, HUGE):
        add("live_at", f"time={time}", lambda t, time=time: a.live_at(t, time))
    for label, times in (("time={0:0}", {0: 0}), ("time={99:0}", {99: 0}), ("time={}", {}),
                         ("time=series", pd.Series([5, 6], index=[0, 1])),
                         ("time=frame", pd.DataFrame({"rank": [1], "time": [7]}))):
        add("live_at", label, lambda t, times=times: a.live_at(t, times), "set")
    add("live_at", "time=peak_time(ts)", lambda t: a.live_at(t, a.peak_time(t)), "set")

    # GPU
    add("comm_comp_overlap", "", lambda t: a.comm_comp_overlap(t))
    for wait in (0, 30_000, -1, HUGE):
        add("idle_time", f"kernel_wait={wait}", lambda t, w=wait: a.idle_time(t, kernel_wait=w))
    for by in ("type", "name", "no_such_grouping"):
        add("kernel_breakdown", f"by={by}", lambda t, by=by: a.kernel_breakdown(t, by))
    for kw in ({}, {"rows": True}, {"short_kernel": 0}, {"short_kernel": -1, "rows": True},
               {"long_launch": 0, "long_delay": 0}, {"long_launch": HUGE, "long_delay": -1}):
        add("launch_stats", ",".join(f"{k}={v}" for k, v in kw.items()),
            lambda t, kw=kw: a.launch_stats(t, **kw))
    for ids in ("[]", "[0]", "all", "[-1]", "[huge]"):
        def linked(t: Any, ids: str = ids) -> Any:
            chosen = {"[]": [], "[0]": [0], "all": t.events.index.to_numpy(), "[-1]": [-1],
                      "[huge]": [HUGE]}[ids]
            return a.linked_events(t, chosen)
        add("linked_events", f"ids={ids}", linked, "both")
    for complete in (False, True):
        add("queue_length", f"complete_steps={complete}",
            lambda t, c=complete: a.queue_length(t, complete_steps=c))
        add("queue_length_series", f"complete_steps={complete}",
            lambda t, c=complete: a.queue_length_series(t, complete_steps=c))
    add("temporal_breakdown", "", lambda t: a.temporal_breakdown(t))
    for label, window in (("trace,10", lambda t: (0, _end(t), 10)), ("trace,1", lambda t: (0, _end(t), 1)),
                          ("columns=0", lambda t: (0, _end(t), 0)),
                          ("columns=-1", lambda t: (0, _end(t), -1)),
                          ("t0=t1", lambda t: (5, 5, 4)), ("t0>t1", lambda t: (_end(t), 0, 4)),
                          ("huge", lambda t: (-HUGE, HUGE, 3))):
        add("utilisation", label, lambda t, w=window: a.utilisation(t, *w(t)), "both")

    # attribution
    for by in ("annotation", "module", "stack", "op", "no_such_kind"):
        for backward in ("launch", "forward"):
            add("attribute", f"by={by},backward={backward}",
                lambda t, by=by, b=backward: a.attribute(t, by, backward=b))
    add("attribute", "backward=no_such_rule", lambda t: a.attribute(t, backward="sideways"))
    for label, window in (("window=(0,0)", lambda t: (0, 0)), ("window=trace", lambda t: (0, _end(t))),
                          ("window=reversed", lambda t: (_end(t), 0)),
                          ("window=huge", lambda t: (-HUGE, HUGE))):
        add("attribute", label, lambda t, w=window: a.attribute(t, window=w(t)), "both")
    for rank in (0, 1, -1, 99):
        add("attribute", f"rank={rank}", lambda t, r=rank: a.attribute(t, rank=r), "set")

    # efficiency
    for device in ("None", "A100", "MI250", "no_such_gpu"):
        add("op_efficiency", f"device={device}",
            lambda t, d=device: a.op_efficiency(t, device=None if d == "None" else d), "both")

    # critical path
    for ann in ("ProfilerStep", "None", "no_such_annotation", ""):
        for inst in (0, 1, -1, HUGE):
            add("critical_path", f"annotation={ann},instance={inst}",
                lambda t, ann=ann, i=inst: a.critical_path(t, annotation=None if ann == "None" else ann,
                                                           instance=i),
                "both")
        add("critical_path_steps", f"annotation={ann}",
            lambda t, ann=ann: a.critical_path_steps(t, ann) if ann != "None" else a.critical_path_steps(t),
            "both")
    for top in (0, 1, 3, -1, HUGE):
        for ann in ("ProfilerStep", None):
            add("CriticalPath.explain", f"annotation={ann},top={top}",
                lambda t, top=top, ann=ann: _critical_explain(t, top, ann), "trace")
    for rank in ("None", 0, 1, 99):
        add("critical_path", f"rank={rank}",
            lambda t, r=rank: a.critical_path(t, annotation=None, rank=None if r == "None" else r), "set")

    # pipeline parallelism, the CUDA allocator
    add("pipeline_bubbles", "", lambda t: a.pipeline_bubbles(t), "both")
    add("oom", "", lambda t: a.oom(t), "trace")
    add("fragmentation", "", lambda t: a.fragmentation(t), "trace")
    for when in (0, -1, HUGE):
        add("allocator_state", f"time={when}", lambda t, w=when: a.allocator_state(t, w), "trace")

    # ranks
    add("collective_calls", "", lambda t: a.collective_calls(t), "both")
    add("step_times", "", lambda t: a.step_times(t))
    add("collective_skew", "", lambda t: a.collective_skew(t), "both")
    for per_rank in (False, True):
        add("stragglers", f"per_rank={per_rank}", lambda t, p=per_rank: a.stragglers(t, per_rank=p), "both")

    # the derived layer's public tables
    for ann in ("ProfilerStep", "no_such_annotation", "", "["):
        add("steps", f"annotation={ann}", lambda t, ann=ann: a.steps(t, ann))
    add("device_activities", "", lambda t: a.device_activities(t))

    # advice, kernel efficiency, collectives
    for ann in ("ProfilerStep", None, "no_such_annotation"):
        add("advise", f"annotation={ann}", lambda t, ann=ann: a.advise(t, annotation=ann).explain())
    for rank in (0, 99):
        add("advise", f"rank={rank}", lambda t, r=rank: a.advise(t, rank=r).explain(), "set")
    for by in ("kernel", "name", "op", "no_such_grouping"):
        add("kernel_efficiency", f"by={by}", lambda t, by=by: a.kernel_efficiency(t, by=by))
    add("collective_bandwidth", "", lambda t: a.collective_bandwidth(t))
    add("collective_summary", "", lambda t: vars(a.collective_summary(t)))

    # lining the ranks up (TraceSet.aligned)
    for label, kw in (("step=first", None), ("step=-1", {"step": -1}), ("collective=first", "first"),
                      ("collective=no_such", {"collective": "no_such"}),
                      ("collective=(first,huge)", "huge"), ("neither", {}),
                      ("both", {"step": 0, "collective": "x"})):
        add("TraceSet.aligned", label, lambda t, kw=kw: t.aligned(**_aligned_kwargs(t, kw)).offsets, "set")

    # compare (each trace with itself) and the Comparison's members
    # the default (align="step", by="name") is the memoised one of the members below; the other
    # values on single traces (a TraceSet's events are read back from its cache on every compare)
    for align in ("start", -1e18, "no_such_alignment"):
        add("compare", f"align={align}", lambda t, al=align: a.compare(t, t, align=al).step_times(), "trace")
    for by in ("category", "no_such_column"):
        add("compare", f"by={by}", lambda t, by=by: a.compare(t, t, by=by).summary(), "trace")
    for kw in ({"rtol": 0.0, "atol": 0.0}, {"rtol": -1.0, "atol": float("inf")}):
        add("compare", ",".join(f"{k}={v}" for k, v in kw.items()),
            lambda t, kw=kw: a.compare(t, t, **kw).summary(), "trace")
    add("Comparison", "members", _comparison_members)
    for other in ("compare_base", "tf_step_stats"):  # another run of one program, another framework
        add("compare", f"b={other}", lambda t, o=other: a.compare(t, _example(o)).summary())
    for n in (0, 12, -1):
        add("Comparison.chart", f"n={n}", lambda t, n=n: _comparison(t).chart(n))

    # charts (the analyses' front end in notebooks)
    add("charts", "all", _charts, "trace")
    for by in ("type", "name", "no_such_grouping"):
        add("charts.kernel_breakdown_chart", f"by={by}", lambda t, by=by: _kernel_chart(t, by), "trace")
    return out


def run_case(case: Case, trace: Any) -> Any:
    """Run one case; numpy's warnings about empty reductions are not failures here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            return case.call(trace)
