"""Nesting of timed events into lanes, parents and self time.

Which reading each column follows:

- `parent`: PyTorch's, for every event (Python frames included): torch's `key_averages()`
  tree (`EventList._populate_cpu_children`).
- `depth`: the level in that tree (0 exactly when there is no `parent`).
- `self`: the time the event is the one running.  Torch's "Self CPU" for every op and
  `record_function` range (Python frames yield to them, as torch counts it), never negative,
  and a thread's self times add up to its busy time; the two differ from torch only where
  torch double-counts (below).

## Nesting and partial overlaps

Per thread, in (start, -duration) order, an event's `parent` is the innermost open event that
contains it (an event ending exactly where another starts is closed).  This is PyTorch's rule
for `key_averages()` (`EventList._populate_cpu_children`: one stack per thread; an event that
outlasts the top closes it).  With `with_stack=True` torch (2.13) keeps the Python frames
(`python_function`) in that list, so they are parents and children in its tree like the ops,
and so they are here.

Two events can overlap partly: a `record_function` (`## forward ##`) starts inside its
`__enter__` / `_record_function_enter_new` frames and ends inside `__exit__`.  One lane cannot
draw both, so the **longer one keeps the lane** (on equal durations, the earlier one): the
annotation keeps its children and the short helper moves, with everything drawn inside it, to
the first free sub-lane `"... [overlap k]"` (`quality.overlaps`).  `parent` may be on another
lane; the widget draws each lane from its own top row (`nest`'s depth), the table shows the
tree depth.

## Self time

Each instant of a thread's busy time is the self time of exactly one event, the one *running*
then: of the open events, the one that started last (on equal starts, the shorter) -- the
innermost call still open, as on a call stack -- **except that a Python frame yields to ops and
ranges** (below).  So `self >= 0`, `self <= dur`, and a thread's `self` adds up to its busy
time (the union of its events).

An event that partly overlaps no other event and whose children do not partly overlap each
other owns `dur` minus its children's `dur`: torch's "Self CPU".  That is nearly every event of
every trace.

**Python frames** (category `PYTHON_FRAME`).  The
`__exit__` frames of a `record_function` start inside the range and end after it; torch does
not make them (nor the frames they call) children of the range, so the range keeps that time in
its "Self CPU".  Here too: a Python frame *yields* while an op or range is open that started
before it, is not one of its ancestors, and started after its innermost op or range ancestor
(so a frame called by an op still takes its time from that op, as in torch); the instant goes
to the latest-started open event that does not yield.  So `summary(t, by="name")` equals
`key_averages()` Self CPU for every op and range of a `with_stack` trace
(`tests/test_nesting.py`, two recordings of torch 2.13).

Where torch and this differ, torch counts some time twice:

- two children of an event partly overlap (a `with_stack` frame, or a range such as
  `ProfilerStep#N` or a `record_function` around another one, holding a range and its
  `__enter__` / `__exit__` frames): torch subtracts the shared time from the parent twice,
  which can make it negative; here it is subtracted once;
- a Python frame and a range partly overlap: torch counts the shared time in both; here the
  range owns it (the frame's self is lower than torch's; it is never negative);
- two ops or ranges partly overlap (rare: clock ties): torch counts the shared time in both;
  here the one started later owns it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_NO_END = -(2**63)  # last end of an empty lane

PYTHON_FRAME = "python_function"
"""The category of the Python frames of a PyTorch trace (`with_stack=True`), which yield their
self time to the ops and ranges they partly overlap (module docstring)."""


def nest_python(
    track: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nesting of events already sorted by (track, start, -duration): the
    reference for the native `pv_nest` (`_native/nest.c`); see the module
    docstring for the rule.

    Returns `depth` (level in its lane), `parent` (position in the sorted
    arrays of the innermost open event that contains it, -1 for none) and
    `lane` (0, or k > 0 for the k-th overlap sub-lane).  Each lane keeps a
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
    """`nest_python`, in native code when the extension is built."""
    from . import _native

    if _native.available():
        return _native.nest(track, start, end)
    return nest_python(track, start, end)


def nest_order(track: np.ndarray, start: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """`np.lexsort((-dur, start, track))`, faster on real traces: a stable
    sort by start (timsort: start is nearly sorted in files), the rare equal
    starts ordered by -dur, then a stable (radix, on small codes) sort by track."""
    order = np.argsort(start, kind="stable")
    s = start[order]
    tied = np.zeros(len(s), bool)
    tied[1:] = s[1:] == s[:-1]
    del s  # (each temporary goes as soon as it is read: this runs on every event of a trace)
    tied[:-1] |= tied[1:]
    tied = np.flatnonzero(tied)  # runs of equal starts, each contiguous
    if len(tied):
        sub = order[tied]
        order[tied] = sub[np.lexsort((-dur[sub], start[sub]))]
        del sub
    del tied
    key = (track.astype(np.int16) if len(track) and int(track.max()) < 2**15 else track)[order]
    by_track = np.argsort(key, kind="stable")
    del key
    return order[by_track]


def tree_depth(depth: np.ndarray, parent: np.ndarray, lane: np.ndarray) -> np.ndarray:
    """Level in the nesting tree of events nested by `nest` (`depth`
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
               lane: np.ndarray, python: np.ndarray | None = None) -> np.ndarray:
    """Self time of events sorted and nested by `nest` (module
    docstring): `dur` minus the children's `dur` on tracks without partial overlaps (no overlap
    lane), the time each event owns on the others (`owned_time`,
    or `yielding_owned_time` where Python frames
    (`python`, a mask) partly overlap ops or ranges).  The result is >= 0 and sums, per track, to
    the track's busy time."""
    out = nested_self(start, end, parent)
    tangled = np.isin(track, np.unique(track[lane > 0]))
    if tangled.any():
        pick = np.flatnonzero(tangled)
        t, s, e = track[pick], start[pick], end[pick]
        yields = None
        if python is not None and python[pick].any() and not python[pick].all():
            local = np.full(len(parent), -1, np.int64)
            local[pick] = np.arange(len(pick))
            p = parent[pick]
            local_parent = np.where(p >= 0, local[np.maximum(p, 0)], -1)
            yields = python_yields_until(t, s, e, local_parent, python[pick])
        if yields is not None and (yields > s).any():
            out[pick] = yielding_owned_time(t, s, e, python[pick], yields)  # type: ignore[index]
        else:
            out[pick] = owned_time(t, s, e)
    return out


