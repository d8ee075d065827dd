"""The vectorised parts of the Chrome loader against small reference loops
(the loops they replaced) or brute force, on random inputs."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_profview.errors import ProfviewError
from jupyter_profview.formats.chrome.columns import SparseColumn
from jupyter_profview.formats.chrome.decode import decode_python
from jupyter_profview.formats.chrome.flows import SliceIndex, flow_pairs
from jupyter_profview.formats.chrome.memory import torch_allocations
from jupyter_profview.formats.chrome.trace import to_trace
from jupyter_profview.model import Quality
from jupyter_profview.nesting import fill_down
from jupyter_profview.nesting import nest_order as _nest_order
from jupyter_profview.sources import Source

# -- flows ------------------------------------------------------------------------------------


def pairs_reference(records: list[tuple[str, int, int, int]], quality: Quality) -> list[tuple[int, int]]:
    """Flow pairing as a loop over (ph, cat, id, ts) records: per (cat, id) in
    (time, s < t < f, file) order, each t/f links from the latest s/t before it,
    or from the group's first s; ends of a group without s are skipped."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (_, cat, ident, _) in enumerate(records):
        groups.setdefault((cat, ident), []).append(i)
    links: list[tuple[int, int]] = []
    used: set[int] = set()
    unpaired: Counter[str] = Counter()
    for members in groups.values():
        members.sort(key=lambda i: (records[i][3], "stf".index(records[i][0]), i))
        starts = [i for i in members if records[i][0] == "s"]
        last: int | None = None
        for i in members:
            p = records[i][0]
            if p != "s":
                if not starts:
                    unpaired[p] += 1
                    continue
                src = last if last is not None else starts[0]
                links.append((src, i))
                used.update((src, i))
            if p in "st":
                last = i
    for p in dict.fromkeys(records[i][0] for i in range(len(records))
                           if records[i][0] != "s" and not any(records[j][0] == "s" for j in groups[
                               (records[i][1], records[i][2])])):
        quality.skipped[f"flow '{p}' without an 's' of its (cat, id)"] += unpaired[p]
    lone = sum(1 for i, r in enumerate(records) if r[0] == "s" and i not in used)
    if lone:
        quality.skipped["flow 's' without a 't' or 'f'"] += lone
    quality.placed["flows"] += len(used)
    return sorted(links, key=lambda link: link[1])


def flow_columns(records: list[tuple[str, int, int, int]]) -> Any:
    events = [{"ph": p, "cat": f"c{cat}", "id": ident, "ts": ts} for p, cat, ident, ts in records]
    return decode_python(Source(orjson.dumps(events)))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("sstff"), st.integers(0, 1), st.integers(0, 2), st.integers(0, 5)),
                max_size=40))
def test_flow_pairs_match_reference_loop(records: list[tuple[str, int, int, int]]) -> None:
    c = flow_columns(records)
    want_q, got_q = Quality(), Quality()
    want = pairs_reference(records, want_q)
    src, dst = flow_pairs(c, np.arange(c.n), got_q)
    assert list(zip(src.tolist(), dst.tolist(), strict=True)) == want
    assert got_q.skipped == want_q.skipped and list(got_q.skipped) == list(want_q.skipped)
    assert got_q.placed == want_q.placed
    assert sum(got_q.placed.values()) + sum(got_q.skipped.values()) == len(records)


# -- allocations --------------------------------------------------------------------------------


def allocations_reference(device: list[str], addr: list[float], delta: list[float], time: list[int],
                          owner: list[str]) -> list[tuple[Any, ...]]:
    """The per-record loop torch_allocations used before."""
    rows: list[list[Any]] = []
    live: dict[tuple[str, float], int] = {}
    for k, (dev, a, b) in enumerate(zip(device, addr, delta, strict=True)):
        if b > 0:
            live[(dev, a)] = len(rows)
            rows.append([dev, a, abs(b), time[k], None, owner[k]])
            continue
        row = live.pop((dev, a), None) if a == a else None  # NaN address never matches
        if row is not None:
            rows[row][4] = time[k]
            continue
        rows.append([dev, a, abs(b), None, time[k], ""])
    return [tuple(r) for r in rows]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["cpu", "cuda:0"]), st.sampled_from([1.0, 2.0, float("nan")]),
                          st.sampled_from([64.0, -64.0, 8.0, -8.0])), max_size=30))
