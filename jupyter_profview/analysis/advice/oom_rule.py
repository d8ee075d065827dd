"""The ``out_of_memory`` rule of advise: each ``oom`` entry of a CUDA memory snapshot, explained
by `analysis.allocator.oom` (fragmentation or capacity, and what to try)."""

from __future__ import annotations

import numpy as np

from ..allocator import oom
from .facts import Facts
from .rules import Finding


def out_of_memory(f: Facts) -> list[Finding]:
    """The snapshot's ``oom`` entries in the window, one finding per device; time = the window
    (the run stopped there: all of it is at stake).  No finding for a trace without an allocator
    trace (not a snapshot) or without an OOM."""
    ev = f.trace.events
    names = ev["name"].astype(str).to_numpy()
    start = ev["start"].to_numpy(np.int64)
    hit = np.flatnonzero((names == "oom") & (start >= f.window[0]) & (start <= f.window[1]))
    if len(hit) == 0 or f.trace.format != "torch_cuda_snapshot":
        return []
    table = oom(f.trace)
    table = table[(table["time"] >= f.window[0]) & (table["time"] <= f.window[1])]
    out = []
    for device, rows in table.groupby("device", sort=True):
        first = rows.iloc[0]
        procs = ev["process"].astype(str).to_numpy()[hit]
        out.append({
            "rule": "out_of_memory", "time": f.span, "events": hit[procs == device].tolist(),
            "device": str(device),
            "message": (f"{len(rows)} allocation(s) failed: out of memory ({first['verdict']}); the first "
                        f"asked for {int(first['requested']):,} B with {int(first['allocated']):,} B "
                        f"allocated and {int(first['reserved']):,} B reserved, the largest free block "
                        f"{int(first['largest_free']):,} B."),
            "fix": str(first["what_to_try"]),
            "verdict": first["verdict"], "top_owners": first["top_owners"],
        })
    return out
