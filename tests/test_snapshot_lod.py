"""Level of detail of a big snapshot's memory curve on the kernel side: the memory panel's first
payload (``_memory``, the overview) and a window's ``_memory_detail`` hold a bounded number of
points whatever the number of trace entries, and the overview's maximum is the true peak, replayed
here from the raw trace entries (unpickled in the test) back from the snapshot's active blocks."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from jupyter_profview.loader import load
from jupyter_profview.widget import rpc
from jupyter_profview.widget.codec import decode_frame
from jupyter_profview.widget.lod import OVERVIEW_WIDTH
from jupyter_profview.widget.state import WidgetData

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import make_snapshot  # noqa: E402

sys.path.pop(0)

ENTRIES = 120_000  # ~29 MB: ~60k points of the allocated-bytes curve, > 3x the overview's bound


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], WidgetData]:
    path = tmp_path_factory.mktemp("lod") / "big.pickle"
    make_snapshot.write(path, entries=ENTRIES, oom=None)
    with open(path, "rb") as f:
        raw = pickle.load(f)  # our own generated file
    return raw, WidgetData(load(path))


def _levels(raw: dict[str, Any], device: int) -> tuple[np.ndarray, np.ndarray]:
    """(time_us, allocated bytes after every entry at that time) of ``device``, and the level
    before the first entry at index 0 of the second array (time -1)."""
    entries = [e for e in raw["device_traces"][device] if e["action"] in ("alloc", "free_completed")]
    delta = np.array([e["size"] if e["action"] == "alloc" else -e["size"] for e in entries], np.int64)
    times = np.array([e["time_us"] for e in entries], np.int64)
    end = sum(b["size"] for s in raw["segments"] if s["device"] == device for b in s["blocks"]
              if b["state"].startswith("active"))
    start = end - int(delta.sum())
    order = np.argsort(times, kind="stable")
    times, level = times[order], start + np.cumsum(delta[order])
    last = np.append(times[1:] != times[:-1], True)  # the level once every entry at that time is in
    return np.append(-1, times[last]), np.append(start, level[last])


def _allocated(frame: Any) -> tuple[np.ndarray, dict[str, Any], np.ndarray]:
    series = frame.meta["series"]
    k = next(i for i, s in enumerate(series) if s["device"] == "cuda:0" and s["unit"] == "bytes"
             and s["kind"] == "measured")
    mine = frame.columns["series"] == k
    return frame.columns["bytes"][mine], series[k], frame.columns["time"][mine]


def _origin(raw: dict[str, Any]) -> int:
    return min(e["time_us"] for trace in raw["device_traces"] for e in trace)


def test_overview_is_bounded_and_its_max_is_the_true_peak(big: Any) -> None:
    raw, data = big
    n_points = int((data.trace.memory["device"].astype(str) == "cuda:0").sum())
    per_series = 4 * (OVERVIEW_WIDTH + 1)  # first/min/max/last per pixel column, + the point before
    assert n_points > 3 * per_series  # the bound below is the level of detail's, not the trace's size
    frame = decode_frame(data.memory_overview())  # the memory panel's first payload
    n_series = len(frame.meta["series"])
    assert len(frame.columns["bytes"]) <= n_series * per_series
    got, meta, at = _allocated(frame)
    times, level = _levels(raw, 0)
    peak = int(level.max())
    assert level[-1] < peak  # a peak inside the trace, not its last level
    assert int(got.max()) == peak
    assert meta["peak_bytes"] == peak
    # per pixel column, the max and min sent equal those of the replayed curve at its change
    # points and at the times sent (first/min/max/last per column: no spike is lost)
    t_ns = np.append(-np.inf, (times[1:] - _origin(raw)) * 1000.0)
    t0, px = frame.meta["t0"], (frame.meta["t1"] - frame.meta["t0"]) / frame.meta["width"]
    probe = np.unique(np.concatenate([t_ns[1:], at]))
    want = level[np.searchsorted(t_ns, probe, "right") - 1]
    col_want, col_got = np.floor((probe - t0) / px), np.floor((at - t0) / px)
    starts_w = np.flatnonzero(np.append(True, col_want[1:] != col_want[:-1]))
    starts_g = np.flatnonzero(np.append(True, col_got[1:] != col_got[:-1]))
    assert (col_want[starts_w] == col_got[starts_g]).all()
    assert (np.maximum.reduceat(want, starts_w) == np.maximum.reduceat(got, starts_g)).all()
    assert (np.minimum.reduceat(want, starts_w) == np.minimum.reduceat(got, starts_g)).all()


def test_detail_of_a_window_is_bounded_and_exact(big: Any) -> None:
    raw, data = big
    times, level = _levels(raw, 0)
    t_ns = (times[1:] - _origin(raw)) * 1000  # the tables' axis: ns from the trace's first entry
    lo, hi = float(t_ns[len(t_ns) // 3]), float(t_ns[2 * len(t_ns) // 3])
    width = 800
    reply, buffers = rpc.memory_detail(data, {"t0": lo, "t1": hi, "width": width})
    assert "error" not in reply
    frame = decode_frame(buffers[0])
    assert len(frame.columns["bytes"]) <= len(frame.meta["series"]) * 4 * (width + 1)
    got, _, _ = _allocated(frame)
    inside = level[1:][(t_ns >= lo) & (t_ns <= hi)]
    assert len(inside) > 4 * (width + 1)
    assert int(got.max()) == int(inside.max())
    assert int(got.min()) == int(min(inside.min(), level[1:][t_ns < lo][-1]))


@pytest.mark.parametrize("top", [5, 400])
def test_alloc_timeline_bands_are_the_largest_alive_and_the_rest_is_the_remainder(
        big: tuple[dict[str, Any], WidgetData], top: int) -> None:
    from jupyter_profview.widget.alloc_timeline import timeline_frame

    trace = big[1].trace
    t = trace.memory["time"].to_numpy(np.int64)
    lo, hi = int(t.min()), int(t.max())
    ws, we = lo + (hi - lo) * 0.3, lo + (hi - lo) * 0.45
    frame = decode_frame(timeline_frame(trace, "cuda:0", (ws, we), token=1, top=top, columns=50))
    # the definition, in pandas: alive in the window, largest first (the earlier row on a tie)
    al = trace.allocations.reset_index(drop=True)
    al = al[al["device"].astype(str) == "cuda:0"]
    start = al["alloc_time"].astype("float64").fillna(lo)
    free = al["free_time"].astype("float64").fillna(np.inf)
    alive = al[(start <= we) & (free > ws) & (free > start)]
    assert frame.meta["bands"] == len(alive)
    chosen = alive.assign(_row=alive.index).sort_values(["bytes", "_row"], ascending=[False, True]).head(top)
    chosen = chosen.assign(_start=start[chosen.index]).sort_values(["_start", "_row"])
    assert frame["row"].tolist() == chosen["_row"].tolist()
    assert frame["size"].tolist() == chosen["bytes"].astype(float).tolist()
    # each point of the rest curve: the allocated total there minus the bands alive there
    mem = trace.memory[trace.memory["device"].astype(str) == "cuda:0"]
    level = mem.groupby("time")["bytes"].last()
    assert frame["rest_time"][0] == level.index[level.index <= ws].max()  # the level at ws
    assert frame["rest_time"][-1] == level.index[level.index <= we].max()
    for time, rest in zip(frame["rest_time"].tolist(), frame["rest_bytes"].tolist(), strict=True):
        on = (chosen["_start"] <= time) & (free[chosen.index] > time)
        assert rest == max(float(level[int(time)]) - float(chosen.loc[on, "bytes"].sum()), 0.0)
