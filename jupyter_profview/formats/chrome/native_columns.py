"""The native Chrome scanner's results (``_native/chrome_scan.c``), through its C interface:
the columns it produces adopted as numpy arrays (no copy: each array owns the C buffer), its
dictionaries decoded, its error status turned into a
[ProfviewError][jupyter_profview.errors.ProfviewError].  Feeding the scanner is
[jupyter_profview.formats.chrome.native][]."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_int64, c_size_t, c_uint8
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._native import _COLUMNS, _ERR, _NOMEM, _OK, owned_array
from ...errors import ProfviewError
from ..file_blob import FileBlob

if TYPE_CHECKING:
    from ...sources import Source
    from .columns import ChromeColumns, SparseCodes, SparseColumn


_owned_array = owned_array


def _adopt(lib: ctypes.CDLL, scanner: int, column: int, dtype: Any, n: int) -> np.ndarray:
    """Result column ``column`` (``n`` rows) as an array owning the C buffer."""
    size = c_size_t()
    ptr = lib.pv_scan_detach(scanner, column, ctypes.byref(size))
    if size.value != (n * np.dtype(dtype).itemsize if ptr else 0) or (n and not ptr):
        if ptr:
            lib.pv_free(ptr)
        raise RuntimeError(f"native column {column}: {size.value} bytes for {n} rows")
    return _owned_array(lib, ptr, size.value, dtype)


def _detach_sparse(lib: ctypes.CDLL, scanner: int, detach: str, key: int, n: int, dtype: Any
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Rows (int64, ascending, below ``n``) and values of a sparse column the scanner collected
    (``detach``: ``pv_scan_detach_num`` or ``pv_scan_detach_val``)."""
    parts = []
    for rows, kind in ((1, np.int64), (0, dtype)):
        size = c_size_t()
        ptr = getattr(lib, detach)(scanner, key, rows, ctypes.byref(size))
        parts.append(_owned_array(lib, ptr, size.value, kind))
    index, values = parts
    if len(index) != len(values) or (len(index) and index[-1] >= n):
        raise RuntimeError(f"native {detach} {key}: {len(index)} rows, {len(values)} values")
    return index, values


def _sparse(lib: ctypes.CDLL, scanner: int, key: int, n: int) -> SparseColumn:
    """Numeric arg ``key`` (rows and values, collected sparse by the scanner)."""
    from .columns import SparseColumn, _index_dtype

    index, values = _detach_sparse(lib, scanner, "pv_scan_detach_num", key, n, np.float64)
    return SparseColumn(n, index.astype(_index_dtype(n)), values)


def _codes(lib: ctypes.CDLL, scanner: int, key: int, n: int, count: int) -> SparseCodes:
    """Value arg ``key`` (rows and codes into the value table of ``count`` entries)."""
    from .columns import SparseCodes, _index_dtype

    index, codes = _detach_sparse(lib, scanner, "pv_scan_detach_val", key, n, np.int32)
    if len(codes) and (codes.min() < 0 or codes.max() >= count):
        raise RuntimeError(f"native value arg {key}: codes outside the table of {count}")
    return SparseCodes(n, index.astype(_index_dtype(n)), codes)


def _values(lib: ctypes.CDLL, scanner: int) -> list[Any]:
    """The value table (dictionary 3: the raw JSON texts of the value args), parsed, in code
    order; `UNPARSED` for a text the JSON parser refuses (a number beyond its range)."""
    import orjson

    from .columns import UNPARSED

    arena_p = POINTER(c_uint8)()
    arena_len = c_size_t()
    offs_p = POINTER(c_int64)()
    lens_p = POINTER(ctypes.c_int32)()
    flags_p = POINTER(ctypes.c_uint32)()
    count = lib.pv_scan_dict(scanner, 3, ctypes.byref(arena_p), ctypes.byref(arena_len),
                             ctypes.byref(offs_p), ctypes.byref(lens_p), ctypes.byref(flags_p))
    if count <= 0:
        return []
    arena = memoryview(ctypes.string_at(arena_p, arena_len.value))
    offs = np.ctypeslib.as_array(offs_p, (count,)).tolist()
    lens = np.ctypeslib.as_array(lens_p, (count,)).tolist()
    texts = [arena[o : o + k] for o, k in zip(offs, lens, strict=True)]
    try:  # one parse of them all; the scanner has validated each as JSON
        return list(orjson.loads(b"[" + b",".join(texts) + b"]"))
    except orjson.JSONDecodeError:
        out: list[Any] = []
        for text in texts:
            try:
                out.append(orjson.loads(text))
            except orjson.JSONDecodeError:
                out.append(UNPARSED)
        return out


