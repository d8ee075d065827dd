"""The findings of [advise][jupyter_profview.analysis.advice.advise] in the widget.

`advice_value` is the `_advice` trait the front end draws (`js/src/advice.ts`): the findings'
numbers exactly as in `Advice.findings` (the front end only formats them), plus the window.
`evidence_focus` is what a click on a finding does: the evidence in the widget's event ids, and
the range to zoom to -- the first evidence event in the step that holds the most of it.
`AdvicePanel` is the panel ("What's wrong" in the toolbar): the findings shown and their picks.
A pick (a click, or `w.pick_finding(k)`) also sends `_finding` (`finding_frame`): which finding is
picked, so that the front end marks its row whoever picked it, and for a `gpu_idle` finding its
idle intervals (`Advice.idle_intervals`, the rule's own) and the tracks of its GPU, shaded there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.advice import Advice, advise
from ..analysis.advice.facts import annotation_steps
from ..derived import device_activities
from ..kinds import STEP_ANNOTATION
from ..model import Trace
from .codec import encode_frame
from .critical_path import id_mapping
from .panel import TOKENS, Panel, ViewSession
from .requests import RequestError
from .state import WidgetData


def advice_value(advice: Advice, token: int) -> dict[str, Any]:
    """The `_advice` trait of `advice`."""
    f = advice.findings
    rows = []
    for k, row in enumerate(f.to_dict("records")):
        # a gpu_idle finding's evidence is first its idle intervals (it may have no event at all)
        idle = {"intervals": len(advice.idle_intervals(k))} if row["rule"] == "gpu_idle" else {}
        rows.append({**idle,
            "rule": str(row["rule"]), "severity": str(row["severity"]), "time": int(row["time"]),
            "share": float(row["share"]), "count": int(row["count"]), "device": str(row["device"]),
            "message": str(row["message"]), "fix": str(row["fix"]),
            "rank": int(row["rank"]) if "rank" in row else None,
        })
    return {"findings": rows, "window": [int(advice.window[0]), int(advice.window[1])], "token": token}


def evidence_focus(trace: Trace, ids: np.ndarray, annotation: str | None,
                   window: tuple[int, int]) -> tuple[int, int]:
    """The range to show for a finding whose evidence is `ids` (event ids of `trace`): the
    first evidence event (by start) inside the step that holds the most evidence starts, padded
    by 5 % of its length; the advice window when there is no evidence."""
    if len(ids) == 0:
        return window
    ev = trace.events.loc[ids]
    start = ev["start"].to_numpy(np.int64)
    end = start + ev["dur"].to_numpy(np.int64)
    steps = annotation_steps(trace, annotation) if annotation else pd.DataFrame()
    pick = np.arange(len(ids))
    if len(steps):
        s, e = steps["start"].to_numpy(np.int64), steps["end"].to_numpy(np.int64)
        which = np.searchsorted(s, start, side="right") - 1
        inside = (which >= 0) & (start < e[np.maximum(which, 0)])
        if inside.any():
            counts = np.bincount(which[inside], minlength=len(steps))
            best = int(np.argmax(counts))
            pick = np.flatnonzero(inside & (which == best))
    first = pick[np.argmin(start[pick])]
    lo, hi = int(start[first]), int(end[first])
    pad = max((hi - lo) // 20, 1)
    return lo - pad, hi + pad


def gpu_tracks(data: WidgetData, trace: Trace, gpu: str, ids: pd.Series) -> list[int]:
    """The widget's tracks (lanes) of `gpu`: those its device activities
    (`derived.device_activities` of `trace`, mapped to the widget's ids by `ids`) lie on."""
    acts = device_activities(trace)
    mine = acts["event"].to_numpy(np.int64)[acts["gpu"].astype(str).to_numpy() == gpu]
    pos = data.events.index.get_indexer(ids.reindex(mine).dropna().to_numpy(np.int64))
    return sorted(int(t) for t in np.unique(data.timeline.event_track[pos[pos >= 0]]))


def finding_frame(k: int, rule: str, token: int, idle: pd.DataFrame | None = None, shift: int = 0,
                  gpu: str = "", tracks: list[int] | None = None) -> bytes:
    """The `_finding` frame: meta `finding` (the picked row, -1 for none), `rule`, `token`; for a
    gpu_idle finding also columns `start`, `end` (its idle intervals on the widget's clock: `shift`
    added) and meta `device`, `tracks` (its GPU's lanes), `intervals` (count), `idle` (ns, total)."""
    meta: dict[str, Any] = {"finding": int(k), "rule": rule, "token": token}
    if idle is None:
        return encode_frame({"start": np.zeros(0), "end": np.zeros(0)}, meta)
    meta.update(device=gpu, tracks=list(tracks or []), intervals=int(len(idle)), idle=int(idle["dur"].sum()))
    return encode_frame({"start": idle["start"].to_numpy(np.float64) + shift,
                         "end": idle["end"].to_numpy(np.float64) + shift}, meta)


class AdvicePanel(Panel):
    """The findings of `advise` above the table (`_advice`); a click on one (`_advice_pick`)
    highlights and selects its evidence and zooms to it."""

    name = "advice"
    traits = ("_advice", "_advice_pick", "_finding")
    toolbar = "What's wrong"

    def __init__(self, session: ViewSession) -> None:
        super().__init__(session)
        #: the findings shown, or None
        self.advice: Advice | None = None
        self.annotation: str | None = STEP_ANNOTATION

    def state(self) -> dict[str, Any]:
        return {"_advice": {}, "_advice_pick": {}, "_finding": b""}

    def show(self, advice: Advice | None = None, annotation: str | None = STEP_ANNOTATION) -> dict[str, Any]:
        """Show `advice` (default: `advise` of the session's source over `annotation`)."""
        if advice is None:
            advice = advise(self.session.source, annotation=annotation)
        if not isinstance(advice, Advice):
            raise TypeError(f"show_advice takes an Advice, got {type(advice).__name__}")
        self.advice, self.annotation = advice, annotation
        return {"_advice": advice_value(advice, next(TOKENS)),
                "_finding": finding_frame(-1, "", next(TOKENS))}

    def open(self, args: Mapping[str, Any]) -> dict[str, Any]:
        annotation = args.get("annotation", STEP_ANNOTATION)
        if annotation is not None and not isinstance(annotation, str):
            raise RequestError("annotation must be a string or null")
        return self.show(None, annotation)

    def close(self) -> dict[str, Any]:
        self.advice = None
        return {"_advice": {}, "_finding": finding_frame(-1, "", next(TOKENS))}

    def apply(self, name: str, value: Any) -> dict[str, Any]:
        try:
            k = int((value or {})["finding"])
        except (KeyError, TypeError, ValueError):
            raise RequestError("_advice_pick must be {finding: k, token}") from None
        return self.pick(k)

    def pick(self, k: int) -> dict[str, Any]:
        """A click on finding `k`: select and highlight its evidence, zoom to it (a gpu_idle
        finding: to the window, its idle intervals shaded on its GPU's lanes); `_finding` says
        which row is picked."""
        advice, session = self.advice, self.session
        if advice is None or not 0 <= k < len(advice.findings):
            raise IndexError(f"no finding {k} is shown")
        row = advice.findings.iloc[k]
        rank = int(row["rank"]) if "rank" in advice.findings.columns else None
        ids, shift = id_mapping(session.data, rank)
        own = np.asarray(row["events"], np.int64)
        ts = session.traceset
        trace = ts[rank] if ts is not None and rank is not None else session.trace
        window = (advice.window[0] - shift, advice.window[1] - shift) if rank is not None else advice.window
        rule = str(row["rule"])
        first: int | None = None  # where the lanes scroll: the first evidence's, or the GPU's
        if rule == "gpu_idle":  # its idle intervals are the evidence that shows: the GPU's lanes
            gpu = str(row["device"])
            tracks = gpu_tracks(session.data, trace, gpu, ids)
            frame = finding_frame(k, rule, next(TOKENS), advice.idle_intervals(k), shift, gpu, tracks)
            lo, hi = window
            first = tracks[0] if tracks else None
        else:
            frame = finding_frame(k, rule, next(TOKENS))
            lo, hi = evidence_focus(trace, own, self.annotation, window)
        mine = ids.reindex(own).dropna().to_numpy(np.int64)
        out = session.select(np.unique(session.data.positions(mine)), highlight=True, first_track=first)
        out["_finding"] = frame
        if hi > lo:
            out.update(session.zoom(lo + shift, hi + shift))
        return out
