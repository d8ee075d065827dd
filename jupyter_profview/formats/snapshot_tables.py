"""The tables of a CUDA memory snapshot from its columns (`snapshot_columns`): the allocator
trace replayed with array operations, so a snapshot of millions of entries costs no Python
object per entry.  The semantics are those documented in ``torch_snapshot``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ..builder import build_events, make_trace
from ..errors import ProfviewError
from ..model import Quality, Trace, memory_frame
from ..schema import KINDS
from .snapshot_columns import ACTIONS, LIMIT

PREEXISTING = "(allocated before recording)"
_IN_USE = ("active_allocated", "active_awaiting_free", "active_pending_free")  # freed at free_completed
ALLOCATOR_KEY = ("snapshot", "allocator")  # trace._derived: the raw trace for analysis.allocator
ALLOC, FREE_REQUESTED, FREE_COMPLETED, SEG_ALLOC, SEG_FREE, SEG_MAP, SEG_UNMAP, OOM = range(8)


def frame_texts(c: dict[str, Any]) -> list[str]:
    """``name (file:line)`` of each frame id (``name`` alone without a file)."""
    s = c["strings"]
    return [s[n] if s[f] in ("none", "?", "") else f"{s[n]} ({s[f]}:{line})"
            for n, f, line in zip(c["f_name"].tolist(), c["f_file"].tolist(), c["f_line"].tolist(),
                                  strict=True)]


def stack_lists(c: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Per stack id: its frames (a list of texts, innermost first) and its owner (the first
    frame outside ``torch/``), as object arrays to index with stack ids."""
    texts = frame_texts(c)
    off, fr = c["k_off"].tolist(), c["k_frame"].tolist()
    lists = np.empty(len(off) - 1, object)
    owners = np.empty(len(off) - 1, object)
    for k in range(len(off) - 1):
        frames = [texts[f] for f in fr[off[k]:off[k + 1]]]
        outside = [f for f in frames if "torch/" not in f and not f.startswith("<built-in")]
        lists[k] = frames
        owners[k] = (outside or frames or [""])[0]
    return lists, owners


