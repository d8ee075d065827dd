"""The critical path in the widget: the frame the front end draws (``_critical_path`` trait).

`path_frame` turns a `CriticalPath` into one
binary frame with a row per edge of the path, in path order (``docs/widget-protocol.md``):

=========== ===== ==========================================================================
column      dtype meaning
=========== ===== ==========================================================================
order       u32   position along the path
type        u8    index into ``meta.edge_types`` (operator, launch, kernel, sync, dependency)
bound       u8    index into ``meta.bound_types``: what the edge's time counts as (breakdown)
event       i32   the widget's event id the edge is attributed to, -1 for none
src, dst    i32   the widget's event ids of the edge's two ends
src_time    f64   time of the source node (the view's clock)
dst_time    f64   time of the destination node
src_track   i32   track of ``src`` (-1: not on a track shown by this widget)
dst_track   i32   track of ``dst``
weight      f64   ns of the path in this edge
label       i32   index into ``meta.names``: the name of ``event`` (-1 for none)
=========== ===== ==========================================================================

``meta``: ``length``, ``breakdown`` (``[{type, time, share}]``), ``events`` (events on the path),
``annotation``, ``instance``, ``steps`` (the annotation's instances: the step picker), ``rank``,
``start`` / ``end`` (the window, the view's clock), ``names``, ``edge_types``, ``bound_types``,
``token``.  An empty trait (``b""``) means no path is shown.

A path of one rank shown in an all-ranks widget is mapped to the combined trace's ids and clock
(``rank_id`` and ``info.offsets``, see `.ranks`).

`CriticalPathPanel` is the panel ("Critical path" in the toolbar): the path shown, its step picker
(``critical_path_instance``) recomputing it for another step.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.critical_path import BREAKDOWN_TYPES, EDGE_TYPES, CriticalPath, critical_path
from ..errors import ProfviewError
from ..kinds import STEP_ANNOTATION
from .codec import encode_frame
from .panel import TOKENS, Panel, ViewSession
from .requests import RequestError
from .state import WidgetData

log = logging.getLogger(__name__)


def id_mapping(data: WidgetData, rank: int | None) -> tuple[pd.Series, int]:
    """The widget's event id for each event id of the path's trace, and the clock shift (ns)."""
    events = data.events
    if rank is None or not data.ranked:
        return pd.Series(data.ids, index=data.ids), 0
    mine = events[events["rank"].to_numpy() == rank]
    offsets = data.trace.info.offsets
    mapping = pd.Series(mine.index.to_numpy(), index=mine["rank_id"].to_numpy(np.int64))
    return mapping, int(offsets.get(rank, 0))


def path_frame(data: WidgetData, cp: CriticalPath, ids: pd.Series, shift: int, token: int) -> bytes:
    """The ``_critical_path`` frame of ``cp`` (see the module doc), given `id_mapping`'s
    ``ids`` and ``shift``."""
    path = cp.path
    widget_id = ids.reindex(np.concatenate([path["src"], path["dst"], path["event"]]).astype(np.int64))
    mapped = widget_id.fillna(-1).to_numpy(np.int64)
    n = len(path)
    src, dst, event = mapped[:n], mapped[n:2 * n], mapped[2 * n:]
    event = np.where(path["event"].to_numpy(np.int64) >= 0, event, -1)
    track_of = _tracks(data, np.concatenate([src, dst]))
    names = pd.Index(cp.events["name"].astype(str).unique())
    codes = names.get_indexer(pd.Index(cp.events["name"].astype(str)))
    label_of = dict(zip(cp.events["event"].tolist(), codes.tolist(), strict=True))
    label = np.asarray([label_of.get(int(e), -1) for e in path["event"].tolist()], np.int32)
    meta: dict[str, Any] = {
        "length": float(cp.length),
        "breakdown": [{"type": str(t), "time": float(v), "share": float(p)} for t, v, p in
                      zip(cp.breakdown["type"], cp.breakdown["time"], cp.breakdown["share"], strict=True)],
        "events": int(len(cp.events)),
        "annotation": cp.annotation, "instance": cp.instance, "rank": cp.rank,
        "steps": [str(s) for s in cp.steps["name"]] if len(cp.steps) else [],
        "start": float(cp.start + shift), "end": float(cp.end + shift),
        "names": [str(s) for s in names], "edge_types": list(EDGE_TYPES),
        "bound_types": list(BREAKDOWN_TYPES),
        "token": token,
    }
    return encode_frame({
        "order": np.arange(n, dtype=np.uint32),
        # both columns are categoricals over EDGE_TYPES / BREAKDOWN_TYPES, in that order
        "type": path["type"].cat.codes.to_numpy(np.uint8),
        "bound": path["bound"].cat.codes.to_numpy(np.uint8),
        "event": event.astype(np.int32), "src": src.astype(np.int32), "dst": dst.astype(np.int32),
        "src_time": path["src_time"].to_numpy(np.float64) + shift,
        "dst_time": path["dst_time"].to_numpy(np.float64) + shift,
        "src_track": track_of[:n].astype(np.int32), "dst_track": track_of[n:].astype(np.int32),
        "weight": path["weight"].to_numpy(np.float64), "label": label,
    }, meta)


def _tracks(data: WidgetData, ids: np.ndarray) -> np.ndarray:
    pos = data.events.index.get_indexer(ids)
    out = np.full(len(ids), -1, np.int64)
    ok = pos >= 0
    out[ok] = data.timeline.event_track[pos[ok]]
    return out


class CriticalPathPanel(Panel):
    """A step's critical path (`_critical_path`): its events highlighted, its edges as arrows, its
    breakdown and segments; the step picker (`critical_path_instance`) recomputes it."""

    name = "critical_path"
    traits = ("_critical_path", "critical_path_instance")
    toolbar = "Critical path"

    def __init__(self, session: ViewSession) -> None:
        super().__init__(session)
        #: the path shown, or None
        self.path: CriticalPath | None = None
        #: what the step picker recomputes the path on (a Trace or a TraceSet)
        self.source: Any = None

    def state(self) -> dict[str, Any]:
        return {"_critical_path": b"", "critical_path_instance": -1}

    def show(self, cp: CriticalPath | None, *, zoom: bool = True, source: Any = None) -> dict[str, Any]:
        """The traits that draw `cp` (None clears it); `source` is what the picker recomputes on."""
        session = self.session
        if cp is None:
            self.path = None
            return {"_critical_path": b"", "critical_path_instance": -1,
                    **session.highlight(np.zeros(0, np.int64), zoom=False)}
        if not isinstance(cp, CriticalPath):
            raise TypeError(f"show_critical_path takes a CriticalPath, got {type(cp).__name__}")
        if source is not None:
            self.source = source
        elif self.source is None or (cp.rank is not None and session.traceset is not None):
            self.source = session.source
        self.path = cp
        data = session.data
        ids, shift = id_mapping(data, cp.rank)
        lit = ids.reindex(cp.events["event"].to_numpy(np.int64)).dropna().to_numpy(np.int64)
        out = {"_critical_path": path_frame(data, cp, ids, shift, next(TOKENS)),
               "critical_path_instance": -1 if cp.instance is None else int(cp.instance),
               **session.highlight(np.unique(data.positions(lit)), zoom=False)}
        if zoom:
            ev = cp.events
            lo = float(min(cp.start, ev["start"].min() if len(ev) else cp.start))
            hi = float(max(cp.end, (ev["start"] + ev["dur"]).max() if len(ev) else cp.end))
            pad = max((hi - lo) * 0.02, 1.0)
            out.update(session.zoom(lo + shift - pad, hi + shift + pad))
        return out

    def open(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The path of step `instance` (default 0) of `ProfilerStep`, of the whole trace where the
        trace has no step; a view of several ranks shows `rank` (default: its first)."""
        instance = args.get("instance", 0)
        if isinstance(instance, bool) or not isinstance(instance, int):
            raise RequestError("instance must be an integer")
        source = self.session.source
        ts = self.session.traceset
        rank = args.get("rank", int(ts.ranks[0]) if ts is not None else None)
        try:
            cp = critical_path(source, annotation=STEP_ANNOTATION, instance=instance, rank=rank)
        except ProfviewError:
            if instance != 0:
                raise
            cp = critical_path(source, annotation=None, rank=rank)  # no step: the whole trace
        return self.show(cp, source=source)

    def close(self) -> dict[str, Any]:
        return self.show(None)

    def apply(self, name: str, value: Any) -> dict[str, Any]:
        if isinstance(value, bool) or not isinstance(value, int):
            raise RequestError(f"critical_path_instance must be an integer, not {value!r}")
        cp = self.path
        if cp is None or cp.annotation is None or value < 0 or value == cp.instance:
            return {}
        try:
            fresh = critical_path(self.source, annotation=cp.annotation, instance=value, rank=cp.rank)
        except ValueError as exc:  # ProfviewError: no such instance
            log.warning("profview: critical path of instance %s: %s", value, exc)
            return {"critical_path_instance": -1 if cp.instance is None else cp.instance}
        return self.show(fresh)
