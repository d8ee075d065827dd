"""All ranks in one widget: one combined Trace whose process groups are
``rank N · <group>``, on the set's common clock.

Built kernel-side from each rank's cached tables (one rank read at a time;
the combined trace holds every chosen rank's events, so pass ``ranks=`` to
look at a few ranks of a big run).  Events keep the rank's own event id as
``rank_id`` and get a ``rank`` column, so ``widget.selection`` says which
rank each selected event is from; ``info.offsets`` holds each rank's
clock offset.  Flows and launches are carried over with their event ids
renumbered; allocations and nodes are left out.

:func:`show_ranks` is ``profview.show(ts)``: the widget with every rank's
section (``rank N``) collapsed to a busy lane, optionally aligned on a step.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .. import derived
from ..model import Quality, Trace, TraceInfo
from ..ranks.traceset import concat

if TYPE_CHECKING:
    from ..ranks.traceset import TraceSet

SEP = " · "
LAUNCH_IDS = ("kernel", "launch", "cpu_op")
LAUNCH_TIMES = ("kernel_start", "launch_start")


def rank_label(rank: int, text: str) -> str:
    return f"rank {rank}{SEP}{text}"


def _prefixed(values: pd.Series, mapping: dict[str, str]) -> pd.Categorical:
    cat = pd.Categorical(values)
    return cat.rename_categories({c: mapping.get(str(c), str(c)) for c in cat.categories})


def _remap(values: pd.Series, mapping: pd.Series) -> Any:
    """Event ids through ``mapping`` (old id -> new id); -1 and <NA> stay, unknown ids become -1/<NA>."""
    nullable = isinstance(values.dtype, pd.Int64Dtype)
    raw = values.to_numpy(dtype=np.float64, na_value=np.nan) if nullable else values.to_numpy(np.float64)
    out = mapping.reindex(raw).to_numpy(np.float64)
    if nullable:
        return pd.arrays.IntegerArray(np.nan_to_num(out, nan=0).astype(np.int64), np.isnan(out))
    return np.where(np.isnan(out), -1, out).astype(np.int64)


def _shift(frame: pd.DataFrame, columns: Iterable[str], by: int) -> None:
    for col in columns:
        if col in frame.columns:
            frame[col] = frame[col] + by


def combined_trace(ts: TraceSet, ranks: Iterable[int] | None = None) -> Trace:
    """One Trace of the chosen ranks (default: all), see the module doc."""
    from .lod import group_name

    chosen = list(ts.ranks if ranks is None else ranks)
    events, memory, flows, launches, order = [], [], [], [], []
    quality = Quality()
    next_id = 0
    for rank in chosen:
        trace = ts[rank]
        offset = ts.offsets[rank]
        labels = trace.info.process_labels
        frame = trace.events.reset_index().rename(columns={"id": "rank_id"})
        new_id = pd.Series(np.arange(next_id, next_id + len(frame), dtype=np.float64),
                           index=frame["rank_id"].to_numpy(np.int64))
        next_id += len(frame)
        frame["parent"] = _remap(frame["parent"], new_id)
        procs = {str(p): rank_label(rank, group_name(str(p), labels))
                 for p in frame["process"].cat.categories}
        tracks = {}
        for t in frame["track"].cat.categories:
            process, _, rest = str(t).partition(" / ")
            tracks[str(t)] = f"{procs.get(process, rank_label(rank, process))} / {rest}"
        frame["process"] = _prefixed(frame["process"], procs)
        frame["track"] = _prefixed(frame["track"], tracks)
        _shift(frame, ["start"], offset)
        frame.insert(0, "rank", np.int64(rank))
        frame.index = new_id.to_numpy(np.int64)
        events.append(frame)
        order += [tracks.get(str(t), str(t)) for t in trace.info.track_order]

        mem = trace.memory.copy()
        _shift(mem, ["time"], offset)
        mem["device"] = _prefixed(mem["device"], {str(d): rank_label(rank, str(d))
                                                  for d in pd.Categorical(mem["device"]).categories})
        memory.append(mem)
        fl = trace.flows.copy()
        for col in ("source", "target"):
            fl[col] = _remap(fl[col], new_id)
        _shift(fl, ["start", "end"], offset)
        fl["flow_id"] = (f"r{rank}:" + fl["flow_id"].astype(str)).astype("string")
        flows.append(fl)
        la = trace.launches.copy()
        for col in LAUNCH_IDS:
            if col in la.columns:
                la[col] = _remap(la[col], new_id)
        _shift(la, LAUNCH_TIMES, offset)
        launches.append(la)
        quality.add(trace.quality)

    all_events = concat(events)
    all_events.index = np.concatenate([f.index.to_numpy() for f in events])
    # rows sorted by start, ids = positions (as the loaders make them)
    all_events = all_events.iloc[np.argsort(all_events["start"].to_numpy(np.int64), kind="stable")]
    renumber = pd.Series(np.arange(len(all_events), dtype=np.float64), index=all_events.index.to_numpy())
    all_events.index = pd.Index(np.arange(len(all_events), dtype=np.int64), name="id")
    all_events["parent"] = _remap(all_events["parent"], renumber)
    all_flows = concat(flows)
    for col in ("source", "target"):
        all_flows[col] = _remap(all_flows[col], renumber)
    all_launches = concat(launches)
    for col in LAUNCH_IDS:
        if col in all_launches.columns:
            all_launches[col] = _remap(all_launches[col], renumber)
    if "kernel" in all_launches.columns:
        all_launches = all_launches.sort_values("kernel", kind="stable").reset_index(drop=True)
    all_memory = concat(memory).sort_values(["device", "time"], kind="stable").reset_index(drop=True)
    shift = int(all_events["start"].min()) if len(all_events) else 0  # < 0 after ts.aligned()
    _shift(all_events, ["start"], -shift)
    _shift(all_memory, ["time"], -shift)
    _shift(all_flows, ["start", "end"], -shift)
    _shift(all_launches, LAUNCH_TIMES, -shift)
    info = TraceInfo(source=f"{len(chosen)} ranks", base_time_ns=ts.origin_ns + shift,
                     track_order=tuple(order), ranks=tuple(chosen),
                     offsets={r: ts.offsets[r] - shift for r in chosen})
    first = ts[chosen[0]]
    return Trace(format=first.format, time_unit=first.time_unit, events=all_events, memory=all_memory,
                 allocations=first.allocations.iloc[:0], nodes=first.nodes.iloc[:0], flows=all_flows,
                 quality=quality, launches=all_launches, info=info)


def first_common_step(ts: TraceSet, ranks: Iterable[int] | None = None) -> int:
    """The lowest ``ProfilerStep#N`` number every chosen rank recorded."""
    from ..errors import ProfviewError
    from ..ranks.derived import profiler_steps

    chosen = set(ts.ranks if ranks is None else ranks)
    steps = profiler_steps(ts)
    steps = steps[steps["rank"].isin(chosen)]
    per_step = steps.groupby("step")["rank"].nunique()
    common = per_step.index[per_step.to_numpy() == len(chosen)]
    if len(common) == 0:
        raise ProfviewError("no ProfilerStep is recorded by every rank", source=f"{len(chosen)} ranks",
                            expected="a ProfilerStep#N on every rank to align on (align='step')")
    return int(common.min())


