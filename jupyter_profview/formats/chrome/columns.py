"""The columnar intermediate form of a Chrome Trace Event file.

Decoders (the pure-Python reference in `.chrome_decode` and the native
scanner in `jupyter_profview._native`) turn the raw JSON into this; the
Chrome format module turns this into a Trace.  One entry per record of the
``traceEvents`` array (or of the bare array), in file order.  Both decoders
must produce identical ChromeColumns for the same input (tests compare them).

Strings are dictionary-encoded: ``*_code`` arrays index into a ``list[str]``.
``pid``/``tid``/``id``/``bind_id`` keep the JSON *token text* of the value, so ``1`` and
``"1"`` stay distinguishable: an integer is its decimal text (``"1"``), a
string is its JSON-decoded text prefixed by ``"s:"`` (``"s:1"``), missing is -1.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..._native.keys import NUMERIC_ARGS as _NUMERIC_ARGS
from ..._native.keys import VALUE_ARGS as _VALUE_ARGS
from ..file_blob import FileBlob

ABSENT_TIME = np.iinfo(np.int64).min  # marker in ts_ns / dur_ns for "field absent"

# args keys whose top-level numeric values both decoders extract into float64 columns
# (SparseColumn: only the records where the value is a number): the scanner's list
NUMERIC_ARGS = _NUMERIC_ARGS
# args keys whose top-level values (any JSON) both decoders take out as codes into one table of
# distinct parsed values (SparseCodes)
VALUE_ARGS = _VALUE_ARGS
# a distinct value text the JSON parser refused (the scanner only validates): read such an
# event's args whole, as `ChromeColumns.args` does
UNPARSED = object()


@dataclass
class SparseColumn:
    """A float64 column of ``n`` rows stored only where a value is present:
    ``index`` (ascending row numbers) and ``values``; absent rows read as NaN.
    Most numeric args appear on few records, so this is far smaller than a
    dense column."""

    n: int
    index: np.ndarray   # int32 (int64 beyond 2**31 rows), ascending
    values: np.ndarray  # float64, never NaN

    @classmethod
    def from_dense(cls, dense: np.ndarray) -> SparseColumn:
        index = np.flatnonzero(~np.isnan(dense))
        return cls(len(dense), index.astype(_index_dtype(len(dense))), dense[index].astype(np.float64))

    @classmethod
    def from_lists(cls, n: int, index: list[int], values: list[float]) -> SparseColumn:
        return cls(n, np.asarray(index, _index_dtype(n)), np.asarray(values, np.float64))

    def dense(self) -> np.ndarray:
        out = np.full(self.n, np.nan)
        out[self.index] = self.values
        return out

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The values of ``rows`` (NaN where absent)."""
        rows = np.asarray(rows, np.int64)
        if len(rows) * 8 > self.n:  # many rows: a dense scratch column is cheaper than searching
            return self.dense()[rows]
        pos = np.minimum(np.searchsorted(self.index, rows), max(len(self.index) - 1, 0))
        hit = self.index[pos] == rows if len(self.index) else np.zeros(len(rows), bool)
        return np.where(hit, self.values[pos] if len(self.index) else np.nan, np.nan)


@dataclass
class SparseCodes:
    """A column of ``n`` rows of codes into a table of values, stored only where a
    value is present: ``index`` (ascending row numbers) and ``codes`` (int32)."""

    n: int
    index: np.ndarray  # int32 (int64 beyond 2**31 rows), ascending
    codes: np.ndarray  # int32, >= 0

    @classmethod
    def from_lists(cls, n: int, index: list[int], codes: list[int]) -> SparseCodes:
        return cls(n, np.asarray(index, _index_dtype(n)), np.asarray(codes, np.int32))

    def dense(self) -> np.ndarray:
        """Codes of every row (-1 where absent)."""
        out = np.full(self.n, -1, np.int32)
        out[self.index] = self.codes
        return out


def _index_dtype(n: int) -> type:
    return np.int32 if n < 2**31 else np.int64


ROW_ARRAYS = ("ph", "name_code", "cat_code", "pid_code", "tid_code", "id_code", "ts_ns", "dur_ns",
              "bp", "args_offset", "args_length", "bind_code", "flow_dir")

FLOW_IN, FLOW_OUT = 1, 2  # bits of ChromeColumns.flow_dir


