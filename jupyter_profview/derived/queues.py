"""Queue lengths per stream, with one rule: HTA 0.5.0's.

HTA (`TraceCounters._get_queue_length_time_series_for_rank`) counts, per stream, the launches
that enqueue work (its list of runtime calls: `cudaLaunchKernel`, `cudaMemcpyAsync`, ...,
[`ENQUEUE_CALLS`][jupyter_profview.kinds.ENQUEUE_CALLS]) and that have their device activity in
the trace: `+1` when the launch call starts, `-1` when the activity starts.  A call outside that
list (`cudaGraphLaunch`, `cudaMemcpy`, ...) enqueues nothing in HTA's series, and neither do its
kernels; a launch whose activity is not in the trace, or an activity whose launch is not, count
nowhere.  Every change is a row (two per pair), as in HTA's series.

Equal timestamps: HTA concatenates the launch rows before the activity rows and sorts by time
with pandas' default sort, quicksort, which is not stable: at a tie HTA's series lists the two
either way, and both orders occur in one series (`tests/data/hta_parity/overlap_stream.json`,
a launch on the µs of every kernel start: HTA's series goes 2, 1 at some ties and 0, 1 at others).
No rule reproduces that.  Here the order is the one HTA's concatenation states, the order a
stable sort of HTA's own rows gives: at equal times on one stream the launches (`+1`) come before
the activity starts (`-1`), each side in the order of `trace.launches`.  The transient value
between them is a change of the series.  So, against HTA: the number of changes is always HTA's;
the max is HTA's wherever HTA's sort happened to put a launch first at the tie that makes it (every
stream of HTA's test traces and of the parity traces) and never below it; the mean per change lies
within the two orders' means, as HTA's does.  The time-weighted mean and p95 of
[`queue_length`][jupyter_profview.analysis.gpu.queue_length] and the value from each time on do not
depend on the order at all.

Launches without a `stream` on their activity: HTA reads the stream from the `stream` arg only
(-1 without it: not a device activity); here the loader takes the device thread id, which Kineto
writes as the stream, so such a pair counts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..kinds import ENQUEUE_CALLS
from ..model import Trace
from .cache import cached
from .masks import among

SERIES_COLUMNS = ("gpu", "stream", "time", "change", "queue_length", "row", "kernel")


def enqueued(launches: pd.DataFrame) -> np.ndarray:
    """Mask of the rows of `launches` (a `trace.launches` frame) that count in queue lengths:
    launch in the trace, an enqueueing call (`ENQUEUE_CALLS`), activity on a known stream."""
    if len(launches) == 0:
        return np.zeros(0, bool)
    return (launches["launch"].notna().to_numpy(bool) & launches["stream"].notna().to_numpy(bool)
            & among(launches["launch_name"], ENQUEUE_CALLS))


def queue_levels(launches: pd.DataFrame, rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per row of `launches`: its stream's queue length just after its launch call counted it
    (`at_launch`) and just after its activity started and left the queue (`at_start`), float64,
    NaN for the rows that do not count ([`enqueued`][jupyter_profview.derived.queues.enqueued], or
    not in `rows` when given).  The module's rule, ties included."""
    n = len(launches)
    at_launch, at_start = np.full(n, np.nan), np.full(n, np.nan)
    mask = enqueued(launches)
    if rows is not None:
        keep = np.zeros(n, bool)
        keep[np.asarray(rows, np.int64)] = True
        mask &= keep
    idx = np.flatnonzero(mask)
    if len(idx) == 0:
        return at_launch, at_start
    key = _stream_codes(launches)[idx]
    time = np.concatenate([launches["launch_start"].to_numpy(np.int64, na_value=0)[idx],
                           launches["kernel_start"].to_numpy(np.int64)[idx]])
    side = np.repeat(np.array([0, 1], np.int8), len(idx))  # launches first at a tie
    order = np.lexsort((np.tile(idx, 2), side, time, np.tile(key, 2)))
    level = np.empty(len(order), np.int64)
    level[order] = np.cumsum(np.where(side == 0, 1, -1)[order])  # each stream's pairs sum to 0
    at_launch[idx], at_start[idx] = level[: len(idx)], level[len(idx):]
    return at_launch, at_start


def queue_series(trace: Trace, *, before: int | None = None) -> pd.DataFrame:
    """The queue length of each stream at each change (the module's rule): one row per change,
    columns `gpu` (categorical), `stream` (int64), `time` (int64), `change` (`+1` a launch call starts,
    `-1` its activity starts), `queue_length` (int64, the value from that change on), `row`
    (the pair's row of `trace.launches`) and `kernel` (the activity's event id); sorted by `gpu`,
    `stream`, then in the order the changes apply.  `before`: only the pairs whose launch call
    starts before it (HTA's window without its last step)."""
    return cached(trace, ("queue_series", before), lambda: _series(trace, before))


def _series(trace: Trace, before: int | None) -> pd.DataFrame:
    la = trace.launches
    rows = None
    if before is not None:
        rows = np.flatnonzero(la["launch_start"].to_numpy(np.float64, na_value=np.inf) < before)
    at_launch, at_start = queue_levels(la, rows)
    idx = np.flatnonzero(~np.isnan(at_launch))
    n = len(idx)
    time = np.concatenate([la["launch_start"].to_numpy(np.int64, na_value=0)[idx],
                           la["kernel_start"].to_numpy(np.int64)[idx]])
    side = np.repeat(np.array([0, 1], np.int8), n)
    key = np.tile(_stream_codes(la)[idx], 2)
    gpu = la["gpu"].array if isinstance(la["gpu"].dtype, pd.CategoricalDtype) else pd.Categorical(la["gpu"])
    frame = pd.DataFrame({
        "gpu": pd.Categorical.from_codes(np.tile(np.asarray(gpu.codes)[idx], 2), dtype=gpu.dtype),
        "stream": np.tile(la["stream"].to_numpy(np.int64, na_value=-1)[idx], 2),
        "time": time,
        "change": np.where(side == 0, 1, -1).astype(np.int64),
        "queue_length": np.concatenate([at_launch[idx], at_start[idx]]).astype(np.int64),
        "row": np.tile(idx, 2).astype(np.int64),
        "kernel": np.tile(la["kernel"].to_numpy(np.int64)[idx], 2),
    }, columns=list(SERIES_COLUMNS))
    order = np.lexsort((frame["row"].to_numpy(), side, time, key))
    return frame.iloc[order].reset_index(drop=True)


def _stream_codes(launches: pd.DataFrame) -> np.ndarray:
    """One int64 per row of `launches`: its (gpu, stream), in the order of the gpu labels, then
    of the stream numbers."""
    gpu = pd.factorize(launches["gpu"], sort=True)[0].astype(np.int64)
    stream = pd.factorize(launches["stream"].to_numpy(np.int64, na_value=-1), sort=True)[0].astype(np.int64)
    return (gpu << 32) | stream
