"""Writers: a Trace as Chrome Trace Event JSON or as Parquet tables.

Conversions
-----------
``convert TRACE out.json`` (or ``.json.gz``) writes Chrome Trace Event JSON,
which Perfetto and chrome://tracing open:

* each slice is an ``X`` event (instants ``i``), ``ts``/``dur`` in µs with ns
  precision, relative to the trace start (the absolute start is
  ``otherData.base_time_ns``); ``pid``/``tid`` number the ``process`` and
  ``thread`` labels, which ``M`` ``process_name``/``thread_name`` events
  name; ``args`` hold the event's extra columns (``flops``, shapes ...) and
  its phase.  Async events are written as ``X`` slices (``args.kind``).
* memory rows are ``C`` counters (name = device, ``cat`` ``memory``) on the
  process of the same name, or a process of their own; other counters are
  ``C`` events too.
* flows with both ends on an event are ``s``/``f`` pairs (``bp: "e"``).
* ``time_unit == "step"`` (clock-less graph formats): 1 step = 1 µs, noted
  in ``otherData.time_unit_note``.

``convert TRACE out.parquet`` writes one Parquet file per table next to the
given name: ``out.events.parquet``, ``out.memory.parquet``,
``out.allocations.parquet``, ``out.nodes.parquet``, ``out.flows.parquet``
(and ``out.counters.parquet`` where the trace has counters); all tables are
written, empty ones too, so the file set is the same for every format.  The
events index is the ``id`` column.  List columns (shapes, node inputs) stay
Arrow lists where their values are uniform, otherwise each value is stored
as its JSON text.  Every file's schema metadata holds the trace's format,
time unit, metadata, quality and the pandas dtypes of its columns under the key
``jupyter_profview``.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .model import EVENT_COLUMNS, Trace

STEP_NOTE = "time_unit is 'step' (no clock in the source): 1 step is written as 1 µs"
TABLES = ("events", "memory", "allocations", "nodes", "flows", "counters")


# ---------------------------------------------------------------------------
# Chrome Trace Event JSON
# ---------------------------------------------------------------------------

def _ts(values: np.ndarray, step: bool) -> list[Any]:
    """Times in the trace unit -> Chrome µs (exact ints for steps)."""
    return values.tolist() if step else (values / 1000.0).tolist()


def chrome_trace(trace: Trace) -> dict[str, Any]:
    """The trace as a Chrome Trace Event JSON object (see the module docstring)."""
    from .formats.chrome.memory import MEMORY_COUNTER

    ev = trace.events
    step = trace.time_unit == "step"
    pids: dict[str, int] = {}
    tids: dict[tuple[str, str], int] = {}
    out: list[dict[str, Any]] = []

    def pid_of(process: str) -> int:
        if process not in pids:
            pids[process] = len(pids) + 1
            out.append({"ph": "M", "name": "process_name", "pid": pids[process], "tid": 0,
                        "args": {"name": process}})
        return pids[process]

    def tid_of(process: str, thread: str) -> int:
        key = (process, thread)
        if key not in tids:
            tids[key] = sum(1 for p, _ in tids if p == process) + 1
            out.append({"ph": "M", "name": "thread_name", "pid": pid_of(process), "tid": tids[key],
                        "args": {"name": thread}})
        return tids[key]

    extra = [c for c in ev.columns if c not in EVENT_COLUMNS]
    extra_values = {c: ev[c].astype(object).tolist() for c in extra}
    ts = _ts(ev["start"].to_numpy(np.int64), step)
    dur = _ts(ev["dur"].to_numpy(np.int64), step)
    place: dict[int, tuple[int, int]] = {}
    for i, (eid, name, cat, phase, process, thread, kind) in enumerate(zip(
            ev.index.tolist(), ev["name"].astype(str).tolist(), ev["category"].astype(str).tolist(),
            ev["phase"].astype(str).tolist(), ev["process"].astype(str).tolist(),
            ev["thread"].astype(str).tolist(), ev["kind"].astype(str).tolist(), strict=True)):
        pid, tid = pid_of(process), tid_of(process, thread)
        place[eid] = (pid, tid)
        cells = ((k, json_safe(vals[i])) for k, vals in extra_values.items())
        args = {k: v for k, v in cells if v is not None}
        args.update(json_safe(trace.args(eid)) or {})
        args["phase"] = phase
        record: dict[str, Any] = {"name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts[i]}
        if kind == "instant":
            record.update(ph="i", s="t")
        else:
            record.update(ph="X", dur=dur[i])
            if kind == "async":
                args["kind"] = "async"
        record["args"] = args
        out.append(record)

    mem = trace.memory
    for time, device, nbytes in zip(_ts(mem["time"].to_numpy(np.int64), step),
                                    mem["device"].astype(str).tolist(), mem["bytes"].tolist(), strict=True):
        out.append({"ph": "C", "name": device, "cat": "memory", "pid": pid_of(device), "tid": 0,
                    "ts": time, "args": {device: nbytes}})
    counters = trace.counters
    if counters is not None and len(counters):
        others = counters[~counters["name"].astype(str).str.contains(MEMORY_COUNTER)]
        for time, process, name, series, value in zip(
                _ts(others["time"].to_numpy(np.int64), step), others["process"].astype(str).tolist(),
                others["name"].astype(str).tolist(), others["series"].astype(str).tolist(),
                others["value"].tolist(), strict=True):
            out.append({"ph": "C", "name": name, "pid": pid_of(process), "tid": 0, "ts": time,
                        "args": {series: value}})

    flows = trace.flows
    dropped = 0
    for fid, name, cat, src, dst, start, end in zip(
            flows["flow_id"].astype(str).tolist(), flows["name"].astype(str).tolist(),
            flows["category"].astype(str).tolist(), flows["source"].tolist(), flows["target"].tolist(),
            _ts(flows["start"].to_numpy(np.int64), step), _ts(flows["end"].to_numpy(np.int64), step),
            strict=True):
        if src not in place or dst not in place:
            dropped += 1
            continue
        common = {"name": name, "cat": cat, "id": fid}
        out.append({"ph": "s", **common, "pid": place[src][0], "tid": place[src][1], "ts": start})
        out.append({"ph": "f", "bp": "e", **common, "pid": place[dst][0], "tid": place[dst][1], "ts": end})

    other: dict[str, Any] = {
        "generator": "jupyter_profview", "source_format": trace.format, "time_unit": trace.time_unit,
    }
    if "base_time_ns" in trace.metadata:
        other["base_time_ns"] = int(trace.metadata["base_time_ns"])
    if step:
        other["time_unit_note"] = STEP_NOTE
    if dropped:
        other["flows_dropped_without_both_events"] = dropped
    return {"traceEvents": out, "displayTimeUnit": "ms" if step else "ns", "otherData": other}


def write_chrome(trace: Trace, path: Path) -> None:
    import orjson

    data = orjson.dumps(chrome_trace(trace))
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)


# ---------------------------------------------------------------------------
# Parquet
# ---------------------------------------------------------------------------

def parquet_paths(trace: Trace, path: Path) -> dict[str, Path]:
    """``out.parquet`` -> ``{"events": out.events.parquet, ...}`` for the trace's tables."""
    stem = path.name[: -len(".parquet")] if path.name.endswith(".parquet") else path.name
    names = [t for t in TABLES if t != "counters" or trace.counters is not None]
    return {t: path.with_name(f"{stem}.{t}.parquet") for t in names}


