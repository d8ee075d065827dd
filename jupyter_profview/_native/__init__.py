"""Optional native (C, loaded with ctypes) fast paths.

The pure-Python implementations are the reference; the native ones must give
identical results (tests compare them).  ``available()`` is False where the
shared library was not built (no C compiler at install time), when it is
refused (built from other sources: its ``pv_abi_version()`` is not
`ABI_VERSION`, or its numeric- or value-arg keys differ; such a library is never
used) or when the environment variable ``PROFVIEW_NATIVE=0`` asks for the
pure-Python paths.  `status` says which and why;
`warn_if_unavailable` warns once per process (``NativeUnavailableWarning``)
with how to get the native scanner.

* `decode_chrome` -- streaming Chrome-trace scanner (``chrome_scan.c``)
  producing `ChromeColumns`.
* `nest` -- `jupyter_profview.nesting.nest_python` (``nest.c``).
* `owned_time` -- `jupyter_profview.nesting.owned_time_python` (``nest.c``).
* `python_yields` -- `jupyter_profview.nesting.python_yields_until_python` (``nest.c``).
* `owned_segments` -- `jupyter_profview.nesting.owned_segments_python` (``nest.c``).
* `xplane_lines` -- the per-event loop of ``formats.xspace_build.Builder`` (``xplane.c``).
"""

from __future__ import annotations

import ctypes
import os
import weakref
from ctypes import POINTER, c_char_p, c_int, c_int64, c_size_t, c_uint8, c_void_p
from functools import lru_cache
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

from ..errors import NativeUnavailableWarning

__all__ = ["ABI_VERSION", "NativeUnavailableWarning", "available", "nest", "nested_self", "owned_array",
           "owned_segments", "owned_time", "perfetto_rematch", "python_yields", "status",
           "warn_if_unavailable", "xplane_lines"]

LIBRARY = Path(__file__).with_name("_profview_native.so")
ABI_VERSION = 12  # PV_ABI_VERSION in scan_internal.h
HOW_TO_BUILD = (
    "install a C compiler (e.g. `apt install gcc` or Xcode command line tools) and reinstall "
    "with `pip install --force-reinstall --no-binary jupyter_profview jupyter_profview`, or in a "
    "source checkout run `python hatch_build.py`"
)
CHUNK_SIZE = 8 * 1024 * 1024  # decompressed bytes fed to the scanner at a time

# status codes of chrome_scan.c
_OK, _MORE, _ERR, _UNSUP, _NOMEM = range(5)

# column ids of chrome_scan.c, in order, with their numpy dtypes
_COLUMNS: tuple[tuple[str, Any], ...] = (
    ("ph", np.uint8), ("name_code", np.int32), ("cat_code", np.int32), ("pid_code", np.int32),
    ("tid_code", np.int32), ("id_code", np.int32), ("ts_ns", np.int64), ("dur_ns", np.int64),
    ("bp", np.uint8), ("args_offset", np.int64), ("args_length", np.int32),
    ("bind_code", np.int32), ("flow_dir", np.uint8),
)


def _disabled() -> bool:
    return os.environ.get("PROFVIEW_NATIVE", "1").strip().lower() in ("0", "false", "no", "off")


_refusal: str | None = None  # why _load() returned None


@lru_cache(maxsize=1)
def _load() -> ctypes.CDLL | None:
    global _refusal
    lib, _refusal = _open(LIBRARY)
    return lib


def _open(path: Path) -> tuple[ctypes.CDLL | None, str | None]:
    """(library, None) or (None, why it is not used).  The ABI version is
    checked before any other symbol is touched: a stale or foreign library
    is refused, never called."""
    if not path.exists():
        return None, f"{path.name} is not built (no C compiler when the package was installed?)"
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as exc:
        return None, f"{path} cannot be loaded ({exc})"
    try:
        version_fn = lib.pv_abi_version
    except AttributeError:
        return None, f"{path} is stale or foreign: it has no pv_abi_version()"
    version_fn.restype = c_int
    version_fn.argtypes = []
    version = version_fn()
    if version != ABI_VERSION:
        return None, f"{path} has ABI version {version}, this package needs {ABI_VERSION} (stale build)"
    try:
        _declare(lib)
    except AttributeError as exc:
        return None, f"{path} lacks a function ({exc})"

    from .keys import NUMERIC_ARGS, VALUE_ARGS

    keys = tuple(lib.pv_num_key(i).decode() for i in range(lib.pv_num_keys()))
    values = tuple(lib.pv_val_key(i).decode() for i in range(lib.pv_val_keys()))
    if keys != tuple(NUMERIC_ARGS) or values != tuple(VALUE_ARGS):
        return None, f"{path} was built from other sources (numeric or value arg keys differ)"
    return lib, None


