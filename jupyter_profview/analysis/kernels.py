"""How well each kernel uses the GPU, from what Kineto writes about it.

Kineto (CUPTI) writes with each kernel its launch configuration (`grid`, `block`, `registers per
thread`, `shared memory`) and two estimates made from it: `blocks per SM` (the grid's blocks
over the device's SMs) and `est. achieved occupancy %` (the occupancy the CUDA occupancy
calculator predicts for that configuration, capped by the blocks there are).
[`kernel_efficiency`][jupyter_profview.analysis.kernels.kernel_efficiency] reads them (through
[`kernel_args`][jupyter_profview.ranks.device_args.kernel_args]):

- `sm_efficiency` = min(`blocks per SM`, 1) × 100: the share of the SMs the kernel has a block
  on, the "estimated SM efficiency" of the TensorBoard PyTorch profiler plugin's kernel view.
  A kernel of 8 blocks on a 108-SM A100 is at 7.4 %, however long it runs;
- `occupancy`: Kineto's `est. achieved occupancy %`, the warps resident per SM over the most
  the SM can hold;
- `tensor_core`: whether the name says it runs on tensor cores
  ([`TENSOR_CORE_KERNEL`][jupyter_profview.kinds.TENSOR_CORE_KERNEL], a name heuristic; it misses
  Triton kernels and others that do not name their MMA instructions).

These are estimates from the launch configuration, not measured counters (CUPTI's
`sm__throughput`, Nsight Compute's achieved occupancy): a kernel that stalls on memory with full
occupancy still reads 100 %.  Kernels without these args (ROCm, MTIA, older Kineto) get NaN.

Aggregated (`by="name"`, `by="op"`), the percentages are duration-weighted means over the
kernels that have them (a long kernel counts for more than a short one, as in TensorBoard's
"mean estimated SM efficiency" weighted by duration).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import ProfviewError
from ..kinds import is_tensor_core_kernel
from ..model import Trace
from ..ranks.device_args import KERNEL_NUMBERS, KERNEL_TEXTS, kernel_args, kernel_rows
from .columns import match
from .traceset import concat, is_traceset

if TYPE_CHECKING:
    from ..ranks.traceset import TraceSet

__all__ = ["KERNEL_COLUMNS", "SUMMARY_COLUMNS", "kernel_efficiency"]

BY = ("kernel", "name", "op")
#: the columns of `kernel_efficiency(by="kernel")`
KERNEL_COLUMNS = ("event", "name", "device", "stream", "dur", *KERNEL_TEXTS, *KERNEL_NUMBERS,
                  "sm_efficiency", "tensor_core")
#: the columns of `trace.launches` read
LAUNCH_COLUMNS = ["kernel", "name", "type", "device", "stream", "kernel_dur", "cpu_op_name"]
#: the columns of `kernel_efficiency(by="name")` after the key (`name`, or `op`)
SUMMARY_COLUMNS = ("count", "time", "sm_efficiency", "occupancy", "tensor_core_share")


def kernel_efficiency(trace: Trace | TraceSet, *, by: str = "kernel") -> pd.DataFrame:
    """Each kernel's launch configuration, SM efficiency, occupancy and tensor-core use
    (module doc for the definitions).

    - `by="kernel"`: one row per kernel of `trace.launches` (type `kernel` or `communication`, in
      its order): `event`, `name`, `device`, `stream` (as the file gives them), `dur` (ns),
      `grid`, `block` (the file's text, missing (NaN) where absent, as the numbers),
      `blocks_per_sm`, `warps_per_sm`,
      `occupancy` (%), `registers` (per thread), `shared_memory` (bytes), `sm_efficiency` (%),
      `tensor_core` (bool);
    - `by="name"`: one row per kernel name; `by="op"`: one row per name of the CPU op that
      launched it (`trace.launches`' `cpu_op_name`, `""` for none), with `count`, `time` (sum of
      `dur`, ns), `sm_efficiency` and `occupancy` (duration-weighted means over the kernels that
      have them, NaN where none has), `tensor_core_share` (% of `time` in tensor-core kernels);
      sorted by `time`, largest first.

    A TraceSet answers per rank (a `rank` column first), from the `kernel_args` table each rank's
    cache entry holds.

    Example (a real A100 trace shipped with the package):

    ```python
    t = profview.load(examples / "hta" / "nccl_parser_config_nccl_data.json.gz")
    analysis.kernel_efficiency(t, by="name").head()
    ```
    """
    if by not in BY:
        raise ProfviewError(f"kernel_efficiency: by must be one of {BY}, not {by!r}",
                            expected="'kernel', 'name' or 'op'")
    if is_traceset(trace):
        return _per_rank(trace, by)
    return _efficiency(trace.launches, kernel_args(trace), by)


def _per_rank(ts: TraceSet, by: str) -> pd.DataFrame:
    """Rank by rank from the cached `launches` and `kernel_args` tables (no rank's events read)."""
    frames = []
    for rank in ts.ranks:
        launches = ts.rank_table(rank, "launches", list(LAUNCH_COLUMNS))
        args = ts.rank_table(rank, "kernel_args")
        if launches is not None and args is not None:
            out = _efficiency(launches, args, by)
        else:  # an entry without the table (not written by this version): from the rank's Trace
            out = kernel_efficiency(ts[rank], by=by)
        out.insert(0, "rank", np.int64(rank))
        frames.append(out)
    return concat(frames) if frames else _efficiency(_no_launches(), None, by).assign(rank=np.int64(0))


def _no_launches() -> pd.DataFrame:
    from ..model import empty_launches

    return empty_launches()


def _efficiency(launches: pd.DataFrame, args: pd.DataFrame | None, by: str) -> pd.DataFrame:
    rows = kernel_rows(launches)
    la = launches.iloc[rows]
    table = pd.DataFrame({
        "event": la["kernel"].to_numpy(np.int64),
        "name": _categorical(la["name"]),
        "device": la["device"].to_numpy(),
        "stream": la["stream"].to_numpy(),
        "dur": la["kernel_dur"].to_numpy(np.int64),
    })
    table["device"] = table["device"].astype("Int64")
    table["stream"] = table["stream"].astype("Int64")
    if args is not None and len(args):
        pos = pd.Index(args["event"].to_numpy(np.int64)).get_indexer(table["event"].to_numpy(np.int64))
        found = pos >= 0
        for col in KERNEL_TEXTS:
            text = np.full(len(table), None, dtype=object)
            given = args[col]
            cat = given if isinstance(given.dtype, pd.CategoricalDtype) else given.astype("category")
            # one conversion per distinct configuration; "" (an older cache's "absent") is missing
            shown = np.array([None if c == "" else str(c) for c in cat.cat.categories] + [None],
                             dtype=object)
            text[found] = shown[cat.cat.codes.to_numpy()[pos[found]]]
            table[col] = pd.Categorical(text)
        for col in KERNEL_NUMBERS:
            values = np.full(len(table), np.nan)
            values[found] = args[col].to_numpy(np.float64)[pos[found]]
            table[col] = values
    else:
        for col in KERNEL_TEXTS:
            table[col] = pd.Categorical(np.full(len(table), None, dtype=object))
        for col in KERNEL_NUMBERS:
            table[col] = np.full(len(table), np.nan)
    table["sm_efficiency"] = np.minimum(table["blocks_per_sm"].to_numpy(np.float64), 1.0) * 100.0
    table["tensor_core"] = match(table["name"], is_tensor_core_kernel) if len(table) else np.zeros(0, bool)
    table = table[list(KERNEL_COLUMNS)]
    if by == "kernel":
        return table.reset_index(drop=True)
    key = "name" if by == "name" else "op"
    if by == "op":
        op = _categorical(la["cpu_op_name"])
        if op.isna().any():
            op = op.cat.add_categories([""]).fillna("") if "" not in op.cat.categories else op.fillna("")
        table.insert(0, "op", op.to_numpy())
    return summarise(table, key)


def _categorical(column: pd.Series) -> pd.Series:
    """`column` as a categorical of str with only the categories it uses (one conversion per
    category, not per row)."""
    cat = column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")
    cat = cat.cat.remove_unused_categories()
    return cat.cat.rename_categories([str(c) for c in cat.cat.categories]).reset_index(drop=True)


def summarise(table: pd.DataFrame, key: str) -> pd.DataFrame:
    """Per `key` of a per-kernel table: `count`, `time`, the duration-weighted `sm_efficiency`
    and `occupancy` over the kernels that have them, `tensor_core_share` (% of `time`); sums per
    category code (`np.bincount`), no string per row."""
    keys = _categorical(table[key])
    codes = keys.cat.codes.to_numpy(np.int64)
    n = len(keys.cat.categories)
    dur = table["dur"].to_numpy(np.float64)

    def total(weights: np.ndarray | None = None) -> np.ndarray:
        return np.bincount(codes, weights=weights, minlength=n)

    count = total().astype(np.int64)
    used = np.flatnonzero(count > 0)
    time = total(dur)
    out = pd.DataFrame({key: [str(c) for c in keys.cat.categories[used]], "count": count[used],
                        "time": time[used].astype(np.int64)})
    for col in ("sm_efficiency", "occupancy"):
        value = table[col].to_numpy(np.float64)
        has = ~np.isnan(value)
        weight, known = total(np.where(has, dur * np.nan_to_num(value), 0.0)), total(np.where(has, dur, 0.0))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[col] = np.where(total(has.astype(np.float64))[used] == 0, np.nan, weight[used] / known[used])
    tc = total(np.where(table["tensor_core"].to_numpy(bool), dur, 0.0))[used]
    with np.errstate(invalid="ignore", divide="ignore"):
        out["tensor_core_share"] = np.where(time[used] > 0, 100.0 * tc / time[used], np.nan)
    return out.sort_values(["time", key], ascending=[False, True], kind="stable").reset_index(drop=True)
