"""``TraceWidget``: the notebook widget (kernel side).

The wire protocol is ``docs/widget-protocol.md``; the command handlers are thin
wrappers around the pure functions of `jupyter_profview.widget.rpc`.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import anywidget
import numpy as np
import pandas as pd
import traitlets
from anywidget.experimental import command

from ..analysis.advice import Advice, advise
from ..analysis.attribution import BY, Attribution, attribute_members
from ..analysis.critical_path import CriticalPath, critical_path
from ..kinds import STEP_ANNOTATION
from ..model import Trace
from . import rpc
from .advice import advice_value, evidence_focus
from .codec import encode_frame
from .critical_path import id_mapping, path_frame
from .icicle import icicle_frame
from .session import COMMANDS, ViewSession
from .traits import TRAITS

STATIC = Path(__file__).parent.parent / "static"
_ESM_PATH = STATIC / "widget.js"
_CSS_PATH = STATIC / "widget.css"
_BUILD_HINT = "cd js && npm install && npm run build   (or: pip install -e . , which runs the same build)"
_MISSING_ESM = "export default { render({ el }) { el.textContent = 'jupyter_profview: bundle missing'; } };"
_tokens = itertools.count(1)


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

    #: the TraceSet of an all-ranks widget (`jupyter_profview.widget.ranks.show_ranks`)
    traceset: Any = None

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
        #: the view's state, changes and commands, as the server's worker holds them
        self.session = ViewSession(trace, color_by)
        self._data = self.session.data
        self._path: CriticalPath | None = None
        self._attribution: Attribution | None = None
        self._icicle_window: tuple[float, float] | None = None
        self.icicle_backward = "launch"
        #: the icicle merges the instances of a numbered annotation (ProfilerStep#N) into one node
        self.icicle_merge_steps = True
        #: recomputes the shown path for another instance (set by show_critical_path)
        self._path_source: Any = trace
        self._advice_shown: Advice | None = None
        self._advice_annotation: str | None = STEP_ANNOTATION
        super().__init__(**{**self.session.state(), **kwargs})
        self.set_trait("selection", trace.events.iloc[:0])
        self.set_trait("visible", self.session.extent)

    # -- public API -------------------------------------------------------------
    @property
    def trace(self) -> Trace:
        return self._data.trace

    def zoom_to(self, start: float, end: float) -> None:
        """Ask the front end to show ``[start, end]`` (relative, in ``trace.time_unit``)."""
        start, end = float(start), float(end)
        if not (np.isfinite(start) and np.isfinite(end) and start < end):
            raise ValueError(f"zoom_to needs finite start < end, got {start}, {end}")
        self._zoom_request = {"start": start, "end": end, "token": next(_tokens)}
        # What the user sees next; the front end reports its own moves through _view later (a
        # later _view equal to the old one, e.g. the reset button, must still count as a change).
        self._view = {"start": start, "end": end}

    def select(self, x: Any, *, highlight: bool = False) -> pd.DataFrame:
        """Select events from Python (what ``highlight`` takes: a DataFrame of events, a boolean
        mask or a query string): ``w.selection`` becomes them and the table lists them (with
        their launch rows and the efficiency of their ops); ``highlight=True`` also highlights
        them.  Returns the selected events."""
        pos = self._positions_of(x)
        rows = self.trace.events.iloc[pos]
        with self.hold_sync():
            if highlight:
                self.highlight(rows, zoom=False)
            self.session.selected = pos
            self.set_trait("selection", rows)
            self._kernel_selection = {"token": next(_tokens), "count": int(len(pos))}
        return rows

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
        events = self.trace.events
        pos = self._positions_of(x)
        token = next(_tokens)
        self._highlight = encode_frame({"id": self._data.ids[pos].astype(np.int32)}, {"token": token})
        if zoom and len(pos):
            t0 = float(self._data.start[pos].min())
            t1 = float(self._data.end[pos].max())
            full0, full1 = self._data.timeline.extent()
            pad = max((t1 - t0) * 0.05, (full1 - full0) * 1e-6, 1.0)
            lo, hi = max(t0 - pad, full0), min(t1 + pad, full1)
            self.zoom_to(lo, hi if hi > lo else lo + pad)
        return events.iloc[pos]

    @property
    def critical_path(self) -> CriticalPath | None:
        """The critical path shown (`show_critical_path`, or the step picker's), or None."""
        return self._path

    def show_critical_path(self, cp: CriticalPath | None, *, zoom: bool = True, source: Any = None) -> None:
        """Draw ``cp`` (`jupyter_profview.analysis.critical_path`): its events highlighted,
        everything else dimmed, its launch / gap / sync edges as arrows, its breakdown as a bar and
        its segments as a table (click one to zoom to it); the step picker recomputes it for another
        instance of its annotation.  ``None`` clears it.  A path of one rank of a TraceSet shown in
        the all-ranks widget is drawn on that rank's lanes; ``source`` (the Trace or TraceSet it was
        computed from) is what the step picker recomputes on (default: the widget's trace, or the
        TraceSet the all-ranks widget was made from)."""
        if cp is None:
            self._path = None
            with self.hold_sync():
                self._critical_path = b""
                self.critical_path_instance = -1
                self.highlight(None, zoom=False)
            return
        if not isinstance(cp, CriticalPath):
            raise TypeError(f"show_critical_path takes a CriticalPath, got {type(cp).__name__}")
        if source is not None:
            self._path_source = source
        elif cp.rank is not None and getattr(self, "traceset", None) is not None:
            self._path_source = self.traceset
        self._path = cp
        ids, shift = id_mapping(self._data, cp.rank)
        lit = ids.reindex(cp.events["event"].to_numpy(np.int64)).dropna().to_numpy(np.int64)
        with self.hold_sync():
            self._critical_path = path_frame(self._data, cp, ids, shift, next(_tokens))
            self.set_trait("critical_path_instance", -1 if cp.instance is None else int(cp.instance))
            self.highlight(self.trace.events.loc[lit], zoom=False)
            if zoom:
                ev = cp.events
                lo = float(min(cp.start, ev["start"].min() if len(ev) else cp.start))
                hi = float(max(cp.end, (ev["start"] + ev["dur"]).max() if len(ev) else cp.end))
                pad = max((hi - lo) * 0.02, 1.0)
                self.zoom_to(lo + shift - pad, hi + shift + pad)

    @property
    def icicle(self) -> pd.DataFrame | None:
        """The tree the icicle shows (`jupyter_profview.analysis.attribute`), or None."""
        return None if self._attribution is None else self._attribution.tree

    def show_icicle(self, by: str = "annotation", *, measure: str = "gpu", backward: str = "launch",
                    merge_steps: bool = True) -> None:
        """Show the icicle of ``attribute(trace, by, backward=backward, merge_steps=merge_steps)``
        above the table (by default every ``ProfilerStep#N`` is one ``ProfilerStep`` node: which
        part of the step costs most, over the whole run), its boxes
        sized by GPU (``measure="gpu"``) or CPU time; clicking a node highlights and selects every
        slice and kernel under it; a shift-drag range on the timeline redraws it for that range.
        ``by=""`` hides it."""
        if by and by not in BY:
            raise ValueError(f"icicle by must be one of {BY} or '', not {by!r}")
        if measure not in ("gpu", "cpu"):
            raise ValueError(f"icicle measure must be 'gpu' or 'cpu', not {measure!r}")
        self.icicle_backward = backward
        self.icicle_merge_steps = merge_steps
        with self.hold_sync():
            self.icicle_measure = measure
            if self.icicle_by == by:
                self._draw_icicle()
            else:
                self.set_trait("icicle_by", by)

    def _draw_icicle(self, *, recompute: bool = True) -> None:
        """Send the icicle of ``icicle_by``; ``recompute=False`` re-lays out the tree already
        computed (a change of ``icicle_measure`` changes only the boxes' widths)."""
        by = self.icicle_by
        if not by:
            self._attribution = None
            self._icicle = b""
            return
        if recompute or self._attribution is None:
            self._attribution = attribute_members(self.trace, by, backward=self.icicle_backward,
                                                  window=self._icicle_window,
                                                  merge_steps=self.icicle_merge_steps)
        self._icicle = icicle_frame(self._attribution, by=by, measure=self.icicle_measure,
                                    window=self._icicle_window, token=next(_tokens))

    @traitlets.validate("icicle_by")
    def _check_icicle_by(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in ("", *BY):
            raise traitlets.TraitError(f"icicle_by must be one of {BY} or '', not {proposal['value']!r}")
        return str(proposal["value"])

    @traitlets.validate("icicle_measure")
    def _check_icicle_measure(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in ("gpu", "cpu"):
            raise traitlets.TraitError(f"icicle_measure must be 'gpu' or 'cpu', not {proposal['value']!r}")
        return str(proposal["value"])

    @traitlets.observe("icicle_by", "icicle_measure")
    def _on_icicle(self, change: dict[str, Any]) -> None:
        if hasattr(self, "_data"):
            self._draw_icicle(recompute=change["name"] == "icicle_by")

    @traitlets.observe("_icicle_pick")
    def _on_icicle_pick(self, change: dict[str, Any]) -> None:
        pick = change["new"] or {}
        att = self._attribution
        try:
            row = int(pick["node"])
        except (KeyError, TypeError, ValueError):
            return
        if att is None or not 0 <= row < len(att.tree):
            return
        self.select(self.trace.events.loc[att.events_under(row)], highlight=True)

    @property
    def advice(self) -> Advice | None:
        """The findings shown in the panel (`show_advice`), or None."""
        return self._advice_shown

    def show_advice(self, advice: Advice | None = None, *,
                    annotation: str | None = STEP_ANNOTATION) -> Advice:
        """Show the findings of `advise` in a panel above the table: one line per finding with
        its severity, time at stake and share of the window; clicking a finding highlights its
        evidence (everything else dimmed), zooms to the first evidence in the step that holds the
        most of it, and lists the evidence in the table (`w.selection`).  `advice` defaults to
        `advise(trace, annotation=annotation)` (of the TraceSet for an all-ranks widget)."""
        if advice is None:
            source = getattr(self, "traceset", None) or self.trace
            advice = advise(source, annotation=annotation)
        if not isinstance(advice, Advice):
            raise TypeError(f"show_advice takes an Advice, got {type(advice).__name__}")
        self._advice_shown = advice
        self._advice_annotation = annotation
        self._advice = advice_value(advice, next(_tokens))
        return advice

    def pick_finding(self, k: int) -> pd.DataFrame:
        """What a click on finding `k` does (also callable from Python): highlight and select its
        evidence and zoom to it.  Returns the evidence events."""
        advice = self._advice_shown
        if advice is None or not 0 <= k < len(advice.findings):
            raise IndexError(f"no finding {k} is shown")
        row = advice.findings.iloc[k]
        rank = int(row["rank"]) if "rank" in advice.findings.columns else None
        ids, shift = id_mapping(self._data, rank)
        own = np.asarray(row["events"], np.int64)
        source = getattr(self, "traceset", None)
        trace = source[rank] if source is not None and rank is not None else self.trace
        lo, hi = evidence_focus(trace, own, self._advice_annotation,
                                (advice.window[0] - shift, advice.window[1] - shift) if rank is not None
                                else advice.window)
        mine = ids.reindex(own).dropna().to_numpy(np.int64)
        with self.hold_sync():
            rows = self.select(self.trace.events.loc[mine], highlight=True)
            if hi > lo:
                self.zoom_to(lo + shift, hi + shift)
        return rows

    @traitlets.observe("_advice_pick")
    def _on_advice_pick(self, change: dict[str, Any]) -> None:
        try:
            k = int((change["new"] or {})["finding"])
        except (KeyError, TypeError, ValueError):
            return
        if self._advice_shown is not None and 0 <= k < len(self._advice_shown.findings):
            self.pick_finding(k)

    @traitlets.observe("critical_path_instance")
    def _on_path_instance(self, change: dict[str, Any]) -> None:
        cp = self._path
        new = int(change["new"])
        if cp is None or cp.annotation is None or new < 0 or new == cp.instance:
            return
        try:
            fresh = critical_path(self._path_source, annotation=cp.annotation, instance=new, rank=cp.rank)
        except ValueError as exc:  # ProfviewError: no such instance
            self.log.warning("profview: critical path of instance %s: %s", new, exc)
            self.set_trait("critical_path_instance", -1 if cp.instance is None else cp.instance)
            return
        self.show_critical_path(fresh)

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
        state["_zoom_request"] = {"start": start, "end": end, "token": next(_tokens)}
        text = widget_html(state, _ESM_PATH.read_bytes(),
                           _CSS_PATH.read_text(encoding="utf-8") if _CSS_PATH.is_file() else "",
                           title=title or f"profview: {self.trace.info.source or self.trace.format}")
        out = Path(path)
        out.write_text(text, encoding="utf-8")
        return out

    # -- browser -> kernel -------------------------------------------------------
    @traitlets.validate(*(t.name for t in TRAITS if t.session and t.set_by == "both"))
    def _check_session_trait(self, proposal: dict[str, Any]) -> Any:
        """A bad `color_by` or `shown_ranks` is refused before it is set (the session says why)."""
        name, value = proposal["trait"].name, proposal["value"]
        if hasattr(self, "session"):
            try:
                self.session.apply({name: value})
            except rpc.RequestError as exc:
                raise traitlets.TraitError(str(exc)) from None
        return value

    @traitlets.observe("color_by")
    def _on_color_by(self, change: dict[str, Any]) -> None:
        if hasattr(self, "session"):  # the session recoloured in the check: send the new colours
            self._info = self._data.info()
            self._overview = self._data.overview()

    @traitlets.observe("_view")
    def _on_view(self, change: dict[str, Any]) -> None:
        view = change["new"] or {}
        try:
            start, end = float(view["start"]), float(view["end"])
        except (KeyError, TypeError, ValueError):
            return
        if np.isfinite(start) and np.isfinite(end) and start <= end:
            self.set_trait("visible", (start, end))

    @traitlets.observe("_selection")
    def _on_selection(self, change: dict[str, Any]) -> None:
        try:
            self.session.apply({"_selection": change["new"]})
        except rpc.RequestError as exc:
            self.log.warning("profview: ignoring bad %s", exc)
        rng = (change["new"] or {}).get("range") if self.selection_error is None else None
        window = (float(min(rng)), float(max(rng))) if isinstance(rng, list) and len(rng) == 2 else None
        if self.icicle_by and window != self._icicle_window and (window is not None or not change["new"]):
            self._icicle_window = window
            self._draw_icicle()
        self.set_trait("selection", self.trace.events.iloc[self.session.selected])

    @property
    def selection_error(self) -> str | None:
        """Why the browser's last `_selection` was refused, or None."""
        return self.session.selection_error
