"""``profview.load(snapshot, window=)`` against the full load restricted to the window in this
test, and against a replay of the raw trace entries (unpickled here): the instants per action in
the window, the allocations alive in it, the allocated bytes at each time in it."""

from __future__ import annotations

import pickle
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from jupyter_profview.errors import ProfviewError
from jupyter_profview.loader import load
from jupyter_profview.model import Trace

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import make_snapshot  # noqa: E402

sys.path.pop(0)


@pytest.fixture(scope="module")
def snap(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Trace]:
    path = tmp_path_factory.mktemp("win") / "s.pickle"
    make_snapshot.write(path, entries=3000, oom="fragmentation", devices=2)
    with open(path, "rb") as f:
        raw = pickle.load(f)  # our own generated file
    return path, raw, load(path)


def _step(table: pd.DataFrame, key: str, keyval: str, col: str, at: np.ndarray) -> np.ndarray:
    rows = table[table[key].astype(str) == keyval]
    t, v = rows["time"].to_numpy(np.int64), rows[col].to_numpy()
    i = np.searchsorted(t, at, side="right") - 1
    assert (i >= 0).all()
    return v[i]


def _raw_entries(raw: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return [(d, e) for d, trace in enumerate(raw["device_traces"]) for e in trace]


def _windows(full: Trace) -> list[tuple[int, int]]:
    end = int(full.events["start"].max())
    return [(end // 3, 2 * end // 3), (0, end // 10), (end // 2 + 1, end), (end // 4, end // 4)]


@pytest.mark.parametrize("which", range(4))
def test_window_equals_the_full_load_restricted(snap: Any, which: int) -> None:
    path, raw, full = snap
    s, e = _windows(full)[which]
    win = load(path, window=(s, e))
    entries = _raw_entries(raw)
    lo = min(x["time_us"] for _, x in entries) * 1000
    # instants: the raw entries whose time falls in the window, per action and device
    want = Counter((f"cuda:{d}", x["action"]) for d, x in entries if s <= x["time_us"] * 1000 - lo <= e)
    inst = win.events[win.events["kind"] == "instant"]
    assert Counter(zip(inst["process"].astype(str), inst["name"].astype(str), strict=True)) == want
    assert sum(want.values()) > 0 or which == 3
    # segment slices: the full load's that overlap the window
    def seg(t: Trace) -> list[tuple[Any, ...]]:
        sl = t.events[t.events["kind"] == "slice"]
        return sorted(zip(sl["process"].astype(str), sl["start"], sl["dur"], sl["addr"].astype(int),
                          strict=True))
    assert seg(win) == [r for r in seg(full) if r[1] <= e and r[1] + r[2] >= s]
    # allocations: the full load's alive in the window
    a = full.allocations
    alive = (a["alloc_time"] <= e) & (a["free_time"].isna() | (a["free_time"] >= s))
    cols = ["device", "address", "bytes", "alloc_time", "free_time", "owner", "requested_free"]
    got = win.allocations[cols].astype(str).reset_index(drop=True)
    assert got.equals(a[alive.to_numpy(bool)][cols].astype(str).reset_index(drop=True))
    # memory: at the window's start, end and every point in it, equal to the full load's curve and
    # to a replay of the raw entries back from the snapshot's allocated bytes at the end
    for dev in full.memory["device"].astype(str).unique():
        d = int(dev.split(":")[1])
        rows = win.memory[win.memory["device"].astype(str) == dev]
        assert rows["time"].min() == s and rows["time"].max() <= e
        at = np.unique(np.concatenate([[s, e], rows["time"].to_numpy(np.int64)]))
        got_b = _step(win.memory, "device", dev, "bytes", at)
        assert (got_b == _step(full.memory, "device", dev, "bytes", at)).all()
        end_alloc = sum(b["size"] for seg_ in raw["segments"] if seg_["device"] == d for b in seg_["blocks"]
                        if b["state"].startswith("active"))
        for t_ns, b in zip(at.tolist(), got_b.tolist(), strict=True):
            later = sum((x["size"] if x["action"] == "alloc" else -x["size"])
                        for dd, x in entries if dd == d and x["time_us"] * 1000 - lo > t_ns
                        and x["action"] in ("alloc", "free_completed"))
            assert b == end_alloc - later
        r = win.counters[win.counters["process"].astype(str) == dev]
        at_r = np.unique(np.concatenate([[s, e], r["time"].to_numpy(np.int64)]))
        assert (_step(win.counters, "process", dev, "value", at_r)
                == _step(full.counters, "process", dev, "value", at_r)).all()
    assert win.quality.unaccounted == 0
    # skipped: the entries outside it, and the snapshot's segments whose slice (from their last
    # segment_alloc, else the trace's start, to the trace's end) misses it
    hi = max(x["time_us"] * 1000 for _, x in entries) - lo
    opened = {(d, x["addr"]): x["time_us"] * 1000 - lo for d, x in entries if x["action"] == "segment_alloc"}
    missed = sum(1 for g in raw["segments"] if opened.get((g["device"], g["address"]), 0) > e or hi < s)
    assert win.quality.skipped["outside the window"] == len(entries) - sum(want.values()) + missed


def test_window_beyond_the_trace_and_empty(snap: Any) -> None:
    path, raw, full = snap
    end = int(full.events["start"].max())
    far = load(path, window=(end + 10**9, end + 2 * 10**9))
    assert (far.events["kind"] == "instant").sum() == 0
    for dev in full.memory["device"].astype(str).unique():
        last = full.memory[full.memory["device"].astype(str) == dev]["bytes"].iloc[-1]
        assert far.memory[far.memory["device"].astype(str) == dev]["bytes"].tolist() == [last]
    assert far.quality.unaccounted == 0
    before = load(path, window=(-10**9, -1))
    assert len(before.events) == 0 and len(before.memory) == 0 and len(before.allocations) == 0


@pytest.mark.parametrize("window", [(5, 1), (1.5, 2), (1,), "0-1", (True, 3)])
def test_bad_windows_are_refused(snap: Any, window: Any) -> None:
    with pytest.raises(ProfviewError, match="window"):
        load(snap[0], window=window)


def test_other_formats_refuse_window() -> None:
    from jupyter_profview import example
    with pytest.raises(ProfviewError, match="not supported for chrome"):
        load(example("torch_mlp_train"), window=(0, 10))
