"""A loaded Trace as a Perfetto protobuf trace (what `jupyter_profview.export.to_perfetto` writes).

* one process track per ``process`` label (``ProcessDescriptor``: a pid numbering the labels,
  the label as ``process_name``) and, under it, one named track per lane (``track`` label:
  the thread label plus any overlap tag), so a lane keeps its events and its nesting;
* slices as ``TYPE_SLICE_BEGIN`` / ``TYPE_SLICE_END`` pairs in stack order per lane, instants as
  ``TYPE_INSTANT``; times absolute (``info.base_time_ns`` + ``start``, exact ns) in the trace
  clock; names and categories inline; scalar args as debug annotations (others as their JSON);
* counters on counter tracks under their process (``name``, ``.series`` appended where it
  differs), ``double_counter_value``;
* each flow with both ends on an event: ``flow_ids`` on its source's begin, the same id in
  ``terminating_flow_ids`` on its target's.

Reading the file back with profview gives the same slices (name, start, duration, lane) and
flows; ``tests/test_perfetto_export.py`` checks it on a real GPU trace and checks the bytes with
Google's classes.
"""

from __future__ import annotations

import json
import logging
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ...model import Trace
from .schema import TYPE_COUNTER, TYPE_INSTANT, TYPE_SLICE_BEGIN, TYPE_SLICE_END, message_class

log = logging.getLogger(__name__)
SEQUENCE = 1
PROCESS_UUID, LANE_UUID, COUNTER_UUID = 1 << 40, 2 << 40, 3 << 40


def _annotate(event: Any, args: dict[str, Any]) -> None:
    for key, value in args.items():
        ann = event.debug_annotations.add()
        ann.name = str(key)
        if isinstance(value, bool):
            ann.bool_value = value
        elif isinstance(value, int) and -(2**63) <= value < 2**63:
            ann.int_value = value
        elif isinstance(value, float) and math.isfinite(value):
            ann.double_value = value
        elif isinstance(value, str):
            ann.string_value = value
        else:
            ann.legacy_json_value = json.dumps(value, default=str)


