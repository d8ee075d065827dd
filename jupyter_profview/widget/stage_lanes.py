"""A pipeline run's stage lanes ("Stage lanes" in the toolbar; trait ``_stage_lanes``).

One lane per pipeline stage with its actions (`pipeline_bubbles`' `actions`: `PP:<stage><kind><mb>`,
GPipe's `Forward <mb>` / `Backward <mb>`) coloured by kind (`palette.PIPELINE_KIND_GROUP` /
`PIPELINE_COLORS`) and labelled by microbatch; behind them the stage's bubbles shaded: the time of
each of its rank's steps not covered by the stage's compute (`PipelineBubbles.stage_runs`, the
analysis' own definition); and the per-stage table, over the profiled steps: `compute` = the sum of
the stage's `stages.compute`, `bubble` = the sum of its rank's step `dur` minus that, `share` =
`bubble` / the summed `dur`.  A click on a stage's row (``_stage_pick`` ``{stage}``) selects and
highlights its actions in the timeline and the table; a click on an action (``{action}``) selects
it and its stage's row.

The value of ``_stage_lanes``: ``{available}`` (the trace names pipeline actions: the toolbar
shows the button) and, while shown, ``origin`` (ns on the view's clock: every time below is
relative to it), ``groups`` (``[{group, color}]``: the legend, the groups drawn, then the bubble),
``steps`` (``[{step, rank, start, end}]``), ``stages`` (``[{stage, rank, actions, compute, bubble,
dur, share, bubbles: [[start, end], ...]}]``), ``actions`` (columns ``stage``, ``kind``, ``step``, ``group``,
``microbatch`` (-1: none), ``start``, ``end``, ``id`` (the view's event id)), ``selected`` (a
stage, or -1), ``token``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.pipeline import PipelineBubbles, pipeline_bubbles
from ..derived import difference, union
from ..errors import ProfviewError
from ..kinds import pipeline_action
from ..palette import PIPELINE_BUBBLE_COLOR, PIPELINE_COLORS, PIPELINE_KIND_GROUP
from .critical_path import id_mapping
from .panel import TOKENS, Panel, ViewSession
from .requests import RequestError
from .state import WidgetData

__all__ = ["StageLanesPanel", "lanes_value"]


def _view_ids(data: WidgetData, actions: pd.DataFrame) -> np.ndarray:
    """The view's event id of each action (-1: not in the view)."""
    out = np.full(len(actions), -1, np.int64)
    ranked = data.ranked
    for rank in pd.unique(actions["rank"]):
        mine = (actions["rank"] == rank).to_numpy(bool)
        mapping, _ = id_mapping(data, int(rank) if ranked else None)
        out[mine] = mapping.reindex(actions["event"].to_numpy(np.int64)[mine]).fillna(-1).to_numpy(np.int64)
    return out


def lanes_value(data: WidgetData, pp: PipelineBubbles, selected: int = -1) -> dict[str, Any]:
    """The ``_stage_lanes`` value of `pp` (module doc)."""
    steps = pp.ranks
    origin = int(steps["start"].min())
    step_end = steps["start"].to_numpy(np.int64) + steps["dur"].to_numpy(np.int64)
    acts = pp.actions
    groups = [PIPELINE_KIND_GROUP.get(str(k), "other") for k in acts["kind"]]
    stages: list[dict[str, Any]] = []
    for stage, rows in pp.stages.groupby("stage", sort=True):
        rank = int(rows["rank"].iloc[0])
        mine = (steps["rank"] == rank).to_numpy(bool)
        dur = int(steps["dur"].to_numpy(np.int64)[mine].sum())
        compute = int(rows["compute"].sum())
        lo, hi = difference(union(steps["start"].to_numpy(np.int64)[mine], step_end[mine]),
                            pp.stage_runs(int(str(stage))))
        stages.append({"stage": int(str(stage)), "rank": rank,
                       "actions": int((acts["stage"].to_numpy() == int(str(stage))).sum()),
                       "compute": compute, "bubble": dur - compute, "dur": dur,
                       "share": (dur - compute) / dur if dur else 0.0,
                       "bubbles": np.stack([lo - origin, hi - origin], axis=1).tolist()})
    drawn = [g for g in PIPELINE_COLORS if g in set(groups)]
    return {
        "available": True, "origin": origin,
        "groups": [{"group": g, "color": PIPELINE_COLORS[g]} for g in drawn]
        + [{"group": "bubble", "color": PIPELINE_BUBBLE_COLOR}],
        "steps": [{"step": str(s), "rank": int(r), "start": int(a) - origin, "end": int(b) - origin}
                  for s, r, a, b in zip(steps["step"], steps["rank"], steps["start"], step_end, strict=True)],
        "stages": stages,
        "actions": {
            "stage": acts["stage"].astype(int).tolist(), "kind": acts["kind"].astype(str).tolist(),
            "step": acts["step"].astype(str).tolist(),
            "group": groups, "microbatch": acts["microbatch"].fillna(-1).astype(int).tolist(),
            "start": (acts["start"].to_numpy(np.int64) - origin).tolist(),
            "end": (acts["end"].to_numpy(np.int64) - origin).tolist(),
            "id": _view_ids(data, acts).tolist(),
        },
        "selected": int(selected), "token": next(TOKENS),
    }


