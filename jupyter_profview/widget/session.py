"""[`ViewSession`][jupyter_profview.widget.session.ViewSession]: one view of a Trace, whatever shows it.

The notebook widget ([`TraceWidget`][jupyter_profview.widget.widget.TraceWidget]) and the server's
worker (`jupyter_profview.server.worker`, behind a JupyterLab tab or `profview serve`) both wrap one
session: the traits a view starts with ([`state`][jupyter_profview.widget.session.ViewSession.state]),
the changes the browser makes ([`apply`][jupyter_profview.widget.session.ViewSession.apply], for the
traits of [`TRAITS`][jupyter_profview.widget.traits.TRAITS] marked `session`) and the commands of the
widget's RPC ([`call`][jupyter_profview.widget.session.ViewSession.call]).  Only the transport
differs: traitlets and anywidget commands in a notebook, framed HTTP replies from the server.

What the view shows is its panels ([`PANELS`][jupyter_profview.widget.panels.PANELS]): the session
holds one of each, sends a trait to the panel that owns it and a command to the panel that answers
it.  What a panel does to the whole view (highlight events, select them, zoom) goes through the
session's `highlight`, `select` and `zoom`, which return the traits to send.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from . import lod, rpc
from .files import ViewFiles
from .metric_colors import COLOR_CHOICES
from .panel import TOKENS, Panel
from .panels import COMMAND_OWNER, PANELS, TRAIT_OWNER
from .traits import BY_NAME

#: what the timeline can be coloured by: category, phase, or a kernel / collective number
COLOR_BY = COLOR_CHOICES

#: the commands of a view (anywidget `experimental.invoke` names), each answered by one panel
COMMANDS: tuple[str, ...] = tuple(COMMAND_OWNER)
#: the traits the browser sets that the session applies (the spec's `session` traits with
#: `set_by` browser or both) -> the panel that applies it; tests/test_widget_traits.py checks them
SETTERS: dict[str, type[Panel]] = {
    name: owner for name, owner in TRAIT_OWNER.items() if BY_NAME[name].session and BY_NAME[name].browser_sets
}


class ViewSession:
    """The state, the changes and the commands of one view of `trace` (see the module doc).

    - `data`: the trace and its indexes (`WidgetData`, `widget/state.py`);
    - `source`: what the analyses of the panels run on: the trace, or the TraceSet an all-ranks
      view was made from;
    - `panels`: name -> the view's panel of that name;
    - `selected`: positions in `trace.events` of the selection (the browser's `_selection`, or a
      panel's `select`);
    - `selection_error`: why the last `_selection` was refused, or None.
    """

    def __init__(self, trace: Any, color_by: str = "auto", source: Any = None) -> None:
        self.data = rpc.WidgetData(trace, color_by)
        self.source: Any = trace if source is None else source
        self.selected = np.zeros(0, np.int64)
        self.selection_error: str | None = None
        extent = self.data.timeline.extent() if self.data.n else self.data.memory.extent()
        #: the whole trace's window, where a view opens
        self.extent: tuple[float, float] = (float(extent[0]), float(extent[1]))
        #: where a view opens: the steps where the trace has them (`lod.first_view`)
        self.first_view: tuple[float, float] = (lod.first_view(self.data.trace, self.extent) if self.data.n
                                                 else self.extent)
        #: the files its panels may open or write (the server's worker confines them to its root)
        self.files = ViewFiles()
        self.panels: dict[str, Panel] = {p.name: p(self) for p in PANELS}

    @property
    def trace(self) -> Any:
        return self.data.trace

    @property
    def traceset(self) -> Any:
        """The TraceSet of an all-ranks view, or None."""
        return None if self.source is self.data.trace else self.source

    def panel(self, name: str) -> Any:
        """The view's panel called `name` (`PANELS`)."""
        return self.panels[name]

    def state(self) -> dict[str, Any]:
        """The synced traits a view starts with: every panel's (the `session` traits of the spec,
        and `collapsed_groups`: several ranks start collapsed to one busy lane each)."""
        out: dict[str, Any] = {}
        for p in self.panels.values():
            out.update(p.state())
        return out

    def apply(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Apply traits the browser set; returns the traits changed in answer (a new `color_by`
        sends a new `_info` and `_overview`, a `_panel_request` the panel's traits).  A trait the
        session does not keep, or that the browser may not set, or a bad value raises
        `RequestError` (the server answers `{"error": ...}`, the widget refuses the trait)."""
        out: dict[str, Any] = {}
        for name, value in changes.items():
            owner = SETTERS.get(name)
            if owner is None:
                raise rpc.RequestError(f"trait {name!r} cannot be set from the browser")
            out.update(self.panels[owner.name].apply(name, value))
        return out

    def call(self, name: str, msg: Any) -> rpc.Reply:
        """One command of the widget's RPC (`_detail`, `_table`, ...): `(reply, buffers)`."""
        owner = COMMAND_OWNER.get(name)
        if owner is None:
            return {"error": f"unknown command {name!r}"}, []
        return self.panels[owner.name].command(name, msg)

    # -- what panels do to the whole view ------------------------------------------------
    def zoom(self, start: float, end: float) -> dict[str, Any]:
        """Traits that show `[start, end]` (relative, in `trace.time_unit`)."""
        start, end = float(start), float(end)
        if not (np.isfinite(start) and np.isfinite(end) and start < end):
            raise ValueError(f"zoom_to needs finite start < end, got {start}, {end}")
        return {"_zoom_request": {"start": start, "end": end, "token": next(TOKENS)}}

    def highlight(self, pos: np.ndarray, *, zoom: bool = True, first_track: int | None = None
                  ) -> dict[str, Any]:
        """Traits that highlight the events at positions `pos` (and zoom to them); the front end
        scrolls its lanes to `first_track` (default: the topmost lane of the events)."""
        from .codec import encode_frame

        data = self.data
        # the topmost lane of the evidence: the front end scrolls its lanes to it
        lanes = data.timeline.event_track[pos] if len(pos) else ()
        first = {"first_track": int(np.min(lanes))} if len(lanes) else {}
        if first_track is not None:
            first = {"first_track": int(first_track)}
        out: dict[str, Any] = {
            "_highlight": encode_frame({"id": data.ids[pos].astype(np.int32)},
                                       {"token": next(TOKENS), **first})}
        if zoom and len(pos):
            t0, t1 = float(data.start[pos].min()), float(data.end[pos].max())
            full0, full1 = data.timeline.extent()
            pad = max((t1 - t0) * 0.05, (full1 - full0) * 1e-6, 1.0)
            lo, hi = max(t0 - pad, full0), min(t1 + pad, full1)
            out.update(self.zoom(lo, hi if hi > lo else lo + pad))
        return out

    def select(self, pos: np.ndarray, *, highlight: bool = False, first_track: int | None = None
               ) -> dict[str, Any]:
        """Select the events at positions `pos` (the table lists them); the traits that say so
        (with `highlight`: also highlighted, the lanes scrolled to `first_track` or the first)."""
        out = self.highlight(pos, zoom=False, first_track=first_track) if highlight else {}
        self.selected = np.asarray(pos, np.int64)
        self.selection_error = None
        out["_kernel_selection"] = {"token": next(TOKENS), "count": int(len(pos))}
        return out

    def open_panel(self, request: Any) -> dict[str, Any]:
        """`_panel_request` `{panel, show, ...}`: what a toolbar button asks: the panel's traits,
        and `_panel_status` (the panel shown, or why it could not be)."""
        if not isinstance(request, Mapping) or not isinstance(request.get("panel"), str):
            raise rpc.RequestError("_panel_request must be {panel: name, ...}")
        name = str(request["panel"])
        panel = self.panels.get(name)
        if panel is None or panel.toolbar is None:
            raise rpc.RequestError(f"no panel {name!r} opens from the toolbar")
        status: dict[str, Any] = {"panel": name, "shown": bool(request.get("show", True)), "error": "",
                                  "token": next(TOKENS)}
        try:
            out = panel.open(request) if status["shown"] else panel.close()
        except (ValueError, LookupError) as exc:  # ProfviewError is a ValueError: the package's text
            out, status["error"], status["shown"] = {}, str(exc), False
        return {**out, "_panel_status": status}
