"""The synchronisation edges' sources: Kineto's `cuda_sync` events read as (waiting CPU call,
what it waited for), and the stream keys they are matched on."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...derived import enqueued
from ...kinds import SYNC_CATEGORY
from ...model import Trace
from ..columns import among, gpu_labels, on_device, thread_keys


def stream_keys(la: pd.DataFrame) -> np.ndarray:
    """One int64 per row of `trace.launches`: (device label code, stream)."""
    gpu = pd.Categorical(la["gpu"]).codes.astype(np.int64)
    stream = la["stream"].to_numpy(np.int64, na_value=-1)
    return (gpu << 32) | (stream & 0xFFFFFFFF)


def _int(value: Any) -> int:
    """An integer arg of the file, -1 when it is missing or not a number."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else -1


def key_of_stream(trace: Trace, gpu: str, stream: int) -> int:
    """The [`stream_keys`][jupyter_profview.analysis.critical_path.syncs.stream_keys] key of a
    device label and a stream number."""
    labels = gpu_labels(trace)
    code = labels.index(gpu) if gpu in labels else -1
    return (code << 32) | (stream & 0xFFFFFFFF)


def sync_events(trace: Trace, local: dict[int, int], la: pd.DataFrame,
                stream_key: np.ndarray) -> dict[str, Any]:
    """The `cuda_sync` events whose waiting CPU call is a graph node, as columns (`stream` a
    stream key, `gpu` a device code), and the kernel -> kernel waits of `Stream Wait Event`
    (`wait_edges`: row of launches -> row of launches)."""
    ev = trace.events
    out: dict[str, Any] = {"end": [], "kind": [], "call": [], "stream": [], "gpu": [], "recorded_row": [],
                           "wait_edges": {}}
    is_sync = among(ev["category"], (SYNC_CATEGORY,))
    if not is_sync.any() or "correlation" not in ev.columns:
        return out
    corr = ev["correlation"]
    runtime = among(ev["category"], ("cuda_runtime", "cuda_driver"))
    calls = ev[~on_device(trace) & runtime & corr.notna().to_numpy()]
    call_of = dict(zip(calls["correlation"].astype(np.int64).tolist(), calls.index.tolist(), strict=True))
    records = calls[among(calls["name"], ("cudaEventRecord",))]
    record_corr = records["correlation"].astype(np.int64).tolist()
    record_time = dict(zip(record_corr, records["start"].tolist(), strict=True))
    # the launches that enqueue, per stream by launch start: an event is recorded after the last one
    enq = np.flatnonzero(enqueued(la))
    lstart = la["launch_start"].to_numpy(np.int64, na_value=0)
    enq = enq[np.lexsort((lstart[enq], stream_key[enq]))]
    keys = stream_key[enq]
    bounds = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1], True])
    per_stream = {int(keys[a]): (lstart[enq[a:b]], enq[a:b])
                  for a, b in zip(bounds[:-1], bounds[1:], strict=True)} if len(keys) else {}
    launch_ev = la["launch"].to_numpy(np.int64, na_value=-1)

    keys_of = thread_keys(ev)

    def thread(ids: Any) -> np.ndarray:
        return keys_of[ev.index.get_indexer(pd.Index(np.asarray(ids, np.int64)))]

    def recorded_after(key: int, record_corr: int) -> int:
        if record_corr not in record_time or key not in per_stream:
            return -1
        times, rows = per_stream[key]
        i = int(np.searchsorted(times, record_time[record_corr], side="right")) - 1
        return int(rows[i]) if i >= 0 else -1

    labels = gpu_labels(trace)
    for pos in np.flatnonzero(is_sync).tolist():
        event_id = int(ev.index[pos])
        args = trace.args(event_id)
        kind = str(args.get("cuda_sync_kind", ev["name"].iloc[pos]))
        c = args.get("correlation")
        call_id = call_of.get(int(c), -1) if isinstance(c, (int, float)) else -1
        stream_arg, wait_arg, record_arg = (args.get(k, -1) for k in (
            "stream", "wait_on_stream", "wait_on_cuda_event_record_corr_id"))
        call = local.get(call_id, -1)
        gpu = str(ev["process"].iloc[pos])
        key = key_of_stream(trace, gpu, _int(stream_arg))
        src_row = -1
        if kind in ("Event Sync", "Stream Wait Event"):
            src_row = recorded_after(key_of_stream(trace, gpu, _int(wait_arg)), _int(record_arg))
        if kind == "Stream Wait Event":
            if src_row < 0 or call_id < 0 or key not in per_stream:
                continue
            # the next launch on the waiting stream from the same CPU thread after the wait call
            times, rows = per_stream[key]
            later = np.flatnonzero(times >= ev["start"].to_numpy(np.int64)[ev.index.get_loc(call_id)])
            if len(later):
                same = thread(launch_ev[rows[later]]) == thread([call_id])[0]
                if same.any():
                    out["wait_edges"][int(rows[later[np.argmax(same)]])] = src_row
            continue
        if call < 0 or kind not in ("Stream Sync", "Context Sync", "Event Sync"):
            continue
        out["end"].append(int(ev["start"].iloc[pos] + ev["dur"].iloc[pos]))
        out["kind"].append(kind)
        out["call"].append(call)
        out["stream"].append(key)
        out["gpu"].append(labels.index(gpu) if gpu in labels else -1)
        out["recorded_row"].append(src_row)
    return out
