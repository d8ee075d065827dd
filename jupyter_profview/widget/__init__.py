"""The notebook widget's kernel side: the anywidget class (`.widget`), its command
handlers (`.rpc`, on the per-trace state of `.state`, requests validated by
`.requests`), level of detail (`.lod` for the timeline, `.memory_lod` for the
memory panel), the binary wire codec (`.codec`),
the number formatting shared with the front end (`.numbers`, re-exporting
`jupyter_profview.numbers`), the self-contained HTML export (`.static_html`) and the
side-by-side view of two runs (`.compare`).

``TraceWidget`` is imported on first use, so that the pure modules (codec, lod, numbers, rpc)
load without anywidget and ipywidgets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .widget import TraceWidget

__all__ = ["TraceWidget"]


def __getattr__(name: str) -> Any:
    if name == "TraceWidget":
        from .widget import TraceWidget

        return TraceWidget
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
