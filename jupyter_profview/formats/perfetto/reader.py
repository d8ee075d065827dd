"""The packet walk: Perfetto's per-sequence state rules applied to each ``TracePacket`` in file
order, producing flat columns (see `Columns`) for `.tables` to turn into frames.

Per ``trusted_packet_sequence_id`` (as ``proto_trace_reader.cc`` and
``packet_sequence_state_generation.h`` do):

* ``incremental_state_cleared`` / ``SEQ_INCREMENTAL_STATE_CLEARED``: interned data, the
  ``trace_packet_defaults`` and the incremental counters' values are dropped and the state is
  valid; else ``previous_packet_dropped`` makes it invalid (data was lost);
* ``interned_data`` is stored only while the state is valid; a packet flagged
  ``SEQ_NEEDS_INCREMENTAL_STATE`` while it is invalid is skipped (``quality.skipped``);
* ``trace_packet_defaults``: the clock of timestamps, the track and the extra counter tracks of
  events that name none;
* a clock snapshot sets sequence-scoped clocks (ids 64-127): an incremental one adds each
  packet's timestamp to its last value, times ``unit_multiplier_ns``.

Track events: ``TYPE_SLICE_BEGIN`` pushes a slice on its track's stack and ``TYPE_SLICE_END``
pops the innermost one; legacy events (``TYPE_UNSPECIFIED`` with a ``legacy_event``) by phase:
``B``/``E`` the same, ``X`` a complete slice of ``duration_us``, ``I``/``i``/``R``/``n`` instants.
Counter values (``counter_value``, ``double_counter_value`` and the extra values on the tracks
listed by the event or the defaults) are accumulated where their track is incremental and
multiplied by its ``unit_multiplier``.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import Any

from .schema import (
    FIRST_SEQUENCE_CLOCK,
    LAST_SEQUENCE_CLOCK,
    SEQ_INCREMENTAL_STATE_CLEARED,
    SEQ_NEEDS_INCREMENTAL_STATE,
    TYPE_COUNTER,
    TYPE_INSTANT,
    TYPE_SLICE_BEGIN,
    TYPE_SLICE_END,
    TYPE_UNSPECIFIED,
    message_class,
)
from .state import Columns, Sequence, Track

LEGACY_BEGIN, LEGACY_END, LEGACY_COMPLETE = ord("B"), ord("E"), ord("X")
LEGACY_INSTANTS = frozenset(map(ord, "IiRn"))
OPENING_PHASES = LEGACY_INSTANTS | {LEGACY_BEGIN, LEGACY_COMPLETE}  # legacy phases that make an event
SLICE, INSTANT = 0, 1
MAX_DECOMPRESSED = 1 << 30  # one compressed_packets bundle may not inflate past this
UNMATCHED_END = "slice end without an open slice on its track"


class Reader:
    """Feed `packets` batches of serialized packets (``Trace`` messages), then read `columns`."""

    def __init__(self) -> None:
        self.columns = Columns()
        self._trace = message_class("Trace")
        self._strings: dict[str, int] = {}
        self._tracks: dict[Any, int] = {}
        self._sequences: dict[int, Sequence] = {}
        self._stacks: dict[int, list[int]] = {}
        self._latest = (0, 0)  # (value, domain) of the last timestamp seen
        self.n_events = self.n_counters = 0  # packets placed, added to `columns.placed` at the end

    def string(self, text: str) -> int:
        code = self._strings.get(text)
        if code is None:
            code = self._strings[text] = len(self.columns.strings)
            self.columns.strings.append(text)
        return code

    def track(self, key: Any) -> int:
        code = self._tracks.get(key)
        if code is None:
            code = self._tracks[key] = len(self.columns.tracks)
            self.columns.tracks.append(Track(key))
        return code

    def finish(self) -> Columns:
        """The columns, with the placed packets counted."""
        c = self.columns
        c.placed["events"] += self.n_events
        c.placed["counters"] += self.n_counters
        self.n_events = self.n_counters = 0
        return c

    def feed(self, data: bytes | memoryview) -> None:
        """Parse ``data`` (a run of whole packets) and walk them."""
        self.packets(self._trace.FromString(data).packet)

    def packets(self, packets: Iterable[Any]) -> None:
        c = self.columns
        sequences = self._sequences
        last_id, seq = -1, Sequence()
        for pk in packets:
            c.records += 1
            sid = pk.trusted_packet_sequence_id
            if sid != last_id:
                last_id = sid
                seq = sequences.get(sid) or sequences.setdefault(sid, Sequence())
            flags = pk.sequence_flags
            if pk.HasField("compressed_packets"):
                c.records -= 1  # the bundle is not a record; the packets in it are
                self._inflate(pk.compressed_packets)
                last_id = -1
                continue
            if pk.previous_packet_dropped:
                c.dropped += 1
            if flags & SEQ_INCREMENTAL_STATE_CLEARED or pk.incremental_state_cleared:
                seq.clear()
            elif pk.previous_packet_dropped:
                seq.valid = False
            if pk.HasField("trace_packet_defaults"):
                self._defaults(seq, pk.trace_packet_defaults)
            if pk.HasField("interned_data"):
                if seq.valid:
                    self._intern(seq, pk.interned_data)
                else:
                    c.notes["interned data ignored: the sequence's state was invalid"] += 1
            if pk.HasField("clock_snapshot"):
                self._snapshot(sid, seq, pk.clock_snapshot)
                c.placed["metadata"] += 1
                continue
            if flags & SEQ_NEEDS_INCREMENTAL_STATE and not seq.valid:
                c.skipped["packet needing incremental state after data loss (until the next clear)"] += 1
                continue
            if pk.HasField("track_event"):
                self._event(pk, seq, sid)
            elif pk.HasField("track_descriptor"):
                self._descriptor(pk.track_descriptor)
                c.placed["metadata"] += 1
            elif pk.HasField("thread_descriptor") or pk.HasField("process_descriptor"):
                self._legacy_descriptors(pk, seq)
                c.placed["metadata"] += 1
            elif pk.HasField("interned_data") or pk.HasField("trace_packet_defaults"):
                c.placed["metadata"] += 1
            else:
                c.skipped["packet with no track data (config, stats, system info, ...)"] += 1

    def _inflate(self, blob: bytes) -> None:
        self.columns.records += 1  # counted as one record where it cannot be opened
        inflater = zlib.decompressobj()
        try:
            data = inflater.decompress(blob, MAX_DECOMPRESSED)
        except zlib.error as exc:
            self.columns.skipped[f"compressed_packets bundle that does not inflate ({exc})"] += 1
            return
        if inflater.unconsumed_tail:
            self.columns.skipped["compressed_packets bundle inflating past 1 GiB"] += 1
            return
        try:
            inner = self._trace.FromString(data).packet
        except Exception:  # DecodeError: the bundle's packets are corrupt
            self.columns.skipped["compressed_packets bundle whose packets do not parse"] += 1
            return
        self.columns.records -= 1
        self.packets(inner)

    def _defaults(self, seq: Sequence, defaults: Any) -> None:
        seq.defaults = defaults
        seq.clock = defaults.timestamp_clock_id
        te = defaults.track_event_defaults
        seq.default_track = self.track(te.track_uuid) if te.track_uuid else -1
        seq.extra_tracks = [self.track(u) for u in te.extra_counter_track_uuids]

    def _intern(self, seq: Sequence, data: Any) -> None:
        for entry in data.event_names:
            seq.names[entry.iid] = text(entry.name)
            seq.name_codes.pop(entry.iid, None)
        if data.event_categories:
            seq.cat_codes.clear()
        for entry in data.event_categories:
            seq.categories[entry.iid] = text(entry.name)
        for entry in data.debug_annotation_names:
            seq.arg_names[entry.iid] = text(entry.name)
        for entry in data.debug_annotation_string_values:
            seq.arg_strings[entry.iid] = entry.str.decode("utf-8", "replace")

    def _snapshot(self, sid: int, seq: Sequence, snap: Any) -> None:
        clocks = self.columns.clocks
        values: dict[int, int] = {}
        for clock in snap.clocks:
            cid = clock.clock_id
            unit = clock.unit_multiplier_ns or 1
            ns = clock.timestamp * unit
            if FIRST_SEQUENCE_CLOCK <= cid <= LAST_SEQUENCE_CLOCK:
                seq.clock_unit[cid] = (clock.is_incremental, unit)
                seq.clock_last[cid] = ns
                values[clocks.code((sid, cid))] = ns
            else:
                values[clocks.code(cid)] = ns
        clocks.add_snapshot(values, snap.primary_trace_clock)

    def _time(self, pk: Any, seq: Sequence, sid: int) -> tuple[int, int]:
        """(ns, domain code) of the packet's timestamp (the latest one seen where it has none)."""
        if not pk.HasField("timestamp"):
            return self._latest
        ts = pk.timestamp
        cid = pk.timestamp_clock_id or seq.clock
        if not cid:
            got = (ts, 0)
        elif FIRST_SEQUENCE_CLOCK <= cid <= LAST_SEQUENCE_CLOCK:
            incremental, unit = seq.clock_unit.get(cid, (False, 1))
            if incremental:
                ts = seq.clock_last.get(cid, 0) + ts * unit
                seq.clock_last[cid] = ts
            else:
                ts *= unit
            got = (ts, self.columns.clocks.code((sid, cid)))
        else:
            got = (ts, self.columns.clocks.code(cid))
        self._latest = got
        return got

    def _event(self, pk: Any, seq: Sequence, sid: int) -> None:
        c = self.columns
        ev = pk.track_event
        ts, dom = self._time(pk, seq, sid)
        kind = ev.type
        if kind == TYPE_UNSPECIFIED:
            if not ev.HasField("legacy_event"):
                c.skipped["track event of TYPE_UNSPECIFIED without a legacy phase"] += 1
                return
            phase = ev.legacy_event.phase
        else:
            phase = 0
        if ev.HasField("track_uuid"):
            uuid = ev.track_uuid
            track = self.track(uuid) if uuid else self._legacy_track(ev, seq)
        elif seq.default_track >= 0:
            track = seq.default_track
        else:
            track = self._legacy_track(ev, seq)
        if ev.extra_counter_values:
            uuids = ev.extra_counter_track_uuids
            codes = [self.track(u) for u in uuids] if uuids else seq.extra_tracks
            values = ev.extra_counter_values
            if len(codes) < len(values):
                c.notes["extra counter values without a counter track"] += len(values) - len(codes)
            for code, value in zip(codes, values, strict=False):
                self._sample(code, value, ts, dom, seq)
        if ev.extra_double_counter_values:
            self._extra_doubles(ev, ts, dom, seq)
        if kind == TYPE_SLICE_END or phase == LEGACY_END:
            stack = self._stacks.get(track)
            c.end_track.append(track)
            c.end_time.append(ts)
            c.end_dom.append(dom)
            c.end_order.append(len(c.end_order) + len(c.ev_order))
            if not stack:
                c.end_row.append(-1)
                c.skipped[UNMATCHED_END] += 1
                return
            row = stack.pop()
            c.end_row.append(row)
            c.ev_end[row] = ts
            c.ev_end_dom[row] = dom
            self.n_events += 1
        elif kind == TYPE_COUNTER:
            value = ev.double_counter_value if ev.HasField("double_counter_value") else ev.counter_value
            self._sample(track, value, ts, dom, seq)
            self.n_counters += 1
            return
        elif kind in (TYPE_SLICE_BEGIN, TYPE_INSTANT) or phase in OPENING_PHASES:
            row = len(c.ev_kind)
            c.ev_track.append(track)
            iid = ev.name_iid
            code = seq.name_codes.get(iid, -1) if iid else -1
            if code < 0:
                code = self.string(self._name(ev, seq))
                if iid:
                    seq.name_codes[iid] = code
            c.ev_name.append(code)
            cats = ev.category_iids
            key = tuple(cats) if len(cats) != 1 else cats[0]
            code = seq.cat_codes.get(key, -1) if cats else -1
            if code < 0:
                code = self.string(self._category(ev, seq))
                if cats:
                    seq.cat_codes[key] = code
            c.ev_cat.append(code)
            c.ev_start.append(ts)
            c.ev_start_dom.append(dom)
            c.ev_order.append(len(c.end_order) + len(c.ev_order))
            if kind == TYPE_SLICE_BEGIN or phase == LEGACY_BEGIN:
                c.ev_kind.append(SLICE)
                c.ev_stacked.append(1)
                c.ev_end.append(ts)
                c.ev_end_dom.append(-1)
                stack = self._stacks.get(track)
                if stack is None:
                    stack = self._stacks[track] = []
                stack.append(row)
            else:
                complete = phase == LEGACY_COMPLETE
                c.ev_kind.append(SLICE if complete else INSTANT)
                c.ev_stacked.append(0)
                c.ev_end.append(ts + (ev.legacy_event.duration_us * 1000 if complete else 0))
                c.ev_end_dom.append(dom)
            self.n_events += 1
        else:
            c.skipped[f"legacy event of phase {chr(phase)!r} (not read)"] += 1
            return
        if ev.debug_annotations:
            got = c.args.setdefault(row, {})
            for ann in ev.debug_annotations:
                got[arg_name(ann, seq)] = arg_value(ann, seq)
        if ev.flow_ids or ev.terminating_flow_ids:
            at_end = kind == TYPE_SLICE_END or phase == LEGACY_END
            for ids, terminating in ((ev.flow_ids, 0), (ev.terminating_flow_ids, 1)):
                for fid in ids:
                    c.flow_row.append(row)
                    c.flow_id.append(fid)
                    c.flow_end.append(terminating)
                    c.flow_at_end.append(at_end)

    def _name(self, ev: Any, seq: Sequence) -> str:
        if ev.name_iid:
            return seq.names.get(ev.name_iid, f"<unknown name iid {ev.name_iid}>")
        if ev.HasField("name"):
            return text(ev.name)
        if ev.HasField("legacy_event") and ev.legacy_event.name_iid:
            return seq.names.get(ev.legacy_event.name_iid, f"<unknown name iid {ev.legacy_event.name_iid}>")
        return ""

    def _category(self, ev: Any, seq: Sequence) -> str:
        if ev.category_iids:
            return ",".join(seq.categories.get(i, f"<unknown category iid {i}>") for i in ev.category_iids)
        return ",".join(map(text, ev.categories))

    def _sample(self, track: int, value: float, ts: int, dom: int, seq: Sequence) -> None:
        c = self.columns
        info = c.tracks[track]
        if info.incremental:
            value = seq.counters[track] = seq.counters.get(track, 0) + value
        c.ct_track.append(track)
        c.ct_time.append(ts)
        c.ct_dom.append(dom)
        c.ct_value.append(value * info.multiplier)

    def _extra_doubles(self, ev: Any, ts: int, dom: int, seq: Sequence) -> None:
        uuids = ev.extra_double_counter_track_uuids
        if not uuids and seq.defaults is not None:
            uuids = seq.defaults.track_event_defaults.extra_double_counter_track_uuids
        values = ev.extra_double_counter_values
        if len(uuids) < len(values):
            self.columns.notes["extra counter values without a counter track"] += len(values) - len(uuids)
        for uuid, value in zip(uuids, values, strict=False):
            self._sample(self.track(uuid), value, ts, dom, seq)

    def _legacy_track(self, ev: Any, seq: Sequence) -> int:
        """The implied thread track of an event with no track: the legacy event's pid/tid
        override, else the sequence's ThreadDescriptor, else one global track."""
        legacy = ev.legacy_event if ev.HasField("legacy_event") else None
        if legacy is not None and legacy.HasField("tid_override"):
            pid = legacy.pid_override if legacy.HasField("pid_override") else (seq.thread or (0, 0))[0]
            return self._thread_key(pid, legacy.tid_override)
        if seq.thread is not None:
            return self._thread_key(*seq.thread)
        track = self.track(("global",))
        self.columns.tracks[track].name = "Global"
        return track

    def _thread_key(self, pid: int, tid: int) -> int:
        track = self.track(("thread", pid, tid))
        info = self.columns.tracks[track]
        info.pid, info.tid = pid, tid
        return track

    def _legacy_descriptors(self, pk: Any, seq: Sequence) -> None:
        if pk.HasField("thread_descriptor"):
            t = pk.thread_descriptor
            seq.thread = (t.pid, t.tid)
            track = self._thread_key(t.pid, t.tid)
            if t.thread_name:
                self.columns.tracks[track].thread_name = text(t.thread_name)
        if pk.HasField("process_descriptor"):
            p = pk.process_descriptor
            track = self.track(("process", p.pid))
            info = self.columns.tracks[track]
            info.pid = p.pid
            info.process_name = text(p.process_name) or info.process_name

    def _descriptor(self, d: Any) -> None:
        info = self.columns.tracks[self.track(d.uuid)]
        info.name = text(d.name) or text(d.static_name) or info.name
        if d.parent_uuid:
            info.parent = d.parent_uuid
        if d.HasField("process"):
            info.pid = d.process.pid
            info.process_name = info.process_name or text(d.process.process_name)  # the first name given
        if d.HasField("thread"):
            info.pid, info.tid = d.thread.pid, d.thread.tid
            info.thread_name = text(d.thread.thread_name) or info.thread_name
        if d.HasField("counter"):
            counter = d.counter
            info.counter = True
            info.incremental = counter.is_incremental
            info.multiplier = counter.unit_multiplier or 1
            info.counter_type = counter.type


