"""Memory questions over the ``memory`` and ``allocations`` tables: when is the peak, and
what is live then.

A TraceSet is answered rank by rank (each rank's memory is its own, even where
every rank calls its device ``cpu`` or ``GPU 0``), with times on the set's
common clock (see `.traceset`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import pandas as pd

from ..errors import ProfviewError
from ..model import Trace, empty_allocations
from .traceset import concat, is_traceset, to_common_clock

if TYPE_CHECKING:
    from ..ranks.traceset import TraceSet


@overload
def peak_time(trace: Trace, device: str | None = None) -> int:
    ...


@overload
def peak_time(trace: TraceSet, device: str | None = None) -> pd.DataFrame:
    ...


def peak_time(trace: Trace | TraceSet, device: str | None = None) -> int | pd.DataFrame:
    """Time of the highest point of ``trace.memory`` (summed over devices unless ``device``).

    A TraceSet gives a DataFrame: ``rank``, ``time`` (that rank's peak, on the
    common clock), ``bytes`` (the level there), one row per rank with a memory
    curve (of ``device``); ranks without one are left out.
    """
    if is_traceset(trace):
        rows = []
        for rank in trace.ranks:
            try:
                at, level = _peak(trace[rank], device)
            except ProfviewError:
                continue
            rows.append((rank, at + trace.offsets[rank], level))
        if not rows:
            raise ProfviewError("no rank has a memory curve" + (f" of {device!r}" if device else ""),
                                expected="traces recorded with memory (profile_memory=True)")
        return pd.DataFrame(rows, columns=["rank", "time", "bytes"]).astype(np.int64)
    return _peak(trace, device)[0]


def _peak(trace: Trace, device: str | None) -> tuple[int, int]:
    """(time, bytes) of the highest point of the memory curve (see `peak_time`)."""
    memory = trace.memory if device is None else trace.memory[trace.memory["device"] == device]
    if memory.empty:
        raise ProfviewError("the trace has no memory curve", expected="a trace with a memory table")
    if memory["device"].nunique() > 1:  # each device's level carried forward, then summed
        levels = memory.groupby(["time", "device"], observed=True)["bytes"].last().unstack("device")
        total = levels.ffill().fillna(0).sum(axis=1)
        k = int(np.argmax(total.to_numpy()))
        return int(total.index.to_numpy()[k]), int(total.to_numpy()[k])
    k = int(np.argmax(memory["bytes"].to_numpy()))
    return int(memory["time"].to_numpy()[k]), int(memory["bytes"].to_numpy()[k])


def live_at(trace: Trace | TraceSet, time: Any, device: str | None = None) -> pd.DataFrame:
    """Allocations live at ``time`` (``alloc_time <= time < free_time``), largest first.

    ``live_at(trace, peak_time(trace))["bytes"].sum()`` equals the peak of
    ``trace.memory`` for this format (and for ``megengine_json``).

    A TraceSet: ``time`` on its common clock, one time for every rank or one
    per rank (a ``{rank: time}`` mapping, a Series indexed by rank, or a frame
    with ``rank`` and ``time`` columns such as ``peak_time(ts)``); rows with
    ``rank`` first, ``alloc_time``/``free_time`` on the common clock, by rank,
    then largest first.
    """
    if is_traceset(trace):
        frames = []
        for rank, at in _times_by_rank(trace, time).items():
            mine = live_at(trace[rank], at - trace.offsets[rank], device).reset_index(drop=True)
            mine.insert(0, "rank", np.int64(rank))
            frames.append(mine)
        if not frames:  # no rank named (an empty mapping, or peak_time of a set without memory)
            empty = empty_allocations()
            empty.insert(0, "rank", pd.Series(dtype=np.int64))
            return empty
        return to_common_clock(concat(frames), trace)
    alloc = trace.allocations
    if device is not None:
        alloc = alloc[alloc["device"] == device]
    started = alloc["alloc_time"].notna() & (alloc["alloc_time"] <= time)
    not_freed = alloc["free_time"].isna() | (alloc["free_time"] > time)
    mask = (started & not_freed).fillna(False).astype(bool)
    return alloc[mask].sort_values("bytes", ascending=False, kind="stable")


def _times_by_rank(ts: TraceSet, time: Any) -> dict[int, int]:
    """``time`` of `live_at` as rank -> time (common clock), for the ranks of ``ts`` it names."""
    if isinstance(time, pd.DataFrame):
        if not {"rank", "time"} <= set(time.columns):
            raise ProfviewError("live_at: a frame of times needs rank and time columns",
                                expected="peak_time(ts), or a {rank: time} mapping")
        pairs = dict(zip(time["rank"].tolist(), time["time"].tolist(), strict=True))
    elif isinstance(time, (pd.Series, Mapping)):
        pairs = dict(time.items())
    else:
        pairs = {rank: time for rank in ts.ranks}
    unknown = sorted(set(pairs) - set(ts.ranks))
    if unknown:
        raise ProfviewError(f"live_at: no rank {unknown[0]} in this TraceSet", expected=f"ranks {ts.ranks}")
    return {int(rank): int(pairs[rank]) for rank in sorted(pairs)}
