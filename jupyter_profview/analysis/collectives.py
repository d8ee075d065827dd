"""How fast each collective moves its bytes: algorithm and bus bandwidth, per call and across ranks.

Definitions (as nccl-tests reports them, see its `PERFORMANCE.md`):

- a collective call and its `bytes`: see
  [`collective_args`][jupyter_profview.ranks.device_args.collective_args] (a communication
  kernel, else a CPU `nccl:*` / `gloo:*` / `record_param_comms` slice; `bytes` from `In msg
  nelems` / `Out msg nelems` × the size of `dtype`, else from `Input Dims` × `Input type`);
- `algbw` = `bytes` / `dur`, in GB/s (10^9 bytes per second: bytes per ns);
- `busbw` = `algbw` × a factor that makes the number comparable with the link's speed whatever
  the collective and the group size n: 2(n−1)/n for all_reduce, (n−1)/n for all_gather,
  reduce_scatter and all_to_all, 1 for broadcast, reduce, send and recv.  NaN for a call of
  another kind (barrier) or of unknown n.

One rank's `dur` includes the time it waited for the others to arrive.
[`collective_summary`][jupyter_profview.analysis.collectives.collective_summary] matches the k-th
call of each process group across the ranks of a TraceSet and takes the shortest `dur` as the
`latency` of the transfer itself (the rank that arrived last did not wait: TraceLens's NCCL
analyser does the same), and the bandwidths from it.

Files without sizes (no `record_shapes`, older torch) give rows with NaN `bytes` and bandwidths.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import ProfviewError
from ..model import Trace
from ..ranks.derived import call_numbers
from ..ranks.device_args import collective_args, empty_collectives
from .ranks import match_instances
from .traceset import concat, is_traceset

if TYPE_CHECKING:
    from ..ranks.traceset import TraceSet

__all__ = ["BUS_FACTOR", "CALL_COLUMNS", "CollectiveSummary", "bus_factor", "collective_bandwidth",
           "collective_summary"]

#: the columns of `collective_bandwidth`
CALL_COLUMNS = ("rank", "index", "event", "name", "op", "process_group", "group_size", "bytes", "start",
                "dur", "algbw", "busbw", "side")
#: busbw / algbw per collective kind, as a function of the group size n
BUS_FACTOR = {
    "allreduce": lambda n: 2.0 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0 + 0.0 * n,
    "reduce": lambda n: 1.0 + 0.0 * n,
    "send": lambda n: 1.0 + 0.0 * n,
    "recv": lambda n: 1.0 + 0.0 * n,
}


def bus_factor(op: np.ndarray, n: np.ndarray) -> np.ndarray:
    """`BUS_FACTOR` of each (op, group size); NaN for another op or an unknown size."""
    op = np.asarray(op, dtype=object)
    n = np.asarray(n, np.float64)
    out = np.full(len(op), np.nan)
    for kind, factor in BUS_FACTOR.items():
        hit = (op == kind) & (n > 0)
        out[hit] = factor(n[hit])
    return out


def collective_bandwidth(trace: Trace | TraceSet) -> pd.DataFrame:
    """One row per collective call, with its size and bandwidths (module doc).

    Columns: `rank` (a Trace: its `distributedInfo` rank, else 0), `index` (the call's number on that
    rank: the k-th of its process group and name, from 0 -- `ranks.derived.call_numbers`, as
    `collective_calls`' `seq`), `event` (its event id on the rank),
    `name`, `op` (`allreduce`, ..., `""`: the kind the factor is chosen by), `process_group`
    (`""` where unknown), `group_size`, `bytes`, `start`, `dur` (ns; a TraceSet: `start` on its
    common clock), `algbw`, `busbw` (GB/s), `side` (`device` for a kernel, `cpu` for a CPU slice).
    On a TraceSet a call of no known group size takes the set's number of ranks.

    Example (four CPU ranks of DistributedDataParallel over gloo, shipped with the package):

    ```python
    ts = profview.load_many(examples / "ddp_shapes")
    analysis.collective_bandwidth(ts).groupby("name")["busbw"].median()
    ```
    """
    if is_traceset(trace):
        frames = []
        for rank in trace.ranks:
            calls = _calls(trace, rank)
            calls["start"] = calls["start"] + trace.offsets[rank]
            frames.append(calls)
        out = concat(frames) if frames else _with_bandwidth(empty_collectives(), 0)
        missing = out["group_size"].isna().to_numpy()
        if missing.any():
            out.loc[missing, "group_size"] = float(len(trace))
            # a size that is one rank's share times the group size (gloo's all_gather)
            share = out["share_bytes"].to_numpy(np.float64)
            recount = missing & ~np.isnan(share)
            out.loc[recount, "bytes"] = share[recount] * float(len(trace))
            out = _bandwidths(out)
        return out[list(CALL_COLUMNS)].reset_index(drop=True)
    rank = int(trace.info.distributed_info.get("rank", 0) or 0)
    return _with_bandwidth(collective_args(trace), rank)[list(CALL_COLUMNS)]


def _calls(ts: TraceSet, rank: int) -> pd.DataFrame:
    """A rank's calls: from its cache entry's `collective_args` table, else from its Trace."""
    args = ts.rank_table(rank, "collective_args")
    return _with_bandwidth(collective_args(ts[rank]) if args is None else args, rank)


def _with_bandwidth(args: pd.DataFrame, rank: int) -> pd.DataFrame:
    out = args.copy()
    out.insert(0, "rank", np.int64(rank))
    out.insert(1, "index", call_numbers(out["process_group"], out["name"]))
    out["group_size"] = out["group_size"].astype(np.float64)
    out["bytes"] = out["bytes"].astype(np.float64)
    return _bandwidths(out)


def _bandwidths(out: pd.DataFrame) -> pd.DataFrame:
    dur = out["dur"].to_numpy(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        algbw = np.where(dur > 0, out["bytes"].to_numpy(np.float64) / dur, np.nan)  # bytes/ns = GB/s
    out["algbw"] = algbw
    out["busbw"] = algbw * bus_factor(out["op"].to_numpy(dtype=object), out["group_size"].to_numpy())
    return out


@dataclass(frozen=True)
class CollectiveSummary:
    """[`collective_summary`][jupyter_profview.analysis.collectives.collective_summary]'s answer.

    - `calls`: one row per call matched across ranks: `process_group`, `index`, `name`, `op`,
      `ranks` (how many ranks have it), `group_size`, `bytes`, `first_start`, `last_start`
      (common clock, ns), `skew` (`last_start` − `first_start`: how long the first rank waited
      for the last), `last_rank` (the rank that arrived last), `latency` (the shortest `dur` over
      the ranks: the transfer itself), `max_dur`, `algbw`, `busbw` (GB/s, from `latency`);
      sorted by `first_start`;
    - `sizes`: one row per (`name`, `bytes`): `calls`, `latency` (mean, ns), `min_latency`,
      `max_latency`, `skew` (mean, ns), `algbw`, `busbw` (mean, GB/s); sorted by `name`, `bytes`.
    """

    calls: pd.DataFrame
    sizes: pd.DataFrame

    def _repr_html_(self) -> str:
        return (f"<b>CollectiveSummary</b>: {len(self.calls)} calls, {len(self.sizes)} sizes"
                + self.sizes._repr_html_())  # type: ignore[operator]


def collective_summary(ts: TraceSet | Trace) -> CollectiveSummary:
    """The collectives of a TraceSet matched across ranks (the k-th call of each process group;
    [`match_instances`][jupyter_profview.analysis.ranks.match_instances], the matching of
    [`collective_skew`][jupyter_profview.analysis.ranks.collective_skew]), with latency, skew and
    bandwidths per call and per (name, bytes); see
    [`CollectiveSummary`][jupyter_profview.analysis.collectives.CollectiveSummary].

    Profile every rank with the same schedule, so that the k-th call is the same everywhere; a
    call that not every rank has shows it in `ranks`.  A single Trace is one rank (`latency` is
    its `dur`, `skew` 0)."""
    if not is_traceset(ts) and not isinstance(ts, Trace):
        raise ProfviewError(f"collective_summary needs a TraceSet or a Trace, not {type(ts).__name__}",
                            expected="profview.load_many(...) or profview.load(...)")
    calls = collective_bandwidth(ts)
    keys = ["process_group", "index", "name"]
    matched = match_instances(calls.assign(end=calls["start"] + calls["dur"]), keys)
    first = calls.groupby(keys, sort=False).agg(op=("op", "first"), group_size=("group_size", "max"),
                                                bytes=("bytes", "max")).reset_index()
    out = matched.merge(first, on=keys, how="left")
    out = out.rename(columns={"start_spread": "skew", "min_dur": "latency"})
    lat = out["latency"].to_numpy(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["algbw"] = np.where(lat > 0, out["bytes"].to_numpy(np.float64) / lat, np.nan)
    out["busbw"] = out["algbw"].to_numpy(np.float64) * bus_factor(out["op"].to_numpy(dtype=object),
                                                                   out["group_size"].to_numpy())
    per_call = out[["process_group", "index", "name", "op", "ranks", "group_size", "bytes", "first_start",
                    "last_start", "skew", "last_rank", "latency", "max_dur", "algbw", "busbw"]]
    per_call = per_call.astype({"latency": np.int64, "skew": np.int64, "max_dur": np.int64,
                                "ranks": np.int64}).reset_index(drop=True)
    sizes = per_call.assign(bytes_key=per_call["bytes"].fillna(-1.0)).groupby(
        ["name", "bytes_key"], sort=True).agg(
        bytes=("bytes", "first"), calls=("index", "count"), latency=("latency", "mean"),
        min_latency=("latency", "min"), max_latency=("latency", "max"), skew=("skew", "mean"),
        algbw=("algbw", "mean"), busbw=("busbw", "mean")).reset_index().drop(columns="bytes_key")
    return CollectiveSummary(per_call, sizes)
