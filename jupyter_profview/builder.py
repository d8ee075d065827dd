"""Shared assembly of the ``events`` table: rebasing, lanes, nesting, self
time, phases and the final ordering.  Every format loader ends here, so the
invariants documented in [jupyter_profview.model][] hold for all of them.

Nesting, overlap lanes and self time: `jupyter_profview.nesting`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from . import phase_rules
from .model import (
    KINDS,
    OVERLAP_TAG,
    PHASES,
    Quality,
    Trace,
    TraceInfo,
    empty_allocations,
    empty_flows,
    empty_launches,
    empty_memory,
    empty_nodes,
)
from .nesting import PYTHON_FRAME, fill_down, nest, nest_order, self_times, tree_depth


def _categorical(values: Any) -> pd.Categorical:
    if isinstance(values, pd.Categorical):
        return values
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype):
        return values.array  # type: ignore[return-value]
    return pd.Categorical(values)


def build_events(
    columns: dict[str, Any],
    quality: Quality,
    *,
    base: int | None = None,
    phase_rules_extra: Sequence[phase_rules.PhaseRule] = (),
    consume: bool = False,
) -> tuple[pd.DataFrame, np.ndarray, int]:
    """Assemble the ``events`` table from a loader's raw columns.

    ``columns`` holds ``name``, ``category``, ``process``, ``thread`` (strings
    or Categoricals), ``start`` and ``dur`` (int64, absolute, in the trace's
    unit), optionally ``kind`` and ``phase``, and any extra per-event columns.
    Returns ``(events, raw_index, base)`` where ``raw_index[id]`` is the input
    row of event ``id`` and ``base`` was subtracted from every start.

    ``consume=True``: the caller hands the columns over; they are taken out of
    ``columns`` as they are used and ``start``/``dur`` are rebased / clipped in
    place, so that the input and the table are not held whole at once.
    """
    if consume and isinstance(columns["start"], np.ndarray) and columns["start"].dtype == np.int64:
        start = columns.pop("start")
    else:
        start = np.array(columns.pop("start") if consume else columns["start"], dtype=np.int64)
    dur = _clipped_durations(columns.pop("dur") if consume else columns["dur"], quality, in_place=consume)
    if base is None:
        base = int(start.min()) if len(start) else 0
    start -= base

    process = _categorical(columns["process"])
    thread = _categorical(columns["thread"])
    nthreads = len(thread.categories) + 1
    pair_values, track_code = dense_codes(process.codes.astype(np.int64) * nthreads + thread.codes)
    if len(pair_values) < 2**31:  # track codes as int32 through the nesting (less memory at its peak)
        track_code = track_code.astype(np.int32)
    depth, parent, lane, self_time = _nest_events(track_code, start, dur, _python_frames(columns["category"]))
    quality.overlaps += int((lane > 0).sum())
    track = _track_labels(process, thread, pair_values, track_code, lane)
    del track_code, lane

    name = _categorical(columns["name"])
    phase_codes = _phase_codes(columns, name, depth, parent, phase_rules_extra)
    quality.unknown_phases += int((phase_codes == PHASES.index("other")).sum())

    if consume:
        del columns["process"], columns["thread"]
    final = _start_depth_order(start, depth)
    inverse = np.empty(len(final), np.int64)
    inverse[final] = np.arange(len(final))
    parent = parent[final]
    parent_final = np.where(parent >= 0, inverse[np.maximum(parent, 0)], -1)
    del parent, inverse

    data: dict[str, Any] = {"name": name[final]}
    del name
    data["category"] = _categorical(columns.pop("category") if consume else columns["category"])[final]
    data["phase"] = pd.Categorical.from_codes(phase_codes[final], dtype=pd.CategoricalDtype(list(PHASES)))
    data["process"], data["thread"], data["track"] = process[final], thread[final], track[final]
    del process, thread, track, phase_codes
    data["kind"] = _kinds(columns.pop("kind", None) if consume else columns.get("kind"), len(final))[final]
    data["start"] = start[final]
    del start
    data["dur"] = dur[final]
    del dur
    data["depth"] = depth[final]
    data["parent"] = parent_final
    data["self"] = self_time[final]
    del depth, self_time
    if consume:
        del columns["name"]
        columns.pop("phase", None)
    _take_extra_columns(data, columns, final, consume)
    events = pd.DataFrame(data, copy=False)  # fresh arrays: no copy, no consolidation
    events.index.name = "id"
    return events, final, base


def _clipped_durations(values: Any, quality: Quality, in_place: bool = False) -> np.ndarray:
    """``dur`` as a fresh int64 array (``values`` itself with ``in_place``, when
    it is one), negatives clipped to 0 (and counted)."""
    if in_place and isinstance(values, np.ndarray) and values.dtype == np.int64 and values.flags.writeable:
        dur = values
    else:
        dur = np.array(values, dtype=np.int64)
    negative = dur < 0
    if negative.any():
        quality.negative_durations += int(negative.sum())
        dur[negative] = 0
    return dur


def _python_frames(category: Any) -> np.ndarray | None:
    """Mask of the Python frames (category `PYTHON_FRAME`),
    None where there are none."""
    cat = _categorical(category)
    if PYTHON_FRAME not in cat.categories:
        return None
    mask: np.ndarray = cat.codes == cat.categories.get_loc(PYTHON_FRAME)
    return mask


def _nest_events(track_code: np.ndarray, start: np.ndarray, dur: np.ndarray,
                 python: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``depth``, ``parent`` (input positions), overlap ``lane`` and ``self`` per
    input event, from `nest` on the events in
    nesting order (``python``: the Python frames, for self time)."""
    n = len(start)
    order = nest_order(track_code, start, dur)
    if n < 2**31:  # positions as int32: the same scatters, half the memory while nesting
        order = order.astype(np.int32)
    sorted_start = start[order]
    sorted_track = track_code[order]
    sorted_end = dur[order]
    sorted_end += sorted_start
    depth_s, parent_s, lane_s = nest(sorted_track, sorted_start, sorted_end)
    depth = np.empty(n, np.int32)
    depth[order] = tree_depth(depth_s, parent_s, lane_s)
    del depth_s
    own = self_times(sorted_track, sorted_start, sorted_end, parent_s, lane_s,
                     None if python is None else python[order])
    del sorted_start, sorted_track, sorted_end  # before the scatter: not held with its output
    self_time = np.empty(n, np.int64)
    self_time[order] = own
    del own
    parent = np.full(n, -1, np.int64)
    has_parent = parent_s >= 0
    parent[order[has_parent]] = order[parent_s[has_parent]]
    lane = np.empty(n, np.int32)
    lane[order] = lane_s
    return depth, parent, lane, self_time


