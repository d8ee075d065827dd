"""Tell me what's wrong: findings with the time at stake, their evidence and what to try.

`advise(trace)` runs a fixed set of rules over one trace (or each rank of a TraceSet, plus the
cross-rank rules) and returns an [Advice][jupyter_profview.analysis.advice.Advice]: one row per
finding, biggest first, each with the event ids that are its evidence, so that the widget can
highlight them on the timeline.

Window
:   From the start of the first instance of `annotation` on a CPU thread to the end of its last
    one; the whole trace when there is none.  "In the window" means overlapping it, with times
    clipped to it.

Time at stake, share, severity
:   Each rule says how much time its finding is about (`time`, ns); `share` is `time` as % of the
    window.  A rule emits a finding only when its `time` is at least 1 % of the window (the step
    and straggler rules have their own conditions, below).  `severity` is `high` from 10 %,
    `medium` from 3 %, else `low`.

Activities
:   The device-side kernels, memcpy, memset and DMA transfers of `trace.launches`; their kind
    (computation, communication, memory, dma) is the trace's own (`trace.launches["type"]`,
    decided once by the name rules of `jupyter_profview.kinds`).

The rules (each one's docstring in `rules.py` gives its exact definition)
:   - `pageable_memcpy`: memcpy activities whose name contains `Pageable`;
    - `host_sync`: blocking runtime calls (`cudaDeviceSynchronize`, `cudaStreamSynchronize`,
      `cudaEventSynchronize`, the synchronous `cudaMemcpy`, their `hip` twins);
    - `gpu_idle`: per GPU, the window minus the union of its activities, split by what the CPU
      did meanwhile (sync call, DataLoader, other); `Advice.idle_intervals(k)` lists the intervals;
    - `tiny_kernels`: launch calls longer than the total duration of the kernels they launched;
    - `dataloader`: the union of `DataLoader` slices per thread;
    - `fp32_matmul`: FP32 GEMMs on CUDA GPUs of compute capability >= 8.0;
    - `exposed_communication`: per GPU, communication with no computation beside it;
    - `out_of_memory`: the `oom` entries of a CUDA memory snapshot, explained by
      `analysis.allocator.oom` (fragmentation or capacity, and what to try);
    - `step_outliers`: steps more than 20 % longer than the median step (3 or more steps);
    - `straggler` (TraceSet): the rank the others wait for in the collectives;
    - `pipeline_bubble` (pipeline runs): per rank, the time its steps wait in the pipeline's
      bubbles, the slowest stage, what to change (`advice/pipeline.py`).

Where a rule needs something the trace does not have (no `deviceProperties`, ROCm devices for
the TF32 rule), it says so in `Advice.skipped` instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ...errors import ProfviewError
from ...kinds import STEP_ANNOTATION
from ...model import Trace
from ...numbers import format_duration, share_text
from ..traceset import is_traceset
from .facts import Facts, annotation_steps
from .oom_rule import out_of_memory
from .pipeline import pipeline_bubble
from .rules import RULES, Finding, Skip, step_outliers
from .straggler import straggler

if TYPE_CHECKING:
    from ...ranks.traceset import TraceSet

__all__ = ["Advice", "advise", "FINDING_COLUMNS"]

FINDING_COLUMNS = ("rule", "severity", "time", "share", "count", "events", "device", "message", "fix")
#: a finding needs at least this share of the window (%), except step_outliers and straggler
MIN_SHARE = 1.0


def severity(share: float) -> str:
    """``high`` from 10 % of the window, ``medium`` from 3 %, else ``low``."""
    return "high" if share >= 10 else "medium" if share >= 3 else "low"


@dataclass(frozen=True)
class Advice:
    """What [advise][jupyter_profview.analysis.advice.advise] found.

    `findings`: one row per finding, sorted by `time` descending, columns `rule`, `severity`,
    `time` (ns at stake), `share` (% of the window), `count` (evidence events), `events` (list of
    event ids in `trace.events`), `device`, `message`, `fix` (and `rank` first for a TraceSet).
    `skipped`: `rule`, `why` (and `rank`).  `window`: (start, end) in ns on the trace's clock (a
    TraceSet: the set's common clock, first start to last end over the ranks)."""

    findings: pd.DataFrame
    skipped: pd.DataFrame
    window: tuple[int, int]
    details: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict, repr=False)

    def idle_intervals(self, k: int) -> pd.DataFrame:
        """The idle intervals of finding `k` (a `gpu_idle` row of `findings`): when its GPU runs
        nothing in the window, ``start``, ``end``, ``dur`` in ns on the trace's clock (a rank's
        own clock for a TraceSet); they sum to the finding's `time`.  Empty for other rules."""
        row = self.findings.iloc[k]
        rank = int(row["rank"]) if "rank" in self.findings.columns else None
        idle = self.details.get((rank, str(row["rule"]), str(row["device"])), {}).get("idle_intervals")
        s, e = idle if idle is not None else (np.zeros(0, np.int64), np.zeros(0, np.int64))
        return pd.DataFrame({"start": np.asarray(s, np.int64), "end": np.asarray(e, np.int64),
                             "dur": np.asarray(e, np.int64) - np.asarray(s, np.int64)})

    def explain(self, limit: int = 5) -> str:
        """The findings in a few sentences, biggest first."""
        if len(self.findings) == 0:
            span = format_duration(self.window[1] - self.window[0])
            return f"No finding takes 1 % or more of the {span} window."
        lines = []
        for row in self.findings.head(limit).to_dict("records"):
            where = f"rank {row['rank']}: " if "rank" in row else ""
            time, share = format_duration(float(row["time"])), share_text(float(row["share"]))
            lines.append(f"- {where}[{row['severity']}] {row['rule']}, {time} ({share} of the window): "
                         f"{row['message']} Try: {row['fix']}")
        more = len(self.findings) - limit
        if more > 0:
            lines.append(f"- ... and {more} more (Advice.findings).")
        return "\n".join(lines)


