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
  into the end of a blocking call (`cudaDeviceSynchronize`, `cudaStreamSynchronize`,
  `cudaEventSynchronize`, `cudaEventQuery`, `cudaMemcpy`, `cudaMemcpyAsync`) weighs 0: the wait
  is the GPU's time, reached through a `sync` edge.
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

**Queue length** of a stream: +1 when the launch call of one of its activities starts (calls that
enqueue work only, `LAUNCH_CALLS`), -1 when the activity starts.  At equal times the starts leave
the queue before the launches enter it (on whole-µs traces a kernel often starts in the µs of the
next launch call: the call could not have enqueued anything before it started).

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
  equal times HTA orders a launch and a kernel start as an unstable sort leaves them (either way,
  from one tie to the next); here the start always comes first.
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
- Nesting on a CPU thread is among the graph's own events (ops and runtime calls): annotations
  and Python frames are not nodes in either, and an op that outlasts its parent is closed at its
  own end (HTA's stack closes whatever is on top).  An end->start edge between two sibling ops
  is attributed to the op enclosing both (HTA names the direct parent in its full stack, which
  may be an annotation); both are CPU time.
- Where several paths are equally long, either tool may pick another one of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import ProfviewError
from ..model import Trace
from .columns import among, gpu_labels, match, on_device, thread_keys
from .traceset import is_traceset

if TYPE_CHECKING:
    from ..ranks.traceset import TraceSet

GRAPH_CATEGORIES = ("cpu_op", "cuda_runtime", "cuda_driver")
#: runtime calls that enqueue work on a stream (HTA's list); only they count in queue lengths
LAUNCH_CALLS = frozenset({
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync",
    "runFunction - job_prep_and_submit_for_execution", "hipLaunchKernel", "hipExtModuleLaunchKernel",
    "hipMemsetAsync", "hipMemcpyAsync", "hipMemcpyWithStream",
})
#: calls that wait for the device: the edge into their end weighs 0
BLOCKING_CALLS = frozenset({
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventQuery", "cudaEventSynchronize",
    "cudaMemcpy", "cudaMemcpyAsync",
})
EDGE_TYPES = ("operator", "launch", "kernel", "sync", "dependency")
BREAKDOWN_TYPES = ("cpu", "kernel", "communication", "launch", "kernel_gap", "sync")
ENDS = ("start", "end")
_OPERATOR, _LAUNCH, _KERNEL, _SYNC, _DEPENDENCY = range(5)


def _codes(codes: np.ndarray, names: tuple[str, ...]) -> Any:
    return pd.Categorical.from_codes(codes.astype(np.int64), categories=pd.Index(list(names)))


@dataclass(frozen=True)
class CriticalPath:
    """The critical path of one step (see the module doc for the definition).

    * ``length``: ns, the total weight of the path;
    * ``events``: one row per event on the path (``event`` = row id in ``trace.events``,
      ``name``, ``category``, ``start``, ``dur``, ``on_path`` = ns of the path spent in it),
      by ``start``;
    * ``edges``: every edge of the graph (``src``, ``src_at``, ``dst``, ``dst_at`` with
      ``*_at`` = ``"start"``/``"end"`` of the event, ``src_time``, ``dst_time``, ``type``,
      ``weight`` ns, ``event`` = the event it is attributed to or -1, ``bound`` = its breakdown
      category, ``on_path``, and ``order``: the position along the path, -1 off it);
    * ``breakdown``: ``type``, ``time`` (ns), ``share`` (0-100) -- adds up to ``length``;
    * ``start``/``end``: the window (the annotation instance, or the whole trace);
    * ``annotation``, ``instance``, ``rank``: what was asked; ``unlinked``: device activities in
      the window that got neither a launch nor a gap nor a sync edge (HTA warns about the same);
      ``graph_nodes``: 2 per event in the graph; ``steps``: the annotation's instances
      (:func:`steps`).
    """

    length: int
    events: pd.DataFrame
    edges: pd.DataFrame
    breakdown: pd.DataFrame
    start: int
    end: int
    annotation: str | None = None
    instance: int | None = None
    rank: int | None = None
    unlinked: int = 0
    graph_nodes: int = 0
    steps: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)

    @property
    def path(self) -> pd.DataFrame:
        """The edges on the path, in path order (the segments of the path)."""
        on = self.edges[self.edges["on_path"]]
        return on.sort_values("order")

    def explain(self, top: int = 3) -> str:
        """What bounds the step, in plain words: the path's length, its breakdown by share, the
        events that hold it longest, and where to act (durations by the package's number rule)."""
        from ..numbers import format_duration, share_text

        what = "the whole trace" if self.annotation is None else (
            str(self.steps["name"].iloc[self.instance]) if len(self.steps) and self.instance is not None
            else f"{self.annotation} #{self.instance}")
        if self.length == 0:
            return f"The critical path of {what} is empty: no CPU op or GPU kernel starts inside it."
        b = self.breakdown.set_index("type")
        lead = str(b["time"].idxmax())
        span = self.end - self.start
        parts = [f"The critical path of {what} is {format_duration(self.length)} long "
                 f"(the {'trace' if self.annotation is None else 'step'} spans {format_duration(span)})."]
        shares = ", ".join(f"{_WORDS[k]} {share_text(b.loc[k, 'share'])}"
                           for k in b.index if b.loc[k, "time"] > 0)
        parts.append(f"It is {_BOUND_WORDS[lead]}: {shares}.")
        held = self.events[self.events["on_path"] > 0].sort_values("on_path", ascending=False).head(top)
        if len(held):
            names = "; ".join(f"{_short(n)} ({format_duration(t)})" for n, t in
                              zip(held["name"].astype(str), held["on_path"], strict=True))
            parts.append(f"Longest on the path: {names}.")
        parts.append(_ADVICE[lead])
        return " ".join(parts)

    def __repr__(self) -> str:
        where = "whole trace" if self.annotation is None else f"{self.annotation} instance {self.instance}"
        top = self.breakdown.sort_values("time", ascending=False).head(1)
        bound = "" if self.length == 0 else f", mostly {top['type'].iloc[0]} ({top['share'].iloc[0]:.0f} %)"
        return (f"<CriticalPath {where}: {self.length / 1e6:.3f} ms over {len(self.events)} events, "
                f"{int(self.edges['on_path'].sum())} of {len(self.edges)} edges{bound}>")


