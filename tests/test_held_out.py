"""Held-out traces that broke (issue 31, item 5): each reproduced with a small hand-written
trace; the expected values are counted from the trace written here, not taken from the code."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_profview as profview
from jupyter_profview import _native, analysis
from jupyter_profview.formats.chrome import native as chrome_native
from jupyter_profview.formats.chrome.decode import decode_python, normalized
from jupyter_profview.formats.chrome.trace import to_trace
from jupyter_profview.sources import Source

EXAMPLES = Path(profview.__file__).parent / "examples"
CPU, TID = 100, 1  # the host process / thread of the hand-written traces


def x(name: str, cat: str, pid: int, tid: int, ts: float, dur: float,
      **args: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts,
                             "dur": dur}
    if args:
        event["args"] = args
    return event


def write(tmp_path: Path, events: list[dict[str, Any]], name: str = "t.json", **top: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, **top}))
    return path


# -- advise without correlation ids -------------------------------------------------------------

def test_advise_on_a_gpu_trace_without_correlation_ids(tmp_path: Path) -> None:
    """Kernels, a sync call and Kineto's `cuda_sync` device event, none with a `correlation`
    arg: device_activities joined the kernels' launch names (all missing: float categories)
    with the sync events' (text) and pandas raised `TypeError: dtype of categories must be the
    same`."""
    events = [
        x("ProfilerStep#1", "user_annotation", CPU, TID, 0, 1000),
        x("aten::mm", "cpu_op", CPU, TID, 10, 100),
        x("cudaLaunchKernel", "cuda_runtime", CPU, TID, 20, 10),
        x("volta_sgemm_128x64_nn", "kernel", 0, 7, 50, 300, device=0, stream=7),
        x("cudaDeviceSynchronize", "cuda_runtime", CPU, TID, 200, 400),
        x("Context Sync", "cuda_sync", 0, 7, 350, 250, device=0, stream=7),
    ]
    trace = profview.load(write(tmp_path, events))
    assert "correlation" not in trace.events.columns or trace.events["correlation"].isna().all()
    acts = analysis.device_activities(trace)
    assert sorted(acts["name"].astype(str)) == ["Context Sync", "volta_sgemm_128x64_nn"]
    advice = profview.advise(trace)
    host_sync = advice.findings[advice.findings["rule"] == "host_sync"]
    assert host_sync["time"].tolist() == [400_000]  # the one cudaDeviceSynchronize, 400 us
    analysis.critical_path(trace)  # no launch enqueues: no stream to wait on, no IndexError


# -- fp32_matmul and the compute capability -------------------------------------------------------

def gemm_on(gpu: int, at: float, corr: int, kernel_dur: float) -> list[dict[str, Any]]:
    return [
        x("aten::mm", "cpu_op", CPU, TID, at, 50, **{"Input Dims": [[256, 256], [256, 256]],
                                                     "Input type": ["float", "float"]}),
        x("cudaLaunchKernel", "cuda_runtime", CPU, TID, at + 10, 5, correlation=corr),
        x("sgemm_128x64_nn", "kernel", gpu, 7, at + 20, kernel_dur, device=gpu, stream=7, correlation=corr),
    ]


def test_fp32_matmul_names_only_gpus_of_compute_capability_8_and_up(tmp_path: Path) -> None:
    """A V100 (7.0: no TF32) and an A100 (8.0) in one trace, an FP32 GEMM on each: only the
    A100's is a finding."""
    props = [{"id": 0, "name": "Tesla V100-SXM2-16GB", "computeMajor": 7, "computeMinor": 0},
             {"id": 1, "name": "NVIDIA A100-SXM4-40GB", "computeMajor": 8, "computeMinor": 0}]
    events = [x("ProfilerStep#1", "user_annotation", CPU, TID, 0, 1000),
              *gemm_on(0, 100, 1, 300), *gemm_on(1, 500, 2, 200)]
    trace = profview.load(write(tmp_path, events, deviceProperties=props))
    ev = trace.events
    a100_op = int(ev.index[(ev["name"] == "aten::mm") & (ev["start"] == 500_000)][0])
    advice = profview.advise(trace)
    found = advice.findings[advice.findings["rule"] == "fp32_matmul"]
    assert len(found) == 1
    row = found.iloc[0]
    assert list(row["events"]) == [a100_op]
    assert row["time"] == 200_000  # the A100 kernel's 200 us
    assert "A100" in row["device"] and "V100" not in row["device"] and "V100" not in row["message"]
    # a V100 alone: no finding at all
    only_v100 = profview.load(write(tmp_path, [x("ProfilerStep#1", "user_annotation", CPU, TID, 0, 1000),
                                               *gemm_on(0, 100, 1, 300)], "v100.json",
                                    deviceProperties=props[:1]))
    assert "fp32_matmul" not in set(profview.advise(only_v100).findings["rule"])


# -- the window of an annotation on two threads ---------------------------------------------------

def test_advise_window_of_an_annotation_on_two_threads(tmp_path: Path) -> None:
    """`Region` on thread 1 and thread 2 (the later-starting one ends first): the window is the
    first instance's start to the last end of any instance, not one thread's."""
    events = [x("Region", "user_annotation", CPU, 1, 0, 100), x("aten::add", "cpu_op", CPU, 1, 10, 20),
              x("Region", "user_annotation", CPU, 2, 50, 850),
              x("Region", "user_annotation", CPU, 1, 700, 100),
              x("aten::mul", "cpu_op", CPU, 2, 600, 20), x("aten::sum", "cpu_op", CPU, 1, 1500, 500)]
    trace = profview.load(write(tmp_path, events))
    assert profview.advise(trace, annotation="Region").window == (0, 900_000)
    assert profview.advise(trace, annotation=None).window == (0, 2_000_000)


# -- advise on a trace without a clock ------------------------------------------------------------

def test_advise_on_a_trace_without_a_clock_skips_every_rule() -> None:
    trace = profview.load(EXAMPLES / "000_5bf2854c930b1b8f.txt")  # a TF node list
    assert trace.time_unit == "step"
    advice = profview.advise(trace)
    assert len(advice.findings) == 0
    assert len(advice.skipped) > 0 and advice.skipped["why"].str.contains("no clock").all()
    assert {"host_sync", "fp32_matmul", "step_outliers"} <= set(advice.skipped["rule"])


# -- gloo's all_gather without distributedInfo ----------------------------------------------------

def test_gloo_all_gather_bytes_without_distributed_info(tmp_path: Path) -> None:
    """The four gloo ranks shipped with the package, their `distributedInfo` removed: the
    all_gather's group size falls back to the set's rank count, and so does its size (its input
    is one rank's share: bytes = Input Dims x 4 (float) x ranks)."""
    run = tmp_path / "run"
    run.mkdir()
    expected: list[float] = []
    for src in sorted((EXAMPLES / "ddp_shapes").glob("rank-*.pt.trace.json.gz")):
        doc = json.loads(gzip.decompress(src.read_bytes()))
        doc.pop("distributedInfo", None)
        (run / src.name).write_bytes(gzip.compress(json.dumps(doc).encode()))
        if src.name.startswith("rank-0"):
            expected = [float(np.prod(e["args"]["Input Dims"][0]) * 4 * 4) for e in
                        sorted(doc["traceEvents"], key=lambda e: e.get("ts", 0))
                        if e.get("ph") == "X" and e.get("name") == "gloo:all_gather"]
    ts = profview.load_many(run, cache=tmp_path / "cache", progress=False, workers=1)
    assert len(ts) == 4 and expected
    table = analysis.collective_bandwidth(ts)
    gather = table[(table["name"] == "gloo:all_gather") & (table["rank"] == 0)]
    assert gather["group_size"].tolist() == [4.0] * len(expected)
    assert gather["bytes"].tolist() == expected
    assert gather["busbw"].notna().all()
    summary = analysis.collective_summary(ts)
    assert summary.calls.loc[summary.calls["name"] == "gloo:all_gather", "bytes"].tolist() == expected


# -- kernel_efficiency of kernels without a launch configuration ---------------------------------

def test_kernel_efficiency_grid_and_block_missing_not_empty_text(tmp_path: Path) -> None:
    events = [x("cudaLaunchKernel", "cuda_runtime", CPU, TID, 0, 5, correlation=1),
              x("k_with", "kernel", 0, 7, 10, 20, correlation=1, device=0, stream=7, grid=[8, 1, 1],
                block=[128, 1, 1], **{"blocks per SM": 0.5}),
              x("cudaLaunchKernel", "cuda_runtime", CPU, TID, 40, 5, correlation=2),
              x("k_without", "kernel", 0, 7, 50, 20, correlation=2, device=0, stream=7)]
    table = analysis.kernel_efficiency(profview.load(write(tmp_path, events)))
    with_cfg = table[table["name"] == "k_with"].iloc[0]
    without = table[table["name"] == "k_without"].iloc[0]
    assert (with_cfg["grid"], with_cfg["block"]) == ("[8, 1, 1]", "[128, 1, 1]")
    assert pd.isna(without["grid"]) and pd.isna(without["block"])
    assert pd.isna(without["blocks_per_sm"])  # as the numbers
    assert "" not in set(table["grid"].dropna()) | set(table["block"].dropna())


# -- MTIA: Stage::* ranges in attribute(by="annotation") -------------------------------------------

MTIA_CASES = {
    "nested": [("Stage::A", 0, 100), ("Stage::B", 40, 60)],
    "same span": [("Stage::A", 0, 100), ("Stage::B", 0, 100)],
    "same span, file order reversed": [("Stage::B", 0, 100), ("Stage::A", 0, 100)],
    "same start, shorter first": [("Stage::B", 0, 50), ("Stage::A", 0, 100)],
    "partly overlapping": [("Stage::A", 0, 100), ("Stage::B", 50, 100)],
    # an op that starts inside B and outlasts it goes to an overlap lane; A, inside that op, has
    # no annotation above it in trace.events (attribute put it under B: it nested the
    # annotations among themselves, by time)
    "inside an op that overlaps the other": [("Stage::B", 0, 30), ("aten::op", 20, 60), ("Stage::A", 20, 10)],
    "an op between": [("Stage::A", 0, 60), ("aten::op1", 50, 60), ("aten::op0", 10, 60),
                      ("Stage::B", 10, 10)],
}


@pytest.mark.parametrize("case", list(MTIA_CASES))
def test_mtia_stage_ranges_nest_in_attribute_as_in_the_events(tmp_path: Path, case: str) -> None:
    """An MTIA-like Kineto trace (`mtia_runtime` launches, device on its own pid): each
    annotation node's parent in `attribute(by="annotation")` is its nearest `user_annotation`
    ancestor in `trace.events`, and the activity lands under the innermost range over its
    launch."""
    events = [x(name, "cpu_op" if name.startswith("aten::") else "user_annotation", CPU, TID, start, dur)
              for name, start, dur in MTIA_CASES[case]]
    events += [x("runFunction - job_prep_and_submit_for_execution", "mtia_runtime", CPU, TID, 55, 2,
                 correlation=1),
               x("mtia_kernel", "kernel", 0, 9, 70, 10, correlation=1, device=0, stream=9)]
    trace = profview.load(write(tmp_path, events))
    ev = trace.events
    ann = ev[ev["category"] == "user_annotation"]
    table = analysis.attribute(trace, by="annotation")
    node_path = {}
    for eid in ann.index.tolist():
        names, p = [str(ev.at[eid, "name"])], int(ev.at[eid, "parent"])
        while p >= 0:
            if ev.at[p, "category"] == "user_annotation":
                names.append(str(ev.at[p, "name"]))
            p = int(ev.at[p, "parent"])
        node_path[eid] = " / ".join(reversed(names))
    assert sorted(table.loc[table["name"] != "(unattributed)", "path"]) == sorted(node_path.values())
    launch = int(ev.index[ev["category"] == "mtia_runtime"][0])
    p = int(ev.at[launch, "parent"])
    while p >= 0 and ev.at[p, "category"] != "user_annotation":
        p = int(ev.at[p, "parent"])
    owner = table[table["path"] == (node_path[p] if p >= 0 else "(unattributed)")].iloc[0]
    assert owner["gpu_self"] == 10_000


# -- a 40-digit integer arg: both Chrome decoders -------------------------------------------------

BIG = "1234567890123456789012345678901234567890"


@pytest.mark.parametrize("args", [f'{{"big": {BIG}}}', f'{{"big": -{BIG}}}', f'{{"Input Dims": [[{BIG}]]}}',
                                  f'{{"nested": {{"n": {BIG}}}}}'])
def test_a_40_digit_integer_arg_reads_the_same_in_both_decoders(tmp_path: Path, args: str) -> None:
    text = ('{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1, "args": '
            + args + '}, {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 5, "dur": 1}]}')
    path = tmp_path / "big.json"
    path.write_text(text)
    python = decode_python(Source(path))
    trace = to_trace(python)
    assert len(trace.events) == 2 and trace.quality.unaccounted == 0
    assert json.dumps(trace.args(0)).replace(".0", "") .count("1.2345678901234568e+39") == 1 or \
        BIG in json.dumps(trace.args(0))  # the value kept (as a double, or exactly)
    native = chrome_native.decode_chrome(Source(path)) if _native.available() else None
    if native is not None:  # the native scanner may leave such a file to the Python decoder
        assert normalized(native) == normalized(python)
    assert profview.load(path).args(0).keys() == json.loads(args).keys()


OTHER = '{"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": 5, "dur": 1}'
X_EVENT = '{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1, '
BIG_POSITIONS = {
    **{f"taken-out arg {k}": X_EVENT + f'"args": {{"{k}": {BIG}}}}}'
       for k in ("correlation", "External id", "Bytes", "stream", "Group size", "grid", "dtype")},
    **{f"event field {k}": X_EVENT + f'"{k}": {BIG}}}' for k in ("id", "bind_id")},
    "pid": f'{{"ph": "X", "name": "a", "pid": {BIG}, "tid": 1, "ts": 0, "dur": 1}}',
    "counter": f'{{"ph": "C", "name": "mem", "pid": 1, "tid": 1, "ts": 0, "args": {{"v": {BIG}}}}}',
    "metadata": f'{{"ph": "M", "name": "process_name", "pid": 1, "args": {{"name": "x", "n": {BIG}}}}}',
    "flow id": f'{{"ph": "s", "name": "f", "cat": "ac2g", "id": {BIG}, "pid": 1, "tid": 1, "ts": 5}}',
    "memory": ('{"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 0, "s": "t", '
               f'"args": {{"Total Allocated": {BIG}, "Bytes": 1, "Addr": 1}}}}'),
}


def _decoded(decode: Any, path: Path) -> tuple[str, Any]:
    try:
        out = decode(Source(path))
    except profview.ProfviewError as exc:
        return "error", str(exc)
    return ("declined", None) if out is None else ("read", normalized(out))


@pytest.mark.parametrize("where", list(BIG_POSITIONS))
def test_a_40_digit_integer_anywhere_reads_alike_in_both_decoders(tmp_path: Path, where: str) -> None:
    """The numeric args both decoders take out, the event fields, counters, metadata, flows,
    memory events: the native scanner answers as the Python decoder does, or leaves the file to
    it (then `load` is the Python decoder's answer)."""
    path = tmp_path / "big.json"
    path.write_text(f'{{"traceEvents": [{BIG_POSITIONS[where]}, {OTHER}]}}')
    python = _decoded(decode_python, path)
    assert python[0] == "read"
    if _native.available():
        native = _decoded(chrome_native.decode_chrome, path)
        assert native in (python, ("declined", None))
    assert len(profview.load(path).events) == len(to_trace(decode_python(Source(path))).events)


@pytest.mark.parametrize("key", ["ts", "dur"])
def test_a_40_digit_time_is_refused_alike_by_both_decoders(tmp_path: Path, key: str) -> None:
    """A time beyond int64 nanoseconds: both refuse, with the package's error naming the file,
    the event and the key, and the same reason."""
    path = tmp_path / "big.json"
    event = json.loads(OTHER)
    event[key] = 0
    text = json.dumps(event).replace(f'"{key}": 0', f'"{key}": {BIG}')
    path.write_text(f'{{"traceEvents": [{text}]}}')
    reason = (f"'{key}'", "traceEvents[0]",
              "out of range (expected a time in microseconds within ±292 years)")
    python = _decoded(decode_python, path)
    assert python[0] == "error" and str(path) in python[1] and all(r in python[1] for r in reason)
    if _native.available():
        native = _decoded(chrome_native.decode_chrome, path)
        assert native[0] == "error" and str(path) in native[1] and all(r in native[1] for r in reason)
