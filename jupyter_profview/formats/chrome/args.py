"""Chrome traces: ``trace.args(id)``, reading each event's args from the
args blob of the decoded columns (merging a matching end record's args)."""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import orjson

from ..._native.keys import LOOKUP_NUMERIC
from ..file_blob import FileBlob, segments
from .columns import UNPARSED, ChromeColumns, _index_dtype, args_at


class ArgsRows:
    """Where the args of each events input row are in the args blob (taken
    before the columns are dropped); the last ``loop`` rows may have the
    record of a matching end (``end_rec`` >= 0) whose args are merged.  The
    numeric args of `LOOKUP_NUMERIC` and the value args (`VALUE_ARGS`) the
    decoder took out are kept as they are (sparse, by record: no copy while
    the tables are built) and turned into columns by event id by `lookup`."""

    def __init__(self, c: ChromeColumns, rec: np.ndarray, loop: int, end_rec: np.ndarray) -> None:
        self.blob = c.args_blob
        self.offset = c.args_offset[rec]
        self.length = c.args_length[rec]
        has_end = np.flatnonzero(end_rec >= 0)
        self.end_rows = len(rec) - loop + has_end
        self.end_offset = c.args_offset[end_rec[has_end]]
        self.end_length = c.args_length[end_rec[has_end]]
        self.records, self.rec = c.n, rec
        self.numeric = {k: (c.numeric_args[k].index, c.numeric_args[k].values)
                        for k in LOOKUP_NUMERIC if k in c.numeric_args}
        self.value = {k: (v.index, v.codes) for k, v in c.value_args.items()}
        self.arg_values = c.arg_values

    def lookup(self, raw_index: np.ndarray) -> _ArgsLookup:
        """The lookup by event id, given the input row of each event id."""
        event_of_row = np.empty(len(raw_index), np.int64)
        event_of_row[raw_index] = np.arange(len(raw_index))
        end_ids = event_of_row[self.end_rows]
        order = np.argsort(end_ids)
        # record -> event id (-1: not an event), narrow where the ids allow
        event_of_rec: np.ndarray = np.full(self.records, -1, _index_dtype(len(raw_index)))
        event_of_rec[self.rec] = event_of_row
        del event_of_row
        numeric = {k: _by_event(event_of_rec, *v) for k, v in self.numeric.items()}
        value = {k: _by_event(event_of_rec, *v) for k, v in self.value.items()}
        return _ArgsLookup(self.blob, self.offset[raw_index], self.length[raw_index],
                           end_ids[order], self.end_offset[order], self.end_length[order],
                           numeric=numeric, value=value, arg_values=self.arg_values)


