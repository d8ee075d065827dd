"""The device activities of a trace, each with its kind and its launch."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..kinds import ACTIVITY_KINDS, KIND_OF_TYPE, SYNC_CATEGORY
from ..model import Trace
from .cache import cached
from .masks import among

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
    - `name` (str);
    - `kind` (categorical over [`ACTIVITY_KINDS`][jupyter_profview.kinds.ACTIVITY_KINDS]):
      `computation` (type `kernel`), `communication` (NCCL / RCCL / gloo kernels), `memory`
      (`memcpy`, `memset`), `dma` (MTIA DMA transfers), `sync` (`cuda_sync` events);
    - `type` (str): the `launches["type"]` (`sync` for the sync events);
    - `gpu` (str): the device's process label; `stream` (Int64, <NA> where unknown: a sync event
      on no stream);
    - `start`, `end` (int64, `time_unit`): `[start, end)`;
    - `launch` (Int64): the event id of the runtime call that launched it (for a sync event: the
      call with its correlation id, e.g. `cudaStreamWaitEvent`), <NA> when not in the trace;
      `launch_name` (str or None), `launch_start` (Int64);
    - `correlation` (Int64).

    Sorted by `start` (then `event`).  Computed once per Trace.
    """
    return cached(trace, "device_activities", lambda: _activities(trace))


def _activities(trace: Trace) -> pd.DataFrame:
    la = trace.launches
    start = la["kernel_start"].to_numpy(np.int64)
    kernels = pd.DataFrame({
        "event": la["kernel"].to_numpy(np.int64),
        "name": la["name"].astype(str).to_numpy(object),
        "kind": la["type"].astype(str).map(KIND_OF_TYPE).to_numpy(object),
        "type": la["type"].astype(str).to_numpy(object),
        "gpu": la["gpu"].astype(str).to_numpy(object),
        "stream": la["stream"].astype("Int64").array,
        "start": start,
        "end": start + la["kernel_dur"].to_numpy(np.int64),
        "launch": la["launch"].astype("Int64").array,
        "launch_name": la["launch_name"].astype(object).where(la["launch_name"].notna(), None)
        .to_numpy(object),
        "launch_start": la["launch_start"].astype("Int64").array,
        "correlation": la["correlation"].astype("Int64").array,
    })
    table = pd.concat([kernels, _syncs(trace)], ignore_index=True) if len(kernels) else _syncs(trace)
    table["kind"] = pd.Categorical(table["kind"], categories=list(ACTIVITY_KINDS))
    order = np.lexsort((table["event"].to_numpy(np.int64), table["start"].to_numpy(np.int64)))
    return table.iloc[order].reset_index(drop=True)


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
    names = ev["name"].astype(str).to_numpy(object)
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
        "launch_name": np.where(valid, names[safe] if n else names[:0], np.full(n, None, object)),
        "launch_start": _nullable(ev["start"].to_numpy(np.int64)[safe] if n else safe, valid),
        "correlation": _nullable(corr, corr >= 0),
    }, columns=list(ACTIVITY_COLUMNS))


def _nullable(values: np.ndarray, valid: np.ndarray) -> pd.arrays.IntegerArray:
    return pd.arrays.IntegerArray(np.where(valid, values, 0).astype(np.int64), ~np.asarray(valid, bool))
