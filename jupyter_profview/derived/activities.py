"""The device activities of a trace, each with its kind and its launch."""

from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from ..kinds import ACTIVITY_KINDS, KIND_OF_TYPE, SYNC_CATEGORY
from ..model import Trace
from .cache import cached
from .masks import among
from .step_instances import last_step_start

ACTIVITY_COLUMNS = ("event", "name", "kind", "type", "gpu", "stream", "start", "end", "launch",
                    "launch_name", "launch_start", "correlation")


def device_activities(trace: Trace) -> pd.DataFrame:
    """Every device activity with its kind and its launch: the one place an activity's kind is
    decided.

    The rows are the activities of `trace.launches` (kernels, memcpy, memset, MTIA's DMA; their
    `type` typed at load by the name rules of [`kinds`][jupyter_profview.kinds]) and the
    device-side synchronisation events (Kineto's `cuda_sync`: `Event Sync`, `Stream Wait Event`,
    `Context Sync`), which `trace.launches` does not hold.  Columns:

    - `event` (int64): the activity's event id;
    - `name` (categorical);
    - `kind` (categorical over [`ACTIVITY_KINDS`][jupyter_profview.kinds.ACTIVITY_KINDS]):
      `computation` (type `kernel`), `communication` (NCCL / RCCL / gloo kernels), `memory`
      (`memcpy`, `memset`), `dma` (MTIA DMA transfers), `sync` (`cuda_sync` events);
    - `type` (categorical): the `launches["type"]` (`sync` for the sync events);
    - `gpu` (categorical): the device's process label; `stream` (Int64, <NA> where unknown: a sync event
      on no stream);
    - `start`, `end` (int64, `time_unit`): `[start, end)`;
    - `launch` (Int64): the event id of the runtime call that launched it (for a sync event: the
      call with its correlation id, e.g. `cudaStreamWaitEvent`), <NA> when not in the trace;
      `launch_name` (categorical, <NA> without a launch), `launch_start` (Int64);
    - `correlation` (Int64).

    Sorted by `start` (then `event`).  Computed once per Trace.
    """
    return cached(trace, "device_activities", lambda: _activities(trace))


def _categorical(values: pd.Series) -> pd.Categorical:
    return pd.Categorical(values) if not isinstance(values.dtype, pd.CategoricalDtype) else values.array


def _activities(trace: Trace) -> pd.DataFrame:
    la = trace.launches
    start = la["kernel_start"].to_numpy(np.int64)
    types = _categorical(la["type"])
    kind_of = np.array([ACTIVITY_KINDS.index(KIND_OF_TYPE[str(t)]) for t in types.categories] + [-1],
                       np.int64)
    kernels = pd.DataFrame({
        "event": la["kernel"].to_numpy(np.int64),
        "name": _categorical(la["name"]),
        "kind": pd.Categorical.from_codes(kind_of[np.asarray(types.codes)],
                                          dtype=pd.CategoricalDtype(list(ACTIVITY_KINDS))),
        "type": types,
        "gpu": _categorical(la["gpu"]),
        "stream": la["stream"].astype("Int64").array,
        "start": start,
        "end": start + la["kernel_dur"].to_numpy(np.int64),
        "launch": la["launch"].astype("Int64").array,
        "launch_name": _categorical(la["launch_name"]),
        "launch_start": la["launch_start"].astype("Int64").array,
        "correlation": la["correlation"].astype("Int64").array,
    })
    syncs = _syncs(trace)
    if len(syncs):  # categoricals joined on the union of their categories
        both = [kernels, syncs]
        kernels = pd.concat(both, ignore_index=True)
        for column in ("name", "type", "gpu", "launch_name"):
            kernels[column] = union_categoricals([_text_categories(f[column]) for f in both],
                                                 ignore_order=True)
        kernels["kind"] = pd.Categorical(kernels["kind"], categories=list(ACTIVITY_KINDS))
    order = np.lexsort((kernels["event"].to_numpy(np.int64), kernels["start"].to_numpy(np.int64)))
    return kernels.iloc[order].reset_index(drop=True)


