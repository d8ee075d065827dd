"""All ranks in one widget: `show_ranks` is ``profview.show(ts)``.

The widget draws [`TraceSet.combined`][jupyter_profview.ranks.traceset.TraceSet.combined] (every
table with a `rank` column); each rank is a section (``rank N``) of the timeline, its lanes named
by the widget ([`track_table`][jupyter_profview.widget.lod.track_table]), collapsed to one busy
lane by default.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..ranks.traceset import TraceSet


def show_ranks(ts: TraceSet, ranks: Iterable[int] | None = None, *, align: str | int | None = None,
               collapsed: bool = True, **options: Any) -> Any:
    """The widget of `jupyter_profview.show` for a TraceSet: rank sections
    (``rank N``) collapsed to one busy lane each (``collapsed=False``: expanded);
    ``align="step"`` (or a step number) shifts each rank so that the first
    ``ProfilerStep`` every rank has starts at the same time (``ts.aligned``), and
    makes that time 0: what came before it has negative times (the widget's axis
    starts there); ``info.align`` records the step and ``at`` = 0."""
    from .widget import TraceWidget

    trace = ts.combined(ranks, align=align)
    if not collapsed:  # collapsed is the default of every view (ViewSession.state)
        options.setdefault("collapsed_groups", [])
    from .metric_colors import METRICS

    metric = options.pop("color_by") if options.get("color_by") in METRICS else None
    widget = TraceWidget(trace, **options)
    widget.traceset = ts  # what the panels' analyses run on; kernel and collective numbers too
    if metric is not None:
        widget.color_by = metric
    return widget