def entry_times(c: dict[str, Any], name: str) -> tuple[np.ndarray, bool]:
    """Per entry, ns (``time_us`` x 1000) or, without ``time_us``, its position in its device trace."""
    dev, has = c["e_dev"], c["e_has_time"]
    timed = bool(has.any())
    if not timed:
        starts = np.searchsorted(dev, dev, side="left")  # entries are in device order
        return np.arange(len(dev), dtype=np.int64) - starts, False
    t = c["e_time"]
    if np.any(np.abs(t) >= LIMIT // 1000):
        raise ProfviewError("time_us out of range", source=name, position="device_traces",
                            expected="microseconds since the epoch")
    return t * 1000, True


def pair(dev: np.ndarray, addr: np.ndarray, kind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Replay of a dict keyed by (device, addr), in entry order: ``kind`` 1 opens the key (the
    latest open wins), 2 closes it if open, 3 reads it.  Returns, per row, the row of the open it
    closes or reads (-1: the key was not open), and per row whether it is the key's last open
    left open at the end."""
    n = len(dev)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, bool)
    order = np.lexsort((np.arange(n), addr, dev))
    d, a, k = dev[order], addr[order], kind[order]
    new = np.ones(n, bool)
    new[1:] = (d[1:] != d[:-1]) | (a[1:] != a[:-1])
    group = np.cumsum(new)
    marks = np.where(k != 3, np.arange(n), -1)
    last = np.maximum.accumulate(marks)
    prev = np.concatenate([[-1], last[:-1]]).astype(np.int64)
    ok = (prev >= 0) & (group[np.maximum(prev, 0)] == group) & (k[np.maximum(prev, 0)] == 1) & (k != 1)
    match = np.full(n, -1, np.int64)
    match[order[ok]] = order[prev[ok]]
    end = np.zeros(n, bool)
    is_end = np.append(new[1:], True)
    tail = last[is_end]  # per group: its last open or close, if any
    ok_tail = (tail >= 0) & (group[np.maximum(tail, 0)] == group[is_end]) & (k[np.maximum(tail, 0)] == 1)
    end[order[tail[ok_tail]]] = True
    return match, end


def _sorted_categorical(values: np.ndarray) -> pd.Categorical:
    uniques, codes = np.unique(values.astype(str) if values.dtype != object else values, return_inverse=True)
    return pd.Categorical.from_codes(codes.ravel(), categories=pd.Index(uniques))


def _index(labels: list[str]) -> pd.Index:
    """Categories as `_sorted_categorical` makes them (an empty one of objects)."""
    return pd.Index(labels) if labels else pd.Index(np.zeros(0, object))


def _labelled(parts: list[tuple[np.ndarray, Callable[[int], str]]], o: np.ndarray) -> pd.Categorical:
    """The Categorical of the concatenated parts taken at ``o``: each part integer keys, labelled by
    its function; categories the labels present, sorted (as `_sorted_categorical` of the labels),
    without a string per row."""
    keys: list[np.ndarray] = []
    labels: list[str] = []
    for values, label in parts:
        uniques, inverse = np.unique(values, return_inverse=True)
        keys.append(inverse.ravel().astype(np.int32) + len(labels))
        labels += [label(int(u)) for u in uniques.tolist()]
    cats = sorted(set(labels))
    rank = np.array([cats.index(x) for x in labels] or [0], np.int32)
    codes = rank[np.concatenate(keys)[o]] if keys else np.zeros(0, np.int32)
    present = np.bincount(codes, minlength=len(cats)) > 0
    if not present.all():  # a window leaves some out
        codes = (np.cumsum(present) - 1).astype(np.int32)[codes]
        cats = np.asarray(cats, dtype=object)[present].tolist()  # the labels still used, in order
    return pd.Categorical.from_codes(codes, categories=_index(cats))


def _curve(t: np.ndarray, v: np.ndarray, lo: int, end_level: int) -> tuple[np.ndarray, np.ndarray]:
    """Running level per instant (a (lo, 0) point first; stable in time), offset so it ends at
    ``end_level`` (kept at 0 if that would go negative)."""
    t = np.concatenate([[lo], t]).astype(np.int64)
    v = np.concatenate([[0], v]).astype(np.int64)
    order = np.argsort(t, kind="stable")
    t, level = t[order], np.cumsum(v[order])
    baseline = end_level - int(level[-1])
    if baseline + int(level.min()) < 0:
        baseline = -int(level.min())
    last = np.append(t[1:] != t[:-1], True)
    return t[last], level[last] + baseline


def clip_curve(t: np.ndarray, level: np.ndarray, ws: int, we: int) -> tuple[np.ndarray, np.ndarray]:
    """A step curve's points inside [ws, we], starting at ``ws`` with the level it had there
    (the last point at or before ``ws``) when it has one."""
    inside = (t >= ws) & (t <= we)
    before = np.flatnonzero(t < ws)
    if len(before) and not (len(t) > before[-1] + 1 and t[before[-1] + 1] == ws):
        return (np.concatenate([[ws], t[inside]]).astype(np.int64),
                np.concatenate([[level[before[-1]]], level[inside]]).astype(np.int64))
    return t[inside], level[inside]


def build(c: dict[str, Any], name: str, format_name: str, window: tuple[int, int] | None = None) -> Trace:
    """The Trace of a snapshot's columns (see ``torch_snapshot`` for the tables).  ``window`` =
    (start, end), relative to the trace's start, both included: only the events in it (instants
    in it, segment slices overlapping it), the allocations alive in it, and the curves' points
    in it after their level at its start.  Each table is made in a function of its own, so its
    per-entry temporaries are gone before the next one starts (the peak is what is kept)."""
    n = len(c["e_dev"])
    if n == 0 and len(c["s_dev"]) == 0:
        raise ProfviewError("the snapshot has no segments and no trace entries", source=name,
                            expected="a snapshot taken with memory history recording on")
    t, timed = entry_times(c, name)
    lo, hi = (int(t.min()), int(t.max())) if n else (0, 0)
    ws, we = (lo + window[0], lo + window[1]) if window is not None else (lo, hi)
    q = Quality()
    q.records_read = n + len(c["s_dev"]) + len(c["b_size"])
    lists, owners = stack_lists(c)
    s = _State(c, name, t, (lo, hi, ws, we), window is not None, q)

    # allocations: alloc opens (device, addr), free_completed closes, free_requested reads
    freed_by, requested, orphan, open_keys = _alloc_pairs(c)
    # segments from the trace: segment_alloc / map opens, segment_free / unmap closes
    closed, closed_from, seg_open = _segment_pairs(c, t)

    # snapshot segments and blocks
    b_dev = np.repeat(c["s_dev"], c["s_nblocks"])
    states = np.array(c["strings"], object)[c["b_state"]] if len(c["b_state"]) else np.zeros(0, object)
    in_use = np.isin(states, _IN_USE) if len(states) else np.zeros(0, bool)
    for state, count in zip(*np.unique(states[~in_use], return_counts=True), strict=True):
        q.skipped[f"{state} block (not allocated)"] += int(count)
    q.placed["allocations"] += int(in_use.sum())
    pre = in_use & np.array([(d, a) not in open_keys for d, a in zip(b_dev.tolist(), c["b_addr"].tolist(),
                                                                     strict=True)], bool)
    seg_slices = []
    for d, a, total in zip(c["s_dev"].tolist(), c["s_addr"].tolist(), c["s_total"].tolist(), strict=True):
        start, _ = seg_open.pop((d, a), (lo, total))
        seg_slices.append((d, a, total, start))
    seg_arr = np.array(seg_slices, np.int64).reshape(-1, 4)

    events, base = _events(s, closed, closed_from, seg_arr, owners)
    del closed, closed_from, seg_arr
    memory, counters, peaks, mem_devs = _curves(s, orphan, b_dev, in_use, pre)
    allocations = _allocations(s, freed_by, requested, orphan, b_dev, pre, owners, lists)
    del freed_by, requested, orphan
    devices = sorted({f"cuda:{d}" for d in mem_devs | set(c["s_dev"].tolist())})
    metadata: dict[str, Any] = {"peaks": {k: {**v, "time": v["time"] - base} for k, v in peaks.items()},
                                "devices": devices}
    if window is not None:
        metadata["window"] = (int(window[0]), int(window[1]))
    trace = make_trace(format_name, "ns" if timed else "step", events, q, base=base, memory=memory,
                       allocations=allocations, counters=counters, metadata=metadata)
    del events, memory, allocations, counters
    t -= base  # t is build's own (entry_times made it)
    trace._derived[ALLOCATOR_KEY] = _allocator_extra(c, t, lists)
    return trace


class _State:
    """What the table makers share: the columns, entry times, the trace's and the window's ends."""

    def __init__(self, c: dict[str, Any], name: str, t: np.ndarray, ends: tuple[int, int, int, int],
                 windowed: bool, q: Quality) -> None:
        self.c, self.name, self.t, self.windowed, self.q = c, name, t, windowed, q
        self.lo, self.hi, self.ws, self.we = ends
        self.n = len(t)


def _alloc_pairs(c: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, set[tuple[int, int]]]:
    """Per alloc entry its free_completed entry and its last free_requested entry (-1: none), the
    free_completed entries that close nothing, and the (device, addr) keys left open."""
    dev, act, addr = c["e_dev"], c["e_action"], c["e_addr"]
    n = len(dev)
    sel = np.flatnonzero((c["e_addr_null"] == 0) & np.isin(act, (ALLOC, FREE_REQUESTED, FREE_COMPLETED)))
    kind = np.select([act[sel] == ALLOC, act[sel] == FREE_COMPLETED], [1, 2], 3)
    match, end_open = pair(dev[sel], addr[sel], kind)
    freed_by = np.full(n, -1, np.int64)  # per alloc row: the free_completed entry
    requested = np.full(n, -1, np.int64)
    m = (kind == 2) & (match >= 0)
    freed_by[sel[match[m]]] = sel[m]
    r = np.flatnonzero((kind == 3) & (match >= 0))
    if len(r):  # the last free_requested of an allocation counts
        tgt = sel[match[r]]
        rev_u, rev_i = np.unique(tgt[::-1], return_index=True)
        requested[rev_u] = sel[r[::-1][rev_i]]
    orphan = (act == FREE_COMPLETED)
    orphan[sel[m]] = False
    open_keys = set(zip(dev[sel[end_open]].tolist(), addr[sel[end_open]].tolist(), strict=True))
    return freed_by, requested, orphan, open_keys


def _segment_pairs(c: dict[str, Any], t: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[Any, Any]]:
    """The segment_free / unmap entries that close a segment, the entries they close, and the
    segments left open ((device, addr) -> (time, size))."""
    dev, act, addr, size = c["e_dev"], c["e_action"], c["e_addr"], c["e_size"]
    ssel = np.flatnonzero((c["e_addr_null"] == 0) & np.isin(act, (SEG_ALLOC, SEG_FREE, SEG_MAP, SEG_UNMAP)))
    skind = np.where(np.isin(act[ssel], (SEG_ALLOC, SEG_MAP)), 1, 2)
    smatch, send_open = pair(dev[ssel], addr[ssel], skind)
    closed = ssel[(skind == 2) & (smatch >= 0)]
    closed_from = ssel[smatch[(skind == 2) & (smatch >= 0)]]
    so = ssel[send_open]
    seg_open = {(d, a): (tt, sz) for d, a, tt, sz in zip(dev[so].tolist(), addr[so].tolist(), t[so].tolist(),
                                                         size[so].tolist(), strict=True)}
    return closed, closed_from, seg_open


def _events(s: _State, closed: np.ndarray, closed_from: np.ndarray, seg_arr: np.ndarray,
            owners: np.ndarray) -> tuple[pd.DataFrame, int]:
    """Events: each entry, a slice after each closed segment, then the snapshot's segments."""
    c, t, n, q = s.c, s.t, s.n, s.q
    dev, act, size, addr = c["e_dev"], c["e_action"], c["e_size"], c["e_addr"]
    ns, nseg = len(closed), len(seg_arr)
    order_key = np.concatenate([np.arange(n) * 2, closed * 2 + 1, 2 * n + np.arange(nseg)])
    o = np.argsort(order_key, kind="stable")
    del order_key
    start = np.concatenate([t, t[closed_from], seg_arr[:, 3]])
    dur = np.concatenate([np.zeros(n, np.int64), t[closed] - t[closed_from], s.hi - seg_arr[:, 3]])
    kinds = np.concatenate([np.zeros(n, np.int8), np.ones(ns + nseg, np.int8)])
    q.placed["events"] += n + nseg
    if s.windowed:
        ws, we = s.ws, s.we
        keep = np.where(kinds == 0, (start >= ws) & (start <= we), (start <= we) & (start + dur >= ws))
        dropped = int((~keep[:n]).sum()) + int((~keep[n + ns:]).sum())  # closed segments: no record
        q.placed["events"] -= dropped
        if dropped:
            q.skipped["outside the window"] += dropped
        o = o[keep[o]]
        del keep
    ko = kinds[o]
    del kinds
    columns: dict[str, Any] = {
        "name": _labelled([(act, ACTIONS.__getitem__),
                           (np.concatenate([size[closed_from], seg_arr[:, 2]]), "segment {:,} B".format)], o),
        "category": pd.Categorical.from_codes(ko, categories=pd.Index(["allocator", "segment"])),
        "process": _labelled([(np.concatenate([dev, dev[closed], seg_arr[:, 0]]), "cuda:{}".format)], o),
        "thread": _labelled([(c["e_stream"], "stream {}".format), (np.zeros(ns + nseg, np.int8),
                                                                  lambda _: "segments")], o),
        "kind": pd.Categorical.from_codes(np.where(ko == 0, KINDS.index("instant"), KINDS.index("slice")),
                                          dtype=pd.CategoricalDtype(list(KINDS))),
        "start": start[o], "dur": dur[o],
    }
    del start, dur, ko
    columns["size"] = pd.arrays.IntegerArray(np.concatenate([size, size[closed_from], seg_arr[:, 2]])[o],
                                             np.zeros(len(o), bool))
    columns["addr"] = pd.arrays.IntegerArray(np.concatenate([addr, addr[closed], seg_arr[:, 1]])[o],
                                             np.concatenate([c["e_addr_null"] != 0,
                                                             np.zeros(ns + nseg, bool)])[o])
    frame = np.full(len(o), "", object)  # owners: entries only
    is_entry = o < n
    frame[is_entry] = owners[c["e_stack"][o[is_entry]]]
    del is_entry, o
    columns["frame"] = pd.arrays.StringArray(frame)
    del frame
    events, _, base = build_events(columns, q, base=s.lo, consume=True)
    return events, base


def _curves(s: _State, orphan: np.ndarray, b_dev: np.ndarray, in_use: np.ndarray, pre: np.ndarray
            ) -> tuple[pd.DataFrame | None, pd.DataFrame | None, dict[str, dict[str, int]], set[int]]:
    """The allocated (``memory``) and reserved (``counters``) curves, the peaks, the devices."""
    c, t, n, lo = s.c, s.t, s.n, s.lo
    dev, act, size = c["e_dev"], c["e_action"], c["e_size"]
    b_size = c["b_size"]
    end_allocated = _sums(b_dev[in_use], b_size[in_use])
    end_reserved = _sums(c["s_dev"], c["s_total"])
    ia = np.flatnonzero((act == ALLOC) | (act == FREE_COMPLETED))
    pts_seq = np.concatenate([ia * 2, np.flatnonzero(orphan) * 2 + 1, 2 * n + np.flatnonzero(pre)])
    pts_dev = np.concatenate([dev[ia], dev[orphan], b_dev[pre]])
    pts_t = np.concatenate([t[ia], np.full(int(orphan.sum()) + int(pre.sum()), lo)]).astype(np.int64)
    pts_v = np.concatenate([np.where(act[ia] == ALLOC, size[ia], -size[ia]), size[orphan], b_size[pre]])
    del ia
    po = np.argsort(pts_seq, kind="stable")
    del pts_seq
    pts_dev, pts_t, pts_v = pts_dev[po], pts_t[po], pts_v[po]
    del po
    ir = np.flatnonzero(np.isin(act, (SEG_ALLOC, SEG_FREE, SEG_MAP, SEG_UNMAP)))
    r_dev, r_t = dev[ir], t[ir]
    r_v = np.where(np.isin(act[ir], (SEG_ALLOC, SEG_MAP)), size[ir], -size[ir])
    for d in set(pts_dev.tolist()) | set(r_dev.tolist()):
        total = (int(np.abs(pts_v[pts_dev == d]).astype(object).sum())
                 + int(np.abs(r_v[r_dev == d]).astype(object).sum())
                 + end_allocated.get(d, 0) + end_reserved.get(d, 0))
        if total >= LIMIT:
            raise ProfviewError("byte counts add up beyond 2**62", source=s.name, position=f"device {d}",
                                expected="sizes in bytes of real allocations")
    mem_t, mem_d, mem_b = [], [], []
    peaks: dict[str, dict[str, int]] = {}
    devs = set(pts_dev.tolist())
    for d in sorted(devs):
        ct, level = _curve(pts_t[pts_dev == d], pts_v[pts_dev == d], lo, end_allocated.get(d, 0))
        if s.windowed:
            ct, level = clip_curve(ct, level, s.ws, s.we)
            if not len(ct):
                continue
        mem_t.append(ct)
        mem_b.append(level)
        mem_d += [f"cuda:{d}"] * len(ct)
        peaks[f"cuda:{d}"] = {"time": int(ct[int(np.argmax(level))]), "bytes": int(level.max())}
    del pts_dev, pts_t, pts_v
    counters = None
    if len(ir):
        parts = [(d, *_curve(r_t[r_dev == d], r_v[r_dev == d], lo, end_reserved.get(d, 0)))
                 for d in sorted(set(r_dev.tolist()))]
        if s.windowed:
            parts = [(d, *clip_curve(ct, v, s.ws, s.we)) for d, ct, v in parts]
        ct = np.concatenate([p[1] for p in parts])
        counters = pd.DataFrame({
            "time": ct, "process": pd.Categorical([f"cuda:{p[0]}" for p in parts for _ in p[1]]),
            "name": pd.Categorical(["reserved"] * len(ct)), "series": pd.Categorical(["bytes"] * len(ct)),
            "value": np.concatenate([p[2] for p in parts]).astype(np.float64)})
    memory = memory_frame(np.concatenate(mem_t), mem_d, np.concatenate(mem_b), "measured") if mem_t else None
    return memory, counters, peaks, devs


def _allocations(s: _State, freed_by: np.ndarray, requested: np.ndarray, orphan: np.ndarray,
                 b_dev: np.ndarray, pre: np.ndarray, owners: np.ndarray, lists: np.ndarray) -> pd.DataFrame:
    """Allocs and orphan frees in entry order, then blocks from before the recording."""
    c, t, lo, q = s.c, s.t, s.lo, s.q
    dev, act, size, addr, stack = c["e_dev"], c["e_action"], c["e_size"], c["e_addr"], c["e_stack"]
    rows = np.flatnonzero((act == ALLOC) | orphan)
    is_alloc = act[rows] == ALLOC
    fb, rq = freed_by[rows], requested[rows]
    npre = int(pre.sum())
    allocations = pd.DataFrame({
        "device": _labelled([(np.concatenate([dev[rows], b_dev[pre]]), "cuda:{}".format)],
                            np.arange(len(rows) + npre)),
        "address": pd.arrays.IntegerArray(np.concatenate([addr[rows], c["b_addr"][pre]]),
                                          np.concatenate([c["e_addr_null"][rows] != 0,
                                                          np.zeros(npre, bool)])),
        "bytes": np.concatenate([size[rows], c["b_size"][pre]]).astype(np.int64),
        "alloc_time": pd.array(np.concatenate([np.where(is_alloc, t[rows], lo), np.full(npre, lo)]),
                               dtype="Int64"),
        "free_time": pd.arrays.IntegerArray(
            np.concatenate([np.where(is_alloc, t[np.maximum(fb, 0)], t[rows]), np.zeros(npre, np.int64)]),
            np.concatenate([is_alloc & (fb < 0), np.ones(npre, bool)])),
        "owner": pd.array(np.concatenate([np.where(is_alloc, owners[stack[rows]], PREEXISTING),
                                          np.full(npre, PREEXISTING, object)]), dtype="string"),
        "frames": pd.Series(np.concatenate([lists[stack[rows]], lists[c["b_stack"][pre]]]), dtype=object),
        "requested_free": pd.arrays.IntegerArray(
            np.concatenate([t[np.maximum(rq, 0)] - lo, np.zeros(npre, np.int64)]),
            np.concatenate([rq < 0, np.ones(npre, bool)])),
    })
    if s.windowed:
        alive = ((allocations["alloc_time"] <= s.we) & (allocations["free_time"].isna()
                                                        | (allocations["free_time"] >= s.ws))).to_numpy(bool)
        gone = int((~alive[len(rows):]).sum())  # blocks from before the recording are records
        q.placed["allocations"] -= gone
        if gone:
            q.skipped["outside the window"] += gone
        allocations = allocations[alive].reset_index(drop=True)
    return allocations


def _sums(keys: np.ndarray, values: np.ndarray) -> dict[int, int]:
    out: dict[int, int] = {}
    for k, v in zip(keys.tolist(), values.tolist(), strict=True):
        out[k] = out.get(k, 0) + v
    return out


def _allocator_extra(c: dict[str, Any], t: np.ndarray, lists: np.ndarray) -> dict[str, Any]:
    """What ``analysis.allocator`` replays: the raw trace (times as the tables') and the snapshot's
    segments and blocks, as arrays."""
    return {"entries": {"device": c["e_dev"], "action": c["e_action"], "time": t, "size": c["e_size"],
                        "addr": c["e_addr"], "has_addr": c["e_addr_null"] == 0, "stack": c["e_stack"],
                        "device_free": np.where(c["e_dfree_null"] == 1, -1, c["e_dfree"])},
            "segments": {"device": c["s_dev"], "address": c["s_addr"], "total": c["s_total"],
                         "nblocks": c["s_nblocks"]},
            "blocks": {"size": c["b_size"], "address": c["b_addr"],
                       "state": np.array(c["strings"], object)[c["b_state"]] if len(c["b_state"])
                       else np.zeros(0, object), "stack": c["b_stack"]},
            "stacks": lists}
