"""The parts of :class:`~jupyter_profview.analysis.compare.Comparison` that present it: the
memory tables, the text verdict, the Altair waterfall and the side-by-side widget view.

Side-by-side view (:class:`CompareView`)
----------------------------------------
An ``ipywidgets.VBox``: a header, the TraceWidget of A, the ops table (an
``ipywidgets.Select``, one row per op / kernel, largest ``|delta|`` first), the
TraceWidget of B.  Times line up through the comparison's ``offset`` (B time = A
time + offset): when one timeline's ``visible`` window changes, the other is asked
to show the mapped window (``zoom_to``).  The front end answers a zoom request
with a ``visible`` change of its own; such an echo (a window equal to one we asked
that widget for in the last :data:`ECHO_SECONDS`) is not mapped back, so the two
never chase each other, even while the user keeps zooming.  Picking a table row highlights that op in both
timelines (``highlight(..., zoom=False)``, so the shared window stays put).

Display budget: the overview frames of both widgets together stay within
``budget`` bytes (4 MiB, the budget of one widget); where they would not, each
widget's overview is recomputed at a narrower width for its share.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import ProfviewError
from ..model import Trace

if TYPE_CHECKING:
    from .compare import Comparison

DISPLAY_BUDGET = 4 * 1024 * 1024
ECHO_SECONDS = 1.0
TABLE_ROWS = 200
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


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


def size_text(nbytes: float) -> str:
    """``4 KiB``, ``1.5 MiB``: binary units."""
    value, unit = float(nbytes), 0
    while abs(value) >= 1024 and unit < len(_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.4g} {_UNITS[unit]}"


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
    sizes.insert(0, "size", [f"<= {size_text(e)}" for e in sizes.index])
    return MemoryComparison(peak, sizes)


# ---------------------------------------------------------------------------
# Verdict and chart
# ---------------------------------------------------------------------------

def time_text(value: float, unit: str) -> str:
    """A duration for people: ``3.10 ms``, ``412 us``, ``17 steps``."""
    if unit != "ns":
        return f"{value:g} {unit}s"
    for scale, name in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {name}"
    return f"{value:.0f} ns"


def _changes(c: Comparison) -> pd.DataFrame:
    """Ops and kernels in one table (column ``what``), sorted by ``|delta|``."""
    parts = [c.ops.assign(what="op"), c.kernels.assign(what="kernel")]
    table = pd.concat([p for p in parts if len(p)])
    table.index = table.index.astype(str)
    return table.iloc[np.argsort(-np.abs(table["delta"].to_numpy()), kind="stable")]


def verdict(c: Comparison) -> str:
    unit = c.time_unit
    per = "step" if c.steps["name_a"].astype(str).str.startswith("ProfilerStep").any() else "iteration"
    ma, mb = c.step_times()
    na, nb = int(c.steps["dur_a"].notna().sum()), int(c.steps["dur_b"].notna().sum())
    sentences = []
    if ma > 0 and np.isfinite(mb):
        pct = (mb / ma - 1) * 100
        how = "the same time" if abs(pct) < 0.05 else f"{abs(pct):.1f} % {'slower' if pct > 0 else 'faster'}"
        counts = f", {na} vs {nb} {per}s" if (na, nb) != (1, 1) else ""
        sentences.append(f"B is {how} per {per} ({time_text(ma, unit)} -> {time_text(mb, unit)}{counts})")
    table = _changes(c)
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

    table = _changes(c)
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


# ---------------------------------------------------------------------------
# Side-by-side widgets
# ---------------------------------------------------------------------------

def state_bytes(widget: Any) -> int:
    """Bytes of a TraceWidget's binary synced state (overview frames, memory, nodes, highlight)."""
    values = (getattr(widget, name) for name in widget.trait_names(sync=True))
    return sum(len(v) for v in values if isinstance(v, bytes))


