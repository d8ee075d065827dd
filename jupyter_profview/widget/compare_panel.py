"""The compare panel ("Compare with…"): the view's trace (A) against a second trace (B) the
user names, as the ops/kernels table of `analysis.compare_view.changes`
(the same comparison `profview.compare(a, b)` makes and `profview.show(comparison)` draws), with
the alignment and the summary.  The notebook widget, the JupyterLab tab and the `profview serve`
page show it from this module and `js/src/compare_panel.ts`; on a server the second path is
confined to the root ([`ViewFiles`][jupyter_profview.widget.files.ViewFiles]).

`_panel_request` `{panel: "compare", show: true}` without `path` asks for the path (the panel
shows its form); with `path` it loads B and compares.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..analysis.compare import compare
from ..analysis.compare_view import changes
from ..errors import ProfviewError
from .panel import TOKENS, Panel
from .requests import RequestError

#: rows of the ops table sent (largest |delta| first; the notebook's `CompareView` shows as many)
ROWS = 200


class ComparePanel(Panel):
    """The view's trace against a second one (see the module doc)."""

    name = "compare"
    traits = ("_compare", "_compare_pick")
    toolbar = "Compare with…"

    def __init__(self, session: Any) -> None:
        super().__init__(session)
        #: (events column, value) of each row shown, as the notebook's CompareView keys them
        self.keys: list[tuple[str, str]] = []

    def state(self) -> dict[str, Any]:
        return {"_compare": {}, "_compare_pick": {}}

    def apply(self, name: str, value: Any) -> dict[str, Any]:
        """`_compare_pick` `{row, token}`: highlight that op or kernel in the view's trace (A)."""
        try:
            k = int((value or {})["row"])
        except (KeyError, TypeError, ValueError):
            raise RequestError("_compare_pick must be {row: k, token}") from None
        if not 0 <= k < len(self.keys):
            raise IndexError(f"no compare row {k} is shown")
        column, text = self.keys[k]
        events = self.session.trace.events
        pos = np.flatnonzero(events[column].astype(str).to_numpy() == text)
        return self.session.highlight(pos, zoom=False)

    def open(self, args: Mapping[str, Any]) -> dict[str, Any]:
        asked = args.get("path")
        if asked is None or asked == "":
            return {"_compare": {"ask": True, "token": next(TOKENS)}}
        files = self.session.files
        path = files.open(asked)
        try:
            c = compare(self.session.trace, str(path))
        except ProfviewError as exc:  # named as asked: never a server path
            if exc.source and files.root is not None:
                raise ProfviewError(exc.reason, source=str(asked), position=exc.position,
                                    expected=exc.expected) from None
            raise
        table = changes(c).head(ROWS)
        self.keys = [("name" if w == "kernel" else c.by, str(n)) for n, w in zip(table.index, table["what"],
                                                                                 strict=True)]
        rows = [{"name": str(name), "what": str(r["what"]), "status": str(r["status"]),
                 "delta": float(r["delta"]), "count_a": int(r["count_a"]), "count_b": int(r["count_b"]),
                 "self_a": float(r["self_a"]), "self_b": float(r["self_b"])}
                for name, r in table.iterrows()]
        return {"_compare": {"a": c.label_a, "b": str(asked), "align": str(c.align),
                             "offset": float(c.offset), "unit": c.time_unit, "summary": c.summary(),
                             "rows": rows,
                             "total": int(len(changes(c))), "token": next(TOKENS)}}

    def close(self) -> dict[str, Any]:
        self.keys = []
        return {"_compare": {}}
