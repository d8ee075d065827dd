"""The one colour palette shared by the widget and the Altair charts."""

from __future__ import annotations

PALETTE = (  # categorical colours, one per legend entry
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#3e8fb0", "#d37295",
)
OTHER_COLOR = "#b3b3b3"
IDLE_COLOR = "#e6e6e6"
PHASE_COLORS = {
    "forward": "#4e79a7", "backward": "#f28e2b", "optimizer": "#59a14f",
    "communication": "#b07aa1", "other": OTHER_COLOR, "idle": IDLE_COLOR,
}
