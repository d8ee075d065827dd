"""The protocol's merge rule of the timeline's boxes (``docs/widget-protocol.md``), for
`.lod.TimelineIndex`: consecutive sub-pixel boxes of a row in one pixel column become one box."""

from __future__ import annotations

import numpy as np

from . import blocks

__all__ = ["merge_sorted", "new_column"]


def merge_sorted(row: np.ndarray, start: np.ndarray, dur: np.ndarray, end: np.ndarray, t0: float,
                 px: float, count: np.ndarray | None = None, busy: np.ndarray | None = None,
                 longest: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The protocol's merge rule over boxes sorted by ``(row, start)`` (all touching the window).

    A box with ``dur >= px`` stays alone; consecutive shorter boxes of a row whose starts fall in
    the same pixel column ``floor((start - t0) / px)`` merge: ``start`` of the first, ``dur`` to
    the furthest end, ``count`` and ``busy`` summed, and the colour (``pick``: position of the box
    whose colour it takes) of the box with the longest event -- the first such box on a tie.
    Events are boxes with ``count = 1``, ``busy = longest = dur`` (the defaults); merged boxes
    carry their ``count``, ``busy`` and ``longest``, so merging again (the front end does, for
    the view) follows the same rule.  ``single``: the output box is one input box, unchanged.

    Many boxes are merged in runs of about `blocks.BLOCK` cut where a box starts a new output box
    (`blocks.group_cuts`): the same result, without full-size temporaries.
    """
    m = len(start)
    if m <= blocks.BLOCK:
        return _merge_run(row, start, dur, end, t0, px, count, busy, longest)

    def starts_box(lo: int, hi: int) -> np.ndarray:
        return _breaks(row[lo - 1:hi], start[lo - 1:hi], dur[lo - 1:hi], t0, px)

    cuts = blocks.group_cuts(m, starts_box)

    def part(a: int, b: int) -> dict[str, np.ndarray]:
        return _merge_run(row[a:b], start[a:b], dur[a:b], end[a:b], t0, px,
                          *(None if x is None else x[a:b] for x in (count, busy, longest)))

    runs = [(a, part(a, b)) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    out = {"first": np.concatenate([r["first"] + a for a, r in runs]),
           "single": np.concatenate([r["single"] for _, r in runs]),
           "pick": np.concatenate([r["pick"] + a for a, r in runs])}
    if out["single"].all():  # every box alone: the inputs themselves, as `_merge_run` gives them
        return {**out, "start": start, "dur": dur, **_boxes(m, dur, count, busy, longest)}
    for key in ("start", "dur", "count", "busy", "longest"):
        out[key] = np.concatenate([r[key] for _, r in runs])
    return out


def _merge_run(row: np.ndarray, start: np.ndarray, dur: np.ndarray, end: np.ndarray, t0: float,
               px: float, count: np.ndarray | None = None, busy: np.ndarray | None = None,
               longest: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """`merge_sorted` on whole arrays."""
    m = len(start)
    boxes = _boxes(m, dur, count, busy, longest)
    count, busy, longest = boxes["count"], boxes["busy"], boxes["longest"]
    brk = np.ones(m, bool)
    brk[1:] = _breaks(row, start, dur, t0, px)
    first = np.flatnonzero(brk)
    single = np.diff(np.append(first, m)) == 1
    if single.all():
        return {"first": first, "single": single, "start": start, "dur": dur, "pick": np.arange(m),
                **boxes}
    box_end = np.maximum.reduceat(end, first)
    gmax = np.maximum.reduceat(longest, first)
    group = np.cumsum(brk) - 1
    pos = np.where(longest == gmax[group], np.arange(m), m)
    return {
        "first": first, "single": single, "start": start[first], "dur": box_end - start[first],
        "count": np.add.reduceat(count, first), "busy": np.add.reduceat(busy, first).astype(np.float64),
        "pick": np.minimum.reduceat(pos, first), "longest": gmax.astype(np.float64),
    }


def _breaks(row: np.ndarray, start: np.ndarray, dur: np.ndarray, t0: float, px: float) -> np.ndarray:
    """The merge rule's break: whether each box after the first starts a new output box (another
    row, either box at least a pixel long, or another pixel column)."""
    big = dur >= px
    out: np.ndarray = (row[1:] != row[:-1]) | big[1:] | big[:-1] | new_column(start, t0, px)
    return out


def new_column(t: np.ndarray, t0: float, px: float) -> np.ndarray:
    """Whether each time after the first falls in another pixel column (``floor((t - t0) / px)``,
    columns of `px` from `t0`) than the time before it."""
    col = np.floor((t - t0) / px)
    out: np.ndarray = col[1:] != col[:-1]
    return out


def _boxes(m: int, dur: np.ndarray, count: np.ndarray | None, busy: np.ndarray | None,
           longest: np.ndarray | None) -> dict[str, np.ndarray]:
    """The input boxes' ``count``, ``busy`` and ``longest``: as given, or an event's
    (``count = 1``, ``busy = longest = dur``)."""
    return {"count": np.ones(m, np.int64) if count is None else np.asarray(count, np.int64),
            "busy": dur if busy is None else np.asarray(busy, np.float64),
            "longest": dur if longest is None else np.asarray(longest, np.float64)}
