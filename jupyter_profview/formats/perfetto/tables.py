"""From the walk's `Columns` to the Trace's tables: times converted to the trace clock, lanes
labelled, flows linked (Perfetto's ``FlowTracker``: in time order, a ``flow_ids`` entry begins a
flow or, where one with its id is open, steps it (an arrow from its last event); a
``terminating_flow_ids`` entry ends an open one with an arrow and closes it)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ... import _native
from ...model import Quality
from ...schema import KINDS
from .reader import INSTANT, UNMATCHED_END
from .schema import BUILTIN_COUNTER_NAMES
from .state import Columns, Track

NO_PROCESS = "Global"


class Labels:
    """(process, thread) labels of tracks: a thread track is ``name (tid)`` (``thread <tid>``
    unnamed) in its process; a process is its name (``name (pid)`` where two share it,
    ``pid <pid>`` unnamed); any other track is its name in the process of its nearest ancestor
    with one (``Global`` where none)."""

    def __init__(self, tracks: list[Track]) -> None:
        self.tracks = tracks
        self.by_uuid = {t.key: t for t in tracks if isinstance(t.key, int)}
        names: dict[int, str] = {}
        for t in tracks:
            if t.pid is not None and t.process_name:
                names.setdefault(t.pid, t.process_name)
        counts: dict[str, int] = {}
        for name in names.values():
            counts[name] = counts.get(name, 0) + 1
        self.process = {pid: name if counts[name] == 1 else f"{name} ({pid})" for pid, name in names.items()}

    def _pid(self, track: Track) -> int | None:
        seen = 0
        while track.pid is None and track.parent in self.by_uuid and seen < 64:
            track = self.by_uuid[track.parent]
            seen += 1
        return track.pid

    def process_of(self, track: Track) -> str:
        pid = self._pid(track)
        if pid is None:
            return NO_PROCESS
        return self.process.get(pid, f"pid {pid}")

    def thread_of(self, track: Track) -> str:
        if track.tid is not None:
            return f"{track.thread_name} ({track.tid})" if track.thread_name else f"thread {track.tid}"
        if track.name:
            return track.name
        if track.counter and track.counter_type in BUILTIN_COUNTER_NAMES:
            return BUILTIN_COUNTER_NAMES[track.counter_type]
        if track.pid is not None and track.tid is None:
            return "process"
        return f"track {track.key}"

    def parent_thread(self, track: Track) -> str | None:
        parent = self.by_uuid.get(track.parent)
        return self.thread_of(parent) if parent is not None and parent.tid is not None else None


def counter_times(c: Columns) -> tuple[np.ndarray, np.ndarray]:
    """Counter sample times in the trace clock, and the mask of those whose clock has no path
    (``c.ct_time`` converted in place: read once)."""
    return c.clocks.to_trace(np.frombuffer(c.ct_time, np.int64), np.frombuffer(c.ct_dom, np.int16),
                             in_place=True)


def rematch_out_of_order(c: Columns, start: np.ndarray, end_time: np.ndarray, quality: Quality) -> np.ndarray:
    """Perfetto matches begins and ends in timestamp order (its sorter runs first); the walk
    matched them in file order, the same wherever a track's begins and ends come in time order.
    The tracks where they do not (several sequences on one track, explicit clocks) are matched
    again here in time order (stable).  Returns each walk row's end (-1 still open); ``end`` and
    ``end_dom`` of the columns are left as they were.  In C where the native library is there
    (``perfetto_match.c``, the same rule without the temporary copies of every item)."""
    ends = np.frombuffer(c.end_row, np.int32)
    closed_by = np.full(len(c.ev_kind), -1, np.int32)  # walk row -> index of its end record
    matched = ends >= 0
    closed_by[ends[matched]] = np.flatnonzero(matched)
    end_track = np.frombuffer(c.end_track, np.int32)
    if _native.available():
        walk_rows = (np.frombuffer(c.ev_track, np.int32), np.frombuffer(c.ev_order, np.int32), start,
                     np.frombuffer(c.ev_stacked, np.int8))
        bad, unmatched = _native.perfetto_rematch(walk_rows, (end_track, np.frombuffer(c.end_order, np.int32),
                                                              end_time), len(c.tracks), closed_by)
        bad_tracks = np.flatnonzero(bad)
        if not len(bad_tracks):
            return closed_by
    else:
        rows = np.flatnonzero(np.frombuffer(c.ev_stacked, np.int8) == 1)
        got = _rematch_python(c, rows, start, end_time, closed_by)
        if got is None:
            return closed_by
        bad_tracks, unmatched = got
    before = int((ends[np.isin(end_track, bad_tracks)] < 0).sum())
    quality.skipped[UNMATCHED_END] += unmatched - before
    quality.placed["events"] -= unmatched - before
    if not quality.skipped[UNMATCHED_END]:
        del quality.skipped[UNMATCHED_END]
    return closed_by


def _rematch_python(c: Columns, rows: np.ndarray, start: np.ndarray, end_time: np.ndarray,
                    closed_by: np.ndarray) -> tuple[np.ndarray, int] | None:
    """`rematch_out_of_order`'s matching in numpy and Python: the tracks out of time order
    (None where none is) and the ends left unmatched on them."""
    ends = np.frombuffer(c.end_row, np.int32)
    track = np.concatenate([np.frombuffer(c.ev_track, np.int32)[rows], np.frombuffer(c.end_track, np.int32)])
    order = np.concatenate([np.frombuffer(c.ev_order, np.int32)[rows], np.frombuffer(c.end_order, np.int32)])
    when = np.concatenate([start[rows], end_time])
    by_file = np.lexsort((order, track))
    t, w = track[by_file], when[by_file]
    bad_tracks = np.unique(t[1:][(t[1:] == t[:-1]) & (w[1:] < w[:-1])])
    if not len(bad_tracks):
        return None
    is_begin = np.concatenate([np.ones(len(rows), bool), np.zeros(len(ends), bool)])
    ident = np.concatenate([rows, np.arange(len(ends))])
    pick = np.flatnonzero(np.isin(track, bad_tracks))
    pick = pick[np.lexsort((order[pick], when[pick]))]
    stacks: dict[int, list[int]] = {}
    unmatched = 0
    for k in pick.tolist():
        if is_begin[k]:
            closed_by[ident[k]] = -1
            stacks.setdefault(int(track[k]), []).append(int(ident[k]))
        else:
            stack = stacks.get(int(track[k]))
            if stack:
                closed_by[stack.pop()] = ident[k]
            else:
                unmatched += 1
    return bad_tracks, unmatched


def event_columns(c: Columns, labels: Labels, quality: Quality,
                  counter_end: int | None) -> tuple[dict[str, Any], np.ndarray | None]:
    """The columns for `build_events` and the walk rows they hold (None: all of them; events
    whose clock has no path to the trace clock are dropped and counted).  ``counter_end``: the
    last counter sample's time (None: no samples).  The walk's time columns are converted in
    place and handed over where no event is dropped (no copies): read them once."""
    clocks = c.clocks
    start, lost = clocks.to_trace(np.frombuffer(c.ev_start, np.int64),
                                  np.frombuffer(c.ev_start_dom, np.int16), in_place=True)
    stacked = np.frombuffer(c.ev_stacked, np.int8) == 1
    # X slices and instants: their own end; begins: the end record that closes them
    end_dom = np.frombuffer(c.ev_end_dom, np.int16).copy()
    end_dom[stacked] = 0
    end, end_lost = clocks.to_trace(np.frombuffer(c.ev_end, np.int64), end_dom, in_place=True)
    del end_dom
    lost |= end_lost
    del end_lost
    end_time, end_time_lost = clocks.to_trace(np.frombuffer(c.end_time, np.int64),
                                              np.frombuffer(c.end_dom, np.int16), in_place=True)
    closed_by = rematch_out_of_order(c, start, end_time, quality)
    has_end = stacked & (closed_by >= 0)
    closing = closed_by[has_end]
    del closed_by
    end[has_end] = end_time[closing]
    lost[has_end] |= end_time_lost[closing]
    del closing, end_time, end_time_lost
    open_ = stacked & ~has_end
    del stacked
    trace_end = max([int(x.max()) for x in (start, end[~open_]) if len(x)] +
                    ([] if counter_end is None else [counter_end]), default=0)
    incomplete = open_ & ~lost
    del open_
    end[incomplete] = trace_end
    quality.unmatched_begin += int(incomplete.sum())
    keep: np.ndarray | None = None  # every walk row kept: the columns as they are
    if lost.any():  # the packets of those events: a begin and its end, or one
        packets = int(lost.sum() + (lost & has_end).sum())
        quality.placed["events"] -= packets
        quality.skipped["event in a clock with no snapshot linking it to the trace clock"] += packets
        keep = np.flatnonzero(~lost)
    del lost, has_end

    def kept(values: np.ndarray) -> np.ndarray:
        return values if keep is None else values[keep]

    tracks = kept(np.frombuffer(c.ev_track, np.int32))
    used = np.flatnonzero(np.bincount(tracks, minlength=1))  # track codes are small: counted
    proc = np.zeros(len(c.tracks), np.int32)
    thread = np.zeros(len(c.tracks), np.int32)
    proc_labels: dict[str, int] = {}
    thread_labels: dict[str, int] = {}
    for t in used.tolist():
        info = c.tracks[t]
        proc[t] = proc_labels.setdefault(labels.process_of(info), len(proc_labels))
        thread[t] = thread_labels.setdefault(labels.thread_of(info), len(thread_labels))
    strings = pd.Index(c.strings)
    kind = kept(np.frombuffer(c.ev_kind, np.int8))
    start, end = kept(start), kept(end)
    end -= start  # the durations, in place
    columns: dict[str, Any] = {
        "name": pd.Categorical.from_codes(kept(np.frombuffer(c.ev_name, np.int32)), categories=strings),
        "category": pd.Categorical.from_codes(kept(np.frombuffer(c.ev_cat, np.int32)), categories=strings),
        "process": pd.Categorical.from_codes(proc[tracks], categories=pd.Index(list(proc_labels))),
        "thread": pd.Categorical.from_codes(thread[tracks], categories=pd.Index(list(thread_labels))),
        "start": start,
        "dur": end,
        "kind": pd.Categorical.from_codes(  # codes: no string per event
            np.where(kind == INSTANT, KINDS.index("instant"), KINDS.index("slice")).astype(np.int8),
            dtype=pd.CategoricalDtype(list(KINDS))),
        "incomplete": kept(incomplete),
    }
    if c.args:
        has = np.zeros(len(c.ev_kind), bool)
        rows = getattr(c.args, "row_array", None)  # the native walk's args: rows as an array
        has[rows() if rows is not None else np.fromiter(c.args, np.int64, len(c.args))] = True
        columns["has_args"] = kept(has)
    return columns, keep


def counter_frame(c: Columns, labels: Labels, quality: Quality,
                  times: tuple[np.ndarray, np.ndarray] | None = None) -> pd.DataFrame | None:
    """One row per sample: ``name`` the counter track's name, ``series`` the thread it belongs
    to (thread-scoped counters such as Chrome's thread time) or the name again.  ``times``:
    `counter_times` where computed already."""
    if not len(c.ct_track):
        return None
    ct_time, ct_lost = times if times is not None else counter_times(c)
    track = np.frombuffer(c.ct_track, np.int32)
    value = np.frombuffer(c.ct_value, np.float64)
    if ct_lost.any():
        c.notes["counter samples in a clock with no snapshot linking it to the trace clock"] += \
            int(ct_lost.sum())
        keep = ~ct_lost
        track, value, ct_time = track[keep], value[keep], ct_time[keep]
    used = np.flatnonzero(np.bincount(track, minlength=1)).tolist()  # counted, not sorted
    slot = np.zeros(max(len(c.tracks), 1), np.int32)  # track code -> row of `used`
    slot[used] = np.arange(len(used))
    columns: dict[str, Any] = {}
    labels_of = {
        "process": [labels.process_of(c.tracks[t]) for t in used],
        "name": [labels.thread_of(c.tracks[t]) for t in used],
    }
    labels_of["series"] = [labels.parent_thread(c.tracks[t]) or name
                           for t, name in zip(used, labels_of["name"], strict=True)]
    row = slot[track]
    for key, values in labels_of.items():  # codes per sample, never one string per sample
        uniq = list(dict.fromkeys(values))
        width: Any = np.int8 if len(uniq) < 1 << 7 else np.int16 if len(uniq) < 1 << 15 else np.int32
        code: np.ndarray = np.array([uniq.index(v) for v in values], width) if values else np.zeros(0, width)
        columns[key] = pd.Categorical.from_codes(code[row], categories=pd.Index(uniq))
    del row
    return pd.DataFrame({  # the arrays as they are (fresh or the walk's own): no copies
        "time": ct_time,
        "process": columns["process"],
        "name": columns["name"],
        "series": columns["series"],
        "value": value,
    }, copy=False)


def link_flows(ids: np.ndarray, terminating: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The arrows (source entry, target entry) of flow entries taken in ``order`` (time order),
    by the rule of the module docstring, in the order of their targets: an entry is linked from
    the previous entry with its id (in time order) where that one does not terminate (it began
    or stepped the flow, so the flow is open); after a terminating entry, closed or skipped,
    the flow is not open.  Vectorised: no Python object per entry."""
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    by_id = np.lexsort((rank, ids))  # each id's entries together, in time order
    same = ids[by_id[1:]] == ids[by_id[:-1]]
    linked = same & (terminating[by_id[:-1]] == 0)
    src, dst = by_id[:-1][linked], by_id[1:][linked]
    in_time = np.argsort(rank[dst], kind="stable")
    return src[in_time].astype(np.int64), dst[in_time].astype(np.int64)


def flow_frame(c: Columns, event_of_row: np.ndarray, starts: np.ndarray, ends: np.ndarray,
               names: pd.Categorical, cats: pd.Categorical, base: int, quality: Quality) -> pd.DataFrame:
    """Arrows of the v2 flows (``event_of_row``: event id of each walk row, -1 if dropped;
    ``starts``/``ends``: absolute times of each flow entry's event, for the time order)."""
    rows = np.frombuffer(c.flow_row, np.int32)
    ids = np.frombuffer(c.flow_id, np.uint64)
    terminating = np.frombuffer(c.flow_end, np.int8)
    at = np.where(np.frombuffer(c.flow_at_end, np.int8) == 1, ends, starts)
    src_k, dst_k = link_flows(ids, terminating, np.argsort(at, kind="stable"))
    used = np.zeros(len(rows), bool)
    used[src_k] = used[dst_k] = True
    fids = ids[dst_k]
    keep = (event_of_row[rows[src_k]] >= 0) & (event_of_row[rows[dst_k]] >= 0)
    quality.unpaired_flows += int((~used).sum())
    s, d = src_k[keep], dst_k[keep]
    source = event_of_row[rows[s]] if len(s) else np.zeros(0, np.int64)
    target = event_of_row[rows[d]] if len(d) else np.zeros(0, np.int64)
    return pd.DataFrame({
        "flow_id": pd.array(fids[keep].astype(str), dtype="string"),
        "name": names.take(source) if len(source) else pd.Categorical([]),
        "category": cats.take(source) if len(source) else pd.Categorical([]),
        "source": source.astype(np.int64),
        "target": target.astype(np.int64),
        "start": (starts[s] - base).astype(np.int64) if len(s) else np.zeros(0, np.int64),
        "end": (starts[d] - base).astype(np.int64) if len(d) else np.zeros(0, np.int64),
    })
