"""Perfetto protobuf traces (``.pftrace``, ``.perfetto-trace``, ``.proto``; gzip transparent):
what Chrome's tracing and the DevTools protocol (``Tracing.start`` with
``streamFormat: "proto"``), Perfetto's own SDK and ``tracebox``, and PyTorch's newer profiler
write.

A ``Trace`` message: ``repeated TracePacket packet = 1``.  Track events become the tables:

* ``events``: each slice (``TYPE_SLICE_BEGIN`` ... ``TYPE_SLICE_END`` on its track, legacy
  ``X`` events with their ``duration_us``) and instant (``TYPE_INSTANT``, legacy ``I``/``i``/
  ``R``/``n``); ``process`` / ``thread`` from the track: a thread track is ``name (tid)`` in its
  process, any other track its own name in the process of its nearest ancestor with one
  (see `.tables.Labels`); ``category`` the categories joined by ``,``; debug annotations
  are ``trace.args(id)``; a begin never ended runs to the trace's end, ``incomplete`` and
  counted in ``quality.unmatched_begin``;
* ``counters``: ``TYPE_COUNTER`` values and ``extra_counter_values`` (incremental tracks
  accumulated, ``unit_multiplier`` applied), ``name`` the counter track's name;
* ``flows``: v2 flows (``flow_ids``, ``terminating_flow_ids``), slice to slice.

The per-sequence state rules (interning, defaults, incremental state, clocks) are
Perfetto's own: `.reader` and `.clocks` say how.  Times are the trace clock's ns
(``info.base_time_ns``: the first event's), exact integers throughout.

A file that breaks off (truncated) or turns to garbage between packets keeps the packets before
the damage: ``quality.skipped`` counts the loss and ``metadata["damage"]`` says where (byte
offset) and what was found; damage before the first packet is a ProfviewError.  Every packet
read is counted in ``quality``.  Needs only ``protobuf`` (the classes are built from
`.schema` at run time), never the ``perfetto`` package.
"""

from __future__ import annotations

import logging

import numpy as np
from google.protobuf.message import DecodeError

from ...builder import build_events, make_trace
from ...errors import ProfviewError
from ...model import Quality, Trace
from ...sources import Source
from .. import TraceFormat
from . import native
from .native import renumber_args
from .reader import Reader
from .state import Columns
from .tables import Labels, counter_frame, counter_times, event_columns, flow_frame
from .wire import Damage, batches
from .wire import _varint as varint

log = logging.getLogger(__name__)
EXPECTED = "a Perfetto protobuf trace (a Trace message: repeated TracePacket packet = 1)"
#: TracePacket fields that only a Perfetto packet has (XPlane / StepStats / RunMetadata never
#: go past field 6): timestamp, sequence id, track event, interned data, flags, configs, stats,
#: clock ids, descriptors, defaults, compressed bundles, ...
_PACKET_FIELDS = frozenset({8, 10, 11, 12, 13, 33, 35, 36, 41, 42, 43, 44, 50, 58, 59, 60, 79, 87})


def _varint(data: bytes, pos: int) -> tuple[int, int] | None:
    return varint(data, pos, len(data))


def _packet_fields(data: bytes, pos: int, end: int) -> set[int] | None:
    """The field numbers of one packet's top level, None where it is not valid protobuf."""
    found = set()
    while pos < end:
        got = _varint(data, pos)
        if got is None:
            return None
        key, pos = got
        number, wire = key >> 3, key & 7
        if number == 0:
            return None
        if wire == 0:
            got = _varint(data, pos)
            if got is None:
                return None
            pos = got[1]
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        elif wire == 2:
            got = _varint(data, pos)
            if got is None:
                return None
            pos = got[1] + got[0]
        else:
            return None
        found.add(number)
    return found if pos == end else None


def sniff(head: bytes) -> bool:
    """The head is a run of packets (field 1, length-delimited) whose contents parse as
    protobuf, one of them with a field only a ``TracePacket`` has (`_PACKET_FIELDS`); the
    last packet may run past the head."""
    pos = packets = 0
    perfetto = False
    while pos < len(head) and packets < 64:
        if head[pos] != 0x0A:
            return False
        got = _varint(head, pos + 1)
        if got is None:
            return False
        size, body = got
        end = body + size
        if end > len(head):
            break
        fields = _packet_fields(head, body, end)
        if fields is None:  # damage after whole packets: theirs to judge
            break
        perfetto = perfetto or bool(fields & _PACKET_FIELDS)
        pos = end
        packets += 1
    return packets > 0 and perfetto


def _bytes(source: Source) -> bytes | bytearray:
    """The decompressed content, gzip inflated into one growing buffer (never twice whole)."""
    if not source.is_gzip:
        return source.read()
    out = bytearray()
    for chunk in source.chunks():
        out += chunk
    return out


def load(source: Source) -> Trace:
    data = None if source.path is not None and not source.is_gzip else _bytes(source)
    walked = native.walk(source, data)  # None: no native walker, or the file is left to Python
    if walked is None:
        columns, damage = _python_walk(source, data if data is not None else _bytes(source))
    else:
        columns, damage = walked
    del data  # the columns hold what is needed; the bytes go before the tables are built
    if damage and columns.records == 0:
        d = damage[0]
        raise ProfviewError(d.reason, source=source.name, position=f"byte {d.offset}", expected=EXPECTED)
    return _trace(columns, damage, source)


