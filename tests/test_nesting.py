"""Nesting, overlap lanes and self time (``nesting.nest`` / ``nesting.self_times``).

The expected numbers come from the framework or from the trace file itself:

* ``tests/data/torch_overlap.json.gz`` and ``torch_overlap_key_averages.json``
  (``tests/data/make_torch_overlap.py``): a real PyTorch run with
  ``record_function`` + ``with_stack=True`` + ``profile_memory=True``, and
  torch's own ``key_averages()`` for that run;
* :func:`torch_parents`, a transcription of the loop of PyTorch's
  ``EventList._populate_cpu_children`` (torch/autograd/profiler_util.py), the
  rule behind ``key_averages()``'s "Self CPU";
* busy time, the union of a thread's intervals, computed here from the
  intervals (with exact decimal arithmetic for the JSON file).
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jupyter_profview as profview
from jupyter_profview import _native
from jupyter_profview.builder import build_events
from jupyter_profview.model import Quality
from jupyter_profview.nesting import (
    nest_python,
    nested_self_python,
    owned_segments_python,
    owned_time_python,
    python_yields_until_python,
)
from jupyter_profview.widget.lod import lane_rows

DATA = Path(__file__).parent / "data"
TRACE = DATA / "torch_overlap.json.gz"
TORCH = json.loads((DATA / "torch_overlap_key_averages.json").read_text())


def torch_parents(start: list[int], end: list[int]) -> list[int]:
    """Parent of each interval by PyTorch's rule: sorted by (start, -end), one
    stack; an interval pops every top that it does not fit in."""
    parent = [-1] * len(start)
    stack: list[int] = []
    for i in sorted(range(len(start)), key=lambda i: (start[i], -end[i])):
        while stack:
            top = stack[-1]
            if start[i] >= end[top] or end[i] > end[top]:
                stack.pop()
            else:
                parent[i] = top
                break
        stack.append(i)
    return parent


def busy(start: list[int], end: list[int]) -> int:
    """Length of the union of the intervals."""
    total, lo, hi = 0, None, None
    for s, e in sorted(zip(start, end, strict=True)):
        if hi is None or s > hi:
            total += 0 if hi is None or lo is None else hi - lo
            lo, hi = s, e
        else:
            hi = max(hi, e)
    return total + (0 if hi is None or lo is None else hi - lo)


def running_self(start: list[int], end: list[int], python: list[bool] | None = None) -> list[int]:
    """Self time by the rule in ``nesting``'s docstring, by brute force: every
    interval between two consecutive boundaries goes to the event running
    then, of the open events the one started last (on equal starts the
    shorter; on equal intervals the later in the file, which nests in the
    earlier) that does not yield.  A Python frame (``python``) yields while an
    op or range is open that started before it, is not one of its ancestors
    (torch's parents) and started after its innermost op-or-range ancestor."""
    n = len(start)
    python = python or [False] * n
    parent = torch_parents(start, end)
    key = [(start[i], -(end[i] - start[i]), i) for i in range(n)]

    def ancestors(i: int) -> list[int]:
        out = []
        while parent[i] >= 0:
            i = parent[i]
            out.append(i)
        return out

    def yields(c: int, open_: list[int]) -> bool:
        if not python[c]:
            return False
        anc = ancestors(c)
        inner = next((a for a in anc if not python[a]), None)
        return any(not python[r] and key[r] < key[c] and r not in anc
                   and (inner is None or key[r] > key[inner]) for r in open_)

    own = [0] * n
    bounds = sorted(set(start) | set(end))
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        open_ = [i for i in range(n) if start[i] <= lo and hi <= end[i]]
        running = [i for i in open_ if not yields(i, open_)]
        if running:
            own[max(running, key=lambda i: key[i])] += hi - lo
    return own


def tangled(start: list[int], end: list[int], parent: list[int]) -> list[bool]:
    """Events that partly overlap another one, or whose children partly overlap
    each other: the only ones whose self time may differ from torch's."""
    n = len(start)
    out = [any(start[j] < start[i] < end[j] < end[i] or start[i] < start[j] < end[i] < end[j]
               for j in range(n)) for i in range(n)]
    kids: dict[int, list[int]] = defaultdict(list)
    for i, p in enumerate(parent):
        kids[p].append(i)
    for p, ks in kids.items():
        if p >= 0 and any(start[a] < end[b] and start[b] < end[a] for a in ks for b in ks if a < b):
            out[p] = True
    return out


def build(rows: list[tuple[str, int, int]], thread: str = "t") -> pd.DataFrame:
    """``build_events`` on (name, start, dur) rows of one thread, rows in input order."""
    events, raw_index, _ = build_events({
        "name": [r[0] for r in rows], "category": ["c"] * len(rows), "process": ["p"] * len(rows),
        "thread": [thread] * len(rows), "start": [r[1] for r in rows], "dur": [r[2] for r in rows]},
        Quality(), base=0)
    out = events.copy()
    out["row"] = raw_index
    out["parent_row"] = np.where(out["parent"] >= 0, raw_index[np.maximum(out["parent"], 0)], -1)
    out["lane"] = [int(t.rsplit("[overlap ", 1)[1][:-1]) if "[overlap" in t else 0 for t in out["track"]]
    return out.set_index("row").sort_index()



# -- the real PyTorch trace ------------------------------------------------------------------------


def raw_slices(path: Path = TRACE) -> dict[tuple[object, object], list[dict[str, object]]]:
    data = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)
    out: dict[tuple[object, object], list[dict[str, object]]] = defaultdict(list)
    for e in data["traceEvents"]:
        if e.get("ph") == "X":
            out[(e["pid"], e["tid"])].append(e)
    return out


