"""Clock domains and their conversion to the trace clock, as Perfetto's ``ClockTracker`` does.

Each timestamp is read as ``(domain, value in ns)``: domain 0 is the trace clock itself (a packet
with no clock id anywhere), the others are builtin clocks (``BOOTTIME``, ``MONOTONIC``, ...) or
sequence-scoped clocks (ids 64-127, one per ``trusted_packet_sequence_id``).  A snapshot says the
value of several domains at one instant; a value is converted along the shortest chain of
snapshotted pairs, each step using the latest snapshot whose source value is not after it (the
first one before all of them): ``value + (target - source)``, exact integers.  The trace clock is
the snapshots' ``primary_trace_clock``, else ``BOOTTIME`` (Perfetto's default).
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from .schema import BOOTTIME

MAX_DOMAINS = 2**15 - 1  # domain codes are int16 in the walk's columns
CHUNK = 1 << 19  # values converted at a time by `Clocks.to_trace`
Domain = Any  # a builtin clock id (int) or (sequence id, clock id)


class Clocks:
    def __init__(self) -> None:
        self.domains: list[Domain] = [None]  # code 0: the trace clock
        self._codes: dict[Domain, int] = {}
        self.snapshots: list[dict[int, int]] = []  # domain code -> ns
        self.trace_clock: int | None = None
        self._pairs: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, int]] = {}  # `_step`'s

    def code(self, domain: Domain) -> int:
        code = self._codes.get(domain)
        if code is None:
            if len(self.domains) > MAX_DOMAINS:
                raise OverflowError(f"more than {MAX_DOMAINS:,} clock domains")
            code = self._codes[domain] = len(self.domains)
            self.domains.append(domain)
        return code

    def add_snapshot(self, values: dict[int, int], primary: int) -> None:
        self.snapshots.append(values)
        if primary:
            self.trace_clock = primary
        elif self.trace_clock is None and self._codes.get(BOOTTIME) in values:
            self.trace_clock = BOOTTIME

    def _edges(self) -> dict[int, set[int]]:
        """Domain code -> the domains some snapshot pairs it with (one graph for all paths)."""
        edges: dict[int, set[int]] = {}
        seen: set[frozenset[int]] = set()
        for snap in self.snapshots:
            key = frozenset(snap)
            if key in seen:  # the same domains as an earlier snapshot: no new edge
                continue
            seen.add(key)
            for a in snap:
                edges.setdefault(a, set()).update(b for b in snap if b != a)
        return edges

    def _path(self, source: int, target: int, edges: dict[int, set[int]]) -> list[int] | None:
        prev = {source: source}
        queue = deque([source])
        while queue:
            node = queue.popleft()
            if node == target:
                path = [node]
                while path[-1] != source:
                    path.append(prev[path[-1]])
                return path[::-1]
            for nxt in sorted(edges.get(node, ())):
                if nxt not in prev:
                    prev[nxt] = node
                    queue.append(nxt)
        return None

    def _step(self, values: np.ndarray, a: int, b: int) -> np.ndarray:
        got = self._pairs.get((a, b), None)
        if got is None or got[2] != len(self.snapshots):
            pairs = sorted((s[a], s[b]) for s in self.snapshots if a in s and b in s)
            got = self._pairs[a, b] = (np.array([p[0] for p in pairs], np.int64),
                                       np.array([p[1] for p in pairs], np.int64), len(self.snapshots))
        src, dst = got[0], got[1]
        at = np.maximum(np.searchsorted(src, values, side="right") - 1, 0)
        return values + (dst[at] - src[at])

    def to_trace(self, values: np.ndarray, domains: np.ndarray,
                 in_place: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``values`` (ns in their ``domains``) in the trace clock, and a mask of those with no
        chain of snapshots to it (left as they were).  ``in_place``: ``values`` itself (int64,
        writable) is converted and returned, no copy.  Worked in pieces of `CHUNK` values:
        the temporaries of a step are a piece's, never the whole column's."""
        out = values if in_place else values.astype(np.int64, copy=True)
        lost = np.zeros(len(values), bool)
        target = self._codes.get(self.trace_clock if self.trace_clock is not None else BOOTTIME)
        edges = self._edges()
        paths: dict[int, list[int] | None] = {}
        for lo in range(0, len(values), CHUNK):
            dom = domains[lo:lo + CHUNK]
            small = dom.min() >= 0  # codes are small: counted, not sorted
            present = np.flatnonzero(np.bincount(dom)) if small else np.unique(dom)
            for code in present.tolist():
                if code == 0 or code == target:
                    continue
                rows = np.flatnonzero(dom == code) + lo
                if code not in paths:
                    paths[code] = self._path(code, target, edges) if target is not None else None
                path = paths[code]
                if path is None:
                    lost[rows] = True
                    continue
                converted = out[rows]
                for a, b in zip(path, path[1:], strict=False):
                    converted = self._step(converted, a, b)
                out[rows] = converted
        return out, lost
