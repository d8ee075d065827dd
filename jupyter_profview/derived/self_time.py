"""Self time as intervals: the part of each slice's span that is its own (not a child's), by
the `self` column's rule -- the one definition `summary.phases`, `compare` and the others read."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..nesting import PYTHON_FRAME, nest, nest_order, self_segments
from .masks import thread_keys

__all__ = ["self_interval_arrays", "self_intervals"]


def self_interval_arrays(start: np.ndarray, end: np.ndarray, ids: np.ndarray, parent: np.ndarray,
                         thread: np.ndarray | None = None,
                         python: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(owner, s, e)`: the self intervals of slices `[start, end)` with `ids` and `parent`
    ids (a parent outside `ids` counts as none), as positions of their owning slice and bounds;
    empty intervals included (`e == s`).  With `thread` (a key per slice) and `python` (the
    Python frames), the threads where slices partly overlap get the segments each slice owns
    by the `self` column's rule.  See [self_intervals][jupyter_profview.derived.self_time.self_intervals]."""
    owner, s, e = _gaps(start, end, ids, parent)
    if thread is None:
        return owner, s, e
    order = nest_order(thread, start, end - start)
    _, _, lane = nest(thread[order], start[order], end[order])
    tangled = np.isin(thread, np.unique(thread[order][lane > 0]))
    if not tangled.any():
        return owner, s, e
    pick = np.flatnonzero(tangled)
    o2, s2, e2 = self_segments(thread[pick], start[pick], end[pick], None if python is None else python[pick])
    plain = ~tangled[owner]
    return (np.concatenate([owner[plain], pick[o2]]), np.concatenate([s[plain], s2]),
            np.concatenate([e[plain], e2]))


def _gaps(start: np.ndarray, end: np.ndarray, ids: np.ndarray,
          parent: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each slice's span minus its direct children's spans: the gaps before, between and after
    its children (the self intervals where no slices partly overlap)."""
    by_id = np.argsort(ids, kind="stable")
    sorted_ids = ids[by_id]
    at = np.minimum(np.searchsorted(sorted_ids, parent), max(len(ids) - 1, 0))
    child = (parent >= 0) & (sorted_ids[at] == parent) if len(ids) else np.zeros(0, bool)
    # Children sorted by (parent, start): each child's preceding gap starts at the
    # previous sibling's end, or at the parent's start for the first child.
    kids = np.flatnonzero(child)
    kids = kids[np.lexsort((start[kids], parent[kids]))]
    kid_parent = by_id[at[kids]]
    first = np.ones(len(kids), bool)
    first[1:] = kid_parent[1:] != kid_parent[:-1]
    gap_start = np.where(first, start[kid_parent], np.roll(end[kids], 1))
    last = np.ones(len(kids), bool)
    last[:-1] = kid_parent[:-1] != kid_parent[1:]
    tail_owner = kid_parent[last]
    has_kids = np.zeros(len(ids), bool)
    has_kids[kid_parent] = True
    leaves = np.flatnonzero(~has_kids)
    owner = np.concatenate([kid_parent, tail_owner, leaves])
    s = np.concatenate([gap_start, end[kids[last]], start[leaves]])
    e = np.concatenate([start[kids], end[tail_owner], end[leaves]])
    return owner, s, e


def self_intervals(events: pd.DataFrame) -> pd.DataFrame:
    """Each slice's self time as intervals: `start`, `end`, `process`, `phase`.

    A slice's span minus its direct children's spans, i.e. the gaps before,
    between and after its children; on a thread where slices partly overlap
    (`with_stack` traces), the time each slice owns by the `self` column's rule
    (`jupyter_profview.nesting.self_segments`: the one running,
    Python frames yielding to ops and ranges).  On one thread these intervals are
    disjoint, their union is the union of the thread's slices, and each slice's
    add up to its `self`.
    """
    ev = events[events["kind"] == "slice"]
    start = ev["start"].to_numpy(np.int64)
    end = start + ev["dur"].to_numpy(np.int64)
    ids, parent = ev.index.to_numpy(np.int64), ev["parent"].to_numpy(np.int64)
    python = (ev["category"].astype(str) == PYTHON_FRAME).to_numpy()
    owner, s, e = self_interval_arrays(start, end, ids, parent, thread_keys(ev), python)
    keep = e > s
    owner = owner[keep]
    return pd.DataFrame({
        "start": s[keep], "end": e[keep],
        "process": ev["process"].to_numpy()[owner], "phase": ev["phase"].to_numpy()[owner],
    })
