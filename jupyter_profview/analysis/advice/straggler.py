"""The cross-rank rule of [advise][jupyter_profview.analysis.advice.advise]: the straggler.

Step durations do not show a straggler: the collectives make every rank's steps equally long,
and the others spend the difference waiting inside them.  The collective calls do: the k-th call
of each (process group, name) is matched across ranks as
[collective_skew][jupyter_profview.analysis.ranks.collective_skew] does, and the rank that enters
late is the one everyone waits for.

Definitions, over the matched calls that two or more ranks made:

- a rank's *lateness* is the sum over calls of (its start - the earliest start);
- the straggler is the rank with the largest lateness, reported only when it is the last to start
  in more than half of the calls;
- `time` is the sum over calls of max(0, its start - the latest start among the other ranks): how
  much later than everyone else it arrived;
- the evidence is its late calls (those it entered last);
- point-to-point calls (`send`, `recv`: `ranks.device_args.op_kind`)
  are not matched: the k-th send of one rank and of another are different transfers, and in a
  pipeline-parallel run the time in them is the waiting the schedule itself causes (its bubble,
  the `pipeline_bubble` rule), not a late rank;
- the message names what it spent the time on before its late calls: on each rank, the CPU ops and
  annotations (`cpu_op`, `user_annotation`) that start between the end of the rank's previous
  collective call and the late call, summed by name (their `self` time); the names whose total on
  the straggler exceeds the other ranks' mean by the most.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...numbers import format_duration
from ...ranks.device_args import op_kind
from ..columns import among

if TYPE_CHECKING:
    from ...ranks.traceset import TraceSet


#: the collective kinds of a point-to-point call (module docstring)
POINT_TO_POINT = frozenset({"send", "recv"})


def straggler(ts: TraceSet) -> dict[str, Any] | None:
    """The straggler finding of a TraceSet, or None (module docstring)."""
    calls = ts.collectives
    if len(calls) == 0:
        return None
    keys = ["pg", "name", "seq"]
    names = calls["name"].astype(str)
    p2p = names.map({n: op_kind(n) in POINT_TO_POINT for n in names.unique()}).to_numpy(bool)
    calls = calls[~p2p]
    if len(calls) == 0:
        return None
    calls = calls.sort_values([*keys, "rank"], kind="stable")
    size = calls.groupby(keys, sort=False)["rank"].transform("nunique")
    calls = calls[size >= 2]
    if len(calls) == 0:
        return None
    group = calls.groupby(keys, sort=False)["start"]
    early = group.transform("min").to_numpy(np.int64)
    start = calls["start"].to_numpy(np.int64)
    rank = calls["rank"].to_numpy(np.int64)
    lateness = pd.Series(start - early).groupby(rank).sum()
    worst = int(lateness.index.to_numpy(np.int64)[int(np.argmax(lateness.to_numpy()))])
    n_calls = int(calls.groupby(keys, sort=False).ngroups)
    last = calls.loc[group.idxmax()]
    last_count = int((last["rank"] == worst).sum())
    if last_count * 2 <= n_calls:
        return None
    # its start minus the latest start of the others, per call
    mine = calls[rank == worst].set_index(keys)["start"]
    others = calls[rank != worst].groupby(keys, sort=False)["start"].max()
    joined = pd.concat([mine.rename("mine"), others.rename("others")], axis=1, join="inner")
    ahead = (joined["mine"] - joined["others"]).clip(lower=0)
    time = int(ahead.sum())
    if time == 0:
        return None
    late = calls[(rank == worst)].merge(last[[*keys, "rank"]], on=[*keys, "rank"])
    late_ids = late["id"].astype(np.int64).tolist()
    growth = _what_grew(ts, calls, late, worst)
    what = ""
    if growth:
        what = "; before its late calls it spent more than the others in " + ", ".join(
            f"{name} (+{format_duration(t)})" for name, t in growth)
    return {
        "rule": "straggler", "rank": worst, "time": time, "events": late_ids, "device": "",
        "message": f"Rank {worst} entered {last_count} of {n_calls} collectives last, "
                   f"{format_duration(time)} after the other ranks in total{what}.",
        "fix": "Balance the work across ranks (data sharding, sequence lengths), and look for "
               "rank-local work (logging, checkpointing, data loading) on the straggler.",
        "lateness": dict(zip(lateness.index.astype(np.int64).tolist(), lateness.astype(np.int64).tolist(),
                             strict=True)),
    }


def _what_grew(ts: TraceSet, calls: pd.DataFrame, late: pd.DataFrame, worst: int,
               top: int = 3) -> list[tuple[str, int]]:
    """Self time by name before the late calls, straggler minus the other ranks' mean."""
    keys = ["pg", "name", "seq"]
    wanted = late[keys]
    totals: dict[int, pd.Series] = {}
    for r in sorted(set(calls["rank"].tolist())):
        mine = calls[calls["rank"] == r].sort_values("start", kind="stable")
        prev_end = np.concatenate([[np.iinfo(np.int64).min], mine["end"].to_numpy(np.int64)[:-1]])
        mine = mine.assign(gap_start=prev_end)
        gaps = mine.merge(wanted, on=keys)
        if len(gaps) == 0:
            continue
        ev = ts[r].events
        pick = among(ev["category"], ("cpu_op", "user_annotation")) & (ev["kind"].to_numpy() == "slice")
        sub = ev[pick]
        start = sub["start"].to_numpy(np.int64) + ts.offsets[r]
        inside = np.zeros(len(sub), bool)
        lo = np.maximum(gaps["gap_start"].to_numpy(np.int64), np.iinfo(np.int64).min)
        for a, b in zip(lo.tolist(), gaps["start"].to_numpy(np.int64).tolist(), strict=True):
            inside |= (start >= a) & (start < b)
        chosen = sub[inside]
        totals[r] = chosen.groupby(chosen["name"].astype(str), sort=False)["self"].sum()
    if worst not in totals:
        return []
    others = [s for r, s in totals.items() if r != worst]
    base = pd.concat(others, axis=1).fillna(0).sum(axis=1) / len(others) if others else pd.Series(dtype=float)
    diff = totals[worst].sub(base, fill_value=0).sort_values(ascending=False)
    return [(str(n), int(v)) for n, v in diff.head(top).items() if v > 0]
