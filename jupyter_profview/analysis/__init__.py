"""Analyses: functions from a Trace to DataFrames (times in the trace's ``time_unit``).

* :mod:`.summary` -- per-key totals, self time and shares; phases per device; top events.
* :mod:`.memory` -- the memory peak and what is live at a given time.
"""

from __future__ import annotations

from .memory import live_at, peak_time
from .summary import bytes_column, phases, self_intervals, summary, top, union_length

__all__ = ["bytes_column", "live_at", "peak_time", "phases", "self_intervals", "summary", "top",
           "union_length"]
