"""Many ranks: load_many, the Parquet cache, TraceSet tables and SQL, the rank analyses.

Fixtures: ``tests/data/ddp/`` (4 ranks of CPU DDP over gloo, rank 2 sleeps 30 ms per step; see its
README and ``make_ddp_traces.py``) and ``tests/data/hta/trace_filter_sampled_rank-*`` (2 real NCCL
ranks of a 128-rank job).
Expected values are counted from the JSON files with ``json`` (floats parsed as Decimal, so times
are exact), never taken from the code under test.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import statistics
import warnings
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_profview as profview
from jupyter_profview import ProfviewError, TraceSet, load_many
from jupyter_profview.analysis import collective_skew, step_times, stragglers
from jupyter_profview.ranks import parallel
from tests.format_helpers import ns, read_json, union_ns

DATA = Path(__file__).parent / "data"
DDP = DATA / "ddp"
HTA_RANKS = str(DATA / "hta" / "trace_filter_sampled_rank-*.json.gz")  # shared with the GPU tests
SLOW_RANK, SLEEP_NS = 2, 30_000_000  # make_ddp_traces.py defaults, as the fixture README says
INSTANT = {"i", "I", "R"}


def events_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The records that become rows of ``events``: X slices and instants other than [memory]."""
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"
            or (e.get("ph") in INSTANT and e.get("name") != "[memory]")]


def abs_start(doc: dict[str, Any], event: dict[str, Any]) -> int:
    return int(doc.get("baseTimeNanoseconds", 0)) + ns(event["ts"])


@pytest.fixture(scope="module")
def docs() -> dict[int, dict[str, Any]]:
    out = {}
    for path in sorted(DDP.glob("*.json.gz")):
        doc = read_json(path)
        out[doc["distributedInfo"]["rank"]] = doc
    return out


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    """A copy of the DDP fixture (the cache goes next to the traces)."""
    target = tmp_path / "run"
    target.mkdir()
    for path in DDP.glob("*.json.gz"):
        shutil.copy(path, target / path.name)
    return target


@pytest.fixture(scope="module")
def ts(tmp_path_factory: pytest.TempPathFactory) -> TraceSet:
    return load_many(DDP, cache=tmp_path_factory.mktemp("cache"), progress=False)


def chrome_file(path: Path, events: list[dict[str, Any]], info: dict[str, Any] | None = None) -> Path:
    doc: dict[str, Any] = {"traceEvents": events}
    if info is not None:
        doc = {"distributedInfo": info, **doc}
    path.write_text(json.dumps(doc))
    return path


SMALL = [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]


# -- discovery ------------------------------------------------------------------

def test_rank_comes_from_distributed_info_not_the_file_name(run_dir: Path, docs: dict[int, Any],
                                                            tmp_path: Path) -> None:
    # rename so that the names say the opposite order: rank-N.x holds rank (3 - N)
    for path in sorted(run_dir.glob("*.json.gz")):
        rank = read_json(path)["distributedInfo"]["rank"]
        path.rename(run_dir / f"other-rank-{3 - rank}.json.gz")
    got = load_many(run_dir, progress=False, cache=tmp_path / "c")
    for rank in got.ranks:
        assert read_json(got.files[rank])["distributedInfo"]["rank"] == rank
    assert got.info["rank_from"].eq("distributedInfo").all()
    assert got.world_size == docs[0]["distributedInfo"]["world_size"] and got.missing == []


def test_rank_from_file_name_patterns_then_sorted_order(tmp_path: Path) -> None:
    run = tmp_path / "names"
    run.mkdir()
    chrome_file(run / "a_rank-3.json", SMALL)
    chrome_file(run / "b_RANK_1.json", SMALL)
    chrome_file(run / "c_rank0.json", SMALL)
    chrome_file(run / "d_nothing.json", SMALL)
    got = load_many(run, progress=False, cache=tmp_path / "c")
    assert {r: got.files[r].name for r in got.ranks} == {
        0: "c_rank0.json", 1: "b_RANK_1.json", 2: "d_nothing.json", 3: "a_rank-3.json"}
    assert got.info.loc[2, "rank_from"] == "sorted order" and got.info.loc[3, "rank_from"] == "file name"
    assert got.missing == [] and got.world_size == 4


def test_two_files_claiming_one_rank_raise(tmp_path: Path) -> None:
    chrome_file(tmp_path / "x_rank1.json", SMALL)
    chrome_file(tmp_path / "y_rank_1.json", SMALL)
    with pytest.raises(ProfviewError, match="rank 1 claimed by two files"):
        load_many([tmp_path / "x_rank1.json", tmp_path / "y_rank_1.json"], progress=False)


def test_glob_and_list_sources(run_dir: Path, tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="2 of 4 ranks have no file: 2-3"):
        by_glob = load_many(str(run_dir / "rank-[01]*.json.gz"), progress=False, cache=tmp_path / "c")
    assert by_glob.ranks == [0, 1] and by_glob.missing == [2, 3]
    with pytest.raises(ProfviewError, match="matches no file"):
        load_many(str(run_dir / "nothing-*.json"), progress=False)