def _take_blob(lib: ctypes.CDLL, scanner: int, column: int) -> memoryview:
    """The args blob: the scanner's buffer itself, as a read-only bytes-like
    memoryview (no copy; the buffer is freed with the last view of it)."""
    size = c_size_t()
    ptr = lib.pv_scan_detach(scanner, column, ctypes.byref(size))
    blob = _owned_array(lib, ptr, size.value, np.uint8)
    blob.flags.writeable = False
    return blob.data  # a memoryview of the array


def _take_bytes(lib: ctypes.CDLL, scanner: int, column: int) -> bytes:
    size = c_size_t()
    ptr = lib.pv_scan_column(scanner, column, ctypes.byref(size))
    data = ctypes.string_at(ptr, size.value) if size.value else b""
    lib.pv_scan_release(scanner, column)
    return data


def _decode_json_string(raw: bytes) -> str:
    """The text of a JSON string body (between the quotes), escapes decoded."""
    import orjson

    value = orjson.loads(b'"' + raw + b'"')
    assert isinstance(value, str)
    return value


def _dictionary(lib: ctypes.CDLL, scanner: int, which: int) -> tuple[list[str], bool]:
    """The decoded entries of one dictionary, in code order, and whether any
    had escapes (else they are distinct: distinct raw bytes, decoded as is)."""
    arena_p = POINTER(c_uint8)()
    arena_len = c_size_t()
    offs_p = POINTER(c_int64)()
    lens_p = POINTER(ctypes.c_int32)()
    flags_p = POINTER(ctypes.c_uint32)()
    count = lib.pv_scan_dict(scanner, which, ctypes.byref(arena_p), ctypes.byref(arena_len),
                             ctypes.byref(offs_p), ctypes.byref(lens_p), ctypes.byref(flags_p))
    if count <= 0:
        return [], False
    arena = ctypes.string_at(arena_p, arena_len.value)
    offs_a = np.ctypeslib.as_array(offs_p, (count,))
    lens_a = np.ctypeslib.as_array(lens_p, (count,)).astype(np.int64)
    flags = np.ctypeslib.as_array(flags_p, (count,))
    plain = arena.isascii() and not (flags & 1).any()
    if plain and offs_a[0] == 0 and offs_a[-1] + lens_a[-1] == len(arena) \
            and np.array_equal(offs_a[1:], offs_a[:-1] + lens_a[:-1]):  # back to back, in code order
        # Raw JSON string bodies never hold a NUL byte: join the entries with
        # NULs (vectorised) and split once, rather than slicing each entry.
        joined = np.zeros(len(arena) + count, np.uint8)
        is_text = np.ones(len(joined), bool)
        is_text[np.cumsum(lens_a + 1) - 1] = False
        joined[is_text] = np.frombuffer(arena, np.uint8)
        parts = joined.tobytes().decode("ascii").split("\0")
        if len(parts) == count + 1:
            return parts[:count], False
    offs, lens = offs_a.tolist(), lens_a.tolist()
    if plain:
        text = arena.decode("ascii")  # byte offsets == character offsets
        return [text[o : o + n] for o, n in zip(offs, lens, strict=True)], False
    out: list[str] = []
    for o, n, f in zip(offs, lens, flags.tolist(), strict=True):
        raw = arena[o : o + n]
        if f & 1:
            prefix = f >> 8
            out.append(raw[:prefix].decode("utf-8") + _decode_json_string(raw[prefix:]))
        else:
            out.append(raw.decode("utf-8"))
    return out, bool((flags & 1).any())


