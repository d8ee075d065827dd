"""Chrome traces: flow events (``s``/``t``/``f``, v1) and binding points in
time to slices, vectorised with ``searchsorted`` per thread.

A flow is the chain of records sharing (``cat``, ``id``): an ``s`` starts it,
``t`` steps continue it, an ``f`` ends it.  Each consecutive pair of points
becomes one row of the ``flows`` table.  ``s`` and ``t`` bind to the deepest
slice enclosing them on their thread; ``f`` binds to the enclosing slice when
its ``bp`` is ``"e"`` and otherwise to the next slice to start on its thread
at or after its time (Trace Event spec).  Unbound endpoints are -1.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from ...builder import dense_codes, fill_down
from ...model import PHASES, Quality
from .columns import ChromeColumns
from .slices import from_codes, token_labels


class SliceIndex:
    """Slices of a built ``events`` table grouped by (process, thread) label
    codes, for vectorised "which slice encloses time t on this thread"."""

    def __init__(self, events: pd.DataFrame) -> None:
        slices = (events["kind"] == "slice").to_numpy()
        self.ids = np.flatnonzero(slices)
        proc = events["process"].cat.codes.to_numpy()[self.ids].astype(np.int64)
        thread = events["thread"].cat.codes.to_numpy()[self.ids].astype(np.int64)
        self.width = len(events["thread"].cat.categories) + 1
        pair = proc * self.width + thread
        start = events["start"].to_numpy()[self.ids]
        # events are in (start, depth) order already: a stable sort by pair gives (pair, start,
        # depth); on small dense codes numpy's stable sort is a radix sort
        _, pair_code = dense_codes(pair)
        order = np.argsort(pair_code.astype(np.int16) if len(_) < 2**15 else pair_code, kind="stable")
        self.ids = self.ids[order]
        self.pair = pair[order]
        self.start = start[order]
        self.end_all = events["start"].to_numpy() + events["dur"].to_numpy()
        self.parent_all = events["parent"].to_numpy()

    def _groups(self, pair: np.ndarray) -> Iterator[tuple[np.ndarray, int, int]]:
        """(query positions, slice range a:b) per distinct ``pair`` that has slices."""
        order = np.argsort(pair, kind="stable")
        values, first = np.unique(pair[order], return_index=True)
        lo = np.searchsorted(self.pair, values, side="left")
        hi = np.searchsorted(self.pair, values, side="right")
        bounds = [*first.tolist(), len(order)]
        for k, (a, b) in enumerate(zip(lo.tolist(), hi.tolist(), strict=True)):
            if a < b:
                yield order[bounds[k] : bounds[k + 1]], a, b

    def enclosing(self, pair: np.ndarray, time: np.ndarray) -> np.ndarray:
        """Event id of the deepest slice on ``pair`` with start <= time <= end, or -1."""
        out = np.full(len(time), -1, np.int64)
        if len(time) == 0 or len(self.ids) == 0:
            return out
        for pick, a, b in self._groups(pair):  # the last slice starting at or before t ...
            pos = np.searchsorted(self.start[a:b], time[pick], side="right") - 1
            out[pick] = np.where(pos >= 0, self.ids[a:b][np.maximum(pos, 0)], -1)
        while True:  # ... then climb parents until the slice contains t (bounded by the depth)
            bad = np.flatnonzero(out >= 0)
            bad = bad[self.end_all[out[bad]] < time[bad]]
            if len(bad) == 0:
                return out
            out[bad] = self.parent_all[out[bad]]

    def next_start(self, pair: np.ndarray, time: np.ndarray) -> np.ndarray:
        """Event id of the first (outermost) slice on ``pair`` starting at or after ``time``, or -1."""
        out = np.full(len(time), -1, np.int64)
        if len(time) == 0 or len(self.ids) == 0:
            return out
        for pick, a, b in self._groups(pair):
            pos = np.searchsorted(self.start[a:b], time[pick], side="left")
            out[pick] = np.where(pos < b - a, self.ids[a:b][np.minimum(pos, b - a - 1)], -1)
        return out


def flow_chains(c: ChromeColumns, records: np.ndarray, quality: Quality) -> tuple[np.ndarray, np.ndarray]:
    """``(sources, targets)``: positions in ``records`` (``s``/``t``/``f``
    records in file order) of each link of each flow chain.

    Per (cat, id) in file order: an ``s`` starts a chain (closing an open one),
    ``t``/``f`` extend the open chain and ``f`` closes it; a ``t``/``f`` with
    no open chain is skipped.  Chains come in the order they are closed (by
    ``f`` or by the next ``s``), then the ones left open in the order of their
    ``s``; a chain of a lone ``s`` is skipped.  Vectorised with one sort.
    """
    n = len(records)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cat, ident = c.cat_code[records], c.id_code[records]
    order = np.lexsort((ident, cat))  # stable: file order within each (cat, id)
    ph = c.ph[records][order]
    cat, ident = cat[order], ident[order]
    group_start = np.ones(n, bool)
    group_start[1:] = (cat[1:] != cat[:-1]) | (ident[1:] != ident[:-1])
    is_s, is_f = ph == ord("s"), ph == ord("f")
    seg_start = group_start | is_s  # segments: from each 's' (or group start) to the next
    firsts = np.flatnonzero(seg_start)
    seg = np.cumsum(seg_start) - 1
    f_before = np.cumsum(is_f) - is_f  # f's strictly before each element ...
    f_before -= f_before[firsts][seg]  # ... within its segment
    member = is_s[firsts][seg] & (f_before == 0)  # in a chain: from an 's' up to its first 'f'
    orphan = np.flatnonzero(~member)
    for p in dict.fromkeys(ph[orphan[np.argsort(order[orphan], kind="stable")]].tolist()):
        quality.skipped[f"flow '{chr(p)}' without a preceding 's'"] += int((ph[orphan] == p).sum())
    length = np.bincount(seg[member], minlength=len(firsts))
    chain = is_s[firsts]
    single = int((chain & (length == 1)).sum())
    if single:
        quality.skipped["flow 's' without a 't' or 'f'"] += single
    quality.placed["flows"] += int(length[length >= 2].sum())
    # when each chain closes: at its 'f', else at the next 's' of its (cat, id), else after all
    close = np.full(len(firsts), -1, np.int64)
    closing_f = np.flatnonzero(member & is_f)
    close[seg[closing_f]] = order[closing_f]
    by_next_s = np.flatnonzero((close < 0)[:-1] & ~group_start[firsts[1:]])
    close[by_next_s] = order[firsts[by_next_s + 1]]
    still_open = close < 0
    close[still_open] = n + order[firsts[still_open]]
    rank = np.empty(len(firsts), np.int64)
    rank[np.argsort(close)] = np.arange(len(firsts))
    links = np.flatnonzero(member & (length >= 2)[seg])
    links = links[np.argsort(rank[seg[links]], kind="stable")]
    same = seg[links[1:]] == seg[links[:-1]]
    return order[links[:-1][same]], order[links[1:][same]]


def build_flows(c: ChromeColumns, records: np.ndarray, pairs: np.ndarray, index: SliceIndex,
                base: int, quality: Quality) -> pd.DataFrame:
    """The ``flows`` table from the ``s``/``t``/``f`` ``records`` (file order);
    ``pairs`` holds each record's (process, thread) key as in ``index``."""
    src_pos, dst_pos = flow_chains(c, records, quality)
    src, dst = records[src_pos], records[dst_pos]
    src_time = c.ts_ns[src] - base
    dst_time = c.ts_ns[dst] - base
    source_id = index.enclosing(pairs[src_pos], src_time)
    next_binding = (c.ph[dst] == ord("f")) & (c.bp[dst] != ord("e"))
    target_id = index.enclosing(pairs[dst_pos], dst_time)
    if next_binding.any():
        target_id[next_binding] = index.next_start(pairs[dst_pos][next_binding], dst_time[next_binding])
    ids = c.id_code[src]
    used, inverse = np.unique(ids, return_inverse=True)
    tokens = c.tokens
    id_text = np.asarray(token_labels([tokens[k] if k >= 0 else None for k in used.tolist()]), dtype=object)
    names = c.name_code[src]
    cats = c.cat_code[src]
    return pd.DataFrame({
        "flow_id": pd.array(id_text[inverse.reshape(-1)], dtype="string"),
        "name": from_codes(names, _unique(c.names)) if len(names) else pd.Categorical([]),
        "category": from_codes(cats, _unique(c.cats)) if len(cats) else pd.Categorical([]),
        "source": source_id,
        "target": target_id,
        "start": src_time.astype(np.int64),
        "end": dst_time.astype(np.int64),
    })


