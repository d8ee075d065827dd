"""Nesting of timed events into lanes, parents and self time.

Nesting and partial overlaps
----------------------------
Per thread, in (start, -duration) order, an event's ``parent`` is the
innermost open event that contains it (an event ending exactly where another
starts is closed).  This is PyTorch's rule for ``key_averages()``
(``EventList._populate_cpu_children``: one stack per thread; an event that
outlasts the top closes it), so each event has torch's parent, Python frames
(``with_stack=True``) included.

Two events can overlap partly: a ``record_function`` (``## forward ##``)
starts inside its ``__enter__`` / ``_record_function_enter_new`` frames and
ends inside ``__exit__``.  One lane cannot draw both, so the **longer one
keeps the lane** (on equal durations, the earlier one): the annotation keeps
its children and the short helper moves, with everything drawn inside it, to
the first free sub-lane ``"... [overlap k]"`` (``quality.overlaps``).
``parent`` may be on another lane; the widget draws each lane from its own
top row (``nest``'s depth), the table shows the tree depth (below).

Self time
---------
Each instant of a thread's busy time is the self time of exactly one event,
the one *running* then: of the events open at that instant, the one that
started last (on equal starts, the shorter) -- the innermost call still
open, as on a call stack.  So ``self >= 0``, ``self <= dur``, and a thread's
``self`` adds up to its busy time (the union of its events).

An event that partly overlaps no other event and whose children do not
partly overlap each other owns ``dur`` minus its children's ``dur``:
torch's "Self CPU".  That is nearly every event of every trace.  Where two
children of an event partly overlap, torch subtracts their shared time twice
from the parent, which can make the parent's self time negative (a
``with_stack`` frame around a ``record_function`` and its ``__enter__`` /
``__exit__`` helpers); here the shared time is subtracted once and belongs
to the event started later: the annotation owns the tail of ``__enter__``,
the ``__exit__`` frames own the tail of the annotation.

``depth`` is the event's level in the nesting tree: 0 exactly when it has no
``parent``, else its parent's ``depth`` + 1, on whichever lane it is drawn.
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


def tree_depth(depth: np.ndarray, parent: np.ndarray, lane: np.ndarray) -> np.ndarray:
    """Level in the nesting tree of events nested by :func:`nest` (``depth``
    there is the level within the lane): main-lane events are nested in
    main-lane events, so only overlap-lane events differ, each one level below
    its parent (parents come first in nesting order)."""
    out = depth.copy()
    moved = np.flatnonzero(lane > 0)
    if len(moved):
        par = parent[moved].tolist()
        for i, p in zip(moved.tolist(), par, strict=True):
            out[i] = out[p] + 1 if p >= 0 else 0
    return out


def self_times(track: np.ndarray, start: np.ndarray, end: np.ndarray, parent: np.ndarray,
               lane: np.ndarray) -> np.ndarray:
    """Self time of events sorted and nested by :func:`nest` (module
    docstring): ``dur`` minus the children's ``dur`` on tracks without partial
    overlaps (no overlap lane), the time each event owns
    (:func:`owned_time`) on the others.  The result is >= 0 and sums, per
    track, to the track's busy time."""
    weight = end - start
    child = parent >= 0
    children = np.bincount(parent[child], weights=weight[child], minlength=len(weight))
    out = weight - children.astype(np.int64)
    tangled = np.isin(track, np.unique(track[lane > 0]))
    if tangled.any():
        pick = np.flatnonzero(tangled)
        out[pick] = owned_time(track[pick], start[pick], end[pick])
    return out


def owned_time(track: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """:func:`owned_time_python`, in native code when the extension is built."""
    from . import _native

    if _native.available():
        return _native.owned_time(track, start, end)
    return owned_time_python(track, start, end)


def owned_time_python(track: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Time each event owns (module docstring), for events sorted by
    (track, start, -duration): the reference for the native ``pv_owned``.

    A sweep over the starts with a stack of the events started so far: the
    top (the one started last) owns the time up to the next start or its own
    end, where it is popped, with the events under it that ended meanwhile."""
    n = len(start)
    starts, ends, tracks = start.tolist(), end.tolist(), track.tolist()
    own = [0] * n
    stack: list[int] = []
    t = 0
    for i in range(n + 1):
        new_track = i == n or (i > 0 and tracks[i] != tracks[i - 1])
        s = None if new_track else starts[i]
        while stack:
            j = stack[-1]
            if ends[j] <= t:  # ended while a later one ran
                stack.pop()
                continue
            lim = ends[j] if s is None else min(ends[j], s)
            own[j] += lim - t
            t = lim
            if s is None or ends[j] <= s:
                stack.pop()
            else:
                break
        if i < n:
            t = starts[i]
            stack.append(i)
    return np.array(own, np.int64)


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
