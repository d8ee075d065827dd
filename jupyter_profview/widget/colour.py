"""Colour by, the panel: the timeline coloured by category, phase, or a kernel / collective
number (`metric_colors.py` computes the colours; the switch is the toolbar's select)."""

from __future__ import annotations

from typing import Any

from .metric_colors import COLOR_CHOICES
from .panel import Panel
from .requests import RequestError
from .summary import summary_frame


class ColourPanel(Panel):
    """Colour by: category, phase, or a kernel / collective number (the `color_by` trait; a new
    colouring sends a new `_info`, legend included, `_overview` and `_summary`: the collapsed lanes too)."""

    name = "colour"
    traits = ("color_by",)

    def state(self) -> dict[str, Any]:
        return {"color_by": self.session.data.legend.color_by}

    def apply(self, name: str, value: Any) -> dict[str, Any]:
        data = self.session.data
        if value not in COLOR_CHOICES:
            raise RequestError(f"color_by must be one of {COLOR_CHOICES}, not {value!r}")
        if value == data.legend.color_by:
            return {"color_by": value}
        data.recolor(value)
        # the collapsed groups' busy lanes are coloured by the same legend codes
        summary = summary_frame(data.timeline, data.tracks(), data.events)
        return {"_info": data.info(), "_overview": data.overview(), "_summary": summary, "color_by": value}
