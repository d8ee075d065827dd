"""Chrome Trace Event JSON: PyTorch profiler / Kineto, TF ``timeline.py``,
XProf trace viewer, and anything else that writes the Trace Event format.

The file (object ``{"traceEvents": [...]}`` or bare array, optionally gzip)
is decoded into `ChromeColumns` by the native scanner
when it is built, else by `decode_python`; this module
turns the columns into a `Trace`.  ``X``
events and instants are handled with numpy over whole columns; the loops are
over the few ``B``/``E``, async, flow, metadata and counter records.

Records (``ph``) and where they go
:   ``X`` complete -> slice; ``B``/``E`` -> slice, matched as a stack per
    (pid, tid) (an unmatched ``B`` runs to the trace end, ``incomplete``;
    an unmatched ``E`` is skipped); ``i``/``I``/``R`` -> instant (dur 0);
    PyTorch ``[memory]`` instants -> ``memory`` + ``allocations`` (not
    ``events``); ``C`` -> ``counters`` (+ ``memory`` for memory counters);
    ``M`` -> process/thread labels, ``metadata``; ``s``/``t``/``f`` ->
    ``flows`` (paired by (cat, id) in time order whatever the file order,
    see `.flows.flow_pairs`; Kineto launch flows are then rebound by
    correlation id); flow events v2 (``bind_id`` with ``flow_out``/``flow_in``
    on ``X``/``B``/``b``/``n`` slices) -> ``flows`` from slice to slice, after
    the v1 rows (`.flows.build_flows_v2`; a bind id without partner is
    counted in ``quality.unpaired_flows``); ``b``/``e``/``n`` (and legacy ``S``/``F``) -> kind ``async``
    on the track ``<process> / async: <name>``; ``N``/``O``/``D`` objects,
    ``P`` samples, ``T``/``p`` legacy async steps, ``V``/``v`` memory dumps,
    ``c`` clock sync, ``(``/``)`` context events and records without ``ph``
    (XProf's trailing ``{}``) are skipped with a reason.

Columns added to ``events``
:   ``external_id``/``correlation`` (Int64: PyTorch ``External id`` /
    ``correlation`` args, linking CPU ops, runtime calls and GPU kernels),
    ``incomplete`` (bool: begin without end, running to the trace end),
    ``has_args`` (bool: the record has ``args``; ``trace.args(id)`` reads
    them, with an ``E``'s args merged into its ``B``'s).

GPU (PyTorch / Kineto, see `.gpu`)
:   ``trace.launches``: every kernel / memcpy / memset joined by
    correlation id to the runtime call that launched it, with the launch
    delay and the enclosing ``cpu_op``.  Device processes are labelled
    ``GPU n · <name>`` (from ``deviceProperties``), their threads
    ``stream n``, and sort after the host processes.

Times: ``ts``/``dur`` are microseconds in every file (``displayTimeUnit``
only says how to display them and is kept in ``metadata``); they are stored
as int64 ns relative to the first record.  ``info.base_time_ns`` is
the absolute time of that origin where the file says (PyTorch
``baseTimeNanoseconds`` + first ts), else the raw first ts.

Phases: the default name rules (``aten::broadcast_tensors`` is not
communication), then (PyTorch) the ops still ``other`` directly under a
``ProfilerStep#N`` that start before its first backward op are ``forward``
(on threads without steps but with top-level backward ops, the top-level ops
before the first backward), and targets of ``ac2g`` flows (GPU kernels) take
the phase of the CPU op that launched them (also ``async_cpu_to_gpu`` and
the older ``async_gpu``).

``trace.info``: ``track_order`` (base track labels in process/thread sort
order), ``process_labels`` (Kineto's, by process label; a device process
maps to its full ``GPU n · name`` label), ``device_properties``,
``distributed_info``.  Metadata keys: ``gpu`` (counts of device
activities linked / without correlation / launch not in the trace),
``display_time_unit``, ``other_metadata`` (unrecognised ``M`` records),
``thread_names`` (threads named twice: every name, and the one kept; see
`Labels`),
``top_level`` (all top-level keys but ``traceEvents``), ``decoder``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from ... import _native
from ...builder import build_events, dense_codes, make_trace
from ...kinds import code_mask
from ...model import KINDS, Quality, Trace
from ...phase_rules import rule
from ...sources import Source
from .. import TraceFormat
from . import gpu
from .args import ArgsRows
from .columns import ABSENT_TIME, ChromeColumns
from .decode import BOM, decode_python
from .flows import (
    FLOW_ARRAYS,
    V2_PHASES,
    SliceIndex,
    bind_by_correlation,
    build_flows,
    build_flows_v2,
    propagate_phase,
)
from .memory import ALLOCATION_ARGS, MemoryParts, counters, torch_allocations, torch_memory
from .native import decode_chrome
from .slices import Labels, Rows, from_codes, match_async, match_begin_end
from .torch_phases import forward_in_profiler_steps

FLOW_PHASE_CATEGORIES = ("ac2g", "async_cpu_to_gpu", "async_gpu")  # Kineto launch -> kernel flows
# PyTorch op names the default rules would misread (``broadcast`` is not communication here)
PHASE_RULES = (rule(r"^aten::broadcast_tensors$|^aten::broadcast_to$", "other"),)
SKIP_REASONS = {
    "N": "object events (N/O/D)", "O": "object events (N/O/D)", "D": "object events (N/O/D)",
    "P": "sample events (P)", "T": "legacy async step (T/p)", "p": "legacy async step (T/p)",
    "V": "memory dump events (V/v)", "v": "memory dump events (V/v)", "c": "clock sync events (c)",
    "(": "context events", ")": "context events", "\0": "event without \"ph\" (e.g. a trailing {})",
}
TIMED = "XBEiIRCstfbenSF"


def sniff(head: bytes) -> bool:
    """``{`` with ``"traceEvents"`` in the head, or ``[`` then an object with ``"ph"``."""
    text = head[len(BOM):] if head.startswith(BOM) else head
    text = text.lstrip()
    if text.startswith(b"{"):
        return b'"traceEvents"' in head
    if text.startswith(b"["):
        return text[1:].lstrip().startswith(b"{") and b'"ph"' in head
    return False


def decode(source: Source) -> tuple[ChromeColumns, str]:
    """Columns from the native decoder where built and able, else from Python."""
    if _native.available():
        columns = decode_chrome(source)
        if columns is not None:
            return columns, "native"
    return decode_python(source), "python"


def load(source: Source) -> Trace:
    columns, decoder = decode(source)
    trace = to_trace(columns, consume=True)
    trace.metadata["decoder"] = decoder
    return trace


def _ph(*chars: str) -> np.ndarray:
    """A 256-entry lookup table: ``_ph("B", "E")[ph]`` is ``np.isin(ph, [B, E])``, faster."""
    table = np.zeros(256, bool)
    table[[ord(ch) for ch in chars]] = True
    return table


def to_trace(c: ChromeColumns, *, consume: bool = False) -> Trace:
    """The Trace of decoded Chrome columns (see the module doc).  With
    ``consume`` the per-record arrays of ``c`` are dropped (see
    `ChromeColumns.drop_rows`) once the records are sorted out, before
    the tables are built, which lowers the peak memory of a load."""
    q = Quality(records_read=c.n)
    ok = _timed(c, q)
    labels = Labels(c)
    labels.read_metadata(np.flatnonzero(c.ph == ord("M")), q)
    dev_rec = np.flatnonzero(code_mask(c.cats, c.cat_code, gpu.DEVICE_CATEGORIES.__contains__)
                             & (c.ph == ord("X")) & ok)
    devices = gpu.DeviceRows(c, dev_rec, labels)
    labels.finish()
    parts = _sort_out(c, ok, labels, q)
    del ok
    devices.positions = np.searchsorted(parts.x_rec, dev_rec)  # dev_rec is a subset of x_rec, both sorted
    del dev_rec
    cols, args_rows, v2_rows, base = _event_columns(c, parts, labels)
    if consume:
        c.drop_rows()
    events, raw_index, base = build_events(cols, q, base=base, phase_rules_extra=PHASE_RULES, consume=True)
    del cols
    forward_in_profiler_steps(events, q)

    index = SliceIndex(events)
    event_of_row = _event_of_row(raw_index)
    flows = _flows(parts, labels, index, event_of_row[v2_rows], base, q)
    launches, launch_stats = devices.launches(events, event_of_row)
    bind_by_correlation(flows, events, launches, FLOW_PHASE_CATEGORIES)
    propagate_phase(events, flows, FLOW_PHASE_CATEGORIES, q)
    allocations = _allocations(parts, labels, index, events, base)
    del index

    metadata = _metadata(c, labels, events, base)
    if launch_stats["device_activities"]:
        metadata["gpu"] = launch_stats
    return make_trace(
        "chrome", "ns", events, q, base=base, memory=parts.memory.frame(), allocations=allocations,
        flows=flows, counters=parts.counters, launches=launches, metadata=metadata,
        args=args_rows.lookup(raw_index),
    )


def _timed(c: ChromeColumns, q: Quality) -> np.ndarray:
    """Which records are timed (``ph`` in TIMED) and have a ``ts``; counts the
    timed ones without ``ts`` and the untimed ones (other than ``M``) as skipped."""
    ph = c.ph
    has_ts = c.ts_ns != ABSENT_TIME
    timed = _ph(*TIMED)[ph]
    no_ts = timed & ~has_ts
    for p, count in zip(*np.unique(ph[no_ts], return_counts=True), strict=True):
        q.skipped[f"'{chr(p)}' event without ts"] += int(count)
    other = ~timed & (ph != ord("M"))
    for p, count in zip(*np.unique(ph[other], return_counts=True), strict=True):
        q.skipped[SKIP_REASONS.get(chr(p), f"unknown ph {chr(p)!r}")] += int(count)
    return timed & has_ts


@dataclass
class _Parts:
    """The timed records sorted out by kind (taken before the columns are dropped)."""

    x_rec: np.ndarray  # X records (slices), file order
    x_dur: np.ndarray  # their durations (0 where absent)
    i_rec: np.ndarray  # instants other than PyTorch [memory]
    rows: Rows         # B/E and async rows from the loops
    memory: MemoryParts
    counters: pd.DataFrame | None
    flow: ChromeColumns  # s/t/f records
    mem: ChromeColumns   # [memory] records with an allocation or free, time-ordered
    mem_device: pd.Categorical[str]
    v2: ChromeColumns    # slice records with a flow v2 bind_id
    v2_rec: np.ndarray   # their record numbers


def _sort_out(c: ChromeColumns, ok: np.ndarray, labels: Labels, q: Quality) -> _Parts:
    """Sort the timed records (``ok``) into slices, instants, B/E and async
    rows, memory, counters and flows."""
    ph = c.ph
    memory_name = c.names.index("[memory]") if "[memory]" in c.names else -2
    is_instant = _ph("i", "I", "R")[ph]
    is_memory = is_instant & (c.name_code == memory_name)
    x_rec = np.flatnonzero((ph == ord("X")) & ok)
    i_rec = np.flatnonzero(is_instant & ~is_memory & ok)
    x_dur = c.dur_ns[x_rec]
    x_dur[x_dur == ABSENT_TIME] = 0
    trace_end = _trace_end(c, ok, x_rec, x_dur)
    q.placed["events"] += len(x_rec) + len(i_rec)
    rows = Rows()
    match_begin_end(c, np.flatnonzero(_ph("B", "E")[ph] & ok), labels, trace_end, rows, q)
    match_async(c, np.flatnonzero(_ph("b", "e", "n", "S", "F")[ph] & ok), labels, trace_end, rows, q)
    memory = MemoryParts()
    mem_rec, mem_device = torch_memory(c, np.flatnonzero(is_memory & ok), memory, q)
    counter_table = counters(c, np.flatnonzero((ph == ord("C")) & ok), labels, memory, q)
    v2_rec = np.flatnonzero((c.bind_code >= 0) & _ph(*V2_PHASES)[ph] & ok)
    return _Parts(x_rec, x_dur, i_rec, rows, memory, counter_table,
                  flow=c.select(np.flatnonzero(_ph("s", "t", "f")[ph] & ok), FLOW_ARRAYS, numeric=()),
                  mem=c.select(mem_rec, ("ts_ns", "pid_code", "tid_code"), numeric=ALLOCATION_ARGS),
                  mem_device=mem_device, v2=c.select(v2_rec, numeric=()), v2_rec=v2_rec)


def _event_columns(c: ChromeColumns, parts: _Parts, labels: Labels,
                   ) -> tuple[dict[str, Any], ArgsRows, np.ndarray, int]:
    """``(columns, args rows, v2 rows, base)``: the input columns of
    `build_events` (X and instants vectorised, then the loop rows), where
    each record's args are, the input row of each flow v2 record (-1 if none)
    and the earliest time of any table."""
    rows = parts.rows
    simple = _joined(parts.x_rec, parts.i_rec)
    rec = _joined(simple, np.asarray(rows.rec, np.int64))
    start = c.ts_ns[rec]
    dur = _joined(parts.x_dur, np.zeros(len(parts.i_rec), np.int64), np.asarray(rows.dur, np.int64))
    simple_pid = c.pid_code[simple]
    pid = _joined(simple_pid, np.asarray(rows.pid, np.int32))
    thread = _joined(labels.thread_codes(simple_pid, c.tid_code[simple]), np.asarray(rows.thread, np.int64))
    kind = np.concatenate([np.full(len(parts.x_rec), KINDS.index("slice"), np.int8),
                           np.full(len(parts.i_rec), KINDS.index("instant"), np.int8),
                           np.asarray([KINDS.index(k) for k in rows.kind], np.int8)])
    incomplete = np.concatenate([np.zeros(len(simple), bool), np.asarray(rows.incomplete, bool)])
    args_rows = ArgsRows(c, rec, len(rows.rec), np.asarray(rows.end_rec, np.int64))
    v2_rows = _positions(rec, parts.v2_rec)

    times = [start, *parts.memory.times(), parts.flow.ts_ns]
    if parts.counters is not None:
        times.append(parts.counters["time"].to_numpy())
    nonempty = [t for t in times if len(t)]
    base = int(min(int(t.min()) for t in nonempty)) if nonempty else 0

    process_cat = from_codes(labels.process_codes(pid), labels.process_list) \
        if labels.process_list else pd.Categorical([""] * len(rec))
    cols: dict[str, Any] = {
        "name": _dict_categorical(c.name_code[rec], c.names),
        "category": _dict_categorical(c.cat_code[rec], c.cats),
        "process": process_cat,
        "thread": from_codes(thread, _ensure(labels.thread_labels)),
        "start": start,
        "dur": dur,
        "kind": from_codes(kind, KINDS),
        "external_id": _int_column(c.numeric_args["External id"].take(rec)),
        "correlation": _int_column(c.numeric_args["correlation"].take(rec)),
        "incomplete": incomplete,
        "has_args": c.args_offset[rec] >= 0,
    }
    return cols, args_rows, v2_rows, base


def _joined(first: np.ndarray, *rest: np.ndarray) -> np.ndarray:
    """``np.concatenate([first, *rest])``; ``first`` itself (no copy of
    millions of rows) when the rest are empty, as on most traces."""
    if not any(len(r) for r in rest):
        return first
    return np.concatenate([first, *rest]).astype(first.dtype, copy=False)


def _positions(values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Position of each of ``wanted`` in ``values`` (distinct), -1 where absent."""
    if len(wanted) == 0:
        return np.zeros(0, np.int64)
    order = np.argsort(values, kind="stable")
    pos = np.minimum(np.searchsorted(values[order], wanted), max(len(values) - 1, 0))
    hit = (values[order][pos] == wanted) if len(values) else np.zeros(len(wanted), bool)
    return np.where(hit, order[pos] if len(values) else -1, -1)


def _event_of_row(raw_index: np.ndarray) -> np.ndarray:
    """Event id of each events input row (-1: none), then -1 (so row -1 gives -1)."""
    size = max(len(raw_index), int(raw_index.max()) + 1 if len(raw_index) else 0)
    event_of_row = np.full(size + 1, -1, np.int64)
    event_of_row[raw_index] = np.arange(len(raw_index))
    return event_of_row


def _flows(parts: _Parts, labels: Labels, index: SliceIndex, v2_ids: np.ndarray, base: int,
           q: Quality) -> pd.DataFrame:
    """The ``flows`` table: v1 (``s``/``t``/``f`` records, bound to slices by
    time) then v2 (``bind_id`` on slices)."""
    flow = parts.flow
    flow_pairs = labels.process_codes(flow.pid_code).astype(np.int64) * index.width \
        + labels.thread_codes(flow.pid_code, flow.tid_code)
    flows = build_flows(flow, np.arange(flow.n), flow_pairs, index, base, q)
    if parts.v2.n == 0:
        return flows
    v2 = build_flows_v2(parts.v2, v2_ids, base, q)
    merged = {column: union_categoricals([flows[column].array, v2[column].array], ignore_order=True)
              for column in ("name", "category")}  # concat would turn them into object columns
    flows = pd.concat([flows, v2], ignore_index=True)
    for column, values in merged.items():
        flows[column] = values
    return flows


def _allocations(parts: _Parts, labels: Labels, index: SliceIndex, events: pd.DataFrame,
                 base: int) -> pd.DataFrame:
    """``allocations`` from the ``[memory]`` records, each with the name of the
    slice enclosing it on its thread (its owner)."""
    mem = parts.mem
    mem_pairs = labels.process_codes(mem.pid_code).astype(np.int64) * index.width \
        + labels.thread_codes(mem.pid_code, mem.tid_code)
    owner_id = index.enclosing(mem_pairs, mem.ts_ns - base)
    name_array = events["name"].array
    owner_names = np.asarray([*name_array.categories, ""], dtype=object)  # type: ignore[attr-defined]
    owner = owner_names[np.where(owner_id >= 0, name_array.codes[np.maximum(owner_id, 0)], -1)]  # type: ignore[attr-defined]
    return torch_allocations(mem, np.arange(mem.n), parts.mem_device, owner)


def _trace_end(c: ChromeColumns, ok: np.ndarray, x_rec: np.ndarray, x_dur: np.ndarray) -> int:
    """The latest ts, or end of an ``X`` slice, of the timed records (0 if none)."""
    if not ok.any():
        return 0
    end = int(np.max(c.ts_ns, where=ok, initial=np.iinfo(np.int64).min))  # no copy of the ok rows
    if len(x_rec):
        ends = c.ts_ns[x_rec]
        np.add(ends, x_dur, out=ends, where=x_dur > 0)  # ts + max(dur, 0), without a temporary
        end = max(end, int(ends.max()))
    return end


def _ensure(labels: list[str]) -> list[str]:
    return labels if labels else [""]


def _dict_categorical(codes: np.ndarray, values: list[str]) -> pd.Categorical[str]:
    """Categorical of dictionary codes; absent (-1) becomes ``""``."""
    codes = codes.astype(np.int64)
    if (codes < 0).any():
        if "" in values:
            codes = np.where(codes < 0, values.index(""), codes)
        else:
            values = [*values, ""]
            codes = np.where(codes < 0, len(values) - 1, codes)
    return from_codes(codes, values)


def _int_column(values: np.ndarray) -> pd.arrays.IntegerArray:
    """float64 (NaN = absent) -> Int64, NaN and non-integral out-of-range values as <NA>."""
    valid = ~np.isnan(values) & (np.abs(values) < 2.0**63)
    return pd.arrays.IntegerArray(np.where(valid, values, 0).astype(np.int64), ~valid)


def _metadata(c: ChromeColumns, labels: Labels, events: pd.DataFrame, base: int) -> dict[str, Any]:
    top = c.top_level
    meta: dict[str, Any] = {"top_level": top, "array_format": c.array_format}
    base_ns = top.get("baseTimeNanoseconds")
    if isinstance(base_ns, (int, float)) and not isinstance(base_ns, bool):
        meta["base_time_ns"] = int(base_ns) + base
    for key, name in (("displayTimeUnit", "display_time_unit"), ("deviceProperties", "device_properties"),
                      ("distributedInfo", "distributed_info")):
        if key in top:
            meta[name] = top[key]
    process, thread = events["process"].array, events["thread"].array
    width = len(thread.categories) + 1
    codes = dense_codes(process.codes.astype(np.int64) * width + thread.codes)[0]
    pairs = {(str(process.categories[k // width]), str(thread.categories[k % width]))
             for k in codes.tolist()}
    meta["track_order"] = labels.track_order(pairs)
    meta["process_labels"] = {labels.process_label(p): labels.devices[p][0] if p in labels.devices else v
                              for p, v in labels.process_labels.items()}  # a device: its full label
    if labels.other:
        meta["other_metadata"] = labels.other
    renamed = labels.renamed_threads()
    if renamed:
        meta["thread_names"] = renamed
    return meta


FORMAT = TraceFormat(
    name="chrome",
    description="Chrome Trace Event JSON (.json/.json.gz): PyTorch profiler / Kineto, "
                "TensorFlow timeline.py, XProf trace viewer",
    sniff=sniff,
    load=load,
)
