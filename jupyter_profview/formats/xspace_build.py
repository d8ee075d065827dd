"""XSpace planes -> columns, one plane at a time (see :mod:`.xspace` for the mapping).

Linear in the events and without a Python object per event: the per-event
loop reads ``metadata_id``, ``offset_ps``, ``duration_ps`` and the event's
own stats into typed arrays (``array('q')``; a stat's value is kept as an int
where it is one, else in a side list); everything that follows from the
event metadata (name, category, FLOPs, shapes, ...) is computed once per
metadata entry and spread over the events with numpy, and the events' own
stats override those columns with numpy, per stat name.  Events whose own
stats may change their category (``hlo_category``, ``hlo_op``, ...) are
grouped by what decides it, and the category is computed once per group.
"""

from __future__ import annotations

import re
import struct
from array import array
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfviewError
from ..model import Quality

LIMIT = 2**62
MEMORY_EVENTS = ("MemoryAllocation", "MemoryDeallocation")
INT_COLUMNS = ("flops", "bytes", "correlation_id", "step")
STR_COLUMNS = ("long_name", "shapes", "hlo_module", "tf_op")
SHAPE_STATS = ("shape_with_layout", "tensor_shapes", "shapes")
CONTEXT_STATS = ("_p", "_pt", "_c", "_ct")
# stats that feed a column or the category
CATEGORY_STATS = frozenset({"hlo_category", "step_num", "hlo_op", "hlo_module", "correlation_id"})
VALUED_STATS = frozenset({"hlo_category", "hlo_op"})  # the others decide by being there
STAT_COLUMN = {"flops": "flops", "model_flops": "flops", "bytes_accessed": "bytes",
               "correlation_id": "correlation_id", "step_num": "step", "hlo_module": "hlo_module",
               "tf_op": "tf_op", **{k: "shapes" for k in SHAPE_STATS}}
TF_OP_LINES = ("TensorFlow Ops", "TensorFlow Name Scope", "Framework Ops")
# A TensorFlow op's TraceMe on a host thread: "scope/name:Type" (XProf's TF op full name)
TF_OP_NAME = re.compile(r"^[\w./\-]+:([A-Za-z_]\w*)$")
# Op name -> category where no hlo_category stat says it: the first rule with a token of the
# name wins (tokens: the name split at non-letters and lowerCase->UpperCase, lower-cased, and
# joined with "_", so "all-reduce.1" has "all_reduce" and "_MklNativeFusedMatMul" has "mat_mul").
OP_RULES = (
    ("communication", ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute",
                       "collective_broadcast", "allreduce", "allgather", "reducescatter", "alltoall",
                       "send", "recv", "nccl")),
    ("convolution", ("convolution", "conv")),
    ("matmul", ("dot", "gemm", "matmul", "mat_mul", "cublas", "einsum")),
    ("memory", ("copy", "memcpy", "memset")),
    ("fusion", ("fusion",)),
)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_NON_LETTERS = re.compile(r"[^a-z]+")


def stat_value(stat: Any, names: dict[int, str]) -> Any:
    which = stat.WhichOneof("value")
    if which is None:
        return None
    if which == "ref_value":
        return names.get(stat.ref_value, f"<stat metadata {stat.ref_value}>")
    if which == "bytes_value":
        return f"<{len(stat.bytes_value)} bytes>"
    return getattr(stat, which)


def as_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)) and abs(value) < LIMIT:
        return int(value)
    return None


def op_category(op: str) -> str | None:
    """The category of an XLA / TensorFlow op from its name (:data:`OP_RULES`), or None:
    ``dot.4`` -> ``matmul``, ``multiply_add_fusion`` -> ``fusion``, ``all-reduce.1`` ->
    ``communication``, ``copy-start`` -> ``memory``, ``Conv2D`` -> ``convolution``."""
    key = "_" + _NON_LETTERS.sub("_", _CAMEL.sub("_", op).lower()).strip("_") + "_"
    for cat, tokens in OP_RULES:
        if any(f"_{t}_" in key for t in tokens):
            return cat
    return None


