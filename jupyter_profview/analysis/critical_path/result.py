"""The result of [`critical_path`][jupyter_profview.analysis.critical_path.critical_path]: the path,
its breakdown, and what it means in plain words."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...numbers import format_duration, share_text


@dataclass(frozen=True)
class CriticalPath:
    """The critical path of one step (the definition:
    [`critical_path`][jupyter_profview.analysis.critical_path]).

    - `length`: ns, the total weight of the path;
    - `events`: one row per event on the path (`event` = row id in `trace.events`, `name`,
      `category`, `start`, `dur`, `on_path` = ns of the path spent in it), by `start`;
    - `edges`: every edge of the graph (`src`, `src_at`, `dst`, `dst_at` with `*_at` =
      `"start"`/`"end"` of the event, `src_time`, `dst_time`, `type`, `weight` ns, `event` = the
      event it is attributed to or -1, `bound` = its breakdown category, `on_path`, and `order`:
      the position along the path, -1 off it);
    - `breakdown`: `type`, `time` (ns), `share` (0-100) -- adds up to `length`;
    - `start`/`end`: the window (the annotation instance, or the whole trace);
    - `annotation`, `instance`, `rank`: what was asked; `unlinked`: device activities in the
      window that got neither a launch nor a gap nor a sync edge (HTA warns about the same);
      `graph_nodes`: 2 per event in the graph; `steps`: the annotation's instances
      ([`steps`][jupyter_profview.analysis.critical_path.steps]).
    """

    length: int
    events: pd.DataFrame
    edges: pd.DataFrame
    breakdown: pd.DataFrame
    start: int
    end: int
    annotation: str | None = None
    instance: int | None = None
    rank: int | None = None
    unlinked: int = 0
    graph_nodes: int = 0
    steps: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)

    @property
    def path(self) -> pd.DataFrame:
        """The edges on the path, in path order (the segments of the path)."""
        on = self.edges[self.edges["on_path"]]
        return on.sort_values("order")

    def waits_after(self) -> dict[int, int]:
        """Per event on the path: the ns of the path that are a gap after it (`kernel` edges:
        its stream waiting for the next activity) rather than its own running time."""
        path = self.path
        gaps = path[(path["type"].astype(str) == "kernel") & (path["event"] >= 0)]
        total = gaps.groupby("event")["weight"].sum()
        return dict(zip(total.index.astype(np.int64).tolist(), total.astype(np.int64).tolist(), strict=True))

    def explain(self, top: int = 3) -> str:
        """What bounds the step, in plain words: the path's length, its breakdown by share, the
        events that hold it longest, and where to act (durations by the package's number rule)."""
        what = "the whole trace" if self.annotation is None else (
            str(self.steps["name"].iloc[self.instance]) if len(self.steps) and self.instance is not None
            else f"{self.annotation} #{self.instance}")
        if self.length == 0:
            return f"The critical path of {what} is empty: no CPU op or GPU kernel starts inside it."
        b = self.breakdown.set_index("type")
        lead = str(b["time"].idxmax())
        span = self.end - self.start
        parts = [f"The critical path of {what} is {format_duration(self.length)} long "
                 f"(the {'trace' if self.annotation is None else 'step'} spans {format_duration(span)})."]
        shares = ", ".join(f"{_WORDS[k]} {share_text(b.loc[k, 'share'])}"
                           for k in b.index if b.loc[k, "time"] > 0)
        parts.append(f"It is {_BOUND_WORDS[lead]}: {shares}.")
        held = self.events[self.events["on_path"] > 0].sort_values("on_path", ascending=False).head(top)
        if len(held):
            waits = self.waits_after()
            names = "; ".join(_held(n, int(t), int(waits.get(e, 0))) for e, n, t in
                              zip(held["event"], held["name"].astype(str), held["on_path"], strict=True))
            parts.append(f"Longest on the path: {names}.")
        parts.append(_ADVICE[lead])
        return " ".join(parts)

    def __repr__(self) -> str:
        where = "whole trace" if self.annotation is None else f"{self.annotation} instance {self.instance}"
        top = self.breakdown.sort_values("time", ascending=False).head(1)
        bound = "" if self.length == 0 else f", mostly {top['type'].iloc[0]} ({top['share'].iloc[0]:.0f} %)"
        return (f"<CriticalPath {where}: {self.length / 1e6:.3f} ms over {len(self.events)} events, "
                f"{int(self.edges['on_path'].sum())} of {len(self.edges)} edges{bound}>")


def _held(name: str, on_path: int, gap: int) -> str:
    """One event of "Longest on the path": its own time apart from the gap charged to it."""
    if gap <= 0:
        return f"{_short(name)} ({format_duration(on_path)})"
    own = on_path - gap
    return (f"{_short(name)} ({format_duration(own)} itself, then {format_duration(gap)} of its stream "
            f"waiting for the next activity)")


def _short(name: str, limit: int = 60) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


_WORDS = {"cpu": "CPU ops", "kernel": "GPU kernels", "communication": "communication kernels",
          "launch": "launch delays", "kernel_gap": "gaps between kernels", "sync": "syncs"}
_BOUND_WORDS = {"cpu": "CPU-bound", "kernel": "GPU-compute-bound", "communication": "communication-bound",
                "launch": "bound by kernel launch delays", "kernel_gap": "bound by gaps between GPU kernels",
                "sync": "bound by synchronisation"}
_ADVICE = {
    "cpu": "The GPU waits for the CPU: make these ops cheaper or issue fewer of them (fused ops, "
           "torch.compile, CUDA graphs); faster kernels would not shorten this step.",
    "kernel": "The GPU computes all along the path: faster kernels shorten the step (lower precision, "
              "fused or better-shaped ops); CPU work is hidden behind them.",
    "communication": "Collectives hold the path: overlap them with compute (bucketing, async ops) or "
                     "send less.",
    "launch": "Kernels wait for their launches: many small kernels; fuse them or capture them in a "
              "CUDA graph.",
    "kernel_gap": "The GPU idles between kernels of a stream: look for syncs, host-side waits and "
                  "dependencies between streams before the gaps.",
    "sync": "Synchronisation holds the path.",
}
