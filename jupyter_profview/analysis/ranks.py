"""Analyses across the ranks of a distributed run (a `TraceSet`).

Times are int64 ns on the set's common clock: every rank's times are rebased
to one origin (the earliest rank's ``baseTimeNanoseconds + ts``), which is
wall-clock time on one host and NTP-aligned across hosts.  Where clocks of
hosts disagree, ``ts.aligned(step=N)`` shifts each rank so that its
``ProfilerStep#N`` starts at the same time (``ts.aligned(collective=name)``:
so that a collective instance ends at the same time).

Collectives: which events are collectives and their process group, see
`jupyter_profview.ranks.derived` (`collective_calls`, the
``collectives`` table of a TraceSet).  Nothing in a gloo trace links one
instance across ranks except the order, so instances are matched by
(process group, name, k-th occurrence).  Profile every rank with the same
schedule, so that the k-th occurrence is the same call everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..derived import union_length
from ..errors import ProfviewError
from ..model import Trace
from ..ranks.derived import collective_calls as trace_collective_calls
from ..ranks.derived import profiler_steps, trace_steps
from .traceset import is_traceset

if TYPE_CHECKING:
    from ..ranks.traceset import TraceSet

__all__ = ["collective_calls", "collective_skew", "step_times", "stragglers"]


def step_times(ts: TraceSet | Trace) -> pd.DataFrame:
    """The CPU-side ``ProfilerStep#N`` per rank (`jupyter_profview.analysis.steps`):
    ``step`` (N as the trace numbers it: with a
    schedule the first recorded step is ``wait + warmup``, not 0), ``rank``,
    ``start``, ``end``, ``dur`` (ns; a TraceSet: on its common clock, a Trace: its
    own clock, ``rank`` from its ``distributedInfo``), sorted by step then rank."""
    if is_traceset(ts):
        return profiler_steps(ts)
    rank = ts.info.distributed_info.get("rank", 0)
    return trace_steps(ts, rank)


def collective_calls(trace: Trace | TraceSet) -> pd.DataFrame:
    """The collective instances of one trace: ``id`` (event id), ``name``, ``pg`` (process group,
    ``""`` where unknown), ``seq`` (k-th occurrence of (pg, name), from 0), ``start``/``end`` (ns,
    the trace's own clock), ``thread`` (see
    [collective_calls][jupyter_profview.ranks.derived.collective_calls]).  A TraceSet: every rank's,
    with ``rank``, on the common clock (``ts.collectives``)."""
    if is_traceset(trace):
        return trace.collectives
    return trace_collective_calls(trace)


def _needs_ranks(ts: object, analysis: str) -> None:
    if not is_traceset(ts):
        raise ProfviewError(f"{analysis} compares the ranks of a distributed run, not one "
                            f"{type(ts).__name__}", expected="a TraceSet (profview.load_many)")


def _per_step_waits(steps: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """Per (step, rank): time inside collectives (union, clipped to the step)."""
    waits = np.zeros(len(steps), np.int64)
    by_rank = {r: c for r, c in calls.groupby("rank", sort=False)}
    for i, (rank, start, end) in enumerate(zip(steps["rank"].tolist(), steps["start"].tolist(),
                                               steps["end"].tolist(), strict=True)):
        mine = by_rank.get(rank)
        if mine is None:
            continue
        s = np.clip(mine["start"].to_numpy(np.int64), start, end)
        e = np.clip(mine["end"].to_numpy(np.int64), start, end)
        waits[i] = union_length(s, e)
    out = steps.copy()
    out["wait"] = waits
    out["compute"] = out["dur"] - out["wait"]
    return out


def stragglers(ts: TraceSet, *, per_rank: bool = False) -> pd.DataFrame:
    """Which rank holds the others back, in which step, by how much.

    Per step and rank: ``wait`` is the time the rank spent inside collectives
    (``nccl:*``/``gloo:*``, union, clipped to the step) and ``compute = dur -
    wait``.  In a synchronous job every rank's step takes about as long as the
    slowest one; the others spend the difference waiting.  So the straggler of
    a step is the rank with the largest ``compute``; ``excess`` is its compute
    minus the median compute of the other ranks (about the time the others
    waited for it), ``last_arrivals`` how many of the step's collectives it
    entered last (see `collective_skew`).

    Rooted collectives (broadcast, reduce, scatter, gather) make the root look
    late: the root returns as soon as its data is sent, then starts its next
    collective while the others are still receiving, and non-root ranks can
    enter before it.  Read ``last_arrivals`` of a rooted op with that in mind.

    Columns: ``step``, ``rank`` (the straggler), ``compute``,
    ``others_compute`` (median), ``excess``, ``wait``, ``others_wait``
    (median), ``last_arrivals``, ``collectives``.  ``per_rank=True`` returns
    the table per (step, rank) instead: ``step``, ``rank``, ``start``,
    ``end``, ``dur``, ``wait``, ``compute``.
    """
    _needs_ranks(ts, "stragglers")
    steps = step_times(ts)
    calls = ts.collectives
    table = _per_step_waits(steps, calls)
    if per_rank:
        return table
    skew = collective_skew(ts)
    rows = []
    for step, group in table.groupby("step", sort=True):
        if len(group) < 2:
            continue
        worst = group.iloc[int(np.argmax(group["compute"].to_numpy()))]
        rank = int(worst["rank"])
        others = group[group["rank"] != rank]
        window = group[group["rank"] == rank]
        in_step = skew[(skew["last_start"] >= window["start"].iloc[0])
                       & (skew["last_start"] < window["end"].iloc[0])] if len(skew) else skew
        rows.append({
            "step": int(str(step)), "rank": rank, "compute": int(worst["compute"]),
            "others_compute": int(others["compute"].median()),
            "excess": int(worst["compute"] - others["compute"].median()),
            "wait": int(worst["wait"]), "others_wait": int(others["wait"].median()),
            "last_arrivals": int((in_step["last_rank"] == rank).sum()),
            "collectives": len(in_step),
        })
    return pd.DataFrame(rows, columns=["step", "rank", "compute", "others_compute", "excess", "wait",
                                       "others_wait", "last_arrivals", "collectives"])


def collective_skew(ts: TraceSet) -> pd.DataFrame:
    """Each collective instance across ranks, matched by (``pg``, ``name``, ``seq``).

    Columns: ``pg``, ``name``, ``seq``, ``ranks`` (how many ranks have this
    instance; fewer than ``len(ts)`` means a rank has fewer calls, so later
    matches are suspect), ``first_start`` (earliest entry, common clock),
    ``last_start`` (latest entry), ``start_spread`` (``last_start -
    first_start``: how long the first rank waited for the last), ``end_spread``
    (latest minus earliest exit), ``first_rank``, ``last_rank`` (the rank that
    arrived last: the one everyone waited for), ``max_dur``, ``min_dur``.
    Sorted by ``first_start``.
    """
    _needs_ranks(ts, "collective_skew")
    return match_instances(ts.collectives, ["pg", "name", "seq"])


def match_instances(calls: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per instance of `calls` (rows with `rank`, `start`, `end`) matched across ranks
    by `keys`: the columns of [`collective_skew`][jupyter_profview.analysis.ranks.collective_skew]
    after the keys, sorted by `first_start`."""
    cols = [*keys, "ranks", "first_start", "last_start", "start_spread", "end_spread",
            "first_rank", "last_rank", "max_dur", "min_dur"]
    if len(calls) == 0:
        return pd.DataFrame(columns=cols)
    calls = calls.assign(dur=calls["end"] - calls["start"])
    g = calls.groupby(keys, sort=False)
    first = calls.loc[g["start"].idxmin(), [*keys, "rank"]].rename(columns={"rank": "first_rank"})
    last = calls.loc[g["start"].idxmax(), [*keys, "rank"]].rename(columns={"rank": "last_rank"})
    out = g.agg(ranks=("rank", "nunique"), first_start=("start", "min"), last_start=("start", "max"),
                first_end=("end", "min"), last_end=("end", "max"), max_dur=("dur", "max"),
                min_dur=("dur", "min")).reset_index()
    out["start_spread"] = out["last_start"] - out["first_start"]
    out["end_spread"] = out["last_end"] - out["first_end"]
    out = out.merge(first, on=keys).merge(last, on=keys)
    return out[cols].sort_values("first_start", kind="stable").reset_index(drop=True)