def category(stats: dict[str, Any], line: str, host: bool, name: str, full_name: str | None = None) -> str:
    """An event's category (see :mod:`.xspace`); ``name`` is its shown name, ``full_name``
    its metadata ``name`` where that differs."""
    if "hlo_category" in stats:
        return str(stats["hlo_category"])
    if "step_num" in stats or line == "Steps":
        return "step"
    if name in MEMORY_EVENTS:
        return "memory"
    if "hlo_op" in stats or line == "XLA Ops":
        return op_category(str(stats.get("hlo_op", name))) or "xla_op"
    if "hlo_module" in stats or line == "XLA Modules":
        return "xla_module"
    tf_op = TF_OP_NAME.match(full_name or name) if host or line in TF_OP_LINES else None
    if line in TF_OP_LINES or tf_op:
        return op_category(tf_op.group(1) if tf_op else name) or "tf_op"
    if "correlation_id" in stats:
        return "launch" if host else "kernel"
    return "host" if host else "device"


def derived(stats: dict[str, Any]) -> dict[str, Any]:
    """The stat-fed columns of one event (or metadata entry)."""
    shapes = next((stats[k] for k in SHAPE_STATS if k in stats), None)
    return {
        "flops": as_int(stats.get("flops", stats.get("model_flops"))),
        "bytes": as_int(stats.get("bytes_accessed")),
        "correlation_id": as_int(stats.get("correlation_id")),
        "step": as_int(stats.get("step_num")),
        "shapes": None if shapes is None else str(shapes),
        "hlo_module": None if "hlo_module" not in stats else str(stats["hlo_module"]),
        "tf_op": None if "tf_op" not in stats else str(stats["tf_op"]),
    }