def _syncs(trace: Trace) -> pd.DataFrame:
    ev = trace.events
    rows = ev[among(ev["category"], (SYNC_CATEGORY,))] if len(ev) else ev
    n = len(rows)
    corr: np.ndarray = np.full(n, -1, np.int64)
    launch: np.ndarray = np.full(n, -1, np.int64)
    if "correlation" in ev.columns and n:
        corr = rows["correlation"].to_numpy(np.int64, na_value=-1)
        runtime = among(ev["category"], ("cuda_runtime", "cuda_driver"))
        calls = ev[runtime & ev["correlation"].notna().to_numpy()]
        calls = calls[~calls["correlation"].duplicated()]
        call_of = pd.Series(calls.index.to_numpy(np.int64),
                            index=calls["correlation"].to_numpy(np.int64))
        launch = call_of.reindex(corr).fillna(-1).to_numpy(np.int64)
    valid = launch >= 0
    safe = np.maximum(launch, 0)
    launch_name = np.full(n, None, object)
    launch_name[valid] = ev["name"].iloc[launch[valid]].astype(str).to_numpy(object)
    start = rows["start"].to_numpy(np.int64)
    return pd.DataFrame({
        "event": rows.index.to_numpy(np.int64),
        "name": rows["name"].astype(str).to_numpy(object),
        "kind": np.full(n, "sync", object),
        "type": np.full(n, "sync", object),
        "gpu": rows["process"].astype(str).to_numpy(object),
        "stream": _nullable(np.zeros(n, np.int64), np.zeros(n, bool)),
        "start": start,
        "end": start + rows["dur"].to_numpy(np.int64),
        "launch": _nullable(launch, valid),
        "launch_name": launch_name,
        "launch_start": _nullable(ev["start"].to_numpy(np.int64)[safe] if n else safe, valid),
        "correlation": _nullable(corr, corr >= 0),
    }, columns=list(ACTIVITY_COLUMNS))


def _text_categories(values: pd.Series) -> pd.Categorical:
    """`values` as a Categorical whose categories are text: a column with no value at all (no
    correlation ids: no launch names) has float categories otherwise, and the union with another
    column's text categories fails."""
    cat = pd.Categorical(values)
    return cat.rename_categories(str) if len(cat.categories) else \
        pd.Categorical(cat, categories=pd.Index([], dtype=object))


def _nullable(values: np.ndarray, valid: np.ndarray) -> pd.arrays.IntegerArray:
    return pd.arrays.IntegerArray(np.where(valid, values, 0).astype(np.int64), ~np.asarray(valid, bool))


def complete_steps(trace: Trace) -> np.ndarray:
    """Mask over `trace.launches`: the activities HTA's `TraceAnalysis` keeps by default
    (`include_last_profiler_step=False`, `Trace._filter_irrelevant_gpu_kernels`) when the trace
    has two steps or more: those launched by a call in the trace that starts before the last
    CPU-side step ([`last_step_start`][jupyter_profview.derived.step_instances.last_step_start]),
    and those without a correlation id that start before it (HTA files them with the CPU events
    and keeps them by their own start).  It drops the last step's activities and those whose
    launch is not in the trace (launched before the profiler's window).  All True with fewer
    than two steps (HTA keeps everything then).

    HTA also drops an activity without a `stream` arg (its stream is -1, a CPU event to HTA);
    here its stream is its thread's (Kineto writes the stream as the device thread id), and it
    is kept."""
    la = trace.launches
    cut = last_step_start(trace)
    if cut is None:
        return np.ones(len(la), bool)
    launched = la["launch_start"].to_numpy(np.float64, na_value=np.inf) < cut
    loose = la["correlation"].isna().to_numpy(bool) & (la["kernel_start"].to_numpy(np.int64) < cut)
    return np.asarray(launched | loose, bool)
