"""The panels every view has: the timeline, the memory curves, the table and the rank sections
([`Panel`][jupyter_profview.widget.panel.Panel]s of [`PANELS`][jupyter_profview.widget.panels.PANELS]).

Their data and commands are `WidgetData` (`state.py`) and the pure functions of `rpc.py`; these
classes say which traits and commands are theirs and answer them inside the session.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import rpc
from .codec import encode_frame
from .lod import section_key
from .panel import Panel
from .requests import RequestError
from .summary import summary_frame


class TimelinePanel(Panel):
    """The timeline: lanes, slices, the highlight, the view's window and the user's selection;
    the toolbar's requests (`_panel_request`) are the view's too."""

    name = "timeline"
    traits = ("_info", "_tracks", "_overview", "_nodes", "_summary", "_highlight", "_zoom_request", "_view",
              "_selection", "split_layout", "_panel_request", "_panel_status", "show_wrappers")
    commands = {"_detail": "detail", "_event": "event"}

    def state(self) -> dict[str, Any]:
        s = self.session
        data = s.data
        start, end = s.first_view
        return {
            "_info": data.info(),
            "_tracks": data.tracks(),
            "_overview": data.overview(),
            "_nodes": data.nodes_frame(),
            "_summary": summary_frame(data.timeline, data.tracks(), data.events),
            "_highlight": encode_frame({"id": np.zeros(0, np.int32)}, {"token": 0}),
            "_view": {"start": start, "end": end},
            "_selection": {},
            "_zoom_request": {},
            "_panel_request": {},
            "_panel_status": {},
            "show_wrappers": data.show_wrappers,
        }

    def apply(self, name: str, value: Any) -> dict[str, Any]:
        if name == "_panel_request":
            return self.session.open_panel(value)
        if name == "show_wrappers":
            return self._show_wrappers(value)
        return self._set_selection(value)

    def _show_wrappers(self, value: Any) -> dict[str, Any]:
        """`show_wrappers`: draw (or hide) the lanes that hold only the profiler's own records; the
        lane list (`_tracks`, each lane's ``hidden``) is sent again."""
        if not isinstance(value, bool):
            raise RequestError(f"show_wrappers must be true or false, not {value!r}")
        data = self.session.data
        data.show_wrappers = value
        return {"show_wrappers": value, "_tracks": data.tracks()}

    def _set_selection(self, sel: Any) -> dict[str, Any]:
        s = self.session
        try:
            pos = s.data.selection_positions(sel)
        except rpc.RequestError as exc:
            s.selected = np.zeros(0, np.int64)
            s.selection_error = str(exc)
            raise rpc.RequestError(f"_selection: {exc}") from None
        s.selection_error = None
        if "range" in (sel or {}):  # a range over the ranks shown only
            pos = s.data.keep_allowed(pos)
        s.selected = pos
        out: dict[str, Any] = {}
        for p in s.panels.values():
            out.update(p.selection_changed(sel))
        return out

    def detail(self, msg: Any) -> rpc.Reply:
        return rpc.detail(self.session.data, msg)

    def event(self, msg: Any) -> rpc.Reply:
        return rpc.event(self.session.data, msg)


class MemoryPanel(Panel):
    """The memory and counter curves, and the allocations alive at a time."""

    name = "memory"
    traits = ("_memory",)
    commands = {"_memory_detail": "memory_detail", "_live": "live"}

    def state(self) -> dict[str, Any]:
        return {"_memory": self.session.data.memory_overview()}

    def memory_detail(self, msg: Any) -> rpc.Reply:
        return rpc.memory_detail(self.session.data, msg)

    def live(self, msg: Any) -> rpc.Reply:
        return rpc.live(self.session.data, msg)


class TablePanel(Panel):
    """The table: the window's or the selection's events (their launch rows, their ops'
    efficiency); `_kernel_selection` tells it the kernel side chose the selection."""

    name = "table"
    traits = ("_kernel_selection",)
    commands = {"_table": "table"}

    def state(self) -> dict[str, Any]:
        return {"_kernel_selection": {}}

    def table(self, msg: Any) -> rpc.Reply:
        return rpc.table(self.session.data, msg, self.session.selected)


class RanksPanel(Panel):
    """The rank sections of a view of several ranks: which ranks are shown (`shown_ranks`, kept by
    the session: a range selects over those only) and which sections are collapsed."""

    name = "ranks"
    traits = ("shown_ranks", "collapsed_groups")

    def state(self) -> dict[str, Any]:
        ranks = self.session.data.trace.info.ranks
        return {"shown_ranks": [], "collapsed_groups": [section_key(int(r)) for r in ranks]}

    def apply(self, name: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, list) or any(isinstance(r, bool) or not isinstance(r, int) for r in value):
            raise RequestError("shown_ranks must be a list of ranks")
        data = self.session.data
        events = data.events
        if not value or not self.session.data.ranked:
            data.allowed = None
        else:
            data.allowed = events["rank"].isin(value).to_numpy(bool)
        return {}