class _Writer:
    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.out = message_class("Trace")()
        self.base = int(trace.info.base_time_ns or 0)
        self.scale = 1000 if trace.time_unit == "step" else 1  # a step is written as 1 us
        self.processes: dict[str, int] = {}

    def packet(self, ts: int | None = None) -> Any:
        p = self.out.packet.add()
        p.trusted_packet_sequence_id = SEQUENCE
        if ts is not None:
            p.timestamp = ts
        return p

    def process(self, label: str) -> int:
        uuid = self.processes.get(label)
        if uuid is None:
            pid = len(self.processes) + 1
            uuid = self.processes[label] = PROCESS_UUID + pid
            d = self.packet().track_descriptor
            d.uuid = uuid
            d.process.pid = pid
            d.process.process_name = label
        return uuid

    def lanes(self) -> dict[str, int]:
        ev = self.trace.events
        out: dict[str, int] = {}
        firsts = ev.drop_duplicates("track")
        for process, thread, track in zip(firsts["process"].astype(str), firsts["thread"].astype(str),
                                          firsts["track"].astype(str), strict=True):
            parent = self.process(process)
            uuid = out[track] = LANE_UUID + len(out) + 1
            d = self.packet().track_descriptor
            d.uuid = uuid
            d.parent_uuid = parent
            prefix = f"{process} / "
            d.name = track[len(prefix):] if track.startswith(prefix) else thread
        return out

    def events(self, with_args: bool) -> int:
        """Begin/end packets lane by lane in stack order; the number of events that partly
        overlap an enclosing one on their lane (written on a lane of their own)."""
        ev = self.trace.events
        lanes = self.lanes()
        flows = self.trace.flows
        ok = (flows["source"] >= 0) & (flows["target"] >= 0)
        outgoing: dict[int, list[int]] = defaultdict(list)
        incoming: dict[int, list[int]] = defaultdict(list)
        for k, (s, t) in enumerate(zip(flows.loc[ok, "source"].tolist(), flows.loc[ok, "target"].tolist(),
                                       strict=True)):
            outgoing[s].append(k + 1)
            incoming[t].append(k + 1)
        ids = ev.index.to_numpy()
        args = self.trace.args_of(ids) if with_args else None
        names = ev["name"].astype(object).where(ev["name"].notna(), "").tolist()
        cats = ev["category"].astype(object).where(ev["category"].notna(), "").tolist()
        start = (ev["start"].to_numpy(np.int64) * self.scale + self.base).tolist()
        stop = ev["start"].to_numpy(np.int64) + ev["dur"].to_numpy(np.int64)
        end = (stop * self.scale + self.base).tolist()
        instant = (ev["kind"].astype(str) == "instant").to_numpy()
        tracks = ev["track"].astype(str).tolist()
        by_lane: dict[str, list[int]] = defaultdict(list)
        for row in np.lexsort((ids, -np.asarray(end), np.asarray(start))).tolist():
            by_lane[tracks[row]].append(row)
        spilled = 0
        for lane in _lane_order(list(by_lane), flows.loc[ok], tracks, start):
            rows = by_lane[lane]
            stack: list[int] = []
            for row in rows:
                if instant[row]:
                    self.event(TYPE_INSTANT, start[row], lanes[lane], names[row], cats[row],
                               args[row] if args else None, outgoing.get(ids[row]), incoming.get(ids[row]))
                    continue
                while stack and end[stack[-1]] <= start[row]:
                    self.end(end[stack.pop()], lanes[lane])
                if stack and end[row] > end[stack[-1]]:
                    spilled += 1  # a partial overlap: Perfetto's stacks cannot hold it here
                self.event(TYPE_SLICE_BEGIN, start[row], lanes[lane], names[row], cats[row],
                           args[row] if args else None, outgoing.get(ids[row]), incoming.get(ids[row]))
                stack.append(row)
            while stack:
                self.end(end[stack.pop()], lanes[lane])
        return spilled

    def event(self, kind: int, ts: int, track: int, name: str, category: str,
              args: dict[str, Any] | None, out_ids: list[int] | None, in_ids: list[int] | None) -> None:
        e = self.packet(ts).track_event
        e.type = kind
        e.track_uuid = track
        e.name = name
        if category:
            e.categories.append(category)
        if args:
            _annotate(e, args)
        if out_ids:
            e.flow_ids.extend(out_ids)
        if in_ids:
            e.terminating_flow_ids.extend(in_ids)

    def end(self, ts: int, track: int) -> None:
        e = self.packet(ts).track_event
        e.type = TYPE_SLICE_END
        e.track_uuid = track

    def counters(self) -> None:
        c = self.trace.counters
        if c is None or not len(c):
            return
        tracks: dict[tuple[str, str, str], int] = {}
        times = (c["time"].to_numpy(np.int64) * self.scale + self.base).tolist()
        for process, name, series, time, value in zip(
                c["process"].astype(str), c["name"].astype(str), c["series"].astype(str),
                times, c["value"].tolist(), strict=True):
            if value is None or not math.isfinite(value):
                continue
            key = (process, name, series)
            uuid = tracks.get(key)
            if uuid is None:
                uuid = tracks[key] = COUNTER_UUID + len(tracks) + 1
                d = self.packet().track_descriptor
                d.uuid = uuid
                d.parent_uuid = self.process(process)
                d.name = name if series in (name, "value", "") else f"{name}.{series}"
                d.counter.SetInParent()
            e = self.packet(time).track_event
            e.type = TYPE_COUNTER
            e.track_uuid = uuid
            e.double_counter_value = float(value)


def _lane_order(lanes: list[str], flows: Any, tracks: list[str], start: list[int]) -> list[str]:
    """Lanes in the order they are written: readers take a flow's events in time order and, at
    equal times, in file order, so a lane holding a flow's source is written before the lane
    of a target that starts at the same time (Kahn's order on those pairs; a cycle keeps the
    table's order)."""
    after: dict[str, set[str]] = defaultdict(set)
    needs: dict[str, int] = dict.fromkeys(lanes, 0)
    for s, t in zip(flows["source"].tolist(), flows["target"].tolist(), strict=True):
        a, b = tracks[s], tracks[t]
        if a != b and start[s] == start[t] and b not in after[a]:
            after[a].add(b)
            needs[b] += 1
    ready = [lane for lane in lanes if not needs[lane]]
    order: list[str] = []
    while ready:
        lane = ready.pop(0)
        order.append(lane)
        for nxt in sorted(after[lane]):
            needs[nxt] -= 1
            if not needs[nxt]:
                ready.append(nxt)
    placed = set(order)
    return order + [lane for lane in lanes if lane not in placed]


def write(trace: Trace, path: str | Path, *, args: bool = True) -> Path:
    """Write ``trace`` to ``path`` as a Perfetto protobuf trace; returns the path."""
    writer = _Writer(trace)
    spilled = writer.events(args)
    writer.counters()
    target = Path(path)
    target.write_bytes(writer.out.SerializeToString())
    if spilled:
        log.warning("%d events partly overlap an enclosing one on their lane", spilled)
    return target
