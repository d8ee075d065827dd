"""Altair charts of the GPU analyses (`jupyter_profview.analysis.gpu`).

Each function takes a Trace (and the analysis' own parameters), runs the
analysis and returns an ``alt.Chart``; with `jupyter_profview.charts.enable_offline`
they render as SVG made in the kernel.  Charts with one mark per launch are
pre-aggregated in pandas (histogram bins, per-bucket maxima) so that they stay
under Altair's 5000-row limit on big traces.

On a trace without what a chart needs (no kernel / memcpy / memset at all, no
kernel linked to its launch call, no communication kernel) the helper returns a
chart with the chart's title and one line saying what is missing, instead of
empty axes (or ``NaN`` in the SVG).
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from .analysis import gpu
from .model import Trace
from .palette import CATEGORY_COLORS, COMMUNICATION_COLOR, KERNEL_COLOR

# the palette's colours for kernels, communication and memory copies (palette.py: one meaning, one hue)
TYPE_COLORS = {"computation": KERNEL_COLOR, "communication": COMMUNICATION_COLOR,
               "memory": CATEGORY_COLORS["memcpy"]}
TEMPORAL_COLORS = {"compute": KERNEL_COLOR, "non_compute": "#79706e", "idle": "#bab0ac"}
IDLE_COLORS = {"host_wait": "#e45756", "kernel_wait": "#72b7b2", "other": "#bab0ac"}
MS = 1e6
NO_GPU = "no GPU activity in this trace (no kernel, memcpy or memset)"
NO_LAUNCHES = "no kernel in this trace is linked to its launch call (no matching correlation ids)"
NO_COMM = "no communication kernel (NCCL / RCCL / gloo) in this trace"


def empty_chart(title: str, reason: str) -> alt.Chart:
    """A chart titled ``title`` showing only the line ``reason``: the empty state of the helpers."""
    return alt.Chart(pd.DataFrame({"reason": [reason]}), title=title).mark_text(
        fontSize=13, color="#666666").encode(text="reason:N").properties(width=480, height=40)


def _color(mapping: dict[str, str], title: str) -> alt.Color:
    return alt.Color(f"{title}:N", scale=alt.Scale(domain=list(mapping), range=list(mapping.values())),
                     sort=list(mapping))


def kernel_breakdown_chart(trace: Trace, by: str = "type", *, n: int = 15) -> alt.Chart:
    """Bars of device time (ms) per type group, or of the ``n`` kernels with the
    most time coloured by group (``by="name"``)."""
    table = gpu.kernel_breakdown(trace, by=by)
    label = "type" if by == "type" else "name"
    if not len(table):
        return empty_chart(f"device time by {label}", NO_GPU)
    table = (table.head(n) if by == "name" else table).copy()
    table["ms"] = table["total"] / MS
    if by == "name":
        table["name"] = table["name"].str.slice(0, 60)
    return alt.Chart(table, title=f"device time by {label}").mark_bar().encode(
        x=alt.X("ms:Q", title="time (ms)"),
        y=alt.Y(f"{label}:N", sort="-x", title=None),
        color=_color(TYPE_COLORS, "type"),
        tooltip=[label, "count", alt.Tooltip("ms:Q", format=",.3f"), alt.Tooltip("share:Q", format=".1f")],
    )


def temporal_breakdown_chart(trace: Trace) -> alt.Chart:
    """Stacked bars per GPU: % of its span computing, in other activity, idle."""
    table = gpu.temporal_breakdown(trace)
    title = "GPU time: compute / non-compute / idle"
    if not len(table):
        return empty_chart(title, NO_GPU)
    long = table.melt(id_vars="gpu", value_vars=["compute_pct", "non_compute_pct", "idle_pct"],
                      var_name="time", value_name="pct")
    long["time"] = long["time"].str.removesuffix("_pct")
    long["order"] = long["time"].map(list(TEMPORAL_COLORS).index)
    return alt.Chart(long, title=title).mark_bar().encode(
        x=alt.X("pct:Q", stack="zero", title="% of the GPU's span", scale=alt.Scale(domain=[0, 100])),
        y=alt.Y("gpu:N", title=None), color=_color(TEMPORAL_COLORS, "time"), order=alt.Order("order:Q"),
        tooltip=["gpu", "time", alt.Tooltip("pct:Q", format=".1f")],
    )


def comm_comp_overlap_chart(trace: Trace) -> alt.Chart:
    """Bars per GPU with communication: % of its communication time overlapped by computation."""
    table = gpu.comm_comp_overlap(trace)
    title = "communication overlapped by computation"
    if not len(table):
        return empty_chart(title, NO_GPU)
    table = table[table["communication"] > 0]
    if not len(table):
        return empty_chart(title, NO_COMM)
    return alt.Chart(table, title=title).mark_bar().encode(
        x=alt.X("overlap_pct:Q", title="% of communication time", scale=alt.Scale(domain=[0, 100])),
        y=alt.Y("gpu:N", title=None),
        tooltip=["gpu", alt.Tooltip("overlap_pct:Q", format=".1f"), "communication", "overlap"],
    )


def idle_time_chart(trace: Trace, *, kernel_wait: int = 30_000) -> alt.Chart:
    """Stacked bars per GPU stream: idle time (ms) by cause."""
    table = gpu.idle_time(trace, kernel_wait=kernel_wait)
    if not len(table):
        return empty_chart("idle time per stream", NO_GPU)
    table["lane"] = table["gpu"] + " / stream " + table["stream"].astype(str)
    long = table.melt(id_vars="lane", value_vars=list(IDLE_COLORS), var_name="cause", value_name="ns")
    long["ms"] = long["ns"] / MS
    long["order"] = long["cause"].map(list(IDLE_COLORS).index)
    return alt.Chart(long, title="idle time per stream").mark_bar().encode(
        x=alt.X("ms:Q", stack="zero", title="idle time (ms)"), y=alt.Y("lane:N", title=None),
        color=_color(IDLE_COLORS, "cause"), order=alt.Order("order:Q"),
        tooltip=["lane", "cause", alt.Tooltip("ms:Q", format=",.3f")],
    )


def launch_delay_chart(trace: Trace, *, bins: int = 40) -> alt.Chart:
    """Histogram of launch delays (µs, log-spaced bins) of the linked launches."""
    missing = _no_linked_launches(trace)
    if missing:
        return empty_chart("launch delay", missing)
    delay = trace.launches["delay"].dropna().to_numpy(np.int64) / 1e3
    positive = delay[delay > 0]
    hi = float(positive.max()) if len(positive) else 1.0
    lo = float(positive.min()) if len(positive) else 0.1
    edges = np.geomspace(max(lo, 1e-3), max(hi, lo * 1.01, 1e-3 * 1.01), bins + 1)
    counts, _ = np.histogram(positive, bins=edges)
    data = pd.DataFrame({"from": edges[:-1], "to": edges[1:], "count": counts})
    zero = int((delay == 0).sum())
    title = f"launch delay ({zero} launches with no delay not shown)"
    return alt.Chart(data, title=title).mark_rect().encode(
        x=alt.X("from:Q", scale=alt.Scale(type="log"), title="delay (µs)"), x2="to:Q",
        y=alt.Y("count:Q", title="launches"), y2=alt.datum(0),
        tooltip=[alt.Tooltip("from:Q", format=",.2f"), alt.Tooltip("to:Q", format=",.2f"), "count"],
    )


def queue_length_chart(trace: Trace, *, max_points: int = 4000) -> alt.Chart:
    """Outstanding launches per stream over time (ms); downsampled to the
    maximum per time bucket when there are more than ``max_points`` changes."""
    missing = _no_linked_launches(trace)
    if missing:
        return empty_chart("queue length per stream", missing)
    series = gpu.queue_length_series(trace)
    series["lane"] = series["gpu"] + " / stream " + series["stream"].astype(str)
    if len(series) > max_points:
        lanes = series["lane"].nunique()
        buckets = max(max_points // max(lanes, 1), 2)
        t0, t1 = series["time"].min(), series["time"].max()
        series["bucket"] = ((series["time"] - t0) * (buckets - 1) // max(t1 - t0, 1)).astype(np.int64)
        series = series.groupby(["lane", "bucket"], as_index=False).agg(time=("time", "first"),
                                                                         queue_length=("queue_length", "max"))
    series["ms"] = series["time"] / MS
    return alt.Chart(series[["lane", "ms", "queue_length"]], title="queue length per stream").mark_line(
        interpolate="step-after").encode(
        x=alt.X("ms:Q", title="time (ms)"), y=alt.Y("queue_length:Q", title="outstanding launches"),
        color=alt.Color("lane:N", title=None),
        tooltip=["lane", alt.Tooltip("ms:Q", format=",.3f"), "queue_length"],
    )


def _no_linked_launches(trace: Trace) -> str:
    """Why the launch charts have nothing to draw, or ``""``."""
    if not len(trace.launches):
        return NO_GPU
    return "" if trace.launches["launch"].notna().any() else NO_LAUNCHES


def roofline_chart(efficiency: pd.DataFrame, *, peak_tflops: float | None = None,
                   peak_gbps: float | None = None) -> alt.Chart | alt.LayerChart:
    """The roofline of `jupyter_profview.analysis.op_efficiency`'s rows: achieved TFLOP/s
    against arithmetic intensity (flop/byte), both on log scales, one point per op instance
    coloured by op, under the device's roof (memory slope up to the ridge, then the compute
    peak; from the rows' ``peak_*`` or the arguments).  No roof when the device is unknown."""
    rows = efficiency.dropna(subset=["tflops", "intensity"])
    rows = rows[(rows["tflops"] > 0) & (rows["intensity"] > 0)]
    if not len(rows):
        return empty_chart("roofline", "no modelled op (mm, bmm, conv, attention ...) with input shapes "
                                       "and device time: record with record_shapes=True")
    points = rows.assign(op=rows["name"].astype(str))[["op", "shapes", "intensity", "tflops", "pct_of_peak",
                                                       "bound"]].head(5000)
    chart = alt.Chart(points, title="roofline").mark_point(filled=True, size=40).encode(
        x=alt.X("intensity:Q", scale=alt.Scale(type="log"), title="arithmetic intensity (flop/byte)"),
        y=alt.Y("tflops:Q", scale=alt.Scale(type="log"), title="achieved TFLOP/s"),
        color=alt.Color("op:N"),
        tooltip=["op", "shapes", alt.Tooltip("tflops:Q", format=".3f"),
                 alt.Tooltip("intensity:Q", format=".1f"), alt.Tooltip("pct_of_peak:Q", format=".1f"),
                 "bound"],
    )
    peak = peak_tflops if peak_tflops is not None else float(rows["peak_tflops"].max())
    bw = peak_gbps if peak_gbps is not None else float(rows["peak_gbps"].max())
    if not (np.isfinite(peak) and np.isfinite(bw)):
        return chart
    lo = min(float(rows["intensity"].min()), peak * 1e3 / bw) / 2
    hi = max(float(rows["intensity"].max()), peak * 1e3 / bw) * 2
    xs = np.geomspace(lo, hi, 64)
    roof = pd.DataFrame({"intensity": xs, "tflops": np.minimum(peak, xs * bw / 1e3)})
    line = alt.Chart(roof).mark_line(color="#444444").encode(x="intensity:Q", y="tflops:Q")
    return alt.LayerChart(layer=[line, chart])
