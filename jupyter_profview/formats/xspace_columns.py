"""The per-event columns of an XSpace plane's events
([`Builder.columns`][jupyter_profview.formats.xspace_build.Builder.columns]), built with numpy
from the per-metadata values and the events' own stats (see
[jupyter_profview.formats.xspace_build][])."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..kinds import by_code
from .xspace_rules import (
    CATEGORY_STATS,
    CONTEXT_STATS,
    INT_COLUMNS,
    LIMIT,
    SHAPE_STATS,
    STAT_COLUMN,
    VALUED_STATS,
    as_int,
    category,
    derived,
)

if TYPE_CHECKING:
    from .xspace_build import Builder


def unique_small(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(values, return_index=True, return_inverse=True)``, by a table
    where the values are small non-negative ints (stat metadata ids), no sort."""
    if not len(values) or int(values.min()) < 0 or int(values.max()) > 4 * len(values) + 65536:
        uniq, first, inverse = np.unique(values, return_index=True, return_inverse=True)
        return uniq, first, inverse.reshape(-1)
    present = np.zeros(int(values.max()) + 1, bool)
    present[values] = True
    uniq = np.flatnonzero(present)
    slot = np.cumsum(present) - 1
    inverse = slot[values]
    first = np.full(len(uniq), len(values), np.int64)
    np.minimum.at(first, inverse, np.arange(len(values)))
    return uniq, first, inverse


