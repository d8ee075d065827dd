"""Block-by-block array work for the widget's indexes and level of detail (`.lod`, `.memory_lod`).

A large trace's first draw is mostly memory traffic: every full-size temporary of a numpy
expression over millions of events is a fresh buffer the kernel pages in.  These helpers do the
same work a block of `BLOCK` elements at a time, so that the only full-size arrays are the
results; each block's temporaries stay small (and in cache).  The results are the same as the
whole-array expressions they replace, element for element.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

#: elements per block (2 MB of float64)
BLOCK = 1 << 18


def blocks(n: int, size: int | None = None) -> list[tuple[int, int]]:
    """``[0, n)`` as ``(lo, hi)`` blocks of `size` (default `BLOCK`) elements."""
    step = size or BLOCK
    return [(a, min(a + step, n)) for a in range(0, max(n, 0), step)]


def gather(values: np.ndarray, order: np.ndarray, dtype: Any) -> np.ndarray:
    """``values[order].astype(dtype)``, filled block by block (no full-size temporary)."""
    out = np.empty(len(order), dtype)
    for a, b in blocks(len(order)):
        out[a:b] = values[order[a:b]]
    return out


def changes(values: np.ndarray) -> np.ndarray:
    """Positions ``i >= 1`` where ``values[i] != values[i - 1]`` (``flatnonzero(diff(values)) + 1``)."""
    n = len(values)
    parts = [np.flatnonzero(values[a + 1:b + 1] != values[a:b]) + a + 1 for a, b in blocks(n - 1)]
    return np.concatenate([np.zeros(0, np.int64), *parts])


def first_positions(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_index=True)`` of integer codes below `size`: the codes present
    and where each first occurs, block by block (a sort of every code is ~0.1-0.4 s at 4M)."""
    if len(codes) == 0 or int(codes.min()) < 0:
        return np.unique(codes, return_index=True)
    size = max(size, int(codes.max()) + 1)
    first = np.full(size, -1, np.int64)
    for a, b in blocks(len(codes)):
        part = codes[a:b]
        new = np.flatnonzero((np.bincount(part, minlength=size) > 0) & (first < 0))
        if len(new) > 64:  # many codes begin here: one sort of the block
            uniq, at = np.unique(part, return_index=True)
            fresh = first[uniq] < 0
            first[uniq[fresh]] = at[fresh] + a
        else:
            for c in new.tolist():
                first[c] = a + int(np.argmax(part == c))
    present = np.flatnonzero(first >= 0)
    return present, first[present]


def group_cuts(m: int, starts_group: Callable[[int, int], np.ndarray]) -> list[int]:
    """Cut ``[0, m)`` into runs of about `BLOCK` elements, each cut where a new group starts.

    ``starts_group(lo, hi)`` says, for each position of ``[lo, hi)`` (``lo >= 1``), whether a new
    group starts there (it depends on the position and the one before it only).  A group is never
    split, so that a per-group computation (``ufunc.reduceat``...) run on each run separately
    gives the result it gives on the whole.  Returns ``[0, c1, ..., m]``."""
    cuts = [0]
    while m - cuts[-1] > BLOCK:
        at, step = cuts[-1] + BLOCK, 4096
        while at < m:
            hit = np.flatnonzero(starts_group(at, min(at + step, m)))
            if len(hit):
                at += int(hit[0])
                break
            at, step = at + step, step * 2
        if at >= m:
            break
        cuts.append(at)
    cuts.append(m)
    return cuts


def running_max(end: np.ndarray, row: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """The running maximum of `end` within each row (`row` sorted, rows starting at `bounds`).

    `end` itself when it never falls within a row (a row's events end in order when they do not
    overlap); else a copy, accumulated in the rows where it falls."""
    falls = [np.flatnonzero((end[a + 1:b + 1] < end[a:b]) & (row[a + 1:b + 1] == row[a:b])) + a + 1
             for a, b in blocks(len(end) - 1)]
    at = np.concatenate([np.zeros(0, np.int64), *falls])
    if not len(at):
        return end
    out = end.copy()
    for r in np.unique(np.searchsorted(bounds, at, "right") - 1).tolist():
        lo, hi = int(bounds[r]), int(bounds[r + 1])
        np.maximum.accumulate(out[lo:hi], out=out[lo:hi])
    return out
