"""GPU analyses from ``trace.launches`` (one row per kernel / memcpy / memset,
joined to its launch; see `jupyter_profview.model`).  Each returns a
DataFrame; times are int64 ns, percentages 0-100.

Definitions
-----------

activity
:   A row of ``trace.launches``: the interval ``[kernel_start, kernel_start +
    kernel_dur)`` on a stream of a GPU (``gpu`` = the device's process label).

type groups
:   ``computation`` = type ``kernel``; ``communication`` = NCCL / RCCL / gloo
    kernels; ``memory`` = ``memcpy``, ``memset`` and MTIA's DMA transfers
    (``dma``: names starting with ``dma``, e.g. ``dma_request``), as HTA's
    kernel types (``MEMORY_KERNEL_RE``): memory traffic, not computation, in
    the kernel breakdown and the temporal breakdown alike.

span (per GPU)
:   From the first activity start to the last activity end on that GPU.

busy, compute
:   The length of the union of the GPU's activity intervals (all streams), and
    of its computation kernels only; overlapping kernels count once.
idle = span - busy; non-compute = busy - compute.

launch delay
:   ``kernel_start - (launch_start + launch_dur)`` clipped at 0 (the ``delay``
    column): how long the launched work waited after the launch call returned.

Differences from Holistic Trace Analysis (HTA), which computes the same
quantities: HTA rounds every timestamp to whole µs (a 2.4 µs kernel counts
2 µs: 13-31 % of short-kernel and memcpy time on the HTA test traces) and
drops the last ``ProfilerStep`` by default; here every event is kept with its
exact ns.  HTA's idle-time breakdown takes the gap to the *previous row's* end
(negative for CUDA-graph kernels overlapping on one stream); here the gap is to
the latest end so far (never negative).  HTA's queue-length summary describes
the samples at each change; here mean and p95 are weighted by how long each
value lasted (`queue_length` gives HTA's per-change mean too).  HTA's
kernel-type shares split overlapped time into ``A overlapping B`` categories;
here each type's total is the plain sum of its durations, and overlap is
`comm_comp_overlap`.

Measured on ``tests/data/hta/nccl_parser_config_nccl_data.json.gz`` (A100 +
NCCL) against HTA 0.5.0 in a separate environment, over HTA's window (the
kernels before the last ``ProfilerStep``): span 435.588 ms here vs 435.586 ms
in HTA; compute 76.94 vs 75.17 ms and idle 336.42 vs 338.78 ms (HTA's µs
rounding shortens every kernel); communication overlapped 14.76 % vs 14.31 %;
stream 7 host wait 355.5 vs 357.2 ms; queue-length max 10 in both (HTA's
sample mean 0.81 vs the time-weighted mean 0.21 here).  Memory activities:
the same 716 memcpy/memset rows in both, 1.753 ms here vs 1.015 ms summed
over HTA's per-kernel rows: they average 2.45 µs and HTA's rounding (start up,
end down) takes about 1 µs off each; the difference, 738.003 µs, is exactly
the rounding loss summed from the file's decimal timestamps.  Short kernels
(< 10 µs by default): 1,380 here vs HTA's 1,347; HTA's rule applied to its
rounded durations gives its count exactly.

A TraceSet (many ranks) gives each rank's result with a ``rank`` column first:
rank by rank, so that every rank's ``GPU 0`` stays its own device; times
(``launch_stats(rows=True)``, `queue_length_series`, `utilisation`)
on the set's common clock (see `.traceset`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..derived import busy_fraction, device_activities, last_step_start, queue_series, union, union_length
from ..derived import complete_steps as derived_complete_steps
from ..errors import ProfviewError
from ..kinds import KIND_OF_TYPE
from ..model import Trace
from .traceset import concat, is_traceset, per_rank, to_common_clock

if TYPE_CHECKING:
    from ..ranks.traceset import TraceSet

#: the group of each `launches["type"]` in the breakdowns: its kind
#: ([`KIND_OF_TYPE`][jupyter_profview.kinds.KIND_OF_TYPE]), DMA counted as memory (as HTA)
TYPE_GROUPS = {t: "memory" if kind == "dma" else kind for t, kind in KIND_OF_TYPE.items()}
IDLE_KINDS = ("host_wait", "kernel_wait", "other")


def _activities(trace: Trace) -> pd.DataFrame:
    """The activities of `trace.launches` (the
    [`device_activities`][jupyter_profview.derived.activities.device_activities] but the sync events) with
    their breakdown `group`."""
    acts = device_activities(trace)
    acts = acts[acts["type"].to_numpy(object) != "sync"]
    return pd.DataFrame({
        "gpu": acts["gpu"].to_numpy(object),
        "stream": acts["stream"].to_numpy(np.int64, na_value=-1),
        "start": acts["start"].to_numpy(np.int64),
        "end": acts["end"].to_numpy(np.int64),
        "group": acts["type"].map(TYPE_GROUPS).to_numpy(object),
        "launch_start": acts["launch_start"].to_numpy(np.float64, na_value=np.nan),
    })


def kernel_breakdown(trace: Trace | TraceSet, by: str = "type", *,
                     complete_steps: bool = False) -> pd.DataFrame:
    """Time in device activity by type group or by kernel name.

    ``by="type"``: one row per group (``computation``, ``communication``,
    ``memory``) with ``count``, ``total`` (sum of durations, ns) and ``share``
    (% of the total over all groups).  ``by="name"``: one row per (group, name)
    with also ``mean``, ``p50``, ``p95``, ``max`` (ns; percentiles by linear
    interpolation); sorted by ``total``, largest first.

    Every device activity of the trace counts: it ran on the device inside the
    recorded window.  HTA's breakdown counts fewer (on a real MTIA trace 22,224
    ``dma_request`` against 22,361 here): its ``TraceAnalysis`` drops the last
    ``ProfilerStep``'s activities, those whose launch is not in the trace
    (launched before the profiler started: their time on the device is still
    in the window) and those without a ``stream`` arg.  ``complete_steps=True``
    keeps HTA's window (`jupyter_profview.derived.complete_steps`); on
    ``tests/data/hta_parity/mtia_dma.json`` that gives HTA's count but for the
    DMA without a ``stream`` arg, which runs on its stream's thread and is
    kept here.
    """
    if by not in ("type", "name"):
        raise ProfviewError(f"kernel_breakdown: by must be 'type' or 'name', not {by!r}")
    if is_traceset(trace):
        return per_rank(kernel_breakdown, trace, by, complete_steps=complete_steps)
    la = trace.launches
    if complete_steps:
        la = la[derived_complete_steps(trace)]
    frame = pd.DataFrame({"type": la["type"].astype(str).map(TYPE_GROUPS), "name": la["name"].astype(str),
                          "dur": la["kernel_dur"].to_numpy(np.int64)})
    keys = ["type"] if by == "type" else ["type", "name"]
    grouped = frame.groupby(keys, sort=False)["dur"]
    table = grouped.agg(count="count", total="sum").reset_index()
    if by == "name":
        stats = grouped.agg(mean="mean", p50="median", p95=lambda d: d.quantile(0.95), max="max")
        table = table.merge(stats.reset_index(), on=keys)
    grand = table["total"].sum()
    table["share"] = 100.0 * table["total"] / grand if grand else 0.0
    return table.sort_values(["total", *keys], ascending=[False, *[True] * len(keys)]).reset_index(drop=True)


def temporal_breakdown(trace: Trace | TraceSet) -> pd.DataFrame:
    """Per GPU: ``span``, ``idle``, ``compute``, ``non_compute`` (ns) and
    their shares of the span ``idle_pct``, ``compute_pct``, ``non_compute_pct``
    (see the module definitions; HTA's temporal breakdown)."""
    if is_traceset(trace):
        return per_rank(temporal_breakdown, trace)
    acts = _activities(trace)
    rows = []
    for gpu, g in acts.groupby("gpu", sort=True):
        span = int(g["end"].max() - g["start"].min())
        busy = union_length(g["start"].to_numpy(), g["end"].to_numpy())
        comp = g[g["group"] == "computation"]
        compute = union_length(comp["start"].to_numpy(), comp["end"].to_numpy())
        rows.append((gpu, span, span - busy, compute, busy - compute))
    table = pd.DataFrame(rows, columns=["gpu", "span", "idle", "compute", "non_compute"])
    for col in ("idle", "compute", "non_compute"):
        table[f"{col}_pct"] = 100.0 * table[col] / table["span"].where(table["span"] > 0)
    return table


def comm_comp_overlap(trace: Trace | TraceSet) -> pd.DataFrame:
    """Per GPU: ``communication`` and ``computation`` busy time (ns, unions),
    ``overlap`` (ns during which both run) and ``overlap_pct`` = overlap /
    communication (the share of communication hidden behind computation, as
    HTA's ``comp_comm_overlap_pctg``; NaN without communication)."""
    if is_traceset(trace):
        return per_rank(comm_comp_overlap, trace)
    acts = _activities(trace)
    rows = []
    for gpu, g in acts.groupby("gpu", sort=True):
        comm = g[g["group"] == "communication"]
        comp = g[g["group"] == "computation"]
        c1 = union_length(comm["start"].to_numpy(), comm["end"].to_numpy())
        c2 = union_length(comp["start"].to_numpy(), comp["end"].to_numpy())
        both = pd.concat([comm, comp])
        overlap = c1 + c2 - union_length(both["start"].to_numpy(), both["end"].to_numpy())
        rows.append((gpu, c1, c2, overlap))
    table = pd.DataFrame(rows, columns=["gpu", "communication", "computation", "overlap"])
    table["overlap_pct"] = 100.0 * table["overlap"] / table["communication"].where(table["communication"] > 0)
    return table


def idle_time(trace: Trace | TraceSet, *, kernel_wait: int = 30_000) -> pd.DataFrame:
    """Idle time per GPU and stream, split by cause (HTA's idle-time breakdown).

    On each stream, activities in start order; the gap before one is its start
    minus the latest end of the earlier ones (gaps <= 0 are not idle).  A gap
    is ``host_wait`` when the activity's launch started after that end (the
    host had not issued it yet), else ``kernel_wait`` when shorter than
    ``kernel_wait`` ns (the back-to-back launch overhead; HTA's default
    ``consecutive_kernel_delay=30`` is documented as ns but compared with its
    µs timestamps, so 30 µs on Kineto traces: the default here),
    else ``other`` (e.g. waiting on another stream or an event).  Columns:
    ``gpu``, ``stream``, ``span`` (first start to last end on the stream),
    ``idle`` and each kind in ns, and ``<kind>_pct`` (% of ``idle``).
    """
    if is_traceset(trace):
        return per_rank(idle_time, trace, kernel_wait=kernel_wait)
    acts = _activities(trace)
    rows = []
    for (gpu, stream), g in acts.groupby(["gpu", "stream"], sort=True):
        g = g.sort_values(["start", "end"], kind="stable")
        start, end = g["start"].to_numpy(), g["end"].to_numpy()
        prev_end = np.concatenate([[start[0]], np.maximum.accumulate(end)[:-1]])
        gap = np.maximum(start - prev_end, 0)
        host = g["launch_start"].to_numpy() > prev_end
        short = ~host & (gap < kernel_wait)
        kinds = {"host_wait": int(gap[host].sum()), "kernel_wait": int(gap[short].sum()),
                 "other": int(gap[~host & ~short].sum())}
        rows.append({"gpu": gpu, "stream": stream, "span": int(end.max() - start[0]), "idle": int(gap.sum()),
                     **kinds})
    table = pd.DataFrame(rows, columns=["gpu", "stream", "span", "idle", *IDLE_KINDS])
    for kind in IDLE_KINDS:
        table[f"{kind}_pct"] = 100.0 * table[kind] / table["idle"].where(table["idle"] > 0)
    return table


def launch_stats(trace: Trace | TraceSet, *, long_launch: int = 50_000, long_delay: int = 100_000,
                 short_kernel: int | None = None, rows: bool = False) -> pd.DataFrame:
    """Launch overhead per GPU, over the activities whose launch is in the trace.

    ``short_kernels``: activities shorter than ``short_kernel`` ns, or, when it
    is None, shorter than their own launch call (HTA: the launch costs more
    than the work); ``long_launches``: launch calls longer than ``long_launch``
    ns (HTA's runtime cutoff, 50 µs); ``long_delays``: launch delay longer than
    ``long_delay`` ns (HTA's cutoff, 100 µs).  Columns: ``gpu``, ``count``,
    ``launch_dur_mean``/``_p50``/``_p95``/``_max``, ``delay_mean``/``_p50``/
    ``_p95``/``_max`` (ns), and the three counts.  With ``rows=True``: the
    linked rows of ``trace.launches`` with bool columns ``short_kernel``,
    ``long_launch``, ``long_delay`` instead.
    """
    if is_traceset(trace):
        return per_rank(launch_stats, trace, long_launch=long_launch, long_delay=long_delay,
                        short_kernel=short_kernel, rows=rows, rebase=rows)
    la = trace.launches[trace.launches["launch"].notna()]
    kdur = la["kernel_dur"].to_numpy(np.int64)
    ldur = la["launch_dur"].to_numpy(np.int64)
    flags = pd.DataFrame({
        "short_kernel": kdur < (ldur if short_kernel is None else short_kernel),
        "long_launch": ldur > long_launch,
        "long_delay": la["delay"].to_numpy(np.int64) > long_delay,
    }, index=la.index)
    if rows:
        return pd.concat([la, flags], axis=1)
    frame = pd.DataFrame({"gpu": la["gpu"].astype(str), "launch_dur": ldur,
                          "delay": la["delay"].to_numpy(np.int64)}, index=la.index).join(flags)
    out = []
    for gpu, g in frame.groupby("gpu", sort=True):
        row: dict[str, Any] = {"gpu": gpu, "count": len(g)}
        for col in ("launch_dur", "delay"):
            values = g[col]
            row.update({f"{col}_mean": values.mean(), f"{col}_p50": values.median(),
                        f"{col}_p95": values.quantile(0.95), f"{col}_max": int(values.max())})
        row.update({"short_kernels": int(g["short_kernel"].sum()),
                    "long_launches": int(g["long_launch"].sum()), "long_delays": int(g["long_delay"].sum())})
        out.append(row)
    stats = [f"{c}_{s}" for c in ("launch_dur", "delay") for s in ("mean", "p50", "p95", "max")]
    columns = ["gpu", "count", *stats,
               "short_kernels", "long_launches", "long_delays"]
    return pd.DataFrame(out, columns=columns)


def queue_length_series(trace: Trace | TraceSet, *, complete_steps: bool = False) -> pd.DataFrame:
    """Outstanding launches per stream over time, HTA's series
    ([`queue_series`][jupyter_profview.derived.queues.queue_series], where the rule is stated): per
    stream, +1 when the launch call of an activity starts, -1 when the activity starts, over the
    launches that enqueue work (HTA's list of runtime calls, `kinds.ENQUEUE_CALLS`) and that the
    trace holds whole (launch and activity).  One row per change, as HTA's; at equal times the
    launches count first, so a time can have two rows (the value from a time on is its last row's).
    `complete_steps=True` also leaves out what HTA's `TraceAnalysis` leaves out by default: the
    last `ProfilerStep` (an incomplete iteration), i.e. every pair whose launch call starts at or
    after the last CPU-side step starts (when there are at least two,
    [`last_step_start`][jupyter_profview.derived.step_instances.last_step_start]).  Columns `gpu`, `stream`,
    `time` (ns), `queue_length` (the value from that change on)."""
    if is_traceset(trace):
        return per_rank(queue_length_series, trace, rebase=True, complete_steps=complete_steps)
    before = last_step_start(trace) if complete_steps else None
    series = queue_series(trace, before=before)
    gpu = series["gpu"].array  # categorical: its labels as str, by reference (no string per row)
    labels = np.asarray([str(c) for c in gpu.categories] + [""], dtype=object)
    return pd.DataFrame({"gpu": labels[np.asarray(gpu.codes)], "stream": series["stream"].to_numpy(),
                         "time": series["time"].to_numpy(),
                         "queue_length": series["queue_length"].to_numpy()})


def queue_length(trace: Trace | TraceSet, *, complete_steps: bool = False) -> pd.DataFrame:
    """Per GPU and stream, over the queue length of
    `queue_length_series` (its definition, and ``complete_steps``):
    ``max`` (over the changes, as HTA's); ``mean`` and ``p95`` weighted by
    how long each value lasted, from the first change to the last; ``span``
    (ns) of that window; ``changes``, the number of changes, and
    ``mean_per_change``, the plain mean of the values at the changes.

    HTA's queue-length summary (``describe()`` of its series) is per change,
    not per time: its ``count``, ``max`` and ``mean`` are ``changes``,
    ``max`` and ``mean_per_change`` here, and with ``complete_steps=True``
    they are equal on every stream of HTA's test traces, the stream where a
    launch and an activity share a timestamp included (the launch counts
    first, as HTA concatenates them), and on a queue 1,000 deep.  Where many
    launches fall on the µs a kernel starts, HTA's unstable sort orders each
    tie either way, so its ``mean`` is not reproducible; count and max still
    are (`jupyter_profview.derived.queues`).  The 5-30 % gaps seen
    without ``complete_steps`` are HTA's cut
    of the last step (its deepest queue can be there) and its unweighted mean
    (a burst of launches makes many changes in little time)."""
    if is_traceset(trace):
        return per_rank(queue_length, trace, complete_steps=complete_steps)
    series = queue_length_series(trace, complete_steps=complete_steps)
    rows = []
    for (gpu, stream), g in series.groupby(["gpu", "stream"], sort=True):
        time, value = g["time"].to_numpy(), g["queue_length"].to_numpy()
        weight = np.diff(time)  # 0 between two changes at one time
        span = int(time[-1] - time[0])
        mean = float((value[:-1] * weight).sum() / span) if span else float(value[0])
        rows.append({"gpu": gpu, "stream": stream, "max": int(value.max()), "mean": mean,
                     "p95": _weighted_quantile(value[:-1], weight, 0.95) if span else float(value[0]),
                     "span": span, "changes": len(value), "mean_per_change": float(value.mean())})
    return pd.DataFrame(rows, columns=["gpu", "stream", "max", "mean", "p95", "span", "changes",
                                       "mean_per_change"])


def _weighted_quantile(values: np.ndarray, weight: np.ndarray, q: float) -> float:
    """The smallest value v with (time at values <= v) >= q * total time."""
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weight[order])
    return float(values[order][np.searchsorted(cum, q * cum[-1], side="left")])


