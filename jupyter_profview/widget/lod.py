"""Level of detail for the widget: the timeline's slices frames for any window.

A `TimelineIndex` is built once per Trace (vectorised numpy): it fixes
the track order, sorts the events by row ``(track, depth)`` then start, and
keeps a per-row prefix maximum of the end times so that the events touching a
window are found with two ``searchsorted`` per row.  `TimelineIndex.slices`
applies the protocol's merge rule (`merge_sorted`, ``docs/widget-protocol.md``):
an event at least one pixel wide is its own box; consecutive sub-pixel events of a
row whose starts fall in the same pixel column merge into one box with ``count``,
``busy`` and the colour of its longest event.  Colours: `.legend`; the memory panel:
`.memory_lod`.
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from .. import derived, kinds
from ..model import OVERLAP_TAG, Trace
from . import blocks
from .blocks import changes, first_positions, gather, running_max
from .codec import encode_frame
from .legend import LEGEND_TOP, Legend, build_legend
from .merge import merge_sorted

__all__ = [
    "LEGEND_TOP", "OVERVIEW_BUDGET", "OVERVIEW_WIDTH", "Legend", "TimelineIndex", "build_legend",
    "compact_times", "group_name", "lane_name", "merge_sorted", "natural_key", "track_table",
]

OVERVIEW_WIDTH = 4096
OVERVIEW_BUDGET = 4 * 1024 * 1024
_OVERLAP = re.compile(re.escape(OVERLAP_TAG).replace(r"\{\}", r"(\d+)") + "$")


def natural_key(text: str) -> list[Any]:
    """Sort key that puts ``GPU 2`` before ``GPU 10``."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", text)]


_GPU_LABEL = re.compile(r"GPU \d+")
_BLANK = ("", '""', "''")


def group_name(process: str, labels: dict[str, str] | None = None) -> str:
    """What a process group is called on screen: ``GPU n`` where the trace's own
    ``process_labels`` metadata says so (Kineto names every device process
    ``python``), ``(global)`` for events without a process (e.g. a global instant
    with ``"pid": ""``), else the process label."""
    label = str((labels or {}).get(process, "")).strip()
    if _GPU_LABEL.fullmatch(label):
        return label
    return "(global)" if process.strip() in _BLANK else process


def section_key(rank: int) -> str:
    """A rank's section of the timeline: its key in ``collapsed_groups`` and its header's text."""
    return f"rank {rank}"


def group_key(process: str, rank: int | None) -> str:
    """What collapses a process group (its key in ``collapsed_groups``): the process, or with
    several ranks the process inside its rank's section (the same process id on two ranks is two
    groups).  A key, not a label: no front end reads anything out of it."""
    return process if rank is None else f"{section_key(rank)}/{process}"


def lane_name(process: str, thread: str, lane: int) -> str:
    """What a lane is called inside its group: the thread's name (the trace's
    ``thread_name`` where it gives one), plus the overlap sub-lane."""
    name = thread if thread.strip() not in _BLANK else "(no thread)"
    return name + (OVERLAP_TAG.format(lane) if lane else "")


def lane_codes(ev: pd.DataFrame, ranked: bool) -> tuple[np.ndarray, list[str], np.ndarray | None]:
    """The lane of each event: its track, or in a trace of several ranks (``ranked``: the
    trace's ``info.ranks`` is set, as by
    [`TraceSet.combined`][jupyter_profview.ranks.traceset.TraceSet.combined]) its
    ``(rank, track)``, the rank read from the events' ``rank`` column.  Whether there are
    ranks is the caller's ``trace.info.ranks``, never the presence of a column (a graph
    format's ``graph_rank`` is not a process rank).

    Returns each event's lane code, each code's track label, and each code's rank (None
    without ranks)."""
    track = pd.Categorical(ev["track"])
    labels = [str(c) for c in track.categories]
    codes = track.codes.astype(np.int64)
    if not ranked:
        return codes, labels, None
    rank = ev["rank"].to_numpy(np.int64)
    pairs, codes = np.unique(rank * max(len(labels), 1) + codes, return_inverse=True)
    return codes.astype(np.int64), [labels[p] for p in (pairs % max(len(labels), 1)).tolist()], \
        pairs // max(len(labels), 1)


