"""The packet walk in C (``_native/perfetto_scan.c``): the same `Columns` as `.reader.Reader`,
filled by the native walker straight into C buffers that become numpy arrays (no Python object
per packet, no dict per event).

* The file is read in windows (``pread``, 8 MB), not mapped or read whole: the walk holds one
  window at a time.  A file cut or rewritten while it is read is a ProfviewError (`FileBlob`),
  never a fault.  A ``.gz`` (or bytes) source is inflated in Python first, as on the Python path.
* ``compressed_packets``: the walker stops at a bundle, Python inflates it (zlib, with the
  reader's limits and skip reasons) and hands its packets back to the walker.
* Debug annotations stay bytes (`NativeArgs`): per event, where its ``TrackEvent`` is in the
  file (read back from it when asked, as the Chrome scanner's file args: a file rewritten since
  is a ProfviewError, never wrong args), or a copy of its annotations where they are not in
  the file (inflated bytes), and the interned names and strings they referred to when read;
  ``trace.args(id)`` decodes an event's on demand with the reader's own `.reader.arg_value`.
* Whatever the walker is not sure protobuf reads the same way (a malformed or unusual
  encoding, a value past int64, a string that is not UTF-8) makes `walk` return None: the
  caller then reads the file with the Python reader, which stays the reference.
"""

from __future__ import annotations

import ctypes
import zlib
from collections import Counter
from ctypes import c_int64, c_size_t, c_void_p
from typing import Any

import numpy as np

from ... import _native
from ...sources import Source
from ..file_blob import FileBlob
from .clocks import Clocks
from .reader import MAX_DECOMPRESSED, UNMATCHED_END, arg_name, arg_value
from .schema import message_class
from .state import Columns, Sequence, Track
from .wire import Damage, bad_key, bad_length, past_end

PF_DONE, PF_INFLATE, PF_PAUSE, PF_UNSUP, PF_NOMEM = range(5)
#: the walker's column ids (perfetto_state.h), with their dtypes
COLUMNS: tuple[tuple[str, Any], ...] = (
    ("ev_track", np.int32), ("ev_name", np.int32), ("ev_cat", np.int32), ("ev_kind", np.int8),
    ("ev_start", np.int64), ("ev_start_dom", np.int16), ("ev_end", np.int64), ("ev_end_dom", np.int16),
    ("ev_stacked", np.int8), ("ev_order", np.int32), ("end_track", np.int32), ("end_time", np.int64),
    ("end_dom", np.int16), ("end_order", np.int32), ("end_row", np.int32), ("ct_track", np.int32),
    ("ct_time", np.int64), ("ct_dom", np.int16), ("ct_value", np.float64), ("flow_row", np.int32),
    ("flow_id", np.uint64), ("flow_end", np.int8), ("flow_at_end", np.int8),
    ("arg_row", np.int32), ("arg_span", np.int64), ("arg_res", np.int64), ("res", np.int64),
    ("blob", np.uint8), ("snap", np.int64), ("snap_pairs", np.int64), ("domains", np.int64),
    ("phases", np.int64),
)
(Q_RECORDS, Q_DROPPED, Q_EVENTS, Q_COUNTERS, Q_METADATA, Q_UNSPEC, Q_UNMATCHED, Q_NEEDS, Q_NOTRACK,
 Q_INTERN_IGNORED, Q_EXTRA_NO_TRACK, Q_DAMAGE_KIND, Q_DAMAGE_AT, Q_DAMAGE_VALUE, Q_DAMAGE_LEFT,
 Q_DAMAGE_BODY_LEFT, Q_COUNT) = range(17)
TRACK_FIELDS = 16
WINDOW = 8 << 20  # bytes of the file read at a time (a packet longer than that: its length)


