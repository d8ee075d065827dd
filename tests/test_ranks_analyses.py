"""Analyses given a TraceSet answer rank by rank; the layers do not import upwards; Trace.sql.

Two ranks are built from one real file each, the second a copy of the first with its rank (and
its clock origin, ``baseTimeNanoseconds``) changed: both ranks call their device ``GPU 0``
(``cpu`` for memory), which pooling by device label would merge.  Each rank's rows must be the
single-Trace result of its file, with time columns moved by the clock offset that the copy was
given.  Row counts for ``Trace.sql`` come from the JSON (``tests.format_helpers.read_json``).
"""

from __future__ import annotations

import gzip
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import jupyter_profview as profview
from jupyter_profview import TraceSet, load_many
from jupyter_profview.analysis import (
    attribute,
    collective_calls,
    collective_skew,
    comm_comp_overlap,
    idle_time,
    kernel_breakdown,
    launch_stats,
    linked_events,
    live_at,
    op_efficiency,
    peak_time,
    queue_length,
    queue_length_series,
    stragglers,
    summary,
    temporal_breakdown,
    top,
    utilisation,
)
from jupyter_profview.errors import ProfviewError
from tests.format_helpers import read_json

pytest.importorskip("pyarrow")

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
GPU_FILE = DATA / "hta" / "trace_filter_sampled_rank-0.json.gz"  # one A100 rank, "GPU 0", no base time
MEMORY_FILE = DATA / "torch_mlp_train.json"  # CPU, profile_memory=True, device "cpu"
GPU_SHIFT = 5_000_000  # rank 1's origin, as written into its copy below
MEMORY_SHIFT = 1_000_000


@pytest.fixture(scope="module")
def gpu_set(tmp_path_factory: pytest.TempPathFactory) -> TraceSet:
    run = tmp_path_factory.mktemp("gpu")
    raw = gzip.decompress(GPU_FILE.read_bytes())
    head = b'"distributedInfo": {"backend": "nccl", "rank": 0,'
    assert raw.count(head) == 1 and b"baseTimeNanoseconds" not in raw
    (run / "a.json.gz").write_bytes(GPU_FILE.read_bytes())
    (run / "b.json.gz").write_bytes(gzip.compress(raw.replace(
        head, b'"baseTimeNanoseconds": %d, "distributedInfo": {"backend": "nccl", "rank": 1,' % GPU_SHIFT)))
    with pytest.warns(UserWarning, match="126 of 128 ranks have no file"):
        ts = load_many(run, cache=run / "cache", progress=False, workers=1)
    # without baseTimeNanoseconds a file's origin is its first ts; the copy's is GPU_SHIFT later
    assert ts.ranks == [0, 1] and ts.offsets == {0: 0, 1: GPU_SHIFT}
    return ts


@pytest.fixture(scope="module")
def gpu_alone() -> profview.Trace:
    trace = profview.load(GPU_FILE)
    assert set(trace.launches["gpu"].astype(str)) == {"GPU 0"}
    assert trace.launches["type"].astype(str).eq("communication").any()
    return trace


def rows_of(table: pd.DataFrame, rank: int) -> pd.DataFrame:
    assert list(table.columns[:1]) == ["rank"] and "index" not in table.columns
    return table[table["rank"] == rank].drop(columns="rank").reset_index(drop=True)


def shifted(frame: pd.DataFrame, columns: list[str], by: int) -> pd.DataFrame:
    out = frame.reset_index(drop=True).copy()
    for col in columns:
        out[col] = out[col] + by
    return out


DURATION_ANALYSES: list[Callable[..., pd.DataFrame]] = [
    kernel_breakdown, temporal_breakdown, comm_comp_overlap, idle_time, launch_stats, queue_length]


@pytest.mark.parametrize("analysis", DURATION_ANALYSES, ids=lambda f: f.__name__)
def test_gpu_analyses_answer_each_rank_alone(gpu_set: TraceSet, gpu_alone: profview.Trace,
                                             analysis: Callable[..., pd.DataFrame]) -> None:
    table = analysis(gpu_set)
    alone = analysis(gpu_alone).reset_index(drop=True)
    assert len(alone) > 0 and len(table) == 2 * len(alone)
    for rank in gpu_set.ranks:
        pd.testing.assert_frame_equal(rows_of(table, rank), alone, check_categorical=False)