Lanes = tuple[np.ndarray, list[str], "np.ndarray | None"]


def lane_rows(ev: pd.DataFrame, ranked: bool, lanes: Lanes | None = None) -> np.ndarray:
    """The row of each event within its track: its ``depth`` (tree level), but
    on an overlap sub-lane the number of its ancestors drawn on that sub-lane,
    so that a sub-lane starts at its top row (``nesting`` module docstring:
    main-lane events only nest in main-lane events).  `lanes`: `lane_codes`' answer, where the
    caller has it."""
    rows = ev["depth"].to_numpy(np.int32).copy()
    codes, labels, _ = lanes if lanes is not None else lane_codes(ev, ranked)
    moved = np.flatnonzero(kinds.code_mask(labels, codes, _OVERLAP.search))
    if not len(moved):
        return rows
    position = pd.Series(np.arange(len(ev)), index=ev.index)
    parent = ev["parent"].to_numpy(np.int64)[moved]
    ppos = np.where(parent >= 0, position.reindex(parent).fillna(-1).to_numpy(np.int64), -1)
    # parents come before their children (start, then depth order): one pass
    for i, p in sorted(zip(moved.tolist(), ppos.tolist(), strict=True)):
        rows[i] = rows[p] + 1 if p >= 0 and codes[p] == codes[i] else 0
    return rows


def track_table(trace: Trace, lanes: Lanes | None = None, depth: np.ndarray | None = None) -> pd.DataFrame:
    """One row per lane in display order: ``label, process, thread, lane, depths``,
    the on-screen ``group`` and ``name`` (`group_name`, `lane_name`), how many ``events``
    the lane holds and how many of them are ``wrappers`` (`derived.wrapper_mask`: the
    profiler's own records, which the view hides by default);
    ``rank`` too when ``trace.info.ranks`` is set (several ranks in one Trace: a lane
    is a ``(rank, track)``, named with its rank's ``process_labels``).

    The order is the rank, then ``trace.info.track_order`` (track labels; with ranks each
    rank's own, ``info.rank_track_order``) where given, then process, thread (natural
    sort) and overlap sub-lane.

    `lanes` and `depth`: `lane_codes` and `lane_rows` of the trace, where the caller has them.
    """
    ev = trace.events
    if len(ev) == 0:
        return pd.DataFrame({"label": [], "process": [], "thread": [], "depths": [], "group": [], "name": [],
                             "events": [], "wrappers": []})
    own = trace.info.process_labels
    labels_of: dict[Any, Any] = trace.info.rank_process_labels
    ranked = bool(trace.info.ranks)
    lanes = lanes if lanes is not None else lane_codes(ev, ranked)
    codes, track_labels, ranks = lanes
    present, first = first_positions(codes, len(track_labels))
    depth = depth if depth is not None else lane_rows(ev, ranked, lanes)
    max_depth = np.zeros(len(track_labels), np.int64)
    for a, b in blocks.blocks(len(codes)):  # same dtypes: numpy's fast path (30x)
        np.maximum.at(max_depth, codes[a:b], depth[a:b].astype(np.int64))
    counts = np.bincount(codes, minlength=len(track_labels))
    wrappers = np.bincount(codes[derived.wrapper_mask(ev)], minlength=len(track_labels))
    rows = []
    # each lane's process and thread, read once for all lanes (not per lane: linear in lanes)
    processes = ev["process"].iloc[first].astype(str).tolist()
    threads = ev["thread"].iloc[first].astype(str).tolist()
    for code, process, thread in zip(present.tolist(), processes, threads, strict=True):
        label = track_labels[code]
        lane = _OVERLAP.search(label)
        lane_no = int(lane.group(1)) if lane else 0
        rank = None if ranks is None else int(ranks[code])
        labels = own if rank is None else labels_of.get(rank)
        labels = {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}
        rows.append({
            "code": code, "label": label, "process": process, "thread": thread, "lane": lane_no,
            "depths": int(max_depth[code]) + 1, "group": group_name(process, labels),
            "name": lane_name(process, thread, lane_no), "events": int(counts[code]),
            "wrappers": int(wrappers[code]), **({} if rank is None else {"rank": rank}),
        })
    orders: dict[Any, Any] = trace.info.rank_track_order
    places = {rank: {str(label): i for i, label in enumerate(order)} for rank, order in orders.items()}
    places[None] = {str(label): i for i, label in enumerate(trace.info.track_order)}

    def order_key(r: dict[str, Any]) -> tuple[Any, ...]:
        place = places.get(r.get("rank"), {})
        return (r.get("rank", 0), place.get(r["label"], len(place)), natural_key(r["process"]),
                natural_key(r["thread"]), r["lane"], r["label"])

    rows.sort(key=order_key)
    return pd.DataFrame(rows)


