"""XSpace profiles (``*.xplane.pb``): what TF2 (``tf.profiler.experimental``,
the Keras TensorBoard callback), JAX (``jax.profiler.trace``) and XLA write
under ``plugins/profile/<run>/``.  Binary protobuf, optionally gzip.

One record = one ``XEvent``.  Each becomes an event with ``process`` = its
plane's name (``/host:CPU``, ``/device:GPU:0``, ...) and ``thread`` = its
line's display name or name (thread, stream, ``XLA Ops``, ``XLA Modules``,
``Steps``, ...; ``#<line id>`` is appended when two lines of a plane share a
name).  ``name`` is the event metadata's ``display_name`` or ``name``.

Time: start = line ``timestamp_ns`` + event ``offset_ps``, end = start +
``duration_ps``, computed exactly in integers and then floored to whole ns
(``start_ns = timestamp_ns + offset_ps // 1000``, ``end_ns = timestamp_ns +
(offset_ps + duration_ps) // 1000``, ``dur = end_ns - start_ns``): the
picosecond remainder is dropped, starts and ends each lose < 1 ns and nesting
is preserved.  TF and JAX write host planes normalised to the profile start
(line timestamps of a few µs); when the ``Task Environment`` plane carries
``profile_start_time`` and the line timestamps are smaller than it, it is
added back, so ``info.base_time_ns`` is epoch ns.  Aggregated events
(``num_occurrences`` instead of ``offset_ps``) have no time and are counted in
``quality.skipped``.

Stats (event metadata's, then the event's own) are resolved by name
(``ref_value`` -> the referenced stat metadata's name) and kept per event for
``trace.args(id)``.  Extra event columns: ``long_name`` (metadata ``name``),
``flops`` (``flops`` / ``model_flops``), ``bytes`` (``bytes_accessed``),
``correlation_id``, ``step`` (``step_num``), ``shapes``
(``shape_with_layout`` / ``tensor_shapes`` / ``shapes``), ``hlo_module``,
``tf_op``.  ``category``, the first that applies:

1. the ``hlo_category`` stat (XLA's own op category, on GPU / TPU profiles);
2. ``step``: a ``step_num`` stat or an event on a ``Steps`` line;
3. ``memory``: ``MemoryAllocation`` / ``MemoryDeallocation`` (TF's memory profile);
4. an XLA op (an ``hlo_op`` stat or an ``XLA Ops`` line): the category of its op
   name (the ``hlo_op`` stat, else the event's name) by
   `op_category`, else ``xla_op``;
5. ``xla_module``: an ``hlo_module`` stat or an ``XLA Modules`` line;
6. a TensorFlow op (a ``TensorFlow Ops`` / ``TensorFlow Name Scope`` /
   ``Framework Ops`` line, or a host event whose metadata name is a TF op full
   name ``scope/name:Type``, how TF's executor names an op's TraceMe): the
   category of its type (``Type``, else the name), else ``tf_op``;
7. ``launch`` / ``kernel``: a correlation id on a host / device plane;
8. ``host`` / ``device``.

`op_category` (where no ``hlo_category`` says it), first
match on the name's tokens (split at non-letters and at lower->Upper case,
e.g. ``all-reduce.1`` -> all, reduce; ``_MklNativeFusedMatMul`` -> ...,
mat, mul): ``communication`` (all-reduce, all-gather, reduce-scatter,
all-to-all, collective-permute/broadcast, send, recv, nccl), ``convolution``
(convolution, conv), ``matmul`` (dot, gemm, matmul / mat mul, cublas,
einsum), ``memory`` (copy, memcpy, memset), ``fusion`` (any other fusion);
other names (``wrapped_tanh``, ``AddV2``) keep ``xla_op`` / ``tf_op``.

``flows``: host -> device for events sharing a ``correlation_id`` (CUPTI
launch -> kernel), and producer -> consumer for the TraceMe context stats
(``_pt``/``_p`` -> ``_ct``/``_c`` of the same type and id).  One arrow per
consumer (device event, ``_c`` event): from the latest producer with its id
that starts no later than it, else the first one; where several producers
share an id (a merged or hostile file) the others are counted in
``quality.extra_producers``, so the cost stays linear in the events.

Cost: linear in the events, no Python object per event (see
`.xspace_build`); ``benchmarks/bench_xspace.py`` measures it.  ``memory`` /
``allocations``: from ``MemoryAllocation`` / ``MemoryDeallocation`` events
(TF's memory profile): ``bytes_allocated`` in use per ``allocator_name``
(kind ``measured``), buffers by ``addr`` with ``allocation_bytes``.

The outer ``XSpace`` is read plane by plane from the (decompressed) stream:
only one plane is held parsed at a time; `.xspace_build` turns each into
columns.  A directory (a TensorBoard ``logs/``, ``plugins/profile/`` or a run
directory) is resolved by `find_in_directory` (the latest run's files, one
per host; several hosts load as a TraceSet, see
`jupyter_profview.ranks.load_many` on the run directory).  ``metadata["host"]``: the XSpace's
``hostnames`` entry, else the file name's ``<host>`` part.
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from google.protobuf import message as pb_message

from ..builder import build_events, make_trace
from ..errors import ProfviewError
from ..model import Trace, memory_frame
from ..sources import Source
from . import TraceFormat
from .step_stats_proto import varint, wire_error
from .xspace_build import Builder
from .xspace_flows import event_links, flow_frame
from .xspace_proto import WireError, message_class, top_level_fields
from .xspace_rules import INT_COLUMNS, MEMORY_EVENTS, STR_COLUMNS, as_int

log = logging.getLogger(__name__)
EXPECTED = "an XSpace profile (*.xplane.pb: binary protobuf, planes of lines of events)"


def sniff(head: bytes) -> bool:
    """An XSpace starts with ``planes`` (field 1, length-delimited) whose first
    fields are ``id`` (varint, optional) and a printable ``name`` (field 2).
    StepStats/RunMetadata also start with 0x0A but continue with another 0x0A
    (a length-delimited field 1, which XPlane's int64 ``id`` cannot be)."""
    if len(head) < 4 or head[0] != 0x0A:
        return False
    got = varint(head, 1, len(head))
    if got is None or got[0] < 2:
        return False
    size, pos = got
    end = pos + size
    if pos < len(head) and head[pos] == 0x08:
        got = varint(head, pos + 1, len(head))
        if got is None:
            return False
        pos = got[1]
    if pos >= len(head) or head[pos] != 0x12:
        return False
    got = varint(head, pos + 1, len(head))
    if got is None or not 0 < got[0] <= 1024 or got[1] + got[0] > min(end, len(head)):
        return False
    try:
        name = head[got[1]:got[1] + got[0]].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return name.isprintable()


def _memory(builder: Builder, arrays: dict[str, np.ndarray], names: np.ndarray,
            start: np.ndarray) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """``memory`` and ``allocations`` from TF's MemoryAllocation / MemoryDeallocation events
    (``names``: each event's name, or anything ``==`` compares with them)."""
    times: list[int] = []
    devices: list[str] = []
    values: list[int] = []
    open_bufs: dict[tuple[str, int], int] = {}
    rows: list[list[Any]] = []
    for row in np.flatnonzero(np.isin(names, MEMORY_EVENTS)).tolist():
        stats = builder.stats(int(arrays["meta"][row]), row)
        device = str(stats.get("allocator_name") or builder.lanes[int(arrays["lane"][row])][0])
        t = int(start[row])
        in_use = as_int(stats.get("bytes_allocated"))
        if in_use is not None:
            times.append(t)
            devices.append(device)
            values.append(in_use)
        addr = as_int(stats.get("addr"))
        size = as_int(stats.get("allocation_bytes", stats.get("requested_bytes")))
        if names[row] == "MemoryAllocation" and size is not None:
            rows.append([device, addr, size, t, None, str(stats.get("tf_op") or "")])
            if addr is not None:
                open_bufs[(device, addr)] = len(rows) - 1
        elif names[row] == "MemoryDeallocation" and addr is not None and (device, addr) in open_bufs:
            rows[open_bufs.pop((device, addr))][4] = t
    memory = memory_frame(times, devices, values, "measured") if times else None
    if not rows:
        return memory, None
    dev_col, address, nbytes, alloc, free, owner = zip(*rows, strict=True)
    allocations = pd.DataFrame({
        "device": pd.Categorical(dev_col), "address": pd.array(address, dtype="Int64"),
        "bytes": np.array(nbytes, np.int64), "alloc_time": pd.array(alloc, dtype="Int64"),
        "free_time": pd.array(free, dtype="Int64"), "owner": pd.array(owner, dtype="string"),
    })
    return memory, allocations


def _plane_error(data: bytes | bytearray, at: int, index: int, exc: Exception) -> ProfviewError:
    desc = message_class("XPlane").DESCRIPTOR
    found = wire_error(bytes(data), desc, path=f"planes[{index}]")
    if found is None:
        where, why = f"byte {at} (in planes[{index}])", str(exc) or type(exc).__name__
    else:
        where, why = found
        match = re.match(r"byte (\d+)(.*)", where)
        if match:
            where = f"byte {at + int(match.group(1))}{match.group(2)}"
    return ProfviewError(f"invalid XPlane: {why}", source="", position=where, expected=EXPECTED)


BIG_PLANE = 128 * 1024 * 1024  # a plane beyond this must not come from a gzip bomb (see _plane_guard)
MAX_EXPANSION = 100  # decompressed / compressed bytes: real protobuf stays far below, filler ~1000
MAX_UNKNOWN = 10_000  # top-level fields XSpace does not define before the input is refused


def load(source: Source) -> Trace:
    if not sniff(source.head()):
        raise ProfviewError(f"input starts with {source.head()[:40]!r}", source=source.name,
                            position="byte 0", expected=EXPECTED)
    builder = Builder(source.name)
    extra, index = _read_planes(source, builder)
    if builder.n == 0:
        raise ProfviewError(f"no timed events in {index} plane(s)", source=source.name,
                            expected="at least one XLine with XEvents")
    return _to_trace(source, builder, extra)


def _read_planes(source: Source, builder: Builder) -> tuple[dict[str, list[str]], int]:
    """Stream the XSpace's planes into ``builder``, one at a time; returns the
    ``errors``/``warnings``/``hostnames`` strings and the number of planes.

    Bounded memory on hostile input: a plane is assembled only from bytes
    that arrive (never from its declared length); a gzip input whose plane
    grows beyond BIG_PLANE while the stream expands more than MAX_EXPANSION
    times is refused (a bomb), and so are the known fields with a wrong wire
    type and more than MAX_UNKNOWN unknown top-level fields."""
    plane_class = message_class("XPlane")
    extra: dict[str, list[str]] = defaultdict(list)
    index = unknown = 0
    try:
        for number, at, value in top_level_fields(source.chunks(), _plane_guard(source)):
            if number in (1, 2, 3, 4) and not isinstance(value, (bytes, bytearray)):
                raise WireError(at, f"{('planes', 'errors', 'warnings', 'hostnames')[number - 1]} "
                                    f"(field {number}) is not length-delimited")
            if number == 1:
                plane = plane_class()
                lines = _native_lines(value)
                try:
                    plane.ParseFromString(value if lines is None else lines["rest"])
                except (pb_message.DecodeError, RecursionError) as exc:
                    err = _plane_error(value, _value_start(at, value), index, exc)
                    raise ProfviewError(err.reason, source=source.name, position=err.position,
                                        expected=EXPECTED) from None
                builder.add_plane(index, plane, lines)
                del plane, lines
                index += 1
            elif number in (2, 3, 4):
                try:
                    extra[("errors", "warnings", "hostnames")[number - 2]].append(value.decode("utf-8"))
                except UnicodeDecodeError:
                    raise WireError(at, "string is not valid UTF-8") from None
            else:
                unknown += 1
                if unknown > MAX_UNKNOWN:
                    raise WireError(at, f"more than {MAX_UNKNOWN:,} top-level fields XSpace does not define")
    except WireError as exc:
        raise ProfviewError(exc.reason, source=source.name, position=f"byte {exc.position}",
                            expected=EXPECTED) from None
    return extra, index


def _native_lines(value: bytes | bytearray) -> dict[str, Any] | None:
    """The plane's lines decoded natively (``_native.xplane_lines``), or None:
    no native library, or a plane it leaves to protobuf (protobuf then
    reports what is wrong), or text that is not UTF-8 (the same)."""
    from .. import _native

    if not _native.available():
        return None
    lines = _native.xplane_lines(value)
    if lines is None:
        return None
    data = lines["data"] = value
    seen: dict[bytes, str] = {}  # one str per distinct text (stats repeat: source lines, op names)
    try:
        for off, n in (("line_name_off", "line_name_len"), ("line_dname_off", "line_dname_len")):
            for o, k in zip(lines[off].tolist(), lines[n].tolist(), strict=True):
                bytes(data[o:o + k]).decode("utf-8")
        strings = lines["st_kind"] == 4
        texts = np.empty(int(strings.sum()), dtype=object)
        for j, (o, k) in enumerate(zip(lines["st_val"][strings].tolist(), lines["st_len"][strings].tolist(),
                                       strict=True)):
            raw = bytes(data[o:o + k])
            text = seen.get(raw)
            if text is None:
                text = seen[raw] = raw.decode("utf-8")
            texts[j] = text
    except UnicodeDecodeError:
        return None
    lines["texts"] = texts
    return lines


def _plane_guard(source: Source) -> Callable[[int, int], None] | None:
    """Stops assembling a plane of a gzip input beyond BIG_PLANE bytes while
    the input expands more than MAX_EXPANSION times (see `Source.expansion`)."""
    if not source.is_gzip:
        return None

    def guard(at: int, got: int) -> None:
        if got > BIG_PLANE and source.expansion() > MAX_EXPANSION:
            raise WireError(at, f"a plane of more than {BIG_PLANE >> 20} MiB from gzip data expanding "
                                f"{source.expansion():.0f}x (real profiles compress far less: a gzip bomb?)")

    return guard


def _to_trace(source: Source, builder: Builder, extra: dict[str, list[str]]) -> Trace:
    """The Trace of the planes collected in ``builder``.  What is only needed on
    the way (the per-event columns, the context keys) is released as soon as
    it is used, so that the peak stays a few hundred bytes per event."""
    offset = builder.offset()
    arrays = builder.arrays()
    cols = builder.columns(arrays)
    if len(arrays["start"]) and max(abs(int(arrays["start"].max())), abs(int(arrays["start"].min()))) + \
            offset >= 2**62:
        raise ProfviewError("event times out of range", source=source.name,
                            expected="line timestamp_ns + offset_ps within ±2**62 ns")
    start = arrays.pop("start")
    start += offset
    links = event_links(builder, arrays["lane"], cols, start)
    del cols["contexts"]
    columns: dict[str, Any] = {k: _categorical(*cols.pop(k))
                               for k in ("name", "category", "process", "thread")}
    memory, allocations = _memory(builder, arrays, _memory_names(columns["name"]), start)
    columns["start"] = start
    columns["dur"] = arrays.pop("dur")
    for key in INT_COLUMNS:
        values, missing = cols.pop(key)
        columns[key] = pd.arrays.IntegerArray(values, missing)  # 0 where missing
    for key in STR_COLUMNS:
        columns[key] = _categorical(*cols.pop(key))
    del cols, start
    events, raw_index, base = build_events(columns, builder.quality, consume=True)
    metadata = {"planes": builder.planes, "profile_start_time_ns": builder.profile_start,
                "timestamps_normalised": bool(offset), **dict(extra),
                "host": host_of(source.name, extra.get("hostnames", [])),
                "steps": int(events["category"].eq("step").sum())}
    flows = flow_frame(links, events, raw_index)
    starts, durs = events["start"].to_numpy(), events["dur"].to_numpy()

    def args(i: int) -> dict[str, Any]:
        start_ns = int(starts[i]) + base - offset  # as in the file (before the profile start is added)
        return _args(builder, arrays, int(raw_index[i]), start_ns, start_ns + int(durs[i]))

    return make_trace(FORMAT.name, "ns", events, builder.quality, base=base, memory=memory,
                      allocations=allocations, flows=flows, metadata=metadata, args=args)


def _memory_names(names: pd.Categorical) -> np.ndarray:
    """Each event's name where it is a memory event, else "" (what `_memory` compares)."""
    labels = np.asarray(names.categories, dtype=object)
    is_memory = np.isin(labels, MEMORY_EVENTS)
    if not is_memory.any():
        return np.zeros(len(names), dtype="U1")
    return np.where(is_memory[names.codes] & (names.codes >= 0), labels[names.codes], "")


def _categorical(codes: np.ndarray, values: list[Any]) -> pd.Categorical:
    """Codes into ``values`` (equal values merged, ``None`` missing) as a Categorical."""
    labels = np.empty(len(values) + 1, dtype=object)
    labels[:-1] = values
    labels[-1] = None
    present = np.array([v is not None for v in labels], bool)
    uniq, inverse = np.unique(labels[present].astype(str), return_inverse=True)
    remap = np.full(len(labels), -1, np.int64)
    remap[present] = inverse.reshape(-1)
    return pd.Categorical.from_codes(remap[codes], categories=pd.Index(uniq, dtype=str))


def _args(builder: Builder, arrays: dict[str, np.ndarray], row: int, start_ns: int,
          end_ns: int) -> dict[str, Any]:
    meta = int(arrays["meta"][row])
    plane, thread, _ = builder.lanes[int(arrays["lane"][row])]
    offset_ps, duration_ps = builder.picoseconds(arrays, row, start_ns, end_ns)
    return {"plane": plane, "line": thread, "offset_ps": offset_ps, "duration_ps": duration_ps,
            "metadata_name": builder.meta_long[meta] or builder.meta_name[meta], **builder.stats(meta, row)}


def _value_start(key_at: int, value: bytes | bytearray) -> int:
    """Offset of a length-delimited value whose key (field 1, one byte) is at ``key_at``."""
    size = len(value)
    length = 1
    while size >= 0x80:
        size >>= 7
        length += 1
    return key_at + 1 + length


def find_in_directory(path: Path) -> list[Path]:
    """The XSpace files of a TensorBoard log directory: ``logs/``,
    ``logs/plugins/profile/`` or ``.../<run>/``.  Files are grouped by run
    directory; the latest run (names are ``YYYY_MM_DD_HH_MM_SS``) is taken and
    its files (one per host, ``<host>.xplane.pb``) are returned sorted by name.
    What to do with several hosts is the loader's business
    (``load`` refuses several and names ``load_many``, which loads them as ranks)."""
    found = sorted(p for p in path.rglob("*.xplane.pb*") if p.is_file() and
                   (p.name.endswith(".xplane.pb") or p.name.endswith(".xplane.pb.gz")))
    if not found:
        raise ProfviewError("directory has no *.xplane.pb file", source=str(path),
                            expected="a TensorBoard log directory: plugins/profile/<run>/<host>.xplane.pb")
    runs: dict[Path, list[Path]] = defaultdict(list)
    for file in found:
        runs[file.parent].append(file)
    run = max(runs, key=lambda d: (d.name, str(d)))
    if len(runs) > 1:
        log.info("%s: %d profile runs; loading the latest, %s", path, len(runs), run.name)
    return runs[run]


def host_of(source_name: str, hostnames: list[str]) -> str:
    """The host a profile is from: the XSpace's first ``hostnames`` entry, else the
    file name without ``.xplane.pb`` / ``.xplane.pb.gz`` (TensorBoard names the files
    ``<host>.xplane.pb``), else ``""``."""
    if hostnames and hostnames[0]:
        return hostnames[0]
    base = Path(source_name).name
    for suffix in (".xplane.pb.gz", ".xplane.pb"):
        if base.endswith(suffix):
            return base[:-len(suffix)]
    return ""


FORMAT = TraceFormat(
    name="xspace",
    description="XSpace profile (*.xplane.pb) from TF2 / JAX / XLA: events per plane and line, XLA op "
                "categories, steps, flows, TF memory profile",
    sniff=sniff,
    load=load,
)
