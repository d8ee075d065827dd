"""XSpace planes -> columns, one plane at a time (see :mod:`.xspace` for the mapping).

The per-event loop reads only ``metadata_id``, ``offset_ps``, ``duration_ps``
and the event's own stats; everything that follows from the event metadata
(name, category, FLOPs, shapes, ...) is computed once per metadata entry and
spread over the events with numpy.  Events with stats of their own get those
columns overridden where one of the stats that feed a column is present.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import numpy as np

from ..errors import ProfviewError
from ..model import Quality

LIMIT = 2**62
MEMORY_EVENTS = ("MemoryAllocation", "MemoryDeallocation")
INT_COLUMNS = ("flops", "bytes", "correlation_id", "step")
STR_COLUMNS = ("long_name", "shapes", "hlo_module", "tf_op")
SHAPE_STATS = ("shape_with_layout", "tensor_shapes", "shapes")
CONTEXT_STATS = ("_p", "_pt", "_c", "_ct")
# stats that feed a column or the category
SPECIAL = frozenset({"flops", "model_flops", "bytes_accessed", "correlation_id", "step_num", *SHAPE_STATS,
                     "hlo_module", "tf_op", "hlo_category", "hlo_op", *CONTEXT_STATS})
CATEGORY_STATS = frozenset({"hlo_category", "step_num", "hlo_op", "hlo_module", "correlation_id"})
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
        self._off: list[np.ndarray] = []
        self._dur_ps: list[np.ndarray] = []
        self.own: list[tuple[tuple[str, Any], ...] | None] = []
        self.n = 0

    def add_plane(self, index: int, plane: Any) -> None:
        stat_names = {entry.key: entry.value.name for entry in plane.stat_metadata}

        def named(stats: Any) -> dict[str, Any]:
            return {stat_names.get(s.metadata_id, f"<stat {s.metadata_id}>"): stat_value(s, stat_names)
                    for s in stats}

        plane_stats = named(plane.stats)
        label = plane.name or f"<plane {plane.id}>"
        if label in self.planes:
            label = f"{label} #{index}"
        self.planes[label] = {"id": plane.id, "lines": len(plane.lines), "events": 0,
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
        line_names = Counter(line.display_name or line.name for line in plane.lines)
        for li, line in enumerate(plane.lines):
            thread = line.display_name or line.name or f"<line {line.id}>"
            if line_names[thread] > 1:
                thread = f"{thread} #{line.id}"
            self._add_line(index, li, line, label, thread, host, meta_index, stat_names)

    def _add_line(self, index: int, li: int, line: Any, label: str, thread: str, host: bool,
                  meta_index: dict[int, int], stat_names: dict[int, str]) -> None:
        ts = line.timestamp_ns
        if abs(ts) >= LIMIT:
            raise ProfviewError(f"line timestamp_ns {ts} out of range", source=self.name,
                                position=f"planes[{index}].lines[{li}]", expected="ns since the epoch")
        events = line.events
        self.quality.records_read += len(events)
        if not events:
            return
        self.min_line_ts = ts if self.min_line_ts is None else min(self.min_line_ts, ts)
        mids: list[int] = []
        offs: list[int] = []
        durs: list[int] = []
        own = self.own
        for ei, event in enumerate(events):
            if event.WhichOneof("data") == "num_occurrences":
                self.quality.skipped["aggregated event (num_occurrences, no timestamp)"] += 1
                continue
            off, dur = event.offset_ps, event.duration_ps
            if not (-LIMIT < off < LIMIT and 0 <= dur < LIMIT):
                raise ProfviewError(f"event offset_ps {off} / duration_ps {dur} out of range",
                                    source=self.name, position=f"planes[{index}].lines[{li}].events[{ei}]",
                                    expected="picoseconds from the line's timestamp_ns")
            mid = event.metadata_id
            known = meta_index.get(mid)
            if known is None:  # an event whose metadata is missing: named by its id
                known = meta_index[mid] = len(self.meta_name)
                self.meta_name.append(f"<metadata {mid}>")
                self.meta_long.append(None)
                self.meta_stats.append({})
            mids.append(known)
            offs.append(off)
            durs.append(dur)
            stats = event.stats
            own.append(tuple((stat_names.get(s.metadata_id, f"<stat {s.metadata_id}>"),
                              stat_value(s, stat_names)) for s in stats) if stats else None)
        if not mids:
            return
        off_a = np.array(offs, np.int64)
        dur_a = np.array(durs, np.int64)
        start = ts + off_a // 1000  # floor: the ps remainder is dropped
        self._meta.append(np.array(mids, np.int64))
        self._lane.append(np.full(len(mids), len(self.lanes), np.int64))
        self._start.append(start)
        self._dur.append(ts + (off_a + dur_a) // 1000 - start)
        self._off.append(off_a)
        self._dur_ps.append(dur_a)
        self.lanes.append((label, thread, host))
        self.n += len(mids)
        self.planes[label]["events"] += len(mids)
        self.quality.placed["events"] += len(mids)

    def offset(self) -> int:
        """What to add to every time: the profile start if the planes were normalised to it."""
        start, lines = self.profile_start, self.min_line_ts
        if start and lines is not None and 0 <= lines < start // 2 and start < LIMIT:
            return start
        return 0

    def arrays(self) -> dict[str, np.ndarray]:
        def cat(parts: list[np.ndarray]) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, np.int64)

        return {"meta": cat(self._meta), "lane": cat(self._lane), "start": cat(self._start),
                "dur": cat(self._dur), "offset_ps": cat(self._off), "duration_ps": cat(self._dur_ps)}

    def stats(self, meta: int, row: int) -> dict[str, Any]:
        """Every stat of event ``row`` (metadata's, then its own)."""
        own = self.own[row]
        return {**self.meta_stats[meta], **dict(own)} if own else dict(self.meta_stats[meta])

    def columns(self, arrays: dict[str, np.ndarray]) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
        """Per-event name/category/process/thread and the stat-fed columns, plus the
        context stats (``_p``/``_pt``/``_c``/``_ct``) of the events that have them."""
        meta, lane = arrays["meta"], arrays["lane"]
        n_meta = len(self.meta_name)
        # name, long name, stat-fed columns: per metadata, then taken per event
        meta_derived = [derived(s) for s in self.meta_stats]
        cols: dict[str, Any] = {"name": _objects(self.meta_name, n_meta)[meta],
                                "long_name": _objects(self.meta_long, n_meta)[meta]}
        for key in (*INT_COLUMNS, "shapes", "hlo_module", "tf_op"):
            cols[key] = _objects([d[key] for d in meta_derived], n_meta)[meta]
        # category per (metadata, lane) pair
        pair = meta * max(len(self.lanes), 1) + lane
        uniq, inverse = np.unique(pair, return_inverse=True)
        cats = []
        for value in uniq.tolist():
            m, ln = divmod(value, max(len(self.lanes), 1))
            plane, thread, host = self.lanes[ln]
            cats.append(category(self.meta_stats[m], thread, host, self.meta_name[m], self.meta_long[m]))
        cols["category"] = np.asarray(cats, dtype=object)[inverse.reshape(-1)]
        contexts: dict[int, dict[str, Any]] = {}
        meta_ctx = [any(k in s for k in CONTEXT_STATS) for s in self.meta_stats]
        meta_list, lane_list = meta.tolist(), lane.tolist()
        for row, own in enumerate(self.own):
            m = meta_list[row]
            if own is None:
                if meta_ctx[m]:
                    contexts[row] = self.meta_stats[m]
                continue
            recat, ctx, shape_rank, own_flops = False, meta_ctx[m], len(SHAPE_STATS), False
            for key, value in own:
                if key not in SPECIAL:
                    continue
                if key in CATEGORY_STATS and not recat:
                    recat = key != "correlation_id" or cols["category"][row] not in ("host", "device")
                    if not recat:  # a launch (host) or a kernel (device): nothing else to decide
                        cols["category"][row] = "launch" if self.lanes[lane_list[row]][2] else "kernel"
                ctx = ctx or key in CONTEXT_STATS
                target = STAT_COLUMN.get(key)
                if target is None or (key == "model_flops" and own_flops):
                    continue
                if key in SHAPE_STATS:
                    rank = SHAPE_STATS.index(key)
                    if rank > shape_rank:
                        continue
                    shape_rank = rank
                own_flops = own_flops or key == "flops"
                cols[target][row] = as_int(value) if target in INT_COLUMNS else str(value)
            if recat or ctx:
                stats = self.stats(m, row)
                if recat:
                    _, thread, host = self.lanes[lane_list[row]]
                    cols["category"][row] = category(stats, thread, host, self.meta_name[m],
                                                     self.meta_long[m])
                if ctx:
                    contexts[row] = stats
        lanes = self.lanes
        cols["process"] = _objects([p for p, _, _ in lanes], len(lanes))[lane]
        cols["thread"] = _objects([t for _, t, _ in lanes], len(lanes))[lane]
        return cols, contexts


def _objects(values: list[Any], n: int) -> np.ndarray:
    """A 1-d object array of ``values`` (never a 2-d one, whatever the values are)."""
    out = np.empty(n, dtype=object)
    out[:] = values
    return out
