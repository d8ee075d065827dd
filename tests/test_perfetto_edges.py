"""Perfetto's state rules, one edge case per test, each trace written with Google's own classes
(``perfetto``'s TraceProtoBuilder) and the expectation stated from Perfetto's documented
semantics: re-interning after a clear, a dropped packet, compressed bundles, incremental
counters, sequence-scoped incremental clocks, a truncated or corrupt file, the sniffing."""

from __future__ import annotations

import gzip
import zlib
from typing import Any

import numpy as np
import pytest

import jupyter_profview as profview
from jupyter_profview.errors import ProfviewError

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
builder_mod = pytest.importorskip("perfetto.trace_builder.proto_builder")
TE = pb.TrackEvent
CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
NEEDS = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
SEQ, THREAD, PROC = 7, 100, 10


def _builder() -> Any:
    b = builder_mod.TraceProtoBuilder()
    p = b.add_packet()
    p.trusted_packet_sequence_id = SEQ
    p.track_descriptor.uuid = PROC
    p.track_descriptor.process.pid = 42
    p.track_descriptor.process.process_name = "trainer"
    p = b.add_packet()
    p.trusted_packet_sequence_id = SEQ
    p.track_descriptor.uuid = THREAD
    p.track_descriptor.parent_uuid = PROC
    p.track_descriptor.thread.pid = 42
    p.track_descriptor.thread.tid = 43
    p.track_descriptor.thread.thread_name = "main"
    return b


def _event(b: Any, ts: int, kind: int, name_iid: int = 0, flags: int = NEEDS, **fields: Any) -> Any:
    p = b.add_packet()
    p.trusted_packet_sequence_id = SEQ
    p.timestamp = ts
    p.sequence_flags = flags
    p.track_event.type = kind
    p.track_event.track_uuid = THREAD
    if name_iid:
        p.track_event.name_iid = name_iid
    for key, value in fields.items():
        setattr(p, key, value)
    return p


def _intern(p: Any, iid: int, name: str) -> None:
    entry = p.interned_data.event_names.add()
    entry.iid, entry.name = iid, name


def _names(trace: profview.Trace) -> list[tuple[str, int, int]]:
    ev = trace.events
    return list(zip(ev["name"].astype(str), (ev["start"] + trace.info.base_time_ns).tolist(),
                    ev["dur"].tolist(), strict=True))


def test_reinterning_after_a_clear() -> None:
    b = _builder()
    p = _event(b, 1000, TE.TYPE_SLICE_BEGIN, 1, flags=CLEARED | NEEDS)
    _intern(p, 1, "forward")
    _intern(p, 2, "stale")
    _event(b, 2000, TE.TYPE_SLICE_END)
    p = _event(b, 3000, TE.TYPE_SLICE_BEGIN, 1, flags=CLEARED | NEEDS)  # iid 1 means another name now
    _intern(p, 1, "backward")
    _event(b, 5000, TE.TYPE_SLICE_END)
    _event(b, 6000, TE.TYPE_INSTANT, 2)  # iid 2 was dropped by the clear and not sent again
    trace = profview.load(b.serialize())
    assert trace.format == "perfetto"
    names = _names(trace)
    assert names[:2] == [("forward", 1000, 1000), ("backward", 3000, 2000)]
    assert names[2][0] != "stale" and "iid 2" in names[2][0]
    assert list(trace.events["thread"].astype(str)) == ["main (43)"] * 3
    assert list(trace.events["process"].astype(str)) == ["trainer"] * 3
    assert trace.quality.unaccounted == 0


def test_dropped_packet_skips_until_the_next_clear() -> None:
    b = _builder()
    p = _event(b, 1000, TE.TYPE_INSTANT, 1, flags=CLEARED | NEEDS)
    _intern(p, 1, "kept")
    lost = _event(b, 2000, TE.TYPE_INSTANT, 1)
    lost.previous_packet_dropped = 1  # a reason bitmask in newer protos; older ones: a bool (same varint)
    _event(b, 3000, TE.TYPE_INSTANT, 1)  # still invalid: skipped too
    p = _event(b, 4000, TE.TYPE_INSTANT, 1, flags=CLEARED | NEEDS)
    _intern(p, 1, "after clear")
    trace = profview.load(b.serialize())
    assert _names(trace) == [("kept", 1000, 0), ("after clear", 4000, 0)]
    skipped = {k: v for k, v in trace.quality.skipped.items() if "incremental state" in k}
    assert sum(skipped.values()) == 2
    assert trace.quality.unaccounted == 0


