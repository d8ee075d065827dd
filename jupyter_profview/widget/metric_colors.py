"""Colour by a number: kernels by SM efficiency, occupancy or tensor-core use, collectives by bus
bandwidth, and the numbers a kernel's or a collective's tooltip shows.

Each of these is "higher is better", so bad is loud: the scale (`palette.METRIC_SCALE`, the same
colours in the legend) runs from a saturated dark red for the lowest class (0–20 % SM efficiency)
to a pale yellow for the highest; kernels without tensor cores are loud, those with them pale;
"no data" is grey.

The numbers come from the analyses: [`kernel_efficiency`][jupyter_profview.analysis.kernels.kernel_efficiency]
and [`collective_bandwidth`][jupyter_profview.analysis.collectives.collective_bandwidth], on the
Trace, or on the TraceSet a combined all-ranks trace was made from (its events carry `rank` and
`rank_id`).  They are computed on first use.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..kinds import is_collective_call
from ..palette import IDLE_COLOR, METRIC_SCALE, OTHER_COLOR, TENSOR_CORE_COLORS
from .legend import Legend, build_legend

#: colour-by choices that read a number per kernel or collective
METRICS = ("sm_efficiency", "occupancy", "tensor_core", "busbw")
COLOR_CHOICES = ("category", "phase", *METRICS)
#: the five classes' colours, lowest first: the lowest (worst) is the loudest
SEQUENTIAL = METRIC_SCALE
LABELS = {"sm_efficiency": "SM efficiency", "occupancy": "occupancy", "busbw": "bus bandwidth"}
KERNEL_METRICS = ("sm_efficiency", "occupancy", "tensor_core")
COLLECTIVE_METRICS = ("bytes", "algbw", "busbw")


class EventMetrics:
    """The kernel and collective numbers of a trace's events, by position in `trace.events`
    (computed on first use); `source` is the TraceSet of a combined all-ranks trace."""

    def __init__(self, trace: Any, source: Any = None) -> None:
        self.trace = trace
        self.source = source
        self._kernels: pd.DataFrame | None = None
        self._collectives: pd.DataFrame | None = None
        self._options: list[str] | None = None

    def options(self) -> list[str]:
        """The metric choices that apply to this trace (cheap: names and launch types only)."""
        if self._options is None:
            self._options = self._find_options()
        return self._options

    def _find_options(self) -> list[str]:
        la = self.trace.launches
        kinds = set(la["type"].astype(str).unique()) if len(la) else set()
        out = list(KERNEL_METRICS) if kinds & {"kernel", "communication"} else []
        names = self.trace.events["name"]
        categories = names.cat.categories if isinstance(names.dtype, pd.CategoricalDtype) else names.unique()
        if "communication" in kinds or any(is_collective_call(str(n)) for n in categories):
            out.append("busbw")
        return out

    def kernels(self) -> pd.DataFrame:
        """`kernel_efficiency` rows with `pos` (their events' positions)."""
        if self._kernels is None:
            from ..analysis.kernels import kernel_efficiency

            self._kernels = self._positioned(kernel_efficiency(self._of()))
        return self._kernels

    def collectives(self) -> pd.DataFrame:
        """`collective_bandwidth` rows with `pos`."""
        if self._collectives is None:
            from ..analysis.collectives import collective_bandwidth

            self._collectives = self._positioned(collective_bandwidth(self._of()))
        return self._collectives

    def _of(self) -> Any:
        return self.source if self.source is not None else self.trace

    def _positioned(self, frame: pd.DataFrame) -> pd.DataFrame:
        events = self.trace.events
        if self.source is not None and "rank_id" in events.columns:
            key = pd.MultiIndex.from_arrays([events["rank"].to_numpy(np.int64),
                                             events["rank_id"].to_numpy(np.int64)])
            pos = key.get_indexer(pd.MultiIndex.from_arrays([frame["rank"].to_numpy(np.int64),
                                                             frame["event"].to_numpy(np.int64)]))
        else:
            pos = events.index.get_indexer(pd.Index(frame["event"].to_numpy(np.int64)))
        out = frame.assign(pos=pos)
        return out[out["pos"] >= 0].reset_index(drop=True)

    def values(self, metric: str) -> tuple[np.ndarray, np.ndarray]:
        """(positions, values) of the events `metric` applies to (NaN: not known)."""
        frame = self.collectives() if metric == "busbw" else self.kernels()
        return frame["pos"].to_numpy(np.int64), frame[metric].to_numpy(np.float64)

    def of(self, pos: int) -> dict[str, Any]:
        """The tooltip's numbers of the event at `pos` (None where not known), `{}` for others."""
        options = self.options()
        tables = ([(self.kernels, KERNEL_METRICS)] if "sm_efficiency" in options else []) + \
            ([(self.collectives, COLLECTIVE_METRICS)] if "busbw" in options else [])
        out: dict[str, Any] = {}
        for table, cols in tables:  # a communication kernel is both
            frame = table()
            hit = np.flatnonzero(frame["pos"].to_numpy(np.int64) == pos)
            if len(hit):
                row = frame.iloc[int(hit[0])]
                out.update({c: _plain(row[c]) for c in cols})
        return out


def _plain(value: Any) -> Any:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    value = float(value)
    return None if np.isnan(value) else value


def legend_for(events: pd.DataFrame, color_by: str, launches: pd.DataFrame | None,
               metrics: EventMetrics) -> Legend:
    """[`build_legend`][jupyter_profview.widget.legend.build_legend] for `category` / `phase` /
    `auto`, else the metric's scale (`metric_legend`)."""
    if color_by not in METRICS:
        return build_legend(events, color_by, launches)
    pos, values = metrics.values(color_by)
    return metric_legend(len(events), color_by, pos, values)


def scale_edges(metric: str, values: np.ndarray) -> np.ndarray:
    """The 6 edges of the 5 classes: 0, 20, ..., 100 % for percentages; 0 to the largest
    bandwidth (rounded up to 1, 2 or 5 × 10^k GB/s) for `busbw`."""
    if metric != "busbw":
        return np.linspace(0.0, 100.0, len(SEQUENTIAL) + 1)
    top = float(np.nanmax(values)) if np.isfinite(values).any() else 1.0
    magnitude = 10.0 ** np.floor(np.log10(top)) if top > 0 else 1.0
    nice = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= top) if top > 0 else 1.0
    return np.linspace(0.0, nice, len(SEQUENTIAL) + 1)


