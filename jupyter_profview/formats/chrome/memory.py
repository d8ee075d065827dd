"""Chrome traces: memory from PyTorch ``[memory]`` instants and ``C`` counters.

PyTorch profiler (``profile_memory=True``) writes one ``[memory]`` instant per
allocation or free, with args ``Bytes`` (+ allocated, - freed), ``Addr``,
``Total Allocated`` and ``Total Reserved`` (bytes in use after the event),
``Device Type`` (c10 ``DeviceType``: 0 CPU, 1 CUDA, ...) and ``Device Id``.
They become

* ``memory`` rows (kind ``measured``): ``Total Allocated`` per device
  (``cpu``, ``cuda:0``...), and ``Total Reserved`` as a separate device
  ``<device> reserved`` where it is ever non-zero.  Without ``Total
  Allocated`` the curve is the running sum of ``Bytes``.
* ``allocations`` rows: a ``+Bytes`` event opens a block at (device, Addr),
  the next ``-Bytes`` event at that address frees it; frees of blocks
  allocated before the trace get ``alloc_time`` <NA>, blocks never freed
  ``free_time`` <NA>.  ``owner`` is the innermost op enclosing the allocation
  on the same thread (empty where none).

``C`` counter events become ``counters`` rows (time, process, name, series,
value), one per numeric series; counters that look like memory (TF
``timeline.py`` allocator counters: ``cat`` or ``name`` mentioning memory,
alloc, bfc, bytes, heap) are also ``memory`` rows with device ``name`` (or
``name: series`` when the series differs from the name).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ...model import Quality, empty_allocations, memory_frame
from .columns import ChromeColumns
from .slices import Labels, from_codes, token_label

DEVICE_TYPES = {
    0: "cpu", 1: "cuda", 2: "mkldnn", 3: "opengl", 4: "opencl", 5: "ideep", 6: "hip", 7: "fpga",
    8: "maia", 9: "xla", 10: "vulkan", 11: "metal", 12: "xpu", 13: "mps", 14: "meta", 15: "hpu",
    16: "ve", 17: "lazy", 18: "ipu", 19: "mtia", 20: "privateuseone",
}
BYTES_LIMIT = 2.0**62  # byte counts beyond this are clipped (they only come from corrupt files)
MEMORY_COUNTER = re.compile(r"mem|alloc|bfc|bytes|heap", re.IGNORECASE)
ALLOCATION_ARGS = ("Addr", "Bytes")  # the numeric args torch_allocations reads


def device_label(device_type: float, device_id: float) -> str:
    """``cpu``, ``cuda:0``... from PyTorch's Device Type / Device Id args."""
    if np.isnan(device_type):
        kind = "device"
    else:
        kind = DEVICE_TYPES.get(int(device_type), f"device{int(device_type)}")
    if np.isnan(device_id) or device_id < 0 or kind == "cpu":
        return kind
    return f"{kind}:{int(device_id)}"


def _as_bytes(values: object) -> np.ndarray:
    """float bytes -> int64, rounded and clipped to ±2**62."""
    return np.round(np.clip(np.asarray(values, np.float64), -BYTES_LIMIT, BYTES_LIMIT)).astype(np.int64)


