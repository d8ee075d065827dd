"""Masks and keys over a trace's categorical columns: each predicate is evaluated once per
category, never once per row (`trace.events` has millions of rows and a few thousand distinct
names).  The analyses read them through `jupyter_profview.analysis.columns`."""

from __future__ import annotations

from collections.abc import Callable, Collection

import numpy as np
import pandas as pd

from ..model import Trace


def match(series: pd.Series, predicate: Callable[[str], object]) -> np.ndarray:
    """Boolean mask of `predicate(str value)`, evaluated once per category (missing -> False)."""
    cat = series if isinstance(series.dtype, pd.CategoricalDtype) else series.astype("category")
    hits = np.fromiter((bool(predicate(str(c))) for c in cat.cat.categories), bool,
                       len(cat.cat.categories))
    return np.append(hits, False)[cat.cat.codes.to_numpy()]  # code -1 (missing) -> False


def among(series: pd.Series, names: Collection[str]) -> np.ndarray:
    """Boolean mask of the rows whose value is one of `names`."""
    return match(series, lambda v: v in names)


def gpu_labels(trace: Trace) -> list[str]:
    """The device labels of `trace.launches` (`GPU 0 · A100 ...`), in the column's code order."""
    gpu = trace.launches["gpu"]
    if isinstance(gpu.dtype, pd.CategoricalDtype):
        return [str(c) for c in gpu.cat.categories]
    return sorted(set(gpu.astype(str)))


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
