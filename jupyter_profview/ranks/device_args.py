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
error.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..kinds import COLLECTIVE_PARAMS, is_collective_call
from ..model import Trace

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
                           "dur", "side")
#: bytes per element: torch's ScalarType names (record_param_comms' `dtype`) and the `Input type`
#: names of a torch op's args
DTYPE_BYTES = {
    "float": 4, "double": 8, "half": 2, "bfloat16": 2, "long": 8, "int": 4, "short": 2, "char": 1,
    "byte": 1, "bool": 1, "complexfloat": 8, "complexdouble": 16, "complexhalf": 4,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
    "c10::half": 2, "c10::bfloat16": 2, "long int": 8, "short int": 2, "signed char": 1,
    "unsigned char": 1, "c10::float8_e4m3fn": 1, "c10::float8_e5m2": 1,
    "c10::complex<float>": 8, "c10::complex<double>": 16,
}
#: the collective kinds the bus-bandwidth factors know, in the order names are tested
OPS = ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce", "send", "recv")
PG_KEYS = ("Process Group Name", "pg_name")
#: collectives whose first recorded input is the gathered output, not one rank's share
OUTPUT_FIRST = re.compile(r"_base|into_tensor", re.IGNORECASE)


def cached_table(trace: Trace, name: str) -> pd.DataFrame | None:
    """Table `name` of the cache entry `trace` was read from (`ts[r]`), or None."""
    entry = trace.metadata.get("cache_entry")
    path = Path(entry) / f"{name}.parquet" if entry else None
    if path is None or not path.is_file():
        return None
    from .cache import read_table

    return read_table(path)


# -- kernels ------------------------------------------------------------------------------------
def kernel_rows(launches: pd.DataFrame) -> np.ndarray:
    """Rows of `launches` that are kernels (type `kernel` or `communication`)."""
    kind = launches["type"].astype(str).to_numpy()
    return np.flatnonzero((kind == "kernel") | (kind == "communication"))


def kernel_args(trace: Trace) -> pd.DataFrame:
    """One row per kernel of `trace.launches` (in its order): `event`, `grid` and `block` (the
    file's text, e.g. `[8, 1, 1]`, `""` where absent), `blocks_per_sm`, `warps_per_sm`,
    `occupancy` (`est. achieved occupancy %`), `registers` (per thread), `shared_memory` (bytes):
    float64, NaN where absent."""
    if trace.metadata.get("cache_entry") is not None:
        cached = cached_table(trace, "kernel_args")
        if cached is not None:
            return cached
    la = trace.launches
    ids = la["kernel"].to_numpy(np.int64)[kernel_rows(la)]
    out: dict[str, Any] = {"event": ids}
    for col in KERNEL_TEXTS:
        out[col] = pd.Categorical(_arg_texts(trace, ids, col))
    for col, key in KERNEL_NUMBERS.items():
        out[col] = trace.arg_numbers(ids, key) if len(ids) else np.zeros(0)
    return pd.DataFrame(out, columns=list(KERNEL_ARGS_COLUMNS))


def _arg_texts(trace: Trace, ids: np.ndarray, key: str) -> np.ndarray:
    """`str(trace.args(id)[key])` per id (`""` where absent); Chrome traces search the args
    blob once instead of parsing each event's args."""
    fast = getattr(trace._args, "texts", None)
    if fast is not None and len(ids):
        return np.asarray(fast(ids, key), dtype=object)
    out = np.empty(len(ids), dtype=object)
    out[:] = [_text(trace.args(int(i)).get(key)) for i in ids.tolist()]
    return out


def _text(value: Any) -> str:
    return "" if value is None else str(value)


# -- collectives --------------------------------------------------------------------------------
def collective_args(trace: Trace) -> pd.DataFrame:
    """One row per collective call of `trace` (sorted by `start`), see the rules below.

    A call is (`kinds`: [`is_collective_call`][jupyter_profview.kinds.is_collective_call],
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
    in (a kernel: the one that launched it).  NaN where none is given.
    """
    if trace.metadata.get("cache_entry") is not None:
        cached = cached_table(trace, "collective_args")
        if cached is not None:
            return cached
    ev = trace.events
    if len(ev) == 0:
        return empty_collectives()
    la = trace.launches
    comm = la[la["type"].astype(str) == "communication"] if len(la) else la
    devices = set(la["gpu"].astype(str)) if len(la) else set()
    names = ev["name"].cat.categories if isinstance(ev["name"].dtype, pd.CategoricalDtype) \
        else pd.Index(ev["name"].unique())
    wanted = [n for n in names if is_collective_call(str(n))]
    cpu = ev[ev["name"].isin(wanted) & (ev["kind"] != "instant")
             & ~ev["process"].astype(str).isin(devices)]
    tree = _Tree(ev)
    # CPU calls covered by a kernel: the slices above each kernel's launch
    covered: set[int] = set()
    for launch in comm["launch"].dropna().astype(np.int64).tolist():
        covered.update(tree.ancestors(int(launch)))
    cpu_names = cpu["name"].astype(str).to_numpy()
    cpu_ids = cpu.index.to_numpy(np.int64)
    has_annotation = {tree.parent(int(i)) for i in cpu_ids[cpu_names != COLLECTIVE_PARAMS].tolist()}
    rows = []
    dist = trace.metadata.get("distributed_info") or {}
    for k in range(len(comm)):
        rows.append(_kernel_call(trace, tree, comm.iloc[k], dist))
    starts, durs = cpu["start"].to_numpy(np.int64), cpu["dur"].to_numpy(np.int64)
    for eid, name, start, dur in zip(cpu_ids.tolist(), cpu_names.tolist(), starts.tolist(), durs.tolist(),
                                     strict=True):
        if eid in covered or (name == COLLECTIVE_PARAMS and eid in has_annotation):
            continue
        own = trace.args(eid)
        up = tree.parent(eid)
        outer = trace.args(up) if up >= 0 and tree.name(up) == COLLECTIVE_PARAMS else {}
        if name == COLLECTIVE_PARAMS:
            name = str(own.get("Collective name") or name)
            if not op_kind(name):  # `wait`, `barrier`: no transfer
                continue
        rows.append(_call(eid, name, start, dur, "cpu", [own, outer], dist))
    if not rows:
        return empty_collectives()
    out = pd.DataFrame(rows, columns=list(COLLECTIVE_ARGS_COLUMNS))
    return out.sort_values(["start", "event"], kind="stable").reset_index(drop=True)


