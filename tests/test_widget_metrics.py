"""Colour by a kernel's or a collective's number, driven as the front end drives the widget
(``color_by`` set, ``_event`` called): legend counts and tooltip numbers equal the analyses'
DataFrames, counted here from them with numpy; the all-ranks view colours collectives by busbw."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import traitlets

import jupyter_profview as profview
from jupyter_profview import analysis
from jupyter_profview.widget import rpc
from jupyter_profview.widget.metric_colors import SEQUENTIAL
from jupyter_profview.widget.ranks import show_ranks
from jupyter_profview.widget.widget import TraceWidget

DATA = Path(__file__).parent / "data"
NCCL = DATA / "hta" / "nccl_parser_config_nccl_data.json.gz"


def classes(values: np.ndarray, top: float) -> list[int]:
    """How many values fall in each fifth of [0, top] (the last closed), counted here."""
    edges = [top * i / 5 for i in range(6)]
    return [int(((values >= lo) & ((values < hi) if i < 4 else (values <= hi))).sum())
            for i, (lo, hi) in enumerate(zip(edges, edges[1:], strict=False))]


@pytest.mark.parametrize("metric", ["sm_efficiency", "occupancy"])
def test_legend_counts_and_tooltips_equal_the_dataframe(metric: str) -> None:
    trace = profview.load(NCCL)
    table = analysis.kernel_efficiency(trace)
    w = TraceWidget(trace)
    assert {"sm_efficiency", "occupancy", "tensor_core", "busbw"} <= set(w._info["color_options"])
    w.color_by = metric
    legend = w._info["legend"]
    values = table[metric].to_numpy()
    assert [e["count"] for e in legend[:5]] == classes(values[~np.isnan(values)], 100.0)
    assert [e["color"] for e in legend[:5]] == list(SEQUENTIAL)
    assert legend[5] == {"key": "no data", "color": legend[5]["color"], "count": int(np.isnan(values).sum())}
    assert legend[6]["count"] == len(trace.events) - len(table)
    # the events' colour codes: each kernel in its class
    codes = w._data.legend.codes
    pos = trace.events.index.get_indexer(table["event"].to_numpy())
    want = np.minimum((values // 20).astype(int), 4)
    assert (codes[pos] == want).all()
    # the tooltip's numbers (the `_event` reply) are the row's
    for i in (0, len(table) // 2, len(table) - 1):
        row = table.iloc[i]
        reply, _ = rpc.event(w._data, {"id": int(row["event"])})
        assert reply["metrics"]["sm_efficiency"] == row["sm_efficiency"]
        assert reply["metrics"]["occupancy"] == row["occupancy"]
        assert reply["metrics"]["tensor_core"] == bool(row["tensor_core"])


def test_tensor_core_and_collective_tooltip() -> None:
    trace = profview.load(NCCL)
    table = analysis.kernel_efficiency(trace)
    w = TraceWidget(trace, color_by="tensor_core")
    legend = w._info["legend"]
    assert (legend[0]["key"], legend[0]["count"]) == ("tensor core", int(table["tensor_core"].sum()))
    calls = analysis.collective_bandwidth(trace)
    reply, _ = rpc.event(w._data, {"id": int(calls["event"].iloc[0])})
    assert reply["metrics"]["bytes"] == calls["bytes"].iloc[0]
    assert reply["metrics"]["busbw"] == calls["busbw"].iloc[0]
    # not a kernel, not a collective: no metrics
    cpu = int(trace.events.index[trace.events["category"] == "cpu_op"][0])
    assert "metrics" not in rpc.event(w._data, {"id": cpu})[0]
    with pytest.raises(traitlets.TraitError):
        w.color_by = "flops"


def test_ranks_view_colours_collectives_by_busbw() -> None:
    ts = profview.load_many(DATA / "ddp_shapes", cache=False, progress=False, workers=1)
    calls = analysis.collective_bandwidth(ts)
    w = show_ranks(ts, color_by="busbw")
    assert w.color_by == "busbw" and "busbw" in w._info["color_options"]
    legend = w._info["legend"]
    top = float(legend[4]["hi"])
    assert top >= calls["busbw"].max() > float(legend[4]["lo"])
    assert [e["count"] for e in legend[:5]] == classes(calls["busbw"].to_numpy(), top)
    # a rank's collective, found in the combined trace by (rank, its own event id)
    ev = w.trace.events
    row = calls.iloc[len(calls) // 2]
    combined = int(ev.index[(ev["rank"] == row["rank"]) & (ev["rank_id"] == row["event"])][0])
    reply, _ = rpc.event(w._data, {"id": combined})
    assert reply["metrics"]["busbw"] == row["busbw"] and reply["metrics"]["bytes"] == row["bytes"]