class NativeArgs:
    """The events' debug annotations as the walker kept them: per group (one event's
    annotations, a slice's begin and end each one), its walk row, its bytes (``TrackEvent``
    field 4 entries) and the interned names and strings they named.  Behaves as the
    reader's ``{row: {name: value}}`` for what the tables use: truth, iteration over rows,
    ``get``."""

    def __init__(self, cols: dict[str, np.ndarray], raw: list[bytes], file: FileBlob | None = None) -> None:
        self.rows = cols["arg_row"]
        self.spans = cols["arg_span"].reshape(-1, 2)
        self.res_at = cols["arg_res"].reshape(-1, 2)  # per group: first triple, count (lists shared)
        self.res = cols["res"].reshape(-1, 3)
        self.blob = cols["blob"]
        self.raw = raw
        self.file = file  # where the spans with an offset < 0 are (``-offset - 1``: the TrackEvent)
        self._order: np.ndarray | None = None
        self._rows: np.ndarray | None = None
        self._message = message_class("TrackEvent")

    def __bool__(self) -> bool:
        return len(self.rows) > 0

    def row_array(self) -> np.ndarray:
        """The rows with args, ascending, once each (not the groups of dropped rows, -1)."""
        if self._rows is None:
            self._rows = np.unique(self.rows[self.rows >= 0])
        return self._rows

    def __len__(self) -> int:
        return len(self.row_array())

    def __iter__(self) -> Any:
        return iter(self.row_array().tolist())

    def renumber(self, new_of_old: np.ndarray) -> None:
        """Key the groups by ``new_of_old[row]`` (event ids), in place."""
        self.rows = new_of_old[self.rows]
        self._order = self._rows = None

    def get(self, row: int, default: Any = None) -> Any:
        if self._order is None:
            self._order = np.argsort(self.rows, kind="stable")
        order = self._order
        lo, hi = np.searchsorted(self.rows[order], [row, row + 1])
        if lo == hi:
            return default
        got: dict[str, Any] = {}
        for g in order[lo:hi].tolist():
            seq = Sequence()
            first, count = self.res_at[g].tolist()
            for kind, iid, code in self.res[first:first + count].tolist():
                if code < 0:
                    continue
                if kind == 0:
                    seq.arg_names[iid] = self.raw[code].decode("utf-8")
                else:
                    seq.arg_strings[iid] = self.raw[code].decode("utf-8", "replace")
            off, size = self.spans[g].tolist()
            if off >= 0:
                event = self._message.FromString(self.blob[off:off + size].tobytes())
            else:
                assert self.file is not None
                event = self._message.FromString(self.file.read(-off - 1, size))
            for ann in event.debug_annotations:
                got[arg_name(ann, seq)] = arg_value(ann, seq)
        return got


def renumber_args(args: Any, new_of_old: np.ndarray) -> Any:
    """The args (`NativeArgs`, or the reader's ``{row: {name: value}}``) keyed by
    ``new_of_old[row]`` (rows mapped to -1 are dropped)."""
    if isinstance(args, NativeArgs):
        args.renumber(new_of_old)
        return args
    return {int(new_of_old[row]): value for row, value in args.items() if new_of_old[row] >= 0}


def walk(source: Source, data: bytes | bytearray | None) -> tuple[Columns, list[Damage]] | None:
    """The walk of ``source`` (``data``: its inflated bytes, None to map the file), or None
    where the native walker is unavailable or leaves the file to the Python reader."""
    if not _native.available():
        return None
    lib = _native._lib()
    handle = lib.pv_pf_new()
    if not handle:
        raise MemoryError("out of memory starting the native Perfetto walker")
    try:
        return _walk(lib, handle, source, data)
    finally:
        lib.pv_pf_free(handle)


def _walk(lib: ctypes.CDLL, handle: int, source: Source, data: bytes | bytearray | None) -> \
        tuple[Columns, list[Damage]] | None:
    skipped: Counter[str] = Counter()
    blob: FileBlob | None = None
    if data is None:
        assert source.path is not None
        blob = FileBlob(source.path)  # kept open: the annotations are read back from it when asked
        lib.pv_pf_file_args(handle, 1)
        status = _run_file(lib, handle, blob, skipped)
    else:
        status = _run_bytes(lib, handle, np.frombuffer(data, np.uint8), skipped)
    if status == PF_UNSUP:
        return None
    if status == PF_NOMEM:
        raise MemoryError("out of memory in the native Perfetto walker")
    return _columns(lib, handle, skipped, blob)


