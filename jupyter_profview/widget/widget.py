"""``TraceWidget``: the notebook widget (kernel side).

The wire protocol is ``docs/widget-protocol.md``; the command handlers are thin
wrappers around the pure functions of `jupyter_profview.widget.rpc`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import numpy as np
import pandas as pd
import traitlets
from anywidget.experimental import command

from ..analysis.advice import Advice
from ..analysis.attribution import Attribution
from ..analysis.critical_path import CriticalPath
from ..kinds import STEP_ANNOTATION
from ..model import Trace
from . import rpc
from .panel import TOKENS
from .session import COMMANDS, SETTERS, ViewSession
from .traits import TRAITS

STATIC = Path(__file__).parent.parent / "static"
_ESM_PATH = STATIC / "widget.js"
_CSS_PATH = STATIC / "widget.css"
_BUILD_HINT = "cd js && npm install && npm run build   (or: pip install -e . , which runs the same build)"
_MISSING_ESM = "export default { render({ el }) { el.textContent = 'jupyter_profview: bundle missing'; } };"


class BundleMissingError(FileNotFoundError):
    """The widget's JavaScript bundle (``static/widget.js``) has not been built."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"the widget's JavaScript bundle {path} is missing; build it with:  {_BUILD_HINT}"
        )


def _forward(name: str) -> Any:
    """The anywidget command `name`: the session's handler."""
    def run(self: TraceWidget, msg: Any, buffers: list[bytes]) -> rpc.Reply:
        return self.session.call(name, msg)
    run.__name__ = name
    return command(run)


#: the synced traits (one traitlet per entry of the spec) and the commands of a view, as the base
#: class of TraceWidget: anywidget collects the commands of every class of the widget's MRO
_ViewWidget: Any = type("_ViewWidget", (anywidget.AnyWidget,), {
    "__module__": __name__,
    **{t.name: t.traitlet() for t in TRAITS},
    **{name: _forward(name) for name in COMMANDS},
})


