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

`to_perfetto` writes a Perfetto protobuf trace (``.pftrace``) that ui.perfetto.dev opens:
process tracks, one named track per lane, slices as begin/end pairs, instants, counters, and
flows as ``flow_ids`` / ``terminating_flow_ids`` (see `jupyter_profview.formats.perfetto.writer`).

``convert TRACE out.parquet`` writes one Parquet file per table next to the
given name: ``out.events.parquet``, ``out.memory.parquet``,
``out.allocations.parquet``, ``out.nodes.parquet``, ``out.flows.parquet``
(and ``out.counters.parquet`` where the trace has counters,
``out.launches.parquet`` where it has device activity, see
``Trace.launches``); the other tables are written empty too, so the file set
is the same for every format.  The
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
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .model import EVENT_COLUMNS, Trace

STEP_NOTE = "time_unit is 'step' (no clock in the source): 1 step is written as 1 µs"
TABLES = ("events", "memory", "allocations", "nodes", "flows", "counters", "launches")


# ---------------------------------------------------------------------------
# Chrome Trace Event JSON
# ---------------------------------------------------------------------------

def _ts(values: np.ndarray, step: bool) -> list[Any]:
    """Times in the trace unit -> Chrome µs (exact ints for steps)."""
    return values.tolist() if step else (values / 1000.0).tolist()


def chrome_trace(trace: Trace) -> dict[str, Any]:
    """The trace as a Chrome Trace Event JSON object (see the module docstring)."""
    step = trace.time_unit == "step"
    writer = _ChromeWriter(step)
    place = writer.events(trace)
    writer.memory(trace)
    writer.counters(trace)
    dropped = writer.flows(trace, place)
    other: dict[str, Any] = {
        "generator": "jupyter_profview", "source_format": trace.format, "time_unit": trace.time_unit,
    }
    if trace.info.base_time_ns is not None:
        other["base_time_ns"] = trace.info.base_time_ns
    if step:
        other["time_unit_note"] = STEP_NOTE
    if dropped:
        other["flows_dropped_without_both_events"] = dropped
    return {"traceEvents": writer.out, "displayTimeUnit": "ms" if step else "ns", "otherData": other}


class _ChromeWriter:
    """Chrome records being written (``out``), with pid/tid numbers given in
    order of first use, each announced by a ``process_name``/``thread_name``
    metadata record."""

    def __init__(self, step: bool) -> None:
        self.step = step
        self.pids: dict[str, int] = {}
        self.tids: dict[tuple[str, str], int] = {}
        self.out: list[dict[str, Any]] = []

    def pid_of(self, process: str) -> int:
        if process not in self.pids:
            self.pids[process] = len(self.pids) + 1
            self.out.append({"ph": "M", "name": "process_name", "pid": self.pids[process], "tid": 0,
                             "args": {"name": process}})
        return self.pids[process]

    def tid_of(self, process: str, thread: str) -> int:
        key = (process, thread)
        if key not in self.tids:
            self.tids[key] = sum(1 for p, _ in self.tids if p == process) + 1
            self.out.append({"ph": "M", "name": "thread_name", "pid": self.pid_of(process),
                             "tid": self.tids[key], "args": {"name": thread}})
        return self.tids[key]

    def events(self, trace: Trace) -> dict[int, tuple[int, int]]:
        """``X``/``i`` records of the events (extra columns and args in ``args``);
        returns the (pid, tid) of each event id, for the flows."""
        ev = trace.events
        extra_values = {c: ev[c].astype(object).tolist() for c in ev.columns if c not in EVENT_COLUMNS}
        ts = _ts(ev["start"].to_numpy(np.int64), self.step)
        dur = _ts(ev["dur"].to_numpy(np.int64), self.step)
        place: dict[int, tuple[int, int]] = {}
        for i, (eid, name, cat, phase, process, thread, kind) in enumerate(zip(
                ev.index.tolist(), ev["name"].astype(str).tolist(), ev["category"].astype(str).tolist(),
                ev["phase"].astype(str).tolist(), ev["process"].astype(str).tolist(),
                ev["thread"].astype(str).tolist(), ev["kind"].astype(str).tolist(), strict=True)):
            pid, tid = self.pid_of(process), self.tid_of(process, thread)
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
            self.out.append(record)
        return place

    def memory(self, trace: Trace) -> None:
        """One ``C`` record per memory row, on a process named for its device."""
        mem = trace.memory
        for time, device, nbytes in zip(_ts(mem["time"].to_numpy(np.int64), self.step),
                                        mem["device"].astype(str).tolist(), mem["bytes"].tolist(),
                                        strict=True):
            self.out.append({"ph": "C", "name": device, "cat": "memory", "pid": self.pid_of(device), "tid": 0,
                             "ts": time, "args": {device: nbytes}})

    def counters(self, trace: Trace) -> None:
        """``C`` records of the counters other than memory (written by `memory`)."""
        from .formats.chrome.memory import MEMORY_COUNTER

        counters = trace.counters
        if counters is None or not len(counters):
            return
        others = counters[~counters["name"].astype(str).str.contains(MEMORY_COUNTER)]
        for time, process, name, series, value in zip(
                _ts(others["time"].to_numpy(np.int64), self.step), others["process"].astype(str).tolist(),
                others["name"].astype(str).tolist(), others["series"].astype(str).tolist(),
                others["value"].tolist(), strict=True):
            self.out.append({"ph": "C", "name": name, "pid": self.pid_of(process), "tid": 0, "ts": time,
                             "args": {series: value}})

    def flows(self, trace: Trace, place: dict[int, tuple[int, int]]) -> int:
        """An ``s``/``f`` pair per flow whose both ends are events; returns how
        many flows were dropped for lack of one."""
        flows = trace.flows
        dropped = 0
        starts = _ts(flows["start"].to_numpy(np.int64), self.step)
        ends = _ts(flows["end"].to_numpy(np.int64), self.step)
        for fid, name, cat, src, dst, start, end in zip(
                flows["flow_id"].astype(str).tolist(), flows["name"].astype(str).tolist(),
                flows["category"].astype(str).tolist(), flows["source"].tolist(), flows["target"].tolist(),
                starts, ends, strict=True):
            if src not in place or dst not in place:
                dropped += 1
                continue
            common = {"name": name, "cat": cat, "id": fid}
            self.out.append({"ph": "s", **common, "pid": place[src][0], "tid": place[src][1], "ts": start})
            self.out.append({"ph": "f", "bp": "e", **common, "pid": place[dst][0], "tid": place[dst][1],
                             "ts": end})
        return dropped


