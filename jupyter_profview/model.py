"""The Trace data model: every format loads into these tables.

Times are int64.  ``trace.time_unit`` is ``"ns"`` for traces with a clock, or
``"step"`` for clock-less graph formats, where time columns hold execution-step
indices.  All time columns are relative to the trace's first event (its
absolute clock, where known, is ``metadata["base_time_ns"]``).

Schema (column, dtype, unit, meaning)
-------------------------------------

``events`` -- one row per timed slice or instant; the index (``id``) is the
event id used everywhere else (flows, widget selections).  Rows are sorted by
``start``.

==========  ===========  =========  ==============================================
column      dtype        unit       meaning
==========  ===========  =========  ==============================================
name        category                event / op name
category    category                op type or Chrome ``cat``
phase       category                forward, backward, optimizer, communication,
                                    other (inferred where the format allows)
process     category                process / device label
thread      category                thread / stream label
track       category                display lane key (``process / thread``); of two
                                    events that partly overlap on one thread the
                                    shorter goes to a sub-lane ``... [overlap N]``
kind        category                ``slice``, ``instant`` or ``async``
start       int64        time_unit  start, relative to the trace's first event
dur         int64        time_unit  duration (0 for instants)
depth       int32                   nesting level: 0 iff ``parent`` is -1, else the
                                    parent's ``depth`` + 1
parent      int64                   id of the innermost event on its thread that
                                    encloses it (may be on another track), or -1;
                                    the child lies inside ``[start, start + dur]``
self        int64        time_unit  time the event is the one running (>= 0):
                                    ``dur`` minus the ``dur`` of direct children,
                                    as torch's ``key_averages()`` "Self CPU",
                                    wherever children do not partly overlap
==========  ===========  =========  ==============================================

Nesting follows PyTorch's rule, and partial overlaps (a ``record_function``
starting inside its ``__enter__`` frames) are resolved as stated in
:mod:`jupyter_profview.nesting`: the longer event keeps the main lane, the
event started later owns the time both run; ``self`` sums, per thread, to the thread's busy time.

Formats append their own columns (e.g. ``flops``, ``bytes``, ``input_shapes``,
``external_id``); each format module documents them.

``memory`` -- memory in use over time: ``time`` (int64, time_unit),
``device`` (category: device or allocator), ``bytes`` (int64, bytes in use
after that instant), ``kind`` (category: ``measured`` from the file's
allocation records / counters, ``simulated`` from tensor lifetimes).

``allocations`` -- ``device`` (category), ``address`` (Int64, nullable),
``bytes`` (int64), ``alloc_time`` / ``free_time`` (Int64, time_unit, <NA> if
not seen), ``owner`` (string: op or tensor that owns it).

``nodes`` -- graph formats: ``id`` (string), ``name``, ``op_type``,
``inputs``/``outputs`` (lists of node or tensor ids), ``input_shapes`` /
``output_shapes`` (lists of tuples), ``bytes`` (Int64, output bytes),
``device``, ``order`` (Int64 execution order, <NA> if not executed).

``flows`` -- arrows between events: ``flow_id``, ``name``, ``category``,
``source`` / ``target`` (int64 event ids, -1 where no event encloses the
endpoint), ``start`` / ``end`` (int64, time_unit).

``launches`` -- one row per device activity (GPU kernel, memcpy, memset, and
the ROCm / MTIA equivalents), joined by correlation id to the runtime / driver
call that launched it (Chrome/Kineto traces; empty with these columns for
others).  Rows are sorted by ``kernel``.

============  ========  =========  ==============================================
column        dtype     unit       meaning
============  ========  =========  ==============================================
kernel        int64                event id of the device activity
launch        Int64                event id of the launching runtime / driver
                                   call, <NA> when it is not in the trace
correlation   Int64                the correlation id joining them (<NA>: none)
name          category             the activity's name
type          category             ``kernel``, ``memcpy``, ``memset`` or
                                   ``communication`` (NCCL / RCCL / gloo)
gpu           category             the device's process label (``GPU 0 · A100``)
device        Int64                device index from the file (<NA>: unknown)
stream        Int64                stream (<NA>: unknown)
kernel_start  int64     time_unit  start of the activity
kernel_dur    int64     time_unit  its duration
launch_start  Int64     time_unit  start of the launch call
launch_dur    Int64     time_unit  its duration
delay         Int64     time_unit  launch delay: kernel_start - (launch_start +
                                   launch_dur), clipped at 0 (a kernel can start
                                   before its launch call returns)
launch_name   category             name of the launch call (``cudaLaunchKernel``)
cpu_op        Int64                id of the nearest enclosing ``cpu_op`` of the
                                   launch (the framework op that issued it)
cpu_op_name   category             its name
============  ========  =========  ==============================================

``quality`` -- :class:`Quality`: every record read is either placed in a table
or counted in ``skipped`` with a reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd

PHASES = ("forward", "backward", "optimizer", "communication", "other")
KINDS = ("slice", "instant", "async")
MEMORY_KINDS = ("measured", "simulated")
OVERLAP_TAG = " [overlap {}]"

EVENT_COLUMNS = (
    "name", "category", "phase", "process", "thread", "track", "kind",
    "start", "dur", "depth", "parent", "self",
)
MEMORY_COLUMNS = ("time", "device", "bytes", "kind")
ALLOCATION_COLUMNS = ("device", "address", "bytes", "alloc_time", "free_time", "owner")
NODE_COLUMNS = (
    "id", "name", "op_type", "inputs", "outputs", "input_shapes", "output_shapes",
    "bytes", "device", "order",
)
FLOW_COLUMNS = ("flow_id", "name", "category", "source", "target", "start", "end")
KERNEL_TYPES = ("kernel", "memcpy", "memset", "communication", "dma")  # appended: codes stay
LAUNCH_COLUMNS = (
    "kernel", "launch", "correlation", "name", "type", "gpu", "device", "stream", "kernel_start",
    "kernel_dur", "launch_start", "launch_dur", "delay", "launch_name", "cpu_op", "cpu_op_name",
)


@dataclass
class Quality:
    """What happened to every record read.

    ``records_read`` counts the format's natural records (Chrome event objects,
    lines, ``node_stats``, function records, operators).  Each lands in exactly
    one bucket of ``placed`` (table name -> records) or ``skipped`` (reason ->
    records), so ``unaccounted`` is 0 for a correct loader.  The remaining
    counters annotate placed records.
    """

    records_read: int = 0
    placed: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    overlaps: int = 0            # events moved to an overlap sub-lane
    unmatched_begin: int = 0     # B without E: kept, running to the trace end
    unmatched_end: int = 0       # E without B: counted in skipped
    clipped: int = 0             # durations clipped to the trace end
    negative_durations: int = 0  # negative durations set to 0
    unknown_phases: int = 0      # events whose phase is "other" for lack of a rule
    unpaired_flows: int = 0      # placed slices whose flow v2 bind_id gives no arrow (no partner)
    extra_producers: int = 0     # XSpace flows: producers of a consumer's id beyond the one linked

    @property
    def unaccounted(self) -> int:
        return self.records_read - sum(self.placed.values()) - sum(self.skipped.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "records_read": self.records_read,
            "placed": dict(self.placed),
            "skipped": dict(self.skipped),
            "overlaps": self.overlaps,
            "unmatched_begin": self.unmatched_begin,
            "unmatched_end": self.unmatched_end,
            "clipped": self.clipped,
            "negative_durations": self.negative_durations,
            "unknown_phases": self.unknown_phases,
            "unpaired_flows": self.unpaired_flows,
            "extra_producers": self.extra_producers,
            "unaccounted": self.unaccounted,
        }

    @classmethod
    def _counts(cls) -> list[str]:
        """The plain int counters (every field but the record accounting)."""
        return [f.name for f in fields(cls) if f.name not in ("records_read", "placed", "skipped")]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Quality:
        """The inverse of :meth:`as_dict` (``unaccounted`` is derived, not read)."""
        q = cls(records_read=int(data.get("records_read", 0)),
                placed=Counter(data.get("placed", {})), skipped=Counter(data.get("skipped", {})))
        for key in cls._counts():
            setattr(q, key, int(data.get(key, 0)))
        return q

    def add(self, other: Quality) -> None:
        """In place: add ``other``'s counts (e.g. several ranks shown as one trace)."""
        self.records_read += other.records_read
        self.placed.update(other.placed)
        self.skipped.update(other.skipped)
        for key in self._counts():
            setattr(self, key, getattr(self, key) + getattr(other, key))

    def __repr__(self) -> str:
        parts = [f"{k}={v}" for k, v in self.as_dict().items() if v]
        return f"Quality({', '.join(parts)})"


