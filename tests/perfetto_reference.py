"""An independent reading of a Perfetto trace with Google's own generated classes
(``perfetto.protos.perfetto.trace.perfetto_trace_pb2``, from the ``perfetto`` package): the
slices, instants, counter samples and flows a trace holds, by Perfetto's documented rules,
written plainly (one dict per thing) and without any of profview's code.  The tests compare the
loader with it."""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
TE = pb.TrackEvent
SEQ_CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
SEQ_NEEDS = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE


@dataclass
class Walk:
    slices: list[dict[str, Any]] = field(default_factory=list)    # name, start, end (None: open), track
    instants: list[dict[str, Any]] = field(default_factory=list)
    samples: list[tuple[int, int, float]] = field(default_factory=list)  # (track uuid, time, value)
    # (time stamp, flow id, terminating, slice index or ("instant", index))
    flow_refs: list[tuple[int, int, bool, Any]] = field(default_factory=list)
    skipped_needing_state: int = 0


def read_trace(path: str | Path | bytes) -> Any:
    data = path if isinstance(path, bytes) else Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return pb.Trace.FromString(data)


def _packets(trace: Any) -> Any:
    import zlib
    for packet in trace.packet:
        if packet.HasField("compressed_packets"):
            yield from _packets(pb.Trace.FromString(zlib.decompress(packet.compressed_packets)))
        else:
            yield packet


def walk(trace: Any) -> Walk:
    out = Walk()
    snapshots: list[dict[Any, int]] = []
    primary = [None]
    state: dict[int, dict[str, Any]] = {}
    counters: dict[int, Any] = {}  # uuid -> CounterDescriptor
    stacks: dict[int, list[int]] = {}
    raw: list[tuple[Any, int]] = []  # (clock key, ns) per time stamp used, resolved at the end
    stacked: list[tuple[Any, ...]] = []  # begins and ends, matched in time order at the end

    def fresh() -> dict[str, Any]:
        return {"names": {}, "cats": {}, "defaults": None, "incr": {}, "ok": True,
                "clock": {}, "last": {}}

    def stamp(packet: Any, st: dict[str, Any], seq: int) -> int:
        clock = packet.timestamp_clock_id or (st["defaults"].timestamp_clock_id if st["defaults"] else 0)
        ts = packet.timestamp
        if 64 <= clock <= 127:
            incremental, unit = st["clock"][clock]
            ts = (st["last"][clock] + ts * unit) if incremental else ts * unit
            if incremental:
                st["last"][clock] = ts
            key: Any = (seq, clock)
        else:
            key = clock
        raw.append((key, ts))
        return len(raw) - 1

    for packet in _packets(trace):
        seq = packet.trusted_packet_sequence_id
        st = state.setdefault(seq, fresh())
        if packet.sequence_flags & SEQ_CLEARED or packet.incremental_state_cleared:
            keep_clock, keep_last = st["clock"], st["last"]
            st = state[seq] = fresh()
            st["clock"], st["last"] = keep_clock, keep_last
        elif packet.previous_packet_dropped:
            st["ok"] = False
        if packet.HasField("trace_packet_defaults"):
            st["defaults"] = packet.trace_packet_defaults
        if packet.HasField("interned_data") and st["ok"]:
            for e in packet.interned_data.event_names:
                st["names"][e.iid] = e.name
            for e in packet.interned_data.event_categories:
                st["cats"][e.iid] = e.name
        if packet.HasField("clock_snapshot"):
            snap: dict[Any, int] = {}
            for c in packet.clock_snapshot.clocks:
                unit = c.unit_multiplier_ns or 1
                if 64 <= c.clock_id <= 127:
                    st["clock"][c.clock_id] = (c.is_incremental, unit)
                    st["last"][c.clock_id] = c.timestamp * unit
                    snap[(seq, c.clock_id)] = c.timestamp * unit
                else:
                    snap[c.clock_id] = c.timestamp * unit
            snapshots.append(snap)
            if packet.clock_snapshot.primary_trace_clock:
                primary[0] = packet.clock_snapshot.primary_trace_clock
            continue
        if packet.sequence_flags & SEQ_NEEDS and not st["ok"]:
            out.skipped_needing_state += 1
            continue
        if packet.HasField("track_descriptor") and packet.track_descriptor.HasField("counter"):
            counters[packet.track_descriptor.uuid] = packet.track_descriptor.counter
        if not packet.HasField("track_event"):
            continue
        ev = packet.track_event
        when = stamp(packet, st, seq)
        d = st["defaults"].track_event_defaults if st["defaults"] else None
        track = ev.track_uuid if ev.HasField("track_uuid") else (d.track_uuid if d else 0)
        phase = ev.legacy_event.phase if ev.type == TE.TYPE_UNSPECIFIED else 0
        name = st["names"].get(ev.name_iid) if ev.name_iid else ev.name
        if not name and ev.HasField("legacy_event") and ev.legacy_event.name_iid:
            name = st["names"].get(ev.legacy_event.name_iid)
        index: Any = None
        flow = [(fid, False) for fid in ev.flow_ids] + [(fid, True) for fid in ev.terminating_flow_ids]
        if ev.type == TE.TYPE_SLICE_BEGIN:
            out.slices.append({"name": name, "start": when, "end": None, "track": track})
            stacked.append((when, len(stacked), "B", track, len(out.slices) - 1, flow))
        elif ev.type == TE.TYPE_SLICE_END:
            stacked.append((when, len(stacked), "E", track, None, flow))
        elif ev.type == TE.TYPE_INSTANT or phase in b"IiRn":
            out.instants.append({"name": name, "start": when, "track": track})
            index = ("instant", len(out.instants) - 1)
        elif phase == ord("X"):
            raw.append((raw[when][0], raw[when][1] + ev.legacy_event.duration_us * 1000))
            out.slices.append({"name": name, "start": when, "end": len(raw) - 1, "track": track})
            index = len(out.slices) - 1
        elif ev.type == TE.TYPE_COUNTER:
            value = ev.double_counter_value if ev.HasField("double_counter_value") else ev.counter_value
            out.samples.append(_sample(counters, st, ev.track_uuid, value, when))
        extra = list(ev.extra_counter_track_uuids) or (list(d.extra_counter_track_uuids) if d else [])
        for uuid, value in zip(extra, ev.extra_counter_values, strict=False):
            out.samples.append(_sample(counters, st, uuid, value, when))
        if index is not None:
            for fid in ev.flow_ids:
                out.flow_refs.append((when, fid, False, index))
            for fid in ev.terminating_flow_ids:
                out.flow_refs.append((when, fid, True, index))
    out.times = _resolve(raw, snapshots, primary[0] or 6)  # type: ignore[attr-defined]
    # Perfetto's sorter orders everything by timestamp before the stacks are applied
    for when, _, what, track, index, flow in sorted(stacked, key=lambda r: (out.times[r[0]], r[1])):
        if what == "E":
            if not stacks.get(track):
                continue
            index = stacks[track].pop()
            out.slices[index]["end"] = when
        else:
            stacks.setdefault(track, []).append(index)
        for fid, terminating in flow:
            out.flow_refs.append((when, fid, terminating, index))
    return out