def _unique(values: list[str]) -> list[str]:
    if len(set(values)) != len(values):  # decoders guarantee this; be loud if not
        raise AssertionError("ChromeColumns dictionary has duplicate entries")
    return values


def propagate_phase(events: pd.DataFrame, flows: pd.DataFrame, categories: tuple[str, ...],
                    quality: Quality) -> None:
    """Give each flow target (and its descendants still ``other``) the phase of
    its source, for flows of the given categories (e.g. ``ac2g``: a GPU kernel
    inherits the phase of the CPU op that launched it)."""
    if len(flows) == 0:
        return
    pick = flows["category"].isin(categories).to_numpy() & (flows["source"].to_numpy() >= 0) \
        & (flows["target"].to_numpy() >= 0)
    if not pick.any():
        return
    codes = events["phase"].cat.codes.to_numpy().copy()
    other = PHASES.index("other")
    before = int((codes == other).sum())
    src = flows["source"].to_numpy()[pick]
    dst = flows["target"].to_numpy()[pick]
    known = codes[src] != other
    codes[dst[known]] = codes[src[known]]
    inherit_down(events, codes)
    quality.unknown_phases -= before - int((codes == other).sum())
    events["phase"] = from_codes(codes, PHASES)


def inherit_down(events: pd.DataFrame, codes: np.ndarray) -> None:
    """Children whose phase is ``other`` take their parent's (in place)."""
    fill_down(codes, events["depth"].to_numpy(), events["parent"].to_numpy(), PHASES.index("other"))