class MemoryParts:
    """Accumulates memory rows from several sources, then one ``memory`` frame."""

    def __init__(self) -> None:
        self.time: list[np.ndarray] = []
        self.device: list[np.ndarray] = []  # codes into self.labels
        self.bytes: list[np.ndarray] = []
        self.labels: dict[str, int] = {}

    def add(self, time: np.ndarray, device: np.ndarray | str, nbytes: np.ndarray) -> None:
        """Rows at ``time`` of ``device`` (one label, or one per row)."""
        if isinstance(device, str):
            codes = np.full(len(time), self.labels.setdefault(device, len(self.labels)), np.int64)
        else:
            uniq, inverse = np.unique(np.asarray(device, dtype=object).astype(str), return_inverse=True)
            lookup = np.asarray([self.labels.setdefault(u, len(self.labels)) for u in uniq.tolist()],
                                np.int64)
            codes = lookup[inverse.reshape(-1)] if len(uniq) else np.zeros(0, np.int64)
        self.time.append(np.asarray(time, np.int64))
        self.device.append(codes)
        self.bytes.append(np.asarray(nbytes, np.int64))

    def frame(self) -> pd.DataFrame | None:
        if not self.time:
            return None
        names = list(self.labels)
        order = np.argsort(np.asarray(names, dtype=object)).astype(np.int64)  # sorted categories,
        rank = np.empty(len(names), np.int64)  # as pd.Categorical(labels) would have them
        rank[order] = np.arange(len(names))
        device = from_codes(rank[np.concatenate(self.device)], [names[k] for k in order.tolist()])
        return memory_frame(np.concatenate(self.time), device, np.concatenate(self.bytes), "measured")

    def times(self) -> list[np.ndarray]:
        return self.time


