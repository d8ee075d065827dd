"""Altair charts of a Trace: operator summary, phases per device, memory curve.

Offline display
---------------
Altair 6 renders in the notebook by loading vega from a CDN (a blank chart
without internet), and its vega-lite v6 mimetype output is not rendered by
JupyterLab 4.6.  `enable_offline` switches Altair to its ``svg``
renderer, which converts the chart to SVG in the kernel with
``vl-convert-python`` (vega bundled, no network) and sends only the SVG:
it shows in JupyterLab, Notebook 7, VS Code, on GitHub and in a saved
notebook, at the cost of Altair's interactivity (tooltips, zoom).  The
chart functions return ordinary ``alt.Chart`` objects, so they can still be
composed, saved (``chart.save("x.html")``) or shown with another renderer;
`to_svg` converts one chart without touching the global renderer.

Data size: Altair refuses charts with more than 5000 rows.  The memory curve
is downsampled per device keeping the first, lowest, highest and last sample
of each time column (`downsample_memory`), so the maximum of each
device is always kept.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from .analysis import phases as phases_table
from .analysis import summary as summary_table
from .model import PHASES, Trace
from .palette import PHASE_COLORS
from .widget.memory_lod import downsample

ALTAIR_MAX_ROWS = 5000


def enable_offline(fmt: str = "svg") -> None:
    """Render Altair charts as SVG (or PNG) made in the kernel: no CDN needed."""
    if fmt not in ("svg", "png"):
        raise ValueError(f"fmt must be 'svg' or 'png', not {fmt!r}")
    _vl_convert()
    alt.renderers.enable(fmt)


def _vl_convert() -> Any:
    """The optional ``vl_convert`` module, or an ImportError with the install command."""
    try:
        import vl_convert
    except ImportError as exc:
        raise ImportError(
            "static (offline) chart export needs vl-convert-python, an optional dependency: "
            "pip install 'jupyter_profview[charts]'"
        ) from exc
    return vl_convert


def to_svg(chart: alt.TopLevelMixin) -> Any:
    """An ``IPython.display.SVG`` of ``chart``, made offline with vl-convert."""
    from IPython.display import SVG

    vlc = _vl_convert()

    return SVG(vlc.vegalite_to_svg(chart.to_dict()))


def _time_axis(time_unit: str) -> tuple[float, str]:
    """Divisor and label turning ``time_unit`` values into display units."""
    return (1e6, "ms") if time_unit == "ns" else (1.0, time_unit)


def summary_chart(
    trace: Trace, by: str = "category", *, measure: str = "self", n: int = 15,
    events: pd.DataFrame | None = None,
) -> alt.Chart:
    """Horizontal bars of the ``n`` largest keys by ``measure`` (``self``,
    ``total``, ``flops``, ``flop_rate``, ... any column of `summary`)."""
    table = summary_table(trace, by=by, events=events)
    if measure not in table.columns:
        raise ValueError(f"measure {measure!r} is not a summary column: {list(table.columns)}")
    table = table.sort_values(measure, ascending=False).head(n).reset_index()
    divisor, unit = _time_axis(trace.time_unit)
    data = pd.DataFrame({
        by: table[by].astype(str),
        "count": table["count"],
        "share": table["share"],
    })
    if measure in ("self", "total", "mean"):
        title = f"{measure} time ({unit})"
        data["value"] = table[measure] / divisor
    else:
        title = measure
        data["value"] = table[measure].astype(float)
    return alt.Chart(data, title=f"{title} by {by}").mark_bar().encode(
        x=alt.X("value:Q", title=title),
        y=alt.Y(f"{by}:N", sort="-x", title=by),
        tooltip=[by, alt.Tooltip("value:Q", title=title, format=",.3f"), "count",
                 alt.Tooltip("share:Q", title="share (%)", format=".1f")],
    )


def phases_chart(trace: Trace, *, events: pd.DataFrame | None = None) -> alt.Chart:
    """Stacked bars per device: time in each phase, then idle (see
    `phases`)."""
    table = phases_table(trace, events=events)
    divisor, unit = _time_axis(trace.time_unit)
    order = [*PHASES, "idle"]
    long = table[order].reset_index().melt(id_vars="process", var_name="phase", value_name="time")
    long["time"] = long["time"] / divisor
    long["order"] = long["phase"].map(order.index)
    return alt.Chart(long, title="phases per device").mark_bar().encode(
        x=alt.X("time:Q", stack="zero", title=f"time ({unit})"),
        y=alt.Y("process:N", title="device"),
        color=alt.Color("phase:N", sort=order, scale=alt.Scale(
            domain=order, range=[PHASE_COLORS[p] for p in order])),
        order=alt.Order("order:Q"),
        tooltip=["process", "phase", alt.Tooltip("time:Q", format=",.3f")],
    )


def downsample_memory(memory: pd.DataFrame, max_points: int = 4000) -> pd.DataFrame:
    """At most ``max_points`` rows of a ``memory`` table (all devices together).

    Each device gets an equal share of the budget.  Its time range is cut into
    columns and each column keeps its first, lowest, highest and last sample
    (the widget's own rule, `jupyter_profview.widget.memory_lod.downsample`), so
    every device's peak and its first and last samples are kept; a device with
    few enough samples is kept whole.  Rows stay in (device, time) order.
    """
    if max_points < 4:
        raise ValueError("max_points must be at least 4")
    memory = memory.sort_values(["device", "time"], kind="stable").reset_index(drop=True)
    devices = [d for d, g in memory.groupby("device", observed=True, sort=False) if len(g)]
    if len(memory) <= max_points or not devices:
        return memory
    budget = max(4, max_points // len(devices))
    keep: list[np.ndarray] = []
    for device in devices:
        rows = np.flatnonzero((memory["device"] == device).to_numpy())
        if len(rows) <= budget:
            keep.append(rows)
            continue
        time = memory["time"].to_numpy(np.float64)[rows]
        columns = budget // 4  # at most 4 samples per column
        px = (time[-1] - time[0] + 1) / columns
        keep.append(rows[downsample(time, memory["bytes"].to_numpy(np.float64)[rows], time[0], px)])
    return memory.iloc[np.concatenate(keep)].reset_index(drop=True)


def memory_chart(trace: Trace, *, max_points: int = 4000, devices: list[str] | None = None) -> alt.Chart:
    """Memory in use over time per device (step line), downsampled to
    ``max_points`` rows with every device's peak kept."""
    if max_points > ALTAIR_MAX_ROWS:
        raise ValueError(f"max_points must be at most {ALTAIR_MAX_ROWS} (Altair's row limit)")
    memory = trace.memory
    if devices is not None:
        memory = memory[memory["device"].isin(devices)]
    data = downsample_memory(memory, max_points)
    divisor, unit = _time_axis(trace.time_unit)
    kinds = sorted(set(map(str, data["kind"].unique())))
    plot = pd.DataFrame({
        "time": data["time"].to_numpy() / divisor,
        "device": data["device"].astype(str),
        "MiB": data["bytes"].to_numpy() / 2**20,
        "kind": data["kind"].astype(str),
    })
    title = "memory in use" + (f" ({', '.join(kinds)})" if kinds else "")
    return alt.Chart(plot, title=title).mark_line(interpolate="step-after").encode(
        x=alt.X("time:Q", title=f"time ({unit})"),
        y=alt.Y("MiB:Q", title="MiB in use"),
        color=alt.Color("device:N"),
        tooltip=["device", alt.Tooltip("time:Q", format=",.3f"), alt.Tooltip("MiB:Q", format=",.2f")],
    )
