"""PyTorch CUDA memory snapshots: the pickles of
``torch.cuda.memory._dump_snapshot`` (what pytorch.org/memory_viz opens), and
of ``torch.cuda._memory_viz._profile_to_snapshot`` (the same structure made
from a CPU profiler run).

**No pickle code runs.**  The file is read by a restricted copy of Python's own
pure-Python unpickler that dispatches only the opcodes of dicts, lists, tuples,
str, bytes, int, float, bool, None, the memo and frames: a snapshot is made only
of those, so a file that names any callable (``__reduce__`` payloads,
``GLOBAL`` / ``STACK_GLOBAL`` / ``INST`` name a global that ``find_class``
refuses; ``REDUCE`` / ``BUILD`` / ``OBJ`` / ``EXT`` / persistent ids / sets /
buffers are refused as opcodes) raises a ProfviewError before anything is
imported or called.  It is also bounded (issue 25): at most
``limits.pickle_object_budget(stored size)`` opcodes (16 per stored byte, at
least 1M), a dict memo (``LONG_BINPUT 2**26`` is one entry, not a 2**26-slot
array), integers of at most 40 digits / 17 bytes, and a result nested at most
``PICKLE_MAX_DEPTH`` deep (cycles refused).  It is ~13x slower than the C
unpickler (a 7.8 MB snapshot of 200k trace entries: 4.6 s).

Structure (``torch.cuda.memory._snapshot`` docs): ``segments`` (``device``,
``address``, ``total_size``, ``stream``, ``blocks`` of ``size``, ``state``,
optional ``address`` / ``requested_size`` / ``frames``) and ``device_traces``
(one list per device of ``action`` = alloc / free_requested / free_completed /
segment_alloc / segment_free / segment_map / segment_unmap / oom / snapshot,
``addr``, ``size``, ``stream``, ``time_us``, ``frames``).  A block without
``address`` starts where the previous block of its segment ends.

One record = one segment, one block or one trace entry.

* ``events``: each trace entry is an instant on process ``cuda:<device>``,
  thread ``stream <n>`` (name = action; columns ``size``, ``addr``,
  ``frame`` = its owner frame); each segment's lifetime (``segment_alloc`` ..
  ``segment_free``, else the trace's ends) is a slice on thread ``segments``.
* ``memory``: ``cuda:<device>`` bytes allocated (``+size`` at alloc,
  ``-size`` at free_completed, as memory_viz counts), offset so the curve ends
  at the snapshot's allocated bytes (active blocks, awaiting free or not): memory
  allocated before recording started is in the baseline.  ``counters``:
  reserved bytes per device (segment_alloc / segment_free, offset the same
  way with the segments' ``total_size``).
* ``allocations``: alloc .. free_completed per address; blocks still
  allocated in the snapshot with no alloc in the trace are listed from the
  trace's start (owner ``(allocated before recording)``).  Extra columns
  ``frames`` (list of ``name (file:line)``, innermost first),
  ``requested_free`` (the free_requested time).  ``owner`` = the first frame
  outside ``torch/``.  ``metadata["peaks"]``: per device, the peak time and
  bytes; ``analysis.live_at(trace, peak)`` lists what is live there.

Limits (hostile input): the pickle is unpickled as it streams in (never
held whole); one pickled string or frame longer than 64 MiB
(`MAX_STRING`) and a snapshot expanding to
more than `MAX_SNAPSHOT` (4 GiB) decompressed bytes are ProfviewErrors.

Times: ``time_us`` x 1000 (ns, 1 µs resolution).  Snapshots without
``time_us`` (``_profile_to_snapshot``) use ``time_unit="step"``: the entry's
position in its device trace.
"""

from __future__ import annotations

import io
import pickle
from collections import defaultdict
from typing import Any

import numpy as np
import pandas as pd

from ..builder import build_events, make_trace
from ..errors import ProfviewError
from ..limits import MAX_INT_DIGITS, PICKLE_MAX_DEPTH, pickle_object_budget
from ..model import Quality, Trace, memory_frame
from ..sources import MAX_STRING, Source
from . import TraceFormat

EXPECTED = "a PyTorch memory snapshot pickle ({'segments': [...], 'device_traces': [[...], ...]})"
ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
           "segment_unmap", "oom", "snapshot")
_LIMIT = 2**62
MAX_SNAPSHOT = 4 * 1024**3  # decompressed bytes of one snapshot pickle