def torch_memory(c: ChromeColumns, records: np.ndarray, parts: MemoryParts,
                 quality: Quality) -> tuple[np.ndarray, pd.Categorical[str]]:
    """Memory rows from ``[memory]`` records; returns the records that carry an
    allocation or free (``Bytes`` != 0), time-ordered, and their device labels."""
    keys = ("Total Allocated", "Bytes", "Device Type", "Device Id", "Total Reserved")
    num = {k: c.numeric_args[k].take(records) for k in keys}
    usable = ~np.isnan(num["Total Allocated"]) | ~np.isnan(num["Bytes"])
    if not usable.all():
        quality.skipped["[memory] event without Bytes or Total Allocated"] += int((~usable).sum())
    pick = np.flatnonzero(usable)
    pick = pick[np.lexsort((records[pick], c.ts_ns[records[pick]]))]
    records = records[pick]
    num = {k: v[pick] for k, v in num.items()}
    if len(records) == 0:
        return records, from_codes(np.zeros(0, np.int64), [])
    quality.placed["memory"] += len(records)
    kind_code, kinds = pd.factorize(num["Device Type"], use_na_sentinel=False)
    id_code, ids = pd.factorize(num["Device Id"], use_na_sentinel=False)
    pair_code, pairs = pd.factorize(kind_code.astype(np.int64) * len(ids) + id_code)
    names = [device_label(kinds[p // len(ids)], ids[p % len(ids)]) for p in pairs.tolist()]
    labels, label_code = np.unique(np.asarray(names, dtype=object), return_inverse=True)
    code = label_code.reshape(-1)[pair_code]  # pairs may share a label (cpu, any id)
    time = c.ts_ns[records]
    total = num["Total Allocated"]
    delta = np.nan_to_num(num["Bytes"])
    reserved_all = num["Total Reserved"]
    for k, label in enumerate(labels.tolist()):
        pick = code == k
        curve = total[pick]
        if np.isnan(curve).any():  # no Total Allocated: running sum of Bytes
            curve = np.cumsum(delta[pick])
        parts.add(time[pick], label, _as_bytes(curve))
        reserved = reserved_all[pick]
        have = ~np.isnan(reserved)
        if have.any() and np.any(reserved[have] != 0):
            parts.add(time[pick][have], f"{label} reserved", _as_bytes(reserved[have]))
    moves = delta != 0
    return records[moves], from_codes(code[moves], labels.tolist())


def torch_allocations(c: ChromeColumns, records: np.ndarray, device: pd.Categorical[str],
                      owner: np.ndarray) -> pd.DataFrame:
    """``allocations`` (absolute times) from time-ordered ``[memory]`` records with Bytes != 0.

    ``device`` holds the records' device labels, ``owner`` the owner name of
    each (used for allocations; "" for none).  Per (device, Addr), a free
    closes the block opened by the record just before it -- if that record is
    an allocation (the latest allocation replaces an older one still open;
    NaN addresses never match); other frees are rows of their own.
    """
    if len(records) == 0:
        return empty_allocations()
    addr = c.numeric_args["Addr"].take(records)  # (ALLOCATION_ARGS)
    delta = c.numeric_args["Bytes"].take(records)
    time = c.ts_ns[records]
    labels, dev_code = np.asarray(device.categories, dtype=object), device.codes.astype(np.int64)
    order = np.lexsort((addr, dev_code))  # stable: time order within each (device, Addr)
    same_key = (dev_code[order][1:] == dev_code[order][:-1]) & (addr[order][1:] == addr[order][:-1])
    is_alloc = delta > 0
    freed = np.zeros(len(records), bool)  # frees matched to the allocation just before them
    freed[order[1:]] = same_key & is_alloc[order[:-1]] & ~is_alloc[order[1:]]
    free_time = np.where(is_alloc, 0, time)  # a free's own time unless it was matched
    matched = order[1:][freed[order[1:]]]
    opener = order[:-1][freed[order[1:]]]
    free_time[opener] = time[matched]
    has_free = ~is_alloc
    has_free[opener] = True
    rows = np.flatnonzero(~freed)
    known = ~np.isnan(addr[rows]) & (np.abs(addr[rows]) < 2.0**63)
    alloc = is_alloc[rows]
    present = np.unique(dev_code[rows])
    remap = np.zeros(len(labels), np.int64)
    remap[present] = np.arange(len(present))
    return pd.DataFrame({
        "device": from_codes(remap[dev_code[rows]], labels[present].tolist()),
        "address": pd.arrays.IntegerArray(np.where(known, addr[rows], 0).astype(np.int64), ~known),
        "bytes": _as_bytes(np.abs(delta[rows])),
        "alloc_time": pd.arrays.IntegerArray(np.where(alloc, time[rows], 0), ~alloc),
        "free_time": pd.arrays.IntegerArray(free_time[rows], ~has_free[rows]),
        "owner": pd.array(np.where(alloc, owner[rows], ""), dtype="string"),
    })


def counters(c: ChromeColumns, records: np.ndarray, labels: Labels, parts: MemoryParts,
             quality: Quality) -> pd.DataFrame | None:
    """The ``counters`` table from ``C`` records (and memory rows for memory counters)."""
    time: list[int] = []
    process: list[str] = []
    name: list[str] = []
    series: list[str] = []
    value: list[float] = []
    mem_time: list[int] = []
    mem_device: list[str] = []
    mem_bytes: list[int] = []
    for i in records.tolist():
        args = c.args(i)
        numbers = [(k, v) for k, v in args.items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not numbers:
            quality.skipped["counter 'C' without numeric values"] += 1
            continue
        quality.placed["counters"] += 1
        label = c.names[c.name_code[i]] if c.name_code[i] >= 0 else ""
        if c.id_code[i] >= 0:
            label = f"{label} {token_label(c.tokens[c.id_code[i]])}"
        cat = c.cats[c.cat_code[i]] if c.cat_code[i] >= 0 else ""
        is_memory = bool(MEMORY_COUNTER.search(label) or MEMORY_COUNTER.search(cat))
        proc = labels.process_label(int(c.pid_code[i]))
        ts = int(c.ts_ns[i])
        for key, v in numbers:
            time.append(ts)
            process.append(proc)
            name.append(label)
            series.append(key)
            value.append(float(v))
            if is_memory:
                mem_time.append(ts)
                mem_device.append(label if key == label else f"{label}: {key}")
                mem_bytes.append(int(_as_bytes(v)))
    if mem_time:
        parts.add(np.asarray(mem_time), np.asarray(mem_device, dtype=object), np.asarray(mem_bytes))
    if not time:
        return None
    frame = pd.DataFrame({
        "time": np.asarray(time, np.int64),
        "process": pd.Categorical(process),
        "name": pd.Categorical(name),
        "series": pd.Categorical(series),
        "value": np.asarray(value, np.float64),
    })
    return frame.sort_values(["name", "series", "time"], kind="stable").reset_index(drop=True)