def _short(name: str, limit: int = 60) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


_WORDS = {"cpu": "CPU ops", "kernel": "GPU kernels", "communication": "communication kernels",
          "launch": "launch delays", "kernel_gap": "gaps between kernels", "sync": "syncs"}
_BOUND_WORDS = {"cpu": "CPU-bound", "kernel": "GPU-compute-bound", "communication": "communication-bound",
                "launch": "bound by kernel launch delays", "kernel_gap": "bound by gaps between GPU kernels",
                "sync": "bound by synchronisation"}
_ADVICE = {
    "cpu": "The GPU waits for the CPU: make these ops cheaper or issue fewer of them (fused ops, "
           "torch.compile, CUDA graphs); faster kernels would not shorten this step.",
    "kernel": "The GPU computes all along the path: faster kernels shorten the step (lower precision, "
              "fused or better-shaped ops); CPU work is hidden behind them.",
    "communication": "Collectives hold the path: overlap them with compute (bucketing, async ops) or "
                     "send less.",
    "launch": "Kernels wait for their launches: many small kernels; fuse them or capture them in a "
              "CUDA graph.",
    "kernel_gap": "The GPU idles between kernels of a stream: look for syncs, host-side waits and "
                  "dependencies between streams before the gaps.",
    "sync": "Synchronisation holds the path.",
}


def steps(trace: Trace, annotation: str = "ProfilerStep") -> pd.DataFrame:
    """The CPU-side instances of ``annotation`` (slices whose name contains it, neither on a device
    nor ``gpu_user_annotation`` copies),
    by start: ``instance`` (0-based), ``event``, ``name``, ``start``, ``dur`` -- the choices of
    :func:`critical_path`'s ``instance``."""
    ev = trace.events
    named = match(ev["name"], lambda name: annotation in name)
    named &= among(ev["kind"], ("slice",)) & ~on_device(trace)
    named &= ~among(ev["category"], ("gpu_user_annotation",))
    rows = ev[named].sort_values(["start", "dur"], ascending=[True, False], kind="stable")
    return pd.DataFrame({"instance": np.arange(len(rows)), "event": rows.index.to_numpy(np.int64),
                         "name": rows["name"].astype(str).to_numpy(),
                         "start": rows["start"].to_numpy(np.int64), "dur": rows["dur"].to_numpy(np.int64)})


