"""Compare two runs: what got slower, where, and why.

``compare(a, b)`` takes two traces (paths, loaded `Trace`
objects, or anything with an ``events`` table such as a rank set whose events carry a
``rank`` column) and returns a `Comparison` of tables, a text verdict and a chart
(`.compare_view`), and a side-by-side widget view (`jupyter_profview.widget.compare`).

Definitions (times in the traces' ``time_unit``; both traces must share it)
-----------------------------------------------------------------------------

ops
:   Host-side slices (``kind == "slice"``): CPU ops, annotations, runtime calls, the
    ops of the graph formats -- every slice except device kernels (below), the step
    markers (``ProfilerStep#N``, compared in `Comparison.steps`) and the
    profiler's own span (category ``Trace``).  One row per ``by`` key (default
    ``name``): ``count_a``/``count_b``, ``total_*`` (sum of ``dur``) and ``self_*``
    (sum of ``self``, see `.summary`).

kernels
:   Device slices, recognised by their category (``kernel``, ``gpu_memcpy``,
    ``gpu_memset``, ``memcpy``, ``memset``; case-insensitive): the same columns by
    name, and by (group, category) in `Comparison.kernels_by_type`, group
    being the GPU analyses' ``computation`` / ``communication`` / ``memory``.
    Formats whose categories are op types (TF StepStats, MegEngine) keep their
    device rows in ops.

ops by shape
:   `Comparison.ops_by_shape`: ops keyed by (key, input shapes), the shapes
    being ``str`` of PyTorch's ``args["Input Dims"]`` (read for all events with one
    search of the args text, see ``formats/chrome/args.py``) or of an
    ``input_shapes`` / ``in_shapes`` column.

phases
:   `Comparison.phases`: the column sums of
    `phases` over devices (and ranks), in one
    vectorised pass (`phase_totals`).

delta, ratio
:   ``delta = self_b - self_a`` and ``ratio = self_b / self_a`` (NaN where
    ``self_a`` is 0).  Self time, not total, because self times never double
    count: the deltas of all ops add up to the change of busy time, so "x % of the
    change is op X" is meaningful.  ``delta_total`` (``total_b - total_a``) is
    there too, for a parent op whose own work is small.  Rows are sorted by
    ``|delta|``, largest first.

status
:   ``added`` (only in B), ``removed`` (only in A), ``same`` when the counts are
    equal and ``|delta| <= max(atol, rtol * max(self_a, self_b))`` (defaults:
    ``rtol=0.05``; ``atol`` 1 us for traces with a clock, 0 for step axes),
    ``changed`` otherwise.

steps
:   PyTorch ``ProfilerStep#N`` slices on the host (`jupyter_profview.analysis.steps`,
    ``side == "cpu"``; their device-side copies are neither steps nor ops), paired by position
    (the first step of A
    with the first of B, whatever their numbers).  Formats without step markers
    (TF StepStats, MegEngine, Chainer, TF node order: one iteration per file) get
    one row, ``iteration``, spanning the whole trace (first start to last end).

alignment
:   ``align="step"``: B's time ``t_b`` lines up with A's ``t_b - offset`` where
    ``offset`` is B's first step start minus A's (0, i.e. ``"start"``, when either
    trace has no steps); ``"start"``: both traces from their first event; a number:
    that offset.  Used by the side-by-side view.

Traces with a ``rank`` column in both event tables (rank sets) are compared
overall (ops summed over ranks, phases summed over ranks) and per rank
(`Comparison.ops_by_rank`; steps per rank in `Comparison.steps`).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..derived import step_mask, union_lengths
from ..derived.self_time import self_interval_arrays
from ..errors import ProfviewError
from ..model import PHASES
from ..nesting import PYTHON_FRAME
from .columns import match

if TYPE_CHECKING:
    from .compare_view import MemoryComparison

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset")
PROFILER_CATEGORIES = ("trace",)
SHAPE_COLUMNS = ("input_shapes", "in_shapes")
SHAPE_ARG = "Input Dims"  # PyTorch record_shapes=True
STATUS = ("added", "removed", "changed", "same")
NUMERIC = ("count_a", "count_b", "total_a", "total_b", "self_a", "self_b")


def _load(x: Any, side: str) -> Any:
    if isinstance(x, (str, Path, bytes)):
        from ..loader import host_files, load

        hosts = host_files(x) if isinstance(x, (str, Path)) else None
        if hosts is not None and len(hosts) > 1:  # a multi-host XSpace run: its hosts as ranks
            from ..ranks import load_many

            return load_many(hosts)
        return load(x)
    if isinstance(getattr(x, "events", None), pd.DataFrame):
        return x
    raise ProfviewError(f"cannot compare a {type(x).__name__} (trace {side})",
                        expected="a path, bytes, a loaded Trace or a TraceSet")


def _label(trace: Any, fallback: str) -> str:
    source = getattr(getattr(trace, "info", None), "source", None) or (  # a Trace's, else a table set's
        getattr(trace, "metadata", None) or {}).get("source")
    return Path(str(source)).name if source else fallback


def event_groups(events: pd.DataFrame) -> dict[str, np.ndarray]:
    """Boolean masks over ``events``: ``ops``, ``kernels`` and ``steps`` (see the module doc)."""
    slices = (events["kind"] == "slice").to_numpy(bool) if "kind" in events else np.ones(len(events), bool)
    device = match(events["category"], lambda c: c.lower() in DEVICE_CATEGORIES)
    profiler = match(events["category"], lambda c: c.lower() in PROFILER_CATEGORIES)
    devices = set(events.loc[device, "process"].astype(str)) if "process" in events else set()
    step, copy = step_mask(events, devices=devices)  # the one rule of a step (derived.steps)
    step &= slices
    return {"ops": slices & ~device & ~step & ~profiler, "kernels": slices & device, "steps": step & ~copy}


def _per_key(events: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    if len(events) == 0:
        return pd.DataFrame({"count": [], "total": [], "self": []},
                            index=pd.MultiIndex.from_tuples([], names=keys) if len(keys) > 1 else
                            pd.Index([], name=keys[0], dtype=object))
    grouped = events.groupby(keys, observed=True, sort=False)
    out = pd.DataFrame({"count": grouped.size(), "total": grouped["dur"].sum(),
                        "self": grouped["self"].sum()})
    if len(keys) == 1:
        out.index = out.index.astype(str)
    else:
        out.index = pd.MultiIndex.from_arrays(
            [out.index.get_level_values(i).astype(str) for i in range(len(keys))], names=keys)
    return out


def side_by_side(a: pd.DataFrame, b: pd.DataFrame, *, rtol: float, atol: float) -> pd.DataFrame:
    """Join two ``count/total/self`` tables on their index; add delta, ratio, status."""
    joined = a.add_suffix("_a").join(b.add_suffix("_b"), how="outer")
    in_a = joined["count_a"].notna().to_numpy()
    in_b = joined["count_b"].notna().to_numpy()
    out = pd.DataFrame(index=joined.index)
    for col in NUMERIC:
        out[col] = joined[col].fillna(0).astype(np.int64)
    sa, sb = out["self_a"].to_numpy(np.float64), out["self_b"].to_numpy(np.float64)
    out["delta"] = out["self_b"] - out["self_a"]
    out["delta_total"] = out["total_b"] - out["total_a"]
    with np.errstate(divide="ignore", invalid="ignore"):
        out["ratio"] = np.where(sa > 0, sb / np.where(sa > 0, sa, 1), np.nan)
    same = (out["count_a"].to_numpy() == out["count_b"].to_numpy()) & (
        np.abs(sb - sa) <= np.maximum(atol, rtol * np.maximum(sa, sb)))
    status = np.where(~in_a, "added", np.where(~in_b, "removed", np.where(same, "same", "changed")))
    out["status"] = pd.Categorical(status, categories=STATUS)
    names = np.array([str(k) for k in out.index], dtype=object)
    order = np.lexsort((names, -np.abs(out["delta"].to_numpy())))
    return out.iloc[order]


def _steps_of(events: pd.DataFrame, mask: np.ndarray) -> pd.DataFrame:
    """``name``, ``start``, ``dur`` of the steps (or one whole-trace iteration), in time order."""
    steps = events[mask]
    if len(steps):
        return steps[["name", "start", "dur"]].sort_values("start", kind="stable").assign(
            name=lambda f: f["name"].astype(str))
    if len(events) == 0:
        return pd.DataFrame({"name": [], "start": [], "dur": []})
    start = int(events["start"].min())
    end = int((events["start"] + events["dur"]).max())
    return pd.DataFrame({"name": ["iteration"], "start": [start], "dur": [end - start]})


def _pair_steps(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Steps of A and B side by side, paired by position (``step`` 0, 1, ...)."""
    fa = a.reset_index(drop=True).add_suffix("_a")
    fb = b.reset_index(drop=True).add_suffix("_b")
    out = fa.join(fb, how="outer")
    out.index.name = "step"
    for col in ("name_a", "name_b"):
        out[col] = out[col].astype(object)
    for col in ("start_a", "start_b", "dur_a", "dur_b"):
        out[col] = out[col].astype("Int64")
    out = out[["name_a", "name_b", "start_a", "start_b", "dur_a", "dur_b"]]
    out["delta"] = out["dur_b"] - out["dur_a"]
    out["ratio"] = out["dur_b"].astype("Float64") / out["dur_a"].astype("Float64").where(out["dur_a"] > 0)
    return out