def test_compressed_packets_are_read_in_place() -> None:
    inner = _builder()
    p = _event(inner, 1000, TE.TYPE_SLICE_BEGIN, 1, flags=CLEARED | NEEDS)
    _intern(p, 1, "compressed step")
    _event(inner, 9000, TE.TYPE_SLICE_END)
    outer = builder_mod.TraceProtoBuilder()
    bundle = outer.add_packet()
    bundle.trusted_packet_sequence_id = 1
    bundle.compressed_packets = zlib.compress(inner.serialize())
    trace = profview.load(gzip.compress(outer.serialize()))
    assert _names(trace) == [("compressed step", 1000, 8000)]
    assert trace.quality.records_read == 4  # the bundle's packets, not the bundle


def test_incremental_counters_accumulate_with_their_multiplier() -> None:
    b = _builder()
    p = b.add_packet()
    p.trusted_packet_sequence_id = SEQ
    p.track_descriptor.uuid = 500
    p.track_descriptor.parent_uuid = PROC
    p.track_descriptor.name = "bytes sent"
    p.track_descriptor.counter.unit_multiplier = 1024
    p.track_descriptor.counter.is_incremental = True
    for ts, delta, flags in ((10, 5, CLEARED | NEEDS), (20, 3, NEEDS), (30, 2, CLEARED | NEEDS)):
        p = b.add_packet()
        p.trusted_packet_sequence_id = SEQ
        p.timestamp = ts
        p.sequence_flags = flags
        p.track_event.type = TE.TYPE_COUNTER
        p.track_event.track_uuid = 500
        p.track_event.counter_value = delta
    trace = profview.load(b.serialize())
    c = trace.counters
    assert c is not None
    # 5, 5 + 3, then the clear resets the running value: 2; each times 1024
    assert c["value"].tolist() == [5 * 1024, 8 * 1024, 2 * 1024]
    assert set(c["name"].astype(str)) == {"bytes sent"}
    assert set(c["process"].astype(str)) == {"trainer"}


def test_extra_counter_values_from_the_defaults() -> None:
    b = _builder()
    p = b.add_packet()
    p.trusted_packet_sequence_id = SEQ
    p.track_descriptor.uuid = 600
    p.track_descriptor.parent_uuid = THREAD
    p.track_descriptor.counter.type = pb.CounterDescriptor.COUNTER_THREAD_TIME_NS
    p.track_descriptor.counter.unit_multiplier = 1000
    p.track_descriptor.counter.is_incremental = True
    p = _event(b, 100, TE.TYPE_SLICE_BEGIN, 1, flags=CLEARED | NEEDS)
    _intern(p, 1, "work")
    p.trace_packet_defaults.track_event_defaults.extra_counter_track_uuids.append(600)
    p.track_event.extra_counter_values.append(7)
    p = _event(b, 900, TE.TYPE_SLICE_END)
    p.track_event.extra_counter_values.append(4)
    trace = profview.load(b.serialize())
    c = trace.counters
    assert c is not None
    assert c["value"].tolist() == [7000.0, 11000.0]
    assert c["name"].astype(str).tolist() == ["thread_time"] * 2
    assert c["series"].astype(str).tolist() == ["main (43)"] * 2


def test_incremental_sequence_clock_is_converted_to_the_trace_clock() -> None:
    b = _builder()
    snap = b.add_packet()
    snap.trusted_packet_sequence_id = 1
    snap.clock_snapshot.primary_trace_clock = pb.BUILTIN_CLOCK_BOOTTIME
    for cid, ts in ((pb.BUILTIN_CLOCK_BOOTTIME, 5_000_000_000), (pb.BUILTIN_CLOCK_MONOTONIC, 1_000_000_000)):
        clock = snap.clock_snapshot.clocks.add()
        clock.clock_id, clock.timestamp = cid, ts
    # the sequence's clock 64 counts us incrementally, anchored to MONOTONIC 1.0002 s
    seq_snap = b.add_packet()
    seq_snap.trusted_packet_sequence_id = SEQ
    seq_snap.sequence_flags = CLEARED
    for cid, ts, incremental, unit in ((pb.BUILTIN_CLOCK_MONOTONIC, 1_000_200_000, False, 0),
                                       (64, 1_000_200, True, 1000)):
        clock = seq_snap.clock_snapshot.clocks.add()
        clock.clock_id, clock.timestamp, clock.is_incremental = cid, ts, incremental
        if unit:
            clock.unit_multiplier_ns = unit
    defaults = b.add_packet()
    defaults.trusted_packet_sequence_id = SEQ
    defaults.trace_packet_defaults.timestamp_clock_id = 64
    p = _event(b, 10, TE.TYPE_SLICE_BEGIN, 1)  # 10 us after the anchor
    _intern(p, 1, "step")
    _event(b, 25, TE.TYPE_SLICE_END)  # 25 us later
    trace = profview.load(b.serialize())
    # MONOTONIC 1.00021 s = BOOTTIME 5.00021 s
    assert _names(trace) == [("step", 5_000_210_000, 25_000)]


