"""Chrome traces from PyTorch / Kineto: device activity and the launches behind it.

Device activity (``trace.launches`` rows) is every ``X`` slice whose ``cat`` is
one of `DEVICE_CATEGORIES`: CUDA / ROCm kernels, memcpy and memset
(``kernel``, ``gpu_memcpy``, ``gpu_memset``; older Kineto ``Kernel``,
``Memcpy``, ``Memset``; MTIA ``mtia_ccp_events``).  Each is joined to the
runtime / driver call that launched it (``cat`` in
`LAUNCH_CATEGORIES`: ``cuda_runtime``, ``cuda_driver``, older
``Runtime``, ``mtia_runtime``, ...) by the ``correlation`` arg, and only by
it: several runtime calls can share the µs of a launch
(``cudaFuncSetAttribute`` next to ``cudaLaunchKernel``), one
``cudaGraphLaunch`` launches many kernels (they share its correlation), and the
flow arrows of real files are incomplete (Kineto writes an ``f`` without ``s``
for launches it does not recognise).  The category of the launch decides, not
the process it sits on (MTIA writes some runtime events on the device process).

Types (``launches["type"]``): ``memcpy`` / ``memset`` from the category (or a
kernel named ``Memcpy ...`` / ``Memset ...``), ``dma`` for MTIA's DMA
transfers (a device activity named ``dma...``, e.g. ``dma_request``: memory
traffic, as HTA's ``MEMORY_KERNEL_RE``), ``communication`` for NCCL / RCCL
kernels (name starting with ``nccl`` or ``rccl``, case-insensitive, or
containing ``gloo:``), else ``kernel``: the name rules of
`jupyter_profview.kinds`.

Device lanes: a process with device activity is labelled ``GPU <index>`` (the
index from Kineto's ``process_labels`` ``GPU n``, else the ``device`` arg of its
events, else its pid), followed by `` · <name>`` from the file's
``deviceProperties`` (``NVIDIA `` dropped); its threads are streams
(``stream <tid>`` where the file gives no name); device groups come after the
host processes.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from ...kinds import COMMUNICATION_KERNEL, DMA_ACTIVITY, code_mask
from ...model import KERNEL_TYPES, empty_launches
from ...nesting import nearest_ancestor
from .columns import ChromeColumns
from .slices import Labels

DEVICE_CATEGORIES = {
    "kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset",
    "Kernel": "kernel", "Memcpy": "memcpy", "Memset": "memset", "mtia_ccp_events": "kernel",
}
LAUNCH_CATEGORIES = frozenset({
    "cuda_runtime", "cuda_driver", "Runtime", "mtia_runtime", "xpu_runtime",
    "privateuse1_runtime", "privateuse1_driver",
})
_GPU_LABEL = re.compile(r"^GPU (\d+)$")




def device_indices(pid_codes: np.ndarray, device_arg: np.ndarray, tokens: list[str],
                   process_labels: dict[int, str]) -> dict[int, int]:
    """GPU index of each pid code holding device activity (see the module doc)."""
    out: dict[int, int] = {}
    for pid in np.unique(pid_codes).tolist():
        match = _GPU_LABEL.match(process_labels.get(pid, ""))
        if match:
            out[pid] = int(match.group(1))
            continue
        values = device_arg[(pid_codes == pid) & ~np.isnan(device_arg)]
        if len(values):
            uniq, counts = np.unique(values, return_counts=True)
            out[pid] = int(uniq[np.argmax(counts)])
        elif pid >= 0 and tokens[pid].lstrip("-").isdigit():
            out[pid] = int(tokens[pid])
        else:
            out[pid] = -1
    return out


def gpu_label(index: int, device_properties: Any) -> str:
    """``GPU 3 · A100-SXM4-40GB`` (``GPU ?`` for an unknown index)."""
    label = f"GPU {index}" if index >= 0 else "GPU ?"
    if isinstance(device_properties, list):
        for prop in device_properties:
            if isinstance(prop, dict) and prop.get("id") == index and isinstance(prop.get("name"), str):
                name = prop["name"].removeprefix("NVIDIA ").strip()
                return f"{label} · {name}" if name else label
    return label


def kernel_types(category: np.ndarray, names: pd.Categorical) -> np.ndarray:
    """int8 codes into `KERNEL_TYPES` from each activity's base type
    (``category``: strings from `DEVICE_CATEGORIES`) and name."""
    cats = pd.Index(names.categories.astype(str))
    comm = np.asarray([COMMUNICATION_KERNEL.search(n) is not None for n in cats], bool)
    memcpy = np.asarray(cats.str.startswith("Memcpy"), bool)
    memset = np.asarray(cats.str.startswith("Memset"), bool)
    dma = np.asarray([DMA_ACTIVITY.match(n) is not None for n in cats], bool)
    codes = np.asarray(names.codes)
    out = np.full(len(codes), KERNEL_TYPES.index("kernel"), np.int8)
    out[(category == "memcpy") | memcpy[codes]] = KERNEL_TYPES.index("memcpy")
    out[(category == "memset") | memset[codes]] = KERNEL_TYPES.index("memset")
    out[(category == "kernel") & dma[codes]] = KERNEL_TYPES.index("dma")
    out[(category == "kernel") & comm[codes]] = KERNEL_TYPES.index("communication")
    return out


def build_launches(events: pd.DataFrame, kernel_ids: np.ndarray, base_type: np.ndarray,
                   stream: np.ndarray, device: np.ndarray) -> tuple[pd.DataFrame, dict[str, int]]:
    """The ``launches`` table (schema in `jupyter_profview.model`) for
    the device activity ``kernel_ids`` (with their base type, ``stream`` and
    ``device`` as float64, NaN = unknown), and counts for ``metadata["gpu"]``."""
    if len(kernel_ids) == 0:
        return empty_launches(), {"device_activities": 0, "linked": 0, "without_correlation": 0,
                                  "launch_not_in_trace": 0, "duplicate_launch_correlations": 0}
    order = np.argsort(kernel_ids, kind="stable")
    kernel_ids, base_type, stream, device = kernel_ids[order], base_type[order], stream[order], device[order]
    corr_col = events["correlation"].array
    corr_valid = ~np.asarray(corr_col.isna())
    corr = np.asarray(corr_col.to_numpy(np.int64, na_value=0))
    category = events["category"].array
    is_launch = code_mask(category.categories, category.codes, LAUNCH_CATEGORIES.__contains__) & corr_valid
    launch_ids = np.flatnonzero(is_launch)  # in start order: the first call of a correlation wins
    launch_corr = pd.Index(corr[launch_ids])
    duplicates = int(launch_corr.duplicated().sum())
    first = ~launch_corr.duplicated()
    lookup = pd.Index(launch_corr[first])
    k_corr_valid = corr_valid[kernel_ids]
    pos = lookup.get_indexer(corr[kernel_ids])
    linked = (pos >= 0) & k_corr_valid
    first_ids = np.append(launch_ids[first], -1)  # slot -1: no launch
    launch = np.where(linked, first_ids[pos], -1)
    start = events["start"].to_numpy()
    dur = events["dur"].to_numpy()
    safe = np.maximum(launch, 0)
    launch_start, launch_dur = start[safe], dur[safe]
    kernel_start, kernel_dur = start[kernel_ids], dur[kernel_ids]
    delay = np.maximum(kernel_start - (launch_start + launch_dur), 0)
    cpu_op = nearest_ancestor(events, launch, "cpu_op")
    names = events["name"].array
    kernel_names = _taken_or_na(names, kernel_ids, np.ones(len(kernel_ids), bool))
    table = pd.DataFrame({
        "kernel": kernel_ids.astype(np.int64),
        "launch": _nullable(launch, linked),
        "correlation": _nullable(corr[kernel_ids], k_corr_valid),
        "name": kernel_names,
        "type": pd.Categorical.from_codes(kernel_types(base_type, kernel_names),
                                          categories=pd.Index(list(KERNEL_TYPES))),
        "gpu": _taken_or_na(events["process"].array, kernel_ids, np.ones(len(kernel_ids), bool)),
        "device": _nullable(np.nan_to_num(device).astype(np.int64), ~np.isnan(device)),
        "stream": _nullable(np.nan_to_num(stream).astype(np.int64), ~np.isnan(stream)),
        "kernel_start": kernel_start,
        "kernel_dur": kernel_dur,
        "launch_start": _nullable(launch_start, linked),
        "launch_dur": _nullable(launch_dur, linked),
        "delay": _nullable(delay, linked),
        "launch_name": _taken_or_na(names, launch, linked),
        "cpu_op": _nullable(cpu_op, cpu_op >= 0),
        "cpu_op_name": _taken_or_na(names, cpu_op, cpu_op >= 0),
    }, copy=False)  # fresh arrays: no copy into consolidated blocks
    stats = {
        "device_activities": len(table), "linked": int(linked.sum()),
        "without_correlation": int((~k_corr_valid).sum()),
        "launch_not_in_trace": int((k_corr_valid & ~linked).sum()),
        "duplicate_launch_correlations": duplicates,
    }
    return table, stats


def _nullable(values: np.ndarray, valid: np.ndarray) -> pd.arrays.IntegerArray:
    return pd.arrays.IntegerArray(np.where(valid, values, 0).astype(np.int64), ~np.asarray(valid, bool))


def _taken_or_na(values: Any, ids: np.ndarray, valid: np.ndarray) -> pd.Categorical[Any]:
    """The categorical ``values`` at ``ids`` (<NA> where not ``valid``), with
    only the categories used (as ``remove_unused_categories``, by counting)."""
    codes = np.where(valid, np.asarray(values.codes)[np.maximum(ids, 0)].astype(np.int64), -1)
    has = codes >= 0
    used = np.bincount(codes[has], minlength=len(values.categories)) > 0
    new_code = np.cumsum(used) - 1
    return pd.Categorical.from_codes(np.where(has, new_code[np.maximum(codes, 0)], -1),
                                     dtype=pd.CategoricalDtype(values.categories[used], values.ordered))


class DeviceRows:
    """The device activity records (``dev_rec``: ``X`` records of a device
    category): their stream, device and base type, taken before the columns
    are dropped; sets the device labels of ``labels`` (before ``finish``)."""

    def __init__(self, c: ChromeColumns, dev_rec: np.ndarray, labels: Labels) -> None:
        self.positions = np.zeros(0, np.int64)  # positions of dev_rec among the events input rows
        pid = c.pid_code[dev_rec]
        self.device = c.numeric_args["device"].take(dev_rec)
        self.stream = c.numeric_args["stream"].take(dev_rec)
        no_stream = np.flatnonzero(np.isnan(self.stream))
        if len(no_stream):  # Kineto's device tid is the stream
            tid = c.tid_code[dev_rec[no_stream]]
            self.stream[no_stream] = [float(c.tokens[t]) if t >= 0 and c.tokens[t].lstrip("-").isdigit()
                                      else np.nan for t in tid.tolist()]
        base = np.asarray([DEVICE_CATEGORIES.get(k, "") for k in c.cats] + [""], dtype=str)
        self.base_type = base[c.cat_code[dev_rec]]
        index = device_indices(pid, self.device, c.tokens, labels.process_labels)
        props = c.top_level.get("deviceProperties")
        labels.devices = {p: (gpu_label(k, props), k) for p, k in index.items()}
        width = len(c.tokens) + 2
        pairs = pd.unique(pid.astype(np.int64) * width + (c.tid_code[dev_rec].astype(np.int64) + 1))
        labels.streams = {(int(k // width), int(k % width) - 1) for k in pairs.tolist()}
        no_device = np.flatnonzero(np.isnan(self.device))
        if len(no_device):
            self.device[no_device] = [index[p] if index[p] >= 0 else np.nan for p in pid[no_device].tolist()]

    def launches(self, events: pd.DataFrame, event_of_row: np.ndarray) -> tuple[pd.DataFrame, dict[str, int]]:
        """``build_launches`` of these records; ``event_of_row``: the event id of
        each events input row (-1: none)."""
        ids = event_of_row[self.positions] if len(self.positions) else np.zeros(0, np.int64)
        keep = ids >= 0
        return build_launches(events, ids[keep], self.base_type[keep], self.stream[keep],
                                  self.device[keep])