def _run_bytes(lib: ctypes.CDLL, handle: int, buf: np.ndarray, skipped: Counter[str]) -> int:
    """The walk of bytes in memory (one window: all of them)."""
    pos = c_int64(0)
    inflate = np.zeros(2, np.int64)
    while True:
        status = lib.pv_pf_walk(handle, buf.ctypes.data, 0, len(buf), len(buf), ctypes.byref(pos),
                                inflate.ctypes.data, len(buf))
        if status != PF_INFLATE:
            return int(status)
        off, size = inflate.tolist()
        status = _inflate(lib, handle, bytes(buf[off:off + size]), skipped)
        if status != PF_DONE:
            return status


def _run_file(lib: ctypes.CDLL, handle: int, blob: FileBlob, skipped: Counter[str]) -> int:
    """The walk of a file read in `WINDOW` pieces (``pread``: a file cut or rewritten while it is
    read is a ProfviewError from `FileBlob.read_into`, never a fault on a mapped page), each piece
    from the first packet the last one did not hold whole (a bigger piece for a bigger packet)."""
    pos = c_int64(0)
    inflate = np.zeros(2, np.int64)
    size = len(blob)
    buffer = np.empty(min(WINDOW, size), np.uint8)  # one buffer for every window (a bigger one if need be)
    window, win_off = buffer[:0], 0
    while True:
        status = lib.pv_pf_walk(handle, window.ctypes.data, win_off, len(window), size, ctypes.byref(pos),
                                inflate.ctypes.data, size)
        if status == PF_PAUSE:
            need = min(max(WINDOW, int(inflate[1])), size - pos.value)
            if pos.value == win_off and len(window) >= need:
                raise RuntimeError(f"the native Perfetto walker paused at byte {win_off} holding it")
            if need > len(buffer):
                buffer = np.empty(need, np.uint8)
            win_off = pos.value
            window = buffer[:blob.read_into(win_off, buffer[:need])]
            continue
        if status != PF_INFLATE:
            return int(status)
        off, length = inflate.tolist()
        status = _inflate(lib, handle, window[off - win_off:off - win_off + length].tobytes(), skipped)
        if status != PF_DONE:
            return status


def _inflate(lib: ctypes.CDLL, handle: int, blob: bytes, skipped: Counter[str]) -> int:
    """`.reader.Reader._inflate`'s rules; the packets go back to the walker."""
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(blob, MAX_DECOMPRESSED)
    except zlib.error as exc:
        skipped[f"compressed_packets bundle that does not inflate ({exc})"] += 1
        return PF_DONE
    if inflater.unconsumed_tail:
        skipped["compressed_packets bundle inflating past 1 GiB"] += 1
        return PF_DONE
    inner = np.frombuffer(data, np.uint8)
    return int(lib.pv_pf_inner(handle, inner.ctypes.data, len(inner)))


def _dict(lib: ctypes.CDLL, handle: int, which: int) -> list[bytes]:
    arena, arena_len, offsets, lengths = c_void_p(), c_size_t(), c_void_p(), c_void_p()
    n = lib.pv_pf_dict(handle, which, ctypes.byref(arena), ctypes.byref(arena_len), ctypes.byref(offsets),
                       ctypes.byref(lengths))
    if not n:
        return []
    text = ctypes.string_at(arena.value or 0, arena_len.value) if arena_len.value else b""
    offs = np.ctypeslib.as_array(ctypes.cast(offsets.value or 0, ctypes.POINTER(c_int64)), (n,)).tolist()
    lens = np.ctypeslib.as_array(ctypes.cast(lengths.value or 0, ctypes.POINTER(ctypes.c_int32)), (n,))
    return [text[o:o + k] for o, k in zip(offs, lens.tolist(), strict=True)]