class Builder:
    """Columns of every timed event, plane by plane."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.quality = Quality()
        self.planes: dict[str, dict[str, Any]] = {}
        self.profile_start: int | None = None
        self.min_line_ts: int | None = None
        # one entry per event metadata (over all planes)
        self.meta_name: list[str] = []
        self.meta_long: list[str | None] = []
        self.meta_stats: list[dict[str, Any]] = []
        # one entry per line with events: (plane label, thread label, host?)
        self.lanes: list[tuple[str, str, bool]] = []
        # per event, in chunks (one per line)
        self._meta: list[np.ndarray] = []
        self._lane: list[np.ndarray] = []
        self._start: list[np.ndarray] = []
        self._dur: list[np.ndarray] = []
        # the picoseconds below the ns of each start and end (the rest follows from the ns)
        self._rem_start: list[np.ndarray] = []
        self._rem_end: list[np.ndarray] = []
        self.lane_ts: list[int] = []  # per lane: its line's timestamp_ns
        # the events' own stats, one entry per stat, in event order: event row, stat name
        # code (into stat_names), the value as an int (ival, obj -1), a uint64 >= 2**63
        # (ival + 2**64, obj -2) or objs[obj]
        self.stat_names: list[str] = []
        self._stat_code: dict[str, int] = {}
        self.srow = array("i")  # rows < 2**31
        self.skey = array("i")
        self.sival = array("q")
        self.sobj = array("i")
        self.objs: list[Any] = []  # distinct non-int stat values (texts repeat: source lines, op names)
        self._obj_index: dict[tuple[type, Any], int] = {}
        self._stats: list[tuple[np.ndarray, ...]] = []  # chunks of (row, key, ival, obj): flushed buffers
        self._all: tuple[np.ndarray, ...] | None = None  # all stats as numpy, once the planes are read
        self.n = 0

    def obj(self, value: Any) -> int:
        """The index of ``value`` in :attr:`objs`, added once per distinct value (and type)."""
        key = (type(value), value)
        found = self._obj_index.get(key)
        if found is None:
            found = self._obj_index[key] = len(self.objs)
            self.objs.append(value)
        return found

    def code(self, stat: str) -> int:
        """The code of a stat name in :attr:`stat_names`."""
        found = self._stat_code.get(stat)
        if found is None:
            found = self._stat_code[stat] = len(self.stat_names)
            self.stat_names.append(stat)
        return found

    def add_plane(self, index: int, plane: Any, lines: dict[str, Any] | None = None) -> None:
        """One XPlane: its metadata from ``plane`` (protobuf), its lines from
        ``plane.lines`` or, decoded natively (``_native.xplane_lines``; the
        plane is then the rest without them), from the columns ``lines``."""
        stat_names = {entry.key: entry.value.name for entry in plane.stat_metadata}

        def named(stats: Any) -> dict[str, Any]:
            return {stat_names.get(s.metadata_id, f"<stat {s.metadata_id}>"): stat_value(s, stat_names)
                    for s in stats}

        plane_stats = named(plane.stats)
        label = plane.name or f"<plane {plane.id}>"
        if label in self.planes:
            label = f"{label} #{index}"
        self.planes[label] = {"id": plane.id, "lines": len(plane.lines) if lines is None else lines["lines"],
                              "events": 0,
                              **{k: v for k, v in plane_stats.items() if not str(v).startswith("<")}}
        if plane.name == "Task Environment" and "profile_start_time" in plane_stats:
            self.profile_start = as_int(plane_stats["profile_start_time"])
        meta_index: dict[int, int] = {}
        for entry in plane.event_metadata:
            md = entry.value
            shown = md.display_name or md.name or f"<metadata {entry.key}>"
            meta_index[entry.key] = len(self.meta_name)
            self.meta_name.append(shown)
            self.meta_long.append(md.name if md.name and md.name != shown else None)
            self.meta_stats.append(named(md.stats))
        host = plane.name.startswith("/host:")
        key_code = {k: self.code(v) for k, v in stat_names.items()}
        if lines is not None:
            self._add_native_lines(index, lines, label, host, meta_index, stat_names, key_code)
            return
        line_names = Counter(line.display_name or line.name for line in plane.lines)
        for li, line in enumerate(plane.lines):
            thread = line.display_name or line.name or f"<line {line.id}>"
            if line_names[thread] > 1:
                thread = f"{thread} #{line.id}"
            self._add_line(index, li, line, label, thread, host, meta_index, stat_names, key_code)

    def _add_line(self, index: int, li: int, line: Any, label: str, thread: str, host: bool,
                  meta_index: dict[int, int], stat_names: dict[int, str], key_code: dict[int, int]) -> None:
        ts = line.timestamp_ns
        if abs(ts) >= LIMIT:
            raise ProfviewError(f"line timestamp_ns {ts} out of range", source=self.name,
                                position=f"planes[{index}].lines[{li}]", expected="ns since the epoch")
        events = line.events
        self.quality.records_read += len(events)
        if not events:
            return
        self.min_line_ts = ts if self.min_line_ts is None else min(self.min_line_ts, ts)
        mids, offs, durs = array("q"), array("q"), array("q")
        srow, skey, sival, sobj = self.srow, self.skey, self.sival, self.sobj
        row = self.n
        aggregated = 0
        for event in events:
            if event.num_occurrences:  # the other member of the oneof: no timestamp
                aggregated += 1
                continue
            mids.append(event.metadata_id)
            offs.append(event.offset_ps)
            durs.append(event.duration_ps)
            stats = event.stats
            if stats:
                for stat in stats:
                    mid = stat.metadata_id
                    code = key_code.get(mid)
                    if code is None:
                        code = key_code[mid] = self.code(f"<stat {mid}>")
                    which = stat.WhichOneof("value")
                    srow.append(row)
                    skey.append(code)
                    if which == "int64_value":
                        sival.append(stat.int64_value)
                        sobj.append(-1)
                    elif which == "uint64_value":
                        value = stat.uint64_value
                        if value < 2**63:
                            sival.append(value)
                            sobj.append(-1)
                        else:  # kept as its 64 bits, marked
                            sival.append(value - 2**64)
                            sobj.append(-2)
                    else:
                        sival.append(0)
                        sobj.append(self.obj(stat_value(stat, stat_names)))
            row += 1
        if aggregated:
            self.quality.skipped["aggregated event (num_occurrences, no timestamp)"] += aggregated
        if not mids:
            return
        off_a = np.frombuffer(offs, np.int64)
        dur_a = np.frombuffer(durs, np.int64)
        bad = (off_a <= -LIMIT) | (off_a >= LIMIT) | (dur_a < 0) | (dur_a >= LIMIT)
        if bad.any():
            first = int(np.argmax(bad))
            ei = first + _aggregated_before(events, first)
            raise ProfviewError(f"event offset_ps {int(off_a[first])} / duration_ps {int(dur_a[first])} "
                                "out of range", source=self.name,
                                position=f"planes[{index}].lines[{li}].events[{ei}]",
                                expected="picoseconds from the line's timestamp_ns")
        self._meta.append(self._meta_codes(np.frombuffer(mids, np.int64), meta_index))
        n = len(mids)
        start = ts + off_a // 1000  # floor: the ps remainder is dropped
        self._lane.append(np.full(n, len(self.lanes), np.int32))
        self._start.append(start)
        self._dur.append(ts + (off_a + dur_a) // 1000 - start)
        self._rem_start.append((off_a % 1000).astype(np.int16))
        self._rem_end.append(((off_a + dur_a) % 1000).astype(np.int16))
        self.lanes.append((label, thread, host))
        self.lane_ts.append(ts)
        self.n += n
        self.planes[label]["events"] += n
        self.quality.placed["events"] += n

    def _add_native_lines(self, index: int, cols: dict[str, Any], label: str, host: bool,
                          meta_index: dict[int, int], stat_names: dict[int, str],
                          key_code: dict[int, int]) -> None:
        """:meth:`_add_line` for every line, from the columns of ``xplane_lines``:
        the same arrays, in the same order, with numpy."""
        data: bytes | bytearray = cols["data"]

        def text(off: int, n: int) -> str:
            return bytes(data[off:off + n]).decode("utf-8")

        names = [text(o, n) for o, n in zip(cols["line_name_off"].tolist(), cols["line_name_len"].tolist(),
                                             strict=True)]
        shown = [text(o, n) for o, n in zip(cols["line_dname_off"].tolist(), cols["line_dname_len"].tolist(),
                                             strict=True)]
        line_names = Counter(d or nm for d, nm in zip(shown, names, strict=True))
        first = np.append(cols["line_first"], cols["events"])
        agg = cols["ev_agg"].astype(bool)
        # the stats of the timed events, with their event rows (aggregated events' stats are skipped)
        st_first = np.append(cols["ev_first_stat"], cols["stats"])
        row_of = (self.n - 1 + np.cumsum(~agg, dtype=np.int64)).astype(np.intc)  # row of each timed event
        per_event = np.diff(st_first)
        if agg.any():
            st_event = np.repeat(np.arange(cols["events"], dtype=np.intc), per_event)
            keep: np.ndarray | None = ~agg[st_event]
            rows = row_of[st_event[keep]]
            del st_event
        else:  # the usual case: every stat kept
            keep, rows = None, np.repeat(row_of, per_event)
        del row_of, per_event, st_first
        self._add_native_stats(cols, keep, rows, stat_names, key_code)
        for li, line_id in enumerate(cols["line_id"].tolist()):
            thread = shown[li] or names[li] or f"<line {line_id}>"
            if line_names[thread] > 1:
                thread = f"{thread} #{line_id}"
            ts = int(cols["line_ts"][li])
            if abs(ts) >= LIMIT:
                raise ProfviewError(f"line timestamp_ns {ts} out of range", source=self.name,
                                    position=f"planes[{index}].lines[{li}]", expected="ns since the epoch")
            lo, hi = int(first[li]), int(first[li + 1])
            self.quality.records_read += hi - lo
            if hi == lo:
                continue
            self.min_line_ts = ts if self.min_line_ts is None else min(self.min_line_ts, ts)
            timed = ~agg[lo:hi]
            aggregated = int((~timed).sum())
            if aggregated:
                self.quality.skipped["aggregated event (num_occurrences, no timestamp)"] += aggregated
            if not timed.any():
                continue
            off_a, dur_a = cols["ev_off"][lo:hi][timed], cols["ev_dur"][lo:hi][timed]
            bad = (off_a <= -LIMIT) | (off_a >= LIMIT) | (dur_a < 0) | (dur_a >= LIMIT)
            if bad.any():
                first_bad = int(np.argmax(bad))
                ei = int(np.flatnonzero(timed)[first_bad])
                raise ProfviewError(f"event offset_ps {int(off_a[first_bad])} / duration_ps "
                                    f"{int(dur_a[first_bad])} out of range", source=self.name,
                                    position=f"planes[{index}].lines[{li}].events[{ei}]",
                                    expected="picoseconds from the line's timestamp_ns")
            self._meta.append(self._meta_codes(cols["ev_meta"][lo:hi][timed], meta_index))
            n = len(off_a)
            start = ts + off_a // 1000
            self._lane.append(np.full(n, len(self.lanes), np.int32))
            self._start.append(start)
            self._dur.append(ts + (off_a + dur_a) // 1000 - start)
            self._rem_start.append((off_a % 1000).astype(np.int16))
            self._rem_end.append(((off_a + dur_a) % 1000).astype(np.int16))
            self.lanes.append((label, thread, host))
            self.lane_ts.append(ts)
            self.n += n
            self.planes[label]["events"] += n
            self.quality.placed["events"] += n

    def _add_native_stats(self, cols: dict[str, Any], keep: np.ndarray | None, rows: np.ndarray,
                          stat_names: dict[int, str], key_code: dict[int, int]) -> None:
        """The own stats of the timed events (``keep``; None: all), as :meth:`_add_line`
        appends them (the columns of ``cols`` are taken over: released as they are used)."""
        if not len(rows):
            return
        if keep is None:
            meta, kind, val, length = cols.pop("st_meta"), cols.pop("st_kind"), cols.pop("st_val"), \
                cols.pop("st_len")
            texts = cols.pop("texts")
        else:
            texts = cols.pop("texts")[keep[cols["st_kind"] == 4]]
            meta, kind, val, length = (cols.pop(k)[keep] for k in ("st_meta", "st_kind", "st_val", "st_len"))
        uniq, first_at, inverse = _unique_small(meta)
        codes = np.empty(len(uniq), np.int64)
        for k in np.argsort(first_at, kind="stable").tolist():  # unknown ids coded in order of appearance
            mid = int(uniq[k])
            code = key_code.get(mid)
            if code is None:
                code = key_code[mid] = self.code(f"<stat {mid}>")
            codes[k] = code
        self._flush_stats()
        key = codes.astype(np.intc)[inverse.reshape(-1)]
        del meta, inverse
        is_int = (kind == 3) | (kind == 2)
        obj = np.full(len(kind), -1, np.intc)
        obj[(kind == 2) & (val < 0)] = -2  # a uint64 >= 2**63, kept as its bits
        other = np.flatnonzero(~is_int)
        if len(other):
            decoded = iter(texts)  # decoded (and checked) already
            found = []
            parts = zip(kind[other].tolist(), val[other].tolist(), length[other].tolist(), strict=True)
            for k, v, n in parts:
                if k == 4:
                    value: Any = next(decoded)
                elif k == 5:
                    value = f"<{n} bytes>"
                elif k == 6:
                    ref = v & (2**64 - 1)
                    value = stat_names.get(ref, f"<stat metadata {ref}>")
                elif k == 1:
                    value = struct.unpack("<d", struct.pack("<q", v))[0]
                else:
                    value = None
                found.append(self.obj(value))
            obj[other] = found
        val[other] = 0  # in place: the int values
        self._stats.append((rows.astype(np.intc, copy=False), key, val, obj))

    def _meta_codes(self, mids: np.ndarray, meta_index: dict[int, int]) -> np.ndarray:
        """Indices into the metadata lists of the events' metadata ids; an id
        without metadata gets an entry named by its id."""
        uniq, _, inverse = _unique_small(mids)
        codes = np.empty(len(uniq), np.int32)
        for k, mid in enumerate(uniq.tolist()):
            known = meta_index.get(mid)
            if known is None:
                known = meta_index[mid] = len(self.meta_name)
                self.meta_name.append(f"<metadata {mid}>")
                self.meta_long.append(None)
                self.meta_stats.append({})
            codes[k] = known
        return codes[inverse.reshape(-1)]

    def picoseconds(self, arrays: dict[str, np.ndarray], row: int, start_ns: int,
                    end_ns: int) -> tuple[int, int]:
        """The ``offset_ps`` and ``duration_ps`` of event ``row`` as in the file, from its
        start and end ns (before :meth:`offset` is added) and the ps below them."""
        ts = self.lane_ts[int(arrays["lane"][row])]
        off = (start_ns - ts) * 1000 + int(arrays["rem_start"][row])
        return off, (end_ns - ts) * 1000 + int(arrays["rem_end"][row]) - off

    def offset(self) -> int:
        """What to add to every time: the profile start if the planes were normalised to it."""
        start, lines = self.profile_start, self.min_line_ts
        if start and lines is not None and 0 <= lines < start // 2 and start < LIMIT:
            return start
        return 0

    def arrays(self) -> dict[str, np.ndarray]:
        """The per-event arrays (once: the chunks are released): ``meta``, ``lane``,
        ``start`` and ``dur`` (ns), and ``rem_start`` / ``rem_end``, the ps of the
        start and the end below their ns (:meth:`picoseconds` gives the event's
        ``offset_ps`` and ``duration_ps`` back from them)."""
        def cat(parts: list[np.ndarray], dtype: Any = np.int64) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype)

        out = {"meta": cat(self._meta, np.int32), "lane": cat(self._lane, np.int32),
               "start": cat(self._start), "dur": cat(self._dur),
               "rem_start": cat(self._rem_start, np.int16), "rem_end": cat(self._rem_end, np.int16)}
        for chunks in (self._meta, self._lane, self._start, self._dur, self._rem_start, self._rem_end):
            chunks.clear()  # held once, in the arrays
        return out

    def _flush_stats(self) -> None:
        """The stats appended one by one so far, as a numpy chunk."""
        if len(self.srow):
            self._stats.append(tuple(np.frombuffer(buf, dtype).copy() for buf, dtype in (
                (self.srow, np.intc), (self.skey, np.intc), (self.sival, np.int64), (self.sobj, np.intc))))
            self.srow, self.skey, self.sival, self.sobj = array("i"), array("i"), array("q"), array("i")

    def stat_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every own stat: (event row, name code, int value, object index), in file order
        (once the planes are read)."""
        if self._all is None:
            self._flush_stats()
            if self._stats:
                self._all = tuple(np.concatenate(parts) for parts in zip(*self._stats, strict=True))
            else:
                self._all = (np.zeros(0, np.intc), np.zeros(0, np.intc), np.zeros(0, np.int64),
                             np.zeros(0, np.intc))
            self._stats = []
        return self._all  # type: ignore[return-value]

    def value(self, i: int) -> Any:
        """The value of own-stat entry ``i``."""
        _, _, ival, obj = self.stat_arrays()
        o, v = int(obj[i]), int(ival[i])
        return v if o == -1 else v + 2**64 if o == -2 else self.objs[o]

    def own(self, row: int) -> list[tuple[str, Any]]:
        """The own stats of event ``row``, in file order (after the planes are read)."""
        rows, keys, _, _ = self.stat_arrays()
        lo, hi = np.searchsorted(rows, [row, row + 1]).tolist()
        return [(self.stat_names[int(keys[i])], self.value(i)) for i in range(lo, hi)]

    def stats(self, meta: int, row: int) -> dict[str, Any]:
        """Every stat of event ``row`` (metadata's, then its own)."""
        own = self.own(row)
        return {**self.meta_stats[meta], **dict(own)} if own else dict(self.meta_stats[meta])

    def columns(self, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
        """Per-event columns: ``name``, ``long_name``, ``shapes``, ``hlo_module``, ``tf_op``
        as (codes into a list of values, values) pairs; ``flops``, ``bytes``,
        ``correlation_id``, ``step`` as (int64 values, missing mask); ``category``,
        ``process``, ``thread`` as (codes, labels); and the context stats
        ``_p``/``_pt``/``_c``/``_ct`` as (int64 codes of the values, present mask)."""
        return _Columns(self, arrays).build()


def _unique_small(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(values, return_index=True, return_inverse=True)``, by a table
    where the values are small non-negative ints (stat metadata ids), no sort."""
    if not len(values) or int(values.min()) < 0 or int(values.max()) > 4 * len(values) + 65536:
        uniq, first, inverse = np.unique(values, return_index=True, return_inverse=True)
        return uniq, first, inverse.reshape(-1)
    present = np.zeros(int(values.max()) + 1, bool)
    present[values] = True
    uniq = np.flatnonzero(present)
    slot = np.cumsum(present) - 1
    inverse = slot[values]
    first = np.full(len(uniq), len(values), np.int64)
    np.minimum.at(first, inverse, np.arange(len(values)))
    return uniq, first, inverse


def unique_rows(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(np.stack(columns, 1), axis=0, return_inverse=True)`` of int
    columns -- the distinct rows in lexicographic order and each row's index
    among them -- by hashing (``pd.factorize``) instead of sorting n rows."""
    n = len(columns[0])
    code = np.zeros(n, np.int64)
    for column in columns:  # the codes of the rows so far, combined with the next column
        values, _ = pd.factorize(column)
        code, _ = pd.factorize(code * (int(values.max(initial=-1)) + 1) + values)
    first = np.empty(int(code.max(initial=-1)) + 1, np.int64)
    first[code[::-1]] = np.arange(n - 1, -1, -1)  # each distinct row's first occurrence
    rows = np.stack([np.asarray(column)[first] for column in columns], axis=1)
    order = np.lexsort(rows.T[::-1])
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return rows[order], rank[code]


def _aggregated_before(events: Any, kept: int) -> int:
    """How many aggregated events precede the ``kept``-th timed one (for an error's position)."""
    seen = skipped = 0
    for event in events:
        if event.num_occurrences:
            skipped += 1
        elif seen == kept:
            return skipped
        else:
            seen += 1
    return skipped


class _Columns:
    """The columns of :meth:`Builder.columns`, built with numpy from the
    per-metadata values and the own stats (see the module docstring)."""

    def __init__(self, builder: Builder, arrays: dict[str, np.ndarray]) -> None:
        self.b = builder
        self.meta = arrays["meta"]
        self.lane = arrays["lane"]
        n = len(self.meta)
        self.n = n
        self.srow, self.skey, self.sival, self.sobj = builder.stat_arrays()

    def entries(self, stat: str) -> np.ndarray:
        """Positions of the own-stat entries named ``stat``, in file order."""
        code = self.b._stat_code.get(stat)
        return np.flatnonzero(self.skey == code) if code is not None else np.zeros(0, np.int64)

    def values(self, at: np.ndarray) -> list[Any]:
        ival, sobj, objs = self.sival[at].tolist(), self.sobj[at].tolist(), self.b.objs
        return [v if o == -1 else v + 2**64 if o == -2 else objs[o] for v, o in zip(ival, sobj, strict=True)]

    def build(self) -> dict[str, Any]:
        b, meta = self.b, self.meta
        n_meta = len(b.meta_name)
        meta_derived = [derived(s) for s in b.meta_stats]
        cols: dict[str, Any] = {"name": (meta, b.meta_name), "long_name": (meta, b.meta_long)}
        for key in INT_COLUMNS:
            per_meta = [d[key] for d in meta_derived]
            missing = np.array([v is None for v in per_meta] + [True], bool)
            vals = np.array([0 if v is None else v for v in per_meta] + [0], np.int64)
            cols[key] = [vals[meta], missing[meta]]
        for key in ("shapes", "hlo_module", "tf_op"):
            cols[key] = [meta.copy(), [d[key] for d in meta_derived]]
        # own stats feeding a column: later entries win; flops over model_flops; the best shape stat
        order = ["model_flops", "flops", "bytes_accessed", "correlation_id", "step_num", "hlo_module",
                 "tf_op", *reversed(SHAPE_STATS)]
        for stat in order:
            at = self.entries(stat)
            if not len(at):
                continue
            rows = self.srow[at]
            target = STAT_COLUMN[stat]
            if target in INT_COLUMNS:
                ints = [as_int(v) for v in self.values(at)] if (self.sobj[at] >= 0).any() else None
                if ints is None:
                    good = (np.abs(self.sival[at]) < LIMIT) & (self.sobj[at] == -1)
                    vals = np.where(good, self.sival[at], 0)
                else:
                    good = np.array([v is not None for v in ints], bool)
                    vals = np.array([0 if v is None else v for v in ints], np.int64)
                cols[target][0][rows] = vals
                cols[target][1][rows] = ~good
            else:
                codes, labels = cols[target]
                texts = [str(v) for v in self.values(at)]
                inverse, uniq = pd.factorize(np.asarray(texts, dtype=object), sort=True)
                codes[rows] = len(labels) + inverse
                labels.extend(uniq.tolist())
        for key in INT_COLUMNS:
            cols[key] = tuple(cols[key])
        for key in ("shapes", "hlo_module", "tf_op"):
            cols[key] = tuple(cols[key])
        cols["category"] = self.categories(n_meta)
        lanes = b.lanes
        lane = self.lane
        cols["process"] = (lane, [p for p, _, _ in lanes])
        cols["thread"] = (lane, [t for _, t, _ in lanes])
        cols["contexts"] = self.contexts()
        return cols

    def categories(self, n_meta: int) -> tuple[np.ndarray, list[str]]:
        """Category codes per event: per (metadata, line) pair, then per event
        whose own stats decide it (cached by what decides)."""
        b, meta, lane = self.b, self.meta, self.lane
        width = max(len(b.lanes), 1)
        pair = meta.astype(np.int64) * width + lane
        if n_meta * width <= 4 * len(pair) + 65536:  # a table over all pairs: no sort
            seen = np.zeros(n_meta * width, bool)
            seen[pair] = True
            uniq = np.flatnonzero(seen)
            slot = np.cumsum(seen) - 1
            inverse = slot[pair]
            del seen, slot
        else:
            uniq, inverse = np.unique(pair, return_inverse=True)
        del pair
        labels: list[str] = []
        index: dict[str, int] = {}

        def code_of(label: str) -> int:
            found = index.get(label)
            if found is None:
                found = index[label] = len(labels)
                labels.append(label)
            return found

        pair_codes = np.empty(len(uniq), np.int64)
        for k, value in enumerate(uniq.tolist()):
            m, ln = divmod(value, width)
            _, thread, host = b.lanes[ln]
            pair_codes[k] = code_of(category(b.meta_stats[m], thread, host, b.meta_name[m], b.meta_long[m]))
        codes = pair_codes[inverse.reshape(-1)]
        decisive = [self.entries(s) for s in sorted(CATEGORY_STATS)]
        decisive_at = np.concatenate(decisive) if decisive else np.zeros(0, np.int64)
        if not len(decisive_at):
            return codes, labels
        # events whose own stats may decide: keyed by what decides (metadata, line, the values of
        # hlo_category / hlo_op, the presence of the others), the category computed once per key
        decides = np.zeros(len(meta), bool)
        decides[self.srow[decisive_at]] = True
        rows = np.flatnonzero(decides)
        del decides
        parts = [meta[rows].astype(np.int64), lane[rows].astype(np.int64)]
        valued: dict[str, list[Any]] = {}
        for stat in sorted(CATEGORY_STATS):
            at = self.entries(stat)
            code = np.full(len(rows), -1, np.int64)
            if len(at):
                where = np.searchsorted(rows, self.srow[at])
                if stat in VALUED_STATS:
                    found, uniq = pd.factorize(np.asarray([str(v) for v in self.values(at)], dtype=object))
                    code[where] = found  # a later duplicate wins
                    valued[stat] = list(uniq)
                else:
                    code[where] = 0
            parts.append(code)
        keys, inverse = unique_rows(parts)
        key_codes = np.empty(len(keys), np.int64)
        stats_order = sorted(CATEGORY_STATS)
        for k, key in enumerate(keys.tolist()):
            m, ln, *own_codes = key
            own = {stat: (valued[stat][c] if stat in valued else True)
                   for stat, c in zip(stats_order, own_codes, strict=True) if c >= 0}
            _, thread, host = b.lanes[ln]
            stats = {**b.meta_stats[m], **own}
            key_codes[k] = code_of(category(stats, thread, host, b.meta_name[m], b.meta_long[m]))
        codes[rows] = key_codes[inverse.reshape(-1)]
        return codes, labels

    def contexts(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """``_p``/``_pt``/``_c``/``_ct`` per event as (int64 keys, present):
        the metadata's value, overridden by the event's own.  An integer value
        is its own key (a uint64 by its 64 bits); any other value gets a key
        below -2**62, one per distinct text."""
        b, meta = self.b, self.meta
        texts: dict[str, int] = {}

        def key(value: Any) -> int:
            if isinstance(value, int) and not isinstance(value, bool):
                v = value & (2**64 - 1)
                return v - 2**64 if v >= 2**63 else v
            return -(2**62) - texts.setdefault(repr(value), len(texts))

        out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for stat in CONTEXT_STATS:
            per_meta = [s.get(stat) for s in b.meta_stats]
            at = self.entries(stat)
            if not len(at) and all(v is None for v in per_meta):
                continue
            m_present = np.array([v is not None for v in per_meta] + [False], bool)
            m_keys = np.array([0 if v is None else key(v) for v in per_meta] + [0], np.int64)
            keys, present = m_keys[meta], m_present[meta]
            if len(at):
                rows = self.srow[at]
                objects = self.sobj[at] >= 0
                own = self.sival[at].copy()  # ints and uint64 bits are their own keys
                if objects.any():
                    own[objects] = [key(v) for v in self.values(at[objects])]
                keys[rows] = own
                present[rows] = True
            out[stat] = (keys, present)
        return out
