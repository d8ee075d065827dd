"""Tables derived from a rank's events for the rank analyses (data, no analysis).

* :func:`collective_calls`: the collective instances of one Trace; every rank's
  are written into its cache entry (the ``collectives`` table) at load time,
  when the event args they need are at hand;
* :func:`profiler_steps`: the ``ProfilerStep#N`` slices of every rank of a
  TraceSet, read from its cache with SQL.

Collectives.  PyTorch marks the real work of a collective with a
``user_annotation`` named ``nccl:<op>`` or ``gloo:<op>`` (gloo: on a
``pt_gloo_runloop`` thread, covering the wait for the peers; the
``c10d::<op>_`` ``cpu_op`` on the calling thread only queues the work).
With NCCL the wait happens on the GPU, in the ``ncclKernel_*`` /
``ncclDevKernel_*`` kernels, which are collectives here too (matched by
kernel name).  The process group is the event's (or its
``record_param_comms`` parent's) ``Process Group Name``/``pg_name`` arg
where the trace has one, else ``""``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..model import Trace

if TYPE_CHECKING:
    from .traceset import TraceSet

COLLECTIVE = re.compile(r"^(nccl|gloo):|^nccl(Dev)?Kernel")
PG_KEYS = ("Process Group Name", "pg_name")
STEP = re.compile(r"^ProfilerStep#(\d+)$")


def collective_calls(trace: Trace) -> pd.DataFrame:
    """The collective instances of one trace: ``id`` (event id), ``name``,
    ``pg`` (process group, ``""`` where unknown), ``seq`` (k-th occurrence of
    (pg, name), from 0), ``start``/``end`` (ns, the trace's own clock),
    ``thread``."""
    ev = trace.events
    names = ev["name"].cat.categories if isinstance(ev["name"].dtype, pd.CategoricalDtype) \
        else pd.Index(ev["name"].unique())
    wanted = [n for n in names if COLLECTIVE.match(str(n))]
    pick = ev[ev["name"].isin(wanted) & (ev["kind"] != "instant")].sort_values("start", kind="stable")
    groups: list[str] = []
    for eid, parent in zip(pick.index.tolist(), pick["parent"].tolist(), strict=True):
        pg = _pg(trace.args(eid))
        if pg is None and parent >= 0 and str(ev["name"].at[parent]) == "record_param_comms":
            pg = _pg(trace.args(parent))
        groups.append(pg or "")
    out = pd.DataFrame({
        "id": pick.index.to_numpy(np.int64),
        "name": pick["name"].astype(str).to_numpy(),
        "pg": np.asarray(groups, dtype=object),
        "start": pick["start"].to_numpy(np.int64),
        "end": (pick["start"] + pick["dur"]).to_numpy(np.int64),
        "thread": pick["thread"].astype(str).to_numpy(),
    })
    out.insert(3, "seq", out.groupby(["pg", "name"], sort=False).cumcount().astype(np.int64))
    return out


def _pg(args: dict[str, Any]) -> str | None:
    for key in PG_KEYS:
        if key in args and args[key] not in (None, ""):
            return str(args[key])
    return None


def step_rows(rank: Any, name: pd.Series, start: Any, dur: Any) -> pd.DataFrame:
    """``ProfilerStep#N`` rows as ``step`` (N), ``rank``, ``start``, ``end``,
    ``dur``, sorted by step then rank (names that are not a step are dropped)."""
    step = name.astype(str).str.extract(STEP)[0]
    keep = step.notna().to_numpy()
    out = pd.DataFrame({
        "step": step[keep].astype(np.int64).to_numpy(),
        "rank": np.broadcast_to(np.asarray(rank, np.int64), len(keep))[keep],
        "start": np.asarray(start, np.int64)[keep],
        "dur": np.asarray(dur, np.int64)[keep],
    })
    out.insert(3, "end", out["start"] + out["dur"])
    return out.sort_values(["step", "rank"], kind="stable").reset_index(drop=True)


def profiler_steps(ts: TraceSet) -> pd.DataFrame:
    """Every rank's ``ProfilerStep#N`` slices (see :func:`step_rows`; times on the common clock)."""
    frame = ts.sql("select rank, name, start, dur from events "
                   "where name like 'ProfilerStep#%' and kind = 'slice'")
    return step_rows(frame["rank"].to_numpy(np.int64), frame["name"], frame["start"], frame["dur"])