def empty_collectives() -> pd.DataFrame:
    return pd.DataFrame({"event": np.zeros(0, np.int64), "name": pd.Series([], dtype=object),
                         "op": pd.Series([], dtype=object), "process_group": pd.Series([], dtype=object),
                         "group_size": np.zeros(0), "bytes": np.zeros(0), "start": np.zeros(0, np.int64),
                         "dur": np.zeros(0, np.int64), "side": pd.Series([], dtype=object)})


class _Tree:
    """Parents and names of `trace.events` by event id (no per-row Python objects)."""

    def __init__(self, ev: pd.DataFrame) -> None:
        self.index = ev.index
        self.parents = ev["parent"].to_numpy(np.int64)
        names = pd.Categorical(ev["name"])
        self.codes, self.names = names.codes, [str(c) for c in names.categories]

    def _pos(self, eid: int) -> int:
        return int(self.index.get_indexer(pd.Index([eid]))[0]) if eid >= 0 else -1

    def parent(self, eid: int) -> int:
        pos = self._pos(eid)
        return int(self.parents[pos]) if pos >= 0 else -1

    def name(self, eid: int) -> str:
        pos = self._pos(eid)
        return self.names[self.codes[pos]] if pos >= 0 and self.codes[pos] >= 0 else ""

    def ancestors(self, eid: int, depth: int = 4) -> list[int]:
        """The `depth` slices `eid` is nested in, innermost first."""
        out: list[int] = []
        node = self.parent(eid)
        while node >= 0 and len(out) < depth:
            out.append(node)
            node = self.parent(node)
        return out


def _kernel_call(trace: Trace, tree: _Tree, row: Any, dist: dict[str, Any]) -> dict[str, Any]:
    """A communication kernel's call: its args, then those of the collective slices its launch
    sits in (the `nccl:*` annotation, the `record_param_comms` around it)."""
    eid = int(row["kernel"])
    sources = [trace.args(eid)]
    annotation = ""
    for node in [] if pd.isna(row["launch"]) else tree.ancestors(int(row["launch"])):
        name = tree.name(node)
        if is_collective_call(name):
            sources.append(trace.args(node))
            if name != COLLECTIVE_PARAMS and not annotation:
                annotation = name
    given = next((a["Collective name"] for a in sources if a.get("Collective name")), None)
    name = str(given or annotation or row["name"])
    return _call(eid, name, int(row["kernel_start"]), int(row["kernel_dur"]), "device", sources, dist,
                 kernel_name=str(row["name"]))


def _call(eid: int, name: str, start: int, dur: int, side: str, sources: list[dict[str, Any]],
          dist: dict[str, Any], kernel_name: str = "") -> dict[str, Any]:
    def arg(*keys: str) -> Any:
        for args in sources:
            for key in keys:
                if args.get(key) not in (None, ""):
                    return args[key]
        return None

    op = op_kind(name) or op_kind(kernel_name)
    pg = arg(*PG_KEYS)
    group = _number(arg("Group size"))
    if math.isnan(group):
        group = _group_size(arg("Process Group Ranks"), None if pg is None else str(pg), dist)
    return {"event": eid, "name": name, "op": op, "process_group": "" if pg is None else str(pg),
            "group_size": group,
            "bytes": _bytes(arg, op, group, output_first=bool(OUTPUT_FIRST.search(name))),
            "start": start, "dur": dur, "side": side}


def op_kind(name: str) -> str:
    """The collective kind of a call or kernel name (`OPS`), `""` when none is named."""
    flat = re.sub(r"[^a-z]", "", name.lower())
    return next((op for op in OPS if op in flat), "")


def _number(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return math.nan


def _group_size(ranks: Any, pg: str | None, dist: dict[str, Any]) -> float:
    parsed = _literal(ranks)
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


def _bytes(arg: Any, op: str, group: float, output_first: bool = False) -> float:
    size = DTYPE_BYTES.get(str(arg("dtype") or "").lower())
    nelems = [_number(arg(k)) for k in ("In msg nelems", "Out msg nelems")]
    nelems = [n for n in nelems if not math.isnan(n)]
    if size is not None and nelems:
        return max(nelems) * size
    dims, types = arg("Input Dims"), arg("Input type")
    if not isinstance(dims, list) or not dims or not isinstance(types, list) or not types:
        return math.nan
    first, kind = dims[0], str(types[0]).lower()
    if not isinstance(first, list) or not all(isinstance(d, int) for d in first) or kind not in DTYPE_BYTES:
        return math.nan
    total = float(np.prod(first, dtype=np.float64)) * DTYPE_BYTES[kind]
    # gloo's all_gather records its input (one rank's share); `_all_gather_base` and
    # `all_gather_into_tensor` record the output first
    return total * group if op == "allgather" and not output_first else total
