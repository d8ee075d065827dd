"""ctypes side of ``pickle_snap.c``: a CUDA memory snapshot pickle decoded into columns by the
restricted opcode interpreter (see that file and ``formats/torch_snapshot.py``, the reference)."""

from __future__ import annotations

import ctypes
from collections.abc import Iterable
from ctypes import POINTER, c_char_p, c_int, c_int64, c_size_t, c_uint64, c_void_p
from typing import Any

import numpy as np

OK, MORE, ERR, FALLBACK, NOMEM = range(5)

#: column ids of the native reader (pickle_internal.h), in order
COLUMNS = ("e_dev", "e_action", "e_size", "e_addr", "e_addr_null", "e_stream", "e_time", "e_has_time",
           "e_stack", "e_dfree", "e_dfree_null", "s_dev", "s_addr", "s_total", "s_nblocks", "b_size",
           "b_addr", "b_state", "b_stack", "k_off", "k_frame", "f_name", "f_file", "f_line", "str_off")


class Refused(Exception):
    """The interpreter refused the pickle (``args``: message, byte position)."""


class Fallback(Exception):
    """The interpreter leaves this pickle to the pure-Python reader (``args``: why)."""


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    if getattr(lib, "_pk_declared", False):
        return lib
    lib.pv_pk_new.restype = c_void_p
    lib.pv_pk_new.argtypes = [c_int64]
    lib.pv_pk_free.restype = None
    lib.pv_pk_free.argtypes = [c_void_p]
    lib.pv_pk_feed.restype = c_int
    lib.pv_pk_feed.argtypes = [c_void_p, c_void_p, c_size_t]
    lib.pv_pk_finish.restype = c_int
    lib.pv_pk_finish.argtypes = [c_void_p]
    lib.pv_pk_ncols.restype = c_int
    lib.pv_pk_ncols.argtypes = []
    lib.pv_pk_column.restype = c_void_p
    lib.pv_pk_column.argtypes = [c_void_p, c_int, POINTER(c_size_t)]
    lib.pv_pk_col_width.restype = c_int
    lib.pv_pk_col_width.argtypes = [c_int]
    lib.pv_pk_drop.restype = None
    lib.pv_pk_drop.argtypes = [c_void_p, c_int]
    lib.pv_pk_blob.restype = c_void_p
    lib.pv_pk_blob.argtypes = [c_void_p, POINTER(c_size_t)]
    lib.pv_pk_error.restype = c_char_p
    lib.pv_pk_error.argtypes = [c_void_p, POINTER(c_uint64)]
    if lib.pv_pk_ncols() != len(COLUMNS):
        raise AttributeError("pickle_snap.c has other columns")
    lib._pk_declared = True  # type: ignore[attr-defined]
    return lib


def decode_snapshot(lib: ctypes.CDLL, chunks: Iterable[Any], budget: int) -> dict[str, Any]:
    """Columns (integer arrays: int8 / int32 / int64 as ``pv_pk_col_width`` says, and ``strings``:
    the interned strings) of a snapshot pickle fed as ``chunks`` (bytes-like); raises `Refused` or
    `Fallback`.  Each column is copied out and then dropped in C, so at most one exists twice."""
    _declare(lib)
    h = lib.pv_pk_new(budget)
    if not h:
        raise MemoryError
    try:
        status = MORE
        for chunk in chunks:
            view = np.frombuffer(chunk, np.uint8)
            status = lib.pv_pk_feed(h, view.ctypes.data, len(view))
            if status != MORE:
                break
        if status in (OK, MORE):
            status = lib.pv_pk_finish(h)
        if status != OK:
            pos = c_uint64()
            msg = lib.pv_pk_error(h, ctypes.byref(pos)).decode()
            if status == FALLBACK:
                raise Fallback(msg)
            if status == NOMEM:
                raise MemoryError
            raise Refused(msg, pos.value)
        out: dict[str, Any] = {}
        n = c_size_t()
        for c, name in enumerate(COLUMNS):
            dtype = np.dtype(f"i{lib.pv_pk_col_width(c)}")
            ptr = lib.pv_pk_column(h, c, ctypes.byref(n))
            nbytes = n.value * dtype.itemsize
            raw = memoryview((ctypes.c_char * nbytes).from_address(ptr)) if nbytes else b""
            out[name] = np.frombuffer(raw, dtype).copy()
            if name != "str_off":
                lib.pv_pk_drop(h, c)
        ptr = lib.pv_pk_blob(h, ctypes.byref(n))
        blob = ctypes.string_at(ptr, n.value) if n.value else b""
        off = out.pop("str_off").tolist()
        out["strings"] = [blob[a:b].decode("utf-8", "surrogatepass")
                          for a, b in zip(off[:-1], off[1:], strict=True)]
        return out
    finally:
        lib.pv_pk_free(h)