def metric_legend(n: int, metric: str, pos: np.ndarray, values: np.ndarray) -> Legend:
    """A legend of `metric` over `n` events: one entry per class of the scale (`lo` <= value <
    `hi`, the last class closed), `no data` (grey) for the kernels / collectives without the
    number, and `not a kernel` / `not a collective` for every other event.  Entries carry
    `count`, and `lo` / `hi` for the classes."""
    codes = np.zeros(n, np.uint16)
    entries: list[dict[str, Any]] = []
    if metric == "tensor_core":
        tc = values > 0.5
        for i, (key, hit) in enumerate((("tensor core", tc), ("no tensor core", ~tc))):
            entries.append({"key": key, "color": TENSOR_CORE_COLORS[key], "count": int(hit.sum())})
            codes[pos[hit]] = i
        missing = np.zeros(len(pos), bool)
    else:
        edges = scale_edges(metric, values)
        unit = "%" if metric != "busbw" else "GB/s"
        known = ~np.isnan(values)
        klass = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(SEQUENTIAL) - 1)
        for i, color in enumerate(SEQUENTIAL):
            hit = known & (klass == i)
            entries.append({"key": f"{LABELS[metric]} {_num(edges[i])}–{_num(edges[i + 1])} {unit}",
                            "color": color, "count": int(hit.sum()), "lo": float(edges[i]),
                            "hi": float(edges[i + 1])})
            codes[pos[hit]] = i
        missing = ~known
    entries.append({"key": "no data", "color": OTHER_COLOR, "count": int(missing.sum())})
    codes[pos[missing]] = len(entries) - 1
    rest = np.ones(n, bool)
    rest[pos] = False
    entries.append({"key": "not a collective" if metric == "busbw" else "not a kernel", "color": IDLE_COLOR,
                    "count": int(rest.sum())})
    codes[rest] = len(entries) - 1
    return Legend(metric, entries, codes)


def _num(x: float) -> str:
    return f"{x:g}"

