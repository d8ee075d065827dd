"""Chrome traces: ``trace.args(id)``, reading each event's args from the
args blob of the decoded columns (merging a matching end record's args)."""

from __future__ import annotations

import gc
import re
from typing import Any

import numpy as np
import pandas as pd

from .columns import ChromeColumns, args_at
from .file_blob import FileBlob, segments


class ArgsRows:
    """Where the args of each events input row are in the args blob (taken
    before the columns are dropped); the last ``loop`` rows may have the
    record of a matching end (``end_rec`` >= 0) whose args are merged."""

    def __init__(self, c: ChromeColumns, rec: np.ndarray, loop: int, end_rec: np.ndarray) -> None:
        self.blob = c.args_blob
        self.offset = c.args_offset[rec]
        self.length = c.args_length[rec]
        has_end = np.flatnonzero(end_rec >= 0)
        self.end_rows = len(rec) - loop + has_end
        self.end_offset = c.args_offset[end_rec[has_end]]
        self.end_length = c.args_length[end_rec[has_end]]

    def lookup(self, raw_index: np.ndarray) -> _ArgsLookup:
        """The lookup by event id, given the input row of each event id."""
        event_of_row = np.empty(len(raw_index), np.int64)
        event_of_row[raw_index] = np.arange(len(raw_index))
        end_ids = event_of_row[self.end_rows]
        order = np.argsort(end_ids)
        return _ArgsLookup(self.blob, self.offset[raw_index], self.length[raw_index],
                           end_ids[order], self.end_offset[order], self.end_length[order])


