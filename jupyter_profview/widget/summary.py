"""Summary lanes of collapsed groups: where each group is busy.

A collapsed group (a process group, or a ``rank N`` section of a TraceSet
shown with `jupyter_profview.show`) is drawn as one row in its header:
the union of its top-level slices (`top_work`).  Gaps shorter than one overview
pixel (the trace's extent / ``width``) are closed, so a group has at most
about ``width`` intervals whatever its event count; the intervals are exact
otherwise (zooming in shows the real idle gaps down to that size).

Wrappers do not count as work: the profiler's own records (`derived.wrapper_mask`, e.g.
Kineto's ``PyTorch Profiler`` span covering the whole recording) and ``ProfilerStep#N`` slices
(covering each step); the top-level slices *inside* them count instead.
Otherwise every rank would look busy all the time.

A second series per group (``kind`` 1) is the union of its communication
slices at any depth (`is_comm`: gloo/NCCL calls and kernels): a rank that
waits for a straggler shows long communication.

Both series are coloured like the slices they cover: each interval carries the
legend code (``color``) of its slices (the union is taken per code), so a
collapsed lane shows the colouring the timeline shows, colour by a metric
included, and every colour it draws is in the legend.  The totals
(``meta.busy`` / ``meta.comm``) are those of the union over all codes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..derived import step_mask, union, wrapper_mask
from .blocks import blocks
from .codec import encode_frame
from .legend import communication_mask
from .lod import OVERVIEW_WIDTH, TimelineIndex


def group_keys(tracks: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Track indices per collapsible group key: each process group's ``key`` and each ``section``."""
    keys: dict[str, list[int]] = {}
    for i, t in enumerate(tracks):
        keys.setdefault(str(t.get("key", t["process"])), []).append(i)
        if t.get("section"):
            keys.setdefault(str(t["section"]), []).append(i)
    return keys


def is_comm(events: Any) -> np.ndarray:
    """Per event: a collective's call, wait or kernel (`legend.communication_mask`, the one the
    category colouring recodes as ``communication``)."""
    return communication_mask(events)


def top_work(events: Any) -> np.ndarray:
    """Per event: does it count towards its group's busy lane?  Slices that are not wrappers
    (`derived.wrapper_mask`, ``ProfilerStep#N``) at depth 0 or directly under a wrapper."""
    n = len(events)
    if n == 0:
        return np.zeros(0, bool)
    wrapper = wrapper_mask(events) | step_mask(events)[0]
    parent = events["parent"].to_numpy(np.int64, na_value=-1) if "parent" in events.columns \
        else np.full(n, -1, np.int64)
    dur = events["dur"].to_numpy(np.int64)
    out = np.empty(n, bool)
    for a, b in blocks(n):  # block by block: no full-size position arrays
        mine = parent[a:b]
        ppos = np.full(b - a, -1, np.int64)
        has = mine >= 0
        ppos[has] = events.index.get_indexer(mine[has])
        top_or_under = ppos < 0  # no parent in the trace, or (below) a parent that is a wrapper
        top_or_under[~top_or_under] = wrapper[ppos[~top_or_under]]
        out[a:b] = (dur[a:b] > 0) & ~wrapper[a:b] & top_or_under
    return out


