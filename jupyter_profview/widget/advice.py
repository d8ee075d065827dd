"""The findings of [advise][jupyter_profview.analysis.advice.advise] in the widget.

`advice_value` is the `_advice` trait the front end draws (`js/src/advice.ts`): the findings'
numbers exactly as in `Advice.findings` (the front end only formats them), plus the window.
`evidence_focus` is what a click on a finding does: the evidence in the widget's event ids, and
the range to zoom to -- the first evidence event in the step that holds the most of it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..analysis.advice import Advice
from ..analysis.advice.facts import annotation_steps
from ..model import Trace


def advice_value(advice: Advice, token: int) -> dict[str, Any]:
    """The `_advice` trait of `advice`."""
    f = advice.findings
    rows = []
    for row in f.to_dict("records"):
        rows.append({
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
