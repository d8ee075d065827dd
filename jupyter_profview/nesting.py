"""Nesting of timed events into lanes, parents and self time.

Nesting and partial overlaps
----------------------------
Per thread, in (start, -duration) order, an event's ``parent`` is the
innermost open event that contains it (an event ending exactly where another
starts is closed).  This is PyTorch's rule for ``key_averages()``
(``EventList._populate_cpu_children``: one stack per thread; an event that
outlasts the top closes it), so ``self`` equals torch's "Self CPU" event by
event, Python frames (``with_stack=True``) included.

Two events can overlap partly: a ``record_function`` (``## forward ##``)
starts inside its ``__enter__`` / ``_record_function_enter_new`` frames and
ends inside ``__exit__``.  One lane cannot draw both, so the **longer one
keeps the lane** (on equal durations, the earlier one): the annotation keeps
its children and the short helper moves, with everything drawn inside it, to
the first free sub-lane ``"... [overlap k]"`` (``quality.overlaps``).
``depth`` is the level within the lane; ``parent`` may be on another lane.

``self`` is ``dur`` minus the children's ``dur``, as in torch.  Time shared
by overlapping siblings is subtracted twice from their parent and counted in
both, so a thread's ``self`` still sums to its top-level ``dur``.  Only where
partly overlapping events have no enclosing event (two top-level events)
does torch count the shared time twice; here the top-level event that moved
aside, with its subtree, counts only time outside the main lane's top-level
events (and earlier such events), so a thread's ``self`` sums to its busy
time (the union of its events), never more.
"""

from __future__ import annotations

import numpy as np

_NO_END = -(2**63)  # last end of an empty lane