class TimelineIndex:
    """Events sorted per row for fast windowed level-of-detail queries.

    Per event, in row order, it keeps only what every query reads: ``start``, ``dur``, ``end``
    (float64), ``end_max``, ``row``, ``position`` and ``color``.  These are filled block by block
    (`.blocks`), so that building the index touches no full-size temporary; the
    ids, names and lanes of events are read from the trace for the boxes a frame sends
    (``id``, ``name`` and ``event_track`` are computed on first use).
    """

    def __init__(self, trace: Trace, legend: Legend | None = None) -> None:
        ev = trace.events
        self.legend = legend if legend is not None else build_legend(ev, launches=trace.launches)
        self._ranked = bool(trace.info.ranks)
        lanes = lane_codes(ev, self._ranked) if len(ev) else None
        depth = lane_rows(ev, self._ranked, lanes) if lanes is not None else None
        self.tracks = track_table(trace, lanes, depth)
        n = len(ev)
        self.n = n
        self._trace = trace
        self._index = ev.index
        names = pd.Categorical(ev["name"]) if n else pd.Categorical([])
        self.names = [str(c) for c in names.categories]
        self._name_codes = np.asarray(names.codes)  # by event position
        if n == 0:
            self.order = np.zeros(0, np.int64)
            self.row_bounds = np.zeros(1, np.int64)
            self._set_sorted(np.zeros(0, np.int64), ev, np.zeros(0, np.int64))
            return
        assert lanes is not None and depth is not None
        self.depth_span = int(depth.max()) + 1
        wide = len(self.tracks) * self.depth_span >= 2**31
        # each lane code's first row (its track's place in display order times the depth span)
        codes = lanes[0]
        del lanes
        lane_row = np.zeros(int(codes.max()) + 1, np.int64 if wide else np.int32)
        lane_row[self.tracks["code"].to_numpy(np.int64)] = np.arange(len(self.tracks)) * self.depth_span
        row = lane_row[codes]
        del codes
        np.add(row, depth, out=row, casting="unsafe")
        del depth
        start = ev["start"].to_numpy(np.int64)
        if len(start) < 2 or bool((start[1:] >= start[:-1]).all()):  # events in start order (one trace)
            order = np.argsort(row, kind="stable")  # by row, start order kept within a row
        else:  # several ranks one after the other
            order = np.lexsort((start, row))
        del start
        self.order = order
        row_sorted = gather(row, order, row.dtype)
        del row
        self.row_bounds = np.concatenate(([0], changes(row_sorted), [n])).astype(np.int64)
        self._set_sorted(order, ev, row_sorted)

    def _lane_codes(self) -> np.ndarray:
        """Each event's lane code (`lane_codes`), in the trace's order."""
        ev = self._trace.events
        if not self._ranked and isinstance(ev["track"].dtype, pd.CategoricalDtype):
            return np.asarray(ev["track"].cat.codes)  # the categorical's own codes: no copy
        return lane_codes(ev, self._ranked)[0]

    def _set_sorted(self, order: np.ndarray, ev: pd.DataFrame, row_sorted: np.ndarray) -> None:
        start_ns = ev["start"].to_numpy(np.int64)
        dur_ns = ev["dur"].to_numpy(np.int64)
        n = len(order)
        self.start = np.empty(n, np.float64)
        self.dur = np.empty(n, np.float64)
        self.end = np.empty(n, np.float64)
        for a, b in blocks.blocks(n):  # block by block: no full-size int64 temporaries
            o = order[a:b]
            s, d = start_ns[o], dur_ns[o]
            self.start[a:b] = s
            self.dur[a:b] = d
            np.add(s, d, out=s)
            self.end[a:b] = s  # the end summed in integers, then as float (as before)
        self.row = row_sorted
        self.position = order  # positional index into trace.events
        self.set_legend(self.legend)
        self.end_max = running_max(self.end, row_sorted, self.row_bounds)
        #: the earliest start and the latest end
        self._span = (float(self.start.min()), float(self.end.max())) if n else (0.0, 0.0)

    @cached_property
    def id(self) -> np.ndarray:
        """Each event's id (``trace.events.index``) in row order (int32)."""
        return self.ids_at(np.arange(self.n))

    @cached_property
    def name(self) -> np.ndarray:
        """Each event's name code (into `names`) in row order (int32)."""
        return self._name_codes[self.position].astype(np.int32)

    @cached_property
    def event_track(self) -> np.ndarray:
        """Each event's lane (its row in `tracks`), by position in ``trace.events`` (uint32)."""
        if self.n == 0:
            return np.zeros(0, np.uint32)
        codes = self._lane_codes()
        rank = np.zeros(int(codes.max()) + 1, np.uint32)
        rank[self.tracks["code"].to_numpy(np.int64)] = np.arange(len(self.tracks))
        return rank[codes]

    def ids_at(self, sorted_pos: np.ndarray) -> np.ndarray:
        """The ids (``trace.events.index``, int32) of the events at row-order positions `sorted_pos`."""
        return np.asarray(self._index[self.position[sorted_pos]]).astype(np.int32)

    def set_legend(self, legend: Legend) -> None:
        """Recolour (e.g. switching between category and phase colours)."""
        self.legend = legend
        self.color = legend.codes[self.position] if len(self.position) else np.zeros(0, np.uint16)

    def window(self, t0: float, t1: float) -> np.ndarray:
        """Sorted-order positions of the events with ``start <= t1`` and ``end >= t0``."""
        if self.n == 0:
            return np.zeros(0, np.int64)
        bounds = self.row_bounds
        if self._covers(t0, t1):
            return np.arange(self.n)
        parts = []
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            a = lo + int(np.searchsorted(self.end_max[lo:hi], t0, "left"))
            b = lo + int(np.searchsorted(self.start[lo:hi], t1, "right"))
            if b > a:
                parts.append(np.arange(a, b))
        if not parts:
            return np.zeros(0, np.int64)
        return np.concatenate(parts)

    def _covers(self, t0: float, t1: float) -> bool:
        """Whether ``[t0, t1]`` holds every event (the whole trace's window)."""
        lo, hi = self._span
        return self.n > 0 and t0 <= lo and t1 >= hi

    def slices_columns(
        self, t0: float, t1: float, width: int
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The slices frame's columns and meta for ``[t0, t1]`` at ``width`` pixels."""
        idx = None if self._covers(t0, t1) else self.window(t0, t1)
        m = self.n if idx is None else len(idx)
        px = (t1 - t0) / width
        meta: dict[str, Any] = {"t0": t0, "t1": t1, "width": width, "labels": [], "total": m}
        if m == 0:
            empty = {k: np.zeros(0, dt) for k, dt in _SLICE_DTYPES.items()}
            return empty, meta
        if idx is None or m == self.n:  # the whole trace (idx is 0..n-1): the arrays, no gathers
            idx = None
            st, du, en, rk = self.start, self.dur, self.end, self.row
        else:
            st, du, en, rk = self.start[idx], self.dur[idx], self.end[idx], self.row[idx]
        box = merge_sorted(rk, st, du, en, t0, px)
        first, single = box["first"], box["single"]
        head = first if idx is None else idx[first]
        pick = box["pick"] if idx is None else idx[box["pick"]]
        names = self._name_codes[self.position[head]]
        uniq, inverse = np.unique(names[single], return_inverse=True)
        label = np.full(len(first), -1, np.int32)
        label[single] = inverse
        meta["labels"] = [self.names[c] if c >= 0 else "" for c in uniq.tolist()]
        row = rk[first]
        columns = {
            "track": (row // self.depth_span).astype(np.uint32),
            "depth": (row % self.depth_span).astype(np.uint16),
            "start": box["start"],
            "dur": box["dur"],
            "id": np.where(single, self.ids_at(head), -1).astype(np.int32),
            "count": box["count"].astype(np.uint32),
            "busy": box["busy"],
            "color": self.color[pick].astype(np.uint16),
            "label": label,
            "longest": box["longest"],
        }
        return columns, meta

    def slices(self, t0: float, t1: float, width: int, *, compact: bool = False) -> bytes:
        """The slices frame (bytes) for ``[t0, t1]`` at ``width`` pixels.

        ``compact`` (the ``_detail`` replies): ``start``, ``dur`` and ``busy`` travel as float32,
        ``start`` relative to ``meta.origin = t0`` -- exact to far below a pixel, 12 bytes a row less.
        """
        columns, meta = self.slices_columns(t0, t1, width)
        if compact:
            columns = compact_times(columns, meta, t0, ("start",), ("dur", "busy", "longest"))
        return encode_frame(columns, meta)

    def span(self) -> tuple[float, float]:
        """The earliest start and the latest end of the events (0, 0 without events)."""
        return self._span

    def extent(self) -> tuple[float, float]:
        if self.n == 0:
            return 0.0, 1.0
        t0, t1 = self._span
        return t0, t1 if t1 > t0 else t0 + 1.0

    def overview(self, width: int = OVERVIEW_WIDTH, budget: int = OVERVIEW_BUDGET) -> bytes:
        """The whole trace at ``width`` pixels, narrowed until the frame fits ``budget`` bytes."""
        t0, t1 = self.extent()
        while True:
            frame = self.slices(t0, t1, width)
            if len(frame) <= budget or width <= 64:
                return frame
            width = max(64, int(width * budget / len(frame) * 0.9))


def compact_times(columns: dict[str, np.ndarray], meta: dict[str, Any], origin: float,
                  times: tuple[str, ...], spans: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Times (``times``, made relative to ``origin``, recorded as ``meta["origin"]``) and
    durations (``spans``) as float32. Within a window of span S drawn at most 16384 px wide the
    error is at most S * 2**-24, i.e. below 1/1000 of a pixel."""
    out = dict(columns)
    for name in times:
        out[name] = (np.asarray(columns[name], np.float64) - origin).astype(np.float32)
    for name in spans:
        out[name] = np.asarray(columns[name]).astype(np.float32)
    meta["origin"] = origin
    return out


_SLICE_DTYPES = {
    "track": np.uint32, "depth": np.uint16, "start": np.float64, "dur": np.float64, "id": np.int32,
    "count": np.uint32, "busy": np.float64, "color": np.uint16, "label": np.int32, "longest": np.float64,
}


def first_view(trace: Trace, extent: tuple[float, float]) -> tuple[float, float]:
    """Where a view opens: the first step's start to the last step's end when the trace has
    steps (`derived.cpu_steps`, the annotation of `kinds.STEP_ANNOTATION`), else `extent` (the
    whole trace, which a profiler's wrapper span may stretch far past the work)."""
    try:
        steps = derived.cpu_steps(trace)
    except (KeyError, ValueError):  # a trace without names / threads: no steps
        return extent
    if len(steps) == 0:
        return extent
    start = max(float(steps["start"].min()), extent[0])
    end = min(float(steps["end"].max()), extent[1])
    return (start, end) if end > start else extent
