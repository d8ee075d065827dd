"""Level of detail for the widget: slices and memory frames for any window.

A :class:`TimelineIndex` is built once per Trace (vectorised numpy): it fixes
the track order, sorts the events by row ``(track, depth)`` then start, and
keeps a per-row prefix maximum of the end times so that the events touching a
window are found with two ``searchsorted`` per row.  :meth:`TimelineIndex.slices`
applies the protocol's merge rule (``docs/widget-protocol.md``): an event at
least one pixel wide is its own box; consecutive sub-pixel events of a row whose
starts fall in the same pixel column merge into one box with ``count`` and
``busy``.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..model import OVERLAP_TAG, PHASES, Trace
from ..palette import OTHER_COLOR, PALETTE, PHASE_COLORS
from .codec import encode_frame

OVERVIEW_WIDTH = 4096
OVERVIEW_BUDGET = 4 * 1024 * 1024
LEGEND_TOP = 11
_OVERLAP = re.compile(re.escape(OVERLAP_TAG).replace(r"\{\}", r"(\d+)") + "$")


def _natural(text: str) -> list[Any]:
    """Sort key that puts ``GPU 2`` before ``GPU 10``."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", text)]


@dataclass
class Legend:
    """Colour per event: ``codes[event id]`` indexes ``entries``."""

    color_by: str
    entries: list[dict[str, Any]]
    codes: np.ndarray  # uint16, one per event id


def build_legend(events: pd.DataFrame, color_by: str = "auto") -> Legend:
    """Colour by ``category`` (top 11 by total duration, the rest "other") or ``phase``.

    Category colours are stable across traces: a category's palette slot comes
    from a hash of its name (probing on collision), not from its rank.
    """
    n = len(events)
    if color_by == "auto":
        used = events["category"].nunique() if n else 0
        color_by = "category" if used >= 2 else "phase"
    if color_by not in ("category", "phase"):
        raise ValueError(f"color_by must be 'category', 'phase' or 'auto', not {color_by!r}")
    if n == 0:
        return Legend(color_by, [], np.zeros(0, np.uint16))
    column = pd.Categorical(events[color_by])
    codes = column.codes.astype(np.int64)
    ncat = len(column.categories)
    valid = codes >= 0
    dur = events["dur"].to_numpy(np.float64)
    total = np.bincount(codes[valid], weights=dur[valid], minlength=ncat)
    count = np.bincount(codes[valid], minlength=ncat)
    if color_by == "phase":
        keep = [c for c in range(ncat) if count[c] > 0]
        keep.sort(key=lambda c: PHASES.index(str(column.categories[c]))
                  if str(column.categories[c]) in PHASES else len(PHASES))
        colors = [PHASE_COLORS.get(str(column.categories[c]), OTHER_COLOR) for c in keep]
    else:
        ranked = sorted((c for c in range(ncat) if count[c] > 0), key=lambda c: (-total[c], -count[c]))
        keep = ranked[:LEGEND_TOP]
        taken: set[int] = set()
        colors = []
        for c in keep:
            slot = zlib.crc32(str(column.categories[c]).encode("utf-8")) % len(PALETTE)
            while slot in taken:
                slot = (slot + 1) % len(PALETTE)
            taken.add(slot)
            colors.append(PALETTE[slot])
        keep.sort(key=lambda c: (-total[c], -count[c]))
    entries = [{"key": str(column.categories[c]) or "(none)", "color": col, "count": int(count[c])}
               for c, col in zip(keep, colors, strict=True)]
    lookup = np.full(ncat + 1, len(entries), np.uint16)  # last slot (and code -1) -> "other"
    for i, c in enumerate(keep):
        lookup[c] = i
    event_codes = lookup[codes]
    rest = int((event_codes == len(entries)).sum())
    if rest:
        entries.append({"key": "other", "color": OTHER_COLOR, "count": rest})
    return Legend(color_by, entries, event_codes.astype(np.uint16))


