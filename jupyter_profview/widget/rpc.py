"""The widget's kernel side as pure functions (testable without a browser).

:class:`WidgetData` holds everything precomputed once per Trace; the command
functions (``detail``, ``memory_detail``, ``table``, ``event``, ``live``) take
it and a request dict and return ``(reply, buffers)`` exactly as in
``docs/widget-protocol.md``.  Requests are validated; a bad one raises
:class:`RequestError`, which :func:`guarded` turns into ``{"error": str}``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..export import json_safe
from .codec import empty_frame, encode_frame
from .launch_table import LAUNCH_SORT, launch_page, launch_rows_of
from .lod import Legend, MemoryIndex, TimelineIndex, build_legend

MAX_WIDTH = 16384
MAX_LIMIT = 1000
MAX_SELECTED_IDS = 10_000
MAX_LIVE_ROWS = 200
MAX_NODES = 2000
MAX_FLOWS = 200
SORT_KEYS = ("start", "dur", "self", "name")
#: a `_table` over at least this many events filters a cached whole-trace order instead of sorting
TABLE_CACHE_MIN = 50_000
Reply = tuple[dict[str, Any], list[bytes]]


class RequestError(ValueError):
    """A request from the browser does not follow the protocol."""


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------

def _number(msg: Mapping[str, Any], key: str, default: float | None = None) -> float:
    value = msg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise RequestError(f"{key!r} must be a finite number, got {value!r}")
    return float(value)


def _integer(msg: Mapping[str, Any], key: str, lo: int, hi: int, default: int | None = None) -> int:
    value = msg.get(key, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise RequestError(f"{key!r} must be an integer in [{lo}, {hi}], got {value!r}")
    return value


def _window(msg: Any) -> tuple[float, float, int]:
    if not isinstance(msg, Mapping):
        raise RequestError(f"request must be an object, got {type(msg).__name__}")
    t0, t1 = _number(msg, "t0"), _number(msg, "t1")
    if not t0 < t1:
        raise RequestError(f"need t0 < t1, got t0={t0}, t1={t1}")
    return t0, t1, _integer(msg, "width", 1, MAX_WIDTH)


def guarded(fn: Callable[..., Reply]) -> Callable[..., Reply]:
    """Turn any failure into an ``{"error": ...}`` reply: the front end must always get an answer."""

    def wrapper(*args: Any, **kwargs: Any) -> Reply:
        try:
            return fn(*args, **kwargs)
        except RequestError as exc:
            return {"error": str(exc)}, []
        except Exception as exc:  # noqa: BLE001 - reported to the front end, never swallowed silently
            return {"error": f"internal error in {fn.__name__}: {type(exc).__name__}: {exc}"}, []

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


# ---------------------------------------------------------------------------
# Per-trace state
# ---------------------------------------------------------------------------

class WidgetData:
    """The Trace plus the indexes the widget needs, computed once."""

    def __init__(self, trace: Any, color_by: str = "auto") -> None:
        self.trace = trace
        events = trace.events
        self.events = events
        self.n = len(events)
        self.legend: Legend = build_legend(events, color_by)
        self.timeline = TimelineIndex(trace, self.legend)
        self.memory = MemoryIndex(trace)
        self.ids = events.index.to_numpy()
        self.start = events["start"].to_numpy(np.int64) if self.n else np.zeros(0, np.int64)
        self.dur = events["dur"].to_numpy(np.int64) if self.n else np.zeros(0, np.int64)
        self.self_time = events["self"].to_numpy(np.int64) if self.n else np.zeros(0, np.int64)
        self.end = self.start + self.dur
        self._sort_keys: dict[str, np.ndarray] = {}
        self._table_orders: dict[tuple[str, bool], np.ndarray] = {}
        #: positions a window's table and a range selection may list (None: all); the widget
        #: sets it from ``shown_ranks``
        self.allowed: np.ndarray | None = None

    def keep_allowed(self, pos: np.ndarray) -> np.ndarray:
        """``pos`` without the positions outside :attr:`allowed` (the ranks not shown)."""
        return pos if self.allowed is None else pos[self.allowed[pos]]

    # -- table ordering ---------------------------------------------------------
    def sort_key(self, sort: str) -> np.ndarray:
        """Per-position sort key of a ``_table`` column (names by their sorted rank)."""
        if sort not in self._sort_keys:
            if sort == "name":
                names = pd.Categorical(self.events["name"])
                rank = np.argsort(np.argsort(np.asarray(names.categories.astype(str)), kind="stable"))
                self._sort_keys[sort] = np.append(rank, -1)[names.codes]
            else:
                self._sort_keys[sort] = {"start": self.start, "dur": self.dur, "self": self.self_time}[sort]
        return self._sort_keys[sort]

    def table_order(self, sort: str, descending: bool) -> np.ndarray:
        """All positions in ``_table`` order (key, then id ascending); computed once per key."""
        cache_key = (sort, descending)
        if cache_key not in self._table_orders:
            key = self.sort_key(sort)
            self._table_orders[cache_key] = np.lexsort((self.ids, -key if descending else key))
        return self._table_orders[cache_key]

    def recolor(self, color_by: str) -> None:
        self.legend = build_legend(self.events, color_by)
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
            "source": str(trace.metadata.get("source", "")),
            "time_unit": trace.time_unit,
            "duration": float(trace.duration),
            "start": min(0.0, float(self.timeline.extent()[0])) if self.n else 0.0,
            "base_time_ns": float(trace.metadata.get("base_time_ns", 0) or 0),
            "event_count": self.n,
            "color_by": self.legend.color_by,
            "legend": self.legend.entries,
            "has_memory": bool(len(trace.memory)),
            "has_allocations": bool(len(trace.allocations)),
            "has_flows": bool(len(trace.flows)),
            "static": static,
            "message": message,
            **self.ranks_info(),
        }

    def ranks_info(self) -> dict[str, Any]:
        """For a TraceSet's combined trace: ``ranks`` (rank, clock ``offset`` of its own origin
        from the common one, ns) and ``align`` (the step the ranks are lined up on, or None)."""
        meta = self.trace.metadata
        if not meta.get("ranks"):
            return {}
        offsets = meta.get("offsets") or {}
        return {"ranks": [{"rank": int(r), "offset": float(offsets.get(r, 0))} for r in meta["ranks"]],
                "align": meta.get("align")}

    def tracks(self) -> list[dict[str, Any]]:
        rows = self.timeline.tracks.to_dict("records")
        out = [{"id": i, "process": str(r["process"]), "thread": str(r["thread"]),
                "label": str(r["label"]), "group": str(r["group"]), "name": str(r["name"]),
                "depths": int(r["depths"])} for i, r in enumerate(rows)]
        for t, r in zip(out, rows, strict=True):
            if "rank" in r and not pd.isna(r["rank"]):  # several ranks: a `rank N` section
                t["rank"] = int(r["rank"])
                t["section"] = f"rank {t['rank']}"
        return out

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
            t0, t1 = _number({"t0": rng[0]}, "t0"), _number({"t1": rng[1]}, "t1")
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


# ---------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------

@guarded
def detail(data: WidgetData, msg: Any) -> Reply:
    """``_detail``: the slices frame of a window and, with ``memory: true``, its memory frame.

    Times in both frames are float32 relative to the request's ``t0`` (``meta.origin``).
    ``kernel_ms`` / ``kernel_at`` in the reply are benchmark hooks (handler time, start epoch ms).
    """
    at = time.time()
    began = time.perf_counter()
    t0, t1, width = _window(msg)
    memory = msg.get("memory", False)
    if not isinstance(memory, bool):
        raise RequestError(f"'memory' must be true or false, got {memory!r}")
    buffers = [data.timeline.slices(t0, t1, width, compact=True)]
    if memory:
        buffers.append(_memory_frame(data, t0, t1, width, compact=True))
    reply = {"t0": t0, "t1": t1, "width": width,
             "kernel_ms": (time.perf_counter() - began) * 1e3, "kernel_at": at * 1e3}
    return reply, buffers


def _memory_frame(data: WidgetData, t0: float, t1: float, width: int, compact: bool = False) -> bytes:
    if not data.memory.series:
        return empty_frame({"series": [], "t0": t0, "t1": t1})
    return data.memory.frame(t0, t1, width, compact=compact)


@guarded
def memory_detail(data: WidgetData, msg: Any) -> Reply:
    """``_memory_detail``: the memory frame of a window."""
    t0, t1, width = _window(msg)
    return {}, [_memory_frame(data, t0, t1, width)]


@guarded
def table(data: WidgetData, msg: Any, selected: np.ndarray | None = None) -> Reply:
    """``_table``: one sorted page of the selection's or the window's events."""
    if not isinstance(msg, Mapping):
        raise RequestError("request must be an object")
    mode = msg.get("mode", "window")
    if mode == "selection" and msg.get("selection") is not None:
        # the selection the list was made for (a click in the list must not change the list)
        pos = data.selection_positions(msg["selection"])
    elif mode == "selection":
        pos = selected if selected is not None else np.zeros(0, np.int64)
    elif mode == "window":
        t0, t1 = _number(msg, "t0"), _number(msg, "t1")
        if not t0 < t1:
            raise RequestError(f"need t0 < t1, got t0={t0}, t1={t1}")
        pos = data.keep_allowed(data.timeline.position[data.timeline.window(t0, t1)])
    else:
        raise RequestError(f"'mode' must be 'selection' or 'window', got {mode!r}")
    kind = msg.get("kind", "events")
    if kind not in ("events", "launches"):
        raise RequestError(f"'kind' must be 'events' or 'launches', got {kind!r}")
    sort = msg.get("sort", "start")
    keys = tuple(LAUNCH_SORT) if kind == "launches" else SORT_KEYS
    if sort not in keys:
        raise RequestError(f"'sort' must be one of {keys}, got {sort!r}")
    descending = msg.get("descending", False)
    if not isinstance(descending, bool):
        raise RequestError("'descending' must be true or false")
    offset = _integer(msg, "offset", 0, 2**31 - 1, 0)
    limit = _integer(msg, "limit", 0, MAX_LIMIT, 100)

    ev = data.events
    pos = np.asarray(pos, np.int64)
    # launch rows of the selection's kernels (and of its launch calls)
    launch_rows = launch_rows_of(data.trace.launches, data.ids[pos]) if mode == "selection" \
        else np.zeros(0, np.int64)
    if kind == "launches":
        page_reply, frame = launch_page(data.trace.launches, launch_rows, data.timeline.event_track,
                                        data.positions, sort, descending, offset, limit)
        return page_reply, [frame]
    dur = data.dur[pos]
    self_t = data.self_time[pos]
    if len(pos) >= TABLE_CACHE_MIN:
        # many rows (a wide window): filter the whole trace's cached order instead of sorting
        ordered = data.table_order(sort, descending)
        mask = np.zeros(data.n, bool)
        mask[pos] = True
        page = ordered[np.flatnonzero(mask[ordered])[offset:offset + limit]]
    else:
        key = data.sort_key(sort)[pos]
        order = np.lexsort((data.ids[pos], -key if descending else key))
        page = pos[order[offset:offset + limit]]
    name_codes, names_u = pd.factorize(ev["name"].iloc[page].astype(str))
    cat_codes, cats_u = pd.factorize(ev["category"].iloc[page].astype(str))
    frame = encode_frame({
        "id": data.ids[page].astype(np.int32),
        "start": data.start[page].astype(np.float64),
        "dur": data.dur[page].astype(np.float64),
        "self": data.self_time[page].astype(np.float64),
        "name": name_codes.astype(np.int32),
        "category": cat_codes.astype(np.int32),
        "track": data.timeline.event_track[page].astype(np.uint32),
    }, {"names": [str(s) for s in names_u], "categories": [str(s) for s in cats_u]})
    reply: dict[str, Any] = {"rows": len(page), "count": len(pos), "total": float(dur.sum()),
                             "self": float(self_t.sum())}
    if mode == "selection":  # the table offers the launch rows of the selection's kernels
        reply["launches"] = len(launch_rows)
    return reply, [frame]


@guarded
def event(data: WidgetData, msg: Any) -> Reply:
    """``_event``: everything about one event, including its args and flows."""
    if not isinstance(msg, Mapping):
        raise RequestError("request must be an object")
    event_id = _integer(msg, "id", 0, 2**53)
    (p,) = data.positions([event_id])
    row = data.events.iloc[p]
    flows = data.trace.flows
    out = []
    seen: set[tuple[int, int]] = set()
    if len(flows):
        hit = flows[(flows["source"] == event_id) | (flows["target"] == event_id)].iloc[:MAX_FLOWS]
        for f in hit.itertuples():
            s, t = int(f.source), int(f.target)
            seen.add((s, t))
            out.append({
                "source": s, "target": t,
                "source_track": _track_of(data, s), "target_track": _track_of(data, t),
                "source_time": float(f.start), "target_time": float(f.end),
            })
    out += _launch_links(data, event_id, seen, MAX_FLOWS - len(out))
    reply = {
        "id": event_id, "name": str(row["name"]), "category": str(row["category"]),
        "phase": str(row["phase"]), "track": int(data.timeline.event_track[p]),
        "start": float(row["start"]), "dur": float(row["dur"]), "self": float(row["self"]),
        "depth": int(row["depth"]), "args": json_safe(data.trace.args(event_id)), "flows": out,
    }
    return reply, []


def _launch_links(data: WidgetData, event_id: int, seen: set[tuple[int, int]], room: int) -> list[Any]:
    """Launch -> kernel arrows of ``trace.launches`` touching ``event_id`` that
    no flow record gives (files without ``ac2g`` flows, Kineto's missing ``s``):
    from the end of the launch call to the start of the kernel."""
    la = data.trace.launches
    if room <= 0 or len(la) == 0:
        return []
    kernel, launch = la["kernel"].to_numpy(), la["launch"].to_numpy(np.int64, na_value=-1)
    hit = np.flatnonzero(((kernel == event_id) | (launch == event_id)) & (launch >= 0))
    out: list[Any] = []
    for i in hit.tolist():
        s, t = int(launch[i]), int(kernel[i])
        if (s, t) in seen or len(out) >= room:
            continue
        out.append({"source": s, "target": t,
                    "source_track": _track_of(data, s), "target_track": _track_of(data, t),
                    "source_time": float(la["launch_start"].iat[i] + la["launch_dur"].iat[i]),
                    "target_time": float(la["kernel_start"].iat[i])})
    return out


def _track_of(data: WidgetData, event_id: int) -> int | None:
    if event_id < 0:
        return None
    pos = int(data.events.index.get_indexer([event_id])[0])
    return int(data.timeline.event_track[pos]) if pos >= 0 else None


@guarded
def live(data: WidgetData, msg: Any) -> Reply:
    """``_live``: allocations alive at ``time``, largest first."""
    if not isinstance(msg, Mapping):
        raise RequestError("request must be an object")
    time = _number(msg, "time")
    alloc = data.trace.allocations
    if len(alloc) == 0:
        return {"time": time, "total": 0.0, "rows": []}, []
    born = alloc["alloc_time"].astype("Float64").fillna(-np.inf).to_numpy(np.float64)
    dies = alloc["free_time"].astype("Float64").fillna(np.inf).to_numpy(np.float64)
    nbytes = alloc["bytes"].to_numpy(np.float64)
    alive = np.flatnonzero((born <= time) & (dies > time))
    top = alive[np.argsort(-nbytes[alive], kind="stable")[:MAX_LIVE_ROWS]]
    rows = []
    for i in top.tolist():
        r = alloc.iloc[i]
        address = r["address"]
        rows.append({
            "device": str(r["device"]),
            "address": None if pd.isna(address) else hex(int(address)),
            "bytes": float(r["bytes"]),
            "alloc_time": None if pd.isna(r["alloc_time"]) else float(r["alloc_time"]),
            "free_time": None if pd.isna(r["free_time"]) else float(r["free_time"]),
            "owner": None if pd.isna(r["owner"]) else str(r["owner"]),
        })
    return {"time": time, "total": float(nbytes[alive].sum()), "rows": rows}, []
