"""Masks and keys over a trace's categorical columns: each predicate is evaluated once per
category, never once per row (`trace.events` has millions of rows and a few thousand distinct
names).  The analyses read them through `jupyter_profview.analysis.columns`."""

from __future__ import annotations

from collections.abc import Callable, Collection

import numpy as np
import pandas as pd

from ..kinds import (
    HOST_SYNC_CALLS,
    HOST_SYNC_COPIES,
    PAGEABLE_COPY,
    WRAPPER_CATEGORIES,
    WRAPPER_MARKER,
    code_mask,
)
from ..model import Trace


def match(series: pd.Series, predicate: Callable[[str], object]) -> np.ndarray:
    """Boolean mask of `predicate(str value)`, evaluated once per category (missing -> False)."""
    cat = series if isinstance(series.dtype, pd.CategoricalDtype) else series.astype("category")
    return code_mask(cat.cat.categories, cat.cat.codes.to_numpy(), predicate)


def among(series: pd.Series, names: Collection[str]) -> np.ndarray:
    """Boolean mask of the rows whose value is one of `names`."""
    return match(series, lambda v: v in names)


def wrapper_mask(events: pd.DataFrame) -> np.ndarray:
    """Rows of `events` that are the profiler's own records (`kinds.is_wrapper`: a span of
    category `Trace`, a marker `Iteration Start: ...` / `Record Window End`)."""
    if len(events) == 0:
        return np.zeros(0, bool)
    out = among(events["category"], WRAPPER_CATEGORIES) if "category" in events.columns \
        else np.zeros(len(events), bool)
    return out | match(events["name"], lambda n: WRAPPER_MARKER.match(n) is not None)


def gpu_labels(trace: Trace) -> list[str]:
    """The device labels of `trace.launches` (`GPU 0 · A100 ...`), in the column's code order."""
    gpu = trace.launches["gpu"]
    if isinstance(gpu.dtype, pd.CategoricalDtype):
        return [str(c) for c in gpu.cat.categories]
    return sorted(set(gpu.astype(str)))


def active_gpus(trace: Trace) -> list[str]:
    """The devices that ran an activity (`gpu_labels` with a row in `trace.launches`), sorted:
    the devices a per-device answer has one row for."""
    return devices_of(trace.launches["gpu"])


def devices_of(gpu: pd.Series) -> list[str]:
    """`active_gpus` of a launches table's `gpu` column (a rank's cached `launches`)."""
    return sorted(set(gpu.dropna().astype(str)))


def on_device(trace: Trace) -> np.ndarray:
    """Rows of `trace.events` on a device process (a GPU of `trace.launches`)."""
    gpus = frozenset(gpu_labels(trace))
    return among(trace.events["process"], gpus) if gpus else np.zeros(len(trace.events), bool)


def thread_keys(events: pd.DataFrame) -> np.ndarray:
    """One int64 per row of `events`: its (process, thread), and its `rank` where the events have
    one (`TraceSet.combined()`: the same process and thread ids on two ranks are two threads)."""
    proc = pd.Categorical(events["process"]).codes.astype(np.int64)
    thr = pd.Categorical(events["thread"]).codes.astype(np.int64)
    keys = (proc << 32) | (thr & 0xFFFFFFFF)
    if "rank" not in events.columns:
        return keys
    codes, _ = pd.factorize(pd.MultiIndex.from_arrays([events["rank"].to_numpy(np.int64), keys]))
    return codes.astype(np.int64)


def host_syncs(trace: Trace) -> np.ndarray:
    """Rows of `trace.events` that are calls holding the host until the device is done: a call
    of `kinds.HOST_SYNC_CALLS`, or of `kinds.HOST_SYNC_COPIES` whose copy (`trace.launches`) is
    from or to pageable memory (`kinds.PAGEABLE_COPY`).  The one definition the critical path
    (a blocking call's end waits for the device) and the advisor (`host_sync`) read."""
    ev = trace.events
    out = among(ev["name"], HOST_SYNC_CALLS) & ~on_device(trace)
    la = trace.launches
    copies = among(ev["name"], HOST_SYNC_COPIES)
    if copies.any() and len(la):
        pageable = la[match(la["name"], lambda n: PAGEABLE_COPY.search(n) is not None)
                      & la["launch"].notna().to_numpy(bool)]
        at = ev.index.get_indexer(pd.Index(pageable["launch"].to_numpy(np.int64)))
        blocking = np.zeros(len(ev), bool)
        blocking[at[at >= 0]] = True
        out |= copies & blocking
    return out