PREEXISTING = "(allocated before recording)"
_IN_USE = ("active_allocated", "active_awaiting_free", "active_pending_free")  # freed at free_completed


class _Refused(Exception):
    pass


#: the opcodes a snapshot needs: builtin containers and scalars, the memo, frames.  Anything
#: else (globals, reduce, build, persistent ids, extensions, sets, bytearrays, buffers) is
#: refused before it runs: nothing is imported or called, and no set of 216 bytes per opcode
#: byte can be built.
_ALLOWED = {
    pickle.PROTO, pickle.FRAME, pickle.STOP, pickle.MARK, pickle.POP, pickle.POP_MARK, pickle.DUP,
    pickle.NONE, pickle.NEWTRUE, pickle.NEWFALSE, pickle.INT, pickle.BININT, pickle.BININT1,
    pickle.BININT2, pickle.LONG, pickle.LONG1, pickle.LONG4, pickle.FLOAT, pickle.BINFLOAT,
    pickle.STRING, pickle.BINSTRING, pickle.SHORT_BINSTRING, pickle.UNICODE, pickle.BINUNICODE,
    pickle.SHORT_BINUNICODE, pickle.BINUNICODE8, pickle.BINBYTES, pickle.SHORT_BINBYTES,
    pickle.BINBYTES8, pickle.EMPTY_TUPLE, pickle.TUPLE, pickle.TUPLE1, pickle.TUPLE2, pickle.TUPLE3,
    pickle.EMPTY_LIST, pickle.APPEND, pickle.APPENDS, pickle.LIST, pickle.EMPTY_DICT, pickle.DICT,
    pickle.SETITEM, pickle.SETITEMS, pickle.GET, pickle.BINGET, pickle.LONG_BINGET, pickle.PUT,
    pickle.BINPUT, pickle.LONG_BINPUT, pickle.MEMOIZE,
    # these name a global: find_class refuses it, naming it, before anything is imported
    pickle.GLOBAL, pickle.STACK_GLOBAL, pickle.INST,
}


def _text_int(self: _SafeUnpickler) -> None:
    """``INT`` / ``LONG``: decimal text (``00`` / ``01`` are False / True for ``INT``)."""
    line = self.readline()
    if line in (b"00\n", b"01\n"):
        self.append(line == b"01\n")
        return
    digits = line.strip().removesuffix(b"L")
    if len(digits.lstrip(b"+-")) > MAX_INT_DIGITS:
        raise _Refused(f"an integer of more than {MAX_INT_DIGITS} digits")
    self.append(int(digits, 0))


def _bytes_int(width: int) -> Any:
    """``LONG1`` / ``LONG4``: a little-endian two's complement integer of at most 17 bytes."""
    def run(self: _SafeUnpickler) -> None:
        size = int.from_bytes(self.read(width), "little", signed=True)
        if not 0 <= size <= 17:
            raise _Refused(f"an integer of {size} bytes (at most 17)")
        self.append(int.from_bytes(self.read(size), "little", signed=True))
    return run


_OWN = {pickle.INT[0]: _text_int, pickle.LONG[0]: _text_int, pickle.LONG1[0]: _bytes_int(1),
        pickle.LONG4[0]: _bytes_int(4)}


class _SafeUnpickler(pickle._Unpickler):  # type: ignore[name-defined,misc]
    """Python's own pure-Python unpickler, with a dispatch table of the opcodes above only, each
    counted: at most ``budget`` opcodes (objects, memo entries and stack pushes together; see
    ``limits.pickle_object_budget``), integers of at most ``MAX_INT_DIGITS`` digits.  Its memo is
    a dict, so a ``LONG_BINPUT 2**26`` costs one entry, not a 2**26-slot array."""

    read: Any  # set by pickle._Unpickler.load (its frame reader) ...
    readline: Any
    append: Any  # ... and its stack's append

    def __init__(self, file: Any, budget: int) -> None:
        super().__init__(file)
        self.budget = budget

    def load(self) -> Any:
        """``pickle._Unpickler.load`` with the opcode count in its loop (a wrapper per opcode
        cost a third of the time)."""
        self._unframer = pickle._Unframer(self._file_read, self._file_readline)  # type: ignore[attr-defined]
        self.read, self.readinto = self._unframer.read, self._unframer.readinto
        self.readline = self._unframer.readline
        self.metastack: list[Any] = []
        self.stack: list[Any] = []
        self.append = self.stack.append
        self.proto = 0
        read, dispatch, budget = self.read, self.dispatch, self.budget
        ops = 0
        try:
            while True:
                key = read(1)
                if not key:
                    raise EOFError
                ops += 1
                if ops > budget:
                    raise _Refused(f"more than {budget:,} pickle opcodes for its size (a pickle bomb?)")
                dispatch[key[0]](self)  # type: ignore[arg-type]
        except pickle._Stop as stop:  # type: ignore[attr-defined]
            return stop.value

    def find_class(self, module: str, name: str) -> Any:
        raise _Refused(f"the pickle asks for {module}.{name}; snapshots hold only builtin containers "
                       "and scalars, so nothing is imported or called")

    def persistent_load(self, pid: Any) -> Any:
        raise _Refused("the pickle uses a persistent id")