def test_a_missing_rank_is_reported(run_dir: Path, docs: dict[int, Any]) -> None:
    (run_dir / "rank-1.pt.trace.json.gz").unlink()
    with pytest.warns(UserWarning, match=r"1 of 4 ranks have no file: 1"):
        got = load_many(run_dir, progress=False)
    assert got.ranks == [0, 2, 3] and got.missing == [1]
    assert "missing=1" in repr(got)


def test_files_disagreeing_on_the_world_size_are_reported(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    chrome_file(run / "a.json", SMALL, {"rank": 0, "world_size": 2})
    chrome_file(run / "b.json", SMALL, {"rank": 1, "world_size": 4})
    chrome_file(run / "c.json", SMALL, {"rank": 2, "world_size": 4})
    with pytest.warns(UserWarning) as caught:
        got = load_many(run, progress=False, cache=tmp_path / "c")
    text = " ".join(str(w.message) for w in caught)
    assert "disagree on the world size: 2 in a.json; 4 in b.json, c.json" in text
    assert "1 of 4 ranks have no file: 3" in text
    assert got.world_size == 4 and got.missing == [3] and len(got.problems) == 1
    assert "disagree" in got.problems[0] and "problems=1" in repr(got)


def test_a_rank_not_below_the_world_size_is_reported(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    chrome_file(run / "a.json", SMALL, {"rank": 0, "world_size": 2})
    chrome_file(run / "b.json", SMALL, {"rank": 1, "world_size": 2})
    chrome_file(run / "x_rank5.json", SMALL)  # no distributedInfo: rank 5 from the name
    with pytest.warns(UserWarning) as caught:
        got = load_many(run, progress=False, cache=tmp_path / "c")
    text = " ".join(str(w.message) for w in caught)
    assert "not below the declared world size 2: rank 5 (file name) in x_rank5.json" in text
    assert "3 of 6 ranks have no file: 2-4" in text
    assert got.ranks == [0, 1, 5] and got.world_size == 6 and got.missing == [2, 3, 4]
    assert len(got.problems) == 1 and "rank 5" in got.problems[0]
    agreeing = run.parent / "agreeing"
    agreeing.mkdir()
    for name in ("a.json", "b.json"):
        shutil.copy(run / name, agreeing / name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to report
        assert load_many(agreeing, progress=False, cache=tmp_path / "c").problems == []


# -- bad ranks ------------------------------------------------------------------

def corrupt(run_dir: Path) -> Path:
    bad = run_dir / "rank-1.pt.trace.json.gz"
    text = gzip.decompress(bad.read_bytes())
    bad.write_bytes(gzip.compress(text[: len(text) // 2]))  # cut in the middle of traceEvents
    return bad


def test_a_corrupt_rank_raises_its_profview_error(run_dir: Path) -> None:
    bad = corrupt(run_dir)
    with pytest.raises(ProfviewError) as info:
        load_many(run_dir, progress=False, workers=1)
    assert str(bad) in str(info.value)


def test_on_error_skip_loads_the_good_ranks(run_dir: Path, docs: dict[int, Any]) -> None:
    bad = corrupt(run_dir)
    with pytest.warns(UserWarning, match="skipped 1 rank"):
        got = load_many(run_dir, progress=False, on_error="skip")
    assert got.ranks == [0, 2, 3] and "errors=1" in repr(got)
    assert isinstance(got.errors[1], ProfviewError) and got.errors[1].source == str(bad)
    counts = got.sql("select rank, count(*) as n from events group by rank order by rank")
    expected = {r: len(events_of(docs[r])) for r in (0, 2, 3)}
    assert dict(zip(counts["rank"], counts["n"], strict=True)) == expected
    assert not got._lru  # loading and querying hold no rank's tables in this process


def test_on_error_must_be_raise_or_skip(run_dir: Path) -> None:
    with pytest.raises(ValueError, match="on_error"):
        load_many(run_dir, on_error="ignore")


# -- the cache --------------------------------------------------------------------

def test_reopen_reads_the_cache_without_parsing(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_many(run_dir, progress=False)
    assert not any(first.cached.values())
    cache = run_dir / ".profview-cache"
    manifests = sorted(cache.glob("*/rank.json"))
    assert len(manifests) == 4
    stamps = [p.stat().st_mtime_ns for p in manifests]

    def no_parse(task: Any) -> Any:
        raise AssertionError(f"parsed {task.path} again")

    monkeypatch.setattr(parallel, "load_rank", no_parse)
    again = load_many(run_dir, progress=False)
    assert all(again.cached.values())
    assert [p.stat().st_mtime_ns for p in manifests] == stamps
    pd.testing.assert_frame_equal(again.sql("select rank, count(*) from events group by all order by 1"),
                                  first.sql("select rank, count(*) from events group by all order by 1"))
    # a changed file is a new cache entry (parsed again)
    monkeypatch.undo()
    touched = run_dir / "rank-0.pt.trace.json.gz"
    touched.write_bytes(touched.read_bytes())
    third = load_many(run_dir, progress=False)
    assert third.cached == {0: False, 1: True, 2: True, 3: True}


def test_a_new_cache_format_makes_new_entries(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_profview.ranks import cache

    first = load_many(run_dir, progress=False, workers=1)
    manifest = json.loads((first.entry(0) / cache.MANIFEST).read_text())
    assert manifest["cache_format"] == cache.CACHE_FORMAT
    monkeypatch.setattr(cache, "CACHE_FORMAT", cache.CACHE_FORMAT + 1)
    again = load_many(run_dir, progress=False, workers=1)
    assert not any(again.cached.values())  # parsed again, into entries of the new layout
    assert all(again.entry(r) != first.entry(r) and first.entry(r).is_dir() for r in first.ranks)
    assert json.loads((again.entry(0) / cache.MANIFEST).read_text())["cache_format"] == cache.CACHE_FORMAT


def test_rank_trace_from_cache_matches_a_direct_load(ts: TraceSet) -> None:
    for rank in (0, 2):
        direct = profview.load(ts.files[rank])
        cached = ts[rank]
        assert list(cached.events.columns) == list(direct.events.columns)
        pd.testing.assert_frame_equal(cached.events, direct.events, check_categorical=False)
        pd.testing.assert_frame_equal(cached.flows.reset_index(drop=True),
                                      direct.flows.reset_index(drop=True), check_categorical=False)
        assert cached.quality.as_dict() == direct.quality.as_dict()
    assert ts[0] is ts[0]  # kept in the LRU


# -- tables and SQL ------------------------------------------------------------------

def test_sql_counts_match_the_json(ts: TraceSet, docs: dict[int, Any]) -> None:
    got = ts.sql("select rank, name, count(*) as n from events group by rank, name")
    counted = {(r, name): n for r in docs
               for name, n in Counter(e["name"] for e in events_of(docs[r])).items()}
    assert {(int(r), n): int(c) for r, n, c in got.itertuples(index=False)} == counted
    flows = ts.sql("select rank, count(*) as n from flows group by rank")
    starts = {r: sum(1 for e in docs[r]["traceEvents"] if e.get("ph") == "s") for r in docs}
    assert dict(zip(flows["rank"], flows["n"], strict=True)) == starts


def test_concatenated_events_have_rank_and_one_clock(ts: TraceSet, docs: dict[int, Any]) -> None:
    events = ts.events
    assert events["rank"].value_counts().to_dict() == {r: len(events_of(d)) for r, d in docs.items()}
    assert isinstance(events["name"].dtype, pd.CategoricalDtype)
    # ProfilerStep#2 on the common clock: differences between ranks are the absolute differences
    step = {r: next(e for e in d["traceEvents"] if e.get("name") == "ProfilerStep#2")
            for r, d in docs.items()}
    absolute = {r: abs_start(docs[r], e) for r, e in step.items()}
    mine = events[events["name"] == "ProfilerStep#2"].set_index("rank")["start"]
    for r in docs:
        assert mine[r] - mine[0] == absolute[r] - absolute[0]
    # the origin is the earliest record of any rank
    first = min(int(d["baseTimeNanoseconds"]) + min(ns(e["ts"]) for e in d["traceEvents"] if "ts" in e)
                for d in docs.values())
    assert ts.origin_ns == first
    assert {r: int(mine[r]) + ts.origin_ns for r in docs} == absolute


def test_single_trace_sql(docs: dict[int, Any]) -> None:
    trace = profview.load(DDP / "rank-2.pt.trace.json.gz")
    got = profview.sql(trace, "select count(*) as n, sum(dur) as d from events "
                              "where name = 'gloo:all_reduce'")
    mine = [e for e in docs[2]["traceEvents"] if e.get("name") == "gloo:all_reduce"]
    assert int(got["n"][0]) == len(mine) and int(got["d"][0]) == sum(ns(e["dur"]) for e in mine)


def test_missing_duckdb_names_the_install_command(ts: TraceSet, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "duckdb", None)
    fresh = TraceSet(ts._rank_files, ts._manifests, ts.world_size, [], {}, ts.cached)
    with pytest.raises(ImportError, match=r"pip install 'jupyter_profview\[ranks\]'"):
        fresh.sql("select 1")


def test_quality_per_rank_accounts_for_every_record(ts: TraceSet, docs: dict[int, Any]) -> None:
    assert sorted(ts.quality) == [0, 1, 2, 3]
    for rank, q in ts.quality.items():
        assert q.records_read == len(docs[rank]["traceEvents"]) and q.unaccounted == 0


def test_summary_accepts_a_traceset(ts: TraceSet) -> None:
    got = profview.summary(ts, "name")
    assert set(got["rank"]) == {0, 1, 2, 3}
    one = profview.summary(ts[3], "name").reset_index()
    pd.testing.assert_frame_equal(got[got["rank"] == 3].drop(columns="rank").reset_index(drop=True), one)
    assert list(profview.phases(ts)["rank"].unique()) == [0, 1, 2, 3]


# -- analyses ------------------------------------------------------------------------

def test_step_times_numbers_and_durations_match_the_json(ts: TraceSet, docs: dict[int, Any]) -> None:
    got = step_times(ts)
    expected = sorted((int(e["name"].split("#")[1]), r, ns(e["dur"])) for r, d in docs.items()
                      for e in d["traceEvents"] if re.fullmatch(r"ProfilerStep#\d+", e.get("name", "")))
    assert list(zip(got["step"], got["rank"], got["dur"], strict=True)) == expected
    assert got["step"].min() == 2  # schedule(wait=1, warmup=1): the first recorded step is #2


def step_waits(doc: dict[str, Any]) -> dict[int, tuple[int, int]]:
    """ProfilerStep#N -> (its dur, the union of its gloo:* slices clipped to it), from the JSON."""
    gloo = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in doc["traceEvents"]
            if e.get("ph") == "X" and str(e.get("name", "")).startswith("gloo:")]
    out = {}
    for e in doc["traceEvents"]:
        m = re.fullmatch(r"ProfilerStep#(\d+)", str(e.get("name", "")))
        if m and e.get("ph") == "X":
            s0, s1 = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
            inside = [(max(a, s0), min(b, s1)) for a, b in gloo if min(b, s1) > max(a, s0)]
            out[int(m[1])] = (s1 - s0, union_ns(inside))
    return out


def test_stragglers_finds_the_slow_rank(ts: TraceSet, docs: dict[int, Any]) -> None:
    counted = {(step, r): dw for r, d in docs.items() for step, dw in step_waits(d).items()}
    per_rank = stragglers(ts, per_rank=True)
    got = {(s, r): (d, w) for s, r, d, w in zip(per_rank["step"], per_rank["rank"], per_rank["dur"],
                                                per_rank["wait"], strict=True)}
    assert got == counted
    # the rank that slept: its trace alone has the slow_rank_sleep record_function
    sleepers = {r for r, d in docs.items()
                if any(e.get("name") == "slow_rank_sleep" for e in d["traceEvents"])}
    assert sleepers == {SLOW_RANK}
    got_slow = stragglers(ts)
    assert got_slow["step"].tolist() == sorted({s for s, _ in counted}) == [2, 3, 4]
    for row in got_slow.itertuples():
        compute = {r: d - w for (s, r), (d, w) in counted.items() if s == row.step}
        others = [c for r, c in compute.items() if r != SLOW_RANK]
        assert row.rank == SLOW_RANK == max(compute, key=lambda r: compute[r])
        assert row.compute == compute[SLOW_RANK] and row.others_compute == int(statistics.median(others))
        assert row.excess == int(compute[SLOW_RANK] - statistics.median(others))
        assert 0.7 * SLEEP_NS < row.excess < 1.3 * SLEEP_NS, row


def test_collective_skew_matches_instances_across_ranks(ts: TraceSet, docs: dict[int, Any]) -> None:
    got = collective_skew(ts)
    starts: dict[tuple[str, int], dict[int, int]] = defaultdict(dict)
    ends: dict[tuple[str, int], dict[int, int]] = defaultdict(dict)
    for r, d in docs.items():
        seen: Counter[str] = Counter()
        for e in sorted((e for e in d["traceEvents"] if str(e.get("name", "")).startswith("gloo:")),
                        key=lambda e: Decimal(e["ts"])):
            starts[(e["name"], seen[e["name"]])][r] = abs_start(d, e)
            ends[(e["name"], seen[e["name"]])][r] = abs_start(d, e) + ns(e["dur"])
            seen[e["name"]] += 1
    assert len(got) == len(starts) and (got["ranks"] == 4).all()
    for row in got.itertuples():
        mine, out = starts[(row.name, row.seq)], ends[(row.name, row.seq)]
        assert row.first_start + ts.origin_ns == min(mine.values())
        assert row.start_spread == max(mine.values()) - min(mine.values())
        assert row.end_spread == max(out.values()) - min(out.values())
        assert row.first_rank in {r for r, t in mine.items() if t == min(mine.values())}
        assert row.last_rank in {r for r, t in mine.items() if t == max(mine.values())}
    reduce = got[got["name"] == "gloo:all_reduce"]
    assert (reduce["last_rank"] == SLOW_RANK).all()


def test_aligned_on_a_step_starts_it_together(ts: TraceSet) -> None:
    aligned = ts.aligned(step=3)
    steps = step_times(aligned)
    assert steps[steps["step"] == 3]["start"].nunique() == 1
    assert steps[steps["step"] == 2]["start"].nunique() > 1
    with pytest.raises(ProfviewError, match="no ProfilerStep#99"):
        ts.aligned(step=99)
    on_reduce = ts.aligned(collective=("gloo:all_reduce", 1))
    skew = collective_skew(on_reduce)
    assert skew[(skew["name"] == "gloo:all_reduce") & (skew["seq"] == 1)]["end_spread"].tolist() == [0]
    assert (skew[skew["name"] == "gloo:all_reduce"]["end_spread"] > 0).sum() == 2  # only that one lines up
    with pytest.raises(ProfviewError, match="one of step= or collective="):
        ts.aligned()


def test_real_nccl_ranks_of_a_128_rank_job(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="126 of 128 ranks have no file: 2-127"):
        got = load_many(HTA_RANKS, progress=False, cache=tmp_path)
    assert got.ranks == [0, 1] and got.world_size == 128
    skew = collective_skew(got)
    for name in ("nccl:all_reduce", "nccl:all_to_all", "nccl:_all_gather_base"):
        counts = [sum(1 for e in read_json(got.files[r])["traceEvents"] if e.get("name") == name)
                  for r in (0, 1)]
        assert len(skew[skew["name"] == name]) == max(counts)
    # the NCCL kernels (where the GPU waits) are matched by k-th occurrence too
    kernels = {r: sorted(ns(e["ts"]) for e in read_json(got.files[r])["traceEvents"]
                         if str(e.get("name", "")).startswith("ncclKernel")) for r in (0, 1)}
    mine = skew[skew["name"].str.startswith("ncclKernel")].sort_values("seq")
    assert len(mine) == len(kernels[0]) == len(kernels[1])
    assert mine["start_spread"].tolist() == [abs(a - b) for a, b in zip(kernels[0], kernels[1], strict=True)]
    # HTA files have no baseTimeNanoseconds: ts is epoch microseconds
    first = {r: min(ns(e["ts"]) for e in read_json(got.files[r])["traceEvents"] if "ts" in e) for r in (0, 1)}
    assert got.origin_ns == min(first.values())
    assert got.offsets == {r: first[r] - got.origin_ns for r in (0, 1)}


# -- where it runs -----------------------------------------------------------------------

def test_process_pool_and_dask_give_the_same_tables(ts: TraceSet, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    query = "select rank, name, count(*) as n, sum(dur) as d from events group by all order by all"
    pooled = load_many(DDP, cache=tmp_path / "pool", workers=2, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
    with cluster, distributed.Client(cluster) as client:
        dasked = load_many(DDP, client=client, cache=tmp_path / "dask", progress=False)
        workers = set(client.run(os.getpid).values())
    assert len(workers) == 2 and os.getpid() not in workers  # the ranks were parsed in other processes
    expected = ts.sql(query)
    pd.testing.assert_frame_equal(pooled.sql(query), expected)
    pd.testing.assert_frame_equal(dasked.sql(query), expected)
    assert not any(dasked.cached.values())


def test_cache_false_uses_a_temporary_directory(tmp_path: Path) -> None:
    got = load_many(DDP, cache=False, progress=False, workers=1)
    entry = got.entry(0)
    assert entry.is_dir() and not str(entry).startswith(str(DDP))
    del got
    import gc

    gc.collect()
    assert not entry.exists()


def test_cache_false_removes_what_ended_processes_left(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import subprocess
    import sys
    import tempfile
    import time

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                           text=True, check=True)
    dead, alive = int(ended.stdout), os.getpid()
    old = time.time() - 3600
    left = {}
    for name, pid in (("dead", dead), ("alive", alive)):
        left[name] = tmp_path / f"profview-ranks-{pid}-x{name}"
        (left[name] / "entry").mkdir(parents=True)
        os.utime(left[name], (old, old))
    fresh = tmp_path / f"profview-ranks-{dead}-fresh"  # just made: may be a process starting up
    fresh.mkdir()
    got = load_many(DDP, cache=False, progress=False, workers=1)
    assert got.entry(0).parent.name.startswith(f"profview-ranks-{alive}-")
    assert not left["dead"].exists() and left["alive"].exists() and fresh.exists()


# -- the widget ------------------------------------------------------------------------------

def test_show_puts_every_rank_in_one_widget(ts: TraceSet, docs: dict[int, Any]) -> None:
    pytest.importorskip("anywidget")
    w = profview.show(ts)
    ev = w.trace.events
    assert len(ev) == sum(len(events_of(d)) for d in docs.values())
    assert (ev.index.to_numpy() == np.arange(len(ev))).all() and ev["start"].is_monotonic_increasing
    # data carries data: each rank's own processes and tracks, as the rank alone has them, its rank
    # in a column (no display text baked in)
    for rank, frame in ev.groupby("rank"):
        alone = ts[rank].events
        assert set(frame["process"].astype(str)) == set(alone["process"].astype(str))
        counts = frame["track"].astype(str).value_counts().to_dict()
        assert counts == alone["track"].astype(str).value_counts().to_dict()
    assert {t["section"] for t in w._tracks} == {f"rank {r}" for r in docs}
    assert all(t["key"] == f"rank {t['rank']}/{t['process']}" for t in w._tracks)
    parent = ev["parent"].to_numpy()
    nested = parent >= 0
    assert (ev["rank"].to_numpy()[nested] == ev["rank"].to_numpy()[parent[nested]]).all()
    steps = ev.index[ev["name"] == "ProfilerStep#3"].tolist()
    w._selection = {"ids": steps}
    assert sorted(w.selection["rank"]) == [0, 1, 2, 3]
    one = profview.show(ts, ranks=[2])
    assert set(one.trace.events["rank"]) == {2}


# -- gloo threads with two thread_name records ----------------------------------------------

@pytest.mark.parametrize("order", [("python", "pt_gloo_runloop"), ("pt_gloo_runloop", "python")])
def test_a_thread_named_twice_keeps_the_informative_name(tmp_path: Path, order: tuple[str, str]) -> None:
    names = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": f"thread 7 ({n})"}}
             for n in order]
    work = {"ph": "X", "name": "gloo:all_reduce", "pid": 1, "tid": 7, "ts": 1, "dur": 2}
    trace = profview.load(chrome_file(tmp_path / "t.json", [*names, work]))
    assert trace.events["thread"].astype(str).tolist() == ["thread 7 (pt_gloo_runloop)"]
    assert trace.metadata["thread_names"] == [{"pid": "1", "tid": "7", "kept": "thread 7 (pt_gloo_runloop)",
                                               "names": [f"thread 7 ({n})" for n in order]}]
    assert "other_metadata" not in trace.metadata  # thread_name records are not unrecognised ones


def test_gloo_threads_of_the_ddp_fixture_are_named_runloop(docs: dict[int, Any]) -> None:
    for rank, doc in docs.items():
        gloo_tids = {e["tid"] for e in doc["traceEvents"] if str(e.get("name", "")).startswith("gloo:")}
        named = {(e["tid"], e["args"]["name"]) for e in doc["traceEvents"] if e.get("name") == "thread_name"}
        assert any(t in gloo_tids and "(python)" in n for t, n in named)  # the fixture has the clash
        trace = profview.load(DDP / f"rank-{rank}.pt.trace.json.gz")
        threads = trace.events[trace.events["name"].astype(str).str.startswith("gloo:")]["thread"]
        assert threads.astype(str).str.endswith("(pt_gloo_runloop)").all()
        names: dict[tuple[str, str], list[str]] = defaultdict(list)
        for e in doc["traceEvents"]:
            seen = names[(str(e.get("pid")), str(e.get("tid")))]
            if e.get("name") == "thread_name" and e["args"]["name"] not in seen:
                seen.append(e["args"]["name"])
        twice = {k: v for k, v in names.items() if len(v) > 1}
        assert twice and {(t["pid"], t["tid"]): t["names"] for t in trace.metadata["thread_names"]} == twice
        assert all(t["kept"].endswith("(pt_gloo_runloop)") for t in trace.metadata["thread_names"])


def test_workers_are_bounded_by_cores_files_and_memory() -> None:
    import os

    import psutil

    from jupyter_profview.ranks.discover import RankFile

    def files(n: int, data_bytes: int) -> list[RankFile]:
        return [RankFile(Path(f"r{i}"), i, "file name", None, 1, 0, data_bytes) for i in range(n)]

    cores = len(os.sched_getaffinity(0))
    assert parallel.plan_workers(files(64, 1000)) == cores
    assert parallel.plan_workers(files(1, 1000)) == 1
    too_big = int(psutil.virtual_memory().available)  # x2 per worker: more than the budget
    assert parallel.plan_workers(files(8, too_big)) == 1
    assert parallel.plan_workers(files(8, 1000), requested=3) == 3


WRAP = 2**32  # gzip's ISIZE trailer is the size modulo this (RFC 1952)


@pytest.mark.parametrize("true_size, ratio", [(1000, 10.0), (50 * 2**20, 12.0), (5 * 2**30, 8.0),
                                               (5 * 2**30, 60.0), (9 * 2**30 + 7, 3.0), (40 * 2**30, 30.0)])
def test_gzip_size_estimate_is_never_low_and_fits_the_trailer(true_size: int, ratio: float) -> None:
    from jupyter_profview.ranks.discover import MAX_GZIP_RATIO, gzip_data_size

    compressed = int(true_size / ratio)
    got = gzip_data_size(true_size % WRAP, compressed)
    assert got >= true_size and got % WRAP == true_size % WRAP
    assert got <= max(true_size, compressed * MAX_GZIP_RATIO)  # within the assumed ratio
    if compressed * MAX_GZIP_RATIO < WRAP:  # small files: the trailer is the size
        assert got == true_size


def test_gzip_size_of_real_and_wrapped_files(tmp_path: Path) -> None:
    from jupyter_profview.ranks.discover import data_size

    real = DDP / "rank-0.pt.trace.json.gz"
    assert data_size(real, real.stat().st_size) == len(gzip.decompress(real.read_bytes()))
    # a 300 MB gzip file (sparse) whose trailer says 123 bytes: it wrapped at least once
    big = tmp_path / "big.json.gz"
    with open(big, "wb") as f:
        f.write(b"\x1f\x8b\x08\x00")
        f.truncate(300 * 10**6)
        f.seek(-4, os.SEEK_END)
        f.write((123).to_bytes(4, "little"))
    got = data_size(big, big.stat().st_size)
    assert got >= 300 * 10**6 and got % WRAP == 123


def test_ranks_with_and_without_memory_concatenate(tmp_path: Path) -> None:
    shutil.copy(DATA / "torch_mlp_train.json", tmp_path / "rank0.json")
    chrome_file(tmp_path / "rank1.json", SMALL)
    got = load_many(tmp_path, progress=False, workers=1)
    direct = profview.load(DATA / "torch_mlp_train.json")
    for table in ("memory", "allocations", "flows", "events"):
        frame = getattr(got, table)
        assert frame["rank"].value_counts().to_dict() == {
            r: n for r, n in ((0, len(getattr(direct, table))), (1, len(getattr(got[1], table)))) if n}
        sql = got.sql(f"select count(*) as n from {table}")
        assert int(sql["n"][0]) == len(frame)
    assert len(got.memory) > 0 and isinstance(got.memory["device"].dtype, pd.CategoricalDtype)


def test_unwritable_trace_dir_uses_the_user_cache_dir(run_dir: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_profview.ranks import cache

    real_mkdir = Path.mkdir

    def mkdir(self: Path, *args: Any, **kwargs: Any) -> None:
        if self.name == cache.CACHE_NAME:
            raise PermissionError(13, "read-only", str(self))
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    monkeypatch.setenv("PROFVIEW_CACHE_DIR", str(tmp_path / "user"))
    got = load_many(run_dir, progress=False, workers=1)
    assert got.entry(0).parent == tmp_path / "user"
    assert not (run_dir / cache.CACHE_NAME).exists()


def test_per_rank_runs_any_single_trace_analysis(tmp_path: Path) -> None:
    from jupyter_profview.analysis import kernel_breakdown

    with pytest.warns(UserWarning, match="126 of 128"):
        got = load_many(HTA_RANKS, progress=False, cache=tmp_path)
    table = got.per_rank(kernel_breakdown)
    assert "index" not in table.columns
    for rank in got.ranks:
        mine = table[table["rank"] == rank].drop(columns="rank").reset_index(drop=True)
        alone = kernel_breakdown(profview.load(got.files[rank]))
        pd.testing.assert_frame_equal(mine, alone, check_categorical=False, check_dtype=False)


def test_combined_keeps_each_ranks_threads_apart(ts: TraceSet, docs: dict[int, Any]) -> None:
    """`TraceSet.combined()` keeps each rank's own process and thread values; the analyses that
    nest per thread (attribution, efficiency, the critical path) still see one thread per rank's
    (pid, tid), counted in the files."""
    from jupyter_profview.analysis.columns import thread_keys

    both = ts.combined()
    want = sum(len({(e["pid"], e["tid"]) for e in events_of(d)}) for d in docs.values())
    assert len(np.unique(thread_keys(both.events))) == want
    assert sorted(both.info.ranks) == sorted(docs) and both.info.align is None
    with pytest.raises(ProfviewError, match="align"):
        ts.combined(align="middle")


def test_show_carries_launches_and_flows_to_the_right_events(tmp_path: Path) -> None:
    pytest.importorskip("anywidget")
    with pytest.warns(UserWarning, match="126 of 128"):
        got = load_many(HTA_RANKS, progress=False, cache=tmp_path)
    both = got.combined()
    ev = both.events
    for rank in got.ranks:
        alone = profview.load(got.files[rank])
        mine = both.launches[ev.loc[both.launches["kernel"], "rank"].to_numpy() == rank]
        assert len(mine) == len(alone.launches) > 0
        assert ev.loc[mine["kernel"], "rank_id"].tolist() == alone.launches["kernel"].tolist()
        launched = mine["launch"].dropna().astype(np.int64)
        assert ev.loc[launched, "rank_id"].tolist() == alone.launches["launch"].dropna().tolist()
        flows = both.flows[both.flows["rank"] == rank]
        src = flows["source"].to_numpy()
        assert ev.loc[src[src >= 0], "rank_id"].tolist() == \
            alone.flows["source"].to_numpy()[alone.flows["source"].to_numpy() >= 0].tolist()


def test_a_directory_without_traces_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a trace")
    with pytest.raises(ProfviewError, match="no trace files in this directory"):
        load_many(tmp_path, progress=False)


# -- launches and counters through the cache ------------------------------------------

AMD = DATA / "hta" / "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"  # no distributedInfo
DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}


def two_ranks_of(source: Path, target: Path) -> Path:
    target.mkdir()
    suffix = "".join(source.suffixes[-2:]) if source.name.endswith(".gz") else source.suffix
    for rank in (0, 1):
        shutil.copy(source, target / f"rank-{rank}{suffix}")
    return target


def test_launches_survive_the_cache(tmp_path: Path) -> None:
    device = sum(1 for e in read_json(AMD)["traceEvents"]
                 if e.get("ph") == "X" and e.get("cat") in DEVICE_CATEGORIES)
    alone = profview.load(AMD).launches
    assert len(alone) == device > 0
    run = two_ranks_of(AMD, tmp_path / "run")
    first = load_many(run, cache=tmp_path / "cache", progress=False, workers=2)
    again = load_many(run, cache=tmp_path / "cache", progress=False)  # read back from the cache
    assert not any(first.cached.values()) and all(again.cached.values())
    for got in (first, again):
        assert got.ranks == [0, 1]
        assert got.launches["rank"].value_counts().sort_index().tolist() == [device, device]
        assert got.sql("select rank, count(*) as n from launches group by rank order by rank")["n"].tolist() \
            == [device, device]
        for rank in got.ranks:
            pd.testing.assert_frame_equal(got[rank].launches.reset_index(drop=True),
                                          alone.reset_index(drop=True), check_categorical=False)
    # times on the common clock: the copies share one origin, so both ranks' kernels start alike
    starts = first.launches.groupby("rank")["kernel_start"].apply(list)
    assert starts[0] == starts[1]


def test_counters_survive_the_cache(tmp_path: Path) -> None:
    source = DATA / "chrome_counters_async.json"
    counted = sum(isinstance(v, (int, float)) for e in json.loads(source.read_text())["traceEvents"]
                  if e.get("ph") == "C" for v in (e.get("args") or {}).values())  # one row per numeric series
    alone = profview.load(source).counters
    assert alone is not None and len(alone) > 0
    run = two_ranks_of(source, tmp_path / "run")
    load_many(run, cache=tmp_path / "cache", progress=False, workers=1)
    got = load_many(run, cache=tmp_path / "cache", progress=False)
    assert all(got.cached.values())
    assert got.counters["rank"].value_counts().sort_index().tolist() == [len(alone)] * 2
    for rank in got.ranks:
        counters = got[rank].counters
        assert counters is not None
        pd.testing.assert_frame_equal(counters.reset_index(drop=True), alone.reset_index(drop=True),
                                      check_categorical=False)
    assert len(alone) == counted


def test_parquet_export_writes_launches_where_the_trace_has_them(tmp_path: Path) -> None:
    from jupyter_profview.export import write_parquet

    trace = profview.load(AMD)
    written = {p.name for p in write_parquet(trace, tmp_path / "out.parquet")}
    assert "out.launches.parquet" in written
    back = pd.read_parquet(tmp_path / "out.launches.parquet")
    assert back["kernel"].tolist() == trace.launches["kernel"].tolist()
    assert back["name"].astype(str).tolist() == trace.launches["name"].astype(str).tolist()
    cpu_only = profview.load(DATA / "hta" / "cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    assert len(cpu_only.launches) == 0
    names = {p.name for p in write_parquet(cpu_only, tmp_path / "cpu.parquet")}
    assert "cpu.launches.parquet" not in names and "cpu.events.parquet" in names


def test_cache_files_are_lean_but_complete(ts: TraceSet, docs: dict[int, Any]) -> None:
    import pyarrow.parquet as pq

    for rank in ts.ranks:
        meta = pq.ParquetFile(ts.table_files("events")[rank]).metadata
        columns = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i)
                   for i in range(meta.num_columns)}
        assert columns["start"].statistics is not None and columns["start"].statistics.has_min_max
        assert columns["dur"].statistics is None or not columns["dur"].statistics.has_min_max
        rows = sum(meta.row_group(i).num_rows for i in range(meta.num_row_groups))
        assert rows == len(events_of(docs[rank]))


def test_quality_survives_the_cache_manifest_and_adds_up() -> None:
    from dataclasses import fields

    from jupyter_profview.model import Quality

    q = Quality(records_read=10, placed=Counter({"events": 7}), skipped=Counter({"metadata": 3}))
    counters = [f.name for f in fields(Quality) if f.name not in ("records_read", "placed", "skipped")]
    for k, name in enumerate(counters, start=1):  # every counter nonzero, each a different value
        setattr(q, name, k)
    assert Quality.from_dict(q.as_dict()).as_dict() == q.as_dict()
    total = Quality()
    total.add(q)
    total.add(q)
    assert total.records_read == 20 and total.placed == Counter({"events": 14})
    assert all(getattr(total, name) == 2 * getattr(q, name) for name in counters)


def test_a_script_read_from_stdin_loads_its_ranks(tmp_path: Path) -> None:
    """Worker processes re-import the main module from its file; a script piped into ``python -``
    has none, so its ranks load in its own process (they once died with BrokenProcessPool)."""
    import subprocess
    import sys

    cache = tmp_path / "cache"
    script = ("import jupyter_profview as p\n"
              f"ts = p.load_many({str(DDP)!r}, cache={str(cache)!r}, workers=2, progress=False)\n"
              "print('ranks', ts.ranks)\n")
    done = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert done.returncode == 0, done.stderr
    assert "ranks [0, 1, 2, 3]" in done.stdout, done.stdout


def test_a_worker_that_dies_is_a_profview_error(run_dir: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker killed mid-load (out of memory, a crash) ends the load with the package's error,
    saying what to try, not a raw BrokenProcessPool."""
    from concurrent.futures.process import BrokenProcessPool

    class Dying:
        def __init__(self, **kwargs: Any) -> None:
            pass

        def __enter__(self) -> Dying:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def submit(self, fn: Any, task: Any) -> Any:
            from concurrent.futures import Future

            fut: Future[Any] = Future()
            fut.set_exception(BrokenProcessPool("A process in the process pool was terminated abruptly"))
            return fut

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", Dying)
    with pytest.raises(ProfviewError, match="worker process ended abruptly.*workers=1"):
        load_many(run_dir, cache=tmp_path / "cache", workers=2, progress=False)
