"""Find events by name (issue #36, item 11), kernel-side: every event of the trace is searched,
drawn or not (a kernel inside a merged box, a lane scrolled away, a window not yet loaded).

[`find_events`][jupyter_profview.widget.search.find_events] answers a query with the positions
(rows of `trace.events`) whose name contains the text, or matches the regular expression, in
time order.  An invalid expression is a [`ProfviewError`][jupyter_profview.errors.ProfviewError]
that says what is wrong with it.

[`SearchPanel`][jupyter_profview.widget.search.SearchPanel] is the view's search box (the `/` key,
`js/src/search.ts`): its `_search` command runs in the one `ViewSession`, so the notebook widget,
the JupyterLab tab and `profview serve` search the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..errors import ProfviewError
from .codec import encode_frame
from .panel import Panel
from .requests import Reply, RequestError, guarded

#: the longest query the search box sends
MAX_QUERY = 1000
#: matches sent for the highlight (the count is always the whole count)
MAX_HIGHLIGHT = 50_000


def find_events(events: pd.DataFrame, query: str, regex: bool = False) -> np.ndarray:
    """Positions of the events whose `name` contains `query` (or matches it as a regex), by start.

    The test runs once per distinct name (the categories of a categorical column)."""
    if not query:
        return np.empty(0, dtype=np.int64)
    if regex:
        try:
            pattern = re.compile(query)
        except re.error as exc:
            raise ProfviewError(f"search: invalid regular expression {query!r}: {exc}") from None

        def test(values: pd.Series) -> np.ndarray:
            return np.fromiter((pattern.search(v) is not None for v in values), bool, len(values))
    else:
        def test(values: pd.Series) -> np.ndarray:
            return values.str.contains(query, regex=False, na=False).to_numpy(bool)
    names = events["name"]
    if isinstance(names.dtype, pd.CategoricalDtype):  # once per distinct name
        hit_value = test(pd.Series(names.cat.categories.astype(str), dtype=object))
        codes = names.cat.codes.to_numpy()
        hit = np.zeros(len(names), bool)
        known = codes >= 0
        hit[known] = hit_value[codes[known]]
    else:
        hit = test(names.astype(str).astype(object))
    pos = np.flatnonzero(hit)
    order = np.argsort(events["start"].to_numpy()[pos], kind="stable")
    return pos[order].astype(np.int64)


class SearchPanel(Panel):
    """The search box: `_search` `{query, regex, index}` answers the match count, the `index`-th
    match (wrapping around: next after the last is the first) with what the view needs to show it
    (id, name, start, dur, track, depth), and a frame of the matches' ids (at most
    `MAX_HIGHLIGHT`) to highlight.  An invalid regular expression is answered with `message`
    (the box shows it), not an error.  In a view of several ranks only the shown ranks' events
    are found."""

    name = "search"
    commands: ClassVar[Mapping[str, str]] = {"_search": "search"}

    def __init__(self, session: Any) -> None:
        super().__init__(session)
        self._last: tuple[str, bool, np.ndarray] | None = None

    def matches(self, query: str, regex: bool) -> np.ndarray:
        """Positions of the matches, in time order (the last query's are kept)."""
        if self._last is None or self._last[:2] != (query, regex):
            self._last = (query, regex, find_events(self.session.data.events, query, regex))
        return self.session.data.keep_allowed(self._last[2])

    @guarded
    def search(self, msg: Any) -> Reply:
        if not isinstance(msg, Mapping) or "query" not in msg:
            raise RequestError("_search needs {query, regex, index}")
        query, regex, index = msg["query"], msg.get("regex", False), msg.get("index", 0)
        if not isinstance(query, str) or len(query) > MAX_QUERY:
            raise RequestError(f"'query' must be a string of at most {MAX_QUERY} characters")
        if not isinstance(regex, bool) or isinstance(index, bool) or not isinstance(index, int):
            raise RequestError("'regex' must be true or false, 'index' an integer")
        out: dict[str, Any] = {"query": query, "regex": regex, "count": 0, "index": -1, "message": ""}
        try:
            pos = self.matches(query, regex)
        except ProfviewError as exc:
            return {**out, "message": str(exc)}, []
        data = self.session.data
        if len(pos) == 0:
            out["message"] = "no event's name matches" if query else ""
            return out, [encode_frame({"id": np.zeros(0, np.int32)}, {})]
        i = index % len(pos)
        p = int(pos[i])
        row = data.events.iloc[p]
        out.update(count=int(len(pos)), index=i, truncated=len(pos) > MAX_HIGHLIGHT, current={
            "id": int(data.ids[p]), "name": str(row["name"]), "start": float(data.start[p]),
            "dur": float(data.dur[p]), "track": int(data.timeline.event_track[p]),
            "depth": int(row["depth"])})
        ids = data.ids[pos[:MAX_HIGHLIGHT]].astype(np.int32)
        return out, [encode_frame({"id": ids}, {})]
