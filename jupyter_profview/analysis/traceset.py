"""Single-trace analyses applied to a `TraceSet`, rank by rank.

Every analysis in this package accepts a TraceSet where it accepts a Trace
and then returns one result per rank, stacked, with a ``rank`` column first
(see `TraceSet.per_rank`):
rank ``r``'s rows are the analysis of ``ts[r]`` alone, so ranks whose
devices share a label (every rank's ``GPU 0``) are never pooled.

Clock: a rank's Trace has its own clock; the analyses move the time columns
of their results (the rule of the TraceSet tables:
`time_columns`) to the set's common
clock by adding ``ts.offsets[rank]``, as in ``ts.events``.  Durations are
unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from ..ranks.traceset import TraceSet


def is_traceset(obj: object) -> TypeIs[TraceSet]:
    """Whether ``obj`` is a TraceSet (``jupyter_profview.ranks`` is imported only to check)."""
    from ..ranks.traceset import TraceSet

    return isinstance(obj, TraceSet)


def concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Stack per-rank frames, keeping categorical columns (`jupyter_profview.ranks.traceset.concat`)."""
    from ..ranks.traceset import concat as stack

    return stack(frames)


def to_common_clock(frame: pd.DataFrame, ts: TraceSet) -> pd.DataFrame:
    """``frame`` (with ``rank``) with its time columns shifted by each row's rank offset (in place)."""
    from ..ranks.cache import time_columns

    if len(frame) == 0:
        return frame
    shift = frame["rank"].map(ts.offsets).to_numpy(np.int64)
    for col in time_columns([str(c) for c in frame.columns]):
        if pd.api.types.is_numeric_dtype(frame[col]) and not pd.api.types.is_bool_dtype(frame[col]):
            frame[col] = frame[col] + shift
    return frame


def per_rank(fn: Callable[..., pd.DataFrame], ts: TraceSet, *args: Any, rebase: bool = False,
             **kwargs: Any) -> pd.DataFrame:
    """``fn(ts[r], *args, **kwargs)`` for each rank, stacked with ``rank``
    (`TraceSet.per_rank`); ``rebase=True``: its time columns on the common clock."""
    out = ts.per_rank(fn, *args, **kwargs)
    return to_common_clock(out, ts) if rebase else out
