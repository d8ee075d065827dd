"""Find events by name (issue #36, item 11), kernel-side so events not drawn are found too.

[`find_events`][jupyter_profview.widget.search.find_events] answers a query with the positions
(rows of `trace.events`) whose name contains the text, or matches the regular expression, in
time order.  An invalid expression is a [`ProfviewError`][jupyter_profview.errors.ProfviewError]
that says what is wrong with it.  The search box and its panel command are not wired yet.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..errors import ProfviewError


def find_events(events: pd.DataFrame, query: str, regex: bool = False) -> np.ndarray:
    """Positions of the events whose `name` contains `query` (or matches it as a regex), by start."""
    if not query:
        return np.empty(0, dtype=np.int64)
    if regex:
        try:
            re.compile(query)
        except re.error as exc:
            raise ProfviewError(f"search: invalid regular expression {query!r}: {exc}") from None
    names = events["name"].astype(str)
    hit = names.str.contains(query, regex=regex, na=False).to_numpy()
    pos = np.flatnonzero(hit)
    order = np.argsort(events["start"].to_numpy()[pos], kind="stable")
    return pos[order].astype(np.int64)