class StageLanesPanel(Panel):
    """The stage lanes and the per-stage compute / bubble table of a pipeline run (module doc)."""

    name = "stage_lanes"
    traits = ("_stage_lanes", "_stage_pick")
    toolbar = "Stage lanes"

    def __init__(self, session: ViewSession) -> None:
        super().__init__(session)
        #: the analysis shown, or None
        self.pp: PipelineBubbles | None = None
        self.selected = -1
        #: the ``_stage_lanes`` value shown (a pick only changes its `selected` and `token`)
        self.value: dict[str, Any] = {}

    def available(self) -> bool:
        """Whether the view's trace names pipeline actions (its toolbar shows the button)."""
        events = self.session.data.trace.events
        if not len(events) or "name" not in events.columns:
            return False
        name = events["name"]
        values = name.cat.categories if isinstance(name.dtype, pd.CategoricalDtype) else pd.unique(name)
        return any(pipeline_action(str(v)) is not None for v in values)

    def state(self) -> dict[str, Any]:
        return {"_stage_lanes": {"available": self.available()}, "_stage_pick": {}}

    def show(self, pp: PipelineBubbles | None) -> dict[str, Any]:
        """The traits that draw `pp` (None hides the lanes)."""
        self.pp, self.selected = pp, -1
        if pp is None:
            return {"_stage_lanes": {"available": self.available()}}
        self.value = lanes_value(self.session.data, pp)
        return {"_stage_lanes": self.value}

    def open(self, args: Mapping[str, Any]) -> dict[str, Any]:
        pp = pipeline_bubbles(self.session.source)
        if not pp.labelled:
            raise ProfviewError("the trace names no pipeline actions",
                                expected="PP:<stage><kind><microbatch> or Forward/Backward <mb> ranges "
                                         "(torch.distributed.pipelining)")
        return self.show(pp)

    def close(self) -> dict[str, Any]:
        return self.show(None)

    def apply(self, name: str, value: Any) -> dict[str, Any]:
        pp = self.pp
        if not isinstance(value, Mapping) or not ({"stage", "action"} & set(value)):
            raise RequestError("_stage_pick must be {stage: n} or {action: i}, with a token")
        if pp is None:
            return {}
        ids = _view_ids(self.session.data, pp.actions)
        try:
            if "action" in value:
                k = int(value["action"])
                if not 0 <= k < len(ids):
                    raise RequestError(f"no action {k}")
                stage, pick = int(pp.actions["stage"].to_numpy(np.int64)[k]), ids[k:k + 1]
            else:
                stage = int(value["stage"])
                pick = ids[(pp.actions["stage"].to_numpy() == stage)]
        except (TypeError, ValueError):
            raise RequestError("_stage_pick's stage / action must be an integer") from None
        return self.select_stage(stage, pick[pick >= 0])

    def select_stage(self, stage: int, ids: np.ndarray) -> dict[str, Any]:
        """Select (and highlight) the events `ids` and mark `stage`'s row selected."""
        session = self.session
        self.selected = stage
        out = session.select(np.unique(session.data.positions(ids)), highlight=True)
        self.value = {**self.value, "selected": int(stage), "token": next(TOKENS)}
        return {**out, "_stage_lanes": self.value}
