"""The widget's command handlers as pure functions (testable without a browser).

`WidgetData` holds everything precomputed once per Trace; the command
functions (``detail``, ``memory_detail``, ``table``, ``event``, ``live``) take
it and a request dict and return ``(reply, buffers)`` exactly as in
``docs/widget-protocol.md``.  Requests are validated (`.requests`); a bad one raises
`RequestError`, which `guarded` turns into ``{"error": str}``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..export import json_safe
from . import pager
from .codec import empty_frame, encode_frame
from .efficiency_table import EFFICIENCY_SORT, efficiency_page, efficiency_rows_of
from .launch_table import LAUNCH_SORT, launch_page, launch_rows_of
from .requests import Reply, RequestError, guarded, integer, number, window
from .state import WidgetData

__all__ = ["Reply", "RequestError", "WidgetData", "detail", "event", "live", "memory_detail", "table"]

MAX_LIVE_ROWS = 200
MAX_FLOWS = 200
#: ``sort`` keys of each kind of table rows
SORT_KEYS = {"events": ("start", "dur", "self", "name"), "launches": tuple(LAUNCH_SORT),
             "efficiency": tuple(EFFICIENCY_SORT)}
#: a `_table` over at least this many events filters a cached whole-trace order instead of sorting
TABLE_CACHE_MIN = 50_000


@guarded
def detail(data: WidgetData, msg: Any) -> Reply:
    """``_detail``: the slices frame of a window and, with ``memory: true``, its memory frame.

    Times in both frames are float32 relative to the request's ``t0`` (``meta.origin``).
    ``kernel_ms`` / ``kernel_at`` in the reply are benchmark hooks (handler time, start epoch ms).
    """
    at = time.time()
    began = time.perf_counter()
    t0, t1, width = window(msg)
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
    t0, t1, width = window(msg)
    return {}, [_memory_frame(data, t0, t1, width)]


@guarded
def table(data: WidgetData, msg: Any, selected: np.ndarray | None = None) -> Reply:
    """``_table``: one sorted page of the selection's or the window's events."""
    if not isinstance(msg, Mapping):
        raise RequestError("request must be an object")
    mode = msg.get("mode", "window")
    pos = np.asarray(_table_positions(data, msg, mode, selected), np.int64)
    request = pager.PageRequest.of(msg, SORT_KEYS)
    # launch rows of the selection's kernels (and of its launch calls)
    launch_rows = launch_rows_of(data.trace.launches, data.ids[pos]) if mode == "selection" \
        else np.zeros(0, np.int64)
    if request.kind == "launches":
        page_reply, frame = launch_page(data.trace.launches, launch_rows, data.timeline.event_track,
                                        data.positions, request)
        return page_reply, [frame]
    if request.kind == "efficiency":
        rows = efficiency_rows_of(data.efficiency(), data.events, data.trace.launches, data.ids[pos])
        page_reply, frame = efficiency_page(data.efficiency(), rows, data.events, data.timeline.event_track,
                                            data.positions, request)
        return page_reply, [frame]
    page = _table_page(data, pos, request)
    reply: dict[str, Any] = {"rows": len(page), "count": len(pos), "total": float(data.dur[pos].sum()),
                             "self": float(data.self_time[pos].sum())}
    if mode == "selection":  # the table offers the launch rows of the selection's kernels
        reply["launches"] = len(launch_rows)
        # ... and the efficiency of its modelled ops (GEMMs, convolutions, attention)
        reply["efficiency"] = len(efficiency_rows_of(data.efficiency(), data.events, data.trace.launches,
                                                     data.ids[pos])) if len(launch_rows) else 0
    return reply, [_table_frame(data, page)]


def _table_positions(data: WidgetData, msg: Mapping[str, Any], mode: Any,
                     selected: np.ndarray | None) -> np.ndarray:
    """Positions a ``_table`` request lists: its selection's, the current selection's or the window's."""
    if mode == "selection" and msg.get("selection") is not None:
        # the selection the list was made for (a click in the list must not change the list)
        return data.selection_positions(msg["selection"])
    if mode == "selection":
        return selected if selected is not None else np.zeros(0, np.int64)
    if mode == "window":
        t0, t1 = number(msg, "t0"), number(msg, "t1")
        if not t0 < t1:
            raise RequestError(f"need t0 < t1, got t0={t0}, t1={t1}")
        return data.keep_allowed(data.timeline.position[data.timeline.window(t0, t1)])
    raise RequestError(f"'mode' must be 'selection' or 'window', got {mode!r}")


def _table_page(data: WidgetData, pos: np.ndarray, request: pager.PageRequest) -> np.ndarray:
    """Positions of one page of ``pos`` in ``_table`` order (key, then id ascending)."""
    if len(pos) >= TABLE_CACHE_MIN:
        # many rows (a wide window): filter the whole trace's cached order instead of sorting
        ordered = data.table_order(request.sort, request.descending)
        mask = np.zeros(data.n, bool)
        mask[pos] = True
        return request.cut(ordered[mask[ordered]])
    return pos[pager.page(data.sort_key(request.sort)[pos], data.ids[pos], request)]


def _table_frame(data: WidgetData, page: np.ndarray) -> bytes:
    """The events frame of a ``_table`` page (names and categories as codes into ``meta``)."""
    ev = data.events
    name_codes, names_u = pd.factorize(ev["name"].iloc[page].astype(str))
    cat_codes, cats_u = pd.factorize(ev["category"].iloc[page].astype(str))
    columns = {
        "id": data.ids[page].astype(np.int32),
        "start": data.start[page].astype(np.float64),
        "dur": data.dur[page].astype(np.float64),
        "self": data.self_time[page].astype(np.float64),
        "name": name_codes.astype(np.int32),
        "category": cat_codes.astype(np.int32),
        "track": data.timeline.event_track[page].astype(np.uint32),
    }
    if data.ranked:  # several ranks in one view: say which rank each row is from
        columns["rank"] = ev["rank"].to_numpy(np.int64)[page].astype(np.int32)
    return encode_frame(columns, {"names": [str(s) for s in names_u], "categories": [str(s) for s in cats_u]})


@guarded
def event(data: WidgetData, msg: Any) -> Reply:
    """``_event``: everything about one event, including its args and flows."""
    if not isinstance(msg, Mapping):
        raise RequestError("request must be an object")
    event_id = integer(msg, "id", 0, 2**53)
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
        **({"rank": int(row["rank"])} if data.ranked else {}),
        "id": event_id, "name": str(row["name"]), "category": str(row["category"]),
        "phase": str(row["phase"]), "track": int(data.timeline.event_track[p]),
        "start": float(row["start"]), "dur": float(row["dur"]), "self": float(row["self"]),
        "depth": int(row["depth"]), "args": json_safe(data.trace.args(event_id)), "flows": out,
        # a kernel's SM efficiency / occupancy / tensor core, a collective's bytes and bandwidths
        **({"metrics": m} if (m := data.metrics.of(int(p))) else {}),
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
    time = number(msg, "time")
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