class Comparison:
    """Run A against run B; see `compare` and the module docstring for the definitions."""

    def __init__(self, a: Any, b: Any, *, align: str | float = "step", by: str = "name",
                 rtol: float = 0.05, atol: float | None = None) -> None:
        self.a, self.b = _load(a, "A"), _load(b, "B")
        self.label_a, self.label_b = _label(self.a, "A"), _label(self.b, "B")
        unit_a, unit_b = getattr(self.a, "time_unit", "ns"), getattr(self.b, "time_unit", "ns")
        if unit_a != unit_b:
            raise ProfviewError(
                f"{self.label_a} has time unit {unit_a!r} and {self.label_b} {unit_b!r}: their times "
                "cannot be compared", expected="two traces with the same time axis")
        self.time_unit = unit_a
        # read once: a TraceSet's events are materialised from its cache on every access
        self.events_a, self.events_b = self.a.events, self.b.events
        for side, trace, ev in (("A", self.a, self.events_a), ("B", self.b, self.events_b)):
            if by not in ev.columns:
                raise ProfviewError(f"trace {side} ({_label(trace, side)}) has no events column {by!r}",
                                    expected=f"one of {list(map(str, ev.columns))}")
        self.by = by
        self.rtol = float(rtol)
        self.atol = float(atol if atol is not None else (1000.0 if self.time_unit == "ns" else 0.0))
        self.ranked = "rank" in self.events_a.columns and "rank" in self.events_b.columns
        self._groups = (event_groups(self.events_a), event_groups(self.events_b))
        self.ops = self._table("ops", [by])
        self.kernels = self._table("kernels", ["name"])
        common = self.ops["status"].isin(["same", "changed"]).sum() + \
            self.kernels["status"].isin(["same", "changed"]).sum()
        if common == 0:
            n_a, n_b = int((self.ops["count_a"] > 0).sum()), int((self.ops["count_b"] > 0).sum())
            raise ProfviewError(
                f"{self.label_a} and {self.label_b} have no op or kernel {by}s in common ({n_a} vs {n_b} "
                f"op {by}s), so a comparison would be meaningless",
                expected="two runs of the same program, recorded with the same framework (or another by=)")
        self.steps = self._steps()
        self.offset, self.align = self._offset(align)

    # -- tables ------------------------------------------------------------------
    def _events(self, side: int, group: str, columns: list[str] | None = None) -> pd.DataFrame:
        events = (self.events_a, self.events_b)[side]
        if columns is not None:  # select columns before rows: far less to copy
            events = events[columns]
        return events[self._groups[side][group]]

    def _table(self, group: str, keys: list[str]) -> pd.DataFrame:
        columns = list(dict.fromkeys([*keys, "dur", "self"]))
        out = side_by_side(_per_key(self._events(0, group, columns), keys),
                           _per_key(self._events(1, group, columns), keys), rtol=self.rtol, atol=self.atol)
        out.index.name = keys[0] if len(keys) == 1 else None
        return out

    @cached_property
    def kernels_by_type(self) -> pd.DataFrame:
        """`kernels` by (``group``, ``category``): ``group`` is ``computation``,
        ``communication`` or ``memory``, the split of the GPU analyses
        (`jupyter_profview.analysis.gpu.TYPE_GROUPS` over the kernel types of
        `jupyter_profview.formats.chrome.gpu.kernel_types`: ``memcpy`` / ``memset`` by
        category or a ``Memcpy``/``Memset`` name, ``communication`` for NCCL / RCCL / gloo
        kernels, else ``kernel``); ``category`` is the events' own (``kernel``,
        ``gpu_memcpy``, ``gpu_memset`` ...)."""
        frames = []
        for side in (0, 1):
            ev = self._events(side, "kernels", ["name", "category", "dur", "self"])
            frames.append(_per_key(ev.assign(group=_kernel_groups(ev)), ["group", "category"]))
        out = side_by_side(frames[0], frames[1], rtol=self.rtol, atol=self.atol)
        out.index.names = ["group", "category"]
        return out

    @cached_property
    def ops_by_rank(self) -> pd.DataFrame:
        """`ops` per (rank, key), for two rank sets; raises for single traces."""
        if not self.ranked:
            raise ProfviewError("per-rank tables need a rank column in both traces' events",
                                expected="two TraceSets (profview.ranks)")
        return self._table("ops", ["rank", self.by])

    @cached_property
    def ops_by_shape(self) -> pd.DataFrame:
        """`ops` keyed by (key, input shapes), when both traces recorded shapes
        (PyTorch ``record_shapes=True``: ``args["Input Dims"]``; columns ``input_shapes`` /
        ``in_shapes`` elsewhere)."""
        frames = []
        for side, trace in enumerate((self.a, self.b)):
            events = (self.events_a, self.events_b)[side]
            wanted = [self.by, "dur", "self", "has_args", *SHAPE_COLUMNS]
            ev = self._events(side, "ops", list(dict.fromkeys(c for c in wanted if c in events.columns)))
            shapes = _shapes(trace, ev)
            if shapes is None:
                raise ProfviewError(
                    f"trace {'AB'[side]} ({_label(trace, 'AB'[side])}) recorded no input shapes",
                    expected="traces recorded with shapes (torch.profiler(record_shapes=True))")
            keyed = pd.DataFrame({self.by: ev[self.by].astype(str).to_numpy(), "shapes": shapes,
                                  "dur": ev["dur"].to_numpy(), "self": ev["self"].to_numpy()})
            frames.append(_per_key(keyed, [self.by, "shapes"]))
        return side_by_side(frames[0], frames[1], rtol=self.rtol, atol=self.atol)

    def _steps(self) -> pd.DataFrame:
        ea, eb = self.events_a, self.events_b
        ma, mb = self._groups[0]["steps"], self._groups[1]["steps"]
        if not self.ranked:
            return _pair_steps(_steps_of(ea, ma), _steps_of(eb, mb))
        parts = []
        for rank in sorted(set(ea["rank"].unique()) | set(eb["rank"].unique())):
            ra, rb = (ea["rank"] == rank).to_numpy(), (eb["rank"] == rank).to_numpy()
            part = _pair_steps(_steps_of(ea[ra], ma[ra]), _steps_of(eb[rb], mb[rb]))
            part = part.assign(rank=rank).set_index("rank", append=True)
            parts.append(part.reorder_levels(["rank", "step"]))
        return pd.concat(parts)

    def _offset(self, align: str | float) -> tuple[float, str]:
        if isinstance(align, (int, float)) and not isinstance(align, bool):
            return float(align), "offset"
        if align == "start":
            return 0.0, "start"
        if align != "step":
            raise ProfviewError(f"align={align!r}", expected='"step", "start" or a number (B minus A)')
        has = self._groups[0]["steps"].any() and self._groups[1]["steps"].any()
        if not has:
            return 0.0, "start"
        first_a = int(self.events_a["start"][self._groups[0]["steps"]].min())
        first_b = int(self.events_b["start"][self._groups[1]["steps"]].min())
        return float(first_b - first_a), "step"

    @cached_property
    def phases(self) -> pd.DataFrame:
        """Forward / backward / optimizer / communication / other and ``busy`` time, summed over
        devices (and ranks): ``a``, ``b``, ``delta``, ``ratio``.  Each side's numbers are the
        column sums of `phases` (per rank for rank sets),
        computed here in one vectorised pass (`phase_totals`)."""
        cols = [*PHASES, "busy"]
        sides = [pd.Series(phase_totals(ev, ranked=self.ranked), index=cols, dtype=np.int64)
                 for ev in (self.events_a, self.events_b)]
        out = pd.DataFrame({"a": sides[0], "b": sides[1]})
        out.index.name = "phase"
        out["delta"] = out["b"] - out["a"]
        out["ratio"] = out["b"] / out["a"].where(out["a"] > 0)
        return out

    @cached_property
    def memory(self) -> MemoryComparison:
        """Peak memory per device and the allocation-size histogram, side by side."""
        from .compare_view import memory_comparison

        return memory_comparison(self.a, self.b)

    # -- verdict ---------------------------------------------------------------------
    def step_times(self) -> tuple[float, float]:
        """Mean step (or iteration) duration of A and B."""
        steps = self.steps
        return float(steps["dur_a"].astype("Float64").mean()), float(steps["dur_b"].astype("Float64").mean())

    def summary(self) -> str:
        """A short text verdict: per-step change, the op that explains most of it, what is new."""
        from .compare_view import verdict

        return verdict(self)

    def chart(self, n: int = 12) -> Any:
        """Altair waterfall: A's busy time, the ``n`` largest op/kernel deltas, the rest, B's busy
        time (render offline with ``charts.enable_offline()``)."""
        from .compare_view import waterfall

        return waterfall(self, n)

    def __repr__(self) -> str:
        counts = self.ops["status"].value_counts()
        return (f"<Comparison {self.label_a!r} -> {self.label_b!r}: {len(self.ops)} ops "
                f"({', '.join(f'{counts.get(s, 0)} {s}' for s in STATUS)}), {len(self.kernels)} kernels, "
                f"{len(self.steps)} steps, align={self.align} offset={self.offset:g}>")


