"""The rules of `profview.advise`, computed again from a Kineto JSON file with plain json and
Python lists: no pandas, no project code.  What the tests compare `advise` with.

Each function returns {rule/device: (time_ns, set of evidence keys)}; an evidence key is
(name, start_ns), times in exact ns on the file's own clock (µs × 1000 via Decimal, plus
``baseTimeNanoseconds`` where the file has it).
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
from decimal import Decimal
from pathlib import Path
from typing import Any

DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
LAUNCH_CATS = {"cuda_runtime", "cuda_driver", "Runtime"}
SYNC_NAMES = {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
              "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipMemcpy"}
#: async copies hold the host only when the host memory is pageable (CUDA runtime's semantics):
#: counted where the copy they launched (same `correlation`) is named `... Pageable ...`
ASYNC_COPIES = {"cudaMemcpyAsync", "hipMemcpyAsync", "hipMemcpyWithStream"}
COMM = re.compile(r"^(?:nccl|rccl)|gloo:", re.IGNORECASE)


def ns(value: Any) -> int:
    return int(Decimal(str(value)) * 1000)


class Walk:
    def __init__(self, path: Path, annotation: str = "ProfilerStep") -> None:
        raw = path.read_bytes()
        doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        self.doc = doc if isinstance(doc, dict) else {"traceEvents": doc}
        base = self.doc.get("baseTimeNanoseconds", 0)
        self.base = int(base) if isinstance(base, (int, float)) else 0  # PyTorch's clock origin
        evs = [e for e in self.doc["traceEvents"] if e.get("ph") == "X" and "ts" in e]
        for e in evs:
            e["_s"] = ns(e["ts"]) + self.base
            e["_e"] = e["_s"] + max(ns(e.get("dur", 0)), 0)
        self.events = evs
        device_pids = {e["pid"] for e in evs if e.get("cat") in DEVICE_CATS}
        self.device = [e for e in evs if e.get("cat") in DEVICE_CATS]
        self.host = [e for e in evs if e["pid"] not in device_pids]
        step = re.compile(rf"^{re.escape(annotation)}(?:#\d+)?$")
        self.steps = sorted((e for e in self.host if step.match(e["name"])
                             and e.get("cat") != "gpu_user_annotation"), key=lambda e: e["_s"])
        if self.steps:
            self.window = (min(e["_s"] for e in self.steps), max(e["_e"] for e in self.steps))
        else:
            stamps = [ns(e["ts"]) + self.base for e in self.doc["traceEvents"] if "ts" in e]
            self.window = (min(stamps), max([e["_e"] for e in evs] + stamps))

    # -- helpers -----------------------------------------------------------------------------
    @staticmethod
    def key(e: dict[str, Any]) -> tuple[Any, ...]:
        return (e["name"], e["_s"])

    def clip(self, e: dict[str, Any]) -> tuple[int, int] | None:
        lo, hi = self.window
        s, t = max(e["_s"], lo), min(e["_e"], hi)
        return (s, t) if t > s else None

    @staticmethod
    def union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
        out: list[list[int]] = []
        for s, t in sorted(i for i in intervals if i[1] > i[0]):
            if out and s <= out[-1][1]:
                out[-1][1] = max(out[-1][1], t)
            else:
                out.append([s, t])
        return [(a, b) for a, b in out]

    @staticmethod
    def total(intervals: list[tuple[int, int]]) -> int:
        return sum(b - a for a, b in intervals)

    def minus(self, a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
        out = []
        for s, t in a:
            pieces = [(s, t)]
            for bs, bt in b:
                nxt = []
                for ps, pt in pieces:
                    if bt <= ps or bs >= pt:
                        nxt.append((ps, pt))
                        continue
                    if bs > ps:
                        nxt.append((ps, bs))
                    if bt < pt:
                        nxt.append((bt, pt))
                pieces = nxt
            out += pieces
        return self.union(out)

    def gpu_of(self, e: dict[str, Any]) -> Any:
        return e["pid"]

    # -- the rules ---------------------------------------------------------------------------
    def pageable_memcpy(self) -> tuple[int, set[Any]]:
        hits = [e for e in self.device
                if e.get("cat") in ("gpu_memcpy", "Memcpy") or e["name"].startswith("Memcpy")]
        hits = [e for e in hits if "Pageable" in e["name"] and self.clip(e)]
        spans = [self.clip(e) for e in hits]
        return sum(c[1] - c[0] for c in spans if c), {self.key(e) for e in hits}

    def host_sync(self) -> tuple[int, set[Any]]:
        pageable = {e.get("args", {}).get("correlation") for e in self.device if "Pageable" in e["name"]}
        pageable.discard(None)
        hits = [e for e in self.host if (e["name"] in SYNC_NAMES or (
            e["name"] in ASYNC_COPIES and e.get("args", {}).get("correlation") in pageable)) and self.clip(e)]
        return sum(self.clip(e)[1] - self.clip(e)[0] for e in hits), {self.key(e) for e in hits}  # type: ignore[index]

    def dataloader(self) -> tuple[int, set[Any]]:
        hits = [e for e in self.host if "DataLoader" in e["name"] and self.clip(e)]
        by_thread: dict[Any, list[tuple[int, int]]] = {}
        for e in hits:
            by_thread.setdefault((e["pid"], e["tid"]), []).append(self.clip(e))  # type: ignore[arg-type]
        return sum(self.total(self.union(v)) for v in by_thread.values()), {self.key(e) for e in hits}

    def activities_by_gpu(self) -> dict[Any, list[dict[str, Any]]]:
        out: dict[Any, list[dict[str, Any]]] = {}
        for e in self.device:
            out.setdefault(self.gpu_of(e), []).append(e)
        return out

    def gpu_idle(self) -> dict[Any, int]:
        out = {}
        for gpu, acts in self.activities_by_gpu().items():
            busy = self.union([c for c in (self.clip(e) for e in acts) if c])
            out[gpu] = self.total(self.minus([self.window], busy))
        return out

    def exposed_communication(self) -> dict[Any, int]:
        out = {}
        for gpu, acts in self.activities_by_gpu().items():
            kernels = [e for e in acts if e.get("cat") in ("kernel", "Kernel")
                       and not e["name"].startswith(("Memcpy", "Memset"))]
            comm = self.union([c for c in (self.clip(e) for e in kernels if COMM.search(e["name"])) if c])
            comp = self.union([c for c in (self.clip(e) for e in kernels if not COMM.search(e["name"])) if c])
            if comm:
                out[gpu] = self.total(self.minus(comm, comp))
        return out

    def tiny_kernels(self) -> tuple[int, set[Any]]:
        corr = {}
        for e in self.host:
            if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {}):
                corr[e["args"]["correlation"]] = e
        work: dict[int, int] = {}
        for e in self.device:
            c = e.get("args", {}).get("correlation")
            if c in corr:
                work[c] = work.get(c, 0) + (e["_e"] - e["_s"])
        time, keys = 0, set()
        for c, w in work.items():
            call = corr[c]
            clipped = self.clip(call)
            if clipped and w < clipped[1] - clipped[0]:
                time += clipped[1] - clipped[0] - w
                keys.add(self.key(call))
        return time, keys

    def step_outliers(self) -> tuple[int, set[Any]]:
        durs = [e["_e"] - e["_s"] for e in self.steps]
        if len(durs) < 3:
            return 0, set()
        med = statistics.median(durs)
        slow = [e for e in self.steps if e["_e"] - e["_s"] > 1.2 * med]
        return round(sum(e["_e"] - e["_s"] - med for e in slow)), {self.key(e) for e in slow}