def critical_path(trace: Trace | TraceSet, *, annotation: str | None = "ProfilerStep", instance: int = 0,
                  rank: int | None = None) -> CriticalPath:
    """The critical path of ``instance`` (0-based, CPU-side instances by start) of ``annotation``
    (``ProfilerStep`` matches ``ProfilerStep#N``), or of the whole trace with ``annotation=None``.

    A TraceSet needs ``rank=`` (each rank's path is its own; times and event ids are that rank's
    trace's).  A window without ops gives an empty path (length 0); an annotation that is not in
    the trace or an instance that does not exist is a :class:`~jupyter_profview.ProfviewError`.
    See the module doc for the graph, the breakdown and the differences from HTA.
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
            raise TypeError(f"critical_path needs a Trace or TraceSet, got {type(trace).__name__}")
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
            raise ProfviewError(f"no CPU-side slice named like {annotation!r} in this trace "
                                "(annotation=None takes the whole trace)")
        if not 0 <= instance < len(table):
            raise ProfviewError(f"instance {instance} of {annotation!r} does not exist: the trace has "
                                f"{len(table)} (0..{len(table) - 1}: {', '.join(table['name'][:6])}"
                                f"{'...' if len(table) > 6 else ''})")
        row = table.iloc[instance]
        start, end = int(row["start"]), int(row["start"] + row["dur"])
    graph = _Graph(one, start, end)
    return graph.solve(annotation=annotation, instance=None if annotation is None else instance,
                       rank=rank, steps=table)


# ---------------------------------------------------------------------------------------------
# The graph
# ---------------------------------------------------------------------------------------------

class _Graph:
    """Nodes 2k (start) and 2k+1 (end) of the k-th graph event; edges in flat lists."""

    def __init__(self, trace: Trace, start: int, end: int) -> None:
        self.trace, self.start, self.end = trace, start, end
        ev = trace.events
        s = ev["start"].to_numpy(np.int64)
        d = ev["dur"].to_numpy(np.int64)
        device = on_device(trace)
        cpu = (~device & among(ev["category"], GRAPH_CATEGORIES) & (d > 0) & (s >= start) & (s <= end)
               & among(ev["kind"], ("slice",)))
        la = trace.launches
        has_launch = la["launch"].notna().to_numpy(bool)
        ls = la["launch_start"].to_numpy(np.float64, na_value=np.nan)
        ld = la["launch_dur"].to_numpy(np.float64, na_value=np.nan)
        launch_ids = la["launch"].to_numpy(np.int64, na_value=-1)
        pos = ev.index.get_indexer(pd.Index(launch_ids))
        launch_is_node = np.zeros(len(la), bool)
        ok = pos >= 0
        launch_is_node[ok] = cpu[pos[ok]]
        gpu_rows = np.flatnonzero(has_launch & (ls >= start) & (ls <= end) & (ld > 0) & launch_is_node)
        self.cpu_pos = np.flatnonzero(cpu)
        self.gpu_rows = gpu_rows
        ids = ev.index.to_numpy(np.int64)
        cpu_ids = ids[self.cpu_pos]
        gpu_ids = la["kernel"].to_numpy(np.int64)[gpu_rows]
        self.ids = np.concatenate([cpu_ids, gpu_ids])
        self.n_cpu = len(cpu_ids)
        self.t0 = np.concatenate([s[self.cpu_pos], la["kernel_start"].to_numpy(np.int64)[gpu_rows]])
        self.t1 = self.t0 + np.concatenate([d[self.cpu_pos], la["kernel_dur"].to_numpy(np.int64)[gpu_rows]])
        self.local = {int(e): k for k, e in enumerate(self.ids)}
        self.src: list[int] = []
        self.dst: list[int] = []
        self.kind: list[int] = []
        self.weight: list[int] = []
        self.attr: list[int] = []
        self.unlinked = 0
        self._cpu_edges()
        self._gpu_edges()

    # -- edges ------------------------------------------------------------------------------
    def _edge(self, src: int, dst: int, kind: int, attr: int = -1, zero: bool = False) -> None:
        t = (self.t0, self.t1)
        w = 0 if zero or kind in (_SYNC, _DEPENDENCY) else int(t[dst & 1][dst >> 1] - t[src & 1][src >> 1])
        self.src.append(src)
        self.dst.append(dst)
        self.kind.append(kind)
        self.weight.append(max(w, 0))  # a child ending after its parent: no negative time
        self.attr.append(attr)

    def _cpu_edges(self) -> None:
        """Per CPU thread: nest the graph's ops by time and walk them depth first."""
        ev = self.trace.events
        n = self.n_cpu
        if n == 0:
            return
        key = thread_keys(ev)[self.cpu_pos]
        t0, t1 = self.t0[:n], self.t1[:n]
        # HTA's order: by start, the longer first, then by id
        order = np.lexsort((self.ids[:n], -(t1 - t0), t0, key))
        blocking = among(ev["name"].iloc[self.cpu_pos], BLOCKING_CALLS).tolist()
        ends = t1.tolist()
        edge = self._edge
        stack: list[int] = []
        last = -1       # the last node walked in the current top-level op
        last_top = -1   # the end node of the previous top-level op on this thread
        cur_key = -1

        def close() -> None:
            nonlocal last, last_top
            k = stack.pop()
            edge(last, 2 * k + 1, _OPERATOR, attr=k, zero=blocking[k])
            if stack:
                last = 2 * k + 1
            else:
                last, last_top = -1, 2 * k + 1

        for k, kk, st in zip(order.tolist(), key[order].tolist(), t0[order].tolist(), strict=True):
            if kk != cur_key:
                while stack:
                    close()
                cur_key, last, last_top = kk, -1, -1
            while stack and ends[stack[-1]] <= st:
                close()
            if not stack:
                if last_top >= 0:
                    edge(last_top, 2 * k, _DEPENDENCY)
            elif last & 1:   # a sibling's end -> this start: time in the enclosing op
                edge(last, 2 * k, _OPERATOR, attr=stack[-1])
            else:            # the parent's start -> this start: time in the parent
                edge(last, 2 * k, _OPERATOR, attr=last >> 1)
            stack.append(k)
            last = 2 * k
        while stack:
            close()

    def _gpu_edges(self) -> None:
        """Kernels by start (sync events by end, as HTA): a launch, gap or sync edge into each."""
        la = self.trace.launches
        rows = self.gpu_rows
        n_cpu = self.n_cpu
        qr, qk = _queue_lengths(la)
        stream_key = _stream_keys(la)
        launch_start = la["launch_start"].to_numpy(np.float64, na_value=np.nan)
        launch_ids = la["launch"].to_numpy(np.int64, na_value=-1)[rows]
        launch_local = [self.local.get(int(x), -1) for x in launch_ids]
        syncs = _sync_events(self.trace, self.local, la, stream_key)
        waits = syncs.pop("wait_edges")  # dest kernel (row of launches) -> src kernel (row)
        row_local = {int(r): n_cpu + j for j, r in enumerate(rows)}
        # one sequence: kernels sort by start, sync events by end
        items: list[tuple[int, int, int]] = [(int(self.t0[n_cpu + j]), 0, j) for j in range(len(rows))]
        items += [(int(t), 1, j) for j, t in enumerate(syncs["end"])]
        items.sort()
        last: dict[int, int] = {}     # stream key -> local index of the last activity
        gpu_of_stream: dict[int, int] = {}
        edge = self._edge
        for _, is_sync, j in items:
            if is_sync:
                call = syncs["call"][j]
                kind = syncs["kind"][j]
                if kind == "Stream Sync":
                    srcs = [last.get(syncs["stream"][j])]
                elif kind == "Context Sync":
                    srcs = [k for s, k in last.items() if gpu_of_stream[s] == syncs["gpu"][j]]
                else:  # Event Sync: the activity the event was recorded after
                    srcs = [row_local.get(syncs["recorded_row"][j])]
                for k in srcs:
                    if k is not None and call >= 0:
                        edge(2 * k + 1, 2 * call + 1, _SYNC)
                continue
            r = int(rows[j])
            k = n_cpu + j
            edge(2 * k, 2 * k + 1, _OPERATOR, attr=k)
            s = int(stream_key[r])
            gpu_of_stream[s] = s >> 32
            prev = last.get(s)
            wait_src = row_local.get(waits.get(r, -1))
            linked = False
            if wait_src is not None:
                edge(2 * wait_src + 1, 2 * k, _SYNC)
                linked = True
            t_launch = launch_start[r]
            wait_ok = wait_src is None or self.t1[wait_src] < t_launch
            if (qr[r] == 1 and qk[r] == 0 and (prev is None or self.t1[prev] < t_launch) and wait_ok
                    and launch_local[j] >= 0):
                edge(2 * launch_local[j], 2 * k, _LAUNCH)
                linked = True
            elif prev is not None and (wait_src is None or self.t1[wait_src] < self.t1[prev]):
                edge(2 * prev + 1, 2 * k, _KERNEL, attr=prev)
                linked = True
            self.unlinked += not linked
            if prev is None or self.t1[k] >= self.t1[prev]:
                last[s] = k   # the stream's activity that ends last so far

    # -- the longest path ---------------------------------------------------------------------
    def solve(self, *, annotation: str | None, instance: int | None, rank: int | None,
              steps: pd.DataFrame) -> CriticalPath:
        n_nodes = 2 * len(self.ids)
        src = np.asarray(self.src, np.int64)
        dst = np.asarray(self.dst, np.int64)
        weight = np.asarray(self.weight, np.int64)
        kind = np.asarray(self.kind, np.int8)
        attr = np.asarray(self.attr, np.int64)
        order_on_path = np.full(len(src), -1, np.int64)
        length = 0
        if len(src):
            length, path_edges = _longest_path(n_nodes, src, dst, weight)
            order_on_path[path_edges] = np.arange(len(path_edges))
        on_path = order_on_path >= 0
        t = np.stack([self.t0, self.t1])
        ids = self.ids
        edges = pd.DataFrame({
            "src": ids[src >> 1], "src_at": _codes(src & 1, ENDS),
            "dst": ids[dst >> 1], "dst_at": _codes(dst & 1, ENDS),
            "src_time": t[src & 1, src >> 1], "dst_time": t[dst & 1, dst >> 1],
            "type": _codes(kind, EDGE_TYPES),
            "weight": weight, "event": np.where(attr >= 0, ids[np.maximum(attr, 0)], -1),
            "on_path": on_path, "order": order_on_path,
        })
        events = self._events(src, dst, attr, weight, on_path)
        bound = self._bounds(kind, attr)
        edges["bound"] = _codes(bound, BREAKDOWN_TYPES)
        breakdown = self._breakdown(bound, weight, on_path, length)
        return CriticalPath(length=int(length), events=events, edges=edges, breakdown=breakdown,
                            start=self.start, end=self.end, annotation=annotation, instance=instance,
                            rank=rank, unlinked=self.unlinked, graph_nodes=n_nodes, steps=steps)

    def _events(self, src: np.ndarray, dst: np.ndarray, attr: np.ndarray, weight: np.ndarray,
                on_path: np.ndarray) -> pd.DataFrame:
        local = np.unique(np.concatenate([src[on_path] >> 1, dst[on_path] >> 1]))
        spent = np.bincount(attr[on_path & (attr >= 0)], weights=weight[on_path & (attr >= 0)],
                            minlength=len(self.ids)).astype(np.int64)
        ev = self.trace.events
        ids = self.ids[local]
        rows = ev.loc[ids]
        out = pd.DataFrame({
            "event": ids, "name": rows["name"].to_numpy(), "category": rows["category"].to_numpy(),
            "start": self.t0[local], "dur": self.t1[local] - self.t0[local], "on_path": spent[local],
        })
        for col in ("name", "category"):
            out[col] = pd.Categorical(out[col].astype(str))
        return out.sort_values(["start", "event"], kind="stable").reset_index(drop=True)

    def _bounds(self, kind: np.ndarray, attr: np.ndarray) -> np.ndarray:
        """Each edge's breakdown category (index into BREAKDOWN_TYPES)."""
        comm = np.zeros(len(self.ids), bool)
        comm[self.n_cpu:] = among(self.trace.launches["type"], ("communication",))[self.gpu_rows]
        on_gpu = attr >= self.n_cpu
        operator = np.where(on_gpu, np.where(comm[np.maximum(attr, 0)], 2, 1), 0)
        other = np.array([0, 3, 4, 5, 5])[kind]  # launch -> launch, kernel -> kernel_gap, sync/dependency
        return np.where(kind == _OPERATOR, operator, other).astype(np.int8)

    @staticmethod
    def _breakdown(bound: np.ndarray, weight: np.ndarray, on_path: np.ndarray, length: int) -> pd.DataFrame:
        time = np.bincount(bound[on_path], weights=weight[on_path], minlength=len(BREAKDOWN_TYPES))
        time = time.astype(np.int64)
        share = time / length * 100 if length else np.zeros(len(time))
        return pd.DataFrame({"type": list(BREAKDOWN_TYPES), "time": time, "share": share})


