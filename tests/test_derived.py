"""The derived layer (`jupyter_profview.derived`): steps, device activities, interval algebra and
queue lengths.

Expected values are counted here from the raw JSON of the real Kineto traces in `data/hta/` with
plain `json`/`gzip`, by brute force over points for the interval algebra, and from HTA 0.5.0's own
output (`data/hta_reference/`, written by `scripts/crosscheck/hta_queue_length.py`) for the queue
lengths.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jupyter_profview as profview
from jupyter_profview import analysis, derived

DATA = Path(__file__).parent / "data"
HTA = DATA / "hta"
FILES = sorted(p.name for p in HTA.glob("*.json.gz"))
HTA_QUEUES = json.loads((DATA / "hta_reference" / "queue_length.json").read_text())["files"]


def raw(name: str) -> list[dict[str, Any]]:
    doc = json.loads(gzip.decompress((HTA / name).read_bytes()), parse_float=Decimal)
    return doc if isinstance(doc, list) else doc["traceEvents"]


def ns(us: Any) -> int:
    return int((Decimal(us) * 1000).to_integral_value())


@pytest.mark.parametrize("name", FILES)
def test_steps_are_the_profiler_step_slices_of_the_file(name: str) -> None:
    """Every `ProfilerStep#N` X event: CPU side from `user_annotation`, device side from
    `gpu_user_annotation`, with the file's N, duration and start (relative to the first)."""
    found = [e for e in raw(name)
             if e.get("ph") == "X" and re.fullmatch(r"ProfilerStep#\d+", e.get("name", ""))]
    expected = sorted((("gpu" if e["cat"] == "gpu_user_annotation" else "cpu"), ns(e["ts"]), e["name"],
                        ns(e["dur"])) for e in found)
    table = analysis.steps(profview.load(HTA / name))
    assert list(table.columns) == ["event", "name", "number", "start", "end", "process", "thread", "side"]
    got = [(r.side, r.start, r.name, r.end - r.start) for r in table.itertuples()]
    assert [(s, n, d) for s, _, n, d in got] == [(s, n, d) for s, _, n, d in expected]
    if expected:
        assert [t - got[0][1] for _, t, _, _ in got] == [t - expected[0][1] for _, t, _, _ in expected]
    assert table["number"].tolist() == [int(n.split("#")[1]) for _, _, n, _ in expected]
    cpu = table[table["side"] == "cpu"]
    assert cpu["start"].is_monotonic_increasing


def test_steps_bare_name_and_other_annotations() -> None:
    trace = profview.load(DATA / "hta" / "nccl_parser_config_nccl_data.json.gz")
    assert len(derived.steps(trace, "ProfilerStep#5")) == 1  # the bare name of that annotation
    assert derived.steps(trace, "ProfilerStep#5")["number"].isna().all()
    assert len(derived.steps(trace, "no such annotation")) == 0
    assert derived.last_step_start(trace) == derived.steps(trace)["start"].iloc[-1]


