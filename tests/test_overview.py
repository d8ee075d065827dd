"""Level of detail (widget/lod.py, merge.py, blocks.py) checked from first principles and against
the shared fixture."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from jupyter_profview.model import memory_frame
from jupyter_profview.widget import blocks
from jupyter_profview.widget.codec import decode_frame
from jupyter_profview.widget.lod import (
    LEGEND_TOP,
    OVERVIEW_BUDGET,
    TimelineIndex,
    build_legend,
    merge_sorted,
    track_table,
)
from jupyter_profview.widget.memory_lod import MemoryIndex, downsample
from tests.widget_helpers import flat_trace, trace_from_rows


def reference_boxes(trace, tracks: list[str], t0: float, t1: float, width: int) -> list[tuple]:
    """The protocol's merge rule, written as a plain loop over each row's events."""
    ev = trace.events
    px = (t1 - t0) / width
    boxes = []
    for ti, label in enumerate(tracks):
        on_track = ev[ev["track"].astype(str) == label]
        for depth in sorted(on_track["depth"].unique()):
            row = on_track[on_track["depth"] == depth].sort_values("start")
            group: list[tuple[int, int, int]] = []

            def flush(group: list[tuple[int, int, int]], ti: int = ti, depth: int = depth) -> None:
                if group:
                    s = group[0][1]
                    e = max(st + d for _, st, d in group)
                    boxes.append((ti, int(depth), float(s), float(e - s),
                                  group[0][0] if len(group) == 1 else -1, len(group),
                                  float(sum(d for _, _, d in group))))

            for eid, s, d in zip(row.index, row["start"], row["dur"], strict=True):
                if not (s <= t1 and s + d >= t0):
                    continue
                if d >= px:
                    flush(group)
                    group = []
                    flush([(eid, s, d)])
                    continue
                if group and math.floor((group[-1][1] - t0) / px) != math.floor((s - t0) / px):
                    flush(group)
                    group = []
                group.append((eid, s, d))
            flush(group)
    return sorted(boxes)


def boxes_of(frame) -> list[tuple]:
    c = frame.columns
    return sorted(zip(c["track"].tolist(), c["depth"].tolist(), c["start"].tolist(), c["dur"].tolist(),
                      c["id"].tolist(), c["count"].tolist(), c["busy"].tolist(), strict=True))


def nested_trace(seed: int = 0, n_top: int = 60):
    """Top-level events with children on two threads, for depth > 0 rows."""
    rng = np.random.default_rng(seed)
    rows = []
    for thread in ("main", "worker"):
        t = 1000
        for i in range(n_top):
            dur = int(rng.integers(5, 3000))
            rows.append(dict(name=f"top{i % 7}", category="cpu_op", process="proc", thread=thread,
                             start=t, dur=dur))
            k = int(rng.integers(0, 4))
            cs = t
            for j in range(k):
                cd = int(rng.integers(0, max(1, dur // (k + 1))))
                rows.append(dict(name=f"child{j}", category="kernel", process="proc", thread=thread,
                                 start=cs, dur=cd))
                cs += cd
            t += dur + int(rng.integers(0, 50))
    return trace_from_rows(rows)


@pytest.mark.parametrize("block", [5, 1 << 18])  # 5: merged in runs cut between boxes
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("width", [7, 64, 900])
def test_boxes_match_the_rule_written_as_a_loop(seed: int, width: int, block: int,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks, "BLOCK", block)
    trace = nested_trace(seed)
    index = TimelineIndex(trace)
    labels = index.tracks["label"].tolist()
    t0, t1 = index.extent()
    for a, b in [(t0, t1), (t0 + (t1 - t0) * 0.3, t0 + (t1 - t0) * 0.35)]:
        frame = decode_frame(index.slices(a, b, width))
        assert boxes_of(frame) == reference_boxes(trace, labels, a, b, width)


def test_counts_busy_and_labels_equal_independent_sums() -> None:
    trace = flat_trace(20_000, threads=3, seed=5)
    index = TimelineIndex(trace)
    ev = trace.events
    end = ev["start"] + ev["dur"]
    for t0, t1, width in [(0, float(end.max()), 800), (1e6, 3e6, 300), (2e6, 2.0001e6, 1000)]:
        frame = decode_frame(index.slices(t0, t1, width))
        c = frame.columns
        in_window = (ev["start"] <= t1) & (end >= t0)
        assert int(c["count"].sum()) == int(in_window.sum()) == frame.meta["total"]
        assert float(c["busy"].sum()) == pytest.approx(float(ev.loc[in_window, "dur"].sum()))
        single = c["id"] >= 0
        assert (c["count"][single] == 1).all() and (c["count"][~single] >= 2).all()
        ids = c["id"][single]
        # a single box is exactly its event, with its name as label
        np.testing.assert_array_equal(c["start"][single], ev["start"].to_numpy()[ids])
        np.testing.assert_array_equal(c["dur"][single], ev["dur"].to_numpy()[ids])
        labels = np.array(frame.meta["labels"], dtype=object)[c["label"][single]]
        assert list(labels) == ev["name"].astype(str).to_numpy()[ids].tolist()
        assert (c["label"][~single] == -1).all()


def test_sub_pixel_single_boxes_are_isolated_and_rows_are_bounded() -> None:
    trace = flat_trace(30_000, threads=2, seed=7)
    index = TimelineIndex(trace)
    t0, t1 = index.extent()
    width = 500
    px = (t1 - t0) / width
    c = decode_frame(index.slices(t0, t1, width)).columns
    row = c["track"].astype(np.int64) * 1000 + c["depth"]
    for r in np.unique(row):
        on = np.flatnonzero(row == r)
        assert len(on) <= 2 * width + 4
        starts = c["start"][on]
        assert (np.diff(starts) >= 0).all()
        col = np.floor((starts - t0) / px)
        small = c["busy"][on] < px  # boxes made of sub-pixel events only (or one small event)
        for k in range(len(on)):
            if small[k] and c["count"][on[k]] == 1:
                # no neighbouring small box may share its pixel column: it would have been merged
                for j in (k - 1, k + 1):
                    if 0 <= j < len(on) and c["count"][on[j]] >= 1 and c["dur"][on[j]] < px:
                        assert col[j] != col[k]


def test_overview_of_a_large_dense_trace_is_capped_at_4mb() -> None:
    trace = flat_trace(400_000, threads=40, seed=3, with_memory=False)
    index = TimelineIndex(trace)
    data = index.overview()
    frame = decode_frame(data)
    assert len(data) <= OVERVIEW_BUDGET
    assert frame.meta["width"] < 4096  # 40 dense rows at 4096 px would not fit
    assert int(frame["count"].sum()) == len(trace.events)


def test_full_zoom_out_of_a_million_events_is_fast() -> None:
    trace = flat_trace(1_000_000, threads=8, seed=11, with_memory=False)
    index = TimelineIndex(trace)
    t0, t1 = index.extent()
    index.slices(t0, t1, 4096)
    best = min(_timed(lambda: index.slices(t0, t1, 4096)) for _ in range(3))
    assert best < 0.5, f"{best:.3f} s"  # ~20 ms measured on 2 cores; generous for noisy CI


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def test_track_order_natural_and_from_metadata() -> None:
    rows = [dict(name="a", category="c", process=p, thread=th, start=s, dur=5)
            for s, (p, th) in enumerate([("GPU 10", "s"), ("GPU 2", "s"), ("CPU", "t 11"), ("CPU", "t 9")])]
    assert track_table(trace_from_rows(rows))["label"].tolist() == [
        "CPU / t 9", "CPU / t 11", "GPU 2 / s", "GPU 10 / s"]
    ordered = trace_from_rows(rows, metadata={"track_order": ["GPU 10 / s", "CPU / t 11"]})
    assert track_table(ordered)["label"].tolist()[:2] == ["GPU 10 / s", "CPU / t 11"]


def test_legend_top_n_other_and_stable_colours() -> None:
    n = 40
    rows = [dict(name=f"e{i}", category=f"cat{i % 15}", process="p", thread="t", start=i * 10,
                 dur=1 + (i % 15)) for i in range(n)]
    ev = trace_from_rows(rows).events
    legend = build_legend(ev)
    assert legend.color_by == "category"
    keys = [e["key"] for e in legend.entries]
    assert len(keys) == LEGEND_TOP + 1 and keys[-1] == "other"
    assert sum(e["count"] for e in legend.entries) == n
    # every event's colour entry is its category, or "other" for the small ones
    cat = ev["category"].astype(str).to_numpy()
    for code, c in zip(legend.codes.tolist(), cat, strict=True):
        assert keys[code] == c or (keys[code] == "other" and c not in keys)
    colours = [e["color"] for e in legend.entries[:-1]]
    assert len(set(colours)) == len(colours)
    again = build_legend(ev.iloc[::-1])  # same categories, other order: same colours
    assert {e["key"]: e["color"] for e in again.entries} == {e["key"]: e["color"] for e in legend.entries}
    phase = build_legend(ev, "phase")
    assert [e["key"] for e in phase.entries] == ["other"] and (phase.codes == 0).all()


def test_memory_downsampling_keeps_extremes_and_peak() -> None:
    rng = np.random.default_rng(4)
    t = np.sort(rng.choice(10_000_000, 50_000, replace=False))
    b = np.cumsum(rng.integers(-500, 510, len(t))) + 1_000_000
    b[31_337] = b.max() + 12345  # one-sample spike
    mem = pd.concat([memory_frame(t, ["GPU 0"] * len(t), b, "measured"),
                     memory_frame(t[::10], ["GPU 1"] * len(t[::10]), b[::10], "simulated")])
    trace = flat_trace(100, with_memory=False)
    trace.memory = mem
    index = MemoryIndex(trace)
    t0, t1, width = 0.0, 10_000_000.0, 300
    frame = decode_frame(index.frame(t0, t1, width))
    series = frame.meta["series"]
    assert [(s["device"], s["kind"]) for s in series] == [("GPU 0", "measured"), ("GPU 1", "simulated")]
    assert series[0]["peak_bytes"] == float(b.max()) and series[0]["peak_time"] == float(t[31_337])
    sel = frame["series"] == 0
    ft, fb = frame["time"][sel], frame["bytes"][sel]
    assert len(ft) <= 4 * width + 1
    assert float(t[31_337]) in ft.tolist()
    # per pixel column: first, last, min and max of the original samples are all kept
    px = (t1 - t0) / width
    col = np.floor((t - t0) / px)
    kept = set(zip(ft.tolist(), fb.tolist(), strict=True))
    for c in np.unique(col)[:: 17]:
        at = np.flatnonzero(col == c)
        for i in (at[0], at[-1], at[np.argmin(b[at])], at[np.argmax(b[at])]):
            assert (float(t[i]), float(b[i])) in kept
    # a zoomed window starts with the value in effect at its left edge
    z = decode_frame(index.frame(5_000_000.0, 5_001_000.0, 100))
    first = z["time"][z["series"] == 0][0]
    assert first == float(t[np.searchsorted(t, 5_000_000) - 1])


# -- the merge rule against the fixture shared with js/test/lod.test.ts --------------------------

LOD_CASES = json.loads((Path(__file__).parent / "shared_fixtures" / "lod_merge.json")
                       .read_text("utf-8"))["cases"]


@pytest.mark.parametrize("case", LOD_CASES, ids=[c["name"][:40] for c in LOD_CASES])
def test_merge_rule_matches_the_shared_fixture(case: dict) -> None:
    boxes = np.array(case["boxes"], np.float64)
    track, depth, start, dur, count, busy, color, longest = boxes.T
    end = start + dur
    t0, t1, width = case["t0"], case["t1"], case["width"]
    # what TimelineIndex.slices_columns hands over: boxes touching the window, by (row, start)
    keep = np.flatnonzero((start <= t1) & (end >= t0))
    keep = keep[np.lexsort((start[keep], depth[keep], track[keep]))]
    row = (track * 65536 + depth)[keep]
    got = merge_sorted(row, start[keep], dur[keep], end[keep], t0, (t1 - t0) / width,
                       count[keep], busy[keep], longest[keep])
    first, pick = got["first"], keep[got["pick"]]
    out = sorted(zip(
        track[keep][first].tolist(), depth[keep][first].tolist(), got["start"].tolist(),
        got["dur"].tolist(), np.where(got["single"], keep[first], -1).tolist(), got["count"].tolist(),
        got["busy"].tolist(), color[pick].tolist(), got["longest"].tolist(), strict=True))
    assert out == sorted(tuple(b) for b in case["expected"])
    assert int(got["count"].sum()) == case["total"]


def test_timeline_index_colours_a_merged_box_by_its_longest_event() -> None:
    # one thread: a 40 ns event between two 10 ns ones, all inside one pixel column of 100 ns
    rows = [dict(name=n, category=c, process="p", thread="t", start=s, dur=d)
            for n, c, s, d in (("a", "x", 0, 10), ("b", "y", 20, 40), ("c", "z", 70, 10))]
    trace = trace_from_rows(rows)
    index = TimelineIndex(trace)
    columns, _ = index.slices_columns(0, 1000, 10)
    assert columns["count"].tolist() == [3]
    keys = [e["key"] for e in index.legend.entries]
    assert keys[int(columns["color"][0])] == "y"
    assert columns["longest"].tolist() == [40.0]


def test_index_filled_block_by_block_equals_the_events(monkeypatch: pytest.MonkeyPatch) -> None:
    # blocks of 7 events: every block edge falls inside a row somewhere
    monkeypatch.setattr(blocks, "BLOCK", 7)
    trace = nested_trace(3)
    index = TimelineIndex(trace)
    ev = trace.events
    lane = {label: i for i, label in enumerate(index.tracks["label"].tolist())}
    key = ev.assign(_lane=ev["track"].astype(str).map(lane)).sort_values(["_lane", "depth", "start"],
                                                                          kind="stable")
    np.testing.assert_array_equal(index.start, key["start"].to_numpy(np.float64))
    np.testing.assert_array_equal(index.dur, key["dur"].to_numpy(np.float64))
    np.testing.assert_array_equal(index.end, (key["start"] + key["dur"]).to_numpy(np.float64))
    np.testing.assert_array_equal(index.id, key.index.to_numpy())
    np.testing.assert_array_equal(np.array(index.names, object)[index.name], key["name"].astype(str))
    rows = key["_lane"].to_numpy() * 1000 + key["depth"].to_numpy()
    assert index.row_bounds.tolist() == [0, *(np.flatnonzero(np.diff(rows)) + 1).tolist(), len(ev)]
    assert index.event_track.tolist() == ev["track"].astype(str).map(lane).tolist()
    end = ev["start"] + ev["dur"]
    t0, t1 = index.extent()
    for a, b in [(t0, t1), (t0 + (t1 - t0) * 0.4, t0 + (t1 - t0) * 0.45), (t1 - 1, t1)]:
        got = index.id[index.window(a, b)]
        assert sorted(got.tolist()) == ev.index[(ev["start"] <= b) & (end >= a)].tolist()


@pytest.mark.parametrize("block", [3, 1 << 18])
def test_running_max_of_row_ends_equals_a_loop(monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    monkeypatch.setattr(blocks, "BLOCK", block)
    rng = np.random.default_rng(4)
    row = np.sort(rng.integers(0, 9, 200))
    end = rng.integers(0, 1000, 200).astype(np.float64)
    bounds = np.concatenate(([0], np.flatnonzero(np.diff(row)) + 1, [len(row)]))
    expected = end.copy()
    for i in range(1, len(end)):
        if row[i] == row[i - 1]:
            expected[i] = max(expected[i - 1], end[i])
    got = blocks.running_max(end, row, bounds)
    np.testing.assert_array_equal(got, expected)
    assert not np.array_equal(got, end)  # the random ends do fall: the accumulation ran
    ordered = np.sort(end)  # ends that never fall: the index keeps the array itself
    assert blocks.running_max(ordered, row, bounds) is ordered


@pytest.mark.parametrize("block", [4, 1 << 18])
def test_downsample_keeps_first_min_max_last_of_each_column(monkeypatch: pytest.MonkeyPatch,
                                                            block: int) -> None:
    monkeypatch.setattr(blocks, "BLOCK", block)
    rng = np.random.default_rng(8)
    t = np.sort(rng.uniform(0, 1000, 300))
    b = rng.integers(0, 20, 300).astype(np.float64)  # ties: the first point of the min / max
    t0, px = 3.0, 17.0
    expected: set[int] = set()
    columns: dict[int, list[int]] = {}
    for i, x in enumerate(t.tolist()):
        columns.setdefault(math.floor((x - t0) / px), []).append(i)
    for members in columns.values():
        values = [b[i] for i in members]
        expected |= {members[0], members[-1], members[values.index(min(values))],
                     members[values.index(max(values))]}
    assert downsample(t, b, t0, px).tolist() == sorted(expected)


def test_memory_series_per_rank_device_and_kind_of_an_unsorted_table() -> None:
    # two ranks, two devices, two kinds, rows interleaved and out of time order (a NaN device
    # is no series): each series is its group's points sorted by time, as a plain loop finds them
    rng = np.random.default_rng(12)
    n = 4000
    mem = pd.DataFrame({
        "time": rng.integers(0, 10_000, n), "bytes": rng.integers(0, 1 << 40, n),
        "device": pd.Categorical(rng.choice(["cuda:1", "cuda:0", None], n, p=[.45, .45, .1]),
                                 categories=["cuda:0", "cuda:1", "cpu"]),
        "kind": pd.Categorical(rng.choice(["measured", "simulated"], n)),
        "rank": rng.choice([3, 1], n),
    })
    trace = flat_trace(100, with_memory=False)
    trace.memory = mem
    trace.info = trace.info.replace(ranks=(1, 3))
    got = {(s.rank, s.device, s.kind): (s.time.tolist(), s.bytes.tolist())
           for s in MemoryIndex(trace).series if s.unit == "bytes"}
    expected: dict[tuple, tuple[list[float], list[float]]] = {}
    for rank, device, kind, t, b in zip(mem["rank"], mem["device"], mem["kind"], mem["time"],
                                        mem["bytes"], strict=True):
        if isinstance(device, str):
            times, values = expected.setdefault((int(rank), device, kind), ([], []))
            times.append(float(t))
            values.append(float(b))
    for key, (times, values) in expected.items():
        order = sorted(range(len(times)), key=lambda i: times[i])  # stable, as the table's order
        expected[key] = ([times[i] for i in order], [values[i] for i in order])
    assert got == expected
    assert len(got) == 8


@pytest.mark.parametrize("lanes", [3, 500])  # few codes (found one by one) and many (a sort)
def test_first_positions_equal_numpy_unique(monkeypatch: pytest.MonkeyPatch, lanes: int) -> None:
    monkeypatch.setattr(blocks, "BLOCK", 1000)
    rng = np.random.default_rng(lanes)
    # five codes first, then all (many begin in a later block); every other code absent
    codes = np.concatenate([rng.integers(0, 5, 5000), rng.integers(0, lanes, 15_000)]) * 2
    present, first = blocks.first_positions(codes, 2 * max(lanes, 5))
    uniq, at = np.unique(codes, return_index=True)
    assert present.tolist() == uniq.tolist() and first.tolist() == at.tolist()