def track_table(trace: Trace) -> pd.DataFrame:
    """One row per track in display order: ``label, process, thread, lane, depths``.

    The order is ``trace.metadata["track_order"]`` (track labels) where given,
    then process, thread (natural sort) and overlap sub-lane.
    """
    ev = trace.events
    if len(ev) == 0:
        return pd.DataFrame({"label": [], "process": [], "thread": [], "depths": []})
    track = pd.Categorical(ev["track"])
    codes = track.codes.astype(np.int64)
    present, first = np.unique(codes, return_index=True)
    depth = ev["depth"].to_numpy(np.int64)
    max_depth = np.zeros(len(track.categories), np.int64)
    np.maximum.at(max_depth, codes, depth)
    rows = []
    for code, at in zip(present.tolist(), first.tolist(), strict=True):
        label = str(track.categories[code])
        lane = _OVERLAP.search(label)
        rows.append({
            "code": code, "label": label, "process": str(ev["process"].iat[at]),
            "thread": str(ev["thread"].iat[at]), "lane": int(lane.group(1)) if lane else 0,
            "depths": int(max_depth[code]) + 1,
        })
    order = [str(t) for t in trace.metadata.get("track_order") or []]
    rank = {label: i for i, label in enumerate(order)}
    rows.sort(key=lambda r: (rank.get(r["label"], len(rank)), _natural(r["process"]),
                             _natural(r["thread"]), r["lane"], r["label"]))
    return pd.DataFrame(rows)