def _frame(rows: list[Finding], span: int, rank: int | None = None) -> pd.DataFrame:
    table = pd.DataFrame(rows or None, columns=[*FINDING_COLUMNS])
    if len(rows):
        table["time"] = table["time"].astype(np.int64)
        table["share"] = 100.0 * table["time"] / span if span > 0 else 0.0
        table["count"] = table["events"].map(len).astype(np.int64)
        table["severity"] = table["share"].map(severity)
    else:
        table = table.astype({"time": np.int64, "share": np.float64, "count": np.int64})
    if rank is not None:
        table.insert(0, "rank", np.int64(rank))
    return table


def _window(trace: Trace, annotation: str | None) -> tuple[tuple[int, int], pd.DataFrame]:
    steps = annotation_steps(trace, annotation) if annotation else annotation_steps(trace, "\0")[:0]
    if len(steps):
        return (int(steps["start"].min()), int(steps["end"].max())), steps
    ev = trace.events
    if len(ev) == 0:
        return (0, 0), steps
    start = ev["start"].to_numpy(np.int64)
    return (int(start.min()), int((start + ev["dur"].to_numpy(np.int64)).max())), steps


def _run_rules(trace: Trace, window: tuple[int, int], shared: dict[str, Any]
               ) -> tuple[list[Finding], list[tuple[str, str]]]:
    facts = Facts(trace, window, shared)
    found: list[Finding] = []
    skipped: list[tuple[str, str]] = []
    for name, rule in {**RULES, "out_of_memory": out_of_memory}.items():
        try:
            found += rule(facts)
        except Skip as why:
            skipped.append((name, str(why.args[0])))
    return found, skipped