def test_torch_allocations_match_reference_loop(records: list[tuple[str, float, float]]) -> None:
    events = [{"ph": "i", "ts": i, "args": {"Bytes": b, **({} if a != a else {"Addr": a})}}
              for i, (_, a, b) in enumerate(records)]
    c = decode_python(Source(orjson.dumps(events)))
    device = pd.Categorical([r[0] for r in records], categories=["cpu", "cuda:0"])
    owner = np.asarray([f"op{i}" for i in range(len(records))], dtype=object)
    table = torch_allocations(c, np.arange(c.n), device, owner)
    want = allocations_reference([r[0] for r in records], [r[1] for r in records],
                                 [r[2] for r in records], [i * 1000 for i in range(len(records))],
                                 owner.tolist())
    got = [(d, None if a is pd.NA else float(a), float(b), None if t0 is pd.NA else t0,
            None if t1 is pd.NA else t1, o)
           for d, a, b, t0, t1, o in table.itertuples(index=False)]
    assert [(d, None if a != a else a, b, t0, t1, o) for d, a, b, t0, t1, o in want] == got
    if len(records):
        assert list(table["device"].cat.categories) == sorted({r[0] for r in want})


# -- builder ----------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6), st.integers(-1, 4)), max_size=60))
def test_nest_order_is_the_lexsort(rows: list[tuple[int, int, int]]) -> None:
    track, start, dur = (np.asarray(col, np.int64).reshape(-1) for col in zip(*rows, strict=True)) \
        if rows else (np.zeros(0, np.int64),) * 3
    np.testing.assert_array_equal(_nest_order(track, start, dur), np.lexsort((-dur, start, track)))


def test_fill_down_matches_per_depth_loop() -> None:
    rng = np.random.default_rng(1)
    for _ in range(50):
        n = int(rng.integers(1, 80))
        parent = np.full(n, -1, np.int64)
        depth = np.zeros(n, np.int32)
        for i in range(1, n):  # a random forest, parents before children
            if rng.random() < 0.8:
                parent[i] = rng.integers(0, i)
                depth[i] = depth[parent[i]] + 1
        perm = rng.permutation(n)  # ids need not be in depth order
        inv = np.argsort(perm)
        parent = np.where(parent[perm] >= 0, inv[np.maximum(parent[perm], 0)], -1)
        depth = depth[perm]
        codes = rng.integers(0, 3, n).astype(np.int8)
        want = codes.copy()
        for d in range(1, int(depth.max()) + 1):
            pick = (depth == d) & (want == 0) & (parent >= 0)
            want[pick] = want[parent[pick]]
        fill_down(codes, depth, parent, 0)
        np.testing.assert_array_equal(codes, want)


# -- slice index, sparse columns ----------------------------------------------------------------


def test_slice_index_matches_brute_force() -> None:
    rng = np.random.default_rng(2)
    events = [{"ph": "X", "name": f"n{i}", "pid": 1, "tid": int(rng.integers(0, 3)),
               "ts": int(rng.integers(0, 100)), "dur": int(rng.integers(0, 30))} for i in range(300)]
    trace = to_trace(decode_python(Source(orjson.dumps(events))))
    ev = trace.events
    index = SliceIndex(ev)
    threads = ev["thread"].cat.categories
    pair = ev["process"].cat.codes.to_numpy() * index.width + ev["thread"].cat.codes.to_numpy()
    q_thread = rng.integers(0, len(threads) + 1, 500)  # one code without slices
    q_pair = int(ev["process"].cat.codes.iloc[0]) * index.width + q_thread
    q_time = rng.integers(-5, 140, 500) * 1000
    start, end, depth = ev["start"].to_numpy(), (ev["start"] + ev["dur"]).to_numpy(), ev["depth"].to_numpy()
    parent = ev["parent"].to_numpy()
    got_in, got_next = index.enclosing(q_pair, q_time), index.next_start(q_pair, q_time)
    for k in range(500):
        on = pair == q_pair[k]
        # the last slice (in start, depth, id order) starting at or before t, then up the
        # parents until one contains t
        before = np.flatnonzero(on & (start <= q_time[k])).tolist()
        cand = max(before, key=lambda i: (start[i], depth[i], i), default=-1)
        while cand >= 0 and end[cand] < q_time[k]:
            cand = int(parent[cand])
        assert got_in[k] == cand
        after = np.flatnonzero(on & (start >= q_time[k])).tolist()
        assert got_next[k] == min(after, key=lambda i: (start[i], depth[i], i), default=-1)