def _by_event(event_of_rec: np.ndarray, index: np.ndarray, values: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """A sparse column by record (``index`` ascending, ``values``) as (event ids, values) of the
    records that are events, sorted by event id."""
    ids = event_of_rec[index]
    kept = np.flatnonzero(ids >= 0)
    ids = ids[kept]
    order = np.argsort(ids, kind="stable")
    return ids[order], values[kept[order]]


_ABSENT = object()


class _ArgsLookup:
    """``trace.args(id)``: the record's args, with a matching end's merged in.
    Keeps only the args blob and each event's slice of it (not the columns),
    and the numeric and value args the decoder took out, by event id."""

    def __init__(self, blob: bytes | memoryview | FileBlob, offset: np.ndarray, length: np.ndarray,
                 end_ids: np.ndarray, end_offset: np.ndarray, end_length: np.ndarray,
                 numeric: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
                 value: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
                 arg_values: list[Any] | None = None) -> None:
        self.blob, self.offset, self.length = blob, offset, length
        self.end_ids, self.end_offset, self.end_length = end_ids, end_offset, end_length
        self.numeric, self.value = numeric or {}, value or {}
        self.arg_values = arg_values or []
        # codes of the value texts the parser refused (read such events whole): found once
        self.unparsed = np.array([c for c, v in enumerate(self.arg_values) if v is UNPARSED], np.int64)
        # events whose matching end record has args of its own: merged, so read whole
        self.merged_ids = end_ids[end_offset >= 0]

    def __call__(self, event_id: int) -> dict[str, Any]:
        args = dict(args_at(self.blob, int(self.offset[event_id]), int(self.length[event_id])))
        k = int(np.searchsorted(self.end_ids, event_id))
        if k < len(self.end_ids) and self.end_ids[k] == event_id:
            args.update(args_at(self.blob, int(self.end_offset[k]), int(self.end_length[k])))
        return args

    def _taken(self, table: tuple[np.ndarray, np.ndarray], ids: np.ndarray, fill: Any
               ) -> tuple[np.ndarray, np.ndarray]:
        """The values of ``ids`` in a sparse (ids, values) table (``fill`` where absent), and
        the rows of ``ids`` to read whole instead (their end record's args are merged in)."""
        keys, values = table
        out = np.full(len(ids), fill, dtype=values.dtype)
        if len(keys):
            pos = np.minimum(np.searchsorted(keys, ids), len(keys) - 1)
            hit = keys[pos] == ids
            out[hit] = values[pos[hit]]
        whole = np.flatnonzero(np.isin(ids, self.merged_ids)) if len(self.merged_ids) \
            else np.zeros(0, np.int64)
        return out, whole

    def numbers(self, ids: np.ndarray, key: str) -> np.ndarray:
        """``self(id).get(key)`` for each of ``ids`` as float64 (NaN where absent or not a
        number): from the decoded numbers where the decoder took ``key`` out (`LOOKUP_NUMERIC`),
        else parsed (`many`)."""
        ids = np.asarray(ids, np.int64)
        table = self.numeric.get(key)
        if table is None:
            whole, out = np.arange(len(ids)), np.full(len(ids), np.nan)
        else:
            out, whole = self._taken(table, ids, np.nan)
        whole = whole[ids[whole] >= 0]  # -1: no event
        if len(whole):
            out[whole] = [_number(a.get(key)) for a in self.many(ids[whole])]
        return out

    def values(self, ids: np.ndarray, key: str) -> tuple[np.ndarray, list[Any]]:
        """``self(id).get(key)`` for each of ``ids`` as codes (int64, -1 where absent) into a
        table of distinct values: from the decoded value args where the decoder took ``key`` out
        (`VALUE_ARGS`), else parsed (`many`).  The table may be shared: do not change it."""
        ids = np.asarray(ids, np.int64)
        table = self.value.get(key)
        if table is None:
            codes, whole, values = np.full(len(ids), -1, np.int64), np.arange(len(ids)), []
        else:
            taken, whole = self._taken(table, ids, -1)
            codes, values = taken.astype(np.int64), self.arg_values
            if len(self.unparsed):  # a text the parser refused: read those events whole (as __call__)
                whole = np.union1d(whole, np.flatnonzero(np.isin(codes, self.unparsed)))
        whole = whole[ids[whole] >= 0]  # -1: no event
        if len(whole):
            values = list(values)
            seen: dict[bytes, int] = {}
            for row, args in zip(whole.tolist(), self.many(ids[whole]), strict=True):
                value = args.get(key, _ABSENT)
                if value is _ABSENT:
                    codes[row] = -1
                    continue
                text = orjson.dumps(value)
                if text not in seen:
                    seen[text] = len(values)
                    values.append(value)
                codes[row] = seen[text]
        return codes, values

    def many(self, ids: np.ndarray) -> list[dict[str, Any]]:
        """``self(id)`` for each of ``ids``, parsed in one ``orjson`` call over their args texts
        joined into one array (not one parse per event); the same dicts as ``__call__``."""
        ids = np.asarray(ids, np.int64)
        order, texts = self._texts(ids)
        out: list[dict[str, Any]] = [{} for _ in range(len(ids))]
        # new dicts only (no cycles): the cyclic collector would rescan the whole heap many times
        collecting = gc.isenabled()
        gc.disable()
        try:
            parsed = orjson.loads(b"[" + b",".join(texts) + b"]") if texts else []
        except orjson.JSONDecodeError:  # one bad text: parse each alone, as __call__ would
            parsed = [orjson.loads(t) for t in texts]
        finally:
            if collecting:
                gc.enable()
        for row, value in zip(order.tolist(), parsed, strict=True):
            out[row] = value if isinstance(value, dict) else {"args": value}
        if len(self.end_ids):  # a matching end record's args merged in
            at = np.searchsorted(self.end_ids, ids)
            last = np.minimum(at, len(self.end_ids) - 1)
            hit = np.flatnonzero((at < len(self.end_ids)) & (self.end_ids[last] == ids))
            for row in hit.tolist():
                out[row] = self(int(ids[row]))
        return out

    def _texts(self, ids: np.ndarray) -> tuple[np.ndarray, list[bytes | memoryview]]:
        """The rows of ``ids`` that have args and their args texts, in file order."""
        off, length = self.offset[ids], self.length[ids]
        own = np.flatnonzero(off >= 0)
        order = own[np.argsort(off[own], kind="stable")]
        texts: list[bytes | memoryview] = []
        if len(order):
            starts, ends = off[order], off[order] + length[order]
            k, n = 0, len(order)
            s_list, e_list = starts.tolist(), ends.tolist()
            for base, piece in segments(self.blob, starts, ends):
                view, top = memoryview(piece), base + len(piece)
                while k < n and e_list[k] <= top and s_list[k] >= base:
                    texts.append(view[s_list[k] - base:e_list[k] - base])
                    k += 1
        return order, texts


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else np.nan
