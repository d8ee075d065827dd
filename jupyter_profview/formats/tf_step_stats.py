"""TensorFlow ``RunMetadata`` / ``StepStats`` (``run_metadata.step_stats``), in
protobuf text format or binary (a whole ``RunMetadata`` or a bare ``StepStats``).

One record = one ``node_stats``.  Each becomes an event on its device:
start = ``all_start + op_start_rel``, end = ``all_start + op_end_rel`` (the
``*_nanos`` fields when present, else the ``*_micros`` ones times 1000), so
``time_unit="ns"``.  ``process`` is the device string, ``thread`` its short
label (``GPU:0``, ``GPU:0/stream:all``; plus the thread name or id where
``thread_id`` is set).  ``category`` is the op type from ``timeline_label``
(``name = OpType(inputs)``).  node_stats without a start time are skipped.

Extra event columns: ``scheduled`` (Int64, when the node became runnable,
relative like ``start``), ``output_bytes`` (sum of the outputs'
``requested_bytes``), ``temp_bytes`` / ``persistent_bytes`` (``memory_stats``,
host + deprecated device fields), ``output_shapes`` (list of tuples).
``trace.args(id)`` gives the node's raw fields.

``memory`` (kind ``measured``), one curve per allocator: the running sum of its
``allocation_records`` (grouped per instant, sorted by time), offset by a
baseline so the curve sits at the allocator's real level: baseline =
``allocator_bytes_in_use`` of the node that finished first, minus the records
up to that instant; that instant is the curve's first point.  With no
snapshot the baseline is 0; an allocator with snapshots but no records gets
its ``allocator_bytes_in_use`` snapshots (at node end) as its curve.

``allocations``: one row per output tensor with an ``allocation_description``:
allocator, ``ptr``, ``allocated_bytes`` (``requested_bytes`` if 0), owner = node
name.  Its alloc/free times come from the node's own ``+bytes`` / ``-bytes``
allocation records on that allocator; without a ``+`` record alloc_time is
the op start, without a ``-`` record free_time is <NA>.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from google.protobuf import message as pb_message
from google.protobuf import text_format

from ..builder import build_events, make_trace
from ..errors import ProfviewError, line_position
from ..model import Quality, Trace, empty_allocations, empty_memory, memory_frame
from ..phase_rules import rule
from ..sources import MAX_PROTOBUF, Source
from . import TraceFormat
from .step_stats_proto import dtype_name, message_class, varint, wire_error

_TEXT_HEAD = re.compile(rb"\A(?:\s|#[^\n]*\n)*(step_stats|dev_stats)\s*:?\s*[{<]")
_DEVICE = re.compile(r"/[\w.:/\- ]*:[\w.:/\- ]*")
_LABEL = re.compile(r"(?s)\s*.*? = ([A-Za-z_][\w.>\-]*)\(")
_LIMIT = 2**62  # |ns| beyond this cannot be a time and would overflow int64 arithmetic
PHASE_RULES = (
    rule(r"(^|/)gradients?(_\d+)?/|_grad/", "backward"),
    rule(r"(^|/)(append_apply_gradient_ops|GradientDescent|Momentum|Adam)/", "optimizer"),
    rule(r"^(ConstantFolding/)?tower_\d+/", "forward"),
)


# -- recognising the input --------------------------------------------------

def _binary_kind(head: bytes) -> str | None:
    """``"StepStats"`` / ``"RunMetadata"`` if ``head`` starts like one in binary.

    StepStats = dev_stats(1) -> device(1) string; RunMetadata wraps that in
    step_stats(1).  Every level must be a length-delimited field 1 whose
    length fits inside its parent, and the device string must look like a TF
    device name (``/job:...``, ``/device:GPU:0``), which no text format does.
    """
    for kind, depth in (("StepStats", 1), ("RunMetadata", 2)):
        pos, end = 0, len(head) + 2**40  # the head may be cut; lengths can run past it
        for _ in range(depth + 1):
            if pos >= len(head) or head[pos] != 0x0A:
                break
            got = varint(head, pos + 1, len(head))
            if got is None or got[0] == 0 or got[1] + got[0] > end:
                break
            size, pos = got
            end = pos + size
        else:
            raw = head[pos:end]
            if len(raw) == end - pos and end - pos <= 1024:
                try:
                    if _DEVICE.fullmatch(raw.decode("utf-8")):
                        return kind
                except UnicodeDecodeError:
                    pass
    return None


def sniff(head: bytes) -> bool:
    return _binary_kind(head) is not None or _TEXT_HEAD.match(head) is not None


def _deepest(data: bytes) -> str:
    """Position of the deepest ``{`` nesting (for "nesting too deep", which
    the protobuf parser reports without one)."""
    depth = deepest = where = 0
    for match in re.finditer(rb"[{}]", data):
        depth += 1 if match[0] == b"{" else -1
        if depth > deepest:
            deepest, where = depth, match.start()
    line = data.count(b"\n", 0, where) + 1
    return f"line {line} (nesting depth {deepest})"


def _read(source: Source) -> tuple[bytes, Callable[[int], int] | None]:
    """The content, streamed: binary protobuf up to its 2 GiB limit; text
    with runs of blank lines squeezed (and a map back to the original line
    numbers)."""
    if _binary_kind(source.head()) is not None:
        return source.read(limit=MAX_PROTOBUF), None
    squeezed = source.squeezed_text()
    return squeezed.data, squeezed.line


def _parse(data: bytes, name: str, line_of: Callable[[int], int] | None = None) -> tuple[Any, str, str]:
    """(StepStats message, message kind, encoding) or ProfviewError."""
    expected = "a TensorFlow RunMetadata or StepStats, as protobuf text or binary"
    kind = _binary_kind(data)
    if kind is not None:
        msg = message_class(kind)()
        try:
            msg.ParseFromString(data)
        except (pb_message.DecodeError, RecursionError) as exc:
            where, why = wire_error(data, msg.DESCRIPTOR) or ("byte offset unknown", str(exc))
            raise ProfviewError(f"invalid binary protobuf: {why}", source=name, position=where,
                                expected=expected) from None
        return (msg.step_stats if kind == "RunMetadata" else msg), kind, "binary"
    head = _TEXT_HEAD.match(data)
    if head is None:
        raise ProfviewError(f"input starts with {data[:40]!r}", source=name, position="byte 0",
                            expected=f"{expected} (text starts with 'step_stats {{' or 'dev_stats {{')")
    kind = "StepStats" if head.group(1) == b"dev_stats" else "RunMetadata"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProfviewError("not valid UTF-8 text", source=name, position=f"byte {exc.start}",
                            expected=expected) from None
    msg = message_class(kind)()
    try:
        text_format.Parse(text, msg, allow_unknown_field=True)
    except text_format.ParseError as exc:
        reason = str(exc).rsplit("': ", 1)[-1][:200]
        number = exc.GetLine()
        if number is not None and line_of is not None:
            number = line_of(number)
        line = f"line {number}, column {exc.GetColumn()}" if number is not None else None
        raise ProfviewError(reason, source=name, position=line,
                            expected=f"{kind} in protobuf text format") from None
    except ValueError as exc:  # e.g. "Value out of range: 99999999999999999999" from the setter
        token = str(exc).rsplit(": ", 1)[-1]
        at = data.find(token.encode()) if token else -1
        spot = line_position(data, at) if at >= 0 else None
        raise ProfviewError(str(exc)[:200], source=name, position=spot,
                            expected=f"{kind} in protobuf text format") from None
    except RecursionError:
        where = _deepest(data)
        if line_of is not None:
            deep_line, rest = where[5:].split(" ", 1)
            where = f"line {line_of(int(deep_line))} {rest}"
        raise ProfviewError("nesting too deep", source=name, position=where, expected=expected) from None
    return (msg.step_stats if kind == "RunMetadata" else msg), kind, "text"


# -- building the trace -------------------------------------------------------

def _short_device(device: str) -> str:
    parts = [p for p in device.split("/") if p and not p.startswith(("job:", "replica:", "task:"))]
    return "/".join(p.removeprefix("device:") for p in parts) or device or "(no device)"


def _times(node: Any) -> tuple[int, int, int, int]:
    """(start, end, all_end, scheduled) in absolute ns; start 0 = unknown."""
    if node.all_start_nanos:
        base = node.all_start_nanos
        return (base + node.op_start_rel_nanos, base + node.op_end_rel_nanos,
                base + node.all_end_rel_nanos, node.scheduled_nanos)
    base = node.all_start_micros
    return ((base + node.op_start_rel_micros) * 1000, (base + node.op_end_rel_micros) * 1000,
            (base + node.all_end_rel_micros) * 1000, node.scheduled_micros * 1000)


def _op_type(node: Any) -> str:
    match = _LABEL.match(node.timeline_label)
    if match:
        return match.group(1)
    if ":" in node.node_name:
        return node.node_name.rsplit(":", 1)[1]
    return "(unknown)"


def _node_args(device: str, node: Any) -> dict[str, Any]:
    outputs = [{
        "slot": out.slot, "dtype": dtype_name(out.tensor_description.dtype),
        "shape": [d.size for d in out.tensor_description.shape.dim],
        "requested_bytes": out.tensor_description.allocation_description.requested_bytes,
        "allocated_bytes": out.tensor_description.allocation_description.allocated_bytes,
        "allocator": out.tensor_description.allocation_description.allocator_name,
        "ptr": out.tensor_description.allocation_description.ptr,
    } for out in node.output]
    memory = [{
        "allocator": m.allocator_name, "total_bytes": m.total_bytes, "peak_bytes": m.peak_bytes,
        "live_bytes": m.live_bytes, "allocator_bytes_in_use": m.allocator_bytes_in_use,
        "allocation_records": [(r.alloc_micros, r.alloc_bytes) for r in m.allocation_records],
    } for m in node.memory]
    scalars = ("node_name", "timeline_label", "all_start_micros", "op_start_rel_micros",
               "op_end_rel_micros", "all_end_rel_micros", "scheduled_micros", "thread_id")
    return {"device": device, **{k: getattr(node, k) for k in scalars},
            "outputs": outputs, "memory": memory}


class _Builder:
    def __init__(self, name: str) -> None:
        self.name = name
        self.quality = Quality()
        self.cols: dict[str, list[Any]] = defaultdict(list)
        self.nodes: list[tuple[str, Any]] = []
        self.records: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.snapshots: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.allocs: list[tuple[str, int | None, int, int, int | None, str]] = []
        self.devices: dict[str, int] = {}
        self.outputs: dict[str, int] = defaultdict(int)

    def add_device(self, index: int, dev: Any) -> None:
        device = dev.device or "(unnamed device)"
        label = _short_device(dev.device)
        threads = {entry.key: entry.value for entry in dev.thread_names}
        self.devices.setdefault(device, 0)
        for k, node in enumerate(dev.node_stats):
            self.quality.records_read += 1
            start, end, all_end, scheduled = _times(node)
            if not (node.all_start_nanos or node.all_start_micros):
                self.quality.skipped["node_stats without all_start_micros"] += 1
                continue
            if max(abs(start), abs(end), abs(all_end), abs(scheduled)) >= _LIMIT:
                raise ProfviewError("timestamp out of range", source=self.name,
                                    position=f"dev_stats[{index}].node_stats[{k}] ({node.node_name!r})",
                                    expected="microseconds since the epoch")
            tid = node.thread_id
            thread = f"{label} / {threads.get(tid) or f'thread {tid}'}" if tid else label
            stats = node.memory_stats
            shapes = [tuple(d.size for d in o.tensor_description.shape.dim) for o in node.output]
            row = {"name": node.node_name, "category": _op_type(node), "process": device,
                   "thread": thread, "start": start, "dur": end - start,
                   "scheduled": scheduled or None,
                   "output_bytes": sum(o.tensor_description.allocation_description.requested_bytes
                                       for o in node.output),
                   "temp_bytes": stats.temp_memory_size + stats.device_temp_memory_size,
                   "persistent_bytes": stats.persistent_memory_size + stats.device_persistent_memory_size,
                   "output_shapes": shapes}
            for key, value in row.items():
                self.cols[key].append(value)
            self.nodes.append((device, node))
            self.devices[device] += 1
            self.quality.placed["events"] += 1
            self._memory(node, start, all_end)

    def _memory(self, node: Any, start: int, all_end: int) -> None:
        own: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for used in node.memory:
            if used.allocator_bytes_in_use:
                self.snapshots[used.allocator_name].append((all_end, used.allocator_bytes_in_use))
            for rec in used.allocation_records:
                t = rec.alloc_micros * 1000
                if abs(t) >= _LIMIT or abs(rec.alloc_bytes) >= _LIMIT:
                    raise ProfviewError("allocation record out of range", source=self.name,
                                        position=f"node {node.node_name!r}",
                                        expected="alloc_micros since the epoch and a byte count")
                self.records[used.allocator_name].append((t, rec.alloc_bytes))
                own[used.allocator_name].append((t, rec.alloc_bytes))
        for out in node.output:
            desc = out.tensor_description.allocation_description
            size = desc.allocated_bytes or desc.requested_bytes
            if not size:
                continue
            self.outputs[desc.allocator_name or "(unknown allocator)"] += 1
            mine = own.get(desc.allocator_name, [])
            alloc = next((r for r in mine if r[1] == size), None)
            if alloc is not None:
                mine.remove(alloc)
            alloc_time = alloc[0] if alloc is not None else start
            free = next((r for r in mine if r[1] == -size and r[0] >= alloc_time), None)
            if free is not None:
                mine.remove(free)
            address = desc.ptr if 0 < desc.ptr < 2**63 else None
            self.allocs.append((desc.allocator_name or "(unknown allocator)", address, size, alloc_time,
                                free[0] if free is not None else None, node.node_name))

    def memory(self) -> tuple[pd.DataFrame, dict[str, Any]]:
        times: list[int] = []
        devices: list[str] = []
        values: list[int] = []
        info: dict[str, Any] = {}
        for allocator in sorted(set(self.records) | set(self.snapshots) | set(self.outputs)):
            snaps = sorted(self.snapshots.get(allocator, []))
            recs = sorted(self.records.get(allocator, []))
            baseline: int | None = None
            if recs:
                rec_t = np.array([t for t, _ in recs], np.int64)
                cum = np.cumsum(np.array([b for _, b in recs], np.int64))
                points = np.unique(rec_t)
                if snaps:
                    t0, in_use = snaps[0]
                    before = np.searchsorted(rec_t, t0, side="right")
                    baseline = in_use - (int(cum[before - 1]) if before else 0)
                    points = np.unique(np.append(points, t0))
                at = np.searchsorted(rec_t, points, side="right")
                curve = np.where(at > 0, cum[np.maximum(at - 1, 0)], 0) + (baseline or 0)
                times += points.tolist()
                values += curve.tolist()
                devices += [allocator] * len(points)
            elif snaps:
                last = dict(snaps)  # the last snapshot per instant
                times += list(last)
                values += list(last.values())
                devices += [allocator] * len(last)
            info[allocator] = {"allocation_records": len(recs), "snapshots": len(snaps),
                               "output_tensors": self.outputs.get(allocator, 0), "baseline_bytes": baseline}
        if not times:
            return empty_memory(), info
        return memory_frame(times, devices, values, "measured"), info

    def allocations(self) -> pd.DataFrame:
        if not self.allocs:
            return empty_allocations()
        device, address, nbytes, alloc, free, owner = zip(*self.allocs, strict=True)
        return pd.DataFrame({
            "device": pd.Categorical(device), "address": pd.array(address, dtype="Int64"),
            "bytes": np.array(nbytes, np.int64), "alloc_time": pd.array(alloc, dtype="Int64"),
            "free_time": pd.array(free, dtype="Int64"), "owner": pd.array(owner, dtype="string"),
        })


def load(source: Source) -> Trace:
    data, line_of = _read(source)
    if not data.strip():
        raise ProfviewError("the input is empty", source=source.name, expected="a RunMetadata/StepStats")
    step_stats, kind, encoding = _parse(data, source.name, line_of)
    builder = _Builder(source.name)
    for index, dev in enumerate(step_stats.dev_stats):
        builder.add_device(index, dev)
    cols = builder.cols
    if not cols["start"]:
        raise ProfviewError("no timed node_stats in the input", source=source.name,
                            expected="at least one dev_stats { node_stats { all_start_micros ... } }")
    base = min(cols["start"])
    columns: dict[str, Any] = {
        **{k: cols[k] for k in ("name", "category", "process", "thread", "start", "dur")},
        "scheduled": pd.array([None if s is None else s - base for s in cols["scheduled"]], dtype="Int64"),
        **{k: np.array(cols[k], np.int64) for k in ("output_bytes", "temp_bytes", "persistent_bytes")},
        "output_shapes": cols["output_shapes"],
    }
    events, raw_index, base = build_events(columns, builder.quality, base=base, phase_rules_extra=PHASE_RULES)
    memory, allocators = builder.memory()
    nodes = builder.nodes
    metadata = {"message": kind, "encoding": encoding, "devices": dict(builder.devices),
                "allocators": allocators}
    return make_trace(
        FORMAT.name, "ns", events, builder.quality, base=base, memory=memory,
        allocations=builder.allocations(), metadata=metadata,
        args=lambda i: _node_args(*nodes[int(raw_index[i])]),
    )


FORMAT = TraceFormat(
    name="tf_step_stats",
    description="TensorFlow RunMetadata / StepStats (protobuf text or binary): per-device op timeline, "
                "allocator memory curves, output allocations",
    sniff=sniff,
    load=load,
)