def _refuse(code: int) -> Any:
    def run(self: _SafeUnpickler) -> None:
        what = next((name for name in dir(pickle) if name.isupper()
                     and getattr(pickle, name) == bytes([code])), None)
        if what is None or code not in pickle._Unpickler.dispatch:  # type: ignore[attr-defined]
            raise pickle.UnpicklingError(f"invalid load key, {bytes([code])!r}")
        raise _Refused(f"opcode {what}: snapshots hold only builtin containers and scalars, so "
                       "nothing is imported, called or built")
    return run


_SafeUnpickler.dispatch = {
    code: ((_OWN.get(code) or pickle._Unpickler.dispatch[code])  # type: ignore[attr-defined]
           if bytes([code]) in _ALLOWED else _refuse(code))
    for code in range(256)
}


def sniff(head: bytes) -> bool:
    return (len(head) > 2 and head[0] == 0x80 and 2 <= head[1] <= 5
            and (b"segments" in head[:4096] or b"device_traces" in head[:4096]))


class _Stream:
    """A file for the unpickler over the streamed, decompressed input: any
    single read (a string, a frame) longer than MAX_STRING is refused before
    it is allocated, and the whole input is limited to MAX_SNAPSHOT bytes
    (see `Source.reader`), so a small ``.gz`` cannot make the loader
    hold gigabytes of filler."""

    def __init__(self, data: bytes | Source) -> None:
        self._file: Any = (io.BufferedReader(io.BytesIO(data)) if isinstance(data, bytes)
                           else data.reader(MAX_SNAPSHOT))
        self.position = 0  # bytes handed to the unpickler so far

    def _take(self, data: bytes) -> bytes:
        self.position += len(data)
        return data

    def read(self, n: int = -1) -> bytes:
        if n < 0 or n > MAX_STRING:
            raise _Refused(f"a pickled value of {n:,} bytes (more than {MAX_STRING >> 20} MiB)")
        return self._take(self._file.read(n))

    def readline(self) -> bytes:
        line = self._file.readline(MAX_STRING + 1)
        if len(line) > MAX_STRING:
            raise _Refused(f"a pickled line longer than {MAX_STRING >> 20} MiB")
        return self._take(line)

    def peek(self, n: int = 0) -> bytes:
        return bytes(self._file.peek(n))


def _check_depth(obj: Any, most: int = PICKLE_MAX_DEPTH) -> None:
    """Containers nested at most ``most`` deep (a cycle, which the memo can build, is infinitely
    deep), checked without recursion: the loader walks the result recursively in places."""
    stack: list[tuple[Any, int]] = [(obj, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (list, tuple, dict)):
            if depth >= most:
                raise _Refused(f"containers nested more than {most} deep (or a cycle)")
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items if isinstance(item, (list, tuple, dict)))


def unpickle(data: bytes | Source, name: str) -> Any:
    """The snapshot object (from bytes or streamed from a Source), or
    ProfviewError; never imports or calls anything."""
    stream = _Stream(data)
    budget = pickle_object_budget(len(data) if isinstance(data, bytes) else data.size)
    try:
        snapshot = _SafeUnpickler(stream, budget).load()
        _check_depth(snapshot)
        return snapshot
    except _Refused as exc:
        raise ProfviewError(f"refused: {exc}", source=name, position=f"byte {stream.position}",
                            expected=EXPECTED) from None
    except ProfviewError:  # bad gzip, too big: already says where
        raise
    except MemoryError:  # a length field asking for more than there is (BYTEARRAY8 of 2**60 ...)
        raise ProfviewError("ran out of memory unpickling: a size in the pickle is larger than memory",
                            source=name, position=f"byte {stream.position}", expected=EXPECTED) from None
    except RecursionError:
        raise ProfviewError("nesting too deep", source=name, position=f"byte {stream.position}",
                            expected=EXPECTED) from None
    except Exception as exc:  # noqa: BLE001 - corrupt pickles raise many kinds (EOFError, KeyError, ...)
        raise ProfviewError(f"corrupt pickle ({type(exc).__name__}: {str(exc)[:100]})", source=name,
                            position=f"byte {stream.position}", expected=EXPECTED) from None


