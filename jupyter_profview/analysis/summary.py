"""Tables computed from a Trace: per-key summary, per-device phases, top events.

Definitions (times in the trace's ``time_unit``)
------------------------------------------------

total
:   Sum of ``dur`` over *all* events of a key, nested ones included.  An event
    nested in another event of the same key (recursion, a ``Conv2D`` inside a
    ``Conv2D`` scope) is counted in both, so totals can exceed wall time and
    do not add up across keys.  Use ``self`` to add things up.

self
:   Sum of the events' ``self`` column: ``dur`` minus the ``dur`` of the
    event's direct children on its track, torch's "Self CPU" for every op and
    ``record_function`` range (the rule, with partial overlaps and Python
    frames, is in ``jupyter_profview.nesting``).  Every instant of a thread's
    time is in the self time of exactly one event (the one running), so self
    times never double count and ``self <= total`` for every key.

busy time
:   The sum of ``self`` over all events, which equals the sum of ``dur`` over
    the top-level (depth 0) events: the time each track was busy, summed over
    tracks.  On a trace with one track this is its busy wall time; with several
    tracks running at once it is "track time", like CPU time summed over cores.

share
:   ``100 * self / busy time``: the key's share of the busy time, in percent
    (as ``share`` everywhere in the package: `kernel_breakdown`, `advise`,
    the critical path's breakdown).  Shares sum to 100 over all keys
    (excluding an empty trace), whichever ``by`` is used.

flops, flop_rate
:   Where events have a ``flops`` column: its sum per key, and
    ``flops / total seconds`` over the events whose FLOPs are known (the rate
    the framework's own analyzers print: work divided by the op's duration).

bytes, bandwidth
:   Where events have a ``memory_bytes`` column (MegEngine: the bytes an op
    reads and writes), else a numeric ``bytes`` column: its sum, and
    ``bytes / total seconds`` over the events where it is known.  Rates are
    given only for traces with a clock (``time_unit == "ns"``).

FLOPs and bytes are per event: where a format puts an op's footprint on both
its host and its device rows (MegEngine), summarise one process at a time
(``events=trace.events[trace.events["process"] == "gpu0:0"]``).

Phases per device: see `phases`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..derived import union_length
from ..derived.self_time import self_intervals
from ..errors import ProfviewError
from ..model import PHASES, Trace
from .traceset import is_traceset, per_rank

if TYPE_CHECKING:
    from ..ranks.traceset import TraceSet

FLOPS_COLUMN = "flops"
BYTES_COLUMNS = ("memory_bytes", "bytes")


def _events(trace: Trace, events: pd.DataFrame | None) -> pd.DataFrame:
    return trace.events if events is None else events


def _check_column(frame: pd.DataFrame, column: str, what: str) -> None:
    if column not in frame.columns:
        raise ProfviewError(
            f"the events table has no column {column!r} to {what}",
            expected=f"one of: {', '.join(map(str, frame.columns))}",
        )


def bytes_column(events: pd.DataFrame) -> str | None:
    """The events column holding per-op memory traffic in bytes, if any."""
    for col in BYTES_COLUMNS:
        if col in events.columns and pd.api.types.is_numeric_dtype(events[col]):
            return col
    return None


def summary(trace: Trace | TraceSet, by: str = "category", *,
            events: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per-``by`` totals, sorted by ``total`` (descending).

    ``by`` is any column of the events table (``"category"``, ``"name"``,
    ``"phase"``, ``"process"``, ``"track"`` ...).  ``events`` restricts the
    summary to a subset of ``trace.events`` (e.g. one device, or a widget
    selection); shares are then shares of that subset's busy time.

    Columns: ``count``, ``total``, ``self``, ``mean`` (``total / count``),
    ``share`` (see the module docstring), and where the trace has them
    ``flops``, ``flop_rate`` (FLOP/s), ``bytes`` and ``bandwidth`` (bytes/s).

    A TraceSet gives one summary per rank, stacked, with ``rank`` and ``by`` columns.
    """
    if is_traceset(trace):
        return per_rank(summary, trace, by)
    ev = _events(trace, events)
    _check_column(ev, by, "summarise by")
    key = ev[by]
    frame = pd.DataFrame({
        "key": key.astype("category") if not isinstance(key.dtype, pd.CategoricalDtype) else key,
        "dur": ev["dur"].to_numpy(np.int64),
        "self": ev["self"].to_numpy(np.int64),
    })
    extra: dict[str, str] = {}
    if FLOPS_COLUMN in ev.columns and pd.api.types.is_numeric_dtype(ev[FLOPS_COLUMN]):
        extra["flops"] = FLOPS_COLUMN
    bcol = bytes_column(ev)
    if bcol is not None:
        extra["bytes"] = bcol
    for measure, col in extra.items():
        values = pd.to_numeric(ev[col], errors="coerce").astype("float64").to_numpy()
        frame[measure] = values
        frame[f"{measure}_dur"] = np.where(np.isnan(values), 0, frame["dur"].to_numpy())
    grouped = frame.groupby("key", observed=True, sort=False)
    out = pd.DataFrame({
        "count": grouped.size().astype(np.int64),
        "total": grouped["dur"].sum().astype(np.int64),
        "self": grouped["self"].sum().astype(np.int64),
    })
    out["mean"] = out["total"] / out["count"]
    busy = int(frame["self"].sum())
    out["share"] = 100.0 * out["self"] / busy if busy > 0 else 0.0
    clock = trace.time_unit == "ns"
    for name, rate in (("flops", "flop_rate"), ("bytes", "bandwidth")):
        if name not in extra:
            continue
        out[name] = grouped[name].sum(min_count=1)
        if clock:
            seconds = grouped[f"{name}_dur"].sum() / 1e9
            out[rate] = out[name] / seconds.where(seconds > 0)
    out.index.name = by
    out = out.sort_values(["total", "self"], ascending=False, kind="stable")
    if isinstance(out.index.dtype, pd.CategoricalDtype):
        out.index = out.index.astype(str)
    return out


