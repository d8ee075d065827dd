"""The active memory timeline of a CUDA memory snapshot (``torch_cuda_snapshot``), as PyTorch's
memory_viz draws it: every live allocation a band from its alloc to its free, stacked so that
the top edge is the allocated total.  The ``_alloc_timeline`` frame the front end draws
(``js/src/alloc_timeline.ts``).

Bounded whatever the snapshot's size: the `top` largest allocations alive in the window are
bands of their own; all the others are one summary band at the bottom (``rest``), a step curve
downsampled to first/min/max/last per pixel column of the window (of the total and of the
rest, so that the drawn peak of every column is the true one).

The state at a time ``t`` is the state after every trace entry at or before ``t`` (as
`analysis.allocator_state`): the total there is the last point of the device's memory curve
(``trace.memory``, kind ``measured``) at that time; a band is alive on ``alloc_time <= t <
free_time``.

Band columns (one row per band, in stacking order: the earlier allocation lower):

========= ===== =================================================================
column    dtype meaning
========= ===== =================================================================
start     f64   ``alloc_time`` (clipped to the window's start, never before the trace)
end       f64   ``free_time``, or the trace's end when never freed (``open`` = 1)
size      f64   ``bytes``
addr      f64   ``address`` (NaN when the trace has none)
open      u8    1: not freed in the trace
row       u32   the row of ``trace.allocations``
stack     u32   index into ``meta.stacks``
========= ===== =================================================================

The rest curve is two more columns, ``rest_time`` and ``rest_bytes`` (f64, their own length: a
step curve, each level holding until the next time).  ``meta`` holds ``device``, ``devices``,
``window``, ``bands`` (how many allocations the device has alive in the window), ``complete``
(every band and curve point is in the frame: a zoom needs no new frame), ``frames`` (each
distinct frame text once) and ``stacks`` (per distinct stack: indices into ``frames``, innermost first).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..model import Trace
from .blocks import blocks
from .codec import encode_frame
from .memory_lod import downsample

#: the largest allocations drawn as bands of their own (memory_viz summarises the rest too)
TOP_BANDS = 400
#: pixel columns of the rest curve's level of detail
COLUMNS = 1200


def is_snapshot(trace: Any) -> bool:
    """Whether `trace` is a CUDA memory snapshot with allocations (the views apply)."""
    return (getattr(trace, "format", "") == "torch_cuda_snapshot" and trace.allocations is not None
            and len(trace.allocations) > 0)


def devices(trace: Trace) -> list[str]:
    return sorted({str(d) for d in trace.allocations["device"].unique()})


def busiest_device(trace: Trace) -> str:
    """The device with the largest allocated peak (the one a view opens on)."""
    peaks = trace.metadata.get("peaks") or {}
    devs = devices(trace)
    return max(devs, key=lambda d: (peaks.get(d, {}).get("bytes", 0), d)) if devs else ""


def total_curve(trace: Trace, device: str) -> tuple[np.ndarray, np.ndarray]:
    """(time, bytes) of the device's allocated total after every entry at each distinct time."""
    mem = trace.memory
    pick = np.flatnonzero(((mem["device"] == device) & (mem["kind"] == "measured")).to_numpy(bool))
    at: slice | np.ndarray = pick
    if len(pick) and int(pick[-1]) - int(pick[0]) + 1 == len(pick):  # one run of rows: no copies
        at = slice(int(pick[0]), int(pick[-1]) + 1)
    t = mem["time"].to_numpy(np.int64)[at]
    b = mem["bytes"].to_numpy(np.int64)[at]
    if (t[1:] < t[:-1]).any():
        order = np.argsort(t, kind="stable")
        t, b = t[order], b[order]
    last = np.ones(len(t), bool)
    last[:-1] = t[1:] != t[:-1]
    return (t, b) if last.all() else (t[last], b[last])


