"""A pipeline run's stages in the widget: highlight the actions of one stage (kernel side only).

The per-stage table is [`pipeline_bubbles`][jupyter_profview.analysis.pipeline.pipeline_bubbles]'s
`stages`; `highlight_stage(w, pp, stage)` selects what a click on a stage's row should: its actions
(`pp.actions`, event ids per rank) on the widget's lanes, through `w.highlight`.  The widget has no
stage lanes of its own yet (one lane per stage with the actions coloured by kind, the bubbles
shaded): the actions are drawn on their rank's thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .critical_path import id_mapping

if TYPE_CHECKING:
    from ..analysis.pipeline import PipelineBubbles
    from .widget import TraceWidget

__all__ = ["highlight_stage", "stage_event_ids"]


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
