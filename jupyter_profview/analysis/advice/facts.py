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

from ... import derived
from ...model import Trace
from ..columns import active_gpus, host_syncs, match, on_device, thread_keys

Intervals = tuple[np.ndarray, np.ndarray]


def clip(start: np.ndarray, end: np.ndarray, window: tuple[int, int]) -> Intervals:
    """``[start, end)`` clipped to the window (intervals outside it become empty)."""
    lo, hi = window
    s = np.clip(np.asarray(start, np.int64), lo, hi)
    e = np.clip(np.asarray(end, np.int64), lo, hi)
    return s, np.maximum(e, s)


def union(start: np.ndarray, end: np.ndarray) -> Intervals:
    """Sorted disjoint union of the non-empty intervals ([derived.union][jupyter_profview.derived.union])."""
    keep = end > start
    return derived.union(start[keep], end[keep])


def length(intervals: Intervals) -> int:
    return int((intervals[1] - intervals[0]).sum())


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
        """The kernels, memcpy, memset and DMA transfers of the trace
        ([derived.device_activities][jupyter_profview.derived.device_activities] less its syncs)."""
        acts = derived.device_activities(self.trace)
        acts = acts[acts["kind"].to_numpy() != "sync"]
        return pd.DataFrame({
            "event": acts["event"].to_numpy(np.int64), "gpu": acts["gpu"].to_numpy(),
            "kind": acts["kind"].astype(object).to_numpy(), "type": acts["type"].astype(object).to_numpy(),
            "name": acts["name"].to_numpy(), "start": acts["start"].to_numpy(np.int64),
            "end": acts["end"].to_numpy(np.int64),
            "launch": acts["launch"].to_numpy(np.int64, na_value=-1),
        })

    @cached_property
    def activities(self) -> pd.DataFrame:
        """Device activities overlapping the window: ``event``, ``gpu``, ``kind`` (``computation``,
        ``communication``, ``memory``, ``dma``), ``type``, ``name``, ``start``/``end`` (clipped),
        ``dur`` (clipped), ``launch`` (event id or -1)."""
        acts = self.once("activities", self._all_activities)
        start, end = acts["start"].to_numpy(), acts["end"].to_numpy()
        lo, hi = self.window
        inside = ((end > lo) & (start < hi)) | ((start == end) & (start >= lo) & (start < hi))
        out = acts[inside].copy()
        out["start"], out["end"] = clip(start[inside], end[inside], self.window)
        out["dur"] = out["end"] - out["start"]
        return out

    def gpu_idle(self, gpu: str) -> Intervals:
        """When `gpu` runs none of its activities (on any stream) in the window: the window minus
        the union of its activity intervals, sorted and disjoint.  The one definition of a GPU's
        idle time: the `gpu_idle` rule sums it, the widget shades it (`Advice.idle_intervals`)."""
        acts = self.activities
        mine = acts[acts["gpu"].to_numpy() == gpu]
        window = (np.array([self.window[0]], np.int64), np.array([self.window[1]], np.int64))
        return derived.difference(window, union(mine["start"].to_numpy(), mine["end"].to_numpy()))

    @cached_property
    def gpus(self) -> list[str]:
        """Every device of the trace that ran an activity (in or out of the window)."""
        return active_gpus(self.trace)

    def once(self, key: str, make: Any) -> Any:
        """``make()``, computed once per advise call (`shared`)."""
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
        """The calls that hold the host until the device is done (`derived.host_syncs`) in the
        window."""
        return self.cpu_slices(host_syncs(self.trace))

    @cached_property
    def dataloader(self) -> pd.DataFrame:
        """CPU slices whose name contains ``DataLoader`` in the window."""
        return self.cpu_slices(match(self.trace.events["name"], lambda n: "DataLoader" in n))


def annotation_steps(trace: Trace, annotation: str) -> pd.DataFrame:
    """The instances of ``annotation`` on CPU threads
    ([derived.cpu_steps][jupyter_profview.derived.cpu_steps]): ``event``, ``name``, ``start``,
    ``end``, ``dur``, sorted by start."""
    steps = derived.cpu_steps(trace, annotation)
    steps = steps.sort_values(["start", "event"], kind="stable").reset_index(drop=True)
    return pd.DataFrame({"event": steps["event"].to_numpy(np.int64), "name": steps["name"].to_numpy(object),
                         "start": steps["start"].to_numpy(np.int64), "end": steps["end"].to_numpy(np.int64),
                         "dur": (steps["end"] - steps["start"]).to_numpy(np.int64)})
