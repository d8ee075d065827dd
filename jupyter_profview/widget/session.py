"""[`ViewSession`][jupyter_profview.widget.session.ViewSession]: one view of a Trace, whatever shows it.

The notebook widget ([`TraceWidget`][jupyter_profview.widget.widget.TraceWidget]) and the server's
worker (`jupyter_profview.server.worker`, behind a JupyterLab tab or `profview serve`) both wrap one
session: the traits a view starts with ([`state`][jupyter_profview.widget.session.ViewSession.state]),
the changes the browser makes ([`apply`][jupyter_profview.widget.session.ViewSession.apply], for the
traits of [`TRAITS`][jupyter_profview.widget.traits.TRAITS] marked `session`) and the commands of the
widget's RPC ([`call`][jupyter_profview.widget.session.ViewSession.call]).  Only the transport
differs: traitlets and anywidget commands in a notebook, framed HTTP replies from the server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from . import rpc
from .codec import encode_frame
from .lod import section_key
from .metric_colors import COLOR_CHOICES
from .summary import summary_frame
from .traits import BY_NAME

#: what the timeline can be coloured by: category, phase, or a kernel / collective number
COLOR_BY = COLOR_CHOICES


class ViewSession:
    """The state, the changes and the commands of one view of `trace` (see the module doc).

    - `data`: the trace and its indexes (`WidgetData`, `widget/state.py`);
    - `selected`: positions in `trace.events` of the browser's selection (`_selection`);
    - `selection_error`: why the last `_selection` was refused, or None.
    """

    def __init__(self, trace: Any, color_by: str = "auto") -> None:
        self.data = rpc.WidgetData(trace, color_by)
        self.selected = np.zeros(0, np.int64)
        self.selection_error: str | None = None
        extent = self.data.timeline.extent() if self.data.n else self.data.memory.extent()
        #: the whole trace's window, where a view opens
        self.extent: tuple[float, float] = (float(extent[0]), float(extent[1]))

    @property
    def trace(self) -> Any:
        return self.data.trace

    def state(self) -> dict[str, Any]:
        """The synced traits a view starts with (the `session` traits of the spec, and
        `collapsed_groups`: several ranks start collapsed to one busy lane each)."""
        data = self.data
        start, end = self.extent
        return {
            "_info": data.info(),
            "_tracks": data.tracks(),
            "_overview": data.overview(),
            "_memory": data.memory_overview(),
            "_nodes": data.nodes_frame(),
            "_summary": summary_frame(data.timeline, data.tracks(), data.events),
            "_highlight": encode_frame({"id": np.zeros(0, np.int32)}, {"token": 0}),
            "_view": {"start": start, "end": end},
            "_selection": {},
            "color_by": data.legend.color_by,
            "shown_ranks": [],
            "collapsed_groups": [section_key(int(r)) for r in data.trace.info.ranks],
        }

    def apply(self, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Apply traits the browser set; returns the traits changed in answer (a new `color_by`
        sends a new `_info` and `_overview`).  A trait the session does not keep, or that the
        browser may not set, or a bad value raises `RequestError` (the server answers
        `{"error": ...}`, the widget refuses the trait)."""
        out: dict[str, Any] = {}
        for name, value in changes.items():
            spec = BY_NAME.get(name)
            if spec is None or not spec.session or not spec.browser_sets:
                raise rpc.RequestError(f"trait {name!r} cannot be set from the browser")
            out.update(SETTERS[name](self, value))
        return out

    def call(self, name: str, msg: Any) -> rpc.Reply:
        """One command of the widget's RPC (`_detail`, `_table`, ...): `(reply, buffers)`."""
        handler = COMMANDS.get(name)
        if handler is None:
            return {"error": f"unknown command {name!r}"}, []
        return handler(self, msg)

    # -- the session's traits --------------------------------------------------------
    def _set_selection(self, sel: Any) -> dict[str, Any]:
        try:
            pos = self.data.selection_positions(sel)
        except rpc.RequestError as exc:
            self.selected = np.zeros(0, np.int64)
            self.selection_error = str(exc)
            raise rpc.RequestError(f"_selection: {exc}") from None
        self.selection_error = None
        if "range" in (sel or {}):  # a range over the ranks shown only
            pos = self.data.keep_allowed(pos)
        self.selected = pos
        return {}

    def _set_color_by(self, value: Any) -> dict[str, Any]:
        if value not in COLOR_BY:
            raise rpc.RequestError(f"color_by must be one of {COLOR_BY}, not {value!r}")
        if value == self.data.legend.color_by:
            return {"color_by": value}
        self.data.recolor(value)
        return {"_info": self.data.info(), "_overview": self.data.overview(), "color_by": value}

    def _set_shown_ranks(self, ranks: Any) -> dict[str, Any]:
        if not isinstance(ranks, list) or any(isinstance(r, bool) or not isinstance(r, int) for r in ranks):
            raise rpc.RequestError("shown_ranks must be a list of ranks")
        events = self.data.events
        if not ranks or not self.data.ranked:
            self.data.allowed = None
        else:
            self.data.allowed = events["rank"].isin(ranks).to_numpy(bool)
        return {}


def _table(session: ViewSession, msg: Any) -> rpc.Reply:
    return rpc.table(session.data, msg, session.selected)


#: the commands of a view (anywidget `experimental.invoke` names) -> their handlers
COMMANDS: dict[str, Callable[[ViewSession, Any], rpc.Reply]] = {
    "_detail": lambda s, msg: rpc.detail(s.data, msg),
    "_memory_detail": lambda s, msg: rpc.memory_detail(s.data, msg),
    "_table": _table,
    "_event": lambda s, msg: rpc.event(s.data, msg),
    "_live": lambda s, msg: rpc.live(s.data, msg),
}


#: how the session applies each trait it keeps that the browser sets (the spec's `session`
#: traits with `set_by` browser or both; tests/test_widget_traits.py checks the two agree)
SETTERS: dict[str, Callable[[ViewSession, Any], dict[str, Any]]] = {
    "_selection": ViewSession._set_selection,
    "color_by": ViewSession._set_color_by,
    "shown_ranks": ViewSession._set_shown_ranks,
}
