"""Chrome traces: ``trace.args(id)``, reading each event's args from the
args blob of the decoded columns (merging a matching end record's args)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .columns import ChromeColumns, args_at


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

    def __init__(self, blob: bytes | memoryview, offset: np.ndarray, length: np.ndarray, end_ids: np.ndarray,
                 end_offset: np.ndarray, end_length: np.ndarray) -> None:
        self.blob, self.offset, self.length = blob, offset, length
        self.end_ids, self.end_offset, self.end_length = end_ids, end_offset, end_length

    def __call__(self, event_id: int) -> dict[str, Any]:
        args = dict(args_at(self.blob, int(self.offset[event_id]), int(self.length[event_id])))
        k = int(np.searchsorted(self.end_ids, event_id))
        if k < len(self.end_ids) and self.end_ids[k] == event_id:
            args.update(args_at(self.blob, int(self.end_offset[k]), int(self.end_length[k])))
        return args
