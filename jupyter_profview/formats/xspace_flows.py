"""XSpace flows: host -> device arrows by correlation id and producer -> consumer arrows by
TraceMe context, one producer linked per consumer (see [jupyter_profview.formats.xspace][] for
the mapping)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .xspace_columns import unique_rows
from .xspace_rules import CONTEXT_STATS

if TYPE_CHECKING:
    from .xspace_build import Builder


Links = list[tuple[np.ndarray, np.ndarray, np.ndarray, str, np.ndarray | None, str]]


def event_links(builder: Builder, lane: np.ndarray, cols: dict[str, Any], start: np.ndarray) -> Links:
    """Host -> device by correlation id and producer -> consumer by TraceMe
    context (see `link`), as event rows: one arrow per consumer, linear
    in the events.  Each entry: (source rows, target rows, ids, prefix, context
    types or None, category)."""
    host = np.array([h for _, _, h in builder.lanes], bool)[lane]
    out: Links = []
    corr, missing = cols["correlation_id"]
    has = np.flatnonzero(~missing)
    if len(has):
        h = host[has]
        src, dst, extra = link(corr[has][h], has[h], corr[has][~h], has[~h], start)
        builder.quality.extra_producers += extra
        out.append((src, dst, corr[dst], "correlation", None, "host->device"))
    ctx = cols["contexts"]
    if all(k in ctx for k in CONTEXT_STATS):
        p_rows = np.flatnonzero(ctx["_p"][1] & ctx["_pt"][1])
        c_rows = np.flatnonzero(ctx["_c"][1] & ctx["_ct"][1])
        if len(p_rows) and len(c_rows):
            uniq, inverse = unique_rows([  # (type, id) of the producers, then of the consumers
                np.concatenate([ctx["_pt"][0][p_rows], ctx["_ct"][0][c_rows]]),
                np.concatenate([ctx["_p"][0][p_rows], ctx["_c"][0][c_rows]])])
            src, dst, extra = link(inverse[:len(p_rows)], p_rows, inverse[len(p_rows):], c_rows, start)
            builder.quality.extra_producers += extra
            pair = uniq[inverse[len(p_rows):][np.searchsorted(c_rows, dst)]]
            out.append((src, dst, pair[:, 1], "context", pair[:, 0], "producer->consumer"))
    return [entry for entry in out if len(entry[0])]


def flow_frame(links: Links, events: pd.DataFrame, raw_index: np.ndarray) -> pd.DataFrame | None:
    """The ``flows`` table of the links, by event id."""
    if not links:
        return None
    from pandas.api.types import union_categoricals

    row_to_id = np.empty(len(raw_index), np.int64)
    row_to_id[raw_index] = np.arange(len(raw_index))
    name, category, source, target = [], [], [], []
    for src, dst, _, _, kind, cat in links:
        if kind is None:
            name.append(pd.Categorical.from_codes(np.zeros(len(src), np.int8), pd.Index(["launch"])))
        else:
            kinds, codes = np.unique(kind, return_inverse=True)
            name.append(pd.Categorical.from_codes(codes.reshape(-1),
                                                  pd.Index([f"context type {k}" for k in kinds.tolist()])))
        category.append(pd.Categorical.from_codes(np.zeros(len(src), np.int8), pd.Index([cat])))
        source.append(row_to_id[src])
        target.append(row_to_id[dst])
    source_ids, target_ids = np.concatenate(source), np.concatenate(target)
    starts = events["start"].to_numpy()
    flow_id = _flow_ids([(prefix, kind, ident) for _, _, ident, prefix, kind, _ in links])
    return pd.DataFrame({
        "flow_id": flow_id, "name": union_categoricals(name),
        "category": union_categoricals(category), "source": source_ids, "target": target_ids,
        "start": starts[source_ids], "end": starts[target_ids],
    })


def _flow_ids(parts: list[tuple[str, np.ndarray | None, np.ndarray]]) -> Any:
    """The ``flow_id`` column: per (prefix, kinds, ids) part, ``f"{prefix}:{id}"``
    per flow (``f"{prefix}:{kind}:{id}"`` with kinds), built in Arrow where Arrow
    backs pandas' string dtype (no Python string per flow).  Ids are XPlane's
    uint64 (kept as their 64 bits in int64 keys): written unsigned, as in the file."""
    if pd.StringDtype().storage != "pyarrow":
        texts: list[str] = []
        for prefix, kind, ident in parts:
            ids = ident.view(np.uint64).tolist()
            texts += ([f"{prefix}:{i}" for i in ids] if kind is None else
                      [f"{prefix}:{k}:{i}" for k, i in zip(kind.tolist(), ids, strict=True)])
        return pd.array(texts, dtype="string")
    import pyarrow as pa
    import pyarrow.compute as pc

    columns = []
    for prefix, kind, ident in parts:
        fields = [pa.scalar(prefix)] + ([] if kind is None else [pc.cast(pa.array(kind), pa.string())])
        ids = pc.cast(pa.array(ident.view(np.uint64)), pa.string())
        columns.append(pc.binary_join_element_wise(*fields, ids, ":"))
    return pd.array(pa.concat_arrays(columns), dtype=pd.StringDtype())


def link(p_key: np.ndarray, p_row: np.ndarray, c_key: np.ndarray, c_row: np.ndarray,
         start: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """One producer per consumer: of the producers with the consumer's key (not
    the consumer itself), the latest that starts no later than it, else the
    first one.  Returns (producer rows, consumer rows, producers not linked:
    for every linked consumer, the other producers of its key).  Linear after
    a sort, whatever the number of events sharing a key (a merged or hostile
    file: all pairs would be quadratic)."""
    empty = np.zeros(0, np.int64)
    if not len(p_row) or not len(c_row):
        return empty, empty, 0
    # producers and consumers in one order: key, start, producers before consumers, row
    key = np.concatenate([p_key, c_key])
    row = np.concatenate([p_row, c_row])
    is_p = np.concatenate([np.ones(len(p_row), bool), np.zeros(len(c_row), bool)])
    order = np.lexsort((row, ~is_p, start[row], key))
    key, row, is_p = key[order], row[order], is_p[order]
    n = len(order)
    idx = np.arange(n)
    group_start = np.concatenate([[True], key[1:] != key[:-1]])
    first_of_group = np.maximum.accumulate(np.where(group_start, idx, 0))
    last_p = np.maximum.accumulate(np.where(is_p, idx, -1))  # latest producer at or before
    before_p = np.concatenate([[-1], last_p[:-1]])  # strictly before
    prev_p = np.full(n, -1, np.int64)
    prev_p[is_p] = before_p[is_p]  # the producer before each producer
    next_p = np.minimum.accumulate(np.where(is_p, idx, n)[::-1])[::-1]  # first producer at or after
    c = np.flatnonzero(~is_p)
    got = last_p[c]
    got = np.where((got >= 0) & (row[np.maximum(got, 0)] == row[c]), prev_p[np.maximum(got, 0)], got)
    got = np.where(got >= first_of_group[c], got, -1)
    after = next_p[c]
    after_ok = (after < n) & (after >= 0)
    after_ok &= key[np.minimum(after, n - 1)] == key[c]
    after_ok &= row[np.minimum(after, n - 1)] != row[c]
    got = np.where(got >= 0, got, np.where(after_ok, after, -1))
    linked = got >= 0
    group = np.cumsum(group_start) - 1  # the key's index among the keys (they are sorted)
    producers = np.bincount(group[is_p], minlength=int(group[-1]) + 1)
    per_consumer = producers[group[c[linked]]]
    self_too = np.isin(row[c[linked]], row[is_p])  # a consumer that is also a producer of its key
    extra = int((per_consumer - 1 - self_too).clip(0).sum())
    return row[got[linked]], row[c[linked]], extra