def test_kernel_breakdown_by_name_counts_each_ranks_kernels_once(gpu_set: TraceSet) -> None:
    device = Counter(e["name"] for e in read_json(GPU_FILE)["traceEvents"]
                     if e.get("ph") == "X" and e.get("cat") in {"kernel", "gpu_memcpy", "gpu_memset"})
    table = kernel_breakdown(gpu_set, by="name")
    for rank in gpu_set.ranks:
        mine = rows_of(table, rank)
        assert dict(zip(mine["name"], mine["count"], strict=True)) == dict(device)


def test_gpu_time_columns_move_to_the_common_clock(gpu_set: TraceSet, gpu_alone: profview.Trace) -> None:
    rows = launch_stats(gpu_set, rows=True)
    series = queue_length_series(gpu_set)
    t0, t1 = 0, int(gpu_alone.launches["kernel_start"].max()) + GPU_SHIFT
    util = utilisation(gpu_set, t0, t1, 7)
    for rank, offset in gpu_set.offsets.items():
        pd.testing.assert_frame_equal(
            rows_of(rows, rank),
            shifted(launch_stats(gpu_alone, rows=True), ["kernel_start", "launch_start"], offset),
            check_categorical=False)
        pd.testing.assert_frame_equal(rows_of(series, rank),
                                      shifted(queue_length_series(gpu_alone), ["time"], offset))
        pd.testing.assert_frame_equal(
            rows_of(util, rank), shifted(utilisation(gpu_alone, t0 - offset, t1 - offset, 7),
                                         ["start", "end"], offset))
    with pytest.raises(ProfviewError, match="per rank"):
        linked_events(gpu_set, [0])


def test_collective_calls_answer_each_rank_alone(gpu_set: TraceSet, gpu_alone: profview.Trace) -> None:
    calls = collective_calls(gpu_set)
    calls_alone = collective_calls(gpu_alone)
    nccl = [e for e in read_json(GPU_FILE)["traceEvents"]
            if e.get("ph") == "X" and str(e.get("name", "")).startswith("nccl:")]
    assert len(calls_alone) >= len(nccl) > 0
    for rank, offset in gpu_set.offsets.items():
        pd.testing.assert_frame_equal(rows_of(calls, rank), shifted(calls_alone, ["start", "end"], offset),
                                      check_categorical=False, check_dtype=False)


def test_a_rank_the_set_lacks_or_a_trace_for_a_set_is_a_profview_error(gpu_set: TraceSet,
                                                                        gpu_alone: profview.Trace) -> None:
    with pytest.raises(ProfviewError, match="no rank 7"):
        attribute(gpu_set, rank=7)
    with pytest.raises(KeyError, match="no rank 7"):  # and still a mapping's missing key
        gpu_set[7]
    for cross_rank in (stragglers, collective_skew):
        with pytest.raises(ProfviewError, match="TraceSet"):
            cross_rank(gpu_alone)
    assert len(op_efficiency(gpu_alone)) > 0  # its shapes are in the file's args, which a set does not keep
    with pytest.raises(ProfviewError, match="shapes"):
        op_efficiency(gpu_set)


def test_top_of_a_set_is_on_the_common_clock(gpu_set: TraceSet, gpu_alone: profview.Trace) -> None:
    got = top(gpu_set, n=4, by="dur")
    alone = top(gpu_alone, n=4, by="dur")
    by_rank = {r: got[got["rank"] == r] for r in gpu_set.ranks}
    for rank, mine in by_rank.items():  # the same events on both ranks: two of each, ranks interleaved
        assert mine["id"].tolist() == alone.index[:2].tolist()
        assert (mine["start"].to_numpy() == alone["start"].to_numpy()[:2] + gpu_set.offsets[rank]).all()