def nest_python(
    track: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nesting of events already sorted by (track, start, -duration): the
    reference for the native ``pv_nest`` (``_native/nest.c``); see the module
    docstring for the rule.

    Returns ``depth`` (level in its lane), ``parent`` (position in the sorted
    arrays of the innermost open event that contains it, -1 for none) and
    ``lane`` (0, or k > 0 for the k-th overlap sub-lane).  Each lane keeps a
    stack of open events, each inside the one below it.
    """
    n = len(start)
    starts, ends, tracks = start.tolist(), end.tolist(), track.tolist()
    depth, parent, lane = [0] * n, [-1] * n, [0] * n
    stacks: list[list[int]] = []
    last_end: list[int] = []  # per lane: the latest end drawn on it
    current = None

    def free_lane(t: int) -> int:  # first overlap lane with nothing drawn after t
        k = next((k for k in range(1, len(stacks)) if last_end[k] <= t), len(stacks))
        if k == len(stacks):
            stacks.append([])
            last_end.append(t)
        stacks[k].clear()
        return k

    for i in range(n):
        if tracks[i] != current:
            current = tracks[i]
            stacks, last_end = [[]], [_NO_END]
        s, e = starts[i], ends[i]
        p = p_lane = p_pos = -1  # innermost open event containing i: the latest one
        for k, stack in enumerate(stacks):
            while stack and ends[stack[-1]] <= s:
                stack.pop()
            for pos in range(len(stack) - 1, -1, -1):
                if stack[pos] < p:
                    break
                if e <= ends[stack[pos]]:
                    p, p_lane, p_pos = stack[pos], k, pos
                    break
        main = stacks[0]
        if p >= 0 and p_pos == len(stacks[p_lane]) - 1:
            k = p_lane  # nests in the top of its lane
        elif p_lane <= 0 and main:  # partly overlaps main-lane events above its container
            base = p_pos + 1
            t0 = main[base]
            if e - s > ends[t0] - starts[t0]:  # i is longer: t0 and its subtree move aside
                k = free_lane(starts[t0])
                d0 = depth[t0]
                for j in range(t0, i):
                    if lane[j] == 0:  # main-lane events since t0 are its subtree
                        lane[j] = k
                        depth[j] -= d0
                stacks[k].extend(main[base:])
                last_end[k] = ends[t0]
                del main[base:]
                k = 0
            else:
                k = free_lane(s)
        elif p < 0:
            k = 0  # main lane empty: top level
        else:
            k = free_lane(s)  # partly overlaps an overlap-lane event above its container
        depth[i] = len(stacks[k])
        parent[i] = p
        lane[i] = k
        stacks[k].append(i)
        last_end[k] = max(last_end[k], e)
    return np.array(depth, np.int32), np.array(parent, np.int64), np.array(lane, np.int32)


def nest(track: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`nest_python`, in native code when the extension is built."""
    from . import _native

    if _native.available():
        return _native.nest(track, start, end)
    return nest_python(track, start, end)


def nest_order(track: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """``np.lexsort((-dur, start, track))``, faster on real traces: a stable
    sort by start (timsort: start is nearly sorted in files), the rare equal
    starts ordered by -dur, then a stable (radix, on small codes) sort by track."""
    order = np.argsort(start, kind="stable")
    s = start[order]
    tied = np.zeros(len(s), bool)
    tied[1:] = s[1:] == s[:-1]
    tied[:-1] |= tied[1:]
    tied = np.flatnonzero(tied)  # runs of equal starts, each contiguous
    if len(tied):
        sub = order[tied]
        order[tied] = sub[np.lexsort((-dur[sub], start[sub]))]
    small = track.astype(np.int16) if len(track) and int(track.max()) < 2**15 else track
    return order[np.argsort(small[order], kind="stable")]


def self_times(track: np.ndarray, start: np.ndarray, end: np.ndarray, parent: np.ndarray,
               lane: np.ndarray) -> np.ndarray:
    """Self time of events sorted and nested by :func:`nest`: ``dur`` minus the
    ``dur`` of the direct children, except in the subtree of a top-level event
    moved to an overlap lane, where only the time not covered by the main
    lane's top-level events (nor by earlier such subtrees) counts (module
    docstring).  The result sums, per track, to the track's busy time."""
    weight = end - start
    loser = (lane > 0) & (parent < 0)
    if loser.any():
        weight = weight.copy()
        _discount_shared(weight, track, start, end, parent, lane, loser)
    child = parent >= 0
    children = np.bincount(parent[child], weights=weight[child], minlength=len(weight))
    weight -= children.astype(np.int64)  # weight is this function's own array
    return weight


def _discount_shared(weight: np.ndarray, track: np.ndarray, start: np.ndarray, end: np.ndarray,
                     parent: np.ndarray, lane: np.ndarray, loser: np.ndarray) -> None:
    """In place: ``weight`` of the events under each top-level overlap-lane
    event ``d`` (``loser``) becomes the length of their interval outside the
    main lane's top-level events and outside ``[d.start, M)``, ``M`` the latest
    end of the earlier such events on the track (those start before ``d``, so
    their union after ``d.start`` is that one interval)."""
    sub = np.flatnonzero(lane > 0)
    up = np.arange(len(weight))  # climb overlap-lane parents to the top of each chain
    par = parent[sub]
    up[sub] = np.where((par >= 0) & (lane[np.maximum(par, 0)] > 0), par, sub)
    while not np.array_equal(up[up[sub]], up[sub]):
        up[sub] = up[up[sub]]
    members, root = sub[loser[up[sub]]], up[sub][loser[up[sub]]]
    main_top = np.flatnonzero((lane == 0) & (parent < 0))
    roots = np.flatnonzero(loser)
    for tr in np.unique(track[roots]).tolist():
        mains = main_top[track[main_top] == tr]
        cover = _Cover(start[mains], end[mains])
        mine = roots[track[roots] == tr]
        earlier = np.concatenate([[_NO_END], np.maximum.accumulate(end[mine])[:-1]])
        pick = track[members] == tr
        ev = members[pick]
        a, b = start[ev], end[ev]
        lo = np.maximum(a, start[root[pick]])
        hi = np.maximum(np.minimum(b, earlier[np.searchsorted(mine, root[pick])]), lo)
        weight[ev] = (b - a) - cover(a, b) - ((hi - lo) - cover(lo, hi))


class _Cover:
    """Length of ``[a, b)`` covered by sorted, disjoint intervals."""

    def __init__(self, start: np.ndarray, end: np.ndarray) -> None:
        self.start, self.length = start, end - start
        self.before = np.concatenate([[0], np.cumsum(self.length)])

    def at(self, t: np.ndarray) -> np.ndarray:
        """Covered length before ``t``."""
        if len(self.start) == 0:
            return np.zeros(len(t), np.int64)
        k = np.searchsorted(self.start, t, side="right") - 1
        j = np.maximum(k, 0)
        return np.where(k >= 0, self.before[j] + np.clip(t - self.start[j], 0, self.length[j]), 0)

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.at(b) - self.at(a)


def fill_down(codes: np.ndarray, depth: np.ndarray, parent: np.ndarray, other: int) -> None:
    """In place: events whose code is ``other`` take their parent's, top down
    (so a chain of ``other`` descendants all take the nearest known ancestor's).
    ``depth`` is not used: a parent may be on another lane (module docstring)."""
    todo = np.flatnonzero((codes == other) & (parent >= 0))
    pending = np.zeros(len(codes), bool)
    pending[todo] = True
    while len(todo):  # each round settles the events whose parent is settled
        ready = ~pending[parent[todo]]
        done = todo[ready]
        codes[done] = codes[parent[done]]
        pending[done] = False
        todo = todo[~ready]
