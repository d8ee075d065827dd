"""The tables of a CUDA memory snapshot from its columns (`snapshot_columns`): the allocator
trace replayed with array operations, so a snapshot of millions of entries costs no Python
object per entry.  The semantics are those documented in ``torch_snapshot``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..builder import build_events, make_trace
from ..errors import ProfviewError
from ..model import Quality, Trace, memory_frame
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
    in it after their level at its start."""
    n = len(c["e_dev"])
    if n == 0 and len(c["s_dev"]) == 0:
        raise ProfviewError("the snapshot has no segments and no trace entries", source=name,
                            expected="a snapshot taken with memory history recording on")
    t, timed = entry_times(c, name)
    lo, hi = (int(t.min()), int(t.max())) if n else (0, 0)
    ws, we = (lo + window[0], lo + window[1]) if window is not None else (lo, hi)
    q = Quality()
    q.records_read = n + len(c["s_dev"]) + len(c["b_size"])
    dev, act, size, addr = c["e_dev"], c["e_action"], c["e_size"], c["e_addr"]
    has_addr = c["e_addr_null"] == 0
    lists, owners = stack_lists(c)
    stack = c["e_stack"]

    # allocations: alloc opens (device, addr), free_completed closes, free_requested reads
    sel = np.flatnonzero(has_addr & ((act == ALLOC) | (act == FREE_REQUESTED) | (act == FREE_COMPLETED)))
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

    # segments from the trace: segment_alloc / map opens, segment_free / unmap closes
    ssel = np.flatnonzero(has_addr & np.isin(act, (SEG_ALLOC, SEG_FREE, SEG_MAP, SEG_UNMAP)))
    skind = np.where(np.isin(act[ssel], (SEG_ALLOC, SEG_MAP)), 1, 2)
    smatch, send_open = pair(dev[ssel], addr[ssel], skind)
    closed = ssel[(skind == 2) & (smatch >= 0)]
    closed_from = ssel[smatch[(skind == 2) & (smatch >= 0)]]
    so = ssel[send_open]
    seg_open = {(d, a): (tt, s) for d, a, tt, s in zip(dev[so].tolist(), addr[so].tolist(), t[so].tolist(),
                                                       size[so].tolist(), strict=True)}

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

    # events: each entry, a slice after each closed segment, then the snapshot's segments
    ns, nseg = len(closed), len(seg_slices)
    seg_arr = np.array(seg_slices, np.int64).reshape(-1, 4)
    order_key = np.concatenate([np.arange(n) * 2, closed * 2 + 1, 2 * n + np.arange(nseg)])
    names = np.concatenate([np.array(ACTIONS, object)[act],
                            np.array([f"segment {s:,} B" for s in size[closed_from].tolist()], object),
                            np.array([f"segment {s:,} B" for s in seg_arr[:, 2].tolist()], object)])
    ev_dev = np.concatenate([dev, dev[closed], seg_arr[:, 0]])
    thread = np.concatenate([np.char.add("stream ", c["e_stream"].astype(str)).astype(object) if n
                             else np.zeros(0, object), np.full(ns + nseg, "segments", object)])
    start = np.concatenate([t, t[closed_from], seg_arr[:, 3]])
    dur = np.concatenate([np.zeros(n, np.int64), t[closed] - t[closed_from], hi - seg_arr[:, 3]])
    ev_size = np.concatenate([size, size[closed_from], seg_arr[:, 2]])
    ev_addr = np.concatenate([addr, addr[closed], seg_arr[:, 1]])
    ev_null = np.concatenate([~has_addr, np.zeros(ns + nseg, bool)])
    frame = np.concatenate([owners[stack], np.full(ns + nseg, "", object)])
    kinds = np.concatenate([np.zeros(n, np.int8), np.ones(ns + nseg, np.int8)])
    o = np.argsort(order_key, kind="stable")
    q.placed["events"] += n + nseg
    if window is not None:
        keep = np.where(kinds == 0, (start >= ws) & (start <= we), (start <= we) & (start + dur >= ws))
        dropped = int((~keep[:n]).sum()) + int((~keep[n + ns:]).sum())  # closed segments: no record
        q.placed["events"] -= dropped
        if dropped:
            q.skipped["outside the window"] += dropped
        o = o[keep[o]]
    columns: dict[str, Any] = {
        "name": _sorted_categorical(names[o]),
        "category": pd.Categorical.from_codes(kinds[o], categories=pd.Index(["allocator", "segment"])),
        "process": _sorted_categorical(np.char.add("cuda:", ev_dev[o].astype(str)).astype(object)),
        "thread": _sorted_categorical(thread[o]),
        "kind": pd.Categorical.from_codes(kinds[o], categories=pd.Index(["instant", "slice"])).astype(str),
        "start": start[o], "dur": dur[o],
        "size": pd.arrays.IntegerArray(ev_size[o], np.zeros(len(o), bool)),
        "addr": pd.arrays.IntegerArray(ev_addr[o], ev_null[o]),
        "frame": pd.array(frame[o], dtype="string"),
    }

    # allocated / reserved curves
    b_size = c["b_size"]
    end_allocated = _sums(b_dev[in_use], b_size[in_use])
    end_reserved = _sums(c["s_dev"], c["s_total"])
    ia = np.flatnonzero((act == ALLOC) | (act == FREE_COMPLETED))
    pts_seq = np.concatenate([ia * 2, np.flatnonzero(orphan) * 2 + 1, 2 * n + np.flatnonzero(pre)])
    pts_dev = np.concatenate([dev[ia], dev[orphan], b_dev[pre]])
    pts_t = np.concatenate([t[ia], np.full(int(orphan.sum()) + int(pre.sum()), lo)]).astype(np.int64)
    pts_v = np.concatenate([np.where(act[ia] == ALLOC, size[ia], -size[ia]), size[orphan], b_size[pre]])
    po = np.argsort(pts_seq, kind="stable")
    pts_dev, pts_t, pts_v = pts_dev[po], pts_t[po], pts_v[po]
    ir = np.flatnonzero(np.isin(act, (SEG_ALLOC, SEG_FREE, SEG_MAP, SEG_UNMAP)))
    r_dev, r_t = dev[ir], t[ir]
    r_v = np.where(np.isin(act[ir], (SEG_ALLOC, SEG_MAP)), size[ir], -size[ir])
    for d in set(pts_dev.tolist()) | set(r_dev.tolist()):
        total = (int(np.abs(pts_v[pts_dev == d]).astype(object).sum())
                 + int(np.abs(r_v[r_dev == d]).astype(object).sum())
                 + end_allocated.get(d, 0) + end_reserved.get(d, 0))
        if total >= LIMIT:
            raise ProfviewError("byte counts add up beyond 2**62", source=name, position=f"device {d}",
                                expected="sizes in bytes of real allocations")
    mem_t, mem_d, mem_b = [], [], []
    peaks: dict[str, dict[str, int]] = {}
    for d in sorted(set(pts_dev.tolist())):
        ct, level = _curve(pts_t[pts_dev == d], pts_v[pts_dev == d], lo, end_allocated.get(d, 0))
        if window is not None:
            ct, level = clip_curve(ct, level, ws, we)
            if not len(ct):
                continue
        mem_t.append(ct)
        mem_b.append(level)
        mem_d += [f"cuda:{d}"] * len(ct)
        peaks[f"cuda:{d}"] = {"time": int(ct[int(np.argmax(level))]), "bytes": int(level.max())}
    counters = None
    if len(ir):
        parts = [(d, *_curve(r_t[r_dev == d], r_v[r_dev == d], lo, end_reserved.get(d, 0)))
                 for d in sorted(set(r_dev.tolist()))]
        if window is not None:
            parts = [(d, *clip_curve(ct, v, ws, we)) for d, ct, v in parts]
        ct = np.concatenate([p[1] for p in parts])
        counters = pd.DataFrame({
            "time": ct, "process": pd.Categorical([f"cuda:{p[0]}" for p in parts for _ in p[1]]),
            "name": pd.Categorical(["reserved"] * len(ct)), "series": pd.Categorical(["bytes"] * len(ct)),
            "value": np.concatenate([p[2] for p in parts]).astype(np.float64)})

    events, _, base = build_events(columns, q, base=lo)

    # allocations: allocs and orphan frees in entry order, then blocks from before the recording
    rows = np.flatnonzero((act == ALLOC) | orphan)
    is_alloc = act[rows] == ALLOC
    fb, rq = freed_by[rows], requested[rows]
    allocations = pd.DataFrame({
        "device": _sorted_categorical(
            np.char.add("cuda:", np.concatenate([dev[rows], b_dev[pre]]).astype(str)).astype(object)),
        "address": pd.arrays.IntegerArray(np.concatenate([addr[rows], c["b_addr"][pre]]),
                                          np.concatenate([~has_addr[rows], np.zeros(int(pre.sum()), bool)])),
        "bytes": np.concatenate([size[rows], b_size[pre]]).astype(np.int64),
        "alloc_time": pd.array(np.concatenate([np.where(is_alloc, t[rows], lo), np.full(int(pre.sum()), lo)]),
                               dtype="Int64"),
        "free_time": pd.arrays.IntegerArray(
            np.concatenate([np.where(is_alloc, t[np.maximum(fb, 0)], t[rows]),
                            np.zeros(int(pre.sum()), np.int64)]),
            np.concatenate([is_alloc & (fb < 0), np.ones(int(pre.sum()), bool)])),
        "owner": pd.array(np.concatenate([np.where(is_alloc, owners[stack[rows]], PREEXISTING),
                                          np.full(int(pre.sum()), PREEXISTING, object)]), dtype="string"),
        "frames": pd.Series(np.concatenate([lists[stack[rows]], lists[c["b_stack"][pre]]]), dtype=object),
        "requested_free": pd.arrays.IntegerArray(
            np.concatenate([t[np.maximum(rq, 0)] - lo, np.zeros(int(pre.sum()), np.int64)]),
            np.concatenate([rq < 0, np.ones(int(pre.sum()), bool)])),
    })
    if window is not None:
        alive = ((allocations["alloc_time"] <= we) & (allocations["free_time"].isna()
                                                      | (allocations["free_time"] >= ws))).to_numpy(bool)
        gone = int((~alive[len(rows):]).sum())  # blocks from before the recording are records
        q.placed["allocations"] -= gone
        if gone:
            q.skipped["outside the window"] += gone
        allocations = allocations[alive].reset_index(drop=True)
    memory = memory_frame(np.concatenate(mem_t), mem_d, np.concatenate(mem_b), "measured") if mem_t else None
    devices = sorted({f"cuda:{d}" for d in set(pts_dev.tolist()) | set(c["s_dev"].tolist())})
    metadata: dict[str, Any] = {"peaks": {k: {**v, "time": v["time"] - base} for k, v in peaks.items()},
                                "devices": devices}
    if window is not None:
        metadata["window"] = (int(window[0]), int(window[1]))
    trace = make_trace(format_name, "ns" if timed else "step", events, q, base=base, memory=memory,
                       allocations=allocations, counters=counters, metadata=metadata)
    trace._derived[ALLOCATOR_KEY] = _allocator_extra(c, t - base, lists)
    return trace


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