def test_fixture_has_partial_overlaps() -> None:
    """The fixture exercises the case: annotations partly overlap the helper frames."""
    (main,) = [v for v in raw_slices().values() if len(v) > 1]
    ns = [(int(e["ts"] * 1000), int((e["ts"] + e["dur"]) * 1000), e["name"]) for e in main]  # type: ignore[operator]
    annotations = [x for x in ns if x[2] in ("## forward ##", "## backward ##", "Optimizer.step#SGD.step")]
    assert len(annotations) == 6
    for s, e, _ in annotations:
        assert any(s0 < s < e0 < e for s0, e0, _ in ns), "starts inside a helper and ends after it"
        assert any(s < s0 < e < e0 for s0, e0, _ in ns), "ends inside a helper that ends after it"


def thread_slices(path: Path = TRACE) -> tuple[list[str], list[int], list[int], list[bool]]:
    """Names, start and end (ns) of the slices of the fixture's Python thread, and which are
    Python frames (``cat`` in the file)."""
    (main,) = [v for v in raw_slices(path).values() if len(v) > 1 and v[0]["name"] != "PyTorch Profiler (0)"]
    start = [int(e["ts"] * 1000) for e in main]  # type: ignore[operator]
    end = [int((e["ts"] + e["dur"]) * 1000) for e in main]  # type: ignore[operator]
    python = [e.get("cat") == "python_function" for e in main]
    return [str(e["name"]) for e in main], start, end, python


TORCH_RECORDINGS = [(TRACE, TORCH), (DATA / "torch_selftime.json.gz",
                                     json.loads((DATA / "torch_selftime_key_averages.json").read_text()))]


