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
from typing import Any

from .. import _native as native
from ..errors import ProfviewError
from ..limits import MAX_INT_DIGITS, PICKLE_MAX_DEPTH, pickle_object_budget
from ..model import Trace
from ..sources import MAX_STRING, Source
from . import TraceFormat
from .snapshot_columns import ACTIONS, EXPECTED, from_object
from .snapshot_tables import PREEXISTING, build

__all__ = ["ACTIONS", "FORMAT", "PREEXISTING", "load", "sniff", "unpickle"]
MAX_SNAPSHOT = 4 * 1024**3  # decompressed bytes of one snapshot pickle
CHUNK = 4 << 20  # bytes fed to the native reader at a time (its input buffer holds about two)




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


def load(source: Source, window: tuple[int, int] | None = None) -> Trace:
    """The snapshot's tables: decoded by the native interpreter (``pickle_snap.c``) where it is
    built, else, or where it leaves the file to the reference, by the restricted unpickler.
    ``window`` = (start, end) on the tables' time axis (ns from the trace's start; steps without
    ``time_us``) keeps what lives in it (see `snapshot_tables.build`)."""
    columns = None
    if native.available():
        columns = _native_columns(source)
    if columns is None:
        columns = from_object(unpickle(source, source.name), source.name)
    return build(columns, source.name, FORMAT.name, window)


#: why the last native decode fell back to the pure-Python reader (None: it did not)
last_fallback: str | None = None


def _native_columns(source: Source) -> dict[str, Any] | None:
    """Columns from the native interpreter, None where it leaves the file to the Python reader
    (a rare opcode, a value of an unexpected type: the reference decides and words the error)."""
    global last_fallback
    from .._native.snapshot import Fallback, Refused, decode_snapshot

    def chunks() -> Any:
        for chunk in source.chunks(CHUNK):
            if source.consumed > MAX_SNAPSHOT:
                where = f"after {source.consumed:,} decompressed bytes"
                raise ProfviewError(f"the input expands to more than {MAX_SNAPSHOT:,} bytes",
                                    source=source.name, position=where,
                                    expected=f"at most {MAX_SNAPSHOT:,} bytes")
            yield chunk

    budget = pickle_object_budget(source.size)
    try:
        columns = decode_snapshot(native._lib(), chunks(), budget)
    except Refused as exc:
        msg = str(exc.args[0])
        what = f"corrupt pickle ({msg[9:]})" if msg.startswith("corrupt: ") else f"refused: {msg}"
        raise ProfviewError(what, source=source.name, position=f"byte {exc.args[1]}",
                            expected=EXPECTED) from None
    except MemoryError:
        raise ProfviewError("ran out of memory unpickling: a size in the pickle is larger than memory",
                            source=source.name, expected=EXPECTED) from None
    except Fallback as exc:
        last_fallback = str(exc)
        return None
    has = columns["e_has_time"]
    if has.any() and not has.all():  # some entries without time_us: the reference words the error
        last_fallback = "time_us on some entries only"
        return None
    last_fallback = None
    return columns


FORMAT = TraceFormat(
    name="torch_cuda_snapshot",
    description="PyTorch CUDA memory snapshot (torch.cuda.memory._dump_snapshot pickle, read without "
                "running pickle code): allocator trace, segments, allocated / reserved memory, "
                "allocations with stacks",
    sniff=sniff,
    load=load,
    load_window=load,
)
