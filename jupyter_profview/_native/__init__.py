"""Optional native (C, loaded with ctypes) fast paths.

The pure-Python implementations are the reference; the native ones must give
identical results (tests compare them).  ``available()`` is False where the
shared library was not built (no C compiler at install time) or when the
environment variable ``PROFVIEW_NATIVE=0`` asks for the pure-Python paths.

* :func:`decode_chrome` -- streaming Chrome-trace scanner (``chrome_scan.c``)
  producing :class:`~jupyter_profview.formats.chrome.columns.ChromeColumns`.
* :func:`nest` -- :func:`jupyter_profview.builder.nest_python` (``nest.c``).
"""

from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, c_char_p, c_int, c_int64, c_size_t, c_uint8, c_void_p
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

LIBRARY = Path(__file__).with_name("_profview_native.so")
CHUNK_SIZE = 8 * 1024 * 1024  # decompressed bytes fed to the scanner at a time

# status codes of chrome_scan.c
_OK, _MORE, _ERR, _UNSUP, _NOMEM = range(5)

# column ids of chrome_scan.c, in order, with their numpy dtypes
_COLUMNS: tuple[tuple[str, Any], ...] = (
    ("ph", np.uint8), ("name_code", np.int32), ("cat_code", np.int32), ("pid_code", np.int32),
    ("tid_code", np.int32), ("id_code", np.int32), ("ts_ns", np.int64), ("dur_ns", np.int64),
    ("bp", np.uint8), ("args_offset", np.int64), ("args_length", np.int32),
)


def _disabled() -> bool:
    return os.environ.get("PROFVIEW_NATIVE", "1").strip().lower() in ("0", "false", "no", "off")


@lru_cache(maxsize=1)
def _load() -> ctypes.CDLL | None:
    if not LIBRARY.exists():
        return None
    try:
        lib = ctypes.CDLL(str(LIBRARY))
    except OSError:
        return None
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
    lib.pv_nest.restype = c_int
    lib.pv_nest.argtypes = [c_int64, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p]

    from ..formats.chrome.columns import NUMERIC_ARGS

    keys = tuple(lib.pv_num_key(i).decode() for i in range(lib.pv_num_keys()))
    if keys != tuple(NUMERIC_ARGS):  # stale library built from other sources
        return None
    return lib


def available() -> bool:
    """Whether the native library is built, loadable and not disabled."""
    return not _disabled() and _load() is not None


def _lib() -> ctypes.CDLL:
    lib = _load()
    if lib is None:
        raise RuntimeError("the native library is not available")
    return lib


# -- nest ---------------------------------------------------------------------


def nest(track: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`jupyter_profview.builder.nest_python` in C (same inputs and outputs)."""
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