@pytest.mark.parametrize(("path", "numbers"), TORCH_RECORDINGS, ids=["overlap", "selftime"])
def test_self_time_equals_torch_key_averages(decoder: str, path: Path, numbers: dict[str, Any]) -> None:
    """``summary(by="name")``'s self equals torch's ``key_averages()`` Self CPU for every op and
    ``record_function`` range torch reports, on two real runs with ``with_stack=True`` (one also
    ``with_modules`` / ``record_shapes``, a range around ranges): Python frames yield to the
    ranges they partly overlap, as torch counts it.  Counts match for every name.

    Not compared: the Python frames' own self (torch's can be negative; checked per event by
    :func:`test_self_time_is_the_time_each_event_runs`), and a range whose children partly
    overlap each other (``## step ##`` around its ranges and their ``__enter__``/``__exit__``
    frames): torch subtracts the shared time twice (its ``## step ##`` is negative), here once,
    so here it is exactly torch's plus the doubly subtracted time, computed from the file.

    Tolerance: the export writes times in µs with 3 decimals (whole ns) and profview keeps ns,
    so 1 ns per event of the name plus 1 ns per direct child of those events.

    ``key_averages()`` also merges an event into its parent when both have the same name and it
    is the parent's only child (``EventList._remove_dup_nodes``; ``aten::div_`` in
    ``aten::div_``): it does not change the name's self time, and the count here applies the same
    merge to profview's tree.
    """
    trace = profview.load(path)
    s = profview.summary(trace, by="name")
    ev = trace.events[(trace.events["kind"] == "slice") & (trace.events["process"] != "Spans")]
    names = ev["name"].astype(str).to_numpy()
    parent = ev["parent"].to_numpy()
    pos = pd.Series(np.arange(len(ev)), index=ev.index)
    ppos = np.where(parent >= 0, pos.reindex(parent).fillna(-1).to_numpy(np.int64), -1)
    kids = np.bincount(ppos[ppos >= 0], minlength=len(ev))
    merged = (ppos >= 0) & (names == names[np.maximum(ppos, 0)]) & (kids[np.maximum(ppos, 0)] == 1)
    counts = pd.Series(~merged, index=names).groupby(level=0).sum()
    expected = numbers["key_averages"]
    assert set(counts.index) == set(expected)
    # from the file: each name's kind, and the time torch subtracts twice (children that overlap)
    raw_names, start, end, python = thread_slices(path)
    torch_parent = torch_parents(start, end)
    children: dict[int, list[int]] = defaultdict(list)
    for i, p in enumerate(torch_parent):
        if p >= 0:
            children[p].append(i)
    twice: dict[str, int] = defaultdict(int)
    slack: dict[str, int] = defaultdict(int)
    for i, name in enumerate(raw_names):
        kids_i = children.get(i, [])
        twice[name] += sum(end[k] - start[k] for k in kids_i) - busy([start[k] for k in kids_i],
                                                                     [end[k] for k in kids_i])
        slack[name] += 1 + len(kids_i)
    frames = {n for n, py in zip(raw_names, python, strict=True) if py}
    if "python_function" in numbers:  # torch's own flags agree with the file's categories
        assert frames == set(numbers["python_function"])
    compared = doubled = 0
    for name, torch_row in expected.items():
        assert counts[name] == torch_row["count"], name
        if name in frames:
            continue
        want = torch_row["self_cpu_time_total"] * 1000 + twice[name]
        assert abs(int(s.loc[name, "self"]) - want) <= slack[name], name
        compared += 1
        doubled += twice[name] > 0
    ranges = {"## forward ##", "## backward ##", "Optimizer.step#SGD.step"}
    assert ranges <= set(expected) and compared >= 40
    assert all(twice[n] == 0 for n in ranges)  # these are compared exactly
    if path != TRACE:
        assert expected["## step ##"]["self_cpu_time_total"] < 0 and doubled == 1
        assert s.loc["## step ##", "self"] > 0


