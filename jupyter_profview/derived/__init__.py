"""The derived layer: the facts every analysis reads, computed once per Trace.

It sits between the loaders and the analyses (`ranks`, `export`, `analysis` and the front ends
read it; it reads a [`Trace`][jupyter_profview.model.Trace] and the name rules of
[`kinds`][jupyter_profview.kinds]).  A Trace is treated as immutable after load: each fact is
computed the first time it is asked for and cached on the Trace
([`cache`][jupyter_profview.derived.cache]).

- [`steps`][jupyter_profview.derived.step_instances.steps]: the instances of a step annotation
  (`ProfilerStep#N`), CPU side and device side -- the one definition of a step.
- [`device_activities`][jupyter_profview.derived.activities.device_activities]: every device
  activity with its kind (computation / communication / memory / dma / sync) and its launch.
- [`intervals`][jupyter_profview.derived.intervals]: union, intersection, difference and busy time
  of `[start, end)` intervals.
- [`queues`][jupyter_profview.derived.queues]: the queue length of each stream, with HTA's rule.
"""

from __future__ import annotations

from .activities import ACTIVITY_COLUMNS, complete_steps, device_activities
from .cache import forget
from .intervals import (
    busy,
    busy_before,
    busy_fraction,
    covered,
    difference,
    intersection,
    union,
    union_length,
    union_lengths,
)
from .masks import wrapper_mask
from .queues import SERIES_COLUMNS, enqueued, queue_levels, queue_series
from .step_instances import STEP_COLUMNS, cpu_steps, instances, last_step_start, step_mask, steps

__all__ = ["ACTIVITY_COLUMNS", "SERIES_COLUMNS", "STEP_COLUMNS", "busy", "busy_before",
           "busy_fraction", "complete_steps", "covered", "cpu_steps", "device_activities", "difference",
           "enqueued", "forget", "instances", "intersection", "last_step_start", "queue_levels",
           "queue_series", "step_mask", "steps", "union", "union_length", "union_lengths",
           "wrapper_mask"]
