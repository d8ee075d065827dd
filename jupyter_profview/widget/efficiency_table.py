"""The ``_table`` command's efficiency rows (``"kind": "efficiency"``): the selection's ops of
`jupyter_profview.analysis.op_efficiency` -- the op, its shapes, the GPU time of its
kernels, the achieved TFLOP/s, the share of the device's peak and what bounds it -- sorted and
paged like the events table.  An op is the selection's when it is selected itself, or when one
of its kernels is (the kernel's issuing ``cpu_op`` or any op above it)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..nesting import ancestor_mask
from . import pager
from .codec import encode_frame

#: ``sort`` keys of the efficiency rows -> columns of ``op_efficiency(trace)``
EFFICIENCY_SORT = {"dur": "gpu_time", "start": "start", "name": "name", "tflops": "tflops",
                   "pct": "pct_of_peak"}
BOUNDS = ("", "memory", "compute")


def efficiency_rows_of(eff: pd.DataFrame, events: pd.DataFrame, launches: pd.DataFrame,
                       ids: np.ndarray) -> np.ndarray:
    """Row positions of ``eff`` that the selected event ``ids`` pick (see the module doc)."""
    if len(eff) == 0 or len(ids) == 0:
        return np.zeros(0, np.int64)
    ops = set(ids.tolist())
    kernel = launches["kernel"].to_numpy(np.int64)
    issued = launches["cpu_op"].to_numpy(np.int64, na_value=-1)[np.isin(kernel, ids)]
    issued = issued[issued >= 0]
    ops.update(issued.tolist())  # ... and every op above it (the one ancestor walk, to the root)
    ops.update(np.flatnonzero(ancestor_mask(events["parent"].to_numpy(np.int64), issued)).tolist())
    return np.flatnonzero(eff["event"].isin(list(ops)).to_numpy())


def efficiency_page(eff: pd.DataFrame, rows: np.ndarray, events: pd.DataFrame, event_track: Any,
                    positions: Any, request: pager.PageRequest) -> tuple[dict[str, Any], bytes]:
    """One sorted page of efficiency rows: the reply fields and the frame.

    Frame columns: ``id`` (the op's event id, i32), ``name`` and ``shapes`` (i32 into
    ``meta.names`` / ``meta.shapes``), ``start`` (the op's start), ``dur`` (GPU time of its
    kernels), ``flops``, ``tflops``, ``pct`` (% of the device's peak; NaN when unknown), all f64;
    ``bound`` (u8: 0 unknown, 1 memory, 2 compute), ``track`` (u32, the op's track)."""
    part = eff.iloc[rows].copy()
    part["start"] = events["start"].reindex(part["event"]).to_numpy(np.float64)
    column = EFFICIENCY_SORT[request.sort]
    key = pager.name_key(part["name"]) if column == "name" \
        else part[column].to_numpy(np.float64, na_value=np.nan)
    page = part.iloc[pager.page(key, part["event"].to_numpy(np.int64), request)]
    names, name_u = pd.factorize(page["name"].astype(str))
    shapes, shape_u = pd.factorize(page["shapes"].astype(str))
    ids = page["event"].to_numpy(np.int64)
    bound = np.asarray([BOUNDS.index(b) if b in BOUNDS else 0 for b in page["bound"].fillna("")], np.uint8)
    frame = encode_frame({
        "id": ids.astype(np.int32), "name": names.astype(np.int32), "shapes": shapes.astype(np.int32),
        "start": page["start"].to_numpy(np.float64), "dur": page["gpu_time"].to_numpy(np.float64),
        "flops": page["flops"].to_numpy(np.float64), "tflops": page["tflops"].to_numpy(np.float64),
        "pct": page["pct_of_peak"].to_numpy(np.float64), "bound": bound,
        "track": np.asarray(event_track)[positions(ids)].astype(np.uint32) if len(ids)
        else np.zeros(0, np.uint32),
    }, {"names": [str(n) for n in name_u], "shapes": [str(s) for s in shape_u]})
    gpu_time = float(part["gpu_time"].sum())
    reply = {"kind": "efficiency", "rows": len(page), "count": len(part), "total": gpu_time,
             "flops": float(part["flops"].sum()),
             "tflops": float(part["flops"].sum() / gpu_time / 1e3) if gpu_time > 0 else None, "self": 0.0}
    return reply, frame