def show_ranks(ts: TraceSet, ranks: Iterable[int] | None = None, *, align: str | int | None = None,
               collapsed: bool = True, **options: Any) -> Any:
    """The widget of :func:`jupyter_profview.show` for a TraceSet: rank sections
    (``rank N``) collapsed to one busy lane each (``collapsed=False``: expanded);
    ``align="step"`` (or a step number) shifts each rank so that the first
    ``ProfilerStep`` every rank has starts at the same time (``ts.aligned``), and
    makes that time 0: what came before it has negative times (the widget's axis
    starts there); ``info.align`` records the step and ``at`` = 0."""
    from .widget import TraceWidget

    chosen = list(ts.ranks if ranks is None else ranks)
    step: int | None = None
    if align is not None:
        if align == "step":
            step = first_common_step(ts, chosen)
        elif isinstance(align, int) and not isinstance(align, bool):
            step = align
        else:
            raise ValueError(f"align must be None, 'step' or a step number, got {align!r}")
        ts = ts.aligned(step=step)
    trace = combined_trace(ts, chosen)
    if step is not None:
        hit = derived.cpu_steps(trace)
        rebase(trace, int(hit.loc[hit["number"] == step, "start"].min()))
        trace.info = trace.info.replace(align={"step": step, "at": 0})
    if not collapsed:  # collapsed is the default of every view (widget.initial_state)
        options.setdefault("collapsed_groups", [])
    from .metric_colors import METRICS

    metric = options.pop("color_by") if options.get("color_by") in METRICS else None
    widget = TraceWidget(trace, **options)
    widget.traceset = ts  # what a rank's critical path is recomputed on (the step picker)
    widget._data.metrics.source = ts  # kernel and collective numbers come from the ranks' args
    if metric is not None:
        widget.color_by = metric
    return widget


def rebase(trace: Trace, zero: int) -> None:
    """Make time ``zero`` of a combined trace its new 0 (in place): every time column and the
    info's ``base_time_ns`` and ``offsets`` move with it."""
    _shift(trace.events, ["start"], -zero)
    _shift(trace.memory, ["time"], -zero)
    _shift(trace.flows, ["start", "end"], -zero)
    _shift(trace.launches, LAUNCH_TIMES, -zero)
    info = trace.info
    trace.info = info.replace(base_time_ns=(info.base_time_ns or 0) + zero,
                              offsets={r: o - zero for r, o in info.offsets.items()})
    derived.forget(trace)  # its times moved: the derived facts are computed again
