"""What the rules of [advise][jupyter_profview.analysis.advice.advise] read from one trace.

Everything a rule needs is computed here once per call, from the trace's tables, and clipped to
the advice window: the device activities with their kind, the CPU-side runtime calls that block
the host, the steps of the annotation.  The rules themselves (`rules.py`) only combine these.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from ... import kinds
from ...model import Trace
from ..columns import match, on_device
from ..gpu import merge_intervals

#: CPU-side runtime calls that block the host until the device is done (CUDA and HIP)
HOST_SYNC_CALLS = frozenset(
    f"{api}{call}" for api in ("cuda", "hip")
    for call in ("DeviceSynchronize", "StreamSynchronize", "EventSynchronize", "Memcpy")
)

Intervals = tuple[np.ndarray, np.ndarray]


def clip(start: np.ndarray, end: np.ndarray, window: tuple[int, int]) -> Intervals:
    """``[start, end)`` clipped to the window (intervals outside it become empty)."""
    lo, hi = window
    s = np.clip(np.asarray(start, np.int64), lo, hi)
    e = np.clip(np.asarray(end, np.int64), lo, hi)
    return s, np.maximum(e, s)


def union(start: np.ndarray, end: np.ndarray) -> Intervals:
    """Sorted disjoint union of the non-empty intervals."""
    keep = end > start
    return merge_intervals(start[keep], end[keep])


def length(intervals: Intervals) -> int:
    return int((intervals[1] - intervals[0]).sum())


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """Intersection of two sorted disjoint interval sets."""
    (sa, ea), (sb, eb) = a, b
    if len(sa) == 0 or len(sb) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # each interval of a against the intervals of b it can meet
    lo = np.searchsorted(eb, sa, side="right")
    hi = np.searchsorted(sb, ea, side="left")
    count = np.maximum(hi - lo, 0)
    ia = np.repeat(np.arange(len(sa)), count)
    ib = np.concatenate([np.arange(a0, a1) for a0, a1 in zip(lo, hi, strict=True) if a1 > a0]) \
        if count.sum() else np.zeros(0, np.int64)
    s = np.maximum(sa[ia], sb[ib])
    e = np.minimum(ea[ia], eb[ib])
    keep = e > s
    return s[keep], e[keep]


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """``a`` minus ``b`` (sorted disjoint sets): the time in ``a`` and not in ``b``."""
    inter = intersect(a, b)
    # a minus b = a with the intersection's pieces cut out: rebuild from boundaries
    points = np.concatenate([a[0], a[1], inter[0], inter[1]])
    delta = np.concatenate([np.ones(len(a[0]), np.int64), -np.ones(len(a[1]), np.int64),
                            -np.ones(len(inter[0]), np.int64), np.ones(len(inter[1]), np.int64)])
    order = np.lexsort((delta, points))
    points, level = points[order], np.cumsum(delta[order])
    starts = points[:-1][level[:-1] > 0]
    ends = points[1:][level[:-1] > 0]
    keep = ends > starts
    return union(starts[keep], ends[keep])


@dataclass(frozen=True)
class Facts:
    """One trace seen through the advice window (see the module docstring)."""

    trace: Trace
    window: tuple[int, int]

    @property
    def span(self) -> int:
        return self.window[1] - self.window[0]

    @cached_property
    def activities(self) -> pd.DataFrame:
        """Device activities overlapping the window: ``event``, ``gpu``, ``kind`` (``computation``,
        ``communication``, ``memory``, ``dma``), ``name``, ``start``/``end`` (clipped), ``dur``
        (clipped), ``launch`` (event id or -1), ``correlation``."""
        la = self.trace.launches
        start = la["kernel_start"].to_numpy(np.int64)
        end = start + la["kernel_dur"].to_numpy(np.int64)
        lo, hi = self.window
        inside = (end > lo) & (start < hi) | ((start == end) & (start >= lo) & (start < hi))
        la = la[inside]
        s, e = clip(start[inside], end[inside], self.window)
        kind = la["type"].astype(str).map({"kernel": "computation", "communication": "communication",
                                            "memcpy": "memory", "memset": "memory", "dma": "dma"})
        return pd.DataFrame({
            "event": la["kernel"].to_numpy(np.int64), "gpu": la["gpu"].astype(str).to_numpy(),
            "kind": kind.to_numpy(), "type": la["type"].astype(str).to_numpy(),
            "name": la["name"].astype(str).to_numpy(), "start": s, "end": e, "dur": e - s,
            "full_dur": la["kernel_dur"].to_numpy(np.int64),
            "launch": la["launch"].to_numpy(np.int64, na_value=-1),
        })

    @cached_property
    def gpus(self) -> list[str]:
        """Every device of the trace that ran an activity (in or out of the window)."""
        return sorted(set(self.trace.launches["gpu"].astype(str)))

    def cpu_slices(self, mask: np.ndarray) -> pd.DataFrame:
        """Host-side slices selected by ``mask`` that overlap the window: ``event``, ``thread``
        (process / thread key), ``start``/``end`` clipped, ``dur`` clipped."""
        ev = self.trace.events
        pick = mask & (ev["kind"].to_numpy() == "slice") & ~on_device(self.trace)
        start = ev["start"].to_numpy(np.int64)
        end = start + ev["dur"].to_numpy(np.int64)
        lo, hi = self.window
        pick &= (end > lo) & (start < hi)
        s, e = clip(start[pick], end[pick], self.window)
        sub = ev[pick]
        return pd.DataFrame({"event": sub.index.to_numpy(np.int64),
                             "thread": (sub["process"].astype(str) + " / " + sub["thread"].astype(str)).to_numpy(),
                             "start": s, "end": e, "dur": e - s})

    @cached_property
    def host_syncs(self) -> pd.DataFrame:
        """The blocking runtime calls (:data:`HOST_SYNC_CALLS`) in the window."""
        return self.cpu_slices(match(self.trace.events["name"], lambda n: n in HOST_SYNC_CALLS))

    @cached_property
    def dataloader(self) -> pd.DataFrame:
        """CPU slices whose name contains ``DataLoader`` in the window."""
        return self.cpu_slices(match(self.trace.events["name"], lambda n: "DataLoader" in n))

    def enclosing_cpu_op(self, ids: np.ndarray) -> np.ndarray:
        """Nearest ``cpu_op`` ancestor of each event (itself excluded), -1 where none."""
        ev = self.trace.events
        parent = ev["parent"].to_numpy(np.int64)
        is_op = match(ev["category"], lambda c: c == "cpu_op")
        out = np.full(len(ids), -1, np.int64)
        current = parent[ids] if len(ids) else np.zeros(0, np.int64)
        todo = np.flatnonzero(current >= 0)
        while len(todo):
            hit = is_op[current[todo]]
            out[todo[hit]] = current[todo[hit]]
            todo = todo[~hit]
            current[todo] = parent[current[todo]]
            todo = todo[current[todo] >= 0]
        return out


def annotation_steps(trace: Trace, annotation: str) -> pd.DataFrame:
    """The instances of ``annotation`` on CPU threads (:func:`jupyter_profview.kinds.step_pattern`):
    ``event``, ``name``, ``start``, ``end``, ``dur``, sorted by start."""
    ev = trace.events
    pattern = kinds.step_pattern(annotation)
    mask = match(ev["name"], lambda n: pattern.match(n) is not None)
    mask &= (ev["kind"].to_numpy() == "slice") & ~on_device(trace)
    mask &= ~match(ev["category"], lambda c: c == "gpu_user_annotation")
    sub = ev[mask].sort_values("start", kind="stable")
    start = sub["start"].to_numpy(np.int64)
    dur = sub["dur"].to_numpy(np.int64)
    return pd.DataFrame({"event": sub.index.to_numpy(np.int64), "name": sub["name"].astype(str).to_numpy(),
                         "start": start, "end": start + dur, "dur": dur})