def _dedupe(values: list[str], escaped: bool, *codes: np.ndarray) -> list[str]:
    """Merge entries that decode to the same text (e.g. "a" and "\\u0061"),
    keeping first-occurrence order, and remap ``codes`` in place.  Only
    entries with escapes (``escaped``) can make such duplicates."""
    if not escaped or len(set(values)) == len(values):
        return values
    first: dict[str, int] = {}
    remap = np.empty(len(values) + 1, np.int32)  # slot -1 (absent) maps to -1
    remap[-1] = -1
    for i, v in enumerate(values):
        remap[i] = first.setdefault(v, len(first))
    for c in codes:
        c[:] = remap[c]
    return list(first)


def _check_status(lib: ctypes.CDLL, scanner: int, status: int, source: Source) -> None:
    """Raise for a failed scan: ProfviewError (with the byte and record) for
    invalid input, MemoryError when the scanner ran out of memory."""
    if status == _NOMEM:
        raise MemoryError("out of memory in the native scanner")
    if status == _ERR:
        msg, expected = c_char_p(), c_char_p()
        offset = lib.pv_scan_error(scanner, ctypes.byref(msg), ctypes.byref(expected))
        record = lib.pv_scan_error_record(scanner)
        raise ProfviewError(
            (msg.value or b"invalid JSON").decode(),
            source=source.name,
            position=f"byte {offset}" + (f" (traceEvents[{record}])" if record >= 0 else ""),
            expected=(expected.value or b"").decode() or None,
        )
    if status != _OK:
        raise RuntimeError(f"native scanner returned status {status}")


def _columns(lib: ctypes.CDLL, scanner: int, file_blob: FileBlob | None = None) -> ChromeColumns:
    """The scanner's results as ChromeColumns (the arrays adopt its buffers;
    ``file_blob``: the args are in the file, read back through it)."""
    from .columns import NUMERIC_ARGS, VALUE_ARGS, ChromeColumns

    n = int(lib.pv_scan_count(scanner))
    numeric = {key: _sparse(lib, scanner, k, n) for k, key in enumerate(NUMERIC_ARGS)}
    arg_values = _values(lib, scanner)
    value_args = {key: _codes(lib, scanner, k, n, len(arg_values)) for k, key in enumerate(VALUE_ARGS)}
    cols = {name: _adopt(lib, scanner, i, dtype, n) for i, (name, dtype) in enumerate(_COLUMNS)}
    blob_id = int(lib.pv_col_blob())
    args_blob: bytes | memoryview | FileBlob = _take_blob(lib, scanner, blob_id)
    if file_blob is not None:
        args_blob = file_blob
    top_level = _top_level(_copy_top_index(lib, scanner, blob_id + 1), _take_bytes(lib, scanner, blob_id + 2))
    names = _dedupe(*_dictionary(lib, scanner, 0), cols["name_code"])
    cats = _dedupe(*_dictionary(lib, scanner, 1), cols["cat_code"])
    tokens = _dedupe(*_dictionary(lib, scanner, 2), cols["pid_code"], cols["tid_code"], cols["id_code"],
                     cols["bind_code"])
    return ChromeColumns(n=n, **cols, names=names, cats=cats, tokens=tokens, args_blob=args_blob,
                         numeric_args=numeric, value_args=value_args, arg_values=arg_values,
                         top_level=top_level,
                         array_format=bool(lib.pv_scan_array_format(scanner)))


def _top_level(index: np.ndarray, arena: bytes) -> dict[str, Any]:
    """The top-level members other than ``traceEvents``, parsed, from the
    scanner's (key offset, key length, value offset, value length) rows."""
    import orjson

    top_level: dict[str, Any] = {}
    for key_off, key_len, val_off, val_len in index.tolist():
        key = arena[key_off : key_off + key_len]  # with its quotes
        text = key[1:-1].decode("utf-8") if b"\\" not in key else orjson.loads(key)
        top_level[text] = orjson.loads(arena[val_off : val_off + val_len])
    return top_level


def _copy_top_index(lib: ctypes.CDLL, scanner: int, column: int) -> np.ndarray:
    size = c_size_t()
    ptr = lib.pv_scan_column(scanner, column, ctypes.byref(size))
    out = np.empty((size.value // 32, 4), np.int64)
    if size.value:
        ctypes.memmove(out.ctypes.data, ptr, size.value)
    lib.pv_scan_release(scanner, column)
    return out