class Interner:
    """String -> dense code, in order of first appearance (``values[code]``)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.values: list[str] = []

    def __call__(self, value: str) -> int:
        code = self.codes.get(value)
        if code is None:
            code = self.codes[value] = len(self.values)
            self.values.append(value)
        return code


@dataclass
class ChromeColumns:
    n: int
    ph: np.ndarray          # uint8: ASCII code of "ph" (0 if absent)
    name_code: np.ndarray   # int32 into names (-1 if absent)
    cat_code: np.ndarray    # int32 into cats (-1 if absent)
    pid_code: np.ndarray    # int32 into tokens (-1 if absent)
    tid_code: np.ndarray    # int32 into tokens (-1 if absent)
    id_code: np.ndarray     # int32 into tokens: "id" (or "id2" local/global text), -1 if absent
    ts_ns: np.ndarray       # int64: round(ts_us * 1000) (ties to even), ABSENT_TIME if absent
    dur_ns: np.ndarray      # int64: round(dur_us * 1000), ABSENT_TIME if absent
    bp: np.ndarray          # uint8: ASCII code of "bp" ("e" = enclosing) or of "s" scope, 0 if absent
    args_offset: np.ndarray  # int64 offset of the raw JSON text of "args" in args_blob (-1 absent)
    args_length: np.ndarray  # int32 length of that text
    bind_code: np.ndarray   # int32 into tokens: "bind_id" (flow events v2), -1 if absent
    flow_dir: np.ndarray    # uint8: FLOW_IN if "flow_in" is true, | FLOW_OUT if "flow_out" is true
    names: list[str]
    cats: list[str]
    tokens: list[str]
    args_blob: bytes | memoryview | FileBlob  # the raw "args" JSON texts (bytes-like, or in the file)
    numeric_args: dict[str, SparseColumn]  # NUMERIC_ARGS key -> its numeric values
    value_args: dict[str, SparseCodes] = field(default_factory=dict)  # VALUE_ARGS key -> codes
    arg_values: list[Any] = field(default_factory=list)  # code -> parsed value (or UNPARSED)
    top_level: dict[str, Any] = field(default_factory=dict)  # other top-level keys, parsed
    array_format: bool = False  # the file was a bare JSON array

    def select(self, rows: np.ndarray, arrays: Collection[str] | None = None,
               numeric: Collection[str] | None = None) -> ChromeColumns:
        """The columns of ``rows`` only (dictionaries, args blob and top level
        shared).  Only the per-record arrays named in ``arrays`` and the numeric
        args named in ``numeric`` are taken (default: all); the other arrays are
        left empty (as by `drop_rows`) and the other numeric args out, as are the value args
        (read through `ArgsRows`, from the whole columns)."""
        rows = np.asarray(rows, np.int64)
        taken = {name: getattr(self, name)[rows] if arrays is None or name in arrays
                 else getattr(self, name)[:0].copy() for name in ROW_ARRAYS}
        keep = {k: SparseColumn.from_dense(v.take(rows)) for k, v in self.numeric_args.items()
                if numeric is None or k in numeric}
        return replace(self, n=len(rows), **taken, numeric_args=keep, value_args={})

    def drop_rows(self) -> None:
        """Free the per-record arrays and numeric args (keeping ``n``, the
        dictionaries, the args blob and the top level): for a loader that has
        taken what it needs and wants the memory back."""
        for name in ROW_ARRAYS:
            setattr(self, name, getattr(self, name)[:0].copy())
        self.numeric_args = {k: SparseColumn(0, v.index[:0].copy(), v.values[:0].copy())
                             for k, v in self.numeric_args.items()}
        self.value_args = {k: SparseCodes(0, v.index[:0].copy(), v.codes[:0].copy())
                           for k, v in self.value_args.items()}

    def args(self, i: int) -> dict[str, Any]:
        """The parsed args of record ``i`` ({} where absent)."""
        return args_at(self.args_blob, int(self.args_offset[i]), int(self.args_length[i]))


def args_at(blob: bytes | memoryview | FileBlob, offset: int, length: int) -> dict[str, Any]:
    """The args JSON at ``blob[offset:offset + length]`` parsed ({} for offset -1)."""
    import orjson

    if offset < 0:
        return {}
    if isinstance(blob, FileBlob):
        value = orjson.loads(blob.read(offset, length))
    else:
        value = orjson.loads(memoryview(blob)[offset : offset + length])
    return value if isinstance(value, dict) else {"args": value}
