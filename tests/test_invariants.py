"""Invariants of the events table on every real trace we have, in both decoders.

Walks ``../shared/traces`` (real traces nobody here made: HTA's test data),
the package's examples and the tests' own real traces, and checks what every
number in the table and on screen rests on (``model.py``, ``nesting.py``):

* ``0 <= self <= dur``;
* ``depth == 0`` exactly when ``parent == -1``, else the parent's depth + 1;
* a child lies inside its parent's ``[start, start + dur]``, on its thread;
* per thread, ``self`` adds up to the busy time: the union of the thread's
  intervals, computed here from the intervals alone;
* each track (lane) as drawn is a proper nesting: no two events of one lane
  overlap partly, and each is drawn one row below the event it is drawn in.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jupyter_profview as profview
from jupyter_profview.widget.lod import lane_rows
from tests.trace_files import ROOT, SHARED_DIR, traces_under

SHARED = (SHARED_DIR or ROOT.parent / "shared") / "traces"
FILES = traces_under(SHARED, ROOT / "jupyter_profview" / "examples", ROOT / "tests" / "data")


def busy(start: np.ndarray, end: np.ndarray) -> int:
    """Length of the union of the intervals (a plain sweep)."""
    total, lo, hi = 0, None, None
    for s, e in sorted(zip(start.tolist(), end.tolist(), strict=True)):
        if hi is None or s > hi:
            total += 0 if hi is None or lo is None else hi - lo
            lo, hi = s, e
        else:
            hi = max(hi, e)
    return total + (0 if hi is None or lo is None else hi - lo)


def check(events: pd.DataFrame, what: str) -> None:
    ev = events
    position = pd.Series(np.arange(len(events)), index=events.index)
    start = ev["start"].to_numpy(np.int64)
    dur = ev["dur"].to_numpy(np.int64)
    end = start + dur
    self_ = ev["self"].to_numpy(np.int64)
    depth = ev["depth"].to_numpy(np.int64)
    parent_id = events["parent"].to_numpy(np.int64)
    parent = np.where(parent_id >= 0, position.reindex(parent_id).fillna(-2).to_numpy(np.int64), -1)
    assert (parent >= -1).all(), f"{what}: a parent id that is no event"
    assert (self_ >= 0).all(), f"{what}: negative self {ev.loc[self_ < 0, 'name'].head(3).tolist()}"
    assert (self_ <= dur).all(), f"{what}: self above dur"
    assert ((depth == 0) == (parent == -1)).all(), f"{what}: depth 0 iff no parent"
    has = parent >= 0
    p = parent[has]
    assert (depth[has] == depth[p] + 1).all(), f"{what}: depth is the parent's + 1"
    assert (start[has] >= start[p]).all() and (end[has] <= end[p]).all(), f"{what}: child outside parent"
    for column in ("process", "thread"):
        same = ev[column].astype(str).to_numpy()
        assert (same[has] == same[p]).all(), f"{what}: parent on another {column}"
    for key, group in ev.groupby(["process", "thread"], observed=True):
        s = group["start"].to_numpy(np.int64)
        assert int(group["self"].sum()) == busy(s, s + group["dur"].to_numpy(np.int64)), f"{what} {key}: busy"
    rows = lane_rows(events, False)
    for key, lane in pd.DataFrame({"track": ev["track"].astype(str), "start": start, "end": end,
                                   "row": rows}).groupby("track"):
        stack: list[int] = []
        for s, e, r in zip(lane["start"], lane["end"], lane["row"], strict=True):  # (start, depth) order
            while stack and stack[-1] <= s:
                stack.pop()
            assert not stack or e <= stack[-1], f"{what} {key}: partial overlap within a lane"
            assert r == len(stack), f"{what} {key}: drawn at row {r}, inside {len(stack)} events"
            stack.append(e)


def test_the_walk_finds_the_traces() -> None:
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is not there (CI has it beside the checkout)")
    shared = [p for p in FILES if SHARED in p.parents]
    assert len(shared) >= 10
    assert len(FILES) >= 60


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_invariants_hold(path: Path, decoder: str) -> None:
    check(profview.load(path).events, str(path))


def test_invariants_hold_on_many_ranks(decoder: str) -> None:
    """A TraceSet's ``parent`` is an id of the rank's own (``TraceSet`` docs)."""
    events = profview.load_many(ROOT / "tests" / "data" / "ddp").events
    assert events["rank"].nunique() == 4
    for rank, own in events.groupby("rank"):
        check(own.reset_index(drop=True), f"ddp rank {rank}")