@pytest.mark.parametrize(("path", "numbers"), TORCH_RECORDINGS, ids=["overlap", "selftime"])
def test_self_time_is_the_time_each_event_runs(decoder: str, path: Path, numbers: dict[str, Any]) -> None:
    """Every slice's self time is the time it is the one running, Python frames yielding
    (brute force over the file's own intervals, :func:`running_self`): never negative, and
    where torch's "Self CPU" of a name is negative (a frame whose children partly overlap:
    torch subtracts the shared time twice), profview's is not."""
    raw_names, start, end, python = thread_slices(path)
    expected = running_self(start, end, python)
    ev = profview.load(path).events
    ev = ev[(ev["kind"] == "slice") & (ev["process"] != "Spans")]
    got = {(str(n), int(s) - int(ev["start"].min()), int(d)): int(x)
           for n, s, d, x in zip(ev["name"], ev["start"], ev["dur"], ev["self"], strict=True)}
    want = {(n, s - min(start), e - s): x for n, s, e, x in zip(raw_names, start, end, expected, strict=True)}
    assert len(got) == len(want) == len(raw_names)
    assert got == want
    assert min(expected) >= 0
    assert running_self(start, end) != expected  # the Python frames' yielding is exercised
    negative = [n for n, v in numbers["key_averages"].items() if v["self_cpu_time_total"] < 0]
    assert len(negative) >= 3
    for name in negative:
        assert ev.loc[ev["name"] == name, "self"].min() >= 0


def test_annotations_keep_the_main_lane(decoder: str) -> None:
    """Each annotation that is longer than the helper frames it partly overlaps
    keeps the main lane and its children; those helpers are on an overlap lane."""
    ev = profview.load(TRACE).events
    ev = ev[ev["process"] != "Spans"]
    start, end = ev["start"].to_numpy(), (ev["start"] + ev["dur"]).to_numpy()
    overlapping = 0
    for name in ("## forward ##", "## backward ##", "Optimizer.step#SGD.step"):
        for i in np.flatnonzero((ev["name"] == name).to_numpy()):
            assert "[overlap" not in ev["track"].iloc[i]
            partial = ((start < start[i]) & (start[i] < end) & (end < end[i])) | \
                ((start[i] < start) & (start < end[i]) & (end[i] < end))
            assert (ev["dur"].to_numpy()[partial] < ev["dur"].iloc[i]).all()
            assert ev["track"][partial].str.contains("overlap").all()
            overlapping += int(partial.sum())
    assert overlapping >= 6 * 2
    forward = ev[ev["name"] == "## forward ##"]
    kids = ev[ev["parent"].isin(forward.index)]
    module = kids[kids["name"] == "nn.Module: Sequential_0"]
    assert len(module) == 2 and (module["phase"] == "forward").all()
    # the first zero_grad's enter helper (4.2 ms, the profiler's first call) is
    # longer than the annotation (0.17 ms): there the annotation moves aside
    helper = ev[ev["name"].astype(str).str.startswith("<built-in method _record_function_enter_new")]
    zero_grad = ev[ev["name"] == "Optimizer.zero_grad#SGD.zero_grad"]
    assert helper["dur"].max() > zero_grad["dur"].iloc[0]
    assert "[overlap" in zero_grad["track"].iloc[0] and "[overlap" not in zero_grad["track"].iloc[1]


def test_self_sums_to_busy_time_per_thread(decoder: str) -> None:
    raw = raw_slices()
    busy_by_count = {}
    for events in raw.values():
        ns = [(int(e["ts"] * 1000), int((e["ts"] + e["dur"]) * 1000)) for e in events]  # type: ignore[operator]
        busy_by_count[len(events)] = busy([s for s, _ in ns], [e for _, e in ns])
    assert len(busy_by_count) == len(raw) == 2
    ev = profview.load(TRACE).events
    ev = ev[ev["kind"] == "slice"]
    for _, group in ev.groupby(["process", "thread"], observed=True):
        # exact up to the ns rounding of start + dur vs. rounded ts + rounded dur: 1 ns per event
        assert abs(int(group["self"].sum()) - busy_by_count[len(group)]) <= len(group)
        assert int(group["self"].sum()) <= busy_by_count[len(group)] + len(group)


# -- small cases by hand ---------------------------------------------------------------------------


