"""The memory snapshot panel: the active memory timeline (``_alloc_timeline``,
`alloc_timeline.timeline_frame`) and the segment view at the selected time (``_segments``, from
`analysis.allocator_state`) of a ``torch_cuda_snapshot`` trace; drawn by ``js/src/alloc_timeline.ts``
and ``js/src/segments.ts``.

It shows itself when the view opens on a snapshot (no toolbar button).  The browser asks with
``_memview_request``: ``{start, end, token}`` (the visible window changed: the bands of that window,
its level of detail), ``{time, token}`` (a click: the segments at that time) and ``{device}``
(another device).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..analysis.allocator import allocator_state
from .alloc_timeline import busiest_device, devices, is_snapshot, segments_frame, timeline_frame
from .panel import TOKENS, Panel, ViewSession
from .requests import RequestError


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise RequestError(f"_memview_request: {name} must be a number")
    return float(value)


class MemviewPanel(Panel):
    """The active memory timeline and the segment view of a CUDA memory snapshot."""

    name = "memview"
    traits = ("_alloc_timeline", "_segments", "_memview_request")

    def __init__(self, session: ViewSession) -> None:
        super().__init__(session)
        trace = session.trace
        self.enabled = is_snapshot(trace)
        self.device = busiest_device(trace) if self.enabled else ""
        self.window: tuple[float, float] | None = None
        self.time: float | None = None

    def state(self) -> dict[str, Any]:
        if not self.enabled:
            return {"_alloc_timeline": b"", "_segments": b"", "_memview_request": {}}
        return {"_alloc_timeline": self.timeline(), "_segments": b"", "_memview_request": {}}

    def timeline(self) -> bytes:
        return timeline_frame(self.session.trace, self.device, self.window, token=next(TOKENS))

    def segments(self) -> bytes:
        if self.time is None:
            return b""
        state = allocator_state(self.session.trace, int(self.time), int(self.device.split(":")[-1]))
        return segments_frame(state, self.device, self.time, token=next(TOKENS))

    def apply(self, name: str, value: Any) -> dict[str, Any]:
        if not self.enabled:
            raise RequestError("_memview_request: this trace is not a CUDA memory snapshot")
        if not isinstance(value, Mapping):
            raise RequestError("_memview_request must be {start, end} or {time} or {device}")
        out: dict[str, Any] = {}
        if "device" in value:
            if value["device"] not in devices(self.session.trace):
                raise RequestError(f"_memview_request: no device {value['device']!r}")
            self.device = str(value["device"])
            out["_alloc_timeline"] = self.timeline()
            if self.time is not None:
                out["_segments"] = self.segments()
        if "start" in value or "end" in value:
            s, e = _number(value.get("start"), "start"), _number(value.get("end"), "end")
            self.window = (min(s, e), max(s, e))
            out["_alloc_timeline"] = self.timeline()
        if "time" in value:
            self.time = _number(value["time"], "time")
            out["_segments"] = self.segments()
        return out

    def show_time(self, time: float) -> dict[str, Any]:
        """The traits that show the segments at `time` (the trace's ns, as `allocations`)."""
        return self.apply("_memview_request", {"time": time})