def _kernel_groups(kernels: pd.DataFrame) -> np.ndarray:
    """``computation`` / ``communication`` / ``memory`` of each device slice (see
    `Comparison.kernels_by_type`)."""
    from ..formats.chrome.gpu import kernel_types
    from ..model import KERNEL_TYPES
    from .gpu import TYPE_GROUPS

    base = kernels["category"].astype(str).str.lower().str.removeprefix("gpu_").to_numpy(dtype=object)
    types = kernel_types(base, pd.Categorical(kernels["name"].astype(str).to_numpy(dtype=object)))
    groups = np.array([TYPE_GROUPS[t] for t in KERNEL_TYPES], dtype=object)
    return groups[types] if len(types) else np.zeros(0, dtype=object)


def _codes(values: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Integer codes (-1: missing) and their labels, of a categorical or any column."""
    cat = values if isinstance(values.dtype, pd.CategoricalDtype) else values.astype("category")
    return cat.cat.codes.to_numpy(np.int64), [str(c) for c in cat.cat.categories]


def phase_totals(events: pd.DataFrame, *, ranked: bool = False) -> dict[str, int]:
    """The column sums over devices of `phases`
    (``forward`` ... ``other`` and ``busy``) of one events table, or of every rank of a
    rank set's table (``ranked``: event ids and parents are per rank, devices are
    (rank, process)), without a DataFrame per device and phase.

    The same definitions as ``phases``: each slice's self intervals (its span minus its
    direct children's, `self_intervals`) get the slice's
    phase; a phase's time on a device is the length of the union of its intervals there,
    ``busy`` that of all of them."""
    slices = (events["kind"] == "slice").to_numpy(bool)
    columns = ["start", "dur", "parent", "process", "thread", "category", "phase",
               *(["id", "rank"] if ranked else [])]
    ev = events[[c for c in columns if c in events.columns]][slices]  # columns first: less to copy
    start = ev["start"].to_numpy(np.int64)
    end = start + ev["dur"].to_numpy(np.int64)
    ids = (ev["id"] if ranked and "id" in ev.columns else ev.index).to_numpy(np.int64)
    parent = ev["parent"].to_numpy(np.int64, na_value=-1) if isinstance(ev["parent"].dtype, pd.Int64Dtype) \
        else ev["parent"].to_numpy(np.int64)
    process, _ = _codes(ev["process"])
    if ranked:  # one id space: (rank, id) -> rank * (largest id + 1) + id
        rank, _ = _codes(ev["rank"])
        width = int(max(ids.max(initial=0), parent.max(initial=0))) + 1
        ids = rank * width + ids
        parent = np.where(parent >= 0, rank * width + parent, -1)
        process = rank * (int(process.max(initial=0)) + 1) + process
    phase_code, labels = _codes(ev["phase"])
    to_phase = np.array([PHASES.index(x) if x in PHASES else -1 for x in labels] + [-1], np.int64)
    phase = to_phase[phase_code]  # code -1 (missing) -> the appended -1
    thread, _ = _codes(ev["thread"])  # a thread: (rank,) process, thread
    thread = process * (int(thread.max(initial=0)) + 2) + thread
    python = (ev["category"].astype(str) == PYTHON_FRAME).to_numpy()
    owner, s, e = self_interval_arrays(start, end, ids, parent, thread, python)
    keep = (e > s) & (process[owner] >= 0)  # phases() groups by process: none, no row
    owner, s, e = owner[keep], s[keep], e[keep]
    devices = int(process.max(initial=-1)) + 1
    device = process[owner]
    mine = phase[owner] >= 0
    per_phase = union_lengths(device[mine] * len(PHASES) + phase[owner][mine], s[mine], e[mine],
                               devices * len(PHASES)).reshape(devices, len(PHASES)).sum(axis=0)
    busy = union_lengths(device, s, e, devices).sum()
    return {**{p: int(v) for p, v in zip(PHASES, per_phase, strict=True)}, "busy": int(busy)}


def _shapes(trace: Any, ev: pd.DataFrame) -> np.ndarray | None:
    """Input shapes of ``ev`` as text (``str`` of the recorded value), or None when none
    were recorded."""
    for col in SHAPE_COLUMNS:
        if col in ev.columns:
            text = ev[col].map(lambda s: "" if s is None or (isinstance(s, float) and np.isnan(s))
                               else str(s))
            return text.to_numpy(dtype=object) if (text != "").any() and (text != "[]").any() else None
    if not hasattr(trace, "arg_values"):
        return None
    has_args = ev["has_args"].to_numpy(bool) if "has_args" in ev else np.ones(len(ev), bool)
    ids = ev.index.to_numpy(np.int64)
    # each distinct value formatted once (Chrome traces: the decoders took them out while reading)
    codes, values = trace.arg_values(ids[has_args], SHAPE_ARG)
    shown = np.array(["" if v is None else str(v) for v in values] + [""], dtype=object)
    out = np.full(len(ev), "", dtype=object)
    out[has_args] = shown[codes]
    return out if (out != "").any() else None


def compare(a: Any, b: Any, *, align: str | float = "step", by: str = "name", rtol: float = 0.05,
            atol: float | None = None) -> Comparison:
    """Compare run A with run B (paths, Traces or TraceSets); see the module docstring.

    Raises `ProfviewError` when the two share no op or kernel names (e.g. two
    different frameworks), or have different time units.
    """
    return Comparison(a, b, align=align, by=by, rtol=rtol, atol=atol)