ArgsLookup = Callable[[int], dict[str, Any]]


@dataclass
class Trace:
    """A loaded profiler trace: a handful of pandas DataFrames and metadata."""

    format: str
    time_unit: str
    events: pd.DataFrame
    memory: pd.DataFrame
    allocations: pd.DataFrame
    nodes: pd.DataFrame
    flows: pd.DataFrame
    quality: Quality
    metadata: dict[str, Any] = field(default_factory=dict)
    counters: pd.DataFrame | None = None
    _args: ArgsLookup | None = field(default=None, repr=False)
    launches: pd.DataFrame = field(default_factory=lambda: empty_launches(), repr=False)
    #: the derived layer's cache (`jupyter_profview.derived.cache`): a Trace is treated as
    #: immutable after load; a copy (`dataclasses.replace`) starts with an empty one
    _derived: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def args(self, event_id: int) -> dict[str, Any]:
        """The full argument dict of one event (``{}`` where the format has none)."""
        if self._args is None:
            return {}
        return self._args(int(event_id))

    def arg_numbers(self, event_ids: Any, key: str) -> np.ndarray:
        """``trace.args(id).get(key)`` of each of ``event_ids`` as float64, NaN where absent or not
        a number (one search of the args for formats that keep them as text, e.g. Chrome JSON)."""
        ids = np.asarray(event_ids, np.int64)
        fast = getattr(self._args, "numbers", None)
        if fast is not None:
            return np.asarray(fast(ids, key), np.float64)
        out = np.full(len(ids), np.nan)
        for i, eid in enumerate(ids.tolist()):
            v = self.args(eid).get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[i] = float(v)
        return out

    @property
    def duration(self) -> int:
        """Span of the trace in ``time_unit``: last event end minus first start."""
        if len(self.events) == 0:
            return 0
        return int((self.events["start"] + self.events["dur"]).max())

    def sql(self, query: str) -> pd.DataFrame:
        """A DuckDB query over this trace's tables, as views of the same names: ``events``
        (its ``id`` index as a column), ``memory``, ``allocations``, ``flows``, ``nodes``,
        ``launches`` and ``counters`` where present (times as in the tables: this trace's
        clock).  Needs duckdb, imported when a query runs
        (:func:`jupyter_profview.query.trace_sql`)."""
        from .query import trace_sql

        return trace_sql(self, query)

    def __repr__(self) -> str:
        return (
            f"<Trace format={self.format!r} unit={self.time_unit!r} "
            f"events={len(self.events)} memory={len(self.memory)} "
            f"allocations={len(self.allocations)} nodes={len(self.nodes)} "
            f"flows={len(self.flows)}>"
        )


