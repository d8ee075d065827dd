"""Analyses: functions from a Trace to DataFrames (times in the trace's ``time_unit``).

* `.summary` -- per-key totals, self time and shares; phases per device; top events.
* `.memory` -- the memory peak and what is live at a given time.
* `.ranks` -- across the ranks of a TraceSet: step times, stragglers, collective skew.
* `.gpu` -- kernels, launches, idle time, overlap and queues per GPU (from ``trace.launches``).
* `.attribution` -- GPU time by the model's structure: annotations, modules, frames, ops.
* `.efficiency` -- achieved FLOP/s and bandwidth of GEMMs / convolutions against the device's peak.
* `.kernels` -- each kernel's SM efficiency, occupancy and tensor-core use (Kineto's kernel args).
* `.collectives` -- each collective's bytes, algorithm and bus bandwidth; matched across ranks.
* `.pipeline` -- pipeline parallelism: bubble per step, rank and stage; the slowest stage.
* `.critical_path` -- what bounds a step: the longest chain of ops, launches, kernels and syncs.
* `.allocator` -- a CUDA memory snapshot's segments and blocks at any time, fragmentation, and
  why each out-of-memory happened (`oom`).
* `.advice` -- what is wrong: findings with the time at stake and their evidence (`advise`).
* `.compare` -- two runs side by side (`compare`); its presentation in `.compare_view`.

The trace's derived facts every analysis reads are public here too: `steps` (the
instances of ``ProfilerStep``) and `device_activities` (every device activity with its kind
and launch), from `jupyter_profview.derived`.

Each analysis of one Trace also accepts a TraceSet and answers rank by rank, with a ``rank``
column (`.traceset`); ``linked_events`` takes one rank (event ids are per rank).
"""

from __future__ import annotations

from .advice import Advice, advise
from .allocator import allocator_state, fragmentation, oom
from .attribution import attribute
from .collectives import CollectiveSummary, collective_bandwidth, collective_summary
from .compare import Comparison, compare
from .critical_path import CriticalPath, critical_path
from .critical_path import steps as critical_path_steps
from .efficiency import op_efficiency
from .facts import device_activities, steps
from .gpu import (
    comm_comp_overlap,
    idle_time,
    kernel_breakdown,
    launch_stats,
    linked_events,
    queue_length,
    queue_length_series,
    temporal_breakdown,
    utilisation,
)
from .kernels import kernel_efficiency
from .memory import live_at, peak_time
from .pipeline import PipelineBubbles, pipeline_bubbles
from .ranks import collective_calls, collective_skew, step_times, stragglers
from .summary import bytes_column, phases, self_intervals, summary, top, union_length

__all__ = ["steps", "device_activities", "Advice", "advise",
           "allocator_state", "fragmentation", "oom", "attribute", "op_efficiency", "CriticalPath",
           "critical_path", "critical_path_steps",
           "comm_comp_overlap", "idle_time", "kernel_breakdown", "launch_stats", "linked_events",
           "queue_length", "queue_length_series", "temporal_breakdown", "utilisation",
           "Comparison", "bytes_column", "compare", "live_at", "peak_time", "phases", "self_intervals",
           "summary", "top", "union_length", "collective_calls", "collective_skew", "step_times",
           "stragglers", "kernel_efficiency", "collective_bandwidth", "collective_summary",
           "CollectiveSummary", "PipelineBubbles", "pipeline_bubbles"]