def top(trace: Trace | TraceSet, n: int = 10, by: str = "self", *,
        events: pd.DataFrame | None = None) -> pd.DataFrame:
    """The ``n`` events with the largest ``by`` (any numeric events column),
    largest first, with their ids as the index.  A TraceSet gives the ``n``
    largest over all ranks, with ``rank`` and ``id`` (the rank's event id) columns and
    ``start`` on the set's common clock."""
    if is_traceset(trace):
        stacked = per_rank(top, trace, n, by, rebase=True)
        return stacked.sort_values(by, ascending=False, kind="stable").head(n).reset_index(drop=True)
    ev = _events(trace, events)
    _check_column(ev, by, "rank by")
    if not pd.api.types.is_numeric_dtype(ev[by]):
        raise ProfviewError(f"column {by!r} is not numeric", expected="a numeric column such as self or dur")
    return ev.sort_values(by, ascending=False, kind="stable").head(n)


def phases(trace: Trace | TraceSet, *, events: pd.DataFrame | None = None) -> pd.DataFrame:
    """Time per training phase on each device (``process``).

    Each instant of a track is attributed to the phase of the innermost slice
    open at that instant (its self time; see `self_intervals`).  A
    phase's time on a device is the length of the union of its intervals
    over the device's tracks, so work of one phase on two streams at once
    counts once.  Where the nesting is phase-consistent (the builder gives
    ``other`` children their parent's phase) this is the union of the
    top-level slices of that phase; where a top-level ``other`` slice (e.g.
    PyTorch's ``ProfilerStep#N``) encloses forward/backward/optimizer work,
    the work counts for its own phase and only the gaps count as ``other``.

    Columns: the phases of `PHASES`, ``idle``
    (``span - busy``), ``busy`` (union of all top-level slices), ``span``
    (first start to last end of the device's slices).  Phases of different
    tracks can overlap in time, so the phases can add up to more than
    ``busy``; on a single track they add up to exactly ``busy``.  A TraceSet
    gives one row per (rank, process).
    """
    if is_traceset(trace):
        return per_rank(phases, trace)
    ev = _events(trace, events)
    slices = ev[ev["kind"] == "slice"]
    intervals = self_intervals(slices)
    rows = {}
    for process, dev in slices.groupby("process", observed=True, sort=True):
        span = int((dev["start"] + dev["dur"]).max() - dev["start"].min())
        mine = intervals[intervals["process"] == process]
        row = {}
        for phase in PHASES:
            pick = mine[mine["phase"] == phase]
            row[phase] = union_length(pick["start"].to_numpy(), pick["end"].to_numpy())
        busy = union_length(mine["start"].to_numpy(), mine["end"].to_numpy())
        row.update(idle=span - busy, busy=busy, span=span)
        rows[str(process)] = row
    out = pd.DataFrame.from_dict(rows, orient="index", columns=[*PHASES, "idle", "busy", "span"])
    out = out.astype(np.int64)
    out.index.name = "process"
    return out
