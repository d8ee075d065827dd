"""The parts of `Comparison` that present it
as data and text: the memory tables, the text verdict and the Altair waterfall.

Durations and byte counts in the verdict use the shared number rule of
`jupyter_profview.numbers` (the same text as the widget's front end:
``400.4 µs``, ``1 ms`` for 999 999 ns, ``–`` for a missing value).  The
side-by-side widget view is `jupyter_profview.widget.compare`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..kinds import step_pattern
from ..numbers import format_bytes, format_duration

if TYPE_CHECKING:
    from .compare import Comparison


# ---------------------------------------------------------------------------
# Memory
# ---------------------------------------------------------------------------

def _device_key(frame: pd.DataFrame) -> pd.Series:
    device = frame["device"].astype(str)
    if "rank" in frame.columns:
        device = "rank " + frame["rank"].astype(str) + " / " + device
    return device


def _peaks(trace: Any) -> pd.Series:
    memory = getattr(trace, "memory", None)
    if memory is None or len(memory) == 0:
        return pd.Series([], dtype=np.int64)
    return memory["bytes"].groupby(_device_key(memory).to_numpy()).max().astype(np.int64)


def _size_bins(trace: Any) -> pd.DataFrame:
    alloc = getattr(trace, "allocations", None)
    nbytes = np.zeros(0, np.int64) if alloc is None or len(alloc) == 0 else alloc["bytes"].to_numpy(np.int64)
    nbytes = nbytes[nbytes > 0]
    # upper edge of each allocation's power-of-two bin: (2**(k-1), 2**k]
    edge = np.left_shift(np.int64(1), np.ceil(np.log2(nbytes)).astype(np.int64)) if len(nbytes) else nbytes
    frame = pd.DataFrame({"edge": edge, "bytes": nbytes})
    grouped = frame.groupby("edge")
    return pd.DataFrame({"count": grouped.size(), "bytes": grouped["bytes"].sum()}).astype(np.int64)


class MemoryComparison:
    """``peak``: per device ``peak_a``, ``peak_b``, ``delta``, ``ratio`` (bytes);
    ``sizes``: allocations per power-of-two size bin (``count_*``, ``bytes_*``)."""

    def __init__(self, peak: pd.DataFrame, sizes: pd.DataFrame) -> None:
        self.peak, self.sizes = peak, sizes

    def _repr_html_(self) -> str:
        return (f"<b>peak</b>{self.peak.to_html()}<b>allocation sizes</b>{self.sizes.to_html()}")

    def __repr__(self) -> str:
        return f"peak\n{self.peak}\n\nallocation sizes\n{self.sizes}"


def memory_comparison(a: Any, b: Any) -> MemoryComparison:
    """Peak per device and the allocation-size histogram of A and B side by side."""
    peak = pd.DataFrame({"peak_a": _peaks(a), "peak_b": _peaks(b)})
    peak.index.name = "device"
    peak = peak.astype("Int64")
    peak["delta"] = peak["peak_b"] - peak["peak_a"]
    peak["ratio"] = (peak["peak_b"].astype("Float64")
                     / peak["peak_a"].astype("Float64").where(peak["peak_a"] > 0))
    sizes = _size_bins(a).add_suffix("_a").join(_size_bins(b).add_suffix("_b"), how="outer")
    sizes = sizes.fillna(0).astype(np.int64).sort_index()
    sizes.index.name = "at_most_bytes"
    sizes.insert(0, "size", [f"<= {format_bytes(e)}" for e in sizes.index])
    return MemoryComparison(peak, sizes)


# ---------------------------------------------------------------------------
# Verdict and chart
# ---------------------------------------------------------------------------

def time_text(value: float, unit: str) -> str:
    """A duration for people, by the shared rule: ``400.4 µs``, ``1 ms``, ``17 steps``
    (`jupyter_profview.numbers.format_duration`)."""
    return format_duration(value, unit)


def changes(c: Comparison) -> pd.DataFrame:
    """Ops and kernels in one table (column ``what``), sorted by ``|delta|``."""
    parts = [c.ops.assign(what="op"), c.kernels.assign(what="kernel")]
    table = pd.concat([p for p in parts if len(p)])
    table.index = table.index.astype(str)
    return table.iloc[np.argsort(-np.abs(table["delta"].to_numpy()), kind="stable")]


def verdict(c: Comparison) -> str:
    unit = c.time_unit
    is_step = step_pattern().match
    per = "step" if any(is_step(str(n)) for n in c.steps["name_a"]) else "iteration"
    ma, mb = c.step_times()
    na, nb = int(c.steps["dur_a"].notna().sum()), int(c.steps["dur_b"].notna().sum())
    sentences = []
    if ma > 0 and np.isfinite(mb):
        pct = (mb / ma - 1) * 100
        how = "the same time" if abs(pct) < 0.05 else f"{abs(pct):.1f} % {'slower' if pct > 0 else 'faster'}"
        counts = f", {na} vs {nb} {per}s" if (na, nb) != (1, 1) else ""
        sentences.append(f"B is {how} per {per} ({time_text(ma, unit)} -> {time_text(mb, unit)}{counts})")
    table = changes(c)
    net = float(table["delta"].sum())
    if net != 0:
        side = table[np.sign(table["delta"].to_numpy()) == np.sign(net)]
        top = side.iloc[0]
        word = "added" if net > 0 else "saved"
        sign = "+" if top["delta"] > 0 else "-"
        change = f"{_short(str(top.name))}, {sign}{time_text(abs(top['delta']), unit)}"
        share = top["delta"] / net
        if share <= 1:
            sentences.append(f"{share:.0%} of the {word} busy time ({time_text(abs(net), unit)}) is {change}")
        else:  # other ops moved the other way: a share above 100 % would read oddly
            sentences.append(f"the largest change is {change} (busy time {'+' if net > 0 else '-'}"
                             f"{time_text(abs(net), unit)} net)")
    news = []
    for what, frame in (("ops", c.ops), ("kernels", c.kernels)):
        added, removed = int((frame["status"] == "added").sum()), int((frame["status"] == "removed").sum())
        if added:
            news.append(f"{added} {what} new in B")
        if removed:
            news.append(f"{removed} {what} gone from B")
    if news:
        sentences.append(", ".join(news))
    return "; ".join(sentences) + "."


def _short(name: str, limit: int = 80) -> str:
    return name if len(name) <= limit else name[:limit - 3] + "..."


def waterfall(c: Comparison, n: int = 12) -> Any:
    """Altair waterfall from A's busy (self) time to B's through the ``n`` largest deltas."""
    import altair as alt

    table = changes(c)
    divisor, unit = (1e6, "ms") if c.time_unit == "ns" else (1.0, c.time_unit)
    busy_a = float(table["self_a"].sum())
    busy_b = float(table["self_b"].sum())
    top = table.head(n)
    rest = table.iloc[n:]
    labels = ["A (self time)"] + [f"{name} [{row.status}]" for name, row in top.iterrows()]
    deltas = list(top["delta"].astype(float))
    if len(rest):
        labels.append(f"{len(rest)} others")
        deltas.append(float(rest["delta"].sum()))
    level = busy_a + np.concatenate([[0.0], np.cumsum(deltas)])
    rows = [{"label": labels[0], "start": 0.0, "end": busy_a, "kind": "run"}]
    for i, d in enumerate(deltas):
        rows.append({"label": labels[i + 1], "start": level[i], "end": level[i + 1],
                     "kind": "slower" if d > 0 else "faster"})
    rows.append({"label": "B (self time)", "start": 0.0, "end": busy_b, "kind": "run"})
    data = pd.DataFrame(rows)
    data["order"] = np.arange(len(data))
    data["start"] /= divisor
    data["end"] /= divisor
    data["delta"] = np.where(data["kind"] == "run", data["end"], data["end"] - data["start"])
    colors = alt.Scale(domain=["run", "slower", "faster"], range=["#9d9d9d", "#e45756", "#54a24b"])
    return alt.Chart(data, title=f"where the time went: {c.label_a} -> {c.label_b}").mark_bar().encode(
        x=alt.X("label:N", sort=alt.SortField("order"), title=None,
                axis=alt.Axis(labelAngle=-40, labelLimit=220)),
        y=alt.Y("start:Q", title=f"self time ({unit})"),
        y2="end:Q",
        color=alt.Color("kind:N", scale=colors, title=None),
        tooltip=["label", alt.Tooltip("delta:Q", title=unit, format=",.3f")],
    )
