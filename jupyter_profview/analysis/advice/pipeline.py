"""The `pipeline_bubble` rule of [advise][jupyter_profview.analysis.advice.advise].

On a pipeline-parallel run (a trace or TraceSet whose ranks hold `torch.distributed.pipelining`'s
action ranges; [`pipeline_bubbles`][jupyter_profview.analysis.pipeline.pipeline_bubbles] for every
definition): one finding per rank whose bubble is at least 1 % of its steps.

- `time`: the rank's bubble summed over its steps (step − compute);
- the message: the rank's bubble and share, the share the schedule alone explains
  (`expected_share`), and every stage's mean compute per step, slowest first;
- the fix: move layers from the slowest stage to the fastest (their compute per step); more
  microbatches, with the expected share at 2 × m; an interleaved or zero-bubble schedule;
- the evidence: the rank's pipeline actions.

A schedule that names no action (`Schedule1F1B`) is not recognisable as a pipeline: no finding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...numbers import format_duration
from ..pipeline import PipelineBubbles, pipeline_bubbles

if TYPE_CHECKING:
    from ...model import Trace
    from ...ranks.traceset import TraceSet

#: a rank's bubble must be at least this share of its steps (%)
MIN_BUBBLE_SHARE = 1.0


def _share(p: int, v: int, m: int) -> float:
    return (p - 1) / (v * m + p - 1)


def _advice(result: PipelineBubbles) -> tuple[str, str]:
    """The stage sentence of the message and the fix, shared by every rank's finding."""
    per = result.stages.groupby("stage", sort=True)["compute"].mean()
    per = per.sort_values(ascending=False, kind="stable")
    stages = ", ".join(f"stage {s} {format_duration(float(c))}" for s, c in per.items())
    slow, fast = per.index[0], per.index[-1]
    what = f"Per step the stages compute: {stages}."
    tries = []
    if len(per) > 1 and per.iloc[0] > per.iloc[-1]:
        tries.append(f"move layers from stage {slow} ({format_duration(float(per.iloc[0]))} a step) to stage "
                     f"{fast} ({format_duration(float(per.iloc[-1]))}) so that the stages compute alike")
    p, v, m = result.pipeline_size, result.stages_per_rank, result.microbatches
    if m is not None and p > 1:
        tries.append(f"use more microbatches: {2 * m} instead of {m} brings the schedule's bubble from "
                     f"{100 * _share(p, v, m):.1f} % to {100 * _share(p, v, 2 * m):.1f} % of the step")
    if v == 1:
        tries.append("an interleaved schedule (ScheduleInterleaved1F1B: v stages per rank divide the "
                     "bubble by v) or a zero-bubble one (ScheduleInterleavedZeroBubble, "
                     "ScheduleZBVZeroBubble)")
    else:
        tries.append("a zero-bubble schedule (ScheduleInterleavedZeroBubble, ScheduleZBVZeroBubble) "
                     "fills the bubble with the weight-gradient work")
    return what, "; ".join(t[0].upper() + t[1:] if i == 0 else t for i, t in enumerate(tries)) + "."


def pipeline_bubble(source: Trace | TraceSet) -> list[dict[str, Any]]:
    """The findings of the rule (module docstring), one per rank, with `rank`."""
    result = pipeline_bubbles(source)
    if not result.labelled or len(result.ranks) == 0:
        return []
    stages, fix = _advice(result)
    expected = ("" if result.expected_share is None else
                f"; the schedule alone (p={result.pipeline_size}, v={result.stages_per_rank}, "
                f"m={result.microbatches}) leaves {100 * result.expected_share:.1f} %")
    found = []
    for rank, rows in result.ranks.groupby("rank", sort=True):
        bubble, dur = int(rows["bubble"].sum()), int(rows["dur"].sum())
        share = 100.0 * bubble / dur if dur > 0 else 0.0
        if share < MIN_BUBBLE_SHARE:
            continue
        events = result.actions.loc[result.actions["rank"].to_numpy() == rank, "event"]
        found.append({
            "rule": "pipeline_bubble", "rank": int(str(rank)), "time": bubble,
            "events": events.to_numpy(np.int64).tolist(), "device": "",
            "message": f"Rank {rank} waited {format_duration(bubble)} of its {len(rows)} steps' "
                       f"{format_duration(dur)} ({share:.1f} %) in pipeline bubbles{expected}. {stages}",
            "fix": fix,
            "expected_share": result.expected_share,
        })
    return found
