"""The critical path of a step: the chain of CPU ops, launches, kernels and syncs that set its length.

Definition: HTA's *lightweight critical path*, computed here from `trace.events` and
`trace.launches` in exact ns.

**Graph.** Two nodes per event: its start and its end.  The events are the CPU ops and runtime /
driver calls (categories `cpu_op`, `cuda_runtime`, `cuda_driver`) that start inside the window and
last > 0, and the device activities (rows of `trace.launches`) whose launch call starts inside the
window.

**Edges** (the `type` column):

- `operator`: inside an op or a kernel.  On each CPU thread the ops are nested by time and walked
  depth first (start of A -> start of its first child -> ... -> end of its last child -> end of
  A); a device activity's start -> its end.  Weight: the time between the two nodes.  The edge
  into the end of a call that holds the host until the device is done
  ([`derived.host_syncs`][jupyter_profview.derived.masks.host_syncs]: `cudaDeviceSynchronize`,
  `cudaStreamSynchronize`, `cudaEventSynchronize`, `cudaMemcpy`, an async copy to or from
  pageable memory, and their HIP twins) or of HTA's further waits (`cudaEventQuery`, any
  `cudaMemcpyAsync`: [`kinds.HTA_PATH_WAITS`][jupyter_profview.kinds.HTA_PATH_WAITS], kept for
  HTA's path lengths) weighs 0: the wait is the GPU's time, reached through a `sync` edge.
- `dependency`: end of one top-level op -> start of the next on the same thread, weight 0: the
  time between top-level ops is never on the path.
- `launch`: start of the launch call -> start of its activity (weight: the time between), only
  when the stream was empty at the launch (queue length 1 with this launch, 0 when the activity
  starts) and the stream's previous activity (below) ended before the launch; otherwise a
  `kernel` edge.
- `kernel`: end of the stream's previous activity -> start of this one (the gap).  The stream's
  activities are taken by start; the *previous activity* is the one of them that ends last.  When
  an activity starts before it ends (kernels of one stream that overlap), the edge goes back in
  time and weighs 0.
- `sync`, weight 0: the last activity of a stream (`Stream Sync`), of every stream of the device
  (`Context Sync`) or the activity an event was recorded after (`Event Sync`) -> the end of the
  CPU call that waited; the activity an event was recorded after -> the first activity launched
  on the waiting stream after `cudaStreamWaitEvent`.  Read from the `cuda_sync` events Kineto
  records (PyTorch >= 2.1 with sync events on).

**Queue length** of a stream: the derived layer's
([`queue_levels`][jupyter_profview.derived.queues.queue_levels], HTA's rule): +1 when the launch
call of one of its activities starts (the calls that enqueue work,
`kinds.ENQUEUE_CALLS`), -1 when the activity starts; at equal
times the launches count first.

**Path.** The longest path by weight through this acyclic graph; `length` is its total weight.  It
can be longer than the step: GPU work launched in the step may run past the step's end; and
kernels of one stream that overlap are each on it whole.

**Attribution.** Each `operator` or `kernel` edge on the path is attributed to one event (an
`operator` edge to the op it lies in: the source of start->start, the op of start->end, the
destination of end->end, the enclosing op of end->start; a gap to the activity before it), and
`events.on_path` sums them.

**Breakdown**: the path's time by what bounds it, adding up to `length`:

- `cpu`: operator edges of CPU ops;
- `kernel`: operator edges of device activities that are not communication (memcpy and memset
  count here, as in HTA);
- `communication`: NCCL / RCCL / gloo kernels;
- `launch`: launch edges (launch delay);
- `kernel_gap`: kernel edges;
- `sync`: 0 by construction, kept so that every category shows.

## Where this differs from HTA 0.5.0 and why

- Exact ns from the file, where HTA keeps whole µs (it truncates each timestamp).
- `instance` counts the annotation's CPU-side instances by start; HTA counts every slice whose
  name contains the annotation, the GPU-side copies too (its instance 1 is a GPU copy on some
  files), and drops the last ProfilerStep when it loads a trace.  Every step is kept here.
- Queue lengths are per (device, stream); HTA pools equal stream ids of different devices.  At
  equal times HTA orders a launch and a kernel start as its unstable sort leaves them, either
  way from one tie to the next; here the launch always counts first (the derived layer's rule),
  so on whole-µs traces a kernel that starts in the µs of the next launch call of its stream
  never gets a launch edge, and the path can follow the kernels where HTA's follows the CPU:
  on `tests/data/critical_path/ties_us.json.gz` (99 such ties in 400 kernels) HTA's path is
  1,988 µs, 51 % kernels, this one 2,200 µs, 68 % kernels; counting the activity start first at
  a tie gives HTA's path exactly.
- Kernels of one stream that overlap (whole-µs timestamps rounded apart, or programmatic
  dependent launch): HTA's edge from the earlier one's end to the later one's start has a
  negative weight, which its graph counts as 0 (as here: both paths take each kernel whole, and
  have one length) but its breakdown sums as it is, so HTA's `gpu_kernel_kernel_overhead` is
  lower than `kernel_gap` here by the overlaps on the path, and HTA's breakdown does not add up
  to its length.  Here it does.
- A kernel that starts and ends inside the previous one of its stream: HTA takes the stream's
  previous kernel to be the last one to *start*, here it is the one that *ends* last.  HTA then
  measures the next kernel's gap (or its launch delay) from the inner kernel's end, while the
  stream still runs the outer one: its path counts that time twice (the outer kernel, and a gap
  or launch delay over the same time) and can be longer than any chain of events in the trace.
  Here a gap on the path is always time in which the stream ran nothing, and a kernel queued
  behind a running one never gets a launch edge.  (`tests/data/critical_path/overlap_us.json.gz`
  has both cases, with HTA's answers.)
- Nesting on a CPU thread is the events table's rule (`nest`),
  applied among the graph's own events (ops and runtime calls; annotations and Python frames are
  not nodes in either): an op's parent is the innermost op that contains it, so an op that starts
  inside another and outlasts it is its sibling, reached by a 0-weight edge from the other's end
  (HTA's stack makes it a child and closes whatever is on top).  An end->start edge between two sibling ops
  is attributed to the op enclosing both (HTA names the direct parent in its full stack, which
  may be an annotation); both are CPU time.
- Where several paths are equally long, either tool may pick another one of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ...derived import cpu_steps
from ...errors import ProfviewError
from ...kinds import STEP_ANNOTATION
from ...model import Trace
from ..traceset import is_traceset, per_rank
from .graph import BREAKDOWN_TYPES, EDGE_TYPES, GRAPH_CATEGORIES, Graph
from .result import CriticalPath
from .solve import solve

if TYPE_CHECKING:
    from ...ranks.traceset import TraceSet

__all__ = ["BREAKDOWN_TYPES", "EDGE_TYPES", "GRAPH_CATEGORIES", "CriticalPath",
           "critical_path", "steps"]


def steps(trace: Trace | TraceSet, annotation: str = STEP_ANNOTATION) -> pd.DataFrame:
    """The instances of `annotation` that the `instance` of
    [`critical_path`][jupyter_profview.analysis.critical_path.critical_path] counts: the CPU-side
    steps of [`cpu_steps`][jupyter_profview.derived.step_instances.cpu_steps] (slices named
    `annotation` or `annotation#N`, by start), as `instance` (0-based), `event`, `name`, `start`, `dur`.
    A TraceSet: rank by rank (`rank` first, `start` on the set's clock)."""
    if is_traceset(trace):
        return per_rank(steps, trace, annotation, rebase=True)
    table = cpu_steps(trace, annotation)
    start = table["start"].to_numpy(np.int64)
    return pd.DataFrame({"instance": np.arange(len(table)), "event": table["event"].to_numpy(np.int64),
                         "name": table["name"].astype(str).to_numpy(), "start": start,
                         "dur": table["end"].to_numpy(np.int64) - start})


def critical_path(trace: Trace | TraceSet, *, annotation: str | None = STEP_ANNOTATION, instance: int = 0,
                  rank: int | None = None) -> CriticalPath:
    """The critical path of `instance` (0-based, CPU-side instances by start:
    [`steps`][jupyter_profview.analysis.critical_path.steps]) of `annotation` (`ProfilerStep`
    matches `ProfilerStep#N`), or of the whole trace with `annotation=None`.

    A TraceSet needs `rank=` (each rank's path is its own; times and event ids are that rank's
    trace's).  A window without ops gives an empty path (length 0); an annotation that is not in
    the trace, an instance that does not exist or something that is not a trace is a
    [`ProfviewError`][jupyter_profview.errors.ProfviewError].  The module's doc has the graph,
    the breakdown and the differences from HTA.
    """
    if is_traceset(trace):
        if rank is None:
            if len(trace) != 1:
                raise ProfviewError(f"this TraceSet has {len(trace)} ranks: pass rank= (one of "
                                    f"{list(trace)[:8]}{'...' if len(trace) > 8 else ''})")
            rank = next(iter(trace))
        if rank not in trace:
            raise ProfviewError(f"rank {rank} is not in this TraceSet (ranks {list(trace)[:8]})")
        one = trace[rank]
    else:
        if not isinstance(trace, Trace):
            raise ProfviewError(f"critical_path needs a Trace or TraceSet, got {type(trace).__name__}")
        one = trace
    if one.time_unit != "ns":
        raise ProfviewError(f"critical_path needs a timed trace (ns), this one is in {one.time_unit!r}")
    table = steps(one, annotation) if annotation else pd.DataFrame()
    if annotation is None:
        ev = one.events
        start = int(ev["start"].min()) if len(ev) else 0
        end = int((ev["start"] + ev["dur"]).max()) if len(ev) else 0
    else:
        if len(table) == 0:
            raise ProfviewError(f"no CPU-side slice named {annotation!r} or {annotation + '#N'!r} in this "
                                "trace (annotation=None takes the whole trace)")
        if not 0 <= instance < len(table):
            raise ProfviewError(f"instance {instance} of {annotation!r} does not exist: the trace has "
                                f"{len(table)} (0..{len(table) - 1}: {', '.join(table['name'][:6])}"
                                f"{'...' if len(table) > 6 else ''})")
        row = table.iloc[instance]
        start, end = int(row["start"]), int(row["start"] + row["dur"])
    graph = Graph(one, start, end)
    return solve(graph, annotation=annotation, instance=None if annotation is None else instance,
                 rank=rank, steps=table)
