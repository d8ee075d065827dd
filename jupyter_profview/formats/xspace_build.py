"""XSpace planes -> columns, one plane at a time (see `.xspace` for the mapping).

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

import struct
from array import array
from collections import Counter
from typing import Any

import numpy as np

from ..errors import ProfviewError
from ..model import Quality
from .xspace_columns import EventColumns, unique_small
from .xspace_columns import unique_rows as unique_rows  # re-exported: the tests import it here
from .xspace_rules import LIMIT, as_int, stat_value


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
        """The index of ``value`` in `objs`, added once per distinct value (and type)."""
        key = (type(value), value)
        found = self._obj_index.get(key)
        if found is None:
            found = self._obj_index[key] = len(self.objs)
            self.objs.append(value)
        return found

    def code(self, stat: str) -> int:
        """The code of a stat name in `stat_names`."""
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
        self._place_line(label, thread, host, ts, off_a, dur_a)

    def _place_line(self, label: str, thread: str, host: bool, ts: int, off_a: np.ndarray,
                    dur_a: np.ndarray) -> None:
        """A line's timed events (ps offsets and durations from its ``ts`` ns) on a lane of their
        own: ns starts and durations, the ps remainders kept apart."""
        n = len(off_a)
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
        """`_add_line` for every line, from the columns of ``xplane_lines``:
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
            self._place_line(label, thread, host, ts, off_a, dur_a)

    def _add_native_stats(self, cols: dict[str, Any], keep: np.ndarray | None, rows: np.ndarray,
                          stat_names: dict[int, str], key_code: dict[int, int]) -> None:
        """The own stats of the timed events (``keep``; None: all), as `_add_line`
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
        uniq, first_at, inverse = unique_small(meta)
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
        uniq, _, inverse = unique_small(mids)
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
        start and end ns (before `offset` is added) and the ps below them."""
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
        start and the end below their ns (`picoseconds` gives the event's
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
        return EventColumns(self, arrays).build()


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