def _longest_path(n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> tuple[int, np.ndarray]:
    """Length and edge indices (in order) of a longest path of the DAG (Kahn's order, then one
    relaxation pass); a cycle is a ProfviewError (the trace's clocks disagree)."""
    by_src = np.argsort(src, kind="stable")
    first = np.searchsorted(src[by_src], np.arange(n + 1))
    indeg = np.bincount(dst, minlength=n)
    out_edges = by_src.tolist()
    first_l = first.tolist()
    dst_l = dst.tolist()
    w_l = weight.tolist()
    indeg_l = indeg.tolist()
    dist = [0] * n
    pred = [-1] * n
    ready = [v for v in range(n) if indeg_l[v] == 0]
    seen = 0
    while ready:
        u = ready.pop()
        seen += 1
        du = dist[u]
        for e in out_edges[first_l[u]:first_l[u + 1]]:
            v = dst_l[e]
            cand = du + w_l[e]
            if cand > dist[v] or (pred[v] < 0 and cand == dist[v] and w_l[e] >= 0):
                dist[v] = cand
                pred[v] = e
            indeg_l[v] -= 1
            if indeg_l[v] == 0:
                ready.append(v)
    if seen != n:
        raise ProfviewError(f"the critical-path graph has a cycle ({n - seen} of {n} nodes on it): "
                            "the trace's CPU and GPU clocks disagree about the order of these events")
    end = int(np.argmax(dist))
    path: list[int] = []
    v = end
    while pred[v] >= 0:
        e = pred[v]
        path.append(e)
        v = int(src[e])
    return dist[end], np.asarray(path[::-1], np.int64)


def _stream_keys(la: pd.DataFrame) -> np.ndarray:
    """One int64 per row of ``trace.launches``: (device label code, stream)."""
    gpu = pd.Categorical(la["gpu"]).codes.astype(np.int64)
    stream = la["stream"].to_numpy(np.int64, na_value=-1)
    return (gpu << 32) | (stream & 0xFFFFFFFF)


def _int(value: Any) -> int:
    """An integer arg of the file, -1 when it is missing or not a number."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else -1


def _stream_key(trace: Trace, gpu: str, stream: int) -> int:
    labels = gpu_labels(trace)
    code = labels.index(gpu) if gpu in labels else -1
    return (code << 32) | (stream & 0xFFFFFFFF)


def _queue_lengths(la: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``trace.launches``: the stream's queue length at its launch call (counting it)
    and when it starts (after it left the queue), over the launches that enqueue (LAUNCH_CALLS);
    NaN for the others.  At equal times a launch counts before a kernel start."""
    n = len(la)
    qr = np.full(n, np.nan)
    qk = np.full(n, np.nan)
    rows = np.flatnonzero(la["launch"].notna().to_numpy(bool) & among(la["launch_name"], LAUNCH_CALLS))
    if len(rows) == 0:
        return qr, qk
    group = _stream_keys(la)[rows]
    ts = np.concatenate([la["launch_start"].to_numpy(np.int64, na_value=0)[rows],
                         la["kernel_start"].to_numpy(np.int64)[rows]])
    kind = np.concatenate([np.zeros(len(rows), np.int8), np.ones(len(rows), np.int8)])
    delta = np.where(kind == 0, 1, -1)
    g = np.concatenate([group, group])
    order = np.lexsort((-kind, ts, g))  # at equal times the kernel starts leave first
    level = np.empty(len(order), np.int64)
    level[order] = np.cumsum(delta[order])  # each stream's launches and kernels pair up: sums to 0
    qr[rows] = level[: len(rows)]
    qk[rows] = level[len(rows):]
    return qr, qk


def _sync_events(trace: Trace, local: dict[int, int], la: pd.DataFrame,
                 stream_key: np.ndarray) -> dict[str, Any]:
    """The ``cuda_sync`` events whose waiting CPU call is a graph node, as columns (``stream`` a
    stream key, ``gpu`` a device code), and the kernel -> kernel waits of ``Stream Wait Event``
    (``wait_edges``: row of launches -> row of launches)."""
    ev = trace.events
    out: dict[str, Any] = {"end": [], "kind": [], "call": [], "stream": [], "gpu": [], "recorded_row": [],
                           "wait_edges": {}}
    is_sync = among(ev["category"], ("cuda_sync",))
    if not is_sync.any() or "correlation" not in ev.columns:
        return out
    corr = ev["correlation"]
    runtime = among(ev["category"], ("cuda_runtime", "cuda_driver"))
    calls = ev[~on_device(trace) & runtime & corr.notna().to_numpy()]
    call_of = dict(zip(calls["correlation"].astype(np.int64).tolist(), calls.index.tolist(), strict=True))
    records = calls[among(calls["name"], ("cudaEventRecord",))]
    record_corr = records["correlation"].astype(np.int64).tolist()
    record_time = dict(zip(record_corr, records["start"].tolist(), strict=True))
    # the launches that enqueue, per stream by launch start: an event is recorded after the last one
    enq = np.flatnonzero(la["launch"].notna().to_numpy(bool) & among(la["launch_name"], LAUNCH_CALLS))
    lstart = la["launch_start"].to_numpy(np.int64, na_value=0)
    enq = enq[np.lexsort((lstart[enq], stream_key[enq]))]
    keys = stream_key[enq]
    bounds = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1], True])
    per_stream = {int(keys[a]): (lstart[enq[a:b]], enq[a:b])
                  for a, b in zip(bounds[:-1], bounds[1:], strict=True)}
    launch_ev = la["launch"].to_numpy(np.int64, na_value=-1)

    keys_of = thread_keys(ev)

    def thread(ids: Any) -> np.ndarray:
        return keys_of[ev.index.get_indexer(pd.Index(np.asarray(ids, np.int64)))]

    def recorded_after(key: int, record_corr: int) -> int:
        if record_corr not in record_time or key not in per_stream:
            return -1
        times, rows = per_stream[key]
        i = int(np.searchsorted(times, record_time[record_corr], side="right")) - 1
        return int(rows[i]) if i >= 0 else -1

    labels = gpu_labels(trace)
    for pos in np.flatnonzero(is_sync).tolist():
        event_id = int(ev.index[pos])
        args = trace.args(event_id)
        kind = str(args.get("cuda_sync_kind", ev["name"].iloc[pos]))
        c = args.get("correlation")
        call_id = call_of.get(int(c), -1) if isinstance(c, (int, float)) else -1
        stream_arg, wait_arg, record_arg = (args.get(k, -1) for k in (
            "stream", "wait_on_stream", "wait_on_cuda_event_record_corr_id"))
        call = local.get(call_id, -1)
        gpu = str(ev["process"].iloc[pos])
        key = _stream_key(trace, gpu, _int(stream_arg))
        src_row = -1
        if kind in ("Event Sync", "Stream Wait Event"):
            src_row = recorded_after(_stream_key(trace, gpu, _int(wait_arg)), _int(record_arg))
        if kind == "Stream Wait Event":
            if src_row < 0 or call_id < 0 or key not in per_stream:
                continue
            # the next launch on the waiting stream from the same CPU thread after the wait call
            times, rows = per_stream[key]
            later = np.flatnonzero(times >= ev["start"].to_numpy(np.int64)[ev.index.get_loc(call_id)])
            if len(later):
                same = thread(launch_ev[rows[later]]) == thread([call_id])[0]
                if same.any():
                    out["wait_edges"][int(rows[later[np.argmax(same)]])] = src_row
            continue
        if call < 0 or kind not in ("Stream Sync", "Context Sync", "Event Sync"):
            continue
        out["end"].append(int(ev["start"].iloc[pos] + ev["dur"].iloc[pos]))
        out["kind"].append(kind)
        out["call"].append(call)
        out["stream"].append(key)
        out["gpu"].append(labels.index(gpu) if gpu in labels else -1)
        out["recorded_row"].append(src_row)
    return out