def _get(obj: Any, key: str, kind: type | tuple[type, ...], where: str, name: str, default: Any = ...) -> Any:
    if not isinstance(obj, dict):
        raise ProfviewError(f"{where} is {type(obj).__name__}", source=name, position=where,
                            expected="a dict")
    if key not in obj:
        if default is not ...:
            return default
        raise ProfviewError(f"missing {key!r}", source=name, position=where, expected=EXPECTED)
    value = obj[key]
    bad = not isinstance(value, kind) or isinstance(value, bool) and kind in (int, (int, float))
    if bad or (isinstance(value, int) and abs(value) >= _LIMIT):
        raise ProfviewError(f"{key} = {str(value)[:40]}", source=name, position=f"{where}.{key}",
                            expected=f"{kind.__name__ if isinstance(kind, type) else 'a number'}")
    return value


def _frames(raw: Any, where: str, name: str) -> list[str]:
    if not isinstance(raw, list):
        raise ProfviewError("frames is not a list", source=name, position=where, expected="a list of frames")
    out = []
    for k, f in enumerate(raw):
        fname = _get(f, "name", str, f"{where}[{k}]", name, "?")
        file = _get(f, "filename", str, f"{where}[{k}]", name, "?")
        line = _get(f, "line", int, f"{where}[{k}]", name, 0)
        out.append(fname if file in ("none", "?", "") else f"{fname} ({file}:{line})")
    return out


def _owner(frames: list[str]) -> str:
    outside = [f for f in frames if "torch/" not in f and not f.startswith("<built-in")]
    return (outside or frames or [""])[0]


class _Builder:
    """The rows being collected, and the allocator state while the trace is replayed."""

    def __init__(self, name: str, lo: int) -> None:
        self.name = name
        self.lo = lo  # the earliest time: where what predates the recording is placed
        self.q = Quality()
        self.ev: dict[str, list[Any]] = defaultdict(list)
        self.allocs: list[list[Any]] = []
        self.allocated: Points = defaultdict(list)  # device -> (time, +-bytes)
        self.reserved: Points = defaultdict(list)
        self.seg_start: dict[tuple[int, int], tuple[int, int]] = {}  # (device, addr) -> (time, size)
        self.open_allocs: dict[tuple[int, int], int] = {}  # (device, addr) -> row of allocs
        self.end_allocated: dict[int, int] = defaultdict(int)  # bytes in use in the snapshot
        self.end_reserved: dict[int, int] = defaultdict(int)

    def event(self, kind: str, name: str, device: int, thread: str, start: int, dur: int,
              size: int | None, addr: int | None, frame: str) -> None:
        for key, value in (("kind", kind), ("name", name), ("category", "segment" if kind == "slice" else
                                                                          "allocator"),
                           ("process", f"cuda:{device}"), ("thread", thread), ("start", start),
                           ("dur", dur), ("size", size), ("addr", addr), ("frame", frame)):
            self.ev[key].append(value)


Points = dict[int, list[tuple[int, int]]]


def load(source: Source) -> Trace:
    name = source.name
    snap = unpickle(source, name)
    if not isinstance(snap, dict) or "segments" not in snap:
        raise ProfviewError(f"top level is {type(snap).__name__} without 'segments'", source=name,
                            expected=EXPECTED)
    segments = _get(snap, "segments", list, "snapshot", name)
    traces = _get(snap, "device_traces", list, "snapshot", name, [])
    timed = any(isinstance(e, dict) and "time_us" in e for d in traces if isinstance(d, list) for e in d)
    times = _times(traces, timed, name)
    lo = min((min(t) for t in times.values() if t), default=0)
    hi = max((max(t) for t in times.values() if t), default=0)
    b = _Builder(name, lo)
    for d, trace in enumerate(traces):
        for k, entry in enumerate(trace):
            _trace_entry(b, d, f"device_traces[{d}][{k}]", entry, times[d][k])
    for s, segment in enumerate(segments):
        _segment(b, f"segments[{s}]", segment, hi)
    return _finish(b, b.allocated, b.reserved, b.end_allocated, b.end_reserved, lo, timed)