def _advise_one(trace: Trace, annotation: str | None, rank: int | None = None) -> Advice:
    if trace.time_unit != "ns":  # an execution order, not times: no rule has a time at stake
        why = f"the trace has no clock (time_unit {trace.time_unit!r}, not 'ns'): no time at stake"
        skip = pd.DataFrame([(name, why) for name in (*RULES, "step_outliers")], columns=["rule", "why"])
        if rank is not None:
            skip.insert(0, "rank", np.int64(rank))
        return Advice(_frame([], 0, rank), skip, (0, 0), {})
    window, steps = _window(trace, annotation)
    span = window[1] - window[0]
    shared: dict[str, Any] = {}
    found, skipped = _run_rules(trace, window, shared)
    found = [f for f in found if span > 0 and 100.0 * f["time"] / span >= MIN_SHARE]

    def rule_times(w: tuple[int, int]) -> dict[str, int]:
        inside: dict[str, int] = {}
        for f in _run_rules(trace, w, shared)[0]:
            inside[f["rule"]] = inside.get(f["rule"], 0) + int(f["time"])
        return inside

    found += step_outliers(Facts(trace, window, shared), steps, rule_times)
    found += pipeline_bubble(trace) if rank is None else []  # a TraceSet's: across its ranks, below
    details = {(rank, f["rule"], f["device"]): {k: v for k, v in f.items() if k not in FINDING_COLUMNS}
               for f in found}
    table = _frame(found, span, rank)
    table = table.sort_values("time", ascending=False, kind="stable").reset_index(drop=True)
    skip = pd.DataFrame(skipped, columns=["rule", "why"])
    if rank is not None:
        skip.insert(0, "rank", np.int64(rank))
    return Advice(table, skip, window, details)


def advise(trace: Trace | TraceSet, *, annotation: str | None = STEP_ANNOTATION,
           rank: int | None = None) -> Advice:
    """What is wrong with this trace, biggest first (see the module docstring for the window,
    the thresholds and the rules).

    `annotation`: the step annotation that sets the window (`None`: the whole trace).
    A TraceSet answers per rank (`rank` column, window per rank on the set's common clock) plus
    the cross-rank `straggler` rule; `rank=r` answers for that rank only.

    ```python
    advice = profview.advise(profview.example("gpu_trace"))
    advice.findings[["rule", "severity", "time", "share", "message"]]
    print(advice.explain())
    ```
    """
    if not is_traceset(trace):
        if rank is not None:
            raise ProfviewError("advise: rank= is for a TraceSet", expected="rank=None for one trace")
        return _advise_one(trace, annotation)
    ranks = list(trace.ranks)
    if rank is not None:
        if rank not in ranks:
            raise ProfviewError(f"advise: no rank {rank}", expected=f"one of {ranks}")
        ranks = [rank]
    parts = [_advise_one(trace[r], annotation, r) for r in ranks]
    findings = [p.findings for p in parts]
    lo = min((p.window[0] + trace.offsets[r] for p, r in zip(parts, ranks, strict=True)), default=0)
    hi = max((p.window[1] + trace.offsets[r] for p, r in zip(parts, ranks, strict=True)), default=0)
    details: dict[tuple[Any, ...], dict[str, Any]] = {}
    for p in parts:
        details.update(p.details)
    if rank is None and len(ranks) > 1:
        found = straggler(trace)
        if found:
            findings.append(_frame([found], hi - lo, rank=int(found["rank"])))
            details[(int(found["rank"]), "straggler", "")] = {k: v for k, v in found.items()
                                                            if k not in FINDING_COLUMNS}
    findings += [_frame([f], hi - lo, rank=f["rank"]) for f in pipeline_bubble(trace)] if rank is None else []
    table = pd.concat([f for f in findings if len(f)], ignore_index=True) if any(len(f) for f in findings) \
        else _frame([], 1, rank=0)[:0]
    table = table.sort_values("time", ascending=False, kind="stable").reset_index(drop=True)
    skipped = pd.concat([p.skipped for p in parts], ignore_index=True)
    return Advice(table, skipped, (int(lo), int(hi)), details)