def _alive_sum(t: np.ndarray, start: np.ndarray, end: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Sum of `size` of the allocations alive (start <= t < end) at each time of `t`."""
    so = np.argsort(start, kind="stable")
    eo = np.argsort(end, kind="stable")
    cs = np.concatenate([[0], np.cumsum(size[so])])
    ce = np.concatenate([[0], np.cumsum(size[eo])])
    starts, ends = start[so], end[eo]
    out = np.empty(len(t), cs.dtype)
    for a, b in blocks(len(t)):
        at = t[a:b]
        out[a:b] = cs[np.searchsorted(starts, at, side="right")] - ce[np.searchsorted(ends, at, side="right")]
    return out


def _times(al: pd.DataFrame, rows: np.ndarray, lo: float) -> tuple[np.ndarray, np.ndarray]:
    """``alloc_time`` (``lo`` when unknown) and ``free_time`` (inf: never freed) of the
    allocations at `rows`, as float64."""
    return (al["alloc_time"].array[rows].to_numpy(np.float64, na_value=lo),
            al["free_time"].array[rows].to_numpy(np.float64, na_value=np.inf))


def _alive(al: pd.DataFrame, rows: np.ndarray, lo: float, ws: float, we: float) -> np.ndarray:
    """Which of the allocations at `rows` are alive in ``[ws, we]`` (positions into `rows`),
    read block by block."""
    parts = [np.zeros(0, np.int64)]
    for a, b in blocks(len(rows)):
        start, free = _times(al, rows[a:b], lo)
        parts.append(np.flatnonzero((start <= we) & (free > ws) & (free > start)) + a)
    return np.concatenate(parts)


def _largest(cand: np.ndarray, size: np.ndarray, top: int) -> np.ndarray:
    """The `top` entries of `cand` of the largest `size` (the earlier entry of `cand` first on a
    tie), in `cand`'s order: ``cand[np.lexsort((cand, -size))[:top]]`` as a set, found by
    partition rather than a sort of every candidate."""
    if len(cand) <= top:
        return cand
    kth = np.partition(size, len(size) - top)[len(size) - top]  # the top-th largest size
    above = cand[size > kth]
    return np.sort(np.concatenate([above, cand[size == kth][:top - len(above)]]))


def timeline_frame(trace: Trace, device: str, window: tuple[float, float] | None, *, token: int,
                   top: int = TOP_BANDS, columns: int = COLUMNS) -> bytes:
    """The ``_alloc_timeline`` frame of `device` for `window` (None: the whole trace)."""
    al = trace.allocations
    t_all, total_all = total_curve(trace, device)
    lo = float(t_all[0]) if len(t_all) else 0.0
    hi = float(t_all[-1]) if len(t_all) else 0.0
    ws, we = (lo, hi) if window is None else (max(lo, float(window[0])), min(hi, float(window[1])))
    if we < ws:
        ws, we = we, ws
    rows = np.flatnonzero((al["device"] == device).to_numpy(bool))
    cand = _alive(al, rows, lo, ws, we)
    size_all = al["bytes"].to_numpy(np.int64)
    chosen = _largest(cand, size_all[rows[cand]], top)
    start, free = _times(al, rows[chosen], lo)
    size = size_all[rows[chosen]]
    stacking = np.lexsort((chosen, start))  # stacking order: allocated earlier, lower
    chosen, start, free, size = chosen[stacking], start[stacking], free[stacking], size[stacking]

    # the rest: total minus the top bands alive, over the window's points (t_all is sorted): the
    # points in [ws, we] and the level at the window's start (the last point at or before ws)
    first = int(np.searchsorted(t_all, ws, side="right")) - 1
    end_at = int(np.searchsorted(t_all, we, side="right"))
    t_w = t_all[max(first, 0):end_at].astype(np.float64)
    total_w = total_all[max(first, 0):end_at]
    rest_w = _alive_sum(t_w, start, free, size)
    np.subtract(total_w, rest_w, out=rest_w)
    np.maximum(rest_w, 0, out=rest_w)
    complete = len(cand) <= top
    if len(t_w) > 4 * columns:
        px = max((we - ws) / columns, 1e-9)
        # bytes are exact integers: their order is the same as float64's
        sel = np.union1d(downsample(t_w, total_w, ws, px), downsample(t_w, rest_w, ws, px))
        t_w, rest_w = t_w[sel], rest_w[sel]
        complete = False

    frames = al["frames"].to_numpy(object)[rows[chosen]]
    frame_ids: dict[str, int] = {}
    stack_ids: dict[tuple[int, ...], int] = {}
    stack_of = np.zeros(len(chosen), np.uint32)
    for k, fr in enumerate(frames):
        fr = fr if isinstance(fr, list) else []
        key = tuple(frame_ids.setdefault(str(f), len(frame_ids)) for f in fr)
        stack_of[k] = stack_ids.setdefault(key, len(stack_ids))
    addr = al["address"].array[rows[chosen]].to_numpy(np.float64, na_value=np.nan)
    meta: dict[str, Any] = {
        "device": device, "devices": devices(trace), "window": [ws, we], "extent": [lo, hi],
        "bands": int(len(cand)), "complete": bool(complete),
        "frames": list(frame_ids), "stacks": [list(s) for s in stack_ids], "token": token,
    }
    return encode_frame({
        "start": np.maximum(start, lo), "end": np.where(np.isfinite(free), free, hi),
        "size": size.astype(np.float64), "addr": addr,
        "open": (~np.isfinite(free)).astype(np.uint8), "row": rows[chosen].astype(np.uint32),
        "stack": stack_of, "rest_time": t_w, "rest_bytes": rest_w.astype(np.float64),
    }, meta)


def segments_frame(state: pd.DataFrame, device: str, time: float, *, token: int) -> bytes:
    """The ``_segments`` frame: the blocks of `analysis.allocator_state(trace, time, device)`
    (one row per block, segments in address order): ``segment`` (index into ``meta.segments``),
    ``address``, ``size`` (f64), ``state`` (u8: 0 allocated, 1 free) and ``stack`` (index into
    ``meta.stacks``, the frames of an allocation; -1 for a free block)."""
    seg_addr = state["segment"].to_numpy(np.int64)
    segs, seg_index = np.unique(seg_addr, return_inverse=True)
    sizes = state["size"].to_numpy(np.int64)
    seg_total = np.bincount(seg_index, weights=sizes, minlength=len(segs)) if len(segs) else np.zeros(0)
    stack_ids: dict[tuple[str, ...], int] = {}
    stack = np.full(len(state), -1, np.int32)
    for k, (st, fr) in enumerate(zip(state["state"].tolist(), state["frames"].tolist(), strict=True)):
        if st == "allocated":
            stack[k] = stack_ids.setdefault(tuple(str(f) for f in fr), len(stack_ids))
    meta = {"device": device, "time": float(time), "token": token,
            "segments": [{"address": int(a), "size": int(s)} for a, s in zip(segs, seg_total, strict=True)],
            "stacks": [list(s) for s in stack_ids]}
    return encode_frame({
        "segment": seg_index.astype(np.uint32), "address": state["address"].to_numpy(np.float64),
        "size": sizes.astype(np.float64),
        "state": (state["state"].to_numpy(object) != "allocated").astype(np.uint8), "stack": stack,
    }, meta)