def _two_slices() -> bytes:
    b = _builder()
    p = _event(b, 1000, TE.TYPE_SLICE_BEGIN, 1, flags=CLEARED | NEEDS)
    _intern(p, 1, "a")
    _event(b, 2000, TE.TYPE_SLICE_END)
    _event(b, 3000, TE.TYPE_SLICE_BEGIN, 1)
    _event(b, 4000, TE.TYPE_SLICE_END)
    return b.serialize()


def test_truncated_file_keeps_the_packets_before_the_cut() -> None:
    data = _two_slices()
    cut = data[:-3]
    trace = profview.load(cut)
    # the last END is cut: the second slice is open and runs to the trace's end
    assert _names(trace)[0] == ("a", 1000, 1000)
    assert bool(trace.events["incomplete"].iloc[1])
    damage = trace.metadata["damage"]
    assert damage["offset"] == len(data) - len(pb.Trace.FromString(data).packet[-1].SerializeToString()) - 2
    assert "truncated" in damage["reason"]
    assert any("damaged tail" in k for k in trace.quality.skipped)
    assert trace.quality.unaccounted == 0


def test_corrupt_packet_stops_with_the_offset() -> None:
    data = bytearray(_two_slices())
    last = len(pb.Trace.FromString(bytes(data)).packet[-1].SerializeToString())
    start = len(data) - last  # the last packet's body
    data[start:] = b"\xff" * last  # not a TracePacket any more
    trace = profview.load(bytes(data))
    assert trace.metadata["damage"]["offset"] == start - 2
    assert len(trace.events) == 2


def test_damage_before_any_packet_is_an_error() -> None:
    with pytest.raises(ProfviewError, match="byte 0"):
        profview.load(b"\x0a\x7f" + b"\x50\x01" * 5, format="perfetto")


def test_sniffing_tells_perfetto_from_other_protobuf_formats() -> None:
    from jupyter_profview.formats.perfetto import sniff

    assert sniff(_two_slices())
    assert not sniff(b'{"traceEvents": []}')
    # an XSpace (planes: id, name) and a StepStats (dev_stats: device) start with 0x0a too
    assert not sniff(b"\x0a\x08\x08\x01\x12\x04/cpu")
    assert not sniff(b"\x0a\x06\x0a\x04/cpu")


def test_times_are_exact_beyond_float_precision() -> None:
    b = _builder()
    big = 1_795_836_025_918_700_403  # epoch ns: a float64 would round it
    p = _event(b, big, TE.TYPE_SLICE_BEGIN, 1, flags=CLEARED | NEEDS)
    _intern(p, 1, "exact")
    _event(b, big + 1, TE.TYPE_SLICE_END)
    trace = profview.load(b.serialize())
    assert _names(trace) == [("exact", big, 1)]
    assert np.int64(trace.info.base_time_ns) == big


def test_more_clock_domains_than_the_columns_hold() -> None:
    """Clock domain codes are int16 in the walk's columns: a file naming more than 32,767
    clocks is a clear ProfviewError on both walks (the native one leaves it to the reader),
    never a wrapped code."""
    b = _builder()
    snap = b.add_packet()
    snap.trusted_packet_sequence_id = SEQ
    for cid in range(200, 200 + 32_800):  # builtin-scoped ids: one domain each
        clock = snap.clock_snapshot.clocks.add()
        clock.clock_id, clock.timestamp = cid, 1000
    _event(b, 1000, TE.TYPE_INSTANT, flags=0)
    data = b.serialize()
    for native in ("1", "0"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("PROFVIEW_NATIVE", native)
            with pytest.raises(ProfviewError, match="more than 32,767 clock domains"):
                profview.load(data)