def test_record_function_inside_its_helpers() -> None:
    """The shape of a ``record_function`` with ``with_stack``: the annotation
    starts inside ``__enter__`` / ``_record_function_enter_new`` and ends inside
    ``__exit__``; the helpers move aside, the annotation keeps its children."""
    rows = [("module", 0, 1000), ("__enter__", 10, 30), ("__call__", 12, 18), ("enter_new", 13, 16),
            ("## forward ##", 20, 480), ("is_scripting", 32, 1), ("aten::mm", 100, 100),
            ("__exit__", 490, 30), ("exit_call", 495, 20)]
    ev = build(rows)
    lane = dict(zip([r[0] for r in rows], ev["lane"], strict=True))
    assert lane == {"module": 0, "__enter__": 1, "__call__": 1, "enter_new": 1, "## forward ##": 0,
                    "is_scripting": 0, "aten::mm": 0, "__exit__": 1, "exit_call": 1}
    assert ev["depth"].tolist() == [0, 1, 2, 3, 1, 2, 2, 1, 2]  # tree levels
    assert lane_rows(ev, False).tolist() == [0, 0, 1, 2, 1, 2, 2, 0, 1]  # drawn from each lane's top
    assert ev["parent_row"].tolist() == [-1, 0, 1, 2, 0, 4, 4, 0, 7]
    assert ev["parent_row"].tolist() == torch_parents([r[1] for r in rows], [r[1] + r[2] for r in rows])
    # the event started last runs: the annotation owns [20, 40) of the enter
    # helpers, the exit helpers own [490, 500) of the annotation; torch would
    # give the module 1000 - 30 - 480 - 30 = 460 and count [20, 40) and
    # [490, 500) twice
    assert ev["self"].tolist() == [10 + 480, 2, 1, 7, 12 + 67 + 290, 1, 100, 5 + 5, 20]
    assert ev["self"].sum() == 1000
    assert (ev.loc[[5, 6], "phase"] == "forward").all()  # phase flows down the annotation's lane


def test_longer_one_keeps_the_lane_either_order() -> None:
    # the later one is longer: the earlier one, and what it holds, moves aside
    ev = build([("a", 0, 100), ("a.child", 5, 10), ("b", 50, 250)])
    assert ev["lane"].tolist() == [1, 1, 0]
    assert ev["depth"].tolist() == [0, 1, 0]
    # the earlier one is longer: the later one moves aside
    ev = build([("a", 0, 250), ("b", 200, 100), ("b.child", 260, 10)])
    assert ev["lane"].tolist() == [0, 1, 1]
    assert ev["parent_row"].tolist() == [-1, -1, 1]
    # equal durations: the one that started first keeps the lane
    ev = build([("a", 0, 100), ("b", 50, 100)])
    assert ev["lane"].tolist() == [0, 1]


def test_moved_event_keeps_its_enclosing_parent_and_phase() -> None:
    ev = build([("## forward ##", 0, 1000), ("a", 10, 90), ("b", 50, 250)])
    assert ev["lane"].tolist() == [0, 1, 0]
    assert ev["parent_row"].tolist() == [-1, 0, 0]
    assert ev["depth"].tolist() == [0, 1, 1]
    assert lane_rows(ev, False).tolist() == [0, 0, 1]
    assert (ev["phase"] == "forward").all()  # from its parent on the main lane
    assert ev["self"].tolist() == [10 + 700, 40, 250]  # b, started later, owns [50, 100)


def test_top_level_overlap_counts_shared_time_once() -> None:
    """Without an enclosing event torch would count the shared 5 twice; here
    the event started later owns it, so self sums to busy."""
    ev = build([("enter", 0, 10), ("## forward ##", 5, 95), ("enter.child", 2, 6)])
    assert ev["lane"].tolist() == [1, 0, 1]
    assert ev["parent_row"].tolist() == [-1, -1, 0]
    # enter [0, 2), enter.child [2, 5), forward [5, 100)
    assert ev["self"].tolist() == [2, 95, 3]
    assert ev["self"].sum() == busy([0, 5, 2], [10, 100, 8])
    # two top-level events moved aside that overlap each other: the later one counts only new time
    ev = build([("a", 0, 100), ("b", 40, 80), ("w", 50, 950)])
    assert ev["lane"].tolist() == [2, 1, 0]
    assert ev["self"].sum() == 1000