class TimelineIndex:
    """Events sorted per row for fast windowed level-of-detail queries."""

    def __init__(self, trace: Trace, legend: Legend | None = None) -> None:
        ev = trace.events
        self.legend = legend if legend is not None else build_legend(ev)
        self.tracks = track_table(trace)
        n = len(ev)
        self.n = n
        self.names = [str(c) for c in pd.Categorical(ev["name"]).categories] if n else []
        if n == 0:
            self.order = np.zeros(0, np.int64)
            self.row_bounds = np.zeros(1, np.int64)
            self.event_track = np.zeros(0, np.uint32)
            self._set_sorted(np.zeros(0, np.int64), ev, np.zeros(0, np.int64))
            return
        codes = pd.Categorical(ev["track"]).codes.astype(np.int64)
        rank = np.zeros(int(codes.max()) + 1, np.int64)
        rank[self.tracks["code"].to_numpy(np.int64)] = np.arange(len(self.tracks))
        track_index = rank[codes]
        self.event_track = track_index.astype(np.uint32)  # by event position
        depth = ev["depth"].to_numpy(np.int64)
        self.depth_span = int(depth.max()) + 1
        row = track_index * self.depth_span + depth
        start = ev["start"].to_numpy(np.int64)
        order = np.lexsort((start, row))
        self.order = order
        row_sorted = row[order]
        cuts = np.flatnonzero(np.diff(row_sorted)) + 1
        self.row_bounds = np.concatenate(([0], cuts, [n])).astype(np.int64)
        self._set_sorted(order, ev, row_sorted)

    def _set_sorted(self, order: np.ndarray, ev: pd.DataFrame, row_sorted: np.ndarray) -> None:
        start = ev["start"].to_numpy(np.int64)[order]
        dur = ev["dur"].to_numpy(np.int64)[order]
        end = start + dur
        self.start = start.astype(np.float64)
        self.dur = dur.astype(np.float64)
        self.end = end.astype(np.float64)
        self.row = row_sorted
        self.id = ev.index.to_numpy()[order].astype(np.int32)
        self.position = order  # positional index into trace.events
        self.set_legend(self.legend)
        self.name = (pd.Categorical(ev["name"]).codes[order].astype(np.int32)
                     if len(order) else np.zeros(0, np.int32))
        # Per-row running maximum of the end time (robust even if a row had overlaps):
        # offset each row by its index times a span larger than any time, accumulate, undo.
        if len(order):
            span = int(end.max()) - int(min(0, start.min())) + 1
            row_id = np.repeat(np.arange(len(self.row_bounds) - 1), np.diff(self.row_bounds))
            shifted = end + row_id.astype(np.int64) * span
            self.end_max = (np.maximum.accumulate(shifted) - row_id * span).astype(np.float64)
        else:
            self.end_max = np.zeros(0, np.float64)

    def set_legend(self, legend: Legend) -> None:
        """Recolour (e.g. switching between category and phase colours)."""
        self.legend = legend
        self.color = legend.codes[self.position] if len(self.position) else np.zeros(0, np.uint16)

    def window(self, t0: float, t1: float) -> np.ndarray:
        """Sorted-order positions of the events with ``start <= t1`` and ``end >= t0``."""
        if self.n == 0:
            return np.zeros(0, np.int64)
        bounds = self.row_bounds
        if t0 <= float(self.start.min()) and t1 >= float(self.end.max()):
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

    def event_ids(self, positions: np.ndarray) -> np.ndarray:
        return self.id[positions]

    def slices_columns(
        self, t0: float, t1: float, width: int
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The slices frame's columns and meta for ``[t0, t1]`` at ``width`` pixels."""
        idx = self.window(t0, t1)
        m = len(idx)
        px = (t1 - t0) / width
        meta: dict[str, Any] = {"t0": t0, "t1": t1, "width": width, "labels": [], "total": m}
        if m == 0:
            empty = {k: np.zeros(0, dt) for k, dt in _SLICE_DTYPES.items()}
            return empty, meta
        if m == self.n:  # the whole trace (idx is 0..n-1): use the arrays, no gathers
            st, du, en, rk = self.start, self.dur, self.end, self.row
        else:
            st, du, en, rk = self.start[idx], self.dur[idx], self.end[idx], self.row[idx]
        big = du >= px
        col = np.floor((st - t0) / px)
        brk = np.ones(m, bool)
        brk[1:] = (rk[1:] != rk[:-1]) | big[1:] | big[:-1] | (col[1:] != col[:-1])
        first = np.flatnonzero(brk)
        count = np.diff(np.append(first, m))
        single = count == 1
        if single.all():
            busy, box_end, pick = du, en, idx
        else:
            busy = np.add.reduceat(du, first)
            box_end = np.maximum.reduceat(en, first)
            # a merged box takes the colour of its longest event
            gmax = np.maximum.reduceat(du, first)
            group = np.cumsum(brk) - 1
            pos = np.where(du == gmax[group], np.arange(m), m)
            pick = idx[np.minimum.reduceat(pos, first)]
        head = idx[first]
        box_start = st[first]
        names = self.name[head]
        uniq, inverse = np.unique(names[single], return_inverse=True)
        label = np.full(len(first), -1, np.int32)
        label[single] = inverse
        meta["labels"] = [self.names[c] if c >= 0 else "" for c in uniq.tolist()]
        row = rk[first]
        columns = {
            "track": (row // self.depth_span).astype(np.uint32),
            "depth": (row % self.depth_span).astype(np.uint16),
            "start": box_start,
            "dur": box_end - box_start,
            "id": np.where(single, self.id[head], -1).astype(np.int32),
            "count": count.astype(np.uint32),
            "busy": np.asarray(busy, np.float64),
            "color": self.color[pick].astype(np.uint16),
            "label": label,
        }
        return columns, meta

    def slices(self, t0: float, t1: float, width: int, *, compact: bool = False) -> bytes:
        """The slices frame (bytes) for ``[t0, t1]`` at ``width`` pixels.

        ``compact`` (the ``_detail`` replies): ``start``, ``dur`` and ``busy`` travel as float32,
        ``start`` relative to ``meta.origin = t0`` -- exact to far below a pixel, 12 bytes a row less.
        """
        columns, meta = self.slices_columns(t0, t1, width)
        if compact:
            columns = compact_times(columns, meta, t0, ("start",), ("dur", "busy"))
        return encode_frame(columns, meta)

    def extent(self) -> tuple[float, float]:
        if self.n == 0:
            return 0.0, 1.0
        t0, t1 = float(self.start.min()), float(self.end.max())
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
    "count": np.uint32, "busy": np.float64, "color": np.uint16, "label": np.int32,
}


# ---------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------

@dataclass
class MemorySeries:
    device: str
    kind: str
    time: np.ndarray   # float64, sorted
    bytes: np.ndarray  # float64
    peak_bytes: float
    peak_time: float


class MemoryIndex:
    """Memory-in-use series, one per (device, kind), downsampled per pixel column."""

    def __init__(self, trace: Trace) -> None:
        mem = trace.memory
        self.series: list[MemorySeries] = []
        if len(mem) == 0:
            return
        frame = pd.DataFrame({
            "device": mem["device"].astype(str).to_numpy(), "kind": mem["kind"].astype(str).to_numpy(),
            "time": mem["time"].to_numpy(np.float64), "bytes": mem["bytes"].to_numpy(np.float64),
        })
        for (device, kind), part in frame.groupby(["device", "kind"], sort=False):
            part = part.sort_values("time", kind="stable")
            t, b = part["time"].to_numpy(), part["bytes"].to_numpy()
            at = int(np.argmax(b))
            self.series.append(MemorySeries(str(device), str(kind), t, b, float(b[at]), float(t[at])))
        self.series.sort(key=lambda s: (_natural(s.device), s.kind))

    def meta_series(self) -> list[dict[str, Any]]:
        return [{"device": s.device, "kind": s.kind, "peak_bytes": s.peak_bytes, "peak_time": s.peak_time}
                for s in self.series]

    def extent(self) -> tuple[float, float]:
        if not self.series:
            return 0.0, 1.0
        t0 = min(float(s.time[0]) for s in self.series)
        t1 = max(float(s.time[-1]) for s in self.series)
        return t0, t1 if t1 > t0 else t0 + 1.0

    def frame(self, t0: float, t1: float, width: int, *, compact: bool = False) -> bytes:
        """Points of every series in ``[t0, t1]`` keeping first/min/max/last per pixel column,
        plus the last point before ``t0`` (the value in effect at the left edge).

        ``compact`` (the ``_detail`` replies): ``time`` as float32 relative to ``meta.origin = t0``.
        """
        px = (t1 - t0) / width
        series_col, times, values = [], [], []
        for k, s in enumerate(self.series):
            lo = max(int(np.searchsorted(s.time, t0, "left")) - 1, 0)
            hi = int(np.searchsorted(s.time, t1, "right"))
            if hi <= lo:
                continue
            t, b = s.time[lo:hi], s.bytes[lo:hi]
            keep = _downsample(t, b, t0, px)
            series_col.append(np.full(len(keep), k, np.uint16))
            times.append(t[keep])
            values.append(b[keep])
        meta: dict[str, Any] = {"series": self.meta_series(), "t0": t0, "t1": t1, "width": width}
        columns: dict[str, np.ndarray]
        if not series_col:
            columns = {"series": np.zeros(0, np.uint16), "time": np.zeros(0), "bytes": np.zeros(0)}
        else:
            columns = {"series": np.concatenate(series_col), "time": np.concatenate(times),
                       "bytes": np.concatenate(values)}
        if compact:
            columns = compact_times(columns, meta, t0, ("time",), ())
        return encode_frame(columns, meta)

    def overview(self, width: int = OVERVIEW_WIDTH) -> bytes:
        t0, t1 = self.extent()
        return self.frame(t0, t1, width)


def _downsample(t: np.ndarray, b: np.ndarray, t0: float, px: float) -> np.ndarray:
    """Indices of the first, min, max and last point of each pixel column (sorted, unique)."""
    m = len(t)
    col = np.floor((t - t0) / px)
    brk = np.ones(m, bool)
    brk[1:] = col[1:] != col[:-1]
    first = np.flatnonzero(brk)
    last = np.append(first[1:] - 1, m - 1)
    group = np.cumsum(brk) - 1
    idx = np.arange(m)
    gmin = np.minimum.reduceat(b, first)
    gmax = np.maximum.reduceat(b, first)
    at_min = np.minimum.reduceat(np.where(b == gmin[group], idx, m), first)
    at_max = np.minimum.reduceat(np.where(b == gmax[group], idx, m), first)
    return np.unique(np.concatenate((first, last, at_min, at_max)))