def _phase_codes(columns: dict[str, Any], name: pd.Categorical, depth: np.ndarray, parent: np.ndarray,
                 extra: Sequence[phase_rules.PhaseRule]) -> np.ndarray:
    """Phase codes (into ``PHASES``): the loader's own, else by name rules;
    events left ``other`` inherit their nearest known ancestor's phase."""
    if "phase" in columns and columns["phase"] is not None:
        codes = pd.Categorical(columns["phase"], categories=PHASES).codes.astype(np.int8)
        codes[codes < 0] = PHASES.index("other")
    else:
        by_name = phase_rules.classify(map(str, name.categories), extra)
        lookup = np.array([PHASES.index(p) for p in by_name] + [PHASES.index("other")], np.int8)
        codes = lookup[name.codes]  # code -1 (missing name) maps to "other"
    fill_down(codes, depth, parent, PHASES.index("other"))
    return codes


def _kinds(kind: Any, n: int) -> Any:
    """The ``kind`` column (a Categorical of ``KINDS``)."""
    if isinstance(kind, pd.Categorical) and list(kind.categories) == list(KINDS):
        return kind
    if kind is None:  # every event a slice: codes only (no list of n strings to hash)
        return pd.Categorical.from_codes(np.full(n, KINDS.index("slice"), np.int8),
                                         dtype=pd.CategoricalDtype(list(KINDS)))
    return pd.Categorical(kind, categories=KINDS)


def _take_extra_columns(data: dict[str, Any], columns: dict[str, Any], final: np.ndarray,
                        consume: bool = False) -> None:
    """The loader's extra per-event columns, in the final order (taken out of
    ``columns`` one by one with ``consume``)."""
    reserved = set(data) | {"kind", "phase"}
    for key in list(columns):
        values = columns.pop(key) if consume else columns[key]
        if key in reserved or values is None:
            continue
        if isinstance(values, pd.Categorical):
            data[key] = values[final]
        elif isinstance(values, pd.api.extensions.ExtensionArray):
            data[key] = values.take(final)
        elif isinstance(values, list):
            data[key] = [values[i] for i in final]
        else:
            data[key] = np.asarray(values)[final]


