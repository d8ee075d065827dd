"""The CUDA caching allocator's view of a memory snapshot (``torch_cuda_snapshot`` traces):
segments and blocks at any time, fragmentation over time, and why each out-of-memory happened.

The state is replayed from the snapshot's own record: its segments and blocks at the end, and
the allocator trace undone back to its start, then applied forward (``alloc`` / ``free_completed``
add and remove an allocation at ``addr``; ``segment_alloc`` / ``segment_map`` and
``segment_free`` / ``segment_unmap`` a segment).  A free block is a gap between allocations
inside a segment (the allocator merges free neighbours).  Per device:

* `allocator_state` -- every block at a time: segment, address, size, ``allocated`` / ``free``,
  owner and frames of an allocation.
* `fragmentation` -- over time: allocated, reserved, ``reserved - allocated`` and the largest
  free block.
* `oom` -- one row per ``oom`` entry: the request, allocated, reserved, free inside reserved
  segments, the largest free block, the device's free memory (``device_free``, as the
  allocator read it), the verdict and what to try.

Verdict: ``fragmentation`` when the free memory inside reserved segments would hold the request
but no free block is large enough; ``capacity`` when live memory itself is too large (the
request does not fit in the free memory of the reserved segments).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfviewError
from ..formats.snapshot_tables import ALLOCATOR_KEY
from ..model import Trace

__all__ = ["allocator_state", "fragmentation", "oom"]

ALLOC, FREE_REQUESTED, FREE_COMPLETED, SEG_ALLOC, SEG_FREE, SEG_MAP, SEG_UNMAP, OOM = range(8)
MIB = 1 << 20


def _raw(trace: Trace) -> dict[str, Any]:
    raw = trace._derived.get(ALLOCATOR_KEY)
    if raw is None:
        raise ProfviewError(
            "not a CUDA memory snapshot: the allocator's view needs the segments and "
            "the allocator trace of torch.cuda.memory._dump_snapshot",
            source=trace.format,
            expected="a torch_cuda_snapshot trace",
        )
    return raw  # type: ignore[no-any-return]


class _Replay:
    """One device's segments {address: size} and allocations {address: (size, stack)}, moved
    along the trace entry by entry."""

    def __init__(self, raw: dict[str, Any], device: int) -> None:
        e = raw["entries"]
        self.idx = np.flatnonzero(e["device"] == device)
        self.action = e["action"][self.idx].tolist()
        self.addr = e["addr"][self.idx].tolist()
        self.has_addr = e["has_addr"][self.idx].tolist()
        self.size = e["size"][self.idx].tolist()
        self.stack = e["stack"][self.idx].tolist()
        self.time = e["time"][self.idx].tolist()
        self.free = e["device_free"][self.idx].tolist()
        s, b = raw["segments"], raw["blocks"]
        self.segments: dict[int, int] = {}
        self.allocs: dict[int, tuple[int, int]] = {}
        first = np.concatenate([[0], np.cumsum(s["nblocks"])])
        for k in np.flatnonzero(s["device"] == device).tolist():
            self.segments[int(s["address"][k])] = int(s["total"][k])
            for j in range(int(first[k]), int(first[k + 1])):
                if b["state"][j] in ("active_allocated", "active_awaiting_free", "active_pending_free"):
                    self.allocs[int(b["address"][j])] = (int(b["size"][j]), int(b["stack"][j]))
        # the allocation each free_completed ends (its stack), to undo the free
        self.alloc_stack: dict[int, int] = {}
        open_: dict[int, int] = {}
        for k, (a, addr, ok) in enumerate(zip(self.action, self.addr, self.has_addr, strict=True)):
            if ok and a == ALLOC:
                open_[addr] = self.stack[k]
            elif ok and a == FREE_COMPLETED and addr in open_:
                self.alloc_stack[k] = open_.pop(addr)
        for k in range(len(self.action) - 1, -1, -1):  # back to the start
            self._apply(k, undo=True)
        self.pos = 0  # entries applied

    def _apply(self, k: int, undo: bool = False) -> None:
        a, addr, size = self.action[k], self.addr[k], self.size[k]
        if not self.has_addr[k]:
            return
        if a == ALLOC:
            if undo:
                self.allocs.pop(addr, None)
            else:
                self.allocs[addr] = (size, self.stack[k])
        elif a == FREE_COMPLETED:
            if undo:
                self.allocs[addr] = (size, self.alloc_stack.get(k, self.stack[k]))
            else:
                self.allocs.pop(addr, None)
        elif a in (SEG_ALLOC, SEG_MAP):
            if undo:
                self.segments.pop(addr, None)
            else:
                self.segments[addr] = size
        elif a in (SEG_FREE, SEG_UNMAP):
            if undo:
                self.segments[addr] = size
            else:
                self.segments.pop(addr, None)

    def advance(self, upto: int) -> None:
        """Apply the entries before position ``upto``."""
        while self.pos < upto:
            self._apply(self.pos)
            self.pos += 1

    def blocks(self) -> list[tuple[int, int, int, int | None]]:
        """(segment, address, size, stack or None for a free block) of every block."""
        out: list[tuple[int, int, int, int | None]] = []
        allocs = sorted(self.allocs.items())
        starts = [a for a, _ in allocs]
        for seg, total in sorted(self.segments.items()):
            at, end = seg, seg + total
            i = int(np.searchsorted(starts, seg)) if starts else 0
            while i < len(allocs) and allocs[i][0] < end:
                addr, (size, stack) = allocs[i]
                if addr > at:
                    out.append((seg, at, addr - at, None))
                out.append((seg, addr, size, stack))
                at = max(at, addr + size)
                i += 1
            if at < end:
                out.append((seg, at, end - at, None))
        return out

    def numbers(self) -> dict[str, int]:
        allocated = sum(s for s, _ in self.allocs.values())
        reserved = sum(self.segments.values())
        largest = max((size for _, _, size, stack in self.blocks() if stack is None), default=0)
        return {
            "allocated": allocated,
            "reserved": reserved,
            "free_in_reserved": reserved - allocated,
            "largest_free": largest,
        }


def _devices(raw: dict[str, Any]) -> list[int]:
    return sorted(set(raw["entries"]["device"].tolist()) | set(raw["segments"]["device"].tolist()))


def allocator_state(trace: Trace, time: int, device: int | None = None) -> pd.DataFrame:
    """Every segment's blocks after the trace entries at or before ``time`` (the trace's unit):
    ``device``, ``segment``, ``address``, ``size``, ``state`` (``allocated`` / ``free``),
    ``owner`` and ``frames`` (innermost first) of allocations."""
    raw = _raw(trace)
    rows = []
    for d in [device] if device is not None else _devices(raw):
        r = _Replay(raw, d)
        r.advance(int(np.searchsorted(np.asarray(r.time, np.int64), time, side="right")))
        for seg, addr, size, stack in r.blocks():
            frames = raw["stacks"][stack] if stack is not None else []
            rows.append(
                (
                    f"cuda:{d}",
                    seg,
                    addr,
                    size,
                    "free" if stack is None else "allocated",
                    _owner(frames) if stack is not None else "",
                    frames,
                )
            )
    return pd.DataFrame(rows, columns=["device", "segment", "address", "size", "state", "owner", "frames"])


def _owner(frames: list[str]) -> str:
    outside = [f for f in frames if "torch/" not in f and not f.startswith("<built-in")]
    return (outside or frames or [""])[0]


def fragmentation(trace: Trace, points: int = 200) -> pd.DataFrame:
    """Per device, at ``points`` times spread over the trace (and at every ``oom``): ``allocated``,
    ``reserved``, ``fragmented`` (reserved - allocated) and ``largest_free`` (bytes)."""
    raw = _raw(trace)
    rows = []
    for d in _devices(raw):
        r = _Replay(raw, d)
        n = len(r.action)
        at = sorted(
            set(np.linspace(0, n, min(points, n + 1)).astype(int).tolist())
            | {k for k, a in enumerate(r.action) if a == OOM}
        )
        for k in at:
            r.advance(k)
            t = r.time[k] if k < n else (r.time[-1] if n else 0)
            num = r.numbers()
            rows.append(
                (
                    f"cuda:{d}",
                    t,
                    num["allocated"],
                    num["reserved"],
                    num["free_in_reserved"],
                    num["largest_free"],
                )
            )
    return pd.DataFrame(
        rows, columns=["device", "time", "allocated", "reserved", "fragmented", "largest_free"]
    )


def oom(trace: Trace, top: int = 5) -> pd.DataFrame:
    """One row per ``oom`` entry: ``device``, ``time``, ``requested``, ``allocated``, ``reserved``,
    ``free_in_reserved``, ``largest_free``, ``device_free`` (NA where not recorded), ``verdict``,
    ``top_owners`` (the live allocations' bytes by owner, largest first), ``what_to_try``."""
    raw = _raw(trace)
    rows = []
    for d in _devices(raw):
        r = _Replay(raw, d)
        for k in [k for k, a in enumerate(r.action) if a == OOM]:
            r.advance(k)
            num = r.numbers()
            req = r.size[k]
            frag = num["free_in_reserved"] >= req and num["largest_free"] < req
            owners: Counter[str] = Counter()
            for size, stack in r.allocs.values():
                owners[_owner(raw["stacks"][stack])] += size
            big_segments = [s for s in r.segments.values() if s >= req]
            rows.append(
                {
                    "device": f"cuda:{d}",
                    "time": r.time[k],
                    "requested": req,
                    **num,
                    "device_free": r.free[k] if r.free[k] >= 0 else pd.NA,
                    "verdict": "fragmentation" if frag else "capacity",
                    "top_owners": owners.most_common(top),
                    "what_to_try": _advice(frag, req, num, r.free[k], big_segments),
                }
            )
    columns = [
        "device",
        "time",
        "requested",
        "allocated",
        "reserved",
        "free_in_reserved",
        "largest_free",
        "device_free",
        "verdict",
        "top_owners",
        "what_to_try",
    ]
    return pd.DataFrame(rows, columns=columns)


def _mib(n: int) -> str:
    return f"{n / MIB:,.1f} MiB"


def _advice(frag: bool, req: int, num: dict[str, int], device_free: int, big_segments: list[int]) -> str:
    if frag:
        text = (
            f"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: {_mib(num['free_in_reserved'])} is free "
            f"inside reserved segments but the largest free block is {_mib(num['largest_free'])}, "
            f"less than the {_mib(req)} asked for; expandable segments grow in place instead of "
            "leaving holes between segments."
        )
        if big_segments:
            text += (
                f" Or max_split_size_mb below {req // MIB} MiB: {len(big_segments)} segment(s) large "
                "enough for the request were split by smaller allocations, and blocks larger than "
                "that size are then never split."
            )
        return text
    avail = num["free_in_reserved"] + max(device_free, 0)
    return (
        f"Activation checkpointing (torch.utils.checkpoint) or a smaller batch: live tensors hold "
        f"{_mib(num['allocated'])} and the request of {_mib(req)} exceeds the "
        f"{_mib(avail)} free in reserved segments and on the device; the allocator's settings "
        "cannot make room."
    )
