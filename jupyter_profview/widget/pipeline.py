"""A pipeline run's stages in the widget, from Python.

`show_stage_lanes(w)` opens the stage lanes panel
([`StageLanesPanel`][jupyter_profview.widget.stage_lanes.StageLanesPanel]: one lane per stage,
actions coloured by kind and labelled by microbatch, bubbles shaded, the per-stage table; "Stage
lanes" in the toolbar) and, given `stage`, selects that stage's row and actions as a click on the
row does.  `highlight_stage(w, pp, stage)` highlights a stage's actions
(`pp.actions`, event ids per rank) on their rank's thread lanes, through `w.highlight`, in a step
and of some kinds only if asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import ProfviewError
from .critical_path import id_mapping

if TYPE_CHECKING:
    from ..analysis.pipeline import PipelineBubbles
    from .widget import TraceWidget

__all__ = ["highlight_stage", "show_stage_lanes", "stage_event_ids"]


def show_stage_lanes(w: TraceWidget, stage: int | None = None) -> PipelineBubbles:
    """Open the stage lanes of widget `w` (its trace or TraceSet names pipeline actions), select
    stage `stage`'s row and actions if given; returns the analysis shown."""
    session = w.session
    out = session.open_panel({"panel": "stage_lanes", "show": True})
    if out["_panel_status"]["error"]:
        raise ProfviewError(out["_panel_status"]["error"])
    if stage is not None:
        out.update(session.apply({"_stage_pick": {"stage": int(stage), "token": 0}}))
    w._push(out)
    pp: PipelineBubbles = session.panel("stage_lanes").pp
    return pp


def stage_event_ids(w: TraceWidget, pp: PipelineBubbles, stage: int, step: str | None = None,
                    kinds: tuple[str, ...] | None = None) -> np.ndarray:
    """The widget's event ids of stage `stage`'s actions (in step `step`, of the kinds `kinds`:
    all when None)."""
    actions = pp.actions
    pick = actions["stage"].to_numpy() == stage
    if step is not None:
        pick &= actions["step"].astype(str).to_numpy() == step
    if kinds is not None:
        pick &= actions["kind"].isin(kinds).to_numpy(bool)
    ranked = "rank" in w._data.events.columns
    ids: list[np.ndarray] = []
    for rank, group in actions[pick].groupby("rank", sort=True):
        mapping, _ = id_mapping(w._data, int(str(rank)) if ranked else None)
        ids.append(mapping.reindex(group["event"].to_numpy(np.int64)).dropna().to_numpy(np.int64))
    return np.concatenate(ids) if ids else np.zeros(0, np.int64)


def highlight_stage(w: TraceWidget, pp: PipelineBubbles, stage: int, step: str | None = None,
                    kinds: tuple[str, ...] | None = None, *, zoom: bool = True) -> pd.DataFrame:
    """Highlight (and zoom to) stage `stage`'s actions in widget `w` (`stage_event_ids`); returns
    the highlighted events."""
    ids = stage_event_ids(w, pp, stage, step, kinds)
    return w.highlight(w.trace.events.loc[ids], zoom=zoom)
