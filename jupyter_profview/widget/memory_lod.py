"""Level of detail for the memory and counter panel: a `MemoryIndex` holds one
`MemorySeries` per (device, kind) and per counter of `.counters`, and
downsamples them to first/min/max/last per pixel column for any window."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..model import Trace
from . import blocks
from .codec import encode_frame
from .counters import counter_series
from .lod import OVERVIEW_WIDTH, compact_times, natural_key
from .merge import new_column


@dataclass
class MemorySeries:
    device: str
    kind: str
    time: np.ndarray   # float64, sorted
    bytes: np.ndarray  # float64
    peak_bytes: float
    peak_time: float
    unit: str = "bytes"  # counters (see .counters): "fraction", "count", "value"
    busy: Any = None     # GPU utilisation: busy fraction per column, computed per frame
    rank: int | None = None  # several ranks in one Trace: whose device
    axis: str = ""  # the trace's own counters: the counter's name (one y axis per name)


def _floats(column: pd.Series, rows: slice | np.ndarray) -> np.ndarray:
    """A numeric column's values at `rows`, as float64 (its own array read: no full-size copy)."""
    values = column.to_numpy()
    if values.dtype.kind not in "iuf":
        values = column.to_numpy(np.float64)
    return values[rows].astype(np.float64) if isinstance(rows, slice) else \
        blocks.gather(values, rows, np.float64)


def _groups(mem: pd.DataFrame, ranked: bool) -> list[tuple[str, str, int | None, slice | np.ndarray]]:
    """The memory table's points per ``(rank, device, kind)``: each group's device, kind, rank
    (None without ranks) and rows (in table order: a slice where the table holds the group in one
    run, as `model.memory_frame` sorts it), grouped by the categoricals' codes (no string per
    point, no copy of the table)."""
    device = pd.Categorical(mem["device"])
    kind = pd.Categorical(mem["kind"])
    nd, nk = len(device.categories) + 1, len(kind.categories) + 1
    rank = mem["rank"].to_numpy(np.int64) if ranked else None
    ranks, rank_code = np.unique(rank, return_inverse=True) if rank is not None else (None, None)
    wide = nd * nk * (1 if ranks is None else len(ranks)) >= 2**31
    key: np.ndarray = np.asarray(device.codes, np.int64 if wide else np.int32) + 1
    np.multiply(key, nk, out=key)
    np.add(key, np.asarray(kind.codes, key.dtype) + 1, out=key)
    if rank_code is not None:
        np.add(key, rank_code.astype(key.dtype) * (nd * nk), out=key)
    order: np.ndarray | None = None
    if (key[1:] < key[:-1]).any():
        order = np.argsort(key, kind="stable")  # rows of a group in table order
        key = blocks.gather(key, order, key.dtype)
    cuts = [0, *blocks.changes(key).tolist(), len(key)]
    out: list[tuple[str, str, int | None, slice | np.ndarray]] = []
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        k = int(key[a])
        d, c = divmod(k % (nd * nk), nk)
        if d == 0 or c == 0:  # a point without device or kind: no series (as groupby drops NaN)
            continue
        r = None if ranks is None else int(ranks[k // (nd * nk)])
        out.append((str(device.categories[d - 1]), str(kind.categories[c - 1]), r,
                    slice(a, b) if order is None else order[a:b]))
    return out


class MemoryIndex:
    """Memory-in-use series, one per (device, kind), downsampled per pixel column,
    then the counter series of `.counters` (GPU utilisation, queue length,
    the trace's own counters)."""

    def __init__(self, trace: Trace) -> None:
        mem = trace.memory
        self.series: list[MemorySeries] = []
        for c in counter_series(trace):
            values = c["values"]
            at = int(np.argmax(values)) if len(values) else 0
            self.series.append(MemorySeries(c["device"], c["kind"], c["time"], values,
                                            float(values[at]) if len(values) else 0.0,
                                            float(c["time"][at]) if len(values) else 0.0,
                                            c["unit"], c.get("busy"), axis=c.get("axis", "")))
        if len(mem) == 0:
            return
        for device, kind, rank, rows in _groups(mem, bool(trace.info.ranks)):
            t = _floats(mem["time"], rows)
            b = _floats(mem["bytes"], rows)
            if (t[1:] < t[:-1]).any():  # a memory table is sorted by device and time: seldom
                order = np.argsort(t, kind="stable")
                t, b = t[order], b[order]
            at = int(np.argmax(b))
            self.series.append(MemorySeries(device, kind, t, b, float(b[at]), float(t[at]), rank=rank))
        # memory first, by rank and device
        self.series.sort(key=lambda s: (s.unit != "bytes", -1 if s.rank is None else s.rank,
                                        natural_key(s.device), s.kind))

    def meta_series(self) -> list[dict[str, Any]]:
        """Each series' name, unit and peak (its largest value and when; ``peak_bytes`` holds the
        value in the series' unit, none for utilisation, whose scale is 0-100 %)."""
        return [{"device": s.device, "kind": s.kind, "unit": s.unit,
                 "peak_bytes": None if s.busy is not None else s.peak_bytes,
                 "peak_time": None if s.busy is not None else s.peak_time,
                 "max": 1.0 if s.busy is not None else s.peak_bytes,
                 **({"axis": s.axis} if s.axis else {}),
                 **({} if s.rank is None else {"rank": s.rank})}
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
        series_type = np.uint16 if len(self.series) <= 1 << 16 else np.uint32  # wide enough for all
        for k, s in enumerate(self.series):
            if s.busy is not None:  # utilisation: one point per pixel column
                edges = np.linspace(t0, t1, width + 1)
                series_col.append(np.full(width, k, series_type))
                times.append(edges[:-1])
                values.append(s.busy(edges))
                continue
            lo = max(int(np.searchsorted(s.time, t0, "left")) - 1, 0)
            hi = int(np.searchsorted(s.time, t1, "right"))
            if hi <= lo:
                continue
            t, b = s.time[lo:hi], s.bytes[lo:hi]
            keep = downsample(t, b, t0, px)
            series_col.append(np.full(len(keep), k, series_type))
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


def downsample(t: np.ndarray, b: np.ndarray, t0: float, px: float) -> np.ndarray:
    """Indices of the first, min, max and last point of each pixel column (sorted, unique).

    Many points are taken in runs of about `blocks.BLOCK` cut where a new column starts
    (`blocks.group_cuts`): the same indices, without full-size temporaries."""
    m = len(t)
    if m <= blocks.BLOCK:
        return _downsample_run(t, b, t0, px)

    cuts = blocks.group_cuts(m, lambda lo, hi: new_column(t[lo - 1:hi], t0, px))
    return np.concatenate([_downsample_run(t[a:e], b[a:e], t0, px) + a
                           for a, e in zip(cuts[:-1], cuts[1:], strict=True)])


def _downsample_run(t: np.ndarray, b: np.ndarray, t0: float, px: float) -> np.ndarray:
    """`downsample` on whole arrays."""
    m = len(t)
    brk = np.ones(m, bool)
    brk[1:] = new_column(t, t0, px)
    first = np.flatnonzero(brk)
    last = np.append(first[1:] - 1, m - 1)
    group = np.cumsum(brk) - 1
    idx = np.arange(m)
    gmin = np.minimum.reduceat(b, first)
    gmax = np.maximum.reduceat(b, first)
    at_min = np.minimum.reduceat(np.where(b == gmin[group], idx, m), first)
    at_max = np.minimum.reduceat(np.where(b == gmax[group], idx, m), first)
    return np.unique(np.concatenate((first, last, at_min, at_max)))