def summary_frame(timeline: TimelineIndex, tracks: list[dict[str, Any]], events: Any = None,
                  width: int = OVERVIEW_WIDTH) -> bytes:
    """The ``_summary`` frame: columns ``key`` (u16 index into ``meta.keys``), ``kind`` (u8:
    0 work, 1 communication), ``color`` (u16: the legend entry of the slices the interval
    covers), ``start``, ``dur`` (f64); ``meta.keys`` the group keys, ``meta.busy``/``meta.comm``
    each key's total of the two."""
    keys = group_keys(tracks)
    t0, t1 = timeline.extent()
    gap = (t1 - t0) / max(1, width)
    row_track = timeline.row // timeline.depth_span if timeline.n else np.zeros(0, np.int64)
    if events is not None and timeline.n:
        work = top_work(events)[timeline.position]
        comm = is_comm(events)[timeline.position]
    else:
        work = timeline.row % timeline.depth_span == 0 if timeline.n else np.zeros(0, bool)
        comm = np.zeros(timeline.n, bool)
    cols: dict[str, list[np.ndarray]] = {"key": [], "kind": [], "color": [], "start": [], "dur": []}
    codes = timeline.color if len(timeline.color) == timeline.n else np.zeros(timeline.n, np.uint16)
    names = list(keys)
    busy: list[float] = []
    comm_busy: list[float] = []
    key_type = np.uint16 if len(keys) <= 1 << 16 else np.uint32  # wide enough for every group
    # the events of each key, found for all keys at once (a track is in at most two keys: its
    # process group and its rank section): linear in events and keys, not their product
    member_track = np.fromiter((i for idx in keys.values() for i in idx), np.int64)
    member_key = np.repeat(np.arange(len(keys)), [len(idx) for idx in keys.values()])
    by_track = np.argsort(member_track, kind="stable")
    member_track, member_key = member_track[by_track], member_key[by_track]
    runs: list[list[tuple[np.ndarray, np.ndarray, np.ndarray, float]]] = []
    for pick in (work, comm):
        ev = np.flatnonzero(pick)
        lo = np.searchsorted(member_track, row_track[ev], "left")
        hi = np.searchsorted(member_track, row_track[ev], "right")
        count = hi - lo
        ev_of = np.repeat(ev, count)
        key_of = member_key[np.repeat(lo, count) + _ramps(count)]
        order = np.argsort(key_of, kind="stable")
        ev_of, key_of = ev_of[order], key_of[order]
        bounds = np.searchsorted(key_of, np.arange(len(keys) + 1))
        runs.append([_coloured_union(timeline, codes, mine, gap) for mine in np.split(ev_of, bounds[1:-1])])
    for k in range(len(keys)):
        for kind in (0, 1):
            c, s, e, total = runs[kind][k]
            (busy if kind == 0 else comm_busy).append(total)
            cols["key"].append(np.full(len(s), k, key_type))
            cols["kind"].append(np.full(len(s), kind, np.uint8))
            cols["color"].append(c)
            cols["start"].append(s)
            cols["dur"].append(e - s)
    columns = {
        "key": np.concatenate(cols["key"]) if names else np.zeros(0, np.uint16),
        "kind": np.concatenate(cols["kind"]) if names else np.zeros(0, np.uint8),
        "color": np.concatenate(cols["color"]).astype(np.uint16) if names else np.zeros(0, np.uint16),
        "start": np.concatenate(cols["start"]).astype(np.float64) if names else np.zeros(0),
        "dur": np.concatenate(cols["dur"]).astype(np.float64) if names else np.zeros(0),
    }
    return encode_frame(columns, {"keys": names, "busy": busy, "comm": comm_busy, "t0": t0, "t1": t1,
                                  "width": width})


def _coloured_union(timeline: TimelineIndex, codes: np.ndarray, rows: np.ndarray,
                    gap: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The union of the timeline rows `rows` per colour code: (codes, starts, ends) of the
    intervals, and the length of the union over all codes."""
    s_all, e_all = union(timeline.start[rows], timeline.end[rows], gap=gap)
    total = float((e_all - s_all).sum())
    mine = codes[rows]
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for code in np.unique(mine).tolist():
        pick = rows[mine == code]
        s, e = union(timeline.start[pick], timeline.end[pick], gap=gap)
        parts.append((np.full(len(s), code, np.uint16), s, e))
    if not parts:
        return np.zeros(0, np.uint16), s_all, e_all, total
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]), total)


def _ramps(count: np.ndarray) -> np.ndarray:
    """``0, 1, ..., c - 1`` for each ``c`` of ``count``, concatenated."""
    total = int(count.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    starts = np.repeat(np.cumsum(count) - count, count)
    return np.arange(total) - starts
