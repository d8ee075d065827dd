"""Pipeline parallelism: how much of each step every stage waits, and which stage holds it back.

`torch.distributed.pipelining` records each action of its schedule as a range (the names:
[`pipeline_action`][jupyter_profview.kinds.pipeline_action]): `PP:<stage><kind><microbatch>` in
the runtime schedules (`ScheduleInterleaved1F1B`, the zero-bubble ones), `Forward <mb>` /
`Backward <mb>` in `ScheduleGPipe`; `Schedule1F1B` records none (each rank is then one stage).
[`pipeline_bubbles`][jupyter_profview.analysis.pipeline.pipeline_bubbles] reads them.

Definitions (times in ns):

- the *pipeline thread* of a rank: the thread holding its pipeline actions (the most of them),
  else the thread of its first CPU-side step; the *step*: each `ProfilerStep#N` on that thread
  (the one definition of a step, [`steps`][jupyter_profview.derived.steps]);
- *compute*: the length of the union of the `cpu_op` slices of the pipeline thread (and, on GPU
  traces, the computation kernels launched from it, `trace.launches`) inside the step, leaving
  out the communication calls ([`is_communication`][jupyter_profview.kinds.is_communication]
  among the `cpu_op` slices: `c10d::*`, `record_param_comms`) and everything inside them: that
  time is waiting.  The `gloo:*` / `nccl:*` annotations are not left out on their own: torch 2.13
  records a point-to-point one on the calling thread from the moment its work starts to the
  moment it completes (a `gloo:send` outlives its 3 ms `c10d::send` by 28 ms while the thread
  goes on computing), so its time is not the thread waiting; where the thread does wait inside
  one, the `c10d::` call around it is left out, and the wait for a posted receive is time with no
  op at all (the start of a `PP:2F0` before its first op), which is never compute;
- *bubble* = step `dur` - `compute`; `share` = `bubble` / `dur`;
- a *stage's compute*: the same, inside the ranges of that stage's compute actions (`F`, `I`,
  `B`, `W`, DualPipeV's `OVERLAP_F_B`, counted to its first sub-action's stage). GPipe's ranges
  name no stage: the rank's one stage takes the rank's number (stage index = rank, as with one
  stage per rank); a rank without labels is its own stage, with the rank's compute;
- the *expected share* of the schedule: (p - 1) / (v m + p - 1) for p ranks (a TraceSet: its
  ranks; one trace: its `distributedInfo` world size), v stages per rank and m microbatches (the
  largest microbatch number of a forward action + 1); None where the trace does not say m.

How this differs from other numbers: an *idle-gap* count (HTA's idle time, the gaps between a
thread's or a GPU's slices) misses the waiting the host does inside a blocking receive, which is
a busy slice (`c10d::recv_`) and no gap; here communication counts as waiting wherever it
happens, and a gap with no op counts too.  The *bubble / useful work* ratio of the pipeline
papers (GPipe's (p - 1) / m) divides by the compute, not by the step, so it grows past 1; `share`
divides by the step and stays in [0, 1], the form of `expected_share`.

One trace answers for its rank; a TraceSet (`profview.load_many`) for every rank, with `start`
on the set's common clock.  The TraceSet is taken to be one pipeline (its ranks are p).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd

from ..derived import covered, difference, instances, intersection, union
from ..errors import ProfviewError
from ..kinds import (
    PIPELINE_COMPUTE_KINDS,
    STEP_ANNOTATION,
    code_mask,
    is_communication,
    pipeline_action,
    step_pattern,
)
from ..model import Trace
from .columns import active_gpus, among, devices_of, thread_keys
from .traceset import is_traceset

if TYPE_CHECKING:
    from ..ranks.traceset import TraceSet

__all__ = ["PipelineBubbles", "pipeline_bubbles"]

RANK_COLUMNS = ("step", "rank", "start", "dur", "compute", "bubble", "share")
STAGE_COLUMNS = ("step", "rank", "stage", "actions", "compute")
ACTION_COLUMNS = ("step", "rank", "stage", "kind", "microbatch", "event", "start", "end", "compute")
#: the events columns the analysis reads (a TraceSet reads only these from its cache)
EVENT_COLUMNS = ["id", "name", "category", "kind", "process", "thread", "start", "dur"]
TEXT_COLUMNS = ("name", "category", "kind", "process", "thread")


@dataclass(frozen=True)
class PipelineBubbles:
    """[`pipeline_bubbles`][jupyter_profview.analysis.pipeline.pipeline_bubbles]'s answer (module
    docstring for the definitions; times in ns).

    - `ranks`: one row per (step, rank): `step` (`ProfilerStep#N`), `rank`, `start`, `dur`,
      `compute`, `bubble`, `share`;
    - `stages`: one row per (step, rank, stage): `actions` (its compute actions in the step),
      `compute`;
    - `actions`: one row per pipeline action in a step: `step`, `rank`, `stage`, `kind` (`F`,
      `B`, `SEND_F`, ...), `microbatch` (<NA>: none), `event` (its event id on the rank),
      `start`, `end`, `compute` (of the compute kinds; the others 0);
    - `microbatches` (m), `stages_per_rank` (v), `pipeline_size` (p), `expected_share`;
    - `slowest`: per step, the stage with the most compute: `step`, `stage`, `rank`, `compute`;
    - `stage_runs(stage)`: the intervals in which a stage computes (what the widget's stage lanes
      draw; their length in each step is the stage's `compute` in `stages`).
    """

    ranks: pd.DataFrame
    stages: pd.DataFrame
    actions: pd.DataFrame
    microbatches: int | None
    stages_per_rank: int
    pipeline_size: int
    expected_share: float | None
    slowest: pd.DataFrame
    #: rank -> (its compute, the shift of its clock to the set's): what `stage_runs` cuts
    busy: Mapping[int, tuple[_Busy, int]] = field(default_factory=dict, repr=False, compare=False)

    def stage_runs(self, stage: int) -> tuple[np.ndarray, np.ndarray]:
        """The time stage `stage` computes, as sorted disjoint intervals `(start, end)` on the
        set's clock (ns): the rank's compute (module doc) inside the stage's compute actions,
        each clipped to its step; a rank without labelled actions is its own stage (its compute
        inside its steps).  Their length inside a step is the stage's `compute` in `stages`."""
        rows = self.stages[self.stages["stage"].to_numpy() == stage]
        if len(rows) == 0:
            raise ProfviewError(f"no pipeline stage {stage}",
                                expected=f"one of {sorted(set(self.stages['stage'].tolist()))}")
        rank = int(rows["rank"].iloc[0])
        busy, shift = self.busy[rank]
        steps = self.ranks[self.ranks["rank"].to_numpy() == rank]
        s0 = steps["start"].to_numpy(np.int64)
        s1 = s0 + steps["dur"].to_numpy(np.int64)
        a = self.actions
        a = a[(a["stage"].to_numpy() == stage) & a["kind"].isin(PIPELINE_COMPUTE_KINDS).to_numpy(bool)]
        if len(a):
            lo = a["start"].to_numpy(np.int64)
            k = np.clip(np.searchsorted(s0, lo, side="right") - 1, 0, len(s0) - 1)
            windows = union(lo, np.minimum(a["end"].to_numpy(np.int64), s1[k]))
        else:
            windows = union(s0, s1)
        runs = difference(busy.plus, busy.minus)
        return intersection((runs[0] + shift, runs[1] + shift), windows)

    @property
    def labelled(self) -> bool:
        """Whether the trace names its pipeline actions (not `Schedule1F1B`)."""
        return len(self.actions) > 0

    def _repr_html_(self) -> str:
        m = "?" if self.microbatches is None else self.microbatches
        expected = "unknown" if self.expected_share is None else f"{100 * self.expected_share:.1f} %"
        return (f"<b>PipelineBubbles</b>: p={self.pipeline_size}, v={self.stages_per_rank}, m={m}, "
                f"expected bubble share {expected}" + self.ranks._repr_html_())  # type: ignore[operator]


def _codes(series: pd.Series) -> tuple[np.ndarray, list[str]]:
    cat = series if isinstance(series.dtype, pd.CategoricalDtype) else series.astype("category")
    return cat.cat.codes.to_numpy().astype(np.int64), [str(c) for c in cat.cat.categories]


@dataclass(frozen=True)
class Coded:
    """A text column as codes: `values[codes[i]]` is row i's text (`codes[i] == -1`: missing)."""

    codes: np.ndarray  # int, -1: missing
    values: list[str]

    def where(self, predicate: Callable[[str], object]) -> np.ndarray:
        """Rows whose value satisfies `predicate` (`kinds.code_mask`: once per value)."""
        return code_mask(self.values, self.codes, predicate)

    def among(self, names: tuple[str, ...]) -> np.ndarray:
        """Rows whose value is one of `names`."""
        return self.where(names.__contains__)


@dataclass(frozen=True)
class _Events:
    """One rank's events as arrays (the columns the analysis reads): `ids` (event id per row),
    `name` (coded), `slice` / `cpu_op` (kind / category masks), `high` / `low` (the two halves
    of the thread key, `derived.masks.thread_keys`' rule: `key(rows)`; kept apart so that the
    rows of one thread are found without building a key per row), `start`, `end` (int64),
    `steps` (`derived.instances`)."""

    ids: np.ndarray
    name: Coded
    slice: np.ndarray
    cpu_op: np.ndarray
    high: np.ndarray
    low: np.ndarray
    start: np.ndarray
    end: np.ndarray
    steps: pd.DataFrame

    def key(self, rows: np.ndarray) -> np.ndarray:
        """The thread key (int64) of each row in `rows`."""
        return (self.high[rows].astype(np.int64) << 32) | (self.low[rows].astype(np.int64) & 0xFFFFFFFF)

    def on_thread(self, key: int) -> np.ndarray:
        """Rows whose thread key is `key` (`high`, `low`: codes within int32)."""
        low = key & 0xFFFFFFFF
        return (self.high == key >> 32) & (self.low == (low - (1 << 32) if low >= 1 << 31 else low))

    def rows(self, ids: np.ndarray) -> np.ndarray:
        """The row of each event id (-1: none)."""
        ids = np.asarray(ids, np.int64)
        if len(self.ids) and bool(np.all(self.ids[1:] > self.ids[:-1])):  # sorted ids: no hash table
            at = np.minimum(np.searchsorted(self.ids, ids), len(self.ids) - 1)
            return np.where(self.ids[at] == ids, at, -1)
        return pd.Index(self.ids).get_indexer(pd.Index(ids))


def _frame_events(events: pd.DataFrame, devices: list[str]) -> _Events:
    """`_Events` of a Trace's events frame."""
    codes, names = _codes(events["name"])
    start = events["start"].to_numpy(np.int64)
    return _Events(events.index.to_numpy(np.int64), Coded(codes, names), among(events["kind"], ("slice",)),
                   among(events["category"], ("cpu_op",)), *_halves(thread_keys(events)), start,
                   start + events["dur"].to_numpy(np.int64), instances(events, devices=devices))


def _halves(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`keys` (int64) as `_Events`' `high`, `low` (`low` sign-extended: the int32 it holds)."""
    return keys >> 32, (keys & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _parsed_actions(ev: _Events) -> pd.DataFrame:
    """The slices of `ev` that are pipeline actions, with `stage` (-1: unnamed), `kind`,
    `microbatch` (-1: none), `key` (thread key), `start`, `end`; index: event id."""
    parsed = [pipeline_action(n) for n in ev.name.values]
    actions = {n for n, p in zip(ev.name.values, parsed, strict=True) if p is not None}
    hit = ev.name.where(actions.__contains__) & ev.slice
    rows = np.flatnonzero(hit)
    table = np.array([(-1, "", -1) if p is None else
                      (-1 if p[0] is None else p[0], p[1], -1 if p[2] is None else p[2]) for p in parsed]
                     + [(-1, "", -1)], dtype=object)[ev.name.codes[rows]]
    return pd.DataFrame({
        "stage": table[:, 0].astype(np.int64) if len(rows) else np.zeros(0, np.int64),
        "kind": table[:, 1].astype(str) if len(rows) else np.zeros(0, str),
        "microbatch": table[:, 2].astype(np.int64) if len(rows) else np.zeros(0, np.int64),
        "start": ev.start[rows], "end": ev.end[rows], "key": ev.key(rows),
    }, index=pd.Index(ev.ids[rows]))


def _rank_tables(ev: _Events, launches: pd.DataFrame | None, rank: int
                 ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, _Busy]:
    """The `ranks`, `stages` and `actions` rows of one rank (its own clock), and its compute."""
    actions = _parsed_actions(ev)
    steps = ev.steps
    steps = steps[(steps["side"] == "cpu").to_numpy(bool) & steps["number"].notna().to_numpy(bool)]
    if len(actions):
        values, counts = np.unique(actions["key"].to_numpy(), return_counts=True)
        thread = int(values[np.argmax(counts)])
    elif len(steps):
        thread = int(ev.key(ev.rows(np.array([int(steps["event"].iloc[0])])))[0])
    else:
        thread = -1
    mine = ev.on_thread(thread)
    step_rows = ev.rows(steps["event"].to_numpy(np.int64))
    steps = steps[mine[step_rows]].sort_values("start", kind="stable").reset_index(drop=True)
    actions = actions[actions["key"].to_numpy() == thread]
    start, end = ev.start, ev.end
    ops = ev.slice & mine & ev.cpu_op
    # the calls the thread waits in (module doc)
    comm = ops & ev.name.where(is_communication)
    busy = _Busy(union(start[ops], end[ops]), union(start[comm], end[comm]))
    if launches is not None and len(launches):
        busy = _Busy(_with_kernels(difference(busy.plus, busy.minus), ev, launches, mine),
                     (busy.minus[0][:0], busy.minus[1][:0]))
    s0, s1 = steps["start"].to_numpy(np.int64), steps["end"].to_numpy(np.int64)
    compute = busy.within(s0, s1)
    ranks = pd.DataFrame({"step": steps["name"].astype(str).to_numpy(), "rank": np.int64(rank), "start": s0,
                          "dur": s1 - s0, "compute": compute})
    # each action to the step it starts in
    a0 = actions["start"].to_numpy(np.int64)
    k = np.searchsorted(s0, a0, side="right") - 1
    inside = (k >= 0) & (a0 < s1[np.maximum(k, 0)]) if len(s0) else np.zeros(len(a0), bool)
    actions = actions[inside].assign(step=ranks["step"].to_numpy()[k[inside]])
    is_compute = actions["kind"].isin(PIPELINE_COMPUTE_KINDS).to_numpy(bool)
    actions["stage"] = np.where(actions["stage"].to_numpy() < 0, rank, actions["stage"].to_numpy())
    a_end = np.minimum(actions["end"].to_numpy(np.int64), s1[k[inside]])  # clipped to its step
    actions["compute"] = np.where(is_compute, busy.within(actions["start"].to_numpy(np.int64), a_end), 0)
    table = pd.DataFrame({
        "step": actions["step"].to_numpy(object), "rank": np.int64(rank),
        "stage": actions["stage"].to_numpy(np.int64), "kind": actions["kind"].to_numpy(object),
        "microbatch": pd.array(actions["microbatch"].to_numpy(np.int64), dtype="Int64"),
        "event": actions.index.to_numpy(np.int64), "start": actions["start"].to_numpy(np.int64),
        "end": actions["end"].to_numpy(np.int64), "compute": actions["compute"].to_numpy(np.int64),
    }, columns=list(ACTION_COLUMNS))
    table.loc[table["microbatch"] < 0, "microbatch"] = pd.NA
    return ranks, _stage_rows(ranks, table[is_compute], busy, rank), table, busy


def _stage_rows(ranks: pd.DataFrame, compute_actions: pd.DataFrame, busy: _Busy, rank: int) -> pd.DataFrame:
    """Per (step, stage) of one rank: the compute inside the union of the stage's compute actions
    (ranges of one stage that nest or overlap count once); a rank without actions: one stage."""
    if len(compute_actions) == 0:
        return pd.DataFrame({"step": ranks["step"], "rank": np.int64(rank), "stage": np.int64(rank),
                             "actions": np.int64(0), "compute": ranks["compute"].to_numpy(np.int64)})
    frames = []
    s0 = ranks["start"].to_numpy(np.int64)
    s1 = s0 + ranks["dur"].to_numpy(np.int64)
    steps = ranks["step"].to_numpy(object)
    for stage, group in compute_actions.groupby("stage", sort=True):
        lo, hi = union(group["start"].to_numpy(np.int64), group["end"].to_numpy(np.int64))
        k = np.clip(np.searchsorted(s0, lo, side="right") - 1, 0, len(s0) - 1)  # the step each starts in
        value = busy.within(lo, np.minimum(hi, s1[k]))
        compute = np.bincount(k, weights=value, minlength=len(s0)).astype(np.int64)
        count = group.groupby("step", sort=False).size()
        frames.append(pd.DataFrame({"step": steps, "rank": np.int64(rank), "stage": np.int64(int(str(stage))),
                                    "actions": [int(count.get(st, 0)) for st in steps], "compute": compute}))
    return pd.concat(frames, ignore_index=True).astype({"actions": np.int64})


@dataclass(frozen=True)
class _Busy:
    """The compute of the pipeline thread: the time in `plus` and not in `minus` (`minus` lies
    inside `plus`: the communication calls are among the ops), both sorted disjoint intervals."""

    plus: tuple[np.ndarray, np.ndarray]
    minus: tuple[np.ndarray, np.ndarray]

    def within(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Compute inside each `[start[i], end[i])` (int64)."""
        return covered(self.plus, start, end) - covered(self.minus, start, end)


def _with_kernels(busy: tuple[np.ndarray, np.ndarray], ev: _Events, launches: pd.DataFrame,
                  mine: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`busy` plus the computation kernels (`launches["type"] == "kernel"`) launched from the
    pipeline thread."""
    kernels = launches[(launches["type"].astype(str) == "kernel").to_numpy(bool) & launches["launch"].notna()]
    at = ev.rows(kernels["launch"].to_numpy(np.int64))
    kernels = kernels[(at >= 0) & mine[np.maximum(at, 0)]]
    rows = ev.rows(kernels["kernel"].to_numpy(np.int64))
    rows = rows[rows >= 0]
    return union(np.concatenate([busy[0], ev.start[rows]]), np.concatenate([busy[1], ev.end[rows]]))


def _rank_of(trace: Trace) -> int:
    return int(trace.info.distributed_info.get("rank", 0) or 0)


def pipeline_bubbles(source: Trace | TraceSet) -> PipelineBubbles:
    """Per step and rank of a pipeline-parallel run: the step, its compute and its bubble; per
    stage its compute; the schedule's expected bubble share and the slowest stage (module
    docstring for every definition; [`PipelineBubbles`][jupyter_profview.analysis.pipeline.PipelineBubbles]
    for the columns).

    ```python
    ts = profview.load_many("tests/data/pipeline/interleaved")   # a recorded run, 2 ranks
    pp = analysis.pipeline_bubbles(ts)
    pp.ranks            # bubble per (step, rank)
    pp.slowest          # the stage that holds each step back
    ```
    """
    parts: list[tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, _Busy]] = []
    shifts: dict[int, int] = {}  # rank -> the shift of its clock to the set's
    if is_traceset(source):
        parts = [_rank_of_set(source, r) for r in source.ranks]  # one rank in RAM at a time
        shifts = {int(r): int(source.offsets[r]) for r in source.ranks}
        p = len(source.ranks)
    elif isinstance(source, Trace):
        if source.time_unit != "ns":
            raise ProfviewError("pipeline_bubbles needs a trace with a clock",
                                source=source.info.source or None,
                                expected=f"time_unit 'ns', not {source.time_unit!r}")
        gpus = active_gpus(source) if len(source.launches) else []
        parts.append(_rank_tables(_frame_events(source.events, gpus), source.launches, _rank_of(source)))
        shifts = {_rank_of(source): 0}
        p = int(source.info.distributed_info.get("world_size", 1) or 1)
    else:
        raise ProfviewError(f"pipeline_bubbles needs a TraceSet or a Trace, not {type(source).__name__}",
                            expected="profview.load_many(...) or profview.load(...)")
    ranks = pd.concat([x[0] for x in parts], ignore_index=True)
    stages = pd.concat([x[1] for x in parts], ignore_index=True)
    actions = pd.concat([x[2] for x in parts], ignore_index=True)
    ranks["bubble"] = ranks["dur"] - ranks["compute"]
    dur = ranks["dur"].to_numpy(np.float64)
    ranks["share"] = np.divide(ranks["bubble"].to_numpy(np.float64), dur, out=np.zeros(len(ranks)),
                               where=dur > 0)
    forward = actions[actions["kind"].isin(("F", "OVERLAP_F_B")).to_numpy(bool)]["microbatch"].dropna()
    m = int(forward.max()) + 1 if len(forward) else None
    labelled = actions[actions["kind"].isin(PIPELINE_COMPUTE_KINDS).to_numpy(bool)]
    v = int(labelled.groupby("rank")["stage"].nunique().max()) if len(labelled) else 1
    expected = (p - 1) / (v * m + p - 1) if m is not None and v * m + p - 1 > 0 else None
    return PipelineBubbles(_order(ranks, RANK_COLUMNS, ["step", "rank"]),
                           _order(stages, STAGE_COLUMNS, ["step", "stage"]),
                           _order(actions, ACTION_COLUMNS, ["rank", "start"]),
                           m, v, p, expected, _slowest(stages),
                           {r: (x[3], shift) for x, (r, shift) in zip(parts, shifts.items(), strict=True)})


def _order(frame: pd.DataFrame, columns: tuple[str, ...], by: list[str]) -> pd.DataFrame:
    frame = frame[list(columns)]
    if "step" in by:  # ProfilerStep#10 after #9
        number = frame["step"].astype(str).str.extract(r"#(\d+)$")[0].astype(float).fillna(-1)
        order = np.lexsort([frame[c].to_numpy() for c in reversed(by[1:])] + [number.to_numpy()])
        return frame.iloc[order].reset_index(drop=True)
    return frame.sort_values(by, kind="stable").reset_index(drop=True)


def _slowest(stages: pd.DataFrame) -> pd.DataFrame:
    if len(stages) == 0:
        return pd.DataFrame({"step": [], "stage": np.zeros(0, np.int64), "rank": np.zeros(0, np.int64),
                             "compute": np.zeros(0, np.int64)})
    top = stages.sort_values(["compute", "stage"], ascending=[False, True], kind="stable")
    top = top.drop_duplicates("step")[["step", "stage", "rank", "compute"]]
    return _order(top, ("step", "stage", "rank", "compute"), ["step"])


def _rank_of_set(ts: TraceSet, rank: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, _Busy]:
    """`_rank_tables` of one rank of a TraceSet, its times on the set's clock."""
    events, launches = _cached_rank(ts, rank)
    ranks, stages, actions, busy = _rank_tables(events, launches, rank)
    shift = ts.offsets[rank]
    ranks["start"] += shift
    actions["start"] += shift
    actions["end"] += shift
    return ranks, stages, actions, busy


def _cached_rank(ts: TraceSet, rank: int) -> tuple[_Events, pd.DataFrame | None]:
    """A rank's events (the columns read here only, as arrays: no DataFrame of 1M rows) and
    launches, from its cache entry."""
    launches = ts.rank_table(rank, "launches", ["kernel", "launch", "type", "gpu"])
    devices = devices_of(launches["gpu"]) if launches is not None else []
    cols = ts.rank_arrays(rank, "events", EVENT_COLUMNS, text=TEXT_COLUMNS)
    name, category, kind, process, thread = (Coded(*cast(tuple[np.ndarray, list[str]], cols[c]))
                                             for c in TEXT_COLUMNS)
    ids = np.asarray(cols["id"], np.int64)
    start = np.asarray(cols["start"], np.int64)
    end = start + np.asarray(cols["dur"], np.int64)
    # the step rule (derived.instances) over the rows named like a step only
    pattern = step_pattern(STEP_ANNOTATION)
    rows = np.flatnonzero(name.where(pattern.match))

    def column(coded: Coded) -> pd.Categorical:
        return pd.Categorical.from_codes(coded.codes[rows], categories=pd.Index(coded.values, dtype=object))

    candidates = pd.DataFrame({"name": column(name), "category": column(category), "kind": column(kind),
                               "process": column(process), "thread": column(thread),
                               "start": start[rows], "dur": end[rows] - start[rows]},
                              index=pd.Index(ids[rows]))
    return _Events(ids, name, kind.among(("slice",)), category.among(("cpu_op",)), process.codes,
                   thread.codes, start, end, instances(candidates, devices=devices)), launches
