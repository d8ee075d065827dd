"""Counter series shown with the memory curves (the widget's counters panel).

Besides memory in use (bytes) the panel draws, each toggleable in the front end:

* ``GPU utilisation`` per GPU (unit ``fraction``): the share of each pixel
  column during which the GPU runs at least one kernel / memcpy / memset,
  computed for every requested window and width by the analysis' own code
  (`Utilisation`: the GPU's merged intervals, taken once, and
  `jupyter_profview.derived.busy_fraction`, the per-column step of
  `jupyter_profview.analysis.utilisation`);
* ``queue length`` per GPU stream (unit ``count``): launches issued and not
  yet started (`jupyter_profview.analysis.queue_length_series`);
* the trace's own ``ph: "C"`` counters that are not memory (unit ``value``;
  ``axis`` is the counter's name: the series of one counter share its unit,
  different counters get different y axes in the front end).

Each is a `MemorySeries` with its ``unit``; step series are
downsampled per pixel column like memory, utilisation is evaluated per column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import derived
from ..analysis import gpu
from ..derived.masks import active_gpus
from ..model import Trace


@dataclass
class Utilisation:
    """Merged activity intervals of one GPU (`union`,
    computed once), for busy fractions per column."""

    start: np.ndarray
    end: np.ndarray
    before: np.ndarray = field(init=False, repr=False)  # busy time before each interval, once

    def __post_init__(self) -> None:
        self.before = derived.busy_before(self.start, self.end)

    def __call__(self, edges: np.ndarray) -> np.ndarray:
        """Busy fraction of each ``[edges[i], edges[i + 1])``
        (`busy_fraction`)."""
        return derived.busy_fraction(self.start, self.end, edges, self.before)


def counter_series(trace: Trace) -> list[dict[str, Any]]:
    """``device``, ``kind``, ``unit``, ``time`` (float64, sorted), ``values`` and,
    for utilisation, ``busy`` (a `Utilisation`) of every counter series."""
    out: list[dict[str, Any]] = []
    la = trace.launches
    if len(la):
        start = la["kernel_start"].to_numpy(np.int64)
        end = start + la["kernel_dur"].to_numpy(np.int64)
        gpus = la["gpu"].astype(str).to_numpy()
        for name in active_gpus(trace):
            pick = gpus == name
            s, e = derived.union(start[pick], end[pick])
            busy = Utilisation(s, e)
            out.append({"device": f"{name} utilisation", "kind": "utilisation", "unit": "fraction",
                        "time": np.array([float(s[0]), float(e[-1])]), "values": np.array([0.0, 0.0]),
                        "busy": busy})
        series = gpu.queue_length_series(trace)
        series = series.drop_duplicates(["gpu", "stream", "time"], keep="last")  # the value from each time on
        for (gpu_name, stream), part in series.groupby(["gpu", "stream"], sort=True):
            out.append({"device": f"{gpu_name} / stream {stream} queue", "kind": "queue", "unit": "count",
                        "time": part["time"].to_numpy(np.float64),
                        "values": part["queue_length"].to_numpy(np.float64)})
    counters = trace.counters
    if counters is not None and len(counters):
        memory = {str(d) for d in trace.memory["device"].unique()} if len(trace.memory) else set()
        frame = counters.assign(label=_labels(counters))
        for (label, counter), part in frame.groupby(["label", "name"], sort=True, observed=True):
            if label in memory:
                continue
            part = part.sort_values("time", kind="stable")
            out.append({"device": str(label), "kind": "counter", "unit": "value", "axis": str(counter),
                        "time": part["time"].to_numpy(np.float64),
                        "values": part["value"].to_numpy(np.float64)})
    return out


def _labels(counters: Any) -> np.ndarray:
    """Each counter row's series label: its ``name``, or ``name: series`` where the series has
    its own name (as text: a missing one reads ``nan``); made once per distinct (name, series)
    pair, not per row."""
    (names, name_code), (series, series_code) = _texts(counters["name"]), _texts(counters["series"])
    pairs, inverse = np.unique(name_code * len(series) + series_code, return_inverse=True)
    labels = []
    for pair in pairs.tolist():
        n, s = names[pair // len(series)], series[pair % len(series)]
        labels.append(n if s == n else f"{n}: {s}")
    return np.asarray(labels, object)[inverse.reshape(-1)]


def _texts(column: Any) -> tuple[list[str], np.ndarray]:
    """A column's distinct values as text (``str``, ``nan`` for a missing one, last) and each
    row's index into them."""
    cat = pd.Categorical(column)
    texts = [str(c) for c in cat.categories] + ["nan"]
    return texts, np.asarray(cat.codes, np.int64) % len(texts)  # code -1 (missing): "nan"
