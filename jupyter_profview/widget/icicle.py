"""The icicle (a flame graph, root on top) of `jupyter_profview.analysis.attribute` in the
widget: the ``_icicle`` frame the front end draws (``js/src/icicle.ts``).

One row per tree node, parents before children:

=========== ===== ==========================================================================
column      dtype meaning
=========== ===== ==========================================================================
node        u32   the row of ``attribute(...)`` (its ``node``)
parent      i32   the parent's ``node``, -1 at a root
depth       u16   0 at a root
x0          f64   left edge, in the measure's ns from the left of the icicle
width       f64   the node's value: ``gpu_total`` or ``cpu_total`` (the measure)
gpu         f64   ``gpu_total`` (ns)
cpu         f64   ``cpu_total`` (ns)
count       u32   instances
kernels     u32   device activities under it
label       i32   index into ``meta.names``
=========== ===== ==========================================================================

Roots side by side, the largest first, then each node's children inside it, the largest first.
``meta``: ``names``, ``by``, ``measure`` (``gpu``/``cpu``), ``total`` (the roots' values added
up), ``window`` (``[start, end]`` or null: the time range the tree was computed for),
``token``.

`IciclePanel` is the panel ("Breakdown" in the toolbar): the tree shown, its node kind and measure
(``icicle_by``, ``icicle_measure``), a click on a node (``_icicle_pick``) and a range selection,
which redraws it for that range.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.attribution import BY, Attribution, attribute_members
from .codec import encode_frame
from .panel import TOKENS, Panel, ViewSession
from .requests import RequestError


def layout(tree: pd.DataFrame, measure: str) -> np.ndarray:
    """Left edge of every row: roots, then children inside their parent, the largest first."""
    value = tree["gpu_total" if measure == "gpu" else "cpu_total"].to_numpy(np.float64)
    parent = tree["parent"].to_numpy(np.int64)
    x0 = np.zeros(len(tree))
    cursor: dict[int, float] = {}
    order = np.lexsort((np.arange(len(tree)), -value, tree["depth"].to_numpy()))
    for r in order.tolist():
        p = int(parent[r])
        left = cursor.get(p, x0[p] if p >= 0 else 0.0)
        x0[r] = left
        cursor[p] = left + value[r]
    return x0


def icicle_frame(att: Attribution, *, by: str, measure: str, window: tuple[float, float] | None,
                 token: int) -> bytes:
    tree = att.tree
    names = pd.Index(tree["name"].astype(str).unique())
    value = tree["gpu_total" if measure == "gpu" else "cpu_total"].to_numpy(np.float64)
    roots = tree["parent"].to_numpy() < 0
    meta: dict[str, Any] = {"names": [str(n) for n in names], "by": by, "measure": measure,
                            "total": float(value[roots].sum()),
                            "window": None if window is None else [float(window[0]), float(window[1])],
                            "token": token}
    return encode_frame({
        "node": tree["node"].to_numpy(np.uint32), "parent": tree["parent"].to_numpy(np.int32),
        "depth": tree["depth"].to_numpy(np.uint16), "x0": layout(tree, measure), "width": value,
        "gpu": tree["gpu_total"].to_numpy(np.float64), "cpu": tree["cpu_total"].to_numpy(np.float64),
        "count": tree["count"].to_numpy(np.uint32), "kernels": tree["kernels"].to_numpy(np.uint32),
        "label": names.get_indexer(pd.Index(tree["name"].astype(str))).astype(np.int32),
    }, meta)


class IciclePanel(Panel):
    """The icicle of `attribute(trace, by)` above the table (`_icicle`); by default every
    `ProfilerStep#N` is one node (merged steps)."""

    name = "icicle"
    traits = ("_icicle", "icicle_by", "icicle_measure", "_icicle_pick")
    toolbar = "Breakdown"

    def __init__(self, session: ViewSession) -> None:
        super().__init__(session)
        self.by = ""
        self.measure = "gpu"
        self.backward = "launch"
        #: the icicle merges the instances of a numbered annotation (ProfilerStep#N) into one node
        self.merge_steps = True
        #: the time range the tree is computed for (a range selection), or None for the trace
        self.window: tuple[float, float] | None = None
        self.attribution: Attribution | None = None

    def state(self) -> dict[str, Any]:
        return {"_icicle": b"", "icicle_by": "", "icicle_measure": "gpu", "_icicle_pick": {}}

    def show(self, by: str = "annotation", *, measure: str = "gpu", backward: str = "launch",
             merge_steps: bool = True) -> dict[str, Any]:
        """The traits that show the icicle of `by` (`""` hides it)."""
        if by and by not in BY:
            raise ValueError(f"icicle by must be one of {BY} or '', not {by!r}")
        if measure not in ("gpu", "cpu"):
            raise ValueError(f"icicle measure must be 'gpu' or 'cpu', not {measure!r}")
        self.backward, self.merge_steps = backward, merge_steps
        self.by, self.measure = by, measure
        return {"icicle_by": by, "icicle_measure": measure, **self.draw()}

    def draw(self, *, recompute: bool = True) -> dict[str, Any]:
        """The `_icicle` of the current node kind; `recompute=False` re-lays out the tree already
        computed (a new measure changes only the boxes' widths)."""
        if not self.by:
            self.attribution = None
            return {"_icicle": b""}
        if recompute or self.attribution is None:
            self.attribution = attribute_members(self.session.trace, self.by, backward=self.backward,
                                                 window=self.window, merge_steps=self.merge_steps)
        return {"_icicle": icicle_frame(self.attribution, by=self.by, measure=self.measure,
                                        window=self.window, token=next(TOKENS))}

    def open(self, args: Mapping[str, Any]) -> dict[str, Any]:
        by, measure = args.get("by", "annotation"), args.get("measure", "gpu")
        if by not in BY or measure not in ("gpu", "cpu"):
            raise RequestError(f"by must be one of {BY}, measure 'gpu' or 'cpu'")
        return self.show(by, measure=measure)

    def close(self) -> dict[str, Any]:
        return self.show("")

    def apply(self, name: str, value: Any) -> dict[str, Any]:
        if name == "_icicle_pick":
            return self.pick(value)
        if name == "icicle_by":
            if value not in ("", *BY):
                raise RequestError(f"icicle_by must be one of {BY} or '', not {value!r}")
            if value == self.by:
                return {}
            self.by = value
            return {"icicle_by": value, **self.draw()}
        if value not in ("gpu", "cpu"):
            raise RequestError(f"icicle_measure must be 'gpu' or 'cpu', not {value!r}")
        if value == self.measure:
            return {}
        self.measure = value
        return {"icicle_measure": value, **self.draw(recompute=False)}

    def pick(self, value: Any) -> dict[str, Any]:
        """A click on a node: select and highlight every slice and kernel under it."""
        att = self.attribution
        try:
            row = int((value or {})["node"])
        except (KeyError, TypeError, ValueError):
            raise RequestError("_icicle_pick must be {node: n, token}") from None
        if att is None or not 0 <= row < len(att.tree):
            return {}
        session = self.session
        pos = np.unique(session.data.positions(att.events_under(row)))
        return session.select(pos, highlight=True)

    def selection_changed(self, sel: Any) -> dict[str, Any]:
        rng = (sel or {}).get("range")
        window = (float(min(rng)), float(max(rng))) if isinstance(rng, list) and len(rng) == 2 else None
        if self.by and window != self.window and (window is not None or not sel):
            self.window = window
            return self.draw()
        return {}