@given(st.lists(st.one_of(st.none(), st.floats(-1e6, 1e6)), max_size=40), st.data())
def test_sparse_column_take_dense(values: list[float | None], data: st.DataObject) -> None:
    dense = np.asarray([np.nan if v is None else v for v in values], np.float64)
    col = SparseColumn.from_dense(dense)
    np.testing.assert_array_equal(col.dense(), dense)
    rows = np.asarray(data.draw(st.lists(st.integers(0, max(len(dense) - 1, 0)), max_size=60)), np.int64) \
        if len(dense) else np.zeros(0, np.int64)
    np.testing.assert_array_equal(col.take(rows), dense[rows])


# -- to_trace(consume=True), decoder edge cases --------------------------------------------------


def test_consume_gives_the_same_trace() -> None:
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "m"}}]
    for i in range(200):
        events.append({"ph": "X", "name": f"op{i % 7}", "pid": 1, "tid": 1 + i % 2, "ts": i * 3,
                       "dur": 5, "args": {"External id": i}})
        events.append({"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": i * 3 + 1,
                       "args": {"Bytes": 8 if i % 2 else -8, "Addr": i // 2, "Total Allocated": 8}})
        events.append({"ph": "B" if i % 2 else "E", "name": "b", "pid": 1, "tid": 3, "ts": i * 3,
                       "args": {"k": i}})
    data = orjson.dumps({"traceEvents": events})
    plain = to_trace(decode_python(Source(data)))
    columns = decode_python(Source(data))
    consumed = to_trace(columns, consume=True)
    assert len(columns.ts_ns) == 0 and len(columns.args_blob) > 0
    for name in ("events", "flows", "allocations", "memory"):
        pd.testing.assert_frame_equal(getattr(consumed, name), getattr(plain, name))
    assert [consumed.args(i) for i in range(len(plain.events))] == \
        [plain.args(i) for i in range(len(plain.events))]
    assert Counter(plain.quality.skipped) == Counter(consumed.quality.skipped)


@pytest.mark.parametrize("value", ["1e308", "-1e308", '"1e308"', "1e300"])
def test_huge_times_are_a_profview_error(value: str) -> None:
    data = b'[{"ph": "X", "ts": ' + value.encode() + b', "dur": 1}]'
    with pytest.raises(ProfviewError, match="out of range"):
        decode_python(Source(data))


@pytest.mark.parametrize(("tail", "ok"), [
    (b"", True), (b",", True), (b" ,\n ", True), (b",,", False), (b",\n,", False),
])
def test_unclosed_array_takes_one_trailing_comma(tail: bytes, ok: bool) -> None:
    data = b'[{"ph": "X", "ts": 1, "dur": 2}' + tail
    if ok:
        assert decode_python(Source(data)).n == 1
    else:
        with pytest.raises(ProfviewError):
            decode_python(Source(data))


def test_unclosed_array_without_events() -> None:
    assert decode_python(Source(b"[ ")).n == 0
    with pytest.raises(ProfviewError):
        decode_python(Source(b"[,"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-10**15, 10**15), st.integers(-10**12, 10**12), st.booleans(),
                          st.booleans()), min_size=1, max_size=30))
def test_trace_end_is_the_latest_ts_or_end_of_an_x_slice(records: list[tuple[int, int, bool, bool]]) -> None:
    """``_trace_end`` (no copies of the rows) against its definition: the latest
    ts of the timed records, or ts + max(dur, 0) of their X slices."""
    from types import SimpleNamespace

    from jupyter_profview.formats.chrome.trace import _trace_end

    ts = np.array([r[0] for r in records], np.int64)
    dur = np.array([r[1] for r in records], np.int64)
    ok = np.array([r[2] for r in records])
    x_rec = np.flatnonzero(ok & np.array([r[3] for r in records]))
    expected = max([t for t, _, timed, _ in records if timed] +
                   [t + max(d, 0) for t, d, timed, is_x in records if timed and is_x], default=0)
    assert _trace_end(SimpleNamespace(ts_ns=ts), ok, x_rec, dur[x_rec]) == expected  # type: ignore[arg-type]


def test_fill_down_deep_chain() -> None:
    """A chain 5,000 levels deep (a Perfetto trace's unended begins stack up so): every event
    below a known one takes the nearest known ancestor's code."""
    n = 5000
    parent = np.arange(-1, n - 1)
    codes = np.zeros(n, np.int8)
    codes[0], codes[2500] = 2, 1
    fill_down(codes, np.arange(n), parent, 0)
    assert (codes[:2500] == 2).all() and (codes[2500:] == 1).all()