def unique_rows(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(np.stack(columns, 1), axis=0, return_inverse=True)`` of int
    columns -- the distinct rows in lexicographic order and each row's index
    among them -- by hashing (``pd.factorize``) instead of sorting n rows."""
    n = len(columns[0])
    code = np.zeros(n, np.int64)
    for column in columns:  # the codes of the rows so far, combined with the next column
        values, _ = pd.factorize(column)
        code, _ = pd.factorize(code * (int(values.max(initial=-1)) + 1) + values)
    first = np.empty(int(code.max(initial=-1)) + 1, np.int64)
    first[code[::-1]] = np.arange(n - 1, -1, -1)  # each distinct row's first occurrence
    rows = np.stack([np.asarray(column)[first] for column in columns], axis=1)
    order = np.lexsort(rows.T[::-1])
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return rows[order], rank[code]


class EventColumns:
    """The columns of `Builder.columns`, built with numpy from the
    per-metadata values and the own stats (see the module docstring)."""

    def __init__(self, builder: Builder, arrays: dict[str, np.ndarray]) -> None:
        self.b = builder
        self.meta = arrays["meta"]
        self.lane = arrays["lane"]
        n = len(self.meta)
        self.n = n
        self.srow, self.skey, self.sival, self.sobj = builder.stat_arrays()

    def entries(self, stat: str) -> np.ndarray:
        """Positions of the own-stat entries named ``stat``, in file order."""
        code = self.b._stat_code.get(stat)
        return np.flatnonzero(self.skey == code) if code is not None else np.zeros(0, np.int64)

    def values(self, at: np.ndarray) -> list[Any]:
        ival, sobj, objs = self.sival[at].tolist(), self.sobj[at].tolist(), self.b.objs
        return [v if o == -1 else v + 2**64 if o == -2 else objs[o] for v, o in zip(ival, sobj, strict=True)]

    def build(self) -> dict[str, Any]:
        b, meta = self.b, self.meta
        n_meta = len(b.meta_name)
        meta_derived = [derived(s) for s in b.meta_stats]
        cols: dict[str, Any] = {"name": (meta, b.meta_name), "long_name": (meta, b.meta_long)}
        for key in INT_COLUMNS:
            per_meta = [d[key] for d in meta_derived]
            missing = np.array([v is None for v in per_meta] + [True], bool)
            vals = np.array([0 if v is None else v for v in per_meta] + [0], np.int64)
            cols[key] = [vals[meta], missing[meta]]
        for key in ("shapes", "hlo_module", "tf_op"):
            cols[key] = [meta.copy(), [d[key] for d in meta_derived]]
        # own stats feeding a column: later entries win; flops over model_flops; the best shape stat
        order = ["model_flops", "flops", "bytes_accessed", "correlation_id", "step_num", "hlo_module",
                 "tf_op", *reversed(SHAPE_STATS)]
        for stat in order:
            at = self.entries(stat)
            if not len(at):
                continue
            rows = self.srow[at]
            target = STAT_COLUMN[stat]
            if target in INT_COLUMNS:
                ints = [as_int(v) for v in self.values(at)] if (self.sobj[at] >= 0).any() else None
                if ints is None:
                    good = (np.abs(self.sival[at]) < LIMIT) & (self.sobj[at] == -1)
                    vals = np.where(good, self.sival[at], 0)
                else:
                    good = np.array([v is not None for v in ints], bool)
                    vals = np.array([0 if v is None else v for v in ints], np.int64)
                cols[target][0][rows] = vals
                cols[target][1][rows] = ~good
            else:
                codes, labels = cols[target]
                texts = [str(v) for v in self.values(at)]
                inverse, uniq = pd.factorize(np.asarray(texts, dtype=object), sort=True)
                codes[rows] = len(labels) + inverse
                labels.extend(uniq.tolist())
        for key in INT_COLUMNS:
            cols[key] = tuple(cols[key])
        for key in ("shapes", "hlo_module", "tf_op"):
            cols[key] = tuple(cols[key])
        cols["category"] = self.categories(n_meta)
        lanes = b.lanes
        lane = self.lane
        cols["process"] = (lane, [p for p, _, _ in lanes])
        cols["thread"] = (lane, [t for _, t, _ in lanes])
        cols["contexts"] = self.contexts()
        return cols

    def categories(self, n_meta: int) -> tuple[np.ndarray, list[str]]:
        """Category codes per event: per (metadata, line) pair, then per event
        whose own stats decide it (cached by what decides)."""
        b, meta, lane = self.b, self.meta, self.lane
        width = max(len(b.lanes), 1)
        pair = meta.astype(np.int64) * width + lane
        if n_meta * width <= 4 * len(pair) + 65536:  # a table over all pairs: no sort
            seen = np.zeros(n_meta * width, bool)
            seen[pair] = True
            uniq = np.flatnonzero(seen)
            slot = np.cumsum(seen) - 1
            inverse = slot[pair]
            del seen, slot
        else:
            uniq, inverse = np.unique(pair, return_inverse=True)
        del pair
        labels: list[str] = []
        index: dict[str, int] = {}

        def code_of(label: str) -> int:
            found = index.get(label)
            if found is None:
                found = index[label] = len(labels)
                labels.append(label)
            return found

        pair_codes = np.empty(len(uniq), np.int64)
        for k, value in enumerate(uniq.tolist()):
            m, ln = divmod(value, width)
            _, thread, host = b.lanes[ln]
            pair_codes[k] = code_of(category(b.meta_stats[m], thread, host, b.meta_name[m], b.meta_long[m]))
        codes = pair_codes[inverse.reshape(-1)]
        decisive = [self.entries(s) for s in sorted(CATEGORY_STATS)]
        decisive_at = np.concatenate(decisive) if decisive else np.zeros(0, np.int64)
        if not len(decisive_at):
            return codes, labels
        # events whose own stats may decide: keyed by what decides (metadata, line, the values of
        # hlo_category / hlo_op, the presence of the others), the category computed once per key
        decides = np.zeros(len(meta), bool)
        decides[self.srow[decisive_at]] = True
        rows = np.flatnonzero(decides)
        del decides
        parts = [meta[rows].astype(np.int64), lane[rows].astype(np.int64)]
        valued: dict[str, list[Any]] = {}
        for stat in sorted(CATEGORY_STATS):
            at = self.entries(stat)
            code = np.full(len(rows), -1, np.int64)
            if len(at):
                where = np.searchsorted(rows, self.srow[at])
                if stat in VALUED_STATS:
                    found, uniq = pd.factorize(np.asarray([str(v) for v in self.values(at)], dtype=object))
                    code[where] = found  # a later duplicate wins
                    valued[stat] = list(uniq)
                else:
                    code[where] = 0
            parts.append(code)
        keys, inverse = unique_rows(parts)
        key_codes = np.empty(len(keys), np.int64)
        stats_order = sorted(CATEGORY_STATS)
        for k, key in enumerate(keys.tolist()):
            m, ln, *own_codes = key
            own = {stat: (valued[stat][c] if stat in valued else True)
                   for stat, c in zip(stats_order, own_codes, strict=True) if c >= 0}
            _, thread, host = b.lanes[ln]
            stats = {**b.meta_stats[m], **own}
            key_codes[k] = code_of(category(stats, thread, host, b.meta_name[m], b.meta_long[m]))
        codes[rows] = key_codes[inverse.reshape(-1)]
        return codes, labels

    def contexts(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """``_p``/``_pt``/``_c``/``_ct`` per event as (int64 keys, present):
        the metadata's value, overridden by the event's own.  An integer value
        is its own key (a uint64 by its 64 bits); any other value gets a key
        below -2**62, one per distinct text."""
        b, meta = self.b, self.meta
        texts: dict[str, int] = {}

        def key(value: Any) -> int:
            if isinstance(value, int) and not isinstance(value, bool):
                v = value & (2**64 - 1)
                return v - 2**64 if v >= 2**63 else v
            return -(2**62) - texts.setdefault(repr(value), len(texts))

        out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for stat in CONTEXT_STATS:
            per_meta = [s.get(stat) for s in b.meta_stats]
            at = self.entries(stat)
            if not len(at) and all(v is None for v in per_meta):
                continue
            m_keys = np.array([0 if v is None else key(v) for v in per_meta] + [0], np.int64)
            keys, present = m_keys[meta], by_code([v is not None for v in per_meta], meta)
            if len(at):
                rows = self.srow[at]
                objects = self.sobj[at] >= 0
                own = self.sival[at].copy()  # ints and uint64 bits are their own keys
                if objects.any():
                    own[objects] = [key(v) for v in self.values(at[objects])]
                keys[rows] = own
                present[rows] = True
            out[stat] = (keys, present)
        return out