# ---------------------------------------------------------------------------
# Empty tables with the documented columns and dtypes
# ---------------------------------------------------------------------------

def _cat(values: Any = (), categories: Sequence[str] | None = None) -> pd.Categorical:
    return pd.Categorical(values, categories=None if categories is None else list(categories))


def empty_memory() -> pd.DataFrame:
    return pd.DataFrame({
        "time": np.empty(0, np.int64), "device": _cat(), "bytes": np.empty(0, np.int64),
        "kind": _cat(categories=MEMORY_KINDS),
    })


def empty_allocations() -> pd.DataFrame:
    return pd.DataFrame({
        "device": _cat(), "address": pd.array([], dtype="Int64"),
        "bytes": np.empty(0, np.int64), "alloc_time": pd.array([], dtype="Int64"),
        "free_time": pd.array([], dtype="Int64"), "owner": pd.array([], dtype="string"),
    })


def empty_nodes() -> pd.DataFrame:
    return pd.DataFrame({
        "id": pd.array([], dtype="string"), "name": pd.array([], dtype="string"),
        "op_type": _cat(), "inputs": pd.Series([], dtype=object),
        "outputs": pd.Series([], dtype=object), "input_shapes": pd.Series([], dtype=object),
        "output_shapes": pd.Series([], dtype=object), "bytes": pd.array([], dtype="Int64"),
        "device": _cat(), "order": pd.array([], dtype="Int64"),
    })


def empty_flows() -> pd.DataFrame:
    return pd.DataFrame({
        "flow_id": pd.array([], dtype="string"), "name": _cat(), "category": _cat(),
        "source": np.empty(0, np.int64), "target": np.empty(0, np.int64),
        "start": np.empty(0, np.int64), "end": np.empty(0, np.int64),
    })


def empty_launches() -> pd.DataFrame:
    ints = {k: pd.array([], dtype="Int64") for k in ("launch", "correlation", "device", "stream",
                                                      "launch_start", "launch_dur", "delay", "cpu_op")}
    frame = pd.DataFrame({
        "kernel": np.empty(0, np.int64), **ints, "name": _cat(), "type": _cat(categories=KERNEL_TYPES),
        "gpu": _cat(), "kernel_start": np.empty(0, np.int64), "kernel_dur": np.empty(0, np.int64),
        "launch_name": _cat(), "cpu_op_name": _cat(),
    })
    return frame[list(LAUNCH_COLUMNS)]


def memory_frame(time: Any, device: Any, nbytes: Any, kind: str) -> pd.DataFrame:
    """A ``memory`` table from absolute times; sorted by (device, time)."""
    times = np.asarray(time, dtype=np.int64)
    kinds = list(MEMORY_KINDS)
    frame = pd.DataFrame({
        "time": times,
        "device": device if isinstance(device, pd.Categorical) else pd.Categorical(device),
        "bytes": np.asarray(nbytes, dtype=np.int64),
        # one code for every row (no list of len(time) strings: this table can have millions)
        "kind": pd.Categorical.from_codes(np.full(len(times), kinds.index(kind), np.int64),
                                          categories=pd.Index(kinds)),
    })
    return frame.sort_values(["device", "time"], kind="stable").reset_index(drop=True)