def test_per_rank_keeps_named_indexes_and_drops_row_numbers(gpu_set: TraceSet) -> None:
    plain = gpu_set.per_rank(kernel_breakdown)
    assert list(plain.columns) == ["rank", "type", "count", "total", "share"]
    keyed = gpu_set.per_rank(lambda t: kernel_breakdown(t).set_index("type"))
    pd.testing.assert_frame_equal(keyed, plain[["rank", "type", "count", "total", "share"]])
    by_name = summary(gpu_set, "category")
    assert list(by_name.columns[:2]) == ["rank", "category"]
    with pytest.raises(TypeError, match="returning a DataFrame"):
        gpu_set.per_rank(lambda t: 1)


# -- memory ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def memory_set(tmp_path_factory: pytest.TempPathFactory) -> TraceSet:
    run = tmp_path_factory.mktemp("memory")
    text = MEMORY_FILE.read_text()
    base = read_json(MEMORY_FILE)["baseTimeNanoseconds"]
    key = f'"baseTimeNanoseconds": {base},'
    assert text.count(key) == 1
    (run / "rank0.json").write_text(text)
    (run / "rank1.json").write_text(text.replace(key, f'"baseTimeNanoseconds": {base + MEMORY_SHIFT},'))
    ts = load_many(run, cache=run / "cache", progress=False, workers=1)
    assert ts.offsets == {0: 0, 1: MEMORY_SHIFT}
    return ts


def test_memory_peak_and_live_set_per_rank(memory_set: TraceSet) -> None:
    alone = profview.load(MEMORY_FILE)
    assert set(alone.memory["device"].astype(str)) == {"cpu"}
    peaks = peak_time(memory_set)
    assert peaks["rank"].tolist() == [0, 1]
    single_peak = peak_time(alone)
    assert peaks["time"].tolist() == [single_peak, single_peak + MEMORY_SHIFT]
    assert peaks["bytes"].tolist() == [int(alone.memory["bytes"].max())] * 2
    live = live_at(memory_set, peaks)
    for rank, offset in memory_set.offsets.items():
        expected = shifted(live_at(alone, single_peak), ["alloc_time", "free_time"], offset)
        pd.testing.assert_frame_equal(rows_of(live, rank), expected, check_categorical=False)
        assert rows_of(live, rank)["bytes"].sum() == alone.memory["bytes"].max()
    # one instant of the common clock is a different instant of each rank's own clock
    at = single_peak + MEMORY_SHIFT
    same = live_at(memory_set, at)
    for rank, offset in memory_set.offsets.items():
        assert rows_of(same, rank)["owner"].tolist() == live_at(alone, at - offset)["owner"].tolist()
    with pytest.raises(ProfviewError, match="no rank 7"):
        live_at(memory_set, {7: 0})
    nobody = live_at(memory_set, {})  # no rank named: no row, the columns of every answer
    assert len(nobody) == 0 and list(nobody.columns) == list(live_at(memory_set, at).columns)


# -- layers --------------------------------------------------------------------------------------

def test_model_and_loading_do_not_import_duckdb() -> None:
    code = ("import sys, jupyter_profview as p; import jupyter_profview.model; "
            f"p.load({str(MEMORY_FILE)!r}); print('duckdb' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


# -- Trace.sql -------------------------------------------------------------------------------------

def test_trace_sql_counts_match_the_json() -> None:
    pytest.importorskip("duckdb")
    doc: dict[str, Any] = read_json(MEMORY_FILE)
    trace = profview.load(MEMORY_FILE)
    got = trace.sql("select name, count(*) as n from events where kind = 'slice' group by name")
    counted = Counter(e["name"] for e in doc["traceEvents"] if e.get("ph") == "X")
    assert dict(zip(got["name"], got["n"].astype(int), strict=True)) == dict(counted)
    memory = trace.sql("select count(*) as n, max(bytes) as top from memory")
    records = [e for e in doc["traceEvents"] if e.get("name") == "[memory]"]
    assert int(memory["n"][0]) == len(records)
    # the level after the highest record: the JSON's "Total Allocated"
    assert int(memory["top"][0]) == max(int(e["args"]["Total Allocated"]) for e in records)
