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
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..analysis.attribution import Attribution
from .codec import encode_frame


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