def _times(traces: list[Any], timed: bool, name: str) -> dict[int, list[int]]:
    """Per device, the time of each trace entry: ns, or its position without ``time_us``."""
    times: dict[int, list[int]] = {}
    for d, trace in enumerate(traces):
        if not isinstance(trace, list):
            raise ProfviewError("not a list", source=name, position=f"device_traces[{d}]", expected=EXPECTED)
        times[d] = [(_get(e, "time_us", int, f"device_traces[{d}][{k}]", name) * 1000 if timed else k)
                    for k, e in enumerate(trace)]
        if any(abs(t) >= _LIMIT for t in times[d]):
            raise ProfviewError("time_us out of range", source=name, position=f"device_traces[{d}]",
                                expected="microseconds since the epoch")
    return times


def _trace_entry(b: _Builder, d: int, where: str, e: Any, t: int) -> None:
    """One allocator trace entry of device ``d`` at time ``t``: an instant, and
    its effect on the allocated / reserved curves, allocations and segments."""
    name = b.name
    b.q.records_read += 1
    action = _get(e, "action", str, where, name)
    if action not in ACTIONS:
        raise ProfviewError(f"unknown action {action!r}", source=name, position=where,
                            expected=f"one of {', '.join(ACTIONS)}")
    size = _get(e, "size", int, where, name, 0)
    addr = _get(e, "addr", int, where, name, None)
    frames = _frames(e.get("frames", []), f"{where}.frames", name)
    b.event("instant", action, d, f"stream {_get(e, 'stream', int, where, name, 0)}", t, 0,
            size, addr, _owner(frames))
    b.q.placed["events"] += 1
    if action == "alloc":
        b.allocated[d].append((t, size))
        b.allocs.append([f"cuda:{d}", addr, size, t, None, _owner(frames), frames, None])
        if addr is not None:
            b.open_allocs[(d, addr)] = len(b.allocs) - 1
    elif action == "free_requested" and (d, addr) in b.open_allocs:
        b.allocs[b.open_allocs[(d, addr)]][7] = t
    elif action == "free_completed":
        b.allocated[d].append((t, -size))
        if (d, addr) in b.open_allocs:
            b.allocs[b.open_allocs.pop((d, addr))][4] = t
        else:  # allocated before recording started
            b.allocated[d].append((b.lo, size))
            b.allocs.append([f"cuda:{d}", addr, size, b.lo, t, PREEXISTING, frames, None])
    elif action in ("segment_alloc", "segment_map"):
        b.reserved[d].append((t, size))
        if addr is not None:
            b.seg_start[(d, addr)] = (t, size)
    elif action in ("segment_free", "segment_unmap"):
        b.reserved[d].append((t, -size))
        if addr is not None and (d, addr) in b.seg_start:
            start, seg_size = b.seg_start.pop((d, addr))
            b.event("slice", f"segment {seg_size:,} B", d, "segments", start, t - start, seg_size, addr, "")


def _segment(b: _Builder, where: str, seg: Any, hi: int) -> None:
    """One segment of the snapshot (a slice until ``hi``) and its blocks: those
    in use count in the final allocated bytes; those without an alloc in the
    trace are allocations from before the recording."""
    name = b.name
    b.q.records_read += 1
    d = _get(seg, "device", int, where, name, 0)
    base_addr = _get(seg, "address", int, where, name)
    total = _get(seg, "total_size", int, where, name)
    b.end_reserved[d] += total
    start, _ = b.seg_start.pop((d, base_addr), (b.lo, total))
    b.event("slice", f"segment {total:,} B", d, "segments", start, hi - start, total, base_addr, "")
    b.q.placed["events"] += 1
    addr = base_addr
    for k, block in enumerate(_get(seg, "blocks", list, where, name)):
        bw = f"{where}.blocks[{k}]"
        b.q.records_read += 1
        size = _get(block, "size", int, bw, name)
        addr = _get(block, "address", int, bw, name, addr)
        state = _get(block, "state", str, bw, name)
        if state in _IN_USE:
            b.end_allocated[d] += size
            if (d, addr) not in b.open_allocs:
                frames = _frames(block.get("frames", []), f"{bw}.frames", name)
                b.allocs.append([f"cuda:{d}", addr, size, b.lo, None, PREEXISTING, frames, None])
                b.allocated[d].append((b.lo, size))
            b.q.placed["allocations"] += 1
        else:
            b.q.skipped[f"{state} block (not allocated)"] += 1
        addr += size


