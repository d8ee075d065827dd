"""The ``_table`` command's launch rows (``"kind": "launches"``): for a selection
holding device kernels (or their launch calls), one row per kernel of
``trace.launches`` -- the kernel, the runtime call that launched it, the
``cpu_op`` that issued that call and the launch delay (kernel start minus
launch end, ns) -- sorted and paged like the events table."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from . import pager
from .codec import encode_frame

#: ``sort`` keys of the launch rows -> columns of ``trace.launches``
LAUNCH_SORT = {"delay": "delay", "start": "kernel_start", "dur": "kernel_dur", "name": "name"}


def launch_rows_of(launches: pd.DataFrame, ids: np.ndarray) -> np.ndarray:
    """Row positions of ``trace.launches`` whose kernel or launch call is among the event ``ids``."""
    if len(launches) == 0 or len(ids) == 0:
        return np.zeros(0, np.int64)
    kernel = launches["kernel"].to_numpy(np.int64)
    launch = launches["launch"].to_numpy(np.int64, na_value=-1)
    return np.flatnonzero(np.isin(kernel, ids) | np.isin(launch, ids))


def _text_codes(values: pd.Series) -> tuple[np.ndarray, list[str]]:
    codes, uniques = pd.factorize(values.astype(object).where(values.notna(), None))
    return codes.astype(np.int32), [str(u) for u in uniques]


def launch_page(launches: pd.DataFrame, rows: np.ndarray, event_track: Any, positions: Any,
                request: pager.PageRequest) -> tuple[dict[str, Any], bytes]:
    """One sorted page of launch rows: the reply fields and the frame.

    Frame columns: ``kernel`` and ``launch`` (event ids, i32; -1 when the launch is outside the
    trace), ``cpu_op`` (i32, -1 when none), ``name``/``launch_name``/``cpu_op_name`` (i32 into
    ``meta.names``/``meta.launch_names``/``meta.cpu_op_names``, -1 when none), ``start``
    (kernel start), ``dur`` (kernel duration), ``delay`` (f64, NaN when unknown), ``track``
    (u32, the kernel's track)."""
    part = launches.iloc[rows]
    column = LAUNCH_SORT[request.sort]
    key = pager.name_key(part["name"]) if column == "name" \
        else part[column].to_numpy(np.float64, na_value=np.nan)
    # NaN (unknown delay) last either way, ties by kernel id
    page = part.iloc[pager.page(key, part["kernel"].to_numpy(np.int64), request)]
    names, name_u = _text_codes(page["name"])
    lnames, lname_u = _text_codes(page["launch_name"])
    cnames, cname_u = _text_codes(page["cpu_op_name"])
    kernel = page["kernel"].to_numpy(np.int64)
    frame = encode_frame({
        "kernel": kernel.astype(np.int32),
        "launch": page["launch"].to_numpy(np.int64, na_value=-1).astype(np.int32),
        "cpu_op": page["cpu_op"].to_numpy(np.int64, na_value=-1).astype(np.int32),
        "name": names, "launch_name": lnames, "cpu_op_name": cnames,
        "start": page["kernel_start"].to_numpy(np.float64),
        "dur": page["kernel_dur"].to_numpy(np.float64),
        "delay": page["delay"].to_numpy(np.float64, na_value=np.nan),
        "track": np.asarray(event_track)[positions(kernel)].astype(np.uint32) if len(kernel)
        else np.zeros(0, np.uint32),
    }, {"names": name_u, "launch_names": lname_u, "cpu_op_names": cname_u})
    delay = part["delay"].to_numpy(np.float64, na_value=np.nan)
    known = delay[~np.isnan(delay)]
    reply = {"kind": "launches", "rows": len(page), "count": len(part),
             "total": float(known.sum()), "mean": float(known.mean()) if len(known) else None,
             "self": 0.0}
    return reply, frame