def _tracks(lib: ctypes.CDLL, handle: int, raw: list[bytes]) -> list[Track]:
    n = lib.pv_pf_ntracks(handle)
    table = np.zeros((n, TRACK_FIELDS), np.int64)
    if n:
        lib.pv_pf_tracks(handle, table.ctypes.data)

    def text(code: int) -> str:
        return raw[code].decode("utf-8") if code >= 0 else ""

    tracks = []
    for (kind, uuid, kpid, ktid, name, parent, has_pid, pid, has_tid, tid, pname, tname, counter,
         incremental, mult, ctype) in table.tolist():
        key: Any = (uuid % (1 << 64), ("thread", kpid, ktid), ("process", kpid), ("global",))[kind]
        tracks.append(Track(key, name=text(name), parent=parent % (1 << 64), pid=pid if has_pid else None,
                            tid=tid if has_tid else None, process_name=text(pname), thread_name=text(tname),
                            counter=bool(counter), incremental=bool(incremental), multiplier=mult,
                            counter_type=ctype))
    return tracks


def _clocks(cols: dict[str, np.ndarray]) -> Clocks:
    clocks = Clocks()
    for sid, cid in cols["domains"].reshape(-1, 2).tolist():
        clocks.code(cid if sid < 0 else (sid, cid))
    pairs = cols["snap_pairs"].reshape(-1, 2).tolist()
    for first, count, primary in cols["snap"].reshape(-1, 3).tolist():
        clocks.add_snapshot({code: ns for code, ns in pairs[first:first + count]}, primary)
    return clocks


def _columns(lib: ctypes.CDLL, handle: int, skipped: Counter[str],
             blob: FileBlob | None) -> tuple[Columns, list[Damage]]:
    q = np.zeros(Q_COUNT, np.int64)
    lib.pv_pf_quality(handle, q.ctypes.data)
    cols: dict[str, np.ndarray] = {}
    for index, (name, dtype) in enumerate(COLUMNS):
        size = c_size_t()
        ptr = lib.pv_pf_detach(handle, index, ctypes.byref(size))
        cols[name] = _native.owned_array(lib, ptr, size.value, dtype)
    raw = _dict(lib, handle, 0)
    c = Columns(**{name: cols[name] for name, _ in COLUMNS[:23]})  # type: ignore[arg-type]
    c.strings = [s.decode("utf-8") for s in _dict(lib, handle, 1)]
    c.tracks = _tracks(lib, handle, raw)
    c.clocks = _clocks(cols)
    c.args = NativeArgs(cols, raw, blob) if len(cols["arg_row"]) else {}  # type: ignore[assignment]
    c.records, c.dropped = int(q[Q_RECORDS]), int(q[Q_DROPPED])
    c.placed["events"] += int(q[Q_EVENTS])
    c.placed["counters"] += int(q[Q_COUNTERS])
    if q[Q_METADATA]:
        c.placed["metadata"] += int(q[Q_METADATA])
    for slot, reason, into in (
        (Q_UNSPEC, "track event of TYPE_UNSPECIFIED without a legacy phase", c.skipped),
        (Q_UNMATCHED, UNMATCHED_END, c.skipped),
        (Q_NEEDS, "packet needing incremental state after data loss (until the next clear)", c.skipped),
        (Q_NOTRACK, "packet with no track data (config, stats, system info, ...)", c.skipped),
        (Q_INTERN_IGNORED, "interned data ignored: the sequence's state was invalid", c.notes),
        (Q_EXTRA_NO_TRACK, "extra counter values without a counter track", c.notes),
    ):
        if q[slot]:
            into[reason] += int(q[slot])
    for phase, count in cols["phases"].reshape(-1, 2).tolist():
        c.skipped[f"legacy event of phase {chr(phase)!r} (not read)"] += count
    c.skipped.update(skipped)
    damage: list[Damage] = []
    kind, at, value, left, body_left = (int(q[k]) for k in (Q_DAMAGE_KIND, Q_DAMAGE_AT, Q_DAMAGE_VALUE,
                                                             Q_DAMAGE_LEFT, Q_DAMAGE_BODY_LEFT))
    end = at + left
    if kind == 1:
        damage.append(bad_key(value, at, end))
    elif kind == 2:
        damage.append(bad_length(at, end))
    elif kind == 3:
        damage.append(past_end(at, value, body_left, end))
    return c, damage