def _python_walk(source: Source, data: bytes | bytearray) -> tuple[Columns, list[Damage]]:
    """The pure-Python walk (the reference; `.native` gives the same columns)."""
    view = memoryview(data)
    reader = Reader()
    damage: list[Damage] = []
    try:
        for start, stop, _ in batches(view, damage):
            try:
                reader.feed(view[start:stop])
            except DecodeError:
                _feed_one_by_one(reader, view, start, stop, damage)
                break
    except OverflowError as exc:
        raise ProfviewError(f"a timestamp or value out of range ({exc})", source=source.name,
                            expected=EXPECTED) from None
    view.release()
    return reader.finish(), damage


def _feed_one_by_one(reader: Reader, view: memoryview, start: int, stop: int, damage: list[Damage]) -> None:
    """A batch protobuf refused: its packets one at a time up to the corrupt one."""
    for begin, end, _ in _packets(view, start, stop):
        try:
            packet = reader._trace.FromString(view[begin:end])
        except DecodeError:
            damage.append(Damage(begin, "a packet that does not parse as a TracePacket",
                                 len(view) - begin))
            return
        reader.packets(packet.packet)


def _packets(view: memoryview, start: int, stop: int):  # type: ignore[no-untyped-def]
    pos = start
    while pos < stop:
        got = _varint(view, pos + 1)  # type: ignore[arg-type]
        assert got is not None  # batches() walked these already
        yield pos, got[1] + got[0], 1
        pos = got[1] + got[0]


def _trace(c: Columns, damage: list[Damage], source: Source) -> Trace:
    quality = Quality(records_read=c.records)
    quality.placed.update(c.placed)
    quality.skipped.update(c.skipped)
    metadata: dict[str, object] = {"packets": c.records, "sequences_with_data_loss": c.dropped}
    if damage:
        d = damage[0]
        quality.records_read += 1
        reason = f"damaged tail: {d.lost_bytes} bytes from byte {d.offset} (truncated or corrupt)"
        quality.skipped[reason] += 1
        metadata["damage"] = {"offset": d.offset, "reason": d.reason, "lost_bytes": d.lost_bytes}
    labels = Labels(c.tracks)
    # counters first, each step's walk columns released after it: less memory at the peak
    times = counter_times(c)
    counter_end = int(times[0].max()) if len(times[0]) else None
    counters = counter_frame(c, labels, quality, times)
    counter_time = times[0]  # the frame's time column where no sample was dropped: rebased in place below
    del times
    c.release("ct_track", "ct_time", "ct_dom", "ct_value")
    columns, keep = event_columns(c, labels, quality, counter_end)
    n_rows = len(c.ev_kind)
    c.release("ev_track", "ev_name", "ev_cat", "ev_kind", "ev_start", "ev_start_dom", "ev_end", "ev_end_dom",
              "ev_stacked", "ev_order", "end_track", "end_time", "end_dom", "end_order", "end_row")
    # absolute start and end of each flow entry's event (0 where dropped), before build_events
    flow_rows = np.frombuffer(c.flow_row, np.int32)
    if keep is None:
        at, kept = flow_rows, np.ones(len(flow_rows), bool)
    else:
        at = np.minimum(np.searchsorted(keep, flow_rows), max(len(keep) - 1, 0))
        kept = (keep[at] == flow_rows) if len(keep) else np.zeros(len(flow_rows), bool)
    flow_start = np.where(kept, columns["start"][at] if len(at) and len(columns["start"]) else 0, 0)
    flow_end = np.where(kept, flow_start + (columns["dur"][at] if len(at) and len(columns["dur"]) else 0), 0)
    del at, kept
    events, raw_index, base = build_events(columns, quality, consume=True)
    # event id of each walk row (-1: dropped); the args are looked up by event id from here on
    event_of_row = np.full(n_rows, -1, np.int32 if n_rows < 1 << 31 else np.int64)
    event_of_row[raw_index if keep is None else keep[raw_index]] = np.arange(len(raw_index))
    del keep, raw_index
    flows = flow_frame(c, event_of_row, flow_start, flow_end, events["name"].array,
                       events["category"].array, base, quality)
    args = renumber_args(c.args, event_of_row)
    del event_of_row

    def lookup(event_id: int) -> dict[str, object]:
        return dict(args.get(event_id, {}))

    if c.notes:
        metadata["notes"] = dict(c.notes)
        log.warning("%s: %s", source.name, "; ".join(f"{k}: {v}" for k, v in c.notes.items()))
    if counters is not None:
        if np.shares_memory(counter_time, counters["time"].to_numpy()):
            counter_time -= base  # the frame's own column (no copy of it; nothing else holds it)
        else:
            counters["time"] = counters["time"].to_numpy() - base
    del counter_time
    return make_trace("perfetto", "ns", events, quality, base=base, flows=flows,
                      counters=counters, metadata=metadata,
                      args=lookup if args else None, absolute=False)


FORMAT = TraceFormat("perfetto", "Perfetto protobuf trace (.pftrace, Chrome proto traces)", sniff, load)
