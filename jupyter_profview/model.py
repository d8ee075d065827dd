"""The Trace data model: every format loads into these tables.

Times are int64.  ``trace.time_unit`` is ``"ns"`` for traces with a clock, or
``"step"`` for clock-less graph formats, where time columns hold execution-step
indices.  All time columns are relative to the trace's first event (its
absolute clock, where known, is ``info.base_time_ns``).

The tables' columns (name, dtype, unit, meaning, which formats add which
optional columns) are declared once, in [jupyter_profview.schema][]; the
reference's schema page is made from those declarations, the empty tables are
built from them and [`Trace.validate`][jupyter_profview.model.Trace.validate]
checks a loaded trace against them.  ``events`` rows are sorted by ``start``;
``launches`` rows by ``kernel``.

Nesting follows PyTorch's rule, and partial overlaps (a ``record_function``
starting inside its ``__enter__`` frames) are resolved as stated in
`jupyter_profview.nesting`: the longer event keeps the main lane, the
event started later owns the time both run; ``self`` sums, per thread, to the thread's busy time.

Formats append their own columns (e.g. ``flops``, ``bytes``, ``external_id``);
the schema lists them with the formats that write them.

``quality`` -- [Quality][jupyter_profview.model.Quality]: every record read is either placed in a table
or counted in ``skipped`` with a reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .schema import ALLOCATIONS, EVENTS, FLOWS, LAUNCHES, MEMORY, NODES
from .schema import KERNEL_TYPES as KERNEL_TYPES  # re-exported: the formats and analyses import them here
from .schema import KINDS as KINDS
from .schema import MEMORY_KINDS as MEMORY_KINDS
from .schema import PHASES as PHASES

OVERLAP_TAG = " [overlap {}]"
EVENT_COLUMNS = EVENTS.names


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
        """The inverse of `as_dict` (``unaccounted`` is
        derived, not read)."""
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


@dataclass(frozen=True)
class TraceInfo:
    """What the layers above the formats know about a trace, typed (`trace.info`).  The
    format's own extras (`decoder`, `planes`, `gpu`, ...) stay in `trace.metadata`.

    - `source`: the file (or run) the trace was loaded from, "" where unknown;
    - `base_time_ns`: the absolute clock of time 0 (epoch ns where the file says so), None for
      traces without a clock;
    - `device_properties`: the devices as the file describes them (Kineto `deviceProperties`);
    - `distributed_info`: the file's `distributedInfo` (`rank`, `world_size`, `backend`, ...);
    - `process_labels`: process label -> the file's own label for it (Kineto `process_labels`);
    - `track_order`: the base track labels in the file's process / thread order;
    - `ranks`, `offsets`, `align`: for several ranks shown as one trace, the ranks, each rank's
      clock offset from the common origin (ns), and the step they are lined up on
      (`{"step": n, "at": t}`) or None;
    - `run_files`: the run's file names, where one file of a run directory was loaded;
    - `rank_process_labels`, `rank_track_order`: for several ranks shown as one trace
      ([`TraceSet.combined`][jupyter_profview.ranks.traceset.TraceSet.combined]), each rank's own
      `process_labels` and `track_order`.
    """

    source: str = ""
    base_time_ns: int | None = None
    device_properties: tuple[dict[str, Any], ...] = ()
    distributed_info: dict[str, Any] = field(default_factory=dict)
    process_labels: dict[str, str] = field(default_factory=dict)
    track_order: tuple[str, ...] = ()
    ranks: tuple[int, ...] = ()
    offsets: dict[int, int] = field(default_factory=dict)
    align: dict[str, Any] | None = None
    run_files: tuple[str, ...] = ()
    rank_process_labels: dict[int, dict[str, str]] = field(default_factory=dict)
    rank_track_order: dict[int, tuple[str, ...]] = field(default_factory=dict)

    KEYS: ClassVar[tuple[str, ...]] = (
        "source", "base_time_ns", "device_properties", "distributed_info", "process_labels",
        "track_order", "ranks", "offsets", "align", "run_files", "rank_process_labels", "rank_track_order",
    )

    @classmethod
    def split(cls, metadata: dict[str, Any] | None) -> tuple[TraceInfo, dict[str, Any]]:
        """The typed keys of a loader's `metadata` as a TraceInfo, and the rest (the format's
        extras).  A value that is not of its key's type (a file's `distributedInfo` that is not
        an object, say) stays in the rest, as the file had it."""
        rest = dict(metadata or {})
        typed: dict[str, Any] = {}
        for key in cls.KEYS:
            if key in rest and rest[key] is not None:
                try:
                    typed[key] = _INFO_TYPES[key](rest[key])
                except (TypeError, ValueError, AttributeError):
                    continue
                del rest[key]
        return cls(**typed), rest

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TraceInfo:
        """The inverse of [as_dict][jupyter_profview.model.TraceInfo.as_dict] (keys absent, None
        or not of their type: the defaults)."""
        return cls.split(data)[0]

    def as_dict(self) -> dict[str, Any]:
        """The fields as JSON-ready values (what the rank cache writes)."""
        return {
            "source": self.source, "base_time_ns": self.base_time_ns,
            "device_properties": list(self.device_properties), "distributed_info": self.distributed_info,
            "process_labels": self.process_labels, "track_order": list(self.track_order),
            "ranks": list(self.ranks), "offsets": {str(k): v for k, v in self.offsets.items()},
            "align": self.align, "run_files": list(self.run_files),
            "rank_process_labels": {str(r): v for r, v in self.rank_process_labels.items()},
            "rank_track_order": {str(r): list(v) for r, v in self.rank_track_order.items()},
        }

    def replace(self, **changes: Any) -> TraceInfo:
        """A copy with `changes` (the fields are frozen)."""
        return replace(self, **changes)


def _dict(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError("not an object")
    return dict(value)


def _list(value: Any) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise TypeError("not a list")
    return list(value)


_INFO_TYPES: dict[str, Callable[[Any], Any]] = {
    "source": str,
    "base_time_ns": int,
    "device_properties": lambda v: tuple(_list(v)),
    "distributed_info": _dict,
    "process_labels": lambda v: {str(k): str(x) for k, x in _dict(v).items()},
    "track_order": lambda v: tuple(str(t) for t in _list(v)),
    "ranks": lambda v: tuple(int(r) for r in _list(v)),
    "offsets": lambda v: {int(k): int(x) for k, x in _dict(v).items()},
    "align": _dict,
    "run_files": lambda v: tuple(str(f) for f in _list(v)),
    "rank_process_labels": lambda v: {int(r): {str(k): str(x) for k, x in _dict(m).items()}
                                      for r, m in _dict(v).items()},
    "rank_track_order": lambda v: {int(r): tuple(str(t) for t in _list(o)) for r, o in _dict(v).items()},
}


@dataclass
class Trace:
    """A loaded profiler trace: a handful of pandas DataFrames, what is known about it
    ([`info`][jupyter_profview.model.TraceInfo], typed) and the format's extras (`metadata`)."""

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
    info: TraceInfo = field(default_factory=TraceInfo, repr=False)
    #: the derived layer's cache (`jupyter_profview.derived.cache`): a Trace is treated as
    #: immutable after load; a copy (`dataclasses.replace`) starts with an empty one
    _derived: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def args(self, event_id: int) -> dict[str, Any]:
        """The full argument dict of one event (``{}`` where the format has none)."""
        if self._args is None:
            return {}
        return self._args(int(event_id))

    def args_of(self, event_ids: Any) -> list[dict[str, Any]]:
        """``[trace.args(id) for id in event_ids]`` (``{}`` for -1), parsed in bulk where the
        format keeps its args as text (Chrome JSON: one parse over all of them, not one per event)."""
        ids = np.asarray(event_ids, np.int64)
        many = getattr(self._args, "many", None)
        if many is None:
            return [self.args(i) if i >= 0 else {} for i in ids.tolist()]
        if len(ids) == 0 or int(ids.min()) >= 0:
            return list(many(ids))
        out: list[dict[str, Any]] = [{} for _ in range(len(ids))]
        valid = np.flatnonzero(ids >= 0)
        for row, args in zip(valid.tolist(), many(ids[valid]) if len(valid) else [], strict=True):
            out[row] = args
        return out

    def arg_numbers(self, event_ids: Any, key: str) -> np.ndarray:
        """``trace.args(id).get(key)`` of each of ``event_ids`` as float64, NaN where absent or not
        a number.  Chrome JSON answers the numbers its decoders take out while reading (the kernel
        and collective numbers among them, `jupyter_profview._native.keys.NUMERIC_ARGS`) without
        touching the args texts, and parses the args of the events in one call for other keys."""
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

    def arg_values(self, event_ids: Any, key: str) -> tuple[np.ndarray, list[Any]]:
        """``trace.args(id).get(key)`` of each of ``event_ids`` as ``(codes, values)``: int64
        codes (-1 where absent) into a list of distinct values, so that a value shared by many
        events (a launch configuration, a list of input shapes) is one entry, examined once.
        Chrome JSON answers the args its decoders take out while reading
        (`jupyter_profview._native.keys.VALUE_ARGS`) without touching the args texts.  The list
        may be shared with the trace: read it, do not change it."""
        ids = np.asarray(event_ids, np.int64)
        fast = getattr(self._args, "values", None)
        if fast is not None:
            return fast(ids, key)  # type: ignore[no-any-return]
        codes = np.full(len(ids), -1, np.int64)
        values: list[Any] = []
        seen: dict[str, int] = {}
        absent = object()
        for row, eid in enumerate(ids.tolist()):
            value = self.args(eid).get(key, absent) if eid >= 0 else absent
            if value is absent:
                continue
            text = repr(value)
            if text not in seen:
                seen[text] = len(values)
                values.append(value)
            codes[row] = seen[text]
        return codes, values

    @property
    def duration(self) -> int:
        """Span of the trace in ``time_unit``: last event end minus first start."""
        if len(self.events) == 0:
            return 0
        return int((self.events["start"] + self.events["dur"]).max())

    def validate(self) -> None:
        """Check every table against [the schema][jupyter_profview.schema]: raises
        [ProfviewError][jupyter_profview.errors.ProfviewError] naming the table, the column
        and what is wrong (see [jupyter_profview.validation][])."""
        from .validation import validate

        validate(self)

    def sql(self, query: str) -> pd.DataFrame:
        """A DuckDB query over this trace's tables, as views of the same names: ``events``
        (its ``id`` index as a column), ``memory``, ``allocations``, ``flows``, ``nodes``,
        ``launches`` and ``counters`` where present (times as in the tables: this trace's
        clock).  Needs duckdb, imported when a query runs
        (`trace_sql`)."""
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

def empty_memory() -> pd.DataFrame:
    return MEMORY.empty()


def empty_allocations() -> pd.DataFrame:
    return ALLOCATIONS.empty()


def empty_nodes() -> pd.DataFrame:
    return NODES.empty()


def empty_flows() -> pd.DataFrame:
    return FLOWS.empty()


def empty_launches() -> pd.DataFrame:
    return LAUNCHES.empty()


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
