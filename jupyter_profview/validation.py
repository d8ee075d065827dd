"""Check a loaded trace against its schema ([jupyter_profview.schema][]).

[`validate`][jupyter_profview.validation.validate] (also
[`Trace.validate()`][jupyter_profview.model.Trace.validate]) raises a
[ProfviewError][jupyter_profview.errors.ProfviewError] naming the table, the column and what is
wrong with it at the first problem found:

- every table is a DataFrame (`counters` may be `None`) with every required column, each of its
  declared dtype; optional columns, where present, of theirs; no `<NA>` where the column is not
  nullable; a categorical's values among its declared categories;
- a `rank` column (any table) only where `info.ranks` is set, holding only its ranks;
- `events`: a unique int64 index; sorted by `start`; `dur >= 0`; `0 <= self <= dur`; `parent`
  is -1 or an event id; `depth` is 0 iff `parent` is -1, else the parent's `depth` + 1; the child
  lies inside its parent;
- `flows`: `source` and `target` are -1 or event ids;
- `launches`: sorted by `kernel`; `kernel` is an event id whose `start` and `dur` are
  `kernel_start` and `kernel_dur`; `launch` and `cpu_op` are `<NA>` or event ids;
- `memory`: sorted by `device`, then `time`;
- `allocations`: `bytes >= 0`, `free_time >= alloc_time` where both are known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .errors import ProfviewError
from .schema import TABLES, Column, Table

if TYPE_CHECKING:
    from .model import Trace


class _Checker:
    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.source = trace.info.source or f"<{trace.format} trace>"

    def fail(self, table: str, column: str | None, what: str, expected: str | None = None) -> None:
        where = f"table `{table}`" + (f", column `{column}`" if column else "")
        raise ProfviewError(what, source=self.source, position=where, expected=expected)

    # -- columns and dtypes ----------------------------------------------------
    def table(self, spec: Table) -> pd.DataFrame | None:
        frame = getattr(self.trace, spec.name, None)
        if frame is None and spec.name == "counters":
            return None
        if not isinstance(frame, pd.DataFrame):
            self.fail(spec.name, None, f"is a {type(frame).__name__}", "a pandas DataFrame")
        assert isinstance(frame, pd.DataFrame)
        for col in spec.columns:
            if col.name not in frame.columns:
                self.fail(spec.name, col.name, "is missing", f"a {col.dtype} column")
        for name in frame.columns:
            declared = spec.column(str(name))
            if declared is not None:
                self.column(spec.name, declared, frame[name])
        return frame

    def column(self, table: str, col: Column, values: pd.Series) -> None:
        dtype = values.dtype
        if col.dtype == "category":
            good = isinstance(dtype, pd.CategoricalDtype)
        else:
            good = str(dtype) == col.dtype and not isinstance(dtype, pd.CategoricalDtype)
        if not good:
            self.fail(table, col.name, f"has dtype {dtype}", col.dtype)
        if col.categories is not None:
            extra = sorted(set(map(str, values.cat.categories)) - set(col.categories))
            if extra:
                self.fail(table, col.name, f"holds {extra[:3]}", f"one of {list(col.categories)}")
        if not col.nullable and col.dtype in ("category", "string") and len(values):
            missing = values.isna().to_numpy()
            if missing.any():
                self.fail(table, col.name, f"{int(missing.sum())} rows are missing "
                                           f"(first: row {self.row(values, missing)})", "no <NA>")

    @staticmethod
    def row(values: pd.Series | pd.DataFrame, bad: np.ndarray) -> Any:
        return values.index[int(np.flatnonzero(bad)[0])]

    def count(self, table: str, column: str, frame: pd.DataFrame, bad: np.ndarray, what: str,
              expected: str) -> None:
        if bad.any():
            self.fail(table, column, f"{int(bad.sum())} rows {what} (first: row {self.row(frame, bad)})",
                      expected)

    def ids(self, table: str, column: str, frame: pd.DataFrame, *, none: str | None) -> None:
        """`column` holds event ids, or `none` (-1 / <NA>; None: nothing else)."""
        col = frame[column]
        known = col.notna().to_numpy().copy()
        values = col.to_numpy(np.int64, na_value=-1)
        if none == "-1":
            known &= values != -1
        bad = np.zeros(len(frame), bool)
        bad[known] = self.events_index.get_indexer(values[known]) < 0
        expected = "an event id" + (f" or {none}" if none else "")
        self.count(table, column, frame, bad, "name no event", expected)

    def sorted_by(self, spec: Table, frame: pd.DataFrame) -> None:
        """Rows in the order of `spec.sorted_by` (lexicographic; a categorical by its codes)."""
        if len(frame) < 2 or not spec.sorted_by:
            return
        in_order = np.ones(len(frame) - 1, bool)  # row i + 1 is not before row i
        for column in reversed(spec.sorted_by):
            values = frame[column]
            keys = values.cat.codes.to_numpy() if isinstance(values.dtype, pd.CategoricalDtype) \
                else values.to_numpy()
            in_order = (keys[1:] > keys[:-1]) | ((keys[1:] == keys[:-1]) & in_order)
        down = np.concatenate([[False], ~in_order])
        order = ", ".join(f"`{c}`" for c in spec.sorted_by)
        self.count(spec.name, spec.sorted_by[-1], frame, down, "come before a smaller value",
                   f"rows sorted by {order}")

    # -- tables ------------------------------------------------------------------
    def events(self, ev: pd.DataFrame) -> None:
        index = ev.index
        if str(index.dtype) != "int64":
            self.fail("events", "id", f"index has dtype {index.dtype}", "int64 event ids")
        if not index.is_unique:
            self.fail("events", "id", "index has repeated ids", "unique event ids")
        self.events_index = pd.Index(index)
        self.sorted_by(TABLES["events"], ev)
        start = ev["start"].to_numpy(np.int64)
        dur = ev["dur"].to_numpy(np.int64)
        self_ = ev["self"].to_numpy(np.int64)
        self.count("events", "dur", ev, dur < 0, "are negative", "dur >= 0")
        self.count("events", "self", ev, (self_ < 0) | (self_ > dur), "are outside [0, dur]",
                   "0 <= self <= dur")
        self.ids("events", "parent", ev, none="-1")
        parent = ev["parent"].to_numpy(np.int64)
        depth = ev["depth"].to_numpy(np.int64)
        self.count("events", "depth", ev, (depth == 0) != (parent == -1),
                   "have depth 0 with a parent, or no parent and depth > 0", "depth 0 iff parent is -1")
        has = parent != -1
        pos = self.events_index.get_indexer(parent[has])
        wrong = np.zeros(len(ev), bool)
        wrong[has] = depth[has] != depth[pos] + 1
        self.count("events", "depth", ev, wrong, "are not their parent's depth + 1",
                   "the parent's depth + 1")
        outside = np.zeros(len(ev), bool)
        outside[has] = (start[has] < start[pos]) | (start[has] + dur[has] > start[pos] + dur[pos])
        self.count("events", "parent", ev, outside, "lie outside their parent",
                   "a child inside [start, start + dur] of its parent")

    def ranks(self, frames: dict[str, pd.DataFrame]) -> None:
        """A `rank` column only where `info.ranks` says the trace holds several ranks, and then
        only ranks it lists (the views read "several ranks" from `info.ranks`)."""
        ranks = self.trace.info.ranks
        for name, frame in frames.items():
            if "rank" not in frame.columns:
                continue
            if not ranks:
                self.fail(name, "rank", "is present but `info.ranks` is empty",
                          "a `rank` column only in a TraceSet's combined trace")
            values = frame["rank"].to_numpy(np.int64)
            self.count(name, "rank", frame, ~np.isin(values, np.asarray(ranks, np.int64)),
                       "name a rank not in `info.ranks`", f"one of {list(ranks)}")

    def flows(self, flows: pd.DataFrame) -> None:
        for column in ("source", "target"):
            self.ids("flows", column, flows, none="-1")

    def launches(self, la: pd.DataFrame, ev: pd.DataFrame) -> None:
        self.sorted_by(TABLES["launches"], la)
        self.ids("launches", "kernel", la, none=None)
        at = self.events_index.get_indexer(la["kernel"].to_numpy(np.int64))
        for column, of in (("kernel_start", "start"), ("kernel_dur", "dur")):
            differs = la[column].to_numpy(np.int64) != ev[of].to_numpy(np.int64)[at]
            self.count("launches", column, la, differs, f"differ from their kernel event's `{of}`",
                       f"the `{of}` of event `kernel`")
        for column in ("launch", "cpu_op"):
            self.ids("launches", column, la, none="<NA>")

    def allocations(self, al: pd.DataFrame) -> None:
        self.count("allocations", "bytes", al, al["bytes"].to_numpy(np.int64) < 0, "are negative",
                   "bytes >= 0")
        both = (al["alloc_time"].notna() & al["free_time"].notna()).to_numpy()
        early = np.zeros(len(al), bool)
        early[both] = (al["free_time"].to_numpy(np.int64, na_value=0)[both]
                       < al["alloc_time"].to_numpy(np.int64, na_value=0)[both])
        self.count("allocations", "free_time", al, early, "come before their alloc_time",
                   "free_time >= alloc_time")


def validate(trace: Trace) -> None:
    """Raise [ProfviewError][jupyter_profview.errors.ProfviewError] at the first way `trace`
    departs from its schema (see the module docstring); return None when it holds."""
    check = _Checker(trace)
    frames: dict[str, pd.DataFrame] = {}
    for name, spec in TABLES.items():
        frame = check.table(spec)  # None: counters only
        if frame is not None:
            frames[name] = frame
    events = frames["events"]
    check.ranks(frames)
    check.events(events)
    check.flows(frames["flows"])
    check.launches(frames["launches"], events)
    check.allocations(frames["allocations"])
    check.sorted_by(TABLES["memory"], frames["memory"])
