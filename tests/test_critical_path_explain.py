"""`CriticalPath.explain()` tells an event's own time apart from the gap charged to it: a 1 µs
memcpy followed by 40 ms of its stream waiting is not "a 40 ms memcpy"."""

from __future__ import annotations

import json
from pathlib import Path

import jupyter_profview as profview
from jupyter_profview.analysis import critical_path


def test_a_gap_is_named_apart_from_the_event_before_it(tmp_path: Path) -> None:
    def x(name: str, cat: str, ts: float, dur: float, pid: int = 1, tid: int = 1, **args: object) -> dict:
        return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "pid": pid, "tid": tid,
                "args": args}

    events = [
        x("aten::copy_", "cpu_op", 0, 12),
        x("cudaMemcpyAsync", "cuda_runtime", 1, 5, correlation=1),
        x("Memcpy DtoH (Device -> Pinned)", "gpu_memcpy", 10, 1, pid=0, tid=7, device=0, stream=7,
          correlation=1),
        x("aten::relu", "cpu_op", 6, 5),
        x("cudaLaunchKernel", "cuda_runtime", 7, 3, correlation=2),  # queued behind the memcpy
        x("relu_kernel", "kernel", 40_011, 20, pid=0, tid=7, device=0, stream=7, correlation=2),
    ]
    path = tmp_path / "gap.json"
    path.write_text(json.dumps({"traceEvents": events}))
    trace = profview.load(path)
    cp = critical_path(trace, annotation=None)
    memcpy = int(trace.events.index[trace.events["name"] == "Memcpy DtoH (Device -> Pinned)"][0])
    # the gap from the memcpy's end (11 µs) to the kernel's start (40,011 µs), charged to the memcpy
    assert cp.waits_after() == {memcpy: 40_000_000}
    on_path = int(cp.events.set_index("event").loc[memcpy, "on_path"])
    assert on_path == 40_000_000 + 1_000
    text = cp.explain()
    assert "Memcpy DtoH (Device -> Pinned) (1 µs itself, then 40 ms of its stream waiting" in text
