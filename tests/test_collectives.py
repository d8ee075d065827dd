"""``analysis.collective_bandwidth`` / ``collective_summary`` against the files: sizes, bandwidths,
latency and skew counted here from the JSON (plain ``json``/``gzip``), on the real A100 NCCL trace,
the four-rank gloo DDP run (``ddp_shapes``) and a hand-written two-rank NCCL run."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jupyter_profview as profview
from jupyter_profview import analysis
from tests.format_helpers import ns, read_json

DATA = Path(__file__).parent / "data"
HTA = DATA / "hta"
SHAPES = DATA / "ddp_shapes"
FLOAT = 4


def events_of(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    data = read_json(path)
    return data, data["traceEvents"]


def test_nccl_kernels_sizes_and_bandwidths_equal_the_json() -> None:
    """The A100 trace: each NCCL kernel carries `Collective name`, `In msg nelems`, `dtype`
    (Float or Long), `Group size` (2); every CPU `nccl:*` annotation launched one of them, so the calls are
    the 21 kernels."""
    name = HTA / "nccl_parser_config_nccl_data.json.gz"
    _, events = events_of(name)
    kernels = sorted((e for e in events if e.get("cat") == "kernel" and "Collective name" in e["args"]),
                     key=lambda e: e["ts"])
    table = analysis.collective_bandwidth(profview.load(name))
    assert len(table) == len(kernels) == 21
    assert (table["side"] == "device").all() and (table["rank"] == 0).all()
    for row, e in zip(table.itertuples(index=False), kernels, strict=True):
        a = e["args"]
        nbytes = max(a["In msg nelems"], a["Out msg nelems"]) * {"Float": 4, "Long": 8}[a["dtype"]]
        n = a["Group size"]
        factor = 2 * (n - 1) / n if a["Collective name"] == "allreduce" else 1.0
        assert (row.name, row.process_group, row.group_size) == \
            (a["Collective name"], a["Process Group Name"], n)
        assert (row.bytes, row.dur) == (nbytes, ns(e["dur"]))
        assert row.algbw == pytest.approx(nbytes / ns(e["dur"]), rel=1e-12)
        assert row.busbw == pytest.approx(nbytes / ns(e["dur"]) * factor, rel=1e-12)
    # index: the k-th call of its (process group, name), counted in the file
    seen: dict[tuple[Any, Any], int] = {}
    want = []
    for e in kernels:
        key = (e["args"]["Process Group Name"], e["args"]["Collective name"])
        want.append(seen.get(key, 0))
        seen[key] = seen.get(key, 0) + 1
    assert table["index"].tolist() == want


def gloo_calls(path: Path) -> list[dict[str, Any]]:
    _, events = events_of(path)
    return sorted((e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("gloo:")),
                  key=lambda e: e["ts"])


def expected_bytes(e: dict[str, Any], world: int) -> int:
    (dims,) = e["args"]["Input Dims"][:1]
    assert e["args"]["Input type"][0] == "float"
    return math.prod(dims) * FLOAT * (world if e["name"] == "gloo:all_gather" else 1)


def test_gloo_ranks_sizes_latency_and_skew_equal_the_json() -> None:
    ts = profview.load_many(SHAPES, cache=False, progress=False, workers=1)
    world = len(ts)
    table = analysis.collective_bandwidth(ts)
    per_rank = {r: gloo_calls(SHAPES / f"rank-{r}.pt.trace.json.gz") for r in range(world)}
    assert len(table) == sum(len(c) for c in per_rank.values()) == 4 * 9
    factors = {"gloo:all_reduce": 2 * (world - 1) / world, "gloo:all_gather": (world - 1) / world,
               "gloo:broadcast": 1.0}
    for r, calls in per_rank.items():
        mine = table[table["rank"] == r].reset_index(drop=True)
        for k, e in enumerate(calls):
            row = mine.iloc[k]
            nbytes, dur = expected_bytes(e, world), ns(e["dur"])
            nth = sum(c["name"] == e["name"] for c in calls[:k])  # the k-th of its name (one group)
            assert (row["index"], row["name"], row["group_size"], row["bytes"], row["dur"]) == \
                (nth, e["name"], world, nbytes, dur)
            assert row["busbw"] == pytest.approx(nbytes / dur * factors[e["name"]], rel=1e-12)
    # across ranks: the k-th call; latency = the shortest dur, skew = latest minus earliest start
    summary = analysis.collective_summary(ts)
    base = {r: int(read_json(SHAPES / f"rank-{r}.pt.trace.json.gz")["baseTimeNanoseconds"])
            for r in range(world)}
    assert len(summary.calls) == 9
    for k, row in summary.calls.iterrows():
        calls = [per_rank[r][k] for r in range(world)]
        starts = [base[r] + ns(c["ts"]) for r, c in enumerate(calls)]
        latency = min(ns(c["dur"]) for c in calls)
        assert row["name"] == calls[0]["name"] and row["ranks"] == world
        assert row["latency"] == latency
        assert row["skew"] == max(starts) - min(starts)
        assert row["last_rank"] == int(np.argmax(starts))
        nbytes = expected_bytes(calls[0], world)
        assert row["algbw"] == pytest.approx(nbytes / latency, rel=1e-12)
        assert row["busbw"] == pytest.approx(nbytes / latency * factors[row["name"]], rel=1e-12)
    sizes = summary.sizes.set_index("name")
    assert sizes.loc["gloo:all_reduce", "calls"] == 3
    assert sizes.loc["gloo:all_reduce", "min_latency"] == summary.calls[
        summary.calls["name"] == "gloo:all_reduce"]["latency"].min()


def test_files_without_sizes_give_nan_bandwidth() -> None:
    # the DDP run recorded without record_shapes: gloo annotations without Input Dims
    trace = profview.load(DATA / "ddp" / "rank-0.pt.trace.json.gz")
    table = analysis.collective_bandwidth(trace)
    assert len(table) == len(gloo_calls(DATA / "ddp" / "rank-0.pt.trace.json.gz")) > 0
    assert table["bytes"].isna().all() and table["algbw"].isna().all() and table["busbw"].isna().all()
    # a trace without collectives: no rows, the same columns
    quiet = profview.load(HTA / "critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz")
    none = analysis.collective_bandwidth(quiet)
    assert len(none) == 0 and list(none.columns) == list(table.columns)
    assert len(analysis.collective_summary(quiet).calls) == 0


def nccl_rank(rank: int, start_us: float, kernel_us: float) -> dict[str, Any]:
    """One rank of a hand-written NCCL run: record_param_comms > nccl:all_reduce > the launch of
    an all-reduce kernel of `kernel_us` µs; 1,048,576 floats, group of 2."""
    params = {"Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576,
              "dtype": "Float", "Group size": 2, "Process Group Name": "0"}
    return {"distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}, "baseTimeNanoseconds": 0,
            "traceEvents": [
                {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": start_us,
                 "dur": 50, "args": params},
                {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": 1, "tid": 1,
                 "ts": start_us + 5, "dur": 40, "args": {}},
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                 "ts": start_us + 10, "dur": 5, "args": {"correlation": 7}},
                {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0,
                 "tid": 9, "ts": start_us + 20, "dur": kernel_us,
                 "args": {"correlation": 7, "device": 0, "stream": 9}},
            ]}


def test_worked_example_two_ranks(tmp_path: Path) -> None:
    """By hand: 1,048,576 floats = 4,194,304 bytes.  Rank 0's kernel runs 150 µs (it waited),
    rank 1's 100 µs (it arrived last, 30 µs later).  Per call: algbw = 4,194,304 B / 100,000 ns =
    41.94304 GB/s on rank 1, 27.96203 GB/s on rank 0; all_reduce over 2 ranks: busbw = algbw ×
    2(2−1)/2 = algbw.  Matched: latency 100 µs, skew 30 µs, last rank 1, busbw 41.94304 GB/s."""
    for rank, (start, dur) in enumerate(((1000.0, 150.0), (1030.0, 100.0))):
        (tmp_path / f"rank-{rank}.json").write_text(json.dumps(nccl_rank(rank, start, dur)))
    ts = profview.load_many(tmp_path, cache=False, progress=False, workers=1)
    table = analysis.collective_bandwidth(ts)
    assert table["bytes"].tolist() == [4194304.0, 4194304.0]
    assert table["name"].tolist() == ["allreduce", "allreduce"] and (table["side"] == "device").all()
    assert table["algbw"].tolist() == pytest.approx([4194304 / 150_000, 41.94304])
    assert table["busbw"].tolist() == pytest.approx([4194304 / 150_000, 41.94304])
    (call,) = analysis.collective_summary(ts).calls.itertuples(index=False)
    assert (call.latency, call.skew, call.last_rank) == (100_000, 30_000, 1)
    assert call.busbw == pytest.approx(41.94304)
    # the same size over 4 ranks is 2(4-1)/4 = 1.5x the algbw
    ops = np.array(["allreduce", "allgather", "broadcast", "barrier"], object)
    four = analysis.collectives.bus_factor(ops, np.array([4, 4, 4, 4]))
    assert four[:3].tolist() == [1.5, 0.75, 1.0] and math.isnan(four[3])
