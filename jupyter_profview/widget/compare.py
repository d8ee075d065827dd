"""The side-by-side view of a `Comparison`
(``profview.show(profview.compare(a, b))``).

`CompareView` is an ``ipywidgets.VBox``: a header, the TraceWidget of A,
the ops table (an ``ipywidgets.Select``, one row per op / kernel, largest
``|delta|`` first), the TraceWidget of B.  Times line up through the
comparison's ``offset`` (B time = A time + offset): when one timeline's
``visible`` window changes, the other is asked to show the mapped window
(``zoom_to``).  The front end answers a zoom request with a ``visible`` change
of its own; such an echo (a window equal to one we asked that widget for in the
last `ECHO_SECONDS`) is not mapped back, so the two never chase each
other, even while the user keeps zooming.  Picking a table row highlights that
op in both timelines (``highlight(..., zoom=False)``, so the shared window
stays put).

Display budget: the overview frames of both widgets together stay within
``budget`` bytes (4 MiB, the budget of one widget); where they would not, each
widget's overview is recomputed at a narrower width for its share.

Layering: the comparison itself (tables, verdict, chart) is in
`jupyter_profview.analysis`; ``profview.show(comparison)`` imports this module when
it is called, the only reference from the analyses to the widget.
"""

from __future__ import annotations

import html
import time
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import ProfviewError
from ..model import Trace
from ..numbers import format_duration

if TYPE_CHECKING:
    from ..analysis.compare import Comparison

DISPLAY_BUDGET = 4 * 1024 * 1024
ECHO_SECONDS = 1.0
TABLE_ROWS = 200


def state_bytes(widget: Any) -> int:
    """Bytes of a TraceWidget's binary synced state (overview frames, memory, nodes, highlight)."""
    values = (getattr(widget, name) for name in widget.trait_names(sync=True))
    return sum(len(v) for v in values if isinstance(v, bytes))


def fit_budget(widgets: list[Any], budget: int) -> None:
    """Recompute the timeline overviews so that all ``widgets`` together stay within ``budget``."""
    if sum(state_bytes(w) for w in widgets) <= budget:
        return
    fixed = sum(state_bytes(w) - len(w._overview) for w in widgets)
    share = max(1, (budget - fixed) // len(widgets))
    for w in widgets:
        if len(w._overview) > share:
            w._overview = w._data.timeline.overview(budget=share)


def row_text(name: str, row: pd.Series, what: str, unit: str) -> str:
    """One line of the ops table: signed change, status, counts, op or kernel, name."""
    delta = float(row["delta"])
    sign = "+" if delta > 0 else "-" if delta < 0 else " "
    return (f"{sign}{format_duration(abs(delta), unit):>10}  {row['status']:<7}  {int(row['count_a']):>5} -> "
            f"{int(row['count_b']):<5}  {what:<6}  {name}")


class CompareView:
    """Both timelines stacked, zoom and pan synced through the alignment offset, the ops
    table between them.  ``view.a``/``view.b``: the TraceWidgets; ``view.table``: the Select;
    ``view.box``: the VBox (what the notebook displays)."""

    def __init__(self, comparison: Comparison, *, budget: int = DISPLAY_BUDGET, rows: int = 10,
                 **widget_options: Any) -> None:
        import ipywidgets as ipw

        from ..analysis.compare_view import changes
        from .widget import TraceWidget

        self.comparison = c = comparison
        if not (isinstance(c.a, Trace) and isinstance(c.b, Trace)):
            raise ProfviewError("show() draws two single traces side by side",
                                expected="two Traces, e.g. "
                                         "profview.show(profview.compare(set_a[rank], set_b[rank]))")
        self.offset = c.offset
        self.a = TraceWidget(c.a, **widget_options)
        self.b = TraceWidget(c.b, **widget_options)
        fit_budget([self.a, self.b], budget)
        table = changes(c).head(TABLE_ROWS)
        options = [("   change    status   count A->B   what    name", None)] + [
            (row_text(str(name), row, str(row["what"]), c.time_unit),
             ("name" if row["what"] == "kernel" else c.by, str(name)))
            for name, row in table.iterrows()]
        self.table = ipw.Select(options=options, value=None, rows=rows, layout=ipw.Layout(width="100%"))
        self.table.add_class("pv-compare-ops")
        style = ipw.HTML("<style>.pv-compare-ops select { font-family: monospace; white-space: pre; }"
                         "</style>")
        offset = format_duration(c.offset, c.time_unit)
        summary = ipw.HTML(f"<b>A</b> {html.escape(c.label_a)} &nbsp; <b>B</b> {html.escape(c.label_b)} "
                           f"&nbsp; (aligned on {c.align}, offset {offset})<br>{html.escape(c.summary())}")
        self.box = ipw.VBox([style, summary, ipw.HTML("<b>A</b>"), self.a, self.table,
                             ipw.HTML("<b>B</b>"), self.b])
        self.highlighted: tuple[str, str] | None = None
        self._syncing = False
        # per side: (when, window) of our recent zoom requests, to recognise their echoes
        self._asked: dict[str, list[tuple[float, tuple[float, float]]]] = {"a": [], "b": []}
        self.a.observe(lambda ch: self._on_visible("a", ch["new"]), "visible")
        self.b.observe(lambda ch: self._on_visible("b", ch["new"]), "visible")
        self.table.observe(lambda ch: self.select(ch["new"]), "value")
        self._initial_window()

    # -- alignment ------------------------------------------------------------------
    def to_b(self, start: float, end: float) -> tuple[float, float]:
        return start + self.offset, end + self.offset

    def to_a(self, start: float, end: float) -> tuple[float, float]:
        return start - self.offset, end - self.offset

    def _initial_window(self) -> None:
        """Both show the time they have in common (in A's clock), where there is some."""
        a0, a1 = self.a.visible
        b0, b1 = self.to_a(*self.b.visible)
        lo, hi = max(a0, b0), min(a1, b1)
        if hi > lo:
            self.a.zoom_to(lo, hi)
            self.b.zoom_to(*self.to_b(lo, hi))

    def _on_visible(self, side: str, window: tuple[float, float]) -> None:
        if self._syncing:
            return
        now = time.monotonic()
        recent = [(t, w) for t, w in self._asked[side] if now - t < ECHO_SECONDS]
        echo = next((item for item in recent if _close(window, item[1])), None)
        if echo is not None:  # the front end answering one of our own zoom requests
            recent.remove(echo)
            self._asked[side] = recent
            return
        self._asked[side] = recent
        other_side = "b" if side == "a" else "a"
        other, target = (self.b, self.to_b(*window)) if side == "a" else (self.a, self.to_a(*window))
        if not target[1] > target[0] or _close(target, other.visible):
            return
        self._syncing = True
        try:
            self._asked[other_side].append((now, target))
            other.zoom_to(*target)
        finally:
            self._syncing = False

    # -- table -----------------------------------------------------------------------
    def select(self, key: tuple[str, str] | None) -> None:
        """Highlight the op ``key`` = (events column, value) in both timelines (None clears)."""
        self.highlighted = key
        for w in (self.a, self.b):
            if key is None:
                w.highlight(None, zoom=False)
            else:
                column, value = key
                w.highlight(w.trace.events[column].astype(str) == value, zoom=False)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.box._repr_mimebundle_(**kwargs)


def _close(x: tuple[float, float], y: tuple[float, float]) -> bool:
    tol = 1e-6 * max(abs(x[1] - x[0]), 1.0)
    return abs(x[0] - y[0]) <= tol and abs(x[1] - y[1]) <= tol