def test_ties_and_instants() -> None:
    # same end nests; a slice starting at a parent's end is not inside it, an
    # instant at that time is inside the slice starting there, not the one ending
    ev = build([("p", 0, 10), ("same_end", 5, 5), ("at_end", 10, 0), ("next", 10, 5)])
    assert ev["parent_row"].tolist() == [-1, 0, 3, -1]
    assert ev["lane"].tolist() == [0, 0, 0, 0]
    assert ev["self"].tolist() == [5, 5, 0, 5]


# -- random cases: the rule holds for any input ----------------------------------------------------

intervals = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 60), st.integers(0, 30)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(intervals)
def test_random_matches_torch_and_invariants(rows: list[tuple[int, int, int]]) -> None:
    """For any intervals: parents are torch's; the depth is the tree level;
    every lane is a proper nesting drawn at the right rows; self is the time
    each event runs (brute force), torch's self wherever the event is not
    :func:`tangled`, and sums to the busy time of each thread."""
    if not rows:
        return
    names = [f"e{i}" for i in range(len(rows))]
    events, raw_index, _ = build_events({
        "name": names, "category": ["c"] * len(rows), "process": ["p"] * len(rows),
        "thread": [str(r[0]) for r in rows], "start": [r[1] for r in rows], "dur": [r[2] for r in rows]},
        Quality(), base=0)
    row_of = raw_index
    by_row = events.set_index(pd.Index(row_of)).sort_index()
    parent_row = np.where(by_row["parent"] >= 0, row_of[np.maximum(by_row["parent"], 0)], -1)
    for tid in {r[0] for r in rows}:
        mine = [i for i, r in enumerate(rows) if r[0] == tid]
        starts = [rows[i][1] for i in mine]
        ends = [rows[i][1] + rows[i][2] for i in mine]
        expected = [mine[p] if p >= 0 else -1 for p in torch_parents(starts, ends)]
        assert parent_row[mine].tolist() == expected
        self_ns = by_row["self"].to_numpy()[mine]
        assert int(self_ns.sum()) == busy(starts, ends)
        assert self_ns.tolist() == running_self(starts, ends)
        assert (self_ns >= 0).all()
        local = torch_parents(starts, ends)
        for k, odd in enumerate(tangled(starts, ends, local)):
            if not odd:
                torch_self = rows[mine[k]][2] - sum(rows[mine[j]][2] for j, p in enumerate(local) if p == k)
                assert self_ns[k] == torch_self
    depth = by_row["depth"].to_numpy()
    assert ((depth == 0) == (parent_row < 0)).all()
    has = parent_row >= 0
    assert (depth[has] == depth[parent_row[has]] + 1).all()
    events["row"] = lane_rows(events, False)
    for _, lane in events.groupby("track", observed=True):  # sorted by (start, depth)
        stack: list[tuple[int, int]] = []
        for s, e, d in zip(lane["start"], lane["start"] + lane["dur"], lane["row"], strict=True):
            while stack and stack[-1][1] <= s:
                stack.pop()
            assert not stack or e <= stack[-1][1], "partial overlap within one lane"
            assert d == len(stack)
            stack.append((s, e))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 60), st.integers(0, 30), st.booleans()),
                max_size=40))
def test_random_python_frames_yield(rows: list[tuple[int, int, int, bool]]) -> None:
    """Any mix of Python frames and other slices: self is the brute-force rule of
    :func:`running_self` (Python frames yield to the ops and ranges they partly
    overlap), never negative, and sums to each thread's busy time."""
    if not rows:
        return
    events, raw_index, _ = build_events({
        "name": [f"e{i}" for i in range(len(rows))],
        "category": ["python_function" if r[3] else "cpu_op" for r in rows], "process": ["p"] * len(rows),
        "thread": [str(r[0]) for r in rows], "start": [r[1] for r in rows], "dur": [r[2] for r in rows]},
        Quality(), base=0)
    self_ns = events.set_index(pd.Index(raw_index)).sort_index()["self"].to_numpy()
    for tid in {r[0] for r in rows}:
        mine = [i for i, r in enumerate(rows) if r[0] == tid]
        starts = [rows[i][1] for i in mine]
        ends = [rows[i][1] + rows[i][2] for i in mine]
        assert self_ns[mine].tolist() == running_self(starts, ends, [rows[i][3] for i in mine])
        assert int(self_ns[mine].sum()) == busy(starts, ends)
        assert (self_ns[mine] >= 0).all()


