"""The one table pager of the `_table` command: what a request asks for, and the order of a page.

The events, launch and efficiency tables all sort the same way: by a key (a name by its place
in the sorted names), unknown keys (NaN) last either way, ties by event id ascending; then
`offset` and `limit` cut the page.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .requests import RequestError, integer

MAX_LIMIT = 1000
KINDS = ("events", "launches", "efficiency")


@dataclass(frozen=True)
class PageRequest:
    """A `_table` request's `kind`, `sort`, `descending`, `offset` and `limit`, validated."""

    kind: str
    sort: str
    descending: bool
    offset: int
    limit: int

    @classmethod
    def of(cls, msg: Mapping[str, Any], sort_keys: Mapping[str, Iterable[str]]) -> PageRequest:
        """Read and check the request (`sort_keys`: the sort keys of each kind)."""
        kind = msg.get("kind", "events")
        if kind not in KINDS:
            raise RequestError(f"'kind' must be 'events', 'launches' or 'efficiency', got {kind!r}")
        sort = msg.get("sort", "start")
        keys = tuple(sort_keys[kind])
        if sort not in keys:
            raise RequestError(f"'sort' must be one of {keys}, got {sort!r}")
        descending = msg.get("descending", False)
        if not isinstance(descending, bool):
            raise RequestError("'descending' must be true or false")
        return cls(kind, sort, descending, integer(msg, "offset", 0, 2**31 - 1, 0),
                   integer(msg, "limit", 0, MAX_LIMIT, 100))

    def cut(self, ordered: np.ndarray) -> np.ndarray:
        """The page of rows already in table order."""
        return ordered[self.offset:self.offset + self.limit]


def name_key(names: Any) -> np.ndarray:
    """A sort key for names: each name's place among the sorted distinct names (-1 for none)."""
    cat = pd.Categorical(names)
    place = np.argsort(np.argsort(np.asarray(cat.categories.astype(str)), kind="stable"))
    return np.append(place, -1)[cat.codes]


def table_order(key: np.ndarray, ids: np.ndarray, descending: bool) -> np.ndarray:
    """Positions of `key` in table order: by key (NaN last either way), ties by id ascending."""
    key = np.asarray(key, np.float64)
    nan = np.isnan(key)
    key = np.where(nan, 0.0, key)
    return np.lexsort((np.asarray(ids, np.int64), -key if descending else key, nan))


def page(key: np.ndarray, ids: np.ndarray, request: PageRequest) -> np.ndarray:
    """Positions (into `key`) of the requested page."""
    return request.cut(table_order(key, ids, request.descending))