def _declare(lib: ctypes.CDLL) -> None:
    u8p, i64p = POINTER(c_uint8), POINTER(c_int64)
    lib.pv_scan_new.restype = c_void_p
    lib.pv_scan_new.argtypes = []
    lib.pv_scan_free.restype = None
    lib.pv_scan_free.argtypes = [c_void_p]
    lib.pv_scan_feed.restype = c_int
    lib.pv_scan_feed.argtypes = [c_void_p, c_void_p, c_size_t]
    lib.pv_scan_finish.restype = c_int
    lib.pv_scan_finish.argtypes = [c_void_p]
    lib.pv_scan_count.restype = c_int64
    lib.pv_scan_count.argtypes = [c_void_p]
    lib.pv_scan_array_format.restype = c_int
    lib.pv_scan_array_format.argtypes = [c_void_p]
    lib.pv_scan_error.restype = c_int64
    lib.pv_scan_error.argtypes = [c_void_p, POINTER(c_char_p), POINTER(c_char_p)]
    lib.pv_scan_error_record.restype = c_int64
    lib.pv_scan_error_record.argtypes = [c_void_p]
    lib.pv_scan_unsupported.restype = c_char_p
    lib.pv_scan_unsupported.argtypes = [c_void_p]
    lib.pv_scan_column.restype = c_void_p
    lib.pv_scan_column.argtypes = [c_void_p, c_int, POINTER(c_size_t)]
    lib.pv_scan_release.restype = None
    lib.pv_scan_release.argtypes = [c_void_p, c_int]
    lib.pv_scan_detach.restype = c_void_p
    lib.pv_scan_detach.argtypes = [c_void_p, c_int, POINTER(c_size_t)]
    lib.pv_free.restype = None
    lib.pv_free.argtypes = [c_void_p]
    lib.pv_scan_dict.restype = c_int64
    lib.pv_scan_dict.argtypes = [
        c_void_p, c_int, POINTER(u8p), POINTER(c_size_t), POINTER(i64p),
        POINTER(POINTER(ctypes.c_int32)), POINTER(POINTER(ctypes.c_uint32)),
    ]
    lib.pv_num_keys.restype = c_int
    lib.pv_num_keys.argtypes = []
    lib.pv_num_key.restype = c_char_p
    lib.pv_num_key.argtypes = [c_int]
    lib.pv_col_blob.restype = c_int
    lib.pv_col_blob.argtypes = []
    lib.pv_scan_detach_num.restype = c_void_p
    lib.pv_scan_detach_num.argtypes = [c_void_p, c_int, c_int, POINTER(c_size_t)]
    lib.pv_val_keys.restype = c_int
    lib.pv_val_keys.argtypes = []
    lib.pv_val_key.restype = c_char_p
    lib.pv_val_key.argtypes = [c_int]
    lib.pv_scan_detach_val.restype = c_void_p
    lib.pv_scan_detach_val.argtypes = [c_void_p, c_int, c_int, POINTER(c_size_t)]
    lib.pv_nest.restype = c_int
    lib.pv_nest.argtypes = [c_int64, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]
    lib.pv_xplane_count.restype = c_int
    lib.pv_xplane_count.argtypes = [c_void_p, c_int64, c_void_p]
    lib.pv_xplane_decode.restype = c_int
    lib.pv_xplane_decode.argtypes = [c_void_p, c_int64, *[c_void_p] * 19]
    lib.pv_scan_resume.restype = None
    lib.pv_scan_resume.argtypes = [c_void_p, c_int64, c_int]
    lib.pv_scan_at_element.restype = c_int
    lib.pv_scan_at_element.argtypes = [c_void_p, c_int64]
    lib.pv_scan_append.restype = c_int
    lib.pv_scan_append.argtypes = [c_void_p, c_void_p]
    lib.pv_scan_file_args.restype = None
    lib.pv_scan_file_args.argtypes = [c_void_p, c_int]
    lib.pv_owned.restype = c_int
    lib.pv_nested_self.restype = c_int
    lib.pv_nested_self.argtypes = [c_int64, c_void_p, c_void_p, c_void_p, c_void_p]
    lib.pv_owned.argtypes = [c_int64, c_void_p, c_void_p, c_void_p, c_void_p]
    lib.pv_python_yields.restype = c_int
    lib.pv_python_yields.argtypes = [c_int64, *[c_void_p] * 6]
    lib.pv_owned_segments.restype = c_int64
    lib.pv_owned_segments.argtypes = [c_int64, *[c_void_p] * 8]
    _declare_perfetto(lib)


