"""What the efficiency analyses read from event args, as tables (data, no analysis).

Kineto writes each kernel's launch configuration and occupancy, and each collective's size and
process group, in the event's args.  A rank of a TraceSet is read back from its Parquet cache,
which keeps no args: so these tables are made at load time, when the args are at hand, and
written into the rank's cache entry (`kernel_args`, `collective_args`).  A Trace read from a
cache entry (`ts[r]`) gets them from there.

- [`kernel_args`][jupyter_profview.ranks.device_args.kernel_args]: one row per kernel of
  `trace.launches` (type `kernel` or `communication`) with the numbers Kineto gives;
- [`collective_args`][jupyter_profview.ranks.device_args.collective_args]: one row per collective
  call with its name, process group, group size and size in bytes.

Both answer NaN where the file has no such arg (ROCm, MTIA, older Kineto, CPU traces), never an
error, and are computed once per Trace (kept with its derived facts, `jupyter_profview.derived.cache`).
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

import numpy as np
import pandas as pd

from ..derived.cache import cached
from ..derived.masks import match, on_device
from ..dtypes import dtype_bytes
from ..kinds import COLLECTIVE_PARAMS, by_code, is_collective_call
from ..model import Trace
from ..nesting import ancestor_mask, nearest_marked

#: kernel_args column -> the Kineto kernel arg it is read from
KERNEL_NUMBERS = {
    "blocks_per_sm": "blocks per SM",
    "warps_per_sm": "warps per SM",
    "occupancy": "est. achieved occupancy %",
    "registers": "registers per thread",
    "shared_memory": "shared memory",
}
KERNEL_TEXTS = ("grid", "block")
KERNEL_ARGS_COLUMNS = ("event", *KERNEL_TEXTS, *KERNEL_NUMBERS)
COLLECTIVE_ARGS_COLUMNS = ("event", "name", "op", "process_group", "group_size", "bytes", "start",
                           "dur", "side", "share_bytes")
#: the collective kinds the bus-bandwidth factors know, in the order names are tested
OPS = ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce", "send", "recv")
PG_KEYS = ("Process Group Name", "pg_name")
#: the numeric ones among them (the others are read as values)
NUMBER_KEYS = ("Group size", "In msg nelems", "Out msg nelems")
#: the args a collective call's size and group are read from
CALL_KEYS = ("Group size", "Process Group Ranks", "dtype", "In msg nelems", "Out msg nelems",
             "Input Dims", "Input type")
#: collectives whose first recorded input is the gathered output, not one rank's share
OUTPUT_FIRST = re.compile(r"_base|into_tensor", re.IGNORECASE)


def cached_table(trace: Trace, name: str) -> pd.DataFrame | None:
    """Table `name` of the cache entry `trace` was read from (`ts[r]`), or None."""
    entry = trace.metadata.get("cache_entry")
    from .cache import read_table, table_path

    path = table_path(entry, name) if entry else None
    if path is None or not path.is_file():
        return None
    return read_table(path)


# -- kernels ------------------------------------------------------------------------------------
def kernel_rows(launches: pd.DataFrame) -> np.ndarray:
    """Rows of `launches` that are kernels (type `kernel` or `communication`)."""
    return np.flatnonzero(launches["type"].isin(["kernel", "communication"]).to_numpy(bool))


def kernel_args(trace: Trace) -> pd.DataFrame:
    """One row per kernel of `trace.launches` (in its order): `event`, `grid` and `block` (the
    file's text, e.g. `[8, 1, 1]`, missing (NaN) where absent, as the numbers), `blocks_per_sm`,
    `warps_per_sm`, `occupancy` (`est. achieved occupancy %`), `registers` (per thread),
    `shared_memory` (bytes): float64, NaN where absent."""
    return cached(trace, "kernel_args", lambda: _kernel_args(trace))


def _kernel_args(trace: Trace) -> pd.DataFrame:
    table = cached_table(trace, "kernel_args")  # a rank read from its cache: written at load
    if table is not None:
        return table
    la = trace.launches
    ids = la["kernel"].to_numpy(np.int64)[kernel_rows(la)]
    out: dict[str, Any] = {"event": ids}
    for col in KERNEL_TEXTS:  # each distinct launch configuration formatted once
        codes, values = trace.arg_values(ids, col)
        shown = np.array([_text(v) for v in values] + [None], dtype=object)
        out[col] = pd.Categorical(shown[codes])  # missing (NaN) where the kernel has none
    for col, key in KERNEL_NUMBERS.items():
        out[col] = trace.arg_numbers(ids, key)
    return pd.DataFrame(out, columns=list(KERNEL_ARGS_COLUMNS))


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


# -- collectives --------------------------------------------------------------------------------
def collective_args(trace: Trace) -> pd.DataFrame:
    """One row per collective call of `trace` (sorted by `start`), see the rules below.

    A call is (`jupyter_profview.kinds.is_collective_call`,
    `trace.launches`' `communication` type):

    - a device kernel of type `communication` (NCCL / RCCL): the kernel is the transfer, its
      duration the transfer's (`side` `device`);
    - else a CPU slice `nccl:*` / `gloo:*` / `rccl:*` that launched no such kernel (gloo runs the
      transfer inside it on its own thread), or a `record_param_comms` around no such slice whose
      `Collective name` is a transfer (not `wait` or `barrier`) (`side` `cpu`).

    Columns: `event`, `name` (the kernel's `Collective name` arg, else the annotation it was
    launched from, else its own name; a CPU call's name, or a `record_param_comms`' `Collective
    name`), `op` (`allreduce`, `allgather`, `reducescatter`, `alltoall`, `broadcast`, `reduce`,
    `send`, `recv` or `""`: the kind the bus bandwidth needs, from the name), `process_group`
    (`Process Group Name`, `""` where unknown), `group_size` (`Group size`, else the size of
    `Process Group Ranks` or of the process group in `distributedInfo`, else, for a call of no
    known group, the run's `world_size`; NaN otherwise), `bytes`, `start`, `dur` (ns), `side`.

    `bytes` is the size nccl-tests' bandwidths are defined on: `max(In msg nelems, Out msg
    nelems)` × the size of `dtype` (the gathered output of an all_gather, the input of a
    reduce_scatter, the buffer of the others), else the product of the first `Input Dims` entry ×
    the size of the first `Input type` (× the group size for gloo's all_gather, whose input is
    one rank's share; not for `_all_gather_base` / `all_gather_into_tensor`, which record the
    output first).  Args are read from the call itself, then from the `record_param_comms` it sits
    in (a kernel: the one that launched it).  NaN where none is given.  `share_bytes`: for a
    size that is one rank's share times the group size (gloo's all_gather), the share (so that
    a caller who knows the group size -- a TraceSet's rank count -- can count it), else NaN.
    """
    return cached(trace, "collective_args", lambda: _collective_args(trace))


def _collective_args(trace: Trace) -> pd.DataFrame:
    table = cached_table(trace, "collective_args")
    if table is not None:
        return table
    ev = trace.events
    if len(ev) == 0:
        return empty_collectives()
    la = trace.launches
    comm = la[la["type"].astype(str) == "communication"] if len(la) else la
    tree = _Tree(ev)
    slices = ev["kind"].astype(str).to_numpy() != "instant"
    cpu_pos = np.flatnonzero(tree.is_call & ~on_device(trace) & slices)
    # the slices above each kernel's launch (the one ancestor walk, `nesting`: up to the root)
    launch = comm["launch"].to_numpy(dtype=np.float64, na_value=np.nan) if len(comm) else np.zeros(0)
    launch_pos = tree.positions(np.where(np.isnan(launch), -1, launch).astype(np.int64))
    covered = ancestor_mask(tree.parent_pos, launch_pos)
    annotation_ids = tree.id_of(nearest_marked(tree.parent_pos, launch_pos, tree.is_call & ~tree.is_params))
    params_ids = tree.id_of(nearest_marked(tree.parent_pos, launch_pos, tree.is_params))
    # CPU calls: not above a kernel; a record_param_comms only when no annotation is inside it
    parent_ids = tree.parents[cpu_pos]
    inner_of = np.zeros(len(ev), bool)
    annotations = cpu_pos[~tree.is_params[cpu_pos]]
    inner_of[tree.pos(tree.parents[annotations][tree.parents[annotations] >= 0])] = True
    keep = ~covered[cpu_pos] & ~(tree.is_params[cpu_pos] & inner_of[cpu_pos])
    cpu_pos, parent_ids = cpu_pos[keep], parent_ids[keep]
    ids = tree.ids
    kernel_ids = comm["kernel"].to_numpy(np.int64)
    outer = np.where((parent_ids >= 0) & tree.is_params[tree.pos(np.maximum(parent_ids, 0))], parent_ids, -1)
    # each key from the first source that gives it: a kernel's own args, then the annotation and
    # the record_param_comms above its launch; a CPU call's own, then its record_param_comms
    k_sources, c_sources = [kernel_ids, annotation_ids, params_ids], [ids[cpu_pos], outer]
    k_args, c_args = _Given(trace, k_sources), _Given(trace, c_sources)
    k_groups, c_groups = process_groups(trace, k_sources), process_groups(trace, c_sources)
    dist = trace.info.distributed_info
    rows = []
    kernel_names = [str(n) for n in pd.Categorical(comm["name"]).astype(object)] if len(comm) else []
    given_names = k_args.value("Collective name")
    for k, (start, dur) in enumerate(zip(comm["kernel_start"].tolist(), comm["kernel_dur"].tolist(),
                                         strict=True)):
        name = str(given_names[k] or (tree.name_of(int(annotation_ids[k])) if annotation_ids[k] >= 0 else "")
                   or kernel_names[k])
        rows.append(_call(int(kernel_ids[k]), name, int(start), int(dur), "device", k_args.row(k),
                          k_groups[k], dist, kernel_name=kernel_names[k]))
    starts, durs = ev["start"].to_numpy(np.int64)[cpu_pos], ev["dur"].to_numpy(np.int64)[cpu_pos]
    own_names = _Given(trace, [ids[cpu_pos]]).value("Collective name")
    for k, pos in enumerate(cpu_pos.tolist()):
        name = tree.names[tree.codes[pos]]
        if tree.is_params[pos]:
            name = str(own_names[k] or name)
            if not op_kind(name):  # `wait`, `barrier`: no transfer
                continue
        rows.append(_call(int(ids[pos]), name, int(starts[k]), int(durs[k]), "cpu", c_args.row(k),
                          c_groups[k], dist))
    if not rows:
        return empty_collectives()
    out = pd.DataFrame(rows, columns=list(COLLECTIVE_ARGS_COLUMNS))
    return out.sort_values(["start", "event"], kind="stable").reset_index(drop=True)


def empty_collectives() -> pd.DataFrame:
    return pd.DataFrame({"event": np.zeros(0, np.int64), "name": pd.Series([], dtype=object),
                         "op": pd.Series([], dtype=object), "process_group": pd.Series([], dtype=object),
                         "group_size": np.zeros(0), "bytes": np.zeros(0), "start": np.zeros(0, np.int64),
                         "dur": np.zeros(0, np.int64), "side": pd.Series([], dtype=object),
                         "share_bytes": np.zeros(0)})


class _Tree:
    """Parents and names of `trace.events` as arrays, by position (`pos` maps event ids)."""

    def __init__(self, ev: pd.DataFrame) -> None:
        self.ids = ev.index.to_numpy(np.int64)
        self.dense = bool(len(self.ids) == 0 or (self.ids[0] == 0 and self.ids[-1] == len(self.ids) - 1
                                                  and ev.index.is_monotonic_increasing))
        self.order = None if self.dense else np.argsort(self.ids, kind="stable")
        self.parents = ev["parent"].to_numpy(np.int64)
        self.parent_pos = self.positions(self.parents)
        names = pd.Categorical(ev["name"])
        self.codes = names.codes
        self.names = [str(c) for c in names.categories] + [""]
        self.is_call = self.matching(ev["name"], is_collective_call)
        self.is_params = self.matching(ev["name"], lambda n: n == COLLECTIVE_PARAMS)

    def matching(self, column: pd.Series, predicate: Any) -> np.ndarray:
        """Rows whose value satisfies `predicate`, tested once per category (`masks.match`)."""
        return match(column, predicate)

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """Positions of event ids, -1 for -1."""
        ids = np.asarray(ids, np.int64)
        out = np.full(len(ids), -1, np.int64)
        has = ids >= 0
        out[has] = self.pos(ids[has])
        return out

    def id_of(self, pos: np.ndarray) -> np.ndarray:
        """Event ids of positions, -1 for -1."""
        return np.where(pos >= 0, self.ids[np.maximum(pos, 0)], -1) if len(self.ids) else pos

    def pos(self, ids: np.ndarray) -> np.ndarray:
        """Positions of event ids (all >= 0 and present)."""
        ids = np.asarray(ids, np.int64)
        if self.dense or self.order is None:
            return ids
        return self.order[np.searchsorted(self.ids, ids, sorter=self.order)]

    def name_of(self, eid: int) -> str:
        return self.names[self.codes[int(self.pos(np.array([eid]))[0])]]


def process_groups(trace: Trace, sources: list[np.ndarray]) -> np.ndarray:
    """Per row, the process group named in the args of the first of `sources` (event ids, -1 for
    none) that names one (`Process Group Name`, else `pg_name`: `PG_KEYS`), as text; `""` where
    none does."""
    n = len(sources[0]) if sources else 0
    out = np.full(n, "", dtype=object)
    todo = np.ones(n, bool)
    for ids in sources:
        for key in PG_KEYS:
            given = _Given(trace, [np.where(todo, ids, -1)]).value(key)
            hit = np.flatnonzero(given != None)  # noqa: E711 (elementwise)
            out[hit] = [str(v) for v in given[hit].tolist()]
            todo[hit] = False
    return out


class _Given:
    """Args of one event per row from several sources (event ids, -1 for none, first first):
    per key, the first source's value that is given (not None or "")."""

    def __init__(self, trace: Trace, sources: list[np.ndarray]) -> None:
        self.trace, self.sources = trace, [np.asarray(ids, np.int64) for ids in sources]
        self.n = len(self.sources[0]) if sources else 0
        self.columns: dict[str, np.ndarray] = {}

    def value(self, key: str) -> np.ndarray:
        """Object array: the first given value of `key` per row, None where none gives it."""
        if key in self.columns:
            return self.columns[key]
        out = np.full(self.n, None, dtype=object)
        todo = np.ones(self.n, bool)
        for ids in self.sources:
            ask = np.flatnonzero(todo & (ids >= 0))
            if not len(ask):
                continue
            if key in NUMBER_KEYS:
                numbers = self.trace.arg_numbers(ids[ask], key)
                hit = ~np.isnan(numbers)
                out[ask[hit]] = numbers[hit].tolist()
            else:
                codes, values = self.trace.arg_values(ids[ask], key)
                table = np.empty(len(values) + 1, dtype=object)
                for i, v in enumerate(values):  # one by one: a list value is one object
                    table[i] = v
                hit = by_code([v is not None and v != "" for v in values], codes)
                out[ask[hit]] = table[codes[hit]]
            todo[ask[hit]] = False
        self.columns[key] = out
        return out

    def row(self, k: int) -> dict[str, Any]:
        """Row `k`'s given values of `CALL_KEYS`."""
        return {key: v for key in CALL_KEYS if (v := self.value(key)[k]) is not None}


def _call(eid: int, name: str, start: int, dur: int, side: str, args: dict[str, Any], pg: str,
          dist: dict[str, Any], kernel_name: str = "") -> dict[str, Any]:
    op = op_kind(name) or op_kind(kernel_name)
    group = _number(args.get("Group size"))
    if math.isnan(group):
        group = _group_size(args.get("Process Group Ranks"), pg or None, dist)
    nbytes, share = _bytes(args, op, group, output_first=bool(OUTPUT_FIRST.search(name)))
    return {"event": eid, "name": name, "op": op, "process_group": pg,
            "group_size": group,
            "bytes": nbytes, "start": start, "dur": dur, "side": side, "share_bytes": share}


@functools.lru_cache(maxsize=4096)
def op_kind(name: str) -> str:
    """The collective kind of a call or kernel name (`OPS`), `""` when none is named."""
    flat = re.sub(r"[^a-z]", "", name.lower())
    return next((op for op in OPS if op in flat), "")


def _number(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return math.nan


def _group_size(ranks: Any, pg: str | None, dist: dict[str, Any]) -> float:
    parsed = _literal(ranks) if ranks is not None else None
    if isinstance(parsed, (list, tuple)) and parsed:
        return float(len(parsed))
    configs = dist.get("pg_config") or []
    if pg is not None:
        for config in configs if isinstance(configs, list) else []:
            if isinstance(config, dict) and str(config.get("pg_name")) == pg:
                return _number(config.get("pg_size"))
        return math.nan
    return _number(dist.get("world_size"))


def _literal(value: Any) -> Any:
    if isinstance(value, str) and len(value) < 100_000:
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _bytes(args: dict[str, Any], op: str, group: float, output_first: bool = False) -> tuple[float, float]:
    """(bytes, one rank's share where the size is the share times the group size, else NaN)."""
    size = dtype_bytes(args.get("dtype"))
    nelems = [_number(args.get(k)) for k in ("In msg nelems", "Out msg nelems")]
    nelems = [n for n in nelems if not math.isnan(n)]
    if size is not None and nelems:
        return max(nelems) * size, math.nan
    dims, types = args.get("Input Dims"), args.get("Input type")
    if not isinstance(dims, list) or not dims or not isinstance(types, list) or not types:
        return math.nan, math.nan
    first, size = dims[0], dtype_bytes(types[0])
    if not isinstance(first, list) or not all(isinstance(d, int) for d in first) or size is None:
        return math.nan, math.nan
    total = float(math.prod(first)) * size
    # gloo's all_gather records its input (one rank's share); `_all_gather_base` and
    # `all_gather_into_tensor` record the output first
    if op == "allgather" and not output_first:
        return total * group, total
    return total, math.nan

