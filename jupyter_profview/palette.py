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

# ---- pipeline stage lanes (branch stagelanes, issue #34; widget/stage_lanes.py) -----------------
#: what each pipeline action kind (`kinds.PIPELINE_ACTION_KINDS`) is drawn as in the stage lanes
PIPELINE_KIND_GROUP = {
    "F": "forward", "I": "backward", "B": "backward", "W": "weight-grad",
    "SEND_F": "send/recv", "RECV_F": "send/recv", "SEND_B": "send/recv", "RECV_B": "send/recv",
    "UNSHARD": "other", "RESHARD": "other", "REDUCE_GRAD": "other", "OVERLAP_F_B": "other",
}
#: the colour of each group (legend order), and of the bubbles shaded behind the actions
PIPELINE_COLORS = {
    "forward": PHASE_COLORS["forward"], "backward": PHASE_COLORS["backward"], "weight-grad": "#59a14f",
    "send/recv": PHASE_COLORS["communication"], "other": OTHER_COLOR,
}
PIPELINE_BUBBLE_COLOR = "#f3c1c1"
# ---- end of the pipeline block ------------------------------------------------------------------
