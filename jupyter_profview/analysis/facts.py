"""The derived facts every analysis reads, as analyses: a Trace gives
[`derived.steps`][jupyter_profview.derived.step_instances.steps] and
[`derived.device_activities`][jupyter_profview.derived.activities.device_activities] as they are;
a TraceSet answers rank by rank, with a `rank` column first and the times on the set's common
clock ([`traceset`][jupyter_profview.analysis.traceset])."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from .. import derived
from ..kinds import STEP_ANNOTATION
from ..model import Trace
from .traceset import is_traceset, per_rank

if TYPE_CHECKING:
    from ..ranks.traceset import TraceSet


def steps(trace: Trace | TraceSet, annotation: str = STEP_ANNOTATION) -> pd.DataFrame:
    """The instances of `annotation` (`ProfilerStep#N`), CPU side and device side: the one
    definition of a step ([`derived.steps`][jupyter_profview.derived.step_instances.steps])."""
    if is_traceset(trace):
        return per_rank(steps, trace, annotation, rebase=True)
    return derived.steps(trace, annotation)


def device_activities(trace: Trace | TraceSet) -> pd.DataFrame:
    """Every device activity with its kind and its launch
    ([`derived.device_activities`][jupyter_profview.derived.activities.device_activities])."""
    if is_traceset(trace):
        return per_rank(device_activities, trace, rebase=True)
    return derived.device_activities(trace)