def _declare_perfetto(lib: ctypes.CDLL) -> None:
    """The Perfetto walker (``perfetto_scan.c``; used by ``formats.perfetto.native``)."""
    lib.pv_pf_new.restype = c_void_p
    lib.pv_pf_new.argtypes = []
    lib.pv_pf_free.restype = None
    lib.pv_pf_free.argtypes = [c_void_p]
    lib.pv_pf_walk.restype = c_int
    lib.pv_pf_walk.argtypes = [c_void_p, c_void_p, c_int64, c_size_t, c_size_t, POINTER(c_int64), c_void_p,
                               c_size_t]
    lib.pv_pf_file_args.restype = None
    lib.pv_pf_file_args.argtypes = [c_void_p, c_int]
    lib.pv_pf_inner.restype = c_int
    lib.pv_pf_inner.argtypes = [c_void_p, c_void_p, c_size_t]
    lib.pv_pf_unsupported.restype = c_char_p
    lib.pv_pf_unsupported.argtypes = [c_void_p]
    lib.pv_pf_quality.restype = None
    lib.pv_pf_quality.argtypes = [c_void_p, c_void_p]
    lib.pv_pf_ntracks.restype = c_int
    lib.pv_pf_ntracks.argtypes = [c_void_p]
    lib.pv_pf_tracks.restype = None
    lib.pv_pf_tracks.argtypes = [c_void_p, c_void_p]
    lib.pv_pf_dict.restype = c_int64
    lib.pv_pf_dict.argtypes = [c_void_p, c_int, POINTER(c_void_p), POINTER(c_size_t), POINTER(c_void_p),
                               POINTER(c_void_p)]
    lib.pv_pf_rematch_tracks.restype = c_int64
    lib.pv_pf_rematch_tracks.argtypes = [c_int64, *[c_void_p] * 4, c_int64, *[c_void_p] * 3, c_int64,
                                         c_void_p, c_void_p]
    lib.pv_pf_detach.restype = c_void_p
    lib.pv_pf_detach.argtypes = [c_void_p, c_int, POINTER(c_size_t)]