def linked_events(trace: Trace | TraceSet, ids: Any) -> np.ndarray:
    """Event ids linked to ``ids`` by a flow (either end) or a launch (the
    launch call of a kernel, the kernels of a launch call), ``ids`` excluded;
    sorted.  What a selection of kernels needs to show where they came from.
    Event ids are per rank: for a TraceSet ask one rank, ``linked_events(ts[r], ids)``."""
    if is_traceset(trace):
        raise ProfviewError("linked_events: event ids are per rank",
                            expected="one rank: linked_events(ts[r], ids)")
    ids = np.unique(np.asarray(ids, np.int64))
    found: list[np.ndarray] = []
    flows = trace.flows
    if len(flows):
        src, dst = flows["source"].to_numpy(), flows["target"].to_numpy()
        found += [dst[np.isin(src, ids)], src[np.isin(dst, ids)]]
    la = trace.launches
    if len(la):
        kernel, launch = la["kernel"].to_numpy(), la["launch"].to_numpy(np.int64, na_value=-1)
        found += [launch[np.isin(kernel, ids)], kernel[np.isin(launch, ids)]]
    out = np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)
    return np.setdiff1d(out[out >= 0], ids)


def utilisation(trace: Trace | TraceSet, t0: float, t1: float, columns: int) -> pd.DataFrame:
    """GPU utilisation per GPU and time column: ``columns`` equal columns over
    ``[t0, t1)`` (ns, the trace's time axis); ``busy`` is the fraction (0-1)
    of the column during which the GPU runs at least one activity (union over
    its streams).  Columns ``gpu``, ``column``, ``start``, ``end``, ``busy``;
    one row per GPU and column.  Vectorised: the busy time up to ``t`` is read
    off the cumulative length of the merged intervals at the column edges.  A TraceSet:
    ``[t0, t1)`` on its common clock, the same columns for every rank, with ``rank``."""
    if columns <= 0 or not t1 > t0:
        raise ProfviewError(f"utilisation: need columns > 0 and t1 > t0, got {columns}, [{t0}, {t1})")
    if is_traceset(trace):
        frames = []
        for r in trace.ranks:
            frame = utilisation(trace[r], t0 - trace.offsets[r], t1 - trace.offsets[r], columns)
            frame.insert(0, "rank", np.int64(r))
            frames.append(frame)
        return to_common_clock(concat(frames), trace)
    edges = np.linspace(float(t0), float(t1), columns + 1)
    acts = _activities(trace)
    frames = []
    for gpu, g in acts.groupby("gpu", sort=True):
        s, e = union(g["start"].to_numpy(), g["end"].to_numpy())
        frames.append(pd.DataFrame({"gpu": gpu, "column": np.arange(columns), "start": edges[:-1],
                                    "end": edges[1:], "busy": busy_fraction(s, e, edges)}))
    if not frames:
        return pd.DataFrame({"gpu": pd.Series([], dtype=object), "column": np.zeros(0, np.int64),
                             "start": np.zeros(0), "end": np.zeros(0), "busy": np.zeros(0)})
    return pd.concat(frames, ignore_index=True)
