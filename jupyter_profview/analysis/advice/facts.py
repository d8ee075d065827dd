"""What the rules of [advise][jupyter_profview.analysis.advice.advise] read from one trace.

Everything a rule needs is computed here once per call, from the trace's tables, and clipped to
the advice window: the device activities with their kind, the CPU-side runtime calls that block
the host, the steps of the annotation.  The rules themselves (`rules.py`) only combine these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from ... import kinds
from ...model import Trace
from ..columns import match, on_device, thread_keys
from ..gpu import merge_intervals

#: CPU-side runtime calls that block the host until the device is done (CUDA and HIP)
HOST_SYNC_CALLS = frozenset(
    f"{api}{call}" for api in ("cuda", "hip")
    for call in ("DeviceSynchronize", "StreamSynchronize", "EventSynchronize", "Memcpy")
)

Intervals = tuple[np.ndarray, np.ndarray]

#: the kind of each activity type of ``trace.launches`` (jupyter_profview.kinds.ACTIVITY_KINDS)
ACTIVITY_KIND = {"kernel": "computation", "communication": "communication", "memcpy": "memory",
                 "memset": "memory", "dma": "dma"}


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
    #: what does not depend on the window, shared by the Facts of one advise call
    shared: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def span(self) -> int:
        return self.window[1] - self.window[0]

    def _all_activities(self) -> pd.DataFrame:
        la = self.trace.launches
        start = la["kernel_start"].to_numpy(np.int64)
        kind = la["type"].map(ACTIVITY_KIND).astype(object)  # categorical: mapped once per category
        return pd.DataFrame({
            "event": la["kernel"].to_numpy(np.int64), "gpu": la["gpu"].to_numpy(),
            "kind": kind.to_numpy(), "type": la["type"].astype(object).to_numpy(), "name": la["name"].array,
            "start": start, "end": start + la["kernel_dur"].to_numpy(np.int64),
            "full_dur": la["kernel_dur"].to_numpy(np.int64),
            "launch": la["launch"].to_numpy(np.int64, na_value=-1),
        })

    @cached_property
    def activities(self) -> pd.DataFrame:
        """Device activities overlapping the window: ``event``, ``gpu``, ``kind`` (``computation``,
        ``communication``, ``memory``, ``dma``), ``type``, ``name``, ``start``/``end`` (clipped),
        ``dur`` (clipped), ``full_dur``, ``launch`` (event id or -1)."""
        acts = self.once("activities", self._all_activities)
        start, end = acts["start"].to_numpy(), acts["end"].to_numpy()
        lo, hi = self.window
        inside = ((end > lo) & (start < hi)) | ((start == end) & (start >= lo) & (start < hi))
        out = acts[inside].copy()
        out["start"], out["end"] = clip(start[inside], end[inside], self.window)
        out["dur"] = out["end"] - out["start"]
        return out

    @cached_property
    def gpus(self) -> list[str]:
        """Every device of the trace that ran an activity (in or out of the window)."""
        gpu = self.trace.launches["gpu"]
        if isinstance(gpu.dtype, pd.CategoricalDtype):
            return sorted(str(c) for c in gpu.cat.remove_unused_categories().cat.categories)
        return sorted(set(gpu.astype(str)))

    def once(self, key: str, make: Any) -> Any:
        """``make()``, computed once per advise call (:attr:`shared`)."""
        if key not in self.shared:
            self.shared[key] = make()
        return self.shared[key]

    def cpu_slices(self, mask: np.ndarray) -> pd.DataFrame:
        """Host-side slices selected by ``mask`` that overlap the window: ``event``, ``thread``
        (process / thread key), ``start``/``end`` clipped, ``dur`` clipped."""
        ev = self.trace.events
        host = self.once("host_slices", lambda: (ev["kind"].to_numpy() == "slice") & ~on_device(self.trace))
        pick = mask & host
        start = ev["start"].to_numpy(np.int64)
        end = start + ev["dur"].to_numpy(np.int64)
        lo, hi = self.window
        pick &= (end > lo) & (start < hi)
        s, e = clip(start[pick], end[pick], self.window)
        threads = self.once("threads", lambda: thread_keys(ev))
        return pd.DataFrame({"event": ev.index.to_numpy(np.int64)[pick], "thread": threads[pick],
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