def owned_array(lib: ctypes.CDLL, ptr: int | None, nbytes: int, dtype: Any) -> np.ndarray:
    """A C buffer handed over by the library (``pv_scan_detach*``, ``pv_pf_detach``) as a numpy
    array without copying it: the array owns the buffer (freed by ``pv_free`` when the array is
    garbage collected).  Copying would touch as much fresh memory again (page faults are most
    of the cost of filling columns) and briefly hold every column twice."""
    if not ptr:
        return np.empty(0, dtype)
    raw = (ctypes.c_char * nbytes).from_address(ptr)
    owner = weakref.finalize(raw, lib.pv_free, ptr)
    owner.atexit = False  # at exit arrays may outlive finalizers: let the OS reclaim
    return np.frombuffer(raw, dtype, count=nbytes // np.dtype(dtype).itemsize)  # type: ignore[call-overload]


def available() -> bool:
    """Whether the native library is built, loadable and not disabled."""
    return not _disabled() and _load() is not None


def status() -> tuple[str, str]:
    """(decoder, why): ``("native", ...)`` or ``("python", reason)``."""
    if _disabled():
        return "python", "disabled by PROFVIEW_NATIVE=0"
    if _load() is None:
        return "python", _refusal or "native library unavailable"
    return "native", f"{LIBRARY} (ABI {ABI_VERSION})"


_warned = False


def warn_if_unavailable() -> None:
    """Warn once per process when the native scanner is missing or refused
    (not when PROFVIEW_NATIVE=0 asked for the pure-Python path)."""
    global _warned
    if _warned or _disabled() or _load() is not None:
        return
    _warned = True
    import warnings

    warnings.warn(
        f"jupyter_profview: the native scanner is not used ({_refusal}); traces load on the "
        f"pure-Python path, same results but much slower. To get it: {HOW_TO_BUILD}.",
        NativeUnavailableWarning, stacklevel=_caller_level(),
    )


def _caller_level() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside this package."""
    import sys

    package = str(Path(__file__).resolve().parents[1])
    frame: FrameType | None = sys._getframe(1)  # warn_if_unavailable: level 1
    level = 1
    while frame is not None and str(Path(frame.f_code.co_filename).resolve()).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _lib() -> ctypes.CDLL:
    lib = _load()
    if lib is None:
        raise RuntimeError("the native library is not available")
    return lib


# -- nest ---------------------------------------------------------------------


def nest(track: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`jupyter_profview.nesting.nest_python` in C (same inputs and outputs)."""
    lib = _lib()
    track = np.ascontiguousarray(track, dtype=np.int64)
    start = np.ascontiguousarray(start, dtype=np.int64)
    end = np.ascontiguousarray(end, dtype=np.int64)
    n = len(start)
    if len(track) != n or len(end) != n:
        raise ValueError("track, start and end must have the same length")
    depth = np.zeros(n, np.int32)
    parent = np.full(n, -1, np.int64)
    lane = np.zeros(n, np.int32)
    if n and lib.pv_nest(n, track.ctypes.data, start.ctypes.data, end.ctypes.data,
                         depth.ctypes.data, parent.ctypes.data, lane.ctypes.data) != 0:
        raise MemoryError("out of memory in native nest")
    return depth, parent, lane


def owned_time(track: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """`jupyter_profview.nesting.owned_time_python` in C (same inputs and output)."""
    lib = _lib()
    track, start, end = (np.ascontiguousarray(a, dtype=np.int64) for a in (track, start, end))
    n = len(start)
    if not len(track) == len(end) == n:
        raise ValueError("track, start and end must have the same length")
    out = np.zeros(n, np.int64)
    if n and lib.pv_owned(n, track.ctypes.data, start.ctypes.data, end.ctypes.data, out.ctypes.data) != 0:
        raise MemoryError("out of memory in native owned_time")
    return out


def nested_self(start: np.ndarray, end: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """`jupyter_profview.nesting.nested_self_python` in C (same inputs and output, no
    temporaries)."""
    lib = _lib()
    start, end, parent = (np.ascontiguousarray(a, dtype=np.int64) for a in (start, end, parent))
    n = len(start)
    if not len(end) == len(parent) == n:
        raise ValueError("start, end and parent must have the same length")
    out = np.empty(n, np.int64)
    pointers = (a.ctypes.data for a in (start, end, parent, out))
    if n and lib.pv_nested_self(n, *pointers) != 0:
        raise ValueError("a parent out of range")
    return out


def python_yields(track: np.ndarray, start: np.ndarray, end: np.ndarray, parent: np.ndarray,
                  python: np.ndarray) -> np.ndarray:
    """`jupyter_profview.nesting.python_yields_until_python` in C (same inputs and output)."""
    lib = _lib()
    track, start, end, parent = (np.ascontiguousarray(a, dtype=np.int64) for a in (track, start, end, parent))
    flags = np.ascontiguousarray(python, dtype=np.uint8)
    n = len(start)
    if not len(track) == len(end) == len(parent) == len(flags) == n:
        raise ValueError("track, start, end, parent and python must have the same length")
    out = np.zeros(n, np.int64)
    if n and lib.pv_python_yields(n, track.ctypes.data, start.ctypes.data, end.ctypes.data,
                                  parent.ctypes.data, flags.ctypes.data, out.ctypes.data) != 0:
        raise MemoryError("out of memory in native python_yields")
    return out


def owned_segments(track: np.ndarray, start: np.ndarray, end: np.ndarray, python: np.ndarray | None,
                   until: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`jupyter_profview.nesting.owned_segments_python` in C (same inputs and outputs)."""
    lib = _lib()
    track, start, end = (np.ascontiguousarray(a, dtype=np.int64) for a in (track, start, end))
    n = len(start)
    if not len(track) == len(end) == n:
        raise ValueError("track, start and end must have the same length")
    flags = None if python is None or until is None else np.ascontiguousarray(python, dtype=np.uint8)
    limits = None if flags is None else np.ascontiguousarray(until, dtype=np.int64)
    size = 3 * n + 1
    owner, lo, hi = np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.int64)
    m = lib.pv_owned_segments(n, track.ctypes.data, start.ctypes.data, end.ctypes.data,
                              None if flags is None else flags.ctypes.data,
                              None if limits is None else limits.ctypes.data,
                              owner.ctypes.data, lo.ctypes.data, hi.ctypes.data) if n else 0
    if m < 0:
        raise MemoryError("out of memory in native owned_segments")
    return owner[:m].copy(), lo[:m].copy(), hi[:m].copy()


def perfetto_rematch(rows: tuple[np.ndarray, ...], ends: tuple[np.ndarray, ...], ntracks: int,
                     closed_by: np.ndarray) -> tuple[np.ndarray, int]:
    """`jupyter_profview.formats.perfetto.tables.rematch_out_of_order`'s matching in C
    (``perfetto_match.c``): ``rows`` (track, place in the file, start time, stacked: 1 for a
    begin) per walk row and ``ends`` (track, place, time), each in file order.  Returns the
    flags of the tracks out of time order and the ends left unmatched on them; ``closed_by``
    (one per walk row) is updated in place."""
    lib = _lib()
    bt, bo, bw, st = (np.ascontiguousarray(a, dtype=d) for a, d in zip(rows, (np.int32, np.int32, np.int64,
                                                                               np.int8), strict=True))
    et, eo, ew = (np.ascontiguousarray(a, dtype=d) for a, d in zip(ends, (np.int32, np.int32, np.int64),
                                                                    strict=True))
    if not len(bt) == len(bo) == len(bw) == len(st) == len(closed_by) or not len(et) == len(eo) == len(ew):
        raise ValueError("the row columns, closed_by and the end columns must have their lengths")
    if closed_by.dtype != np.int32 or not closed_by.flags.c_contiguous or not closed_by.flags.writeable:
        raise ValueError("closed_by must be a writable contiguous int32 array")
    for track in (bt, et):
        if len(track) and (track.min() < 0 or track.max() >= ntracks):
            raise ValueError("track codes must be in [0, ntracks)")
    bad = np.zeros(max(ntracks, 1), np.uint8)
    got = lib.pv_pf_rematch_tracks(len(bt), bt.ctypes.data, bo.ctypes.data, bw.ctypes.data, st.ctypes.data,
                                   len(et), et.ctypes.data, eo.ctypes.data, ew.ctypes.data, ntracks,
                                   bad.ctypes.data, closed_by.ctypes.data)
    if got < 0:
        raise MemoryError("out of memory in native perfetto_rematch")
    return bad[:ntracks].astype(bool), int(got)


# -- XPlane lines ---------------------------------------------------------------

XPLANE_LINE = ("line_id", "line_display_id", "line_ts", "line_name_off", "line_name_len", "line_dname_off",
               "line_dname_len", "line_first")
XPLANE_EVENT = ("ev_meta", "ev_off", "ev_dur", "ev_agg", "ev_first_stat")
XPLANE_STAT = ("st_meta", "st_val", "st_len", "st_kind")
_XPLANE_DTYPES = {"line_name_len": np.int32, "line_dname_len": np.int32, "ev_agg": np.uint8,
                  "st_len": np.int32, "st_kind": np.uint8}


def xplane_lines(data: bytes | bytearray) -> dict[str, Any] | None:
    """The lines of one serialized XPlane as columns (``xplane.c``), plus
    ``rest``: the plane's other fields, serialized; None where the decoder
    leaves the plane to protobuf (anything malformed or off the schema)."""
    lib = _lib()
    buf = np.frombuffer(data, np.uint8)
    n = len(buf)
    counts = np.zeros(3, np.int64)
    if lib.pv_xplane_count(buf.ctypes.data, n, counts.ctypes.data) != 0:
        return None
    lines, events, stats = counts.tolist()
    out: dict[str, Any] = {}
    for names, size in ((XPLANE_LINE, lines), (XPLANE_EVENT, events), (XPLANE_STAT, stats)):
        for name in names:
            out[name] = np.zeros(size, _XPLANE_DTYPES.get(name, np.int64))
    rest = np.zeros(max(n, 1), np.uint8)
    rest_len = np.zeros(1, np.int64)
    args = [out[k].ctypes.data for k in (*XPLANE_LINE[:3], "line_name_off", "line_name_len", "line_dname_off",
                                         "line_dname_len", "line_first", "ev_meta", "ev_off", "ev_dur",
                                         "ev_agg", "ev_first_stat", *XPLANE_STAT)]
    if lib.pv_xplane_decode(buf.ctypes.data, n, *args, rest.ctypes.data, rest_len.ctypes.data) != 0:
        return None
    out["rest"] = rest[: int(rest_len[0])].tobytes()
    out["lines"], out["events"], out["stats"] = lines, events, stats
    return out