def fit_budget(widgets: list[Any], budget: int) -> None:
    """Recompute the timeline overviews so that all ``widgets`` together stay within ``budget``."""
    if sum(state_bytes(w) for w in widgets) <= budget:
        return
    fixed = sum(state_bytes(w) - len(w._overview) for w in widgets)
    share = max(1, (budget - fixed) // len(widgets))
    for w in widgets:
        if len(w._overview) > share:
            w._overview = w._data.timeline.overview(budget=share)


def _row_text(name: str, row: pd.Series, what: str, unit: str) -> str:
    delta = float(row["delta"])
    sign = "+" if delta > 0 else "-" if delta < 0 else " "
    return (f"{sign}{time_text(abs(delta), unit):>10}  {row['status']:<7}  {int(row['count_a']):>5} -> "
            f"{int(row['count_b']):<5}  {what:<6}  {name}")


class CompareView:
    """Both timelines stacked, zoom and pan synced through the alignment offset, the ops
    table between them.  ``view.a``/``view.b``: the TraceWidgets; ``view.table``: the Select;
    ``view.box``: the VBox (what the notebook displays)."""

    def __init__(self, comparison: Comparison, *, budget: int = DISPLAY_BUDGET, rows: int = 10,
                 **widget_options: Any) -> None:
        import ipywidgets as ipw

        from ..widget import TraceWidget

        self.comparison = c = comparison
        if not (isinstance(c.a, Trace) and isinstance(c.b, Trace)):
            raise ProfviewError("show() draws two single traces side by side",
                                expected="two Traces, e.g. profview.compare(set_a[rank], set_b[rank]).show()")
        self.offset = c.offset
        self.a = TraceWidget(c.a, **widget_options)
        self.b = TraceWidget(c.b, **widget_options)
        fit_budget([self.a, self.b], budget)
        changes = _changes(c).head(TABLE_ROWS)
        options = [("   change    status   count A->B   what    name", None)] + [
            (_row_text(str(name), row, str(row["what"]), c.time_unit),
             ("name" if row["what"] == "kernel" else c.by, str(name)))
            for name, row in changes.iterrows()]
        self.table = ipw.Select(options=options, value=None, rows=rows, layout=ipw.Layout(width="100%"))
        self.table.add_class("pv-compare-ops")
        style = ipw.HTML("<style>.pv-compare-ops select { font-family: monospace; white-space: pre; }"
                         "</style>")
        summary = ipw.HTML(f"<b>A</b> {_escape(c.label_a)} &nbsp; <b>B</b> {_escape(c.label_b)} &nbsp; "
                           f"(aligned on {c.align}, offset {time_text(c.offset, c.time_unit)})<br>"
                           f"{_escape(c.summary())}")
        self.box = ipw.VBox([style, summary, ipw.HTML("<b>A</b>"), self.a, self.table,
                             ipw.HTML("<b>B</b>"), self.b])
        self.highlighted: tuple[str, str] | None = None
        self._syncing = False
        # per side: (when, window) of our recent zoom requests, to recognise their echoes
        self._asked: dict[str, list[tuple[float, tuple[float, float]]]] = {"a": [], "b": []}
        self.a.observe(lambda ch: self._on_visible("a", ch["new"]), "visible")
        self.b.observe(lambda ch: self._on_visible("b", ch["new"]), "visible")
        self.table.observe(lambda ch: self.select(ch["new"]), "value")
        self._initial_window()

    # -- alignment ------------------------------------------------------------------
    def to_b(self, start: float, end: float) -> tuple[float, float]:
        return start + self.offset, end + self.offset

    def to_a(self, start: float, end: float) -> tuple[float, float]:
        return start - self.offset, end - self.offset

    def _initial_window(self) -> None:
        """Both show the time they have in common (in A's clock), where there is some."""
        a0, a1 = self.a.visible
        b0, b1 = self.to_a(*self.b.visible)
        lo, hi = max(a0, b0), min(a1, b1)
        if hi > lo:
            self.a.zoom_to(lo, hi)
            self.b.zoom_to(*self.to_b(lo, hi))

    def _on_visible(self, side: str, window: tuple[float, float]) -> None:
        if self._syncing:
            return
        now = time.monotonic()
        recent = [(t, w) for t, w in self._asked[side] if now - t < ECHO_SECONDS]
        echo = next((item for item in recent if _close(window, item[1])), None)
        if echo is not None:  # the front end answering one of our own zoom requests
            recent.remove(echo)
            self._asked[side] = recent
            return
        self._asked[side] = recent
        other_side = "b" if side == "a" else "a"
        other, target = (self.b, self.to_b(*window)) if side == "a" else (self.a, self.to_a(*window))
        if not target[1] > target[0] or _close(target, other.visible):
            return
        self._syncing = True
        try:
            self._asked[other_side].append((now, target))
            other.zoom_to(*target)
        finally:
            self._syncing = False

    # -- table -----------------------------------------------------------------------
    def select(self, key: tuple[str, str] | None) -> None:
        """Highlight the op ``key`` = (events column, value) in both timelines (None clears)."""
        self.highlighted = key
        for w in (self.a, self.b):
            if key is None:
                w.highlight(None, zoom=False)
            else:
                column, value = key
                w.highlight(w.trace.events[column].astype(str) == value, zoom=False)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.box._repr_mimebundle_(**kwargs)


def _close(x: tuple[float, float], y: tuple[float, float]) -> bool:
    tol = 1e-6 * max(abs(x[1] - x[0]), 1.0)
    return abs(x[0] - y[0]) <= tol and abs(x[1] - y[1]) <= tol


def _escape(text: str) -> str:
    import html

    return html.escape(text)
