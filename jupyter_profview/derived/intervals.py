"""Interval algebra on half-open intervals `[start, end)`: the one implementation of union,
intersection, difference and busy time.

Intervals come as two arrays, `start` and `end` (any order, int64 ns or float).  A *union* is a
pair of sorted disjoint arrays; two intervals that touch (`end == start`) are one busy run, and
with `gap > 0` so are two separated by at most `gap` (the widget's busy lanes close the gaps a
pixel cannot show).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

Intervals = tuple[np.ndarray, np.ndarray]


def union(start: np.ndarray, end: np.ndarray, *, gap: float = 0) -> Intervals:
    """The union of `[start, end)` intervals as sorted disjoint intervals `(starts, ends)`; runs
    separated by `gap` or less are merged (`gap=0`: only touching or overlapping ones)."""
    start, end = np.asarray(start), np.asarray(end)
    if len(start) == 0:
        return start[:0].copy(), end[:0].copy()
    if bool(np.all(start[1:] >= start[:-1])):  # already in order (a trace's events): no sort, no copy
        s, e = start, end
    else:
        order = np.argsort(start, kind="stable")
        s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > reach[:-1] + gap
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], reach[last]


def union_length(start: np.ndarray, end: np.ndarray) -> int:
    """The length of the union of `[start, end)` intervals (overlaps count once)."""
    s, e = union(start, end)
    return int((e - s).sum())


def _sweep(a: Intervals, b: Intervals) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The elementary segments between every bound of the unions of `a` and `b`: their left
    bounds, right bounds and, per segment, whether it is in `a` and whether in `b`."""
    a, b = union(*a), union(*b)
    bounds = np.unique(np.concatenate([a[0], a[1], b[0], b[1]]))
    if len(bounds) < 2:
        return bounds[:0], bounds[:0], np.zeros((2, 0), bool)
    left, right = bounds[:-1], bounds[1:]
    inside = np.stack([np.searchsorted(u[0], left, side="right") > np.searchsorted(u[1], left, side="right")
                       for u in (a, b)])
    return left, right, inside


def _runs(left: np.ndarray, right: np.ndarray, keep: np.ndarray) -> Intervals:
    return union(left[keep], right[keep])


def intersection(a: Intervals, b: Intervals) -> Intervals:
    """The time in both `a` and `b` (each a pair `(start, end)`), as sorted disjoint intervals."""
    left, right, inside = _sweep(a, b)
    return _runs(left, right, inside[0] & inside[1])


def difference(a: Intervals, b: Intervals) -> Intervals:
    """The time in `a` but not in `b`, as sorted disjoint intervals."""
    left, right, inside = _sweep(a, b)
    return _runs(left, right, inside[0] & ~inside[1])


def union_lengths(group: np.ndarray, start: np.ndarray, end: np.ndarray, groups: int) -> np.ndarray:
    """Per group `0 .. groups-1`: the length of the union of its intervals (int64), in one pass
    (`group`: int codes)."""
    out = np.zeros(groups, np.int64)
    if len(start) == 0:
        return out
    group, start, end = np.asarray(group, np.int64), np.asarray(start, np.int64), np.asarray(end, np.int64)
    lo = int(start.min())
    span = int(end.max()) - lo + 1
    if span * groups >= 2**62:  # the shifted times below would overflow: group by group
        for g in np.unique(group).tolist():
            mine = group == g
            out[g] = union_length(start[mine], end[mine])
        return out
    # each group on its own stretch of one axis: one sort and one running maximum serve all groups
    shift = group * span - lo
    s, e = union(start + shift, end + shift)
    np.add.at(out, s // span, e - s)
    return out


def busy(frame: pd.DataFrame, by: str | Sequence[str], *, start: str = "start",
         end: str = "end") -> pd.DataFrame:
    """Busy time per group: one row per value of the `by` column(s) of `frame`, with `busy`, the
    length of the union of the group's `[start, end)` intervals (int64), sorted by `by`."""
    keys = [by] if isinstance(by, str) else list(by)
    if len(frame) == 0:
        return pd.DataFrame({**{k: frame[k].iloc[:0] for k in keys}, "busy": np.zeros(0, np.int64)})
    codes, uniques = pd.MultiIndex.from_frame(frame[keys]).factorize(sort=True) if len(keys) > 1 else \
        pd.factorize(frame[keys[0]], sort=True)
    lengths = union_lengths(codes, frame[start].to_numpy(np.int64), frame[end].to_numpy(np.int64),
                            len(uniques))
    table = pd.DataFrame(list(uniques), columns=keys) if len(keys) > 1 else pd.DataFrame({keys[0]: uniques})
    table["busy"] = lengths
    return table


def busy_before(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Busy time before each of the sorted disjoint intervals (and after the last), float64."""
    return np.concatenate([[0], np.cumsum(end - start)]).astype(np.float64)


def busy_fraction(start: np.ndarray, end: np.ndarray, edges: np.ndarray,
                  before: np.ndarray | None = None) -> np.ndarray:
    """Busy fraction of each column `[edges[i], edges[i + 1])` (0 for an empty column) given
    sorted disjoint intervals ([`union`][jupyter_profview.derived.intervals.union]): the busy time
    up to each edge is read off the cumulative length of the intervals (`before`,
    [`busy_before`][jupyter_profview.derived.intervals.busy_before]; pass it when the same
    intervals are asked again)."""
    edges = np.asarray(edges, np.float64)
    width = np.diff(edges)
    if len(start) == 0:
        return np.zeros(len(width))
    if before is None:
        before = busy_before(start, end)
    k = np.searchsorted(start, edges, side="right") - 1  # last interval starting at or before each edge
    safe = np.maximum(k, 0)
    upto = np.where(k >= 0, before[safe] + np.clip(edges - start[safe], 0, (end - start)[safe]), 0.0)
    return np.where(width > 0, np.diff(upto) / np.where(width > 0, width, 1), 0.0)


def covered(union_: Intervals, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Per query `[start[i], end[i])`: how much of it the sorted disjoint intervals `union_`
    ([`union`][jupyter_profview.derived.intervals.union]) cover (int64; 0 for an empty query)."""
    s, e = np.asarray(union_[0], np.int64), np.asarray(union_[1], np.int64)
    start, end = np.asarray(start, np.int64), np.asarray(end, np.int64)
    if len(s) == 0:
        return np.zeros(len(start), np.int64)
    before = np.concatenate([[0], np.cumsum(e - s)])

    def upto(t: np.ndarray) -> np.ndarray:  # covered time before t
        k = np.searchsorted(s, t, side="right") - 1
        safe = np.maximum(k, 0)
        return np.where(k >= 0, before[safe] + np.clip(t - s[safe], 0, (e - s)[safe]), 0)

    return np.maximum(upto(np.maximum(end, start)) - upto(start), 0).astype(np.int64)