@pytest.mark.parametrize("name", FILES)
def test_device_activities_kinds_counted_from_the_file(name: str) -> None:
    """Kernels split into NCCL / RCCL / gloo communication and computation, memcpy + memset as
    memory, `cuda_sync` events as sync, each sync linked to the runtime call of its correlation."""
    events = raw(name)
    x = [e for e in events if e.get("ph") == "X"]
    kernels = [e for e in x if e.get("cat") == "kernel"]
    comm = sum(bool(re.match(r"(?i)nccl|rccl", e["name"]) or "gloo:" in e["name"]) for e in kernels)
    expected = Counter({"communication": comm, "computation": len(kernels) - comm,
                        "memory": sum(e.get("cat") in ("gpu_memcpy", "gpu_memset") for e in x),
                        "sync": sum(e.get("cat") == "cuda_sync" for e in x)})
    table = analysis.device_activities(profview.load(HTA / name))
    assert Counter({k: v for k, v in table["kind"].value_counts().items() if v}) == +expected
    runtime = {e["args"]["correlation"]: e["name"] for e in x
               if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    sync = table[table["kind"] == "sync"]
    assert sync["launch_name"].tolist() == [runtime.get(int(c)) for c in sync["correlation"]]
    assert (table["end"] >= table["start"]).all() and table["start"].is_monotonic_increasing


def test_nccl_kernels_of_the_nccl_trace() -> None:
    names = Counter(e["name"] for e in raw("nccl_parser_config_nccl_data.json.gz")
                    if e.get("ph") == "X" and e.get("cat") == "kernel" and e["name"].startswith("nccl"))
    table = analysis.device_activities(profview.load(HTA / "nccl_parser_config_nccl_data.json.gz"))
    assert Counter(table.loc[table["kind"] == "communication", "name"]) == names
    assert sum(names.values()) == 21  # the file's 21 NCCL kernels


# -- interval algebra, brute force over the points of a small grid --------------------------------


def points(start: np.ndarray, end: np.ndarray, size: int) -> np.ndarray:
    grid = np.arange(size)
    out = np.zeros(size, bool)
    for s, e in zip(start.tolist(), end.tolist(), strict=True):
        out |= (grid >= s) & (grid < e)
    return out


def runs_of(mask: np.ndarray) -> list[tuple[int, int]]:
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


@pytest.mark.parametrize("seed", range(30))
def test_interval_algebra_matches_point_sets(seed: int) -> None:
    rng = np.random.default_rng(seed)
    size = 60

    def draw() -> tuple[np.ndarray, np.ndarray]:
        n = int(rng.integers(0, 8))
        s = rng.integers(0, size - 1, n)
        return s, s + rng.integers(0, 12, n).clip(max=size - s)

    a, b = draw(), draw()
    pa, pb = points(*a, size), points(*b, size)
    assert derived.union_length(*a) == pa.sum()
    s, e = derived.union(*a)
    # touching intervals are one run: the runs of the point set, except empty intervals dropped
    assert [(x, y) for x, y in zip(s.tolist(), e.tolist(), strict=True) if y > x] == runs_of(pa)
    assert list(zip(*map(np.ndarray.tolist, derived.intersection(a, b)), strict=True)) == runs_of(pa & pb)
    assert list(zip(*map(np.ndarray.tolist, derived.difference(a, b)), strict=True)) == runs_of(pa & ~pb)
    group = np.concatenate([np.zeros(len(a[0]), np.int64), np.ones(len(b[0]), np.int64)])
    lengths = derived.union_lengths(group, np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]), 2)
    assert lengths.tolist() == [pa.sum(), pb.sum()]


def test_union_with_gap_closes_short_gaps_only() -> None:
    s, e = derived.union(np.array([0.0, 12.0, 30.0]), np.array([10.0, 20.0, 35.0]), gap=2.0)
    assert s.tolist() == [0.0, 30.0] and e.tolist() == [20.0, 35.0]


def test_busy_per_group() -> None:
    import pandas as pd

    frame = pd.DataFrame({"gpu": ["b", "a", "a", "b"], "start": [0, 0, 5, 10], "end": [20, 10, 15, 15]})
    table = derived.busy(frame, "gpu")
    assert table["gpu"].tolist() == ["a", "b"] and table["busy"].tolist() == [15, 20]


# -- queue lengths: HTA 0.5.0's own numbers -------------------------------------------------------


@pytest.mark.parametrize("name", sorted(n for n, v in HTA_QUEUES.items() if v))
def test_queue_series_is_htas(name: str) -> None:
    """HTA's `get_queue_length_summary` (count, max and mean of its series, over the pairs
    launched before the last ProfilerStep as HTA's TraceAnalysis loads them): equal on every
    stream, the stream where a launch and a kernel share a timestamp included."""
    trace = profview.load(HTA / name)
    series = derived.queue_series(trace, before=derived.last_step_start(trace))
    got = {str(stream): g["queue_length"] for (_, stream), g in series.groupby(["gpu", "stream"])}
    assert sorted(got) == sorted(HTA_QUEUES[name])
    for stream, ref in HTA_QUEUES[name].items():
        assert (len(got[stream]), got[stream].max()) == (ref["count"], ref["max"]), stream
        assert got[stream].mean() == pytest.approx(ref["mean"], abs=1e-9), stream


def test_queue_levels_tie_rule() -> None:
    """At equal times on one stream a launch counts before a kernel start (HTA's concatenation
    order): the launch at 10 enqueues while the first kernel starts at 10 -> a transient 2."""
    trace = profview.load(HTA / "critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz")
    series = derived.queue_series(trace)
    s28 = series[series["stream"] == 28]
    times = s28["time"].tolist()
    tie = [t for t in set(times) if times.count(t) == 2]
    assert len(tie) == 1
    at_tie = s28[s28["time"] == tie[0]]
    assert at_tie["change"].tolist() == [1, -1] and at_tie["queue_length"].tolist() == [2, 1]


def test_cache_once_per_trace_and_fresh_after_a_new_table() -> None:
    trace = profview.load(HTA / "trace_compare_base_base.json.gz")
    assert derived.device_activities(trace) is derived.device_activities(trace)
    assert derived.steps(trace) is derived.steps(trace)
    copy = dataclasses.replace(trace)
    assert copy._derived == {}
    before = derived.device_activities(trace)
    trace.launches = trace.launches.iloc[:0]
    assert len(derived.device_activities(trace)) == 0 < len(before)