class _ArgsLookup:
    """``trace.args(id)``: the record's args, with a matching end's merged in.
    Keeps only the args blob and each event's slice of it (not the columns)."""

    def __init__(self, blob: bytes | memoryview | FileBlob, offset: np.ndarray, length: np.ndarray,
                 end_ids: np.ndarray,
                 end_offset: np.ndarray, end_length: np.ndarray) -> None:
        self.blob, self.offset, self.length = blob, offset, length
        self.end_ids, self.end_offset, self.end_length = end_ids, end_offset, end_length

    def __call__(self, event_id: int) -> dict[str, Any]:
        args = dict(args_at(self.blob, int(self.offset[event_id]), int(self.length[event_id])))
        k = int(np.searchsorted(self.end_ids, event_id))
        if k < len(self.end_ids) and self.end_ids[k] == event_id:
            args.update(args_at(self.blob, int(self.end_offset[k]), int(self.end_length[k])))
        return args

    def _find(self, ids: np.ndarray, key: str, value: bytes) -> tuple[np.ndarray, list[bytes], np.ndarray]:
        """The blob searched once for ``"key":`` followed by a ``value`` (a regex with one group):
        the rows of ``ids`` answered from the blob with their value texts, and the rows to read by
        parsing their args instead (a hit whose value is anything else, or that may sit in a
        nested object: a ``{`` between the object's start and the key).  Each hit belongs to the
        args text (of an event, or of its matching end record, which wins, as in ``__call__``)
        that contains it."""
        own = self.offset[ids] >= 0
        # every args text that can answer, sorted by where it is in the blob
        k = np.searchsorted(self.end_ids, ids)
        k_ok = k < len(self.end_ids)
        has_end = np.zeros(len(ids), bool)
        # an end record without args (offset -1) has nothing to add
        has_end[k_ok] = (self.end_ids[k[k_ok]] == ids[k_ok]) & (self.end_offset[k[k_ok]] >= 0)
        row = np.concatenate([np.flatnonzero(own), np.flatnonzero(has_end)])
        off = np.concatenate([self.offset[ids[own]], self.end_offset[k[has_end]]])
        end = off + np.concatenate([self.length[ids[own]], self.end_length[k[has_end]]])
        is_end = np.concatenate([np.zeros(int(own.sum()), bool), np.ones(int(has_end.sum()), bool)])
        order = np.argsort(off, kind="stable")
        row, off, end, is_end = row[order], off[order], end[order], is_end[order]
        pattern = re.compile(rb'"' + re.escape(key.encode()) + rb'"\s*:\s*(?:' + value + rb"|)")
        brace = re.compile(rb"\{")  # a "{" after the object's own: the key may be in a nested object
        pos_list: list[int] = []
        values: list[bytes | None] = []
        escaped: list[bool] = []  # \" : the key's text inside a string
        nested: list[bool] = []
        for base, piece in segments(self.blob, off, end):  # the args texts (a file's: read in pieces)
            found: list[int] = []
            for m in pattern.finditer(piece):
                found.append(m.start())
                values.append(m.group(1))
            if not found:
                continue
            local = np.array(found, np.int64)
            escaped.extend((np.frombuffer(piece, np.uint8)[np.maximum(local - 1, 0)] == 0x5C) & (local > 0))
            starts = off[np.searchsorted(off, base):np.searchsorted(off, base + len(piece))] - base
            k = np.searchsorted(starts, local, side="right") - 1
            own_start = np.where(k >= 0, starts[np.maximum(k, 0)], local)  # the enclosing args' start
            nested.extend(a < p and brace.search(piece, a + 1, p) is not None
                          for a, p in zip(own_start.tolist(), found, strict=True))
            pos_list.extend((local + base).tolist())
        none = np.zeros(0, np.int64)
        if not pos_list:
            return none, [], none
        pos = np.array(pos_list, np.int64)
        at = np.searchsorted(off, pos, side="right") - 1
        keep = (at >= 0) & (pos < end[np.maximum(at, 0)]) & ~np.array(escaped, bool)
        hit = np.flatnonzero(keep)
        j = at[hit]
        parse = np.fromiter((values[h] is None or nested[h] for h in hit.tolist()), bool, len(hit))
        # the last hit per event wins, an end record's after its event's own (as in __call__)
        order = np.lexsort((pos[hit], is_end[j]))[::-1]
        rows, first = np.unique(row[j][order], return_index=True)
        pick = order[first]
        slow = parse[pick]
        fast = [values[h] or b"" for h in hit[pick][~slow].tolist()]
        return rows[~slow], fast, rows[slow]

    def texts(self, ids: np.ndarray, key: str) -> np.ndarray:
        """``str(self(id).get(key))`` for each of ``ids`` (``""`` where the key is absent
        or null), as an object array -- without parsing every args object: one search of the
        blob (`_find`) for a JSON array of at most three levels without strings (what
        PyTorch's ``Input Dims`` are); each distinct array text is parsed once.  The result is
        always ``__call__``'s."""
        import orjson

        ids = np.asarray(ids, np.int64)
        out = np.full(len(ids), "", dtype=object)
        array = rb"(\[(?:[^\[\]\"]|\[(?:[^\[\]\"]|\[[^\[\]\"]*\])*\])*\])"
        fast_rows, fast, slow_rows = self._find(ids, key, array)
        for r_ in slow_rows.tolist():
            got = self(int(ids[r_])).get(key)
            out[r_] = "" if got is None else str(got)
        if len(fast):  # each distinct array text parsed once
            texts = np.empty(len(fast), dtype=object)
            texts[:] = fast
            codes, distinct = pd.factorize(texts)
            shown = np.empty(len(distinct), dtype=object)
            shown[:] = [str(orjson.loads(t)) for t in distinct]
            out[fast_rows] = shown[codes]
        return out

    def numbers(self, ids: np.ndarray, key: str) -> np.ndarray:
        """``self(id).get(key)`` for each of ``ids`` as float64 (NaN where absent or not a
        number), found with one search of the blob for ``"key": <number>`` (`_find`)."""
        ids = np.asarray(ids, np.int64)
        out = np.full(len(ids), np.nan)
        number = rb"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*[,}]"
        fast_rows, fast, slow_rows = self._find(ids, key, number)
        for r_ in slow_rows.tolist():
            got = self(int(ids[r_])).get(key)
            out[r_] = float(got) if isinstance(got, (int, float)) and not isinstance(got, bool) else np.nan
        out[fast_rows] = np.array([float(v) for v in fast])
        return out

    def many(self, ids: np.ndarray) -> list[dict[str, Any]]:
        """``self(id)`` for each of ``ids``, parsed in one ``orjson`` call over their args texts
        joined into one array (not one parse per event); the same dicts as ``__call__``."""
        import orjson

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

    def in_order(self, ids: np.ndarray, keys: list[str], arrays: tuple[str, ...] = ()
                 ) -> tuple[list[np.ndarray], np.ndarray]:
        """The value texts of ``keys`` in the args of each of ``ids``, found by one regex over
        their texts where the keys follow each other in this order (as Kineto writes a kernel's
        args: numbers, and arrays of numbers for the keys in ``arrays``), and the rows whose args
        have one of ``keys`` but not in that form (to be parsed: `many`).  ``None`` where a
        row has none of it."""
        ids = np.asarray(ids, np.int64)
        def value(key: str) -> bytes:  # simple classes, no alternation: sre matches them fast
            return rb'(\[[^\]"]*\])' if key in arrays else rb"([-+0-9.eE]+)"

        pattern = re.compile(rb"\s*,\s*".join(rb'"' + re.escape(k.encode()) + rb'"\s*:\s*' + value(k)
                                              for k in keys))
        first = re.compile(rb'"(?:' + rb"|".join(re.escape(k.encode()) for k in keys) + rb')"\s*:')
        out = [np.full(len(ids), None, dtype=object) for _ in keys]
        rows, texts = self._texts(ids)
        if not texts:
            return out, np.zeros(0, np.int64)
        # the texts joined (a NUL between two: no key spans it), searched once
        joined = b"\x00".join(texts)
        sizes = np.fromiter((len(t) for t in texts), np.int64, len(texts))
        starts = np.concatenate([[0], np.cumsum(sizes + 1)[:-1]])
        ends = starts + sizes
        # each match starts at the first key: found with bytes.find (sre's literal scan is slow)
        lead, matches = b'"' + keys[0].encode() + b'"', []
        at = joined.find(lead)
        while at >= 0:
            m = pattern.match(joined, at)
            if m is not None:
                matches.append(m)
            at = joined.find(lead, at + 1)
        owner = self._owner(np.arange(len(texts)), starts, ends, [m.start() for m in matches],
                            [m.end() for m in matches])
        ok = np.flatnonzero(owner >= 0)
        if len(ok):
            columns = list(zip(*[matches[i].groups() for i in ok.tolist()], strict=True))
            for col, values in zip(out, columns, strict=True):
                col[rows[owner[ok]]] = _objects(values)
        matched = np.zeros(len(texts), bool)
        matched[owner[ok]] = True
        keyed = [int(rows[i]) for i in np.flatnonzero(~matched).tolist()  # a key, in another form
                 if first.search(joined, int(starts[i]), int(ends[i]))]
        return out, np.asarray(sorted(keyed), np.int64)

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

    @staticmethod
    def _owner(rows: np.ndarray, starts: np.ndarray, ends: np.ndarray, hit_start: list[int],
               hit_end: list[int]) -> np.ndarray:
        """The row (of ``rows``, whose texts are ``[starts, ends)``) holding each hit, -1 for none."""
        at = np.searchsorted(starts, np.asarray(hit_start, np.int64), side="right") - 1
        ok = (at >= 0) & (np.asarray(hit_end, np.int64) <= ends[np.maximum(at, 0)])
        return np.where(ok, rows[np.maximum(at, 0)], -1)


def _objects(values: tuple[Any, ...]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out
