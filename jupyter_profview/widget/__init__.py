"""The notebook widget's kernel side: the anywidget class (:mod:`.widget`), its command
handlers (:mod:`.rpc`), level of detail (:mod:`.lod`), the binary wire codec (:mod:`.codec`)
and the self-contained HTML export (:mod:`.static_html`)."""

from __future__ import annotations

from .widget import TraceWidget

__all__ = ["TraceWidget"]