def text(value: str | bytes) -> str:
    """A string field's text: protobuf hands a proto2 string that is not UTF-8 over as bytes."""
    return value if isinstance(value, str) else bytes(value).decode("utf-8", "replace")


def arg_name(ann: Any, seq: Sequence) -> str:
    """A debug annotation's name (interned names from ``seq``)."""
    if ann.name_iid:
        return seq.arg_names.get(ann.name_iid, f"<unknown arg name iid {ann.name_iid}>")
    return text(ann.name)


def arg_value(ann: Any, seq: Sequence) -> Any:
    """A debug annotation's value: dicts and lists nested, interned strings from ``seq``."""
    if ann.dict_entries:
        return {arg_name(e, seq): arg_value(e, seq) for e in ann.dict_entries}
    if ann.array_values:
        return [arg_value(e, seq) for e in ann.array_values]
    for name in ("string_value", "int_value", "uint_value", "double_value", "bool_value",
                 "legacy_json_value"):
        if ann.HasField(name):
            return getattr(ann, name)
    if ann.HasField("string_value_iid"):
        return seq.arg_strings.get(ann.string_value_iid, f"<unknown string iid {ann.string_value_iid}>")
    if ann.HasField("pointer_value"):
        return f"0x{ann.pointer_value:x}"
    if ann.HasField("proto_type_name"):
        return f"<{ann.proto_type_name}>"
    return None
