"""Memory questions over the ``memory`` and ``allocations`` tables: when is the peak, and
what is live then."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ProfviewError
from ..model import Trace


def peak_time(trace: Trace, device: str | None = None) -> int:
    """Time of the highest point of ``trace.memory`` (summed over devices unless ``device``)."""
    memory = trace.memory if device is None else trace.memory[trace.memory["device"] == device]
    if memory.empty:
        raise ProfviewError("the trace has no memory curve", expected="a trace with a memory table")
    if memory["device"].nunique() > 1:  # each device's level carried forward, then summed
        levels = memory.groupby(["time", "device"], observed=True)["bytes"].last().unstack("device")
        total = levels.ffill().fillna(0).sum(axis=1)
        return int(total.index.to_numpy()[int(np.argmax(total.to_numpy()))])
    return int(memory["time"].to_numpy()[int(np.argmax(memory["bytes"].to_numpy()))])


def live_at(trace: Trace, time: int, device: str | None = None) -> pd.DataFrame:
    """Allocations live at ``time`` (``alloc_time <= time < free_time``), largest first.

    ``live_at(trace, peak_time(trace))["bytes"].sum()`` equals the peak of
    ``trace.memory`` for this format (and for ``megengine_json``).
    """
    alloc = trace.allocations
    if device is not None:
        alloc = alloc[alloc["device"] == device]
    started = alloc["alloc_time"].notna() & (alloc["alloc_time"] <= time)
    not_freed = alloc["free_time"].isna() | (alloc["free_time"] > time)
    mask = (started & not_freed).fillna(False).astype(bool)
    return alloc[mask].sort_values("bytes", ascending=False, kind="stable")