def write_chrome(trace: Trace, path: Path) -> None:
    import orjson

    data = orjson.dumps(chrome_trace(trace))
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)


# ---------------------------------------------------------------------------
# Perfetto protobuf
# ---------------------------------------------------------------------------

def perfetto_path(trace: Trace) -> Path:
    """Where `to_perfetto` writes without a path: next to the trace's file, its name with
    ``.pftrace`` (``run.pt.trace.json.gz`` -> ``run.pt.trace.pftrace``); ``trace.pftrace`` in
    the working directory where the trace has no file."""
    source = Path(trace.info.source) if trace.info.source else None
    if source is None or not source.parent.is_dir():
        return Path("trace.pftrace").resolve()
    return pftrace_next_to(source)


def pftrace_next_to(source: Path) -> Path:
    """``source``'s name with ``.pftrace`` for its trace suffixes, in its directory."""
    name = source.name
    for suffix in (".gz", ".json", ".pftrace", ".perfetto-trace", ".pb"):
        name = name.removesuffix(suffix)
    return source.parent / f"{name or 'trace'}.pftrace"


def to_perfetto(trace: Trace, path: str | Path | None = None, *, args: bool = True) -> Path:
    """Write ``trace`` (any format) to ``path`` (default: `perfetto_path`, next to the trace's
    file) as a Perfetto protobuf trace and return the path.

    Open it at https://ui.perfetto.dev ("Open trace file"); ``profview.load(path)`` reads it
    back with the same slices (name, start, duration, lane) and flows.  ``args=False`` leaves the
    events' args out (smaller, faster).  Clock-less traces (``time_unit == "step"``): 1 step is
    written as 1 µs."""
    from .formats.perfetto.writer import write

    return write(trace, perfetto_path(trace) if path is None else path, args=args)


# ---------------------------------------------------------------------------
# Parquet
# ---------------------------------------------------------------------------

def parquet_paths(trace: Trace, path: Path) -> dict[str, Path]:
    """``out.parquet`` -> ``{"events": out.events.parquet, ...}`` for the trace's tables."""
    stem = path.name[: -len(".parquet")] if path.name.endswith(".parquet") else path.name
    present = {"counters": trace.counters is not None, "launches": len(trace.launches) > 0}
    names = [t for t in TABLES if present.get(t, True)]
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
        "metadata": json_safe(trace.metadata), "info": json_safe(trace.info.as_dict()),
        "quality": trace.quality.as_dict(),
    }


def write_frame(frame: pd.DataFrame, target: Path, meta: Mapping[str, Any], *,
                compression: str = "snappy", statistics: Collection[str] | None = None,
                lean: bool = False) -> None:
    """One table as one Parquet file; ``meta`` plus the pandas ``dtypes`` of its
    columns (so a reader can restore categoricals, ``Int64``, ``string``) go
    into the schema metadata under ``jupyter_profview``.

    ``lean=True`` (the rank cache, written once per load and read by DuckDB)
    trades file size for write time: dictionary pages only for categorical
    columns (already codes + categories in pandas) and min/max statistics only
    for the columns in ``statistics`` (the time columns, which queries filter on)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError("Parquet output needs pyarrow: pip install pyarrow") from exc

    dtypes = {str(c): str(t) for c, t in frame.dtypes.items()}
    table = _arrow_table(frame, json.dumps({**meta, "dtypes": dtypes}).encode())
    options: dict[str, Any] = {}
    if lean:
        options["use_dictionary"] = [f.name for f in table.schema if pa.types.is_dictionary(f.type)]
        options["write_statistics"] = [c for c in table.column_names if c in set(statistics or ())]
    pq.write_table(table, target, compression=compression, **options)


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