def _arrow_column(series: pd.Series) -> Any:
    import pyarrow as pa

    values = [None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else v
              for v in series.tolist()]
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        return pa.array([None if v is None else json.dumps(json_safe(v)) for v in values], pa.string())


def _arrow_table(frame: pd.DataFrame, meta: bytes) -> Any:
    import pyarrow as pa

    columns = {}
    for name in frame.columns:
        col = frame[name]
        if col.dtype == object:
            columns[str(name)] = _arrow_column(col)
        else:
            columns[str(name)] = pa.Array.from_pandas(col)
    table = pa.table(columns) if columns else pa.table({})
    return table.replace_schema_metadata({b"jupyter_profview": meta})


def trace_meta(trace: Trace) -> dict[str, Any]:
    """What every Parquet file of a trace carries under the key ``jupyter_profview``."""
    return {
        "format": trace.format, "time_unit": trace.time_unit,
        "metadata": json_safe(trace.metadata), "quality": trace.quality.as_dict(),
    }


def write_frame(frame: pd.DataFrame, target: Path, meta: Mapping[str, Any], *,
                compression: str = "snappy") -> None:
    """One table as one Parquet file; ``meta`` plus the pandas ``dtypes`` of its
    columns (so a reader can restore categoricals, ``Int64``, ``string``) go
    into the schema metadata under ``jupyter_profview``."""
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError("Parquet output needs pyarrow: pip install pyarrow") from exc

    dtypes = {str(c): str(t) for c, t in frame.dtypes.items()}
    pq.write_table(_arrow_table(frame, json.dumps({**meta, "dtypes": dtypes}).encode()), target,
                   compression=compression)


def write_parquet(trace: Trace, path: Path) -> list[Path]:
    meta = trace_meta(trace)
    written = []
    for table, target in parquet_paths(trace, path).items():
        frame = getattr(trace, table)
        if table == "events":
            frame = frame.reset_index()
        write_frame(frame, target, meta)
        written.append(target)
    return written




def json_safe(value: Any, depth: int = 0) -> Any:
    """Any value as plain JSON: numpy scalars unwrapped, non-finite floats -> None, else str."""
    if depth > 20:
        return str(value)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [json_safe(v, depth + 1) for v in list(value)]
    if value is pd.NA or value is pd.NaT:
        return None
    return str(value)