def _curve(points: list[tuple[int, int]], end_level: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Running level per instant, offset so it ends at ``end_level`` (kept at 0 if that would go negative)."""
    t = np.array([p[0] for p in points], np.int64)
    order = np.argsort(t, kind="stable")
    t = t[order]
    level = np.cumsum(np.array([p[1] for p in points], np.int64)[order])
    baseline = end_level - int(level[-1])
    if baseline + int(level.min()) < 0:
        baseline = -int(level.min())
    last = np.append(t[1:] != t[:-1], True)
    return t[last], level[last] + baseline, baseline


def _finish(b: _Builder, allocated: Points, reserved: Points,
            end_allocated: dict[int, int], end_reserved: dict[int, int], lo: int, timed: bool) -> Trace:
    if not b.ev["start"]:
        raise ProfviewError("the snapshot has no segments and no trace entries", source=b.name,
                            expected="a snapshot taken with memory history recording on")
    for d, pts in (*allocated.items(), *reserved.items()):
        if sum(abs(v) for _, v in pts) + end_allocated.get(d, 0) + end_reserved.get(d, 0) >= _LIMIT:
            raise ProfviewError("byte counts add up beyond 2**62", source=b.name, position=f"device {d}",
                                expected="sizes in bytes of real allocations")
    mem_t: list[int] = []
    mem_d: list[str] = []
    mem_b: list[int] = []
    peaks: dict[str, dict[str, int]] = {}
    for d, points in sorted(allocated.items()):
        t, level, _ = _curve([(lo, 0), *points], end_allocated.get(d, 0))
        mem_t += t.tolist()
        mem_b += level.tolist()
        mem_d += [f"cuda:{d}"] * len(t)
        peaks[f"cuda:{d}"] = {"time": int(t[int(np.argmax(level))]), "bytes": int(level.max())}
    counters = None
    if reserved:
        rows = [(t, d, v) for d, pts in sorted(reserved.items())
                for t, v in zip(*_curve([(lo, 0), *pts], end_reserved.get(d, 0))[:2], strict=True)]
        counters = pd.DataFrame({
            "time": np.array([r[0] for r in rows], np.int64),
            "process": pd.Categorical([f"cuda:{r[1]}" for r in rows]),
            "name": pd.Categorical(["reserved"] * len(rows)), "series": pd.Categorical(["bytes"] * len(rows)),
            "value": np.array([r[2] for r in rows], np.float64)})
    ev = b.ev
    columns: dict[str, Any] = {k: ev[k] for k in ("name", "category", "process", "thread", "kind")}
    columns["start"] = np.asarray(ev["start"], np.int64)
    columns["dur"] = np.asarray(ev["dur"], np.int64)
    columns["size"] = pd.array(ev["size"], dtype="Int64")
    columns["addr"] = pd.array(ev["addr"], dtype="Int64")
    columns["frame"] = pd.array(ev["frame"], dtype="string")
    events, _, base = build_events(columns, b.q, base=lo)
    al: list[Any] = list(zip(*b.allocs, strict=True)) if b.allocs else [()] * 8
    allocations = pd.DataFrame({
        "device": pd.Categorical(al[0]), "address": pd.array(al[1], dtype="Int64"),
        "bytes": np.asarray(al[2], np.int64), "alloc_time": pd.array(al[3], dtype="Int64"),
        "free_time": pd.array(al[4], dtype="Int64"), "owner": pd.array(al[5], dtype="string"),
        "frames": pd.Series(list(al[6]), dtype=object),
        "requested_free": pd.array([None if v is None else v - lo for v in al[7]], dtype="Int64"),
    })
    memory = memory_frame(mem_t, mem_d, mem_b, "measured") if mem_t else None
    metadata = {"peaks": {k: {**v, "time": v["time"] - base} for k, v in peaks.items()},
                "devices": sorted({f"cuda:{d}" for d in allocated} | {f"cuda:{d}" for d in end_reserved})}
    return make_trace(FORMAT.name, "ns" if timed else "step", events, b.q, base=base, memory=memory,
                      allocations=allocations, counters=counters, metadata=metadata)


FORMAT = TraceFormat(
    name="torch_cuda_snapshot",
    description="PyTorch CUDA memory snapshot (torch.cuda.memory._dump_snapshot pickle, read without "
                "running pickle code): allocator trace, segments, allocated / reserved memory, "
                "allocations with stacks",
    sniff=sniff,
    load=load,
)
