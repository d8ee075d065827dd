"""Per-trace state of the widget's kernel side: `WidgetData` holds the Trace and the
indexes the command handlers of `.rpc` need, computed once."""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from .codec import empty_frame, encode_frame
from .lod import Legend, TimelineIndex, group_key, section_key
from .memory_lod import MemoryIndex
from .metric_colors import EventMetrics, legend_for
from .pager import name_key, table_order
from .requests import RequestError, number

MAX_SELECTED_IDS = 10_000
MAX_NODES = 2000


class WidgetData:
    """The Trace plus the indexes the widget needs, computed once."""

    def __init__(self, trace: Any, color_by: str = "auto") -> None:
        self.trace = trace
        events = trace.events
        self.events = events
        self.n = len(events)
        #: kernel and collective numbers (colour by `sm_efficiency`, `busbw`...; tooltips)
        self.metrics = EventMetrics(trace)
        self.legend: Legend = legend_for(events, color_by, getattr(trace, "launches", None), self.metrics)
        self.timeline = TimelineIndex(trace, self.legend)
        self.memory = MemoryIndex(trace)
        self.start = events["start"].to_numpy(np.int64) if self.n else np.zeros(0, np.int64)
        self.dur = events["dur"].to_numpy(np.int64) if self.n else np.zeros(0, np.int64)
        self.self_time = events["self"].to_numpy(np.int64) if self.n else np.zeros(0, np.int64)
        self._sort_keys: dict[str, np.ndarray] = {}
        self._table_orders: dict[tuple[str, bool], np.ndarray] = {}
        self._efficiency: pd.DataFrame | None = None
        #: positions a window's table and a range selection may list (None: all); the widget
        #: sets it from ``shown_ranks``
        self.allowed: np.ndarray | None = None
        #: whether the timeline draws the lanes that hold only the profiler's own records
        #: (`derived.wrapper_mask`); the ``show_wrappers`` trait
        self.show_wrappers = False

    @cached_property
    def ids(self) -> np.ndarray:
        """Each event's id (``trace.events.index``), by position; made on first use (the first
        draw reads the ids of the boxes it sends only)."""
        return self.events.index.to_numpy()

    @cached_property
    def end(self) -> np.ndarray:
        """Each event's end (``start + dur``, int64), by position; made on first use."""
        return self.start + self.dur

    def efficiency(self) -> pd.DataFrame:
        """``op_efficiency(trace)``, computed on first use (the table's efficiency tab)."""
        if self._efficiency is None:
            from ..analysis.efficiency import op_efficiency

            self._efficiency = op_efficiency(self.trace)
        return self._efficiency

    def keep_allowed(self, pos: np.ndarray) -> np.ndarray:
        """``pos`` without the positions outside `allowed` (the ranks not shown)."""
        return pos if self.allowed is None else pos[self.allowed[pos]]

    # -- table ordering ---------------------------------------------------------
    def sort_key(self, sort: str) -> np.ndarray:
        """Per-position sort key of a ``_table`` column (names by their sorted rank)."""
        if sort not in self._sort_keys:
            if sort == "name":
                self._sort_keys[sort] = name_key(self.events["name"])
            else:
                self._sort_keys[sort] = {"start": self.start, "dur": self.dur, "self": self.self_time}[sort]
        return self._sort_keys[sort]

    def table_order(self, sort: str, descending: bool) -> np.ndarray:
        """All positions in ``_table`` order (key, then id ascending); computed once per key."""
        cache_key = (sort, descending)
        if cache_key not in self._table_orders:
            key = self.sort_key(sort)
            self._table_orders[cache_key] = table_order(key, self.ids, descending)
        return self._table_orders[cache_key]

    def recolor(self, color_by: str) -> None:
        self.legend = legend_for(self.events, color_by, getattr(self.trace, "launches", None), self.metrics)
        self.timeline.set_legend(self.legend)

    # -- ids <-> positions ---------------------------------------------------
    def positions(self, ids: Any) -> np.ndarray:
        """Positions in ``trace.events`` of event ids (unknown ids raise RequestError)."""
        ids = np.asarray(ids, dtype=np.int64)
        pos = self.events.index.get_indexer(ids) if len(ids) else np.zeros(0, np.int64)
        if (pos < 0).any():
            raise RequestError(f"unknown event id {int(ids[pos < 0][0])}")
        return pos.astype(np.int64)

    # -- kernel -> browser state ---------------------------------------------
    def info(self, static: bool = False) -> dict[str, Any]:
        trace = self.trace
        message = ""
        if self.n == 0:
            message = (f"This {trace.format} trace has no timed events"
                       + (f"; its {len(trace.nodes)} graph nodes are listed below." if len(trace.nodes)
                          else "."))
        return {
            "format": trace.format,
            "source": trace.info.source,
            "time_unit": trace.time_unit,
            # trace.duration (the last end), read off the index: no pass over the events
            "duration": self.timeline.span()[1] if self.n else float(trace.duration),
            "start": min(0.0, float(self.timeline.extent()[0])) if self.n else 0.0,
            "base_time_ns": float(trace.info.base_time_ns or 0),
            "event_count": self.n,
            "color_by": self.legend.color_by,
            "color_options": self.metrics.options() if self.n else [],
            "legend": self.legend.entries,
            "has_memory": bool(len(trace.memory)),
            "has_allocations": bool(len(trace.allocations)),
            "has_flows": bool(len(trace.flows)),
            "static": static,
            "message": message,
            **self.ranks_info(),
        }

    @property
    def ranked(self) -> bool:
        """Whether the trace holds several ranks: its ``info.ranks`` (a TraceSet's combined
        trace), the one thing the view reads to decide it; the events' ``rank`` column then
        says each event's rank."""
        return bool(self.trace.info.ranks)

    def ranks_info(self) -> dict[str, Any]:
        """For a TraceSet's combined trace: ``ranks`` (rank, clock ``offset`` of its own origin
        from the common one, ns) and ``align`` (the step the ranks are lined up on, or None)."""
        info = self.trace.info
        if not info.ranks:
            return {}
        return {"ranks": [{"rank": r, "offset": float(info.offsets.get(r, 0))} for r in info.ranks],
                "align": info.align}

    def tracks(self) -> list[dict[str, Any]]:
        """One entry per lane (``_tracks``): ``process``, ``thread``, ``label`` (the track), the
        on-screen ``group`` and ``name``, ``depths``, and ``key``, what collapses its group; with
        several ranks also ``rank`` and ``section`` (its rank's section key).

        ``events`` and ``wrappers`` count the lane's events and the profiler's own records among
        them (`derived.wrapper_mask`); ``hidden``: the lane is not drawn because no event of it
        shows -- it holds none, or only wrappers while ``show_wrappers`` is off.  Its events stay in
        the trace, the table and the search; only the lane is left out of the timeline."""
        out = []
        table = self.timeline.tracks
        columns = {c: table[c].tolist() for c in table.columns}  # plain lists: linear, no per-row boxing
        rows = (dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True))
        for i, r in enumerate(rows):
            rank = int(r["rank"]) if "rank" in r and not pd.isna(r["rank"]) else None
            out.append({"id": i, "process": str(r["process"]), "thread": str(r["thread"]),
                        "label": str(r["label"]), "group": str(r["group"]), "name": str(r["name"]),
                        "depths": int(r["depths"]), "key": group_key(str(r["process"]), rank),
                        "events": int(r["events"]), "wrappers": int(r["wrappers"]),
                        "hidden": self.lane_hidden(int(r["events"]), int(r["wrappers"])),
                        **({} if rank is None else {"rank": rank, "section": section_key(rank)})})
        return out

    def lane_hidden(self, events: int, wrappers: int) -> bool:
        """Whether a lane of `events` events, `wrappers` of them the profiler's own, is left out
        of the timeline: no event of it would show (`show_wrappers`)."""
        return events - (0 if self.show_wrappers else wrappers) <= 0

    def hidden_lanes(self) -> dict[str, int]:
        """What the timeline leaves out: ``lanes`` hidden and the ``events`` they hold (all of them
        wrappers: an event is never dropped, only its lane is not drawn)."""
        hidden = [t for t in self.tracks() if t["hidden"]]
        return {"lanes": len(hidden), "events": sum(t["events"] for t in hidden)}

    def overview(self) -> bytes:
        return self.timeline.overview()

    def memory_overview(self) -> bytes:
        if not self.memory.series:
            return empty_frame({"series": [], "t0": 0.0, "t1": 1.0})
        return self.memory.overview()

    def nodes_frame(self) -> bytes:
        nodes = self.trace.nodes
        if len(nodes) == 0:
            return empty_frame({"total": 0})
        part = nodes.iloc[:MAX_NODES]
        if "order" in part and part["order"].notna().any():
            part = part.assign(_o=part["order"].astype("Float64").fillna(np.inf)).sort_values("_o")
        columns: dict[str, np.ndarray] = {}
        meta: dict[str, Any] = {"total": len(nodes)}
        for col, key in (("name", "names"), ("op_type", "op_types"), ("device", "devices")):
            values = part[col].astype(object).where(part[col].notna(), "") if col in part else \
                pd.Series([""] * len(part))
            codes, uniques = pd.factorize(values.astype(str))
            columns[col] = codes.astype(np.int32)
            meta[key] = [str(u) for u in uniques]
        order = part["order"] if "order" in part else pd.Series([pd.NA] * len(part))
        columns["order"] = pd.to_numeric(order, errors="coerce").fillna(-1).to_numpy(np.float64) \
            .clip(-1, 2**31 - 1).astype(np.int32)
        nbytes = part["bytes"] if "bytes" in part else pd.Series([pd.NA] * len(part))
        columns["bytes"] = pd.to_numeric(nbytes, errors="coerce").astype("float64").to_numpy(np.float64)
        shapes = part["output_shapes"] if "output_shapes" in part else pd.Series([None] * len(part))
        meta["output_shapes"] = [_shapes_text(s) for s in shapes]
        return encode_frame(columns, meta)

    # -- selections ------------------------------------------------------------
    def selection_positions(self, sel: Any) -> np.ndarray:
        """Positions of the events a ``_selection`` value selects (sorted, unique)."""
        if not sel:
            return np.zeros(0, np.int64)
        if not isinstance(sel, Mapping):
            raise RequestError(f"_selection must be an object, got {type(sel).__name__}")
        if "ids" in sel:
            ids = sel["ids"]
            if not isinstance(ids, list) or len(ids) > MAX_SELECTED_IDS:
                raise RequestError(f"'ids' must be a list of at most {MAX_SELECTED_IDS} ids")
            if any(isinstance(i, bool) or not isinstance(i, int) for i in ids):
                raise RequestError("'ids' must hold integers")
            return np.unique(self.positions(ids))
        if "range" in sel:
            rng = sel["range"]
            if not isinstance(rng, list) or len(rng) != 2:
                raise RequestError("'range' must be [t0, t1]")
            t0, t1 = number({"t0": rng[0]}, "t0"), number({"t1": rng[1]}, "t1")
            t0, t1 = min(t0, t1), max(t0, t1)
            pos = self.timeline.position[self.timeline.window(t0, t1)]
            tracks = sel.get("tracks")
            if tracks is not None:
                if not isinstance(tracks, list) or any(
                        isinstance(t, bool) or not isinstance(t, int) for t in tracks):
                    raise RequestError("'tracks' must be a list of track indices or null")
                pos = pos[np.isin(self.timeline.event_track[pos], np.asarray(tracks, np.int64))]
            return np.unique(pos)
        raise RequestError("_selection needs 'ids' or 'range'")


def _shapes_text(shapes: Any) -> str:
    if shapes is None or (isinstance(shapes, float) and math.isnan(shapes)):
        return ""
    if isinstance(shapes, (list, tuple)):
        return ", ".join("(" + "x".join(str(d) for d in s) + ")" if isinstance(s, (list, tuple))
                         else str(s) for s in shapes)
    return str(shapes)