@pytest.mark.skipif(not _native.available(), reason="native library not built")
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 40), st.integers(1, 40)), max_size=80))
def test_native_nest_matches_python_on_overlaps(rows: list[tuple[int, int, int]]) -> None:
    """Dense, long intervals: mostly partial overlaps, several overlap lanes."""
    arr = np.asarray(rows, np.int64).reshape(-1, 3)
    order = np.lexsort((-arr[:, 2], arr[:, 1], arr[:, 0]))
    track, start, end = arr[order, 0], arr[order, 1], arr[order, 1] + arr[order, 2]
    for a, b in zip(nest_python(track, start, end), _native.nest(track, start, end), strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(b, a)


@pytest.mark.skipif(not _native.available(), reason="native library not built")
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 40), st.integers(0, 40)), max_size=80))
def test_native_owned_time_matches_python(rows: list[tuple[int, int, int]]) -> None:
    arr = np.asarray(rows, np.int64).reshape(-1, 3)
    order = np.lexsort((-arr[:, 2], arr[:, 1], arr[:, 0]))
    track, start, end = arr[order, 0], arr[order, 1], arr[order, 1] + arr[order, 2]
    np.testing.assert_array_equal(_native.owned_time(track, start, end), owned_time_python(track, start, end))


@pytest.mark.skipif(not _native.available(), reason="native library not built")
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 40), st.integers(0, 40)), max_size=80),
       st.sampled_from([1, 3, 2**40 + 1, 2**53 - 7, 2**60 + 3]))
def test_native_nested_self_matches_python(rows: list[tuple[int, int, int]], scale: int) -> None:
    """Durations minus the children's: the same float sums (past 2**53 too, where they round)
    and the same truncation as the bincount reference."""
    arr = np.asarray(rows, np.int64).reshape(-1, 3)
    order = np.lexsort((-arr[:, 2], arr[:, 1], arr[:, 0]))
    track, start, end = arr[order, 0], arr[order, 1] * scale, (arr[order, 1] + arr[order, 2]) * scale
    _, parent, _ = nest_python(track, start, end)
    want = nested_self_python(start, end, parent)
    got = _native.nested_self(start, end, parent)
    assert got.dtype == want.dtype == np.int64
    np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(not _native.available(), reason="native library not built")
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 40), st.integers(0, 40), st.booleans()),
                max_size=80))
def test_native_yields_and_segments_match_python(rows: list[tuple[int, int, int, bool]]) -> None:
    """Python frames among other slices, dense partial overlaps: the native yields and owned
    segments equal the Python references, and the segments' lengths are the self times."""
    arr = np.asarray([r[:3] for r in rows], np.int64).reshape(-1, 3)
    py = np.asarray([r[3] for r in rows], bool)
    order = np.lexsort((-arr[:, 2], arr[:, 1], arr[:, 0]))
    track, start, end, py = arr[order, 0], arr[order, 1], arr[order, 1] + arr[order, 2], py[order]
    _, parent, _ = nest_python(track, start, end)
    until = python_yields_until_python(track, start, end, parent, py)
    np.testing.assert_array_equal(_native.python_yields(track, start, end, parent, py), until)
    for flags, limits in ((py, until), (None, None)):
        want = owned_segments_python(track, start, end, flags, limits)
        got = _native.owned_segments(track, start, end, flags, limits)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
    plain = np.bincount(want[0], weights=want[2] - want[1], minlength=len(start)).astype(np.int64)
    np.testing.assert_array_equal(plain, owned_time_python(track, start, end))
