"""The per-Trace cache of derived facts.

A Trace is treated as immutable once loaded: its tables are not edited in place after
[`load`][jupyter_profview.load] (or `make_trace`) returns.  Each derived fact is computed the first
time it is asked for and kept in the Trace's private `_derived` dict, under a key that also holds
the identity of the tables it was computed from: assigning a new table (`trace.launches = ...`, as a
loader finishing a trace does) makes the next call compute it again; editing a table in place does
not (don't).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from ..model import Trace

T = TypeVar("T")

TABLES = ("events", "launches")


def cached(trace: Trace, key: Hashable, compute: Callable[[], T]) -> T:
    """`compute()` once per `trace` (and `key`), while its `events` and `launches` are the same
    objects."""
    token = tuple(id(getattr(trace, name)) for name in TABLES)
    store: dict[Hashable, tuple[tuple[int, ...], Any]] = trace._derived
    hit = store.get(key)
    if hit is not None and hit[0] == token:
        return hit[1]  # type: ignore[no-any-return]
    value = compute()
    store[key] = (token, value)
    return value


def forget(trace: Trace) -> None:
    """Drop what was derived from `trace`: for the rare code that edits a Trace's tables in place
    (the ranks view rebasing a combined trace's times)."""
    trace._derived.clear()
