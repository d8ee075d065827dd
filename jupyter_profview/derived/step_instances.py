"""The steps of a trace: the one definition of a step every analysis uses."""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from ..kinds import STEP_ANNOTATION, step_pattern
from ..model import Trace
from .cache import cached
from .masks import among, gpu_labels, match

#: Kineto's category for the device-side copies of an annotation (on a stream)
DEVICE_ANNOTATION = "gpu_user_annotation"

STEP_COLUMNS = ("event", "name", "number", "start", "end", "process", "thread", "side")


def steps(trace: Trace, annotation: str = STEP_ANNOTATION) -> pd.DataFrame:
    """One row per instance of `annotation`: a slice named `annotation` or `annotation#N`
    ([`step_pattern`][jupyter_profview.kinds.step_pattern]; PyTorch's `ProfilerStep#12`).

    Columns:

    - `event` (int64): the slice's event id;
    - `name` (str) and `number` (Int64: the `N` of `name#N`, <NA> for the bare name);
    - `start`, `end` (int64, the trace's `time_unit`): the slice, `end = start + dur`;
    - `process`, `thread` (str): where it was recorded;
    - `side` (str): `cpu` for the annotation on a CPU thread, `gpu` for its device-side copies
      (Kineto's `gpu_user_annotation` on a stream, or any instance on a device process).

    Sorted by `side` (`cpu` first), then `start`, then longest first.  Instants are not steps.
    Computed once per Trace (see [`cache`][jupyter_profview.derived.cache]); don't edit the
    result in place.
    """
    return cached(trace, ("steps", annotation), lambda: _steps(trace, annotation))


def cpu_steps(trace: Trace, annotation: str = STEP_ANNOTATION) -> pd.DataFrame:
    """The `side == "cpu"` rows of [`steps`][jupyter_profview.derived.step_instances.steps]."""
    table = steps(trace, annotation)
    return table[table["side"].to_numpy() == "cpu"].reset_index(drop=True)


def _steps(trace: Trace, annotation: str) -> pd.DataFrame:
    return instances(trace.events, annotation, devices=gpu_labels(trace))


def step_mask(events: pd.DataFrame, annotation: str = STEP_ANNOTATION, *,
              devices: Collection[str] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Over the rows of any events-like frame (`name`; `kind`, `category`, `process` where it
    has them: a rank set's events, a Parquet cache's rows): which rows are instances of
    `annotation`, and which of those are device-side copies (category `gpu_user_annotation`, or
    a `process` among `devices`).  [`steps`][jupyter_profview.derived.step_instances.steps] is this over
    `trace.events`; use it where there is no Trace."""
    n = len(events)
    if n == 0:
        return np.zeros(0, bool), np.zeros(0, bool)
    pattern = step_pattern(annotation)
    hit = match(events["name"], lambda name: pattern.match(name) is not None)
    if "kind" in events.columns:
        hit &= among(events["kind"], ("slice",))
    gpu = np.zeros(n, bool)
    if "category" in events.columns:
        gpu |= among(events["category"], (DEVICE_ANNOTATION,))
    if devices and "process" in events.columns:
        gpu |= among(events["process"], frozenset(devices))
    return hit, hit & gpu


def instances(events: pd.DataFrame, annotation: str = STEP_ANNOTATION, *,
              devices: Collection[str] = ()) -> pd.DataFrame:
    """The table of [`steps`][jupyter_profview.derived.step_instances.steps] for any events-like frame
    ([`step_mask`][jupyter_profview.derived.step_instances.step_mask]; its index is the `event` id;
    `process` / `thread` empty where it has none)."""
    hit, gpu = step_mask(events, annotation, devices=devices)
    rows = events[hit]
    pattern = step_pattern(annotation)
    names = rows["name"].astype(str).to_numpy(object)
    numbers = [pattern.match(n).group(1) for n in names]  # type: ignore[union-attr]
    start = rows["start"].to_numpy(np.int64)

    def text(column: str) -> np.ndarray:
        if column not in rows.columns:
            return np.full(len(rows), "", object)
        return rows[column].astype(str).to_numpy(object)

    table = pd.DataFrame({
        "event": rows.index.to_numpy(np.int64),
        "name": names,
        "number": pd.array([None if n is None else int(n) for n in numbers], dtype="Int64"),
        "start": start,
        "end": start + rows["dur"].to_numpy(np.int64),
        "process": text("process"),
        "thread": text("thread"),
        "side": np.where(gpu[hit], "gpu", "cpu").astype(object),
    }, columns=list(STEP_COLUMNS))
    order = np.lexsort((-(table["end"] - table["start"]).to_numpy(), table["start"].to_numpy(),
                        table["side"].to_numpy() == "gpu"))
    return table.iloc[order].reset_index(drop=True)


def last_step_start(trace: Trace, annotation: str = STEP_ANNOTATION) -> int | None:
    """Start of the last CPU-side instance of `annotation` when there are two or more (HTA's cut
    of an incomplete last iteration, `include_last_profiler_step=False`), else None.

    HTA takes the latest start of any event named like a step that it files as a CPU event,
    which includes a device-side copy (`gpu_user_annotation`: a stream but no correlation); where
    the last step's device copy starts after its CPU slice, HTA's cut is that later start.  Here
    the cut is the CPU slice's, the start of the iteration the host began."""
    table = cpu_steps(trace, annotation)
    return int(table["start"].max()) if len(table) >= 2 else None