def _sample(counters: dict[int, Any], st: dict[str, Any], uuid: int, value: float,
            when: int) -> tuple[int, int, float]:
    desc = counters.get(uuid)
    if desc is not None and desc.is_incremental:
        value = st["incr"][uuid] = st["incr"].get(uuid, 0) + value
    return uuid, when, value * ((desc.unit_multiplier or 1) if desc is not None else 1)


def _resolve(raw: list[tuple[Any, int]], snapshots: list[dict[Any, int]], target: int) -> list[int]:
    """Each stamp in the trace clock, through one or two snapshotted hops (the latest snapshot
    at or before the value, else the first)."""
    def hop(a: Any, b: Any, v: int) -> int | None:
        pairs = sorted((s[a], s[b]) for s in snapshots if a in s and b in s)
        if not pairs:
            return None
        chosen = pairs[0]
        for p in pairs:
            if p[0] <= v:
                chosen = p
        return v + chosen[1] - chosen[0]

    out = []
    for key, v in raw:
        if key in (0, target):
            out.append(v)
            continue
        got = hop(key, target, v)
        if got is None:
            for mid in {k for s in snapshots for k in s if key in s and k != key}:
                step = hop(key, mid, v)
                if step is not None and (got := hop(mid, target, step)) is not None:
                    break
        assert got is not None, f"no clock path from {key}"
        out.append(got)
    return out


def flows(w: Walk) -> list[tuple[Any, Any]]:
    """(source, target) of the v2 flows by Perfetto's FlowTracker rules: a slice index, or
    ``("instant", index)``."""
    active: dict[int, int] = {}
    arrows = []
    for _, fid, terminating, index in sorted(w.flow_refs, key=lambda r: w.times[r[0]]):  # type: ignore[attr-defined]
        if fid not in active:
            if not terminating:
                active[fid] = index
            continue
        arrows.append((active[fid], index))
        if terminating:
            del active[fid]
        else:
            active[fid] = index
    return arrows
