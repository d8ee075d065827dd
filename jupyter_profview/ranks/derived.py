"""Tables derived from a rank's events for the rank analyses (data, no analysis).

* `collective_calls`: the collective instances of one Trace; every rank's
  are written into its cache entry (the ``collectives`` table) at load time,
  when the event args they need are at hand;
* `profiler_steps`: the CPU-side ``ProfilerStep#N`` slices of every rank of a
  TraceSet, read from its cache with SQL (the steps of
  `jupyter_profview.derived.steps`, by `jupyter_profview.derived.instances`).

Collectives.  PyTorch marks the real work of a collective with a
``user_annotation`` named ``nccl:<op>`` or ``gloo:<op>`` (gloo: on a
``pt_gloo_runloop`` thread, covering the wait for the peers; the
``c10d::<op>_`` ``cpu_op`` on the calling thread only queues the work).
With NCCL the wait happens on the GPU, in the ``ncclKernel_*`` /
``ncclDevKernel_*`` kernels, which are collectives here too (the device
activities of kind ``communication``, `jupyter_profview.derived.device_activities`;
the annotations by `jupyter_profview.kinds.COLLECTIVE_ANNOTATION`).  The process
group is the event's (or its ``record_param_comms`` parent's) ``Process Group Name``/``pg_name`` arg
where the trace has one, else ``""``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..derived import device_activities, instances, steps
from ..derived.masks import match
from ..kinds import COLLECTIVE_ANNOTATION, COLLECTIVE_PARAMS, STEP_ANNOTATION
from ..model import Trace
from .device_args import process_groups

if TYPE_CHECKING:
    from .traceset import TraceSet

def call_numbers(process_group: Any, name: Any) -> np.ndarray:
    """How a rank's collective calls are numbered, the one rule: the k-th call (from 0, in the
    rows' order: by start) of its (process group, name) on the rank.  Ranks that ran the same
    schedule give the same call the same number, so calls are matched across ranks by
    (process group, name, number) -- `collective_calls`' `seq`, `collective_bandwidth`'s
    `index`, `TraceSet.aligned(collective=(name, seq))`."""
    keys = pd.DataFrame({"pg": np.asarray(process_group, dtype=object),
                         "name": np.asarray(name, dtype=object)})
    return keys.groupby(["pg", "name"], sort=False).cumcount().to_numpy(np.int64)


def collective_calls(trace: Trace) -> pd.DataFrame:
    """The collective instances of one trace: ``id`` (event id), ``name``,
    ``pg`` (process group, ``""`` where unknown), ``seq`` (k-th occurrence of
    (pg, name), from 0), ``start``/``end`` (ns, the trace's own clock),
    ``thread``."""
    ev = trace.events
    acts = device_activities(trace)
    kernels = acts.loc[acts["kind"] == "communication", "event"].to_numpy(np.int64)
    hit = match(ev["name"], COLLECTIVE_ANNOTATION.match) | ev.index.isin(kernels)
    pick = ev[hit & (ev["kind"] != "instant").to_numpy(bool)].sort_values("start", kind="stable")
    parent = pick["parent"].to_numpy(np.int64)
    is_params = np.zeros(len(parent), bool)
    has = np.flatnonzero(parent >= 0)
    is_params[has] = (ev["name"].loc[parent[has]] == COLLECTIVE_PARAMS).to_numpy(bool)
    groups = process_groups(trace, [pick.index.to_numpy(np.int64), np.where(is_params, parent, -1)])
    out = pd.DataFrame({
        "id": pick.index.to_numpy(np.int64),
        "name": pick["name"].astype(str).to_numpy(),
        "pg": np.asarray(groups, dtype=object),
        "start": pick["start"].to_numpy(np.int64),
        "end": (pick["start"] + pick["dur"]).to_numpy(np.int64),
        "thread": pick["thread"].astype(str).to_numpy(),
    })
    out.insert(3, "seq", call_numbers(out["pg"], out["name"]))
    return out


def step_rows(rank: Any, table: pd.DataFrame) -> pd.DataFrame:
    """The CPU-side numbered steps of a steps table (`jupyter_profview.derived.steps`) as
    ``step`` (N), ``rank``, ``start``, ``end``, ``dur``, sorted by step then rank."""
    cpu = table[(table["side"].to_numpy(object) == "cpu") & table["number"].notna().to_numpy(bool)]
    out = pd.DataFrame({
        "step": cpu["number"].to_numpy(np.int64),
        "rank": np.broadcast_to(np.asarray(rank, np.int64), len(cpu)),
        "start": cpu["start"].to_numpy(np.int64),
        "end": cpu["end"].to_numpy(np.int64),
    })
    out["dur"] = out["end"] - out["start"]
    return out.sort_values(["step", "rank"], kind="stable").reset_index(drop=True)


def trace_steps(trace: Trace, rank: Any) -> pd.DataFrame:
    """`step_rows` of one Trace."""
    return step_rows(rank, steps(trace))


def profiler_steps(ts: TraceSet) -> pd.DataFrame:
    """Every rank's CPU-side ``ProfilerStep#N`` slices (see `step_rows`; times on the common
    clock): the rows named like a step, read with SQL, then the one rule of a step
    (`jupyter_profview.derived.instances`, devices from the ``launches`` table)."""
    frame = ts.sql(f"select rank, name, kind, category, process, start, dur from events "
                   f"where name like '{STEP_ANNOTATION}%'")
    devices: dict[int, set[str]] = {}
    if len(frame) and len(ts.table_files("launches")) == len(ts):
        for r, gpu in ts.sql("select distinct rank, gpu from launches").itertuples(index=False):
            devices.setdefault(int(r), set()).add(str(gpu))
    parts = [step_rows(r, instances(frame[frame["rank"] == r], devices=devices.get(r, set())))
             for r in sorted(set(frame["rank"].astype(int).tolist()))]
    if not parts:
        return step_rows(0, instances(frame))
    out = pd.concat(parts, ignore_index=True)
    return out.sort_values(["step", "rank"], kind="stable").reset_index(drop=True)