def _start_depth_order(start: np.ndarray, depth: np.ndarray) -> np.ndarray:
    """``np.lexsort((depth, start))``, faster: one stable sort (timsort, quick
    on nearly sorted starts) of the combined key ``start * (max depth + 1) +
    depth`` where it fits in int64 (always on real traces), else lexsort."""
    if len(start) == 0:
        return np.zeros(0, np.int64)
    lo, hi = int(start.min()), int(start.max())
    levels = int(depth.max()) + 1
    if int(depth.min()) < 0 or (hi - lo + 1) * levels >= 2**62:
        return np.lexsort((depth, start))
    key = (start - lo) * levels + depth
    return np.argsort(key, kind="stable")


def dense_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for non-negative ints, without
    sorting when their range is small (here: process x thread codes)."""
    if len(values) == 0 or int(values.max()) > 4 * len(values) + 4096 or int(values.min()) < 0:
        uniq, inverse = np.unique(values, return_inverse=True)
        return uniq, inverse.reshape(-1).astype(np.int64)
    present = np.zeros(int(values.max()) + 1, bool)
    present[values] = True
    uniq = np.flatnonzero(present)
    code = np.cumsum(present, dtype=np.int64) - 1
    return uniq, code[values]


def _track_labels(process: pd.Categorical, thread: pd.Categorical, pair_values: np.ndarray,
                  track_code: np.ndarray, lane: np.ndarray) -> pd.Categorical:
    """Track labels ``process / thread``, plus the overlap sub-lane where needed,
    as a Categorical with sorted categories (codes built directly, not by
    factorising one string per event)."""
    nthreads = len(thread.categories) + 1
    lanes_per = int(lane.max()) + 1 if len(lane) else 1
    lane_values, lane_code = dense_codes(track_code.astype(np.int64) * lanes_per + lane)
    labels = []
    processes, threads = list(process.categories), list(thread.categories)  # not an Index lookup per track
    for value in lane_values.tolist():
        p, t = divmod(int(pair_values[value // lanes_per]), nthreads)
        sub = value % lanes_per
        tag = OVERLAP_TAG.format(sub) if sub else ""
        labels.append(f"{processes[p]} / {threads[t]}{tag}")
    uniq, label_code = np.unique(np.asarray(labels, dtype=object), return_inverse=True)
    return pd.Categorical.from_codes(label_code.reshape(-1)[lane_code], categories=pd.Index(uniq.tolist()))


def _rebase(frame: pd.DataFrame | None, columns: Sequence[str], base: int) -> pd.DataFrame | None:
    if frame is None:
        return None
    frame = frame.copy(deep=False)  # copy-on-write: only the rebased columns are new arrays
    for col in columns:
        if col in frame:
            frame[col] = frame[col] - base
    return frame


def make_trace(
    format: str,
    time_unit: str,
    events: pd.DataFrame,
    quality: Quality,
    *,
    base: int,
    memory: pd.DataFrame | None = None,
    allocations: pd.DataFrame | None = None,
    nodes: pd.DataFrame | None = None,
    flows: pd.DataFrame | None = None,
    counters: pd.DataFrame | None = None,
    launches: pd.DataFrame | None = None,
    metadata: dict[str, Any] | None = None,
    args: Any = None,
    absolute: bool = True,
) -> Trace:
    """The Trace from built ``events`` (see [build_events][jupyter_profview.builder.build_events])
    and the other tables: ``memory``, ``allocations`` and ``counters`` with *absolute* times
    (``base`` is subtracted from those), ``flows``, ``nodes`` and ``launches`` (made from the
    built events) as they are.  A table not given is empty (``counters``: None).  The
    [TraceInfo][jupyter_profview.model.TraceInfo] keys of ``metadata`` go to ``trace.info``
    (``base_time_ns`` defaults to ``base`` for a trace with a clock), the rest stays in
    ``trace.metadata``.  ``absolute=False``: those times are relative to ``base`` already
    (rebased by the loader in place: no second copy of a large column)."""
    info, metadata = TraceInfo.split(metadata)
    if time_unit == "ns" and info.base_time_ns is None:
        info = info.replace(base_time_ns=base)
    if absolute:
        memory = _rebase(memory, ["time"], base)
        allocations = _rebase(allocations, ["alloc_time", "free_time"], base)
        counters = _rebase(counters, ["time"], base)
    return Trace(
        format=format,
        time_unit=time_unit,
        events=events,
        memory=memory if memory is not None else empty_memory(),
        allocations=allocations if allocations is not None else empty_allocations(),
        nodes=nodes if nodes is not None else empty_nodes(),
        flows=flows if flows is not None else empty_flows(),
        quality=quality,
        metadata=metadata,
        counters=counters,
        _args=args,
        launches=launches if launches is not None else empty_launches(),
        info=info,
    )
