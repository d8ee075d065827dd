"""All ranks of a TraceSet as one Trace
([`TraceSet.combined`][jupyter_profview.ranks.traceset.TraceSet.combined]).

Data carries data: every table of the combined Trace has a `rank` column, and the rank's own
values are kept as they are (its `process`, `track`, memory `device`); what the screen calls them
("rank 3 · GPU 0") is the front end's to make.  So a lane is a `(rank, track)` pair, not a track.

- `events`: every chosen rank's events on the set's common clock, sorted by start, ids renumbered
  to positions (as the loaders make them); `rank` says whose, `rank_id` is the event's id in its
  own rank (`ts[rank].events`); `parent` renumbered;
- `flows`, `launches`, `memory`: with `rank`, event ids renumbered, times on the common clock;
  `allocations` and `nodes` are left out;
- `info` ([TraceInfo][jupyter_profview.model.TraceInfo]): `ranks` (the chosen ranks), `offsets`
  (rank -> its clock offset, ns), `base_time_ns`, `rank_track_order` and `rank_process_labels`
  (rank -> that rank's own `track_order` and `process_labels`), `align` (the step lined up on, or
  None).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .. import derived
from ..errors import ProfviewError
from ..model import Quality, Trace, TraceInfo
from .cache import concat

if TYPE_CHECKING:
    from .traceset import TraceSet

LAUNCH_IDS = ("kernel", "launch", "cpu_op")
LAUNCH_TIMES = ("kernel_start", "launch_start")


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


def _with_rank(frame: pd.DataFrame, rank: int) -> pd.DataFrame:
    frame.insert(0, "rank", np.int64(rank))
    return frame


def combine(ts: TraceSet, ranks: Iterable[int] | None = None) -> Trace:
    """One Trace of the chosen ranks (default: all), on the set's clock (see the module doc)."""
    chosen = list(ts.ranks if ranks is None else ranks)
    if not chosen:
        raise ProfviewError("no rank to combine", source=repr(ts), expected="at least one rank")
    events, memory, flows, launches = [], [], [], []
    labels: dict[int, dict[str, str]] = {}
    order: dict[int, tuple[str, ...]] = {}
    quality = Quality()
    next_id = 0
    for rank in chosen:
        trace = ts[rank]
        offset = ts.offsets[rank]
        labels[rank] = dict(trace.info.process_labels)
        frame = trace.events.reset_index().rename(columns={"id": "rank_id"})
        new_id = pd.Series(np.arange(next_id, next_id + len(frame), dtype=np.float64),
                           index=frame["rank_id"].to_numpy(np.int64))
        next_id += len(frame)
        frame["parent"] = _remap(frame["parent"], new_id)
        _shift(frame, ["start"], offset)
        frame.index = new_id.to_numpy(np.int64)
        events.append(_with_rank(frame, rank))
        order[rank] = trace.info.track_order

        mem = trace.memory.copy()
        _shift(mem, ["time"], offset)
        memory.append(_with_rank(mem, rank))
        fl = trace.flows.copy()
        for col in ("source", "target"):
            fl[col] = _remap(fl[col], new_id)
        _shift(fl, ["start", "end"], offset)
        flows.append(_with_rank(fl, rank))
        la = trace.launches.copy()
        for col in LAUNCH_IDS:
            if col in la.columns:
                la[col] = _remap(la[col], new_id)
        _shift(la, LAUNCH_TIMES, offset)
        launches.append(_with_rank(la, rank))
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
    all_memory = concat(memory).sort_values(["rank", "device", "time"], kind="stable").reset_index(drop=True)
    shift = int(all_events["start"].min()) if len(all_events) else 0  # < 0 after ts.aligned()
    first = ts[chosen[0]]
    trace = Trace(format=first.format, time_unit=first.time_unit, events=all_events, memory=all_memory,
                  allocations=first.allocations.iloc[:0], nodes=first.nodes.iloc[:0], flows=all_flows,
                  quality=quality, launches=all_launches,
                  info=TraceInfo(source=f"{len(chosen)} ranks", base_time_ns=ts.origin_ns,
                                 ranks=tuple(chosen), offsets={r: ts.offsets[r] for r in chosen},
                                 rank_track_order=order, rank_process_labels=labels))
    rebase(trace, shift)
    return trace


def first_common_step(ts: TraceSet, ranks: Iterable[int] | None = None) -> int:
    """The lowest `ProfilerStep#N` number every chosen rank recorded."""
    from .derived import profiler_steps

    chosen = set(ts.ranks if ranks is None else ranks)
    steps = profiler_steps(ts)
    steps = steps[steps["rank"].isin(chosen)]
    per_step = steps.groupby("step")["rank"].nunique()
    common = per_step.index[per_step.to_numpy() == len(chosen)]
    if len(common) == 0:
        raise ProfviewError("no ProfilerStep is recorded by every rank", source=f"{len(chosen)} ranks",
                            expected="a ProfilerStep#N on every rank to align on (align='step')")
    return int(common.min())


def combine_aligned(ts: TraceSet, ranks: Iterable[int] | None, align: str | int | None) -> Trace:
    """[`combine`][jupyter_profview.ranks.combined.combine], lined up on a step: `align="step"` (the
    first `ProfilerStep` every chosen rank has) or a step number shifts each rank so that the step
    starts at the same time on every rank (`ts.aligned`), and makes that time 0 (what came before
    it has negative times); `info.align` records the step and `at` = 0."""
    chosen = list(ts.ranks if ranks is None else ranks)
    if align is None:
        return combine(ts, chosen)
    if align == "step":
        step = first_common_step(ts, chosen)
    elif isinstance(align, int) and not isinstance(align, bool):
        step = align
    else:
        raise ProfviewError(f"align must be None, 'step' or a step number, got {align!r}",
                            source=f"{len(chosen)} ranks", expected="align=None, 'step' or an int")
    trace = combine(ts.aligned(step=step), chosen)
    hit = derived.cpu_steps(trace)
    rebase(trace, int(hit.loc[hit["number"] == step, "start"].min()))
    trace.info = trace.info.replace(align={"step": step, "at": 0})
    return trace


def rebase(trace: Trace, zero: int) -> None:
    """Make time `zero` of a combined trace its new 0 (in place): every time column and the
    info's `base_time_ns` and `offsets` move with it (the derived facts are computed again)."""
    _shift(trace.events, ["start"], -zero)
    _shift(trace.memory, ["time"], -zero)
    _shift(trace.flows, ["start", "end"], -zero)
    _shift(trace.launches, LAUNCH_TIMES, -zero)
    info = trace.info
    trace.info = info.replace(base_time_ns=(info.base_time_ns or 0) + zero,
                              offsets={r: o - zero for r, o in info.offsets.items()})
    derived.forget(trace)