def nested_self(start: np.ndarray, end: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """`nested_self_python`, in native code when the extension is built (no temporaries: it
    runs on every event of a trace)."""
    from . import _native

    if _native.available():
        return _native.nested_self(start, end, parent)
    return nested_self_python(start, end, parent)


def nested_self_python(start: np.ndarray, end: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Each event's duration minus its children's (``parent``: its index, -1 none), the
    children's summed as floats (``bincount``) and truncated to int64."""
    weight = end - start
    child = parent >= 0
    children = np.bincount(parent[child], weights=weight[child], minlength=len(weight))
    out: np.ndarray = weight - children.astype(np.int64)
    return out


def python_yields_until(track: np.ndarray, start: np.ndarray, end: np.ndarray, parent: np.ndarray,
                        python: np.ndarray) -> np.ndarray:
    """`python_yields_until_python`, in
    native code when the extension is built."""
    from . import _native

    if _native.available():
        return _native.python_yields(track, start, end, parent, python)
    return python_yields_until_python(track, start, end, parent, python)


def python_yields_until_python(track: np.ndarray, start: np.ndarray, end: np.ndarray, parent: np.ndarray,
                               python: np.ndarray) -> np.ndarray:
    """For events sorted by (track, start, -duration) with their `parent` positions: until when
    each Python frame yields its time to an op or range it partly overlaps (module docstring,
    "Python frames"); `_NO_END` where it never does.

    A Python frame yields to the open ops and ranges it started inside of and outlasts (and
    that started after its innermost op or range ancestor), and to those its Python parent
    yields to."""
    n = len(start)
    starts, ends, tracks, par = start.tolist(), end.tolist(), track.tolist(), parent.tolist()
    is_py = python.tolist()
    until = [_NO_END] * n
    others: list[int] = []  # open ops and ranges of the track, innermost last
    current = None
    for i in range(n):
        if tracks[i] != current:
            current, others = tracks[i], []
        s, e = starts[i], ends[i]
        while others and ends[others[-1]] <= s:
            others.pop()
        if not is_py[i]:
            others.append(i)
            continue
        p = par[i]
        u = until[p] if p >= 0 and is_py[p] else _NO_END
        for r in reversed(others):  # innermost first; the first one containing i ends the search
            if ends[r] <= s:
                continue
            if ends[r] >= e:
                break
            u = max(u, ends[r])
        until[i] = u if u > s else _NO_END
    return np.array(until, np.int64)


def yielding_owned_time(track: np.ndarray, start: np.ndarray, end: np.ndarray, python: np.ndarray,
                        yields: np.ndarray) -> np.ndarray:
    """Time each event owns (module docstring) where Python frames yield: the lengths of its
    `owned_segments`."""
    owner, seg_start, seg_end = owned_segments(track, start, end, python, yields)
    return np.bincount(owner, weights=seg_end - seg_start, minlength=len(start)).astype(np.int64)


def owned_segments(track: np.ndarray, start: np.ndarray, end: np.ndarray, python: np.ndarray | None = None,
                   yields: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`owned_segments_python`, in native code
    when the extension is built."""
    from . import _native

    if _native.available():
        return _native.owned_segments(track, start, end, python, yields)
    return owned_segments_python(track, start, end, python, yields)


def owned_segments_python(track: np.ndarray, start: np.ndarray, end: np.ndarray,
                          python: np.ndarray | None = None,
                          yields: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The self time of events sorted by (track, start, -duration) as intervals: `(owner,
    seg_start, seg_end)`, each instant of a track's busy time in exactly one, owned by the event
    running then (module docstring).  Like
    `owned_time_python`, but an instant goes to the
    latest-started open event that does not yield then (a Python frame yields before `yields`,
    from `python_yields_until`; nothing yields
    without `python`)."""
    n = len(start)
    if python is None or yields is None:
        python, yields = np.zeros(n, bool), np.full(n, _NO_END, np.int64)
    starts, ends, tracks = start.tolist(), end.tolist(), track.tolist()
    is_py, until = python.tolist(), yields.tolist()
    owners: list[int] = []
    lo: list[int] = []
    hi: list[int] = []
    stack: list[int] = []
    t = 0

    def settle(limit: int) -> None:
        nonlocal t
        while stack and t < limit:
            while stack and ends[stack[-1]] <= t:
                stack.pop()
            lim = limit
            k = len(stack) - 1
            while k >= 0:  # the owner: the top-most open event that does not yield now
                j = stack[k]
                if ends[j] > t and not (is_py[j] and until[j] > t):
                    break
                if ends[j] > t:
                    lim = min(lim, until[j])  # it runs again from there
                k -= 1
            if k < 0:
                t = lim
                continue
            j = stack[k]
            lim = min(lim, ends[j])
            if owners and owners[-1] == j and hi[-1] == t:
                hi[-1] = lim  # the same owner goes on
            else:
                owners.append(j)
                lo.append(t)
                hi.append(lim)
            t = lim

    for i in range(n):
        if i > 0 and tracks[i] != tracks[i - 1]:
            settle(2**62)
            stack = []
        settle(starts[i])
        t = starts[i]
        stack.append(i)
    settle(2**62)
    return np.array(owners, np.int64), np.array(lo, np.int64), np.array(hi, np.int64)


def self_segments(track: np.ndarray, start: np.ndarray, end: np.ndarray,
                  python: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The self time of events in any order as intervals `(owner, seg_start, seg_end)` (`owner`:
    position in the input): the events nested by `nest` and cut
    by `owned_segments`, Python frames (`python`)
    yielding; the lengths per owner are the `self` column's rule."""
    order = nest_order(track, start, end - start)
    t, s, e = track[order], start[order], end[order]
    py = None if python is None else python[order]
    yields = None
    if py is not None and py.any() and not py.all():
        _, parent, _ = nest(t, s, e)
        yields = python_yields_until(t, s, e, parent, py)
    owner, seg_start, seg_end = owned_segments(t, s, e, py, yields)
    return order[owner], seg_start, seg_end


def owned_time(track: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """`owned_time_python`, in native code when the
    extension is built."""
    from . import _native

    if _native.available():
        return _native.owned_time(track, start, end)
    return owned_time_python(track, start, end)


def owned_time_python(track: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Time each event owns (module docstring), for events sorted by
    (track, start, -duration): the reference for the native `pv_owned`.

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
    """In place: events whose code is `other` take their parent's, top down
    (so a chain of `other` descendants all take the nearest known ancestor's).
    `depth` is not used: a parent may be on another lane (module docstring)."""
    index = np.int32 if len(codes) < 2**31 else np.int64  # positions: half the memory where they fit
    todo = np.flatnonzero((codes == other) & (parent >= 0)).astype(index)
    pending = np.zeros(len(codes), bool)
    pending[todo] = True
    # pointer jumping: `up` of each pending event moves to its pointee's `up` until it is a
    # settled event (its nearest ancestor not pending): log2(chain) rounds, not one per level
    up = np.arange(len(codes), dtype=index)
    up[todo] = parent[todo]
    for _ in range(64):  # 2**64 levels: every tree; parents never form a cycle
        ptr = up[todo]
        still = pending[ptr]
        if not still.any():
            break
        up[todo[still]] = up[ptr[still]]
    codes[todo] = codes[up[todo]]


def nearest_ancestor(events: Any, ids: np.ndarray, category: str) -> np.ndarray:
    """Id of the nearest ancestor (by `parent`, itself excluded) of each of `ids` in `events`
    (a loaded `trace.events`: ids are positions) whose `category` is `category`, or -1 (also for
    an id of -1): the framework op that issued a launch, the op that made a sync call."""
    cats = events["category"].array
    code = cats.categories.get_loc(category) if category in cats.categories else -2
    return nearest_marked(events["parent"].to_numpy(np.int64), ids, np.asarray(cats.codes) == code)


def climb(parent: np.ndarray, pos: np.ndarray,
          found: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """The ancestor walk, written once: for each of `pos` (positions, -1 for none), the first of
    itself and its ancestors by `parent` (positions, -1 at a root) for which `found(which, at)`
    holds (`which`: indices into `pos` still walking, `at`: their current positions; a bool
    array), or -1.  No depth limit: the walk goes up to the root."""
    out = np.asarray(pos, np.int64).copy()
    todo = np.flatnonzero(out >= 0)
    while len(todo):
        todo = todo[~np.asarray(found(todo, out[todo]), bool)]
        out[todo] = parent[out[todo]]
        todo = todo[out[todo] >= 0]
    return out


def nearest_marked(parent: np.ndarray, pos: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """For each of `pos` (positions, -1 for none), the nearest ancestor by `parent` (positions,
    -1 at a root; itself excluded) that is `marked`, or -1 (`climb`, from the parent)."""
    pos = np.asarray(pos, np.int64)
    start = np.where(pos >= 0, parent[np.maximum(pos, 0)], -1) if len(pos) else np.zeros(0, np.int64)
    return climb(parent, start, lambda _which, at: marked[at])


def ancestor_mask(parent: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Over all positions: those that are an ancestor (by `parent`, positions; no depth limit)
    of any of `pos`."""
    out = np.zeros(len(parent), bool)
    current = np.asarray(pos, np.int64)
    current = parent[current[current >= 0]]
    while len(current):
        current = np.unique(current[current >= 0])
        current = current[~out[current]]
        out[current] = True
        current = parent[current]
    return out