class TraceWidget(_ViewWidget):
    """A zoomable timeline, memory curves and a table for one `Trace`.

    * ``w.selection``: DataFrame of the selected rows of ``trace.events``
      (observable: ``w.observe(cb, "selection")``);
    * ``w.visible``: ``(start, end)`` of the visible window, in ``trace.time_unit``
      relative to the trace start (observable);
    * ``w.highlight(x)``, ``w.zoom_to(start, end)``, ``w.save_html(path)``;
    * ``w.collapsed_groups``: keys of the groups drawn collapsed (a ``process``, ``rank N/<process>``
      inside a rank's section, or a ``rank N`` section), ``w.shown_ranks``: the ranks shown,
      ``[]`` for all (both set by the user in the browser too);
    * ``w.session``: the [`ViewSession`][jupyter_profview.widget.session.ViewSession] the widget
      wraps (the server's worker wraps the same class for a JupyterLab tab).

    Its synced traits are those of [`TRAITS`][jupyter_profview.widget.traits.TRAITS].
    """

    # anywidget reads these files at class creation; fall back to a stub so that importing the
    # module never fails, and refuse to create a widget (with the build command) in __init__.
    _esm: Any = _ESM_PATH if _ESM_PATH.is_file() else _MISSING_ESM
    if _CSS_PATH.is_file():
        _css: Any = _CSS_PATH

    # the synced traits are those of jupyter_profview.widget.traits.TRAITS (made by _ViewWidget)

    # public, kernel only (derived from the two above)
    selection = traitlets.Instance(pd.DataFrame, read_only=True)
    visible = traitlets.Tuple(traitlets.Float(), traitlets.Float(), read_only=True)

    def __init__(self, trace: Trace, *, color_by: str = "auto", **kwargs: Any) -> None:
        if not isinstance(trace, Trace):
            raise TypeError(f"TraceWidget needs a jupyter_profview Trace, got {type(trace).__name__}")
        if type(self)._esm is _MISSING_ESM:  # the bundle was missing when this module was imported
            if not _ESM_PATH.is_file():
                raise BundleMissingError(_ESM_PATH)
            # built after this module was imported: send the files' contents
            self._esm = _ESM_PATH.read_text(encoding="utf-8")
            self._css = _CSS_PATH.read_text(encoding="utf-8") if _CSS_PATH.is_file() else ""
        #: the view's state, changes, commands and panels, as the server's worker holds them
        self.session = ViewSession(trace, color_by)
        self._data = self.session.data
        self._pushing = False
        self._ready = False
        super().__init__(**{**self.session.state(), **kwargs})
        self.set_trait("selection", trace.events.iloc[:0])
        self.set_trait("visible", self.session.first_view)
        self._ready = True
        # traits given to the constructor that the session keeps (shown_ranks, icicle_by ...)
        given = {k: v for k, v in kwargs.items() if k in SETTERS and k != "_selection"}
        if given:
            self._push(self.session.apply(given))

    # -- public API -------------------------------------------------------------
    @property
    def trace(self) -> Trace:
        return self._data.trace

    @property
    def traceset(self) -> Any:
        """The TraceSet of an all-ranks widget (`jupyter_profview.widget.ranks.show_ranks`), or
        None: what the panels' analyses run on, kernel and collective numbers included."""
        return self.session.traceset

    @traceset.setter
    def traceset(self, ts: Any) -> None:
        self.session.source = self.trace if ts is None else ts
        self._data.metrics.source = ts

    def zoom_to(self, start: float, end: float) -> None:
        """Ask the front end to show ``[start, end]`` (relative, in ``trace.time_unit``)."""
        self._push(self.session.zoom(start, end))

    def select(self, x: Any, *, highlight: bool = False) -> pd.DataFrame:
        """Select events from Python (what ``highlight`` takes: a DataFrame of events, a boolean
        mask or a query string): ``w.selection`` becomes them and the table lists them (with
        their launch rows and the efficiency of their ops); ``highlight=True`` also highlights
        them.  Returns the selected events."""
        self._push(self.session.select(self._positions_of(x), highlight=highlight))
        return self.selection

    def _positions_of(self, x: Any) -> np.ndarray:
        events = self.trace.events
        if x is None:
            return np.zeros(0, np.int64)
        if isinstance(x, str):
            pos = events.index.get_indexer(events.query(x).index)
        elif isinstance(x, pd.DataFrame):
            pos = self._data.positions(x.index.to_numpy())
        elif isinstance(x, pd.Series) and x.dtype == bool:
            pos = np.flatnonzero(x.reindex(events.index, fill_value=False).to_numpy(bool))
        elif isinstance(x, np.ndarray) and x.dtype == bool:
            if len(x) != len(events):
                raise ValueError(f"boolean mask has {len(x)} entries, trace.events has {len(events)}")
            pos = np.flatnonzero(x)
        else:
            raise TypeError("select() / highlight() take a DataFrame of events, a boolean mask or a "
                            "query string")
        return np.unique(np.asarray(pos, np.int64))

    def highlight(self, x: Any = None, *, zoom: bool = True) -> pd.DataFrame:
        """Highlight events and zoom to them; returns the highlighted events.

        ``x`` is a DataFrame of events (its index holds the ids), a boolean mask
        aligned with ``trace.events`` (Series or array), a ``DataFrame.query``
        string over ``trace.events``, or ``None`` to clear.
        """
        pos = self._positions_of(x)
        self._push(self.session.highlight(pos, zoom=zoom))
        return self.trace.events.iloc[pos]

    @property
    def critical_path(self) -> CriticalPath | None:
        """The critical path shown (`show_critical_path`, or the step picker's), or None."""
        return self.session.panel("critical_path").path  # type: ignore[no-any-return]

    def show_critical_path(self, cp: CriticalPath | None, *, zoom: bool = True, source: Any = None) -> None:
        """Draw ``cp`` (`jupyter_profview.analysis.critical_path`): its events highlighted,
        everything else dimmed, its launch / gap / sync edges as arrows, its breakdown as a bar and
        its segments as a table (click one to zoom to it); the step picker recomputes it for another
        instance of its annotation.  ``None`` clears it.  A path of one rank of a TraceSet shown in
        the all-ranks widget is drawn on that rank's lanes; ``source`` (the Trace or TraceSet it was
        computed from) is what the step picker recomputes on (default: the widget's trace, or the
        TraceSet the all-ranks widget was made from).  The panel: `widget/critical_path.py`."""
        self._push(self.session.panel("critical_path").show(cp, zoom=zoom, source=source))

    @property
    def icicle(self) -> pd.DataFrame | None:
        """The tree the icicle shows (`jupyter_profview.analysis.attribute`), or None."""
        att = self._attribution
        return None if att is None else att.tree

    @property
    def _attribution(self) -> Attribution | None:
        return self.session.panel("icicle").attribution  # type: ignore[no-any-return]

    @property
    def icicle_backward(self) -> str:
        return str(self.session.panel("icicle").backward)

    @property
    def icicle_merge_steps(self) -> bool:
        """Whether the icicle merges the instances of a numbered annotation (ProfilerStep#N)."""
        return bool(self.session.panel("icicle").merge_steps)

    def show_icicle(self, by: str = "annotation", *, measure: str = "gpu", backward: str = "launch",
                    merge_steps: bool = True) -> None:
        """Show the icicle of ``attribute(trace, by, backward=backward, merge_steps=merge_steps)``
        above the table (by default every ``ProfilerStep#N`` is one ``ProfilerStep`` node: which
        part of the step costs most, over the whole run), its boxes
        sized by GPU (``measure="gpu"``) or CPU time; clicking a node highlights and selects every
        slice and kernel under it; a shift-drag range on the timeline redraws it for that range.
        ``by=""`` hides it.  The panel: `widget/icicle.py`."""
        self._push(self.session.panel("icicle").show(by, measure=measure, backward=backward,
                                                     merge_steps=merge_steps))

    @property
    def advice(self) -> Advice | None:
        """The findings shown in the panel (`show_advice`), or None."""
        return self.session.panel("advice").advice  # type: ignore[no-any-return]

    def show_advice(self, advice: Advice | None = None, *,
                    annotation: str | None = STEP_ANNOTATION) -> Advice:
        """Show the findings of `advise` in a panel above the table: one line per finding with
        its severity, time at stake and share of the window; clicking a finding highlights its
        evidence (everything else dimmed), zooms to the first evidence in the step that holds the
        most of it, and lists the evidence in the table (`w.selection`).  `advice` defaults to
        `advise(trace, annotation=annotation)` (of the TraceSet for an all-ranks widget).  The
        panel: `widget/advice.py`."""
        panel = self.session.panel("advice")
        self._push(panel.show(advice, annotation))
        return panel.advice  # type: ignore[no-any-return]

    def pick_finding(self, k: int) -> pd.DataFrame:
        """What a click on finding `k` does (also callable from Python): highlight and select its
        evidence and zoom to it.  Returns the evidence events."""
        self._push(self.session.panel("advice").pick(k))
        return self.selection

    def selection_with_flows(self) -> pd.DataFrame:
        """``w.selection`` plus the other end of every flow and launch link of
        the selected events (the launch call of a selected kernel, the kernels of
        a selected launch), in event order; column ``linked`` is True for the
        rows added (see `jupyter_profview.analysis.linked_events`)."""
        from ..analysis import linked_events

        chosen = self.selection.index.to_numpy(np.int64)
        extra = linked_events(self.trace, chosen)
        ids = np.union1d(chosen, extra)
        rows = self.trace.events.loc[ids].copy()
        rows["linked"] = np.isin(ids, extra)
        return rows

    def selected_launches(self) -> pd.DataFrame:
        """The rows of ``trace.launches`` (kernel, its launch, launch delay, the
        issuing ``cpu_op``) of the selected events, whether the kernels or their
        launch calls are selected (e.g. a shift-drag range over a GPU stream)."""
        la = self.trace.launches
        ids = self.selection.index.to_numpy(np.int64)
        pick = la["kernel"].isin(ids).to_numpy() | la["launch"].isin(ids).fillna(False).to_numpy(bool)
        return la[pick]

    def save_html(self, path: str | Path, *, title: str | None = None) -> Path:
        """Write one self-contained offline HTML file that opens at the view shown now
        (``w.visible``: the last of ``zoom_to``/``highlight`` and the user's own zooming),
        with the current highlight and colours."""
        from .static_html import widget_html

        if not _ESM_PATH.is_file():
            raise BundleMissingError(_ESM_PATH)
        state = {t.name: getattr(self, t.name) for t in TRAITS if t.saved}
        state["_info"] = {**state["_info"], "static": True}
        start, end = self.visible
        # The page opens where the user is now, not at an earlier zoom_to/highlight request.
        state["_view"] = {"start": start, "end": end}
        state["_zoom_request"] = {"start": start, "end": end, "token": next(TOKENS)}
        text = widget_html(state, _ESM_PATH.read_bytes(),
                           _CSS_PATH.read_text(encoding="utf-8") if _CSS_PATH.is_file() else "",
                           title=title or f"profview: {self.trace.info.source or self.trace.format}")
        out = Path(path)
        out.write_text(text, encoding="utf-8")
        return out

    def to_perfetto(self, path: str | Path | None = None) -> Path:
        """Save the trace as a Perfetto protobuf trace (default: next to its file, ``.pftrace``),
        to open at https://ui.perfetto.dev; returns where (`jupyter_profview.export.to_perfetto`)."""
        from ..export import to_perfetto

        return to_perfetto(self.trace, path)

    # -- browser -> kernel -------------------------------------------------------
    def _push(self, out: dict[str, Any]) -> None:
        """Set the traits the session changed (what the server's worker sends a tab); a zoom moves
        `visible`, a selection made by the kernel side `selection`."""
        if not out:
            return
        with self.hold_sync():
            self._pushing = True
            try:
                for name, value in out.items():
                    self.set_trait(name, value)
                if "_zoom_request" in out:  # what the user sees next (a later equal _view still counts)
                    z = out["_zoom_request"]
                    self._view = {"start": z["start"], "end": z["end"]}
                if "_kernel_selection" in out:
                    self.set_trait("selection", self.trace.events.iloc[self.session.selected])
            finally:
                self._pushing = False

    @traitlets.validate(*(t.name for t in TRAITS if t.session and t.set_by == "both"))
    def _check_session_trait(self, proposal: dict[str, Any]) -> Any:
        """A trait set from Python or the browser goes through the session first: a bad value is
        refused (the session says why), the traits it changes in answer are sent (a new `color_by`
        a new `_info` and `_overview`, a new `critical_path_instance` the step's path)."""
        name, value = proposal["trait"].name, proposal["value"]
        if not getattr(self, "_ready", False) or self._pushing:
            return value
        try:
            out = self.session.apply({name: value})
        except rpc.RequestError as exc:
            raise traitlets.TraitError(str(exc)) from None
        value = out.pop(name, value)
        self._push(out)
        return value

    @traitlets.observe(*(t.name for t in TRAITS if t.session and t.set_by == "browser"))
    def _on_browser_trait(self, change: dict[str, Any]) -> None:
        """A trait only the browser sets (`_selection`, a pick, a toolbar request): the session
        applies it; a bad one is logged and ignored."""
        name = change["name"]
        if self._pushing:
            return
        try:
            out = self.session.apply({name: change["new"]})
        except (rpc.RequestError, IndexError) as exc:
            self.log.warning("profview: ignoring bad %s: %s", name, exc)
            out = {}
        self._push(out)
        if name == "_selection":
            self.set_trait("selection", self.trace.events.iloc[self.session.selected])

    @traitlets.observe("_view")
    def _on_view(self, change: dict[str, Any]) -> None:
        view = change["new"] or {}
        try:
            start, end = float(view["start"]), float(view["end"])
        except (KeyError, TypeError, ValueError):
            return
        if np.isfinite(start) and np.isfinite(end) and start <= end:
            self.set_trait("visible", (start, end))

    @property
    def selection_error(self) -> str | None:
        """Why the browser's last `_selection` was refused, or None."""
        return self.session.selection_error
