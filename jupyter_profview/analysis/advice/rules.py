"""The rules of [advise][jupyter_profview.analysis.advice.advise], one function each.

A rule takes the `Facts` (`advice/facts.py`) of one trace and returns its
findings (dicts with ``rule``, ``time``, ``events``, ``device``, ``message``, ``fix``; ``advise``
adds ``share``, ``count`` and ``severity``), or raises `Skip` with the reason when the trace lacks
what the rule needs.  A rule whose inputs are simply absent (no memcpy, no DataLoader) returns
no finding: that is an answer, not a skip.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ...derived import difference, intersection
from ...nesting import nearest_ancestor
from ...numbers import format_duration as format_ns
from .facts import Facts, length, union

Finding = dict[str, Any]


class Skip(Exception):  # noqa: N818 -- a signal between a rule and advise, never raised to users
    """The rule cannot judge this trace; ``args[0]`` says why."""


def _device_of(gpus: Any) -> str:
    values = sorted(set(gpus))
    return values[0] if len(values) == 1 else ""


def pageable_memcpy(f: Facts) -> list[Finding]:
    """Memcpy activities from or to pageable host memory (Kineto names them
    ``Memcpy HtoD (Pageable -> Device)``): the copy is staged through a pinned buffer and the
    host waits.  time = the sum of their durations in the window."""
    acts = f.activities
    memcpy = acts[acts["type"] == "memcpy"]
    hit = memcpy[memcpy["name"].astype(str).str.contains("Pageable", regex=False).to_numpy(bool)]
    if len(hit) == 0:
        return []
    time = int(hit["dur"].sum())
    return [{
        "rule": "pageable_memcpy", "time": time, "events": hit["event"].tolist(),
        "device": _device_of(hit["gpu"].astype(str)),
        "message": f"{len(hit)} copies from or to pageable host memory took {format_ns(time)}.",
        "fix": "Use pinned host memory (DataLoader(pin_memory=True), tensor.pin_memory()) and "
               "copy with non_blocking=True.",
    }]


def host_sync(f: Facts) -> list[Finding]:
    """Runtime calls that block the host until the device is done (``cudaDeviceSynchronize``,
    ``cudaStreamSynchronize``, ``cudaEventSynchronize``, the synchronous ``cudaMemcpy``, and their
    ``hip`` twins).  time = the sum of their durations in the window; the message names the CPU
    ops that called them most (their nearest ``cpu_op`` ancestor)."""
    calls = f.host_syncs
    if len(calls) == 0:
        return []
    time = int(calls["dur"].sum())
    ops = nearest_ancestor(f.trace.events, calls["event"].to_numpy(), "cpu_op")
    names = f.trace.events["name"]
    callers: Counter[str] = Counter()
    for op, dur in zip(ops.tolist(), calls["dur"].tolist(), strict=True):
        callers[str(names.iat[op]) if op >= 0 else "(no op)"] += dur
    top = ", ".join(f"{name} ({format_ns(t)})" for name, t in callers.most_common(3))
    return [{
        "rule": "host_sync", "time": time, "events": calls["event"].tolist(), "device": "",
        "message": f"The host waited for the device in {len(calls)} synchronizing calls for "
                   f"{format_ns(time)}; most under {top}.",
        "fix": "Avoid .item(), .cpu(), .tolist() and printing tensors inside the step; keep "
               "values on the device or read them once after the step.",
    }]


def gpu_idle(f: Facts) -> list[Finding]:
    """Per GPU: the time in the window when none of its activities runs on any stream (window
    length minus the union of its activity intervals, `Facts.gpu_idle`).  The message splits it
    by what the CPU was doing meanwhile: in a synchronizing call (`host_sync`'s calls), in a DataLoader
    (`dataloader`'s slices, outside sync calls), or other.  Evidence: those sync calls and
    DataLoader slices that overlap the idle time; the idle intervals themselves are the finding's
    ``idle_intervals`` (`Advice.idle_intervals`)."""
    if not f.gpus:
        return []
    sync = union(f.host_syncs["start"].to_numpy(), f.host_syncs["end"].to_numpy())
    loader = union(f.dataloader["start"].to_numpy(), f.dataloader["end"].to_numpy())
    out = []
    for gpu in f.gpus:
        idle = f.gpu_idle(gpu)
        time = length(idle)
        if time == 0:
            continue
        in_sync = length(intersection(idle, sync))
        in_loader = length(intersection(difference(idle, sync), loader))
        other = time - in_sync - in_loader
        cpu = pd.concat([f.host_syncs, f.dataloader], ignore_index=True)
        touching = [int(e) for e, a, b in zip(cpu["event"], cpu["start"], cpu["end"], strict=True)
                    if length(intersection((np.array([a]), np.array([b])), idle)) > 0]
        out.append({
            "rule": "gpu_idle", "time": time, "events": sorted(set(touching)), "device": gpu,
            "message": f"{gpu} ran nothing for {format_ns(time)} of the window: the CPU was in a "
                       f"synchronizing call for {format_ns(in_sync)}, in the DataLoader for "
                       f"{format_ns(in_loader)}, elsewhere for {format_ns(other)}.",
            "fix": "Keep the GPU fed: launch work ahead (no host syncs in the step), load data in "
                   "background workers, batch small launches (CUDA graphs, torch.compile).",
            "idle_sync": in_sync, "idle_dataloader": in_loader, "idle_other": other,
            # the idle time itself (`Facts.gpu_idle`): what `Advice.idle_intervals` returns and
            # the widget shades on the GPU's lanes
            "idle_intervals": idle,
        })
    return out


def tiny_kernels(f: Facts) -> list[Finding]:
    """Launch calls whose kernels (the activities linked to the call by correlation; a
    ``cudaGraphLaunch`` has many) run shorter in total than the call itself: the launch costs
    more than the work.  time = the sum over them of (call duration - kernels' total duration),
    the call's duration clipped to the window, the kernels' durations whole."""
    la = f.trace.launches
    la = la[la["launch"].notna()]
    if len(la) == 0:
        return []
    launch = la["launch"].to_numpy(np.int64)
    calls, inverse = np.unique(launch, return_inverse=True)
    work = np.bincount(inverse, weights=la["kernel_dur"].to_numpy(np.float64)).astype(np.int64)
    ev = f.trace.events
    start = ev["start"].to_numpy(np.int64)[calls]
    end = start + ev["dur"].to_numpy(np.int64)[calls]
    lo, hi = f.window
    inside = (end > lo) & (start < hi)
    dur = np.minimum(end, hi) - np.maximum(start, lo)
    tiny = inside & (work < dur)
    if not tiny.any():
        return []
    time = int((dur[tiny] - work[tiny]).sum())
    return [{
        "rule": "tiny_kernels", "time": time, "events": calls[tiny].tolist(), "device": "",
        "message": f"{int(tiny.sum())} launch calls took longer than the work they launched; "
                   f"the launches cost {format_ns(time)} more than the kernels ran.",
        "fix": "Fuse small kernels (torch.compile), capture the step in a CUDA graph, or use "
               "larger batches.",
    }]


def dataloader(f: Facts) -> list[Finding]:
    """CPU slices whose name contains ``DataLoader``; time = the length of the union of their
    intervals per thread (clipped to the window), summed over threads."""
    dl = f.dataloader
    if len(dl) == 0:
        return []
    time = sum(length(union(g["start"].to_numpy(), g["end"].to_numpy()))
               for _, g in dl.groupby("thread", sort=False))
    return [{
        "rule": "dataloader", "time": int(time), "events": dl["event"].tolist(), "device": "",
        "message": f"The step waited on the DataLoader for {format_ns(int(time))}.",
        "fix": "Load in background workers (num_workers > 0, persistent_workers=True), pin "
               "memory (pin_memory=True) and prefetch (prefetch_factor).",
    }]


def exposed_communication(f: Facts) -> list[Finding]:
    """Per GPU: the time when a communication activity runs and no computation activity runs on
    that GPU (union of communication intervals minus union of computation intervals)."""
    acts = f.activities
    out = []
    for gpu, g in acts.groupby("gpu", sort=True):
        comm = g[g["kind"] == "communication"]
        if len(comm) == 0:
            continue
        comp = g[g["kind"] == "computation"]
        exposed = difference(union(comm["start"].to_numpy(), comm["end"].to_numpy()),
                           union(comp["start"].to_numpy(), comp["end"].to_numpy()))
        time = length(exposed)
        if time == 0:
            continue
        s, e = exposed
        # evidence: the communication activities that hold exposed time (each exposed piece lies
        # inside the union of communication, so in at least one of them)
        cs, ce = comm["start"].to_numpy(), comm["end"].to_numpy()
        k = np.searchsorted(s, ce, side="left")  # first exposed piece starting at or after the end
        reach = np.concatenate([[np.iinfo(np.int64).min], np.maximum.accumulate(e)])
        touching = (k > 0) & (reach[k] > cs)
        evidence = comm["event"].to_numpy()[touching]
        out.append({
            "rule": "exposed_communication", "time": time, "events": evidence.tolist(), "device": str(gpu),
            "message": f"On {gpu}, communication ran with no computation beside it for "
                       f"{format_ns(time)}.",
            "fix": "Overlap communication with computation: tune DDP bucket sizes "
                   "(bucket_cap_mb), use no_sync() for gradient accumulation, FSDP prefetching.",
        })
    return out


def fp32_matmul(f: Facts) -> list[Finding]:
    """GEMM ops (mm, addmm, bmm, baddbmm, matmul, linear) with ``float`` (FP32) inputs on CUDA
    GPUs of compute capability 8.0 or more (``computeMajor`` of the trace's ``deviceProperties``),
    where TF32 or bf16 would use the tensor cores; GEMMs on older GPUs (no TF32 there) are not
    counted, and the finding names the GPUs it is about.  time = their linked device time
    (``op_efficiency``'s ``gpu_time``)."""
    from ..efficiency import op_efficiency

    props = list(f.trace.info.device_properties)
    if not props:
        raise Skip("the trace has no deviceProperties: the GPUs' compute capability is unknown")
    if any(isinstance(p, dict) and ("gcnArchName" in p or "gfx" in str(p.get("name", "")).lower()
                                    or "AMD" in str(p.get("name", ""))) for p in props):
        raise Skip("ROCm devices number their architectures differently: TF32 advice is for CUDA")
    # the GPUs with TF32 / bf16 tensor cores, by the name op_efficiency's `device` gives them
    capable = {str(p.get("name", "")) for p in props if isinstance(p, dict)
               and isinstance(p.get("computeMajor"), int) and not isinstance(p.get("computeMajor"), bool)
               and p["computeMajor"] >= 8}
    if not capable:
        return []
    eff = f.once("op_efficiency", lambda: op_efficiency(f.trace))
    if len(eff) == 0:
        return []
    gemm = eff["name"].astype(str).str.removeprefix("aten::").isin(
        ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear"))
    hit = eff[gemm & (eff["dtype"].astype(str) == "float") & eff["device"].astype(str).isin(capable)]
    ev = f.trace.events
    starts = ev["start"].to_numpy(np.int64)[ev.index.get_indexer(hit["event"].to_numpy(np.int64))]
    hit = hit[(starts >= f.window[0]) & (starts < f.window[1])]
    time = int(np.nansum(hit["gpu_time"].to_numpy(np.float64)))
    if len(hit) == 0 or time == 0:
        return []
    return [{
        "rule": "fp32_matmul", "time": time, "events": hit["event"].astype(np.int64).tolist(),
        "device": ", ".join(sorted(set(hit["device"].astype(str)))),
        "message": f"{len(hit)} matrix multiplications ran in FP32 for {format_ns(time)} of "
                   f"device time on {', '.join(sorted(set(hit['device'].astype(str))))} (compute "
                   "capability 8.0 or more: TF32/bf16 tensor cores).",
        "fix": "torch.backends.cuda.matmul.allow_tf32 = True (or torch.set_float32_matmul_precision"
               "('high')), or bf16 autocast (torch.autocast('cuda', dtype=torch.bfloat16)).",
    }]


#: the per-trace rules, in the order their findings are listed on equal time
RULES: dict[str, Callable[[Facts], list[Finding]]] = {
    "pageable_memcpy": pageable_memcpy,
    "host_sync": host_sync,
    "gpu_idle": gpu_idle,
    "tiny_kernels": tiny_kernels,
    "dataloader": dataloader,
    "fp32_matmul": fp32_matmul,
    "exposed_communication": exposed_communication,
}


def step_outliers(f: Facts, steps: pd.DataFrame, rule_times: Callable[[tuple[int, int]], dict[str, int]]
                  ) -> list[Finding]:
    """Instances of the annotation whose duration exceeds the median instance by more than 20 %;
    time = the sum of (duration - median) over them.  Emitted when there are 3 or more instances
    and at least one is slow.  The message names the slowest and what differs in it: the rule
    whose time inside it exceeds its time inside the median step (the normal step of median
    duration) by the most (``gpu_idle`` only when no other rule grew: idleness is the symptom)."""
    if len(steps) < 3:
        return []
    median = float(np.median(steps["dur"].to_numpy()))
    slow_mask = steps["dur"].to_numpy() > 1.2 * median
    slow = steps[slow_mask]
    if len(slow) == 0:
        return []
    time = int(round(float((slow["dur"] - median).sum())))
    worst = slow.iloc[int(np.argmax(slow["dur"].to_numpy()))]
    normal = steps[~slow_mask].sort_values("dur", kind="stable")
    typical = normal.iloc[(len(normal) - 1) // 2]
    inside = rule_times((int(worst["start"]), int(worst["end"])))
    usual = rule_times((int(typical["start"]), int(typical["end"])))
    grew = {rule: t - usual.get(rule, 0) for rule, t in inside.items() if t > usual.get(rule, 0)}
    why = ""
    if grew:
        named = {r: t for r, t in grew.items() if r != "gpu_idle"} or grew
        rule, t = max(named.items(), key=lambda kv: kv[1])
        why = f"; {rule} took {format_ns(t)} more in it than in {typical['name']}"
    return [{
        "rule": "step_outliers", "time": time, "events": slow["event"].tolist(), "device": "",
        "message": f"{len(slow)} of {len(steps)} steps ran more than 20 % longer than the median "
                   f"({format_ns(int(median))}); the slowest, {worst['name']}, took "
                   f"{format_ns(int(worst['dur']))}{why}.",
        "fix": "Look at what differs in the slow steps (click the finding): data loading, a "
               "host sync, a checkpoint or logging step, memory allocator stalls.",
        "slowest": int(worst["event"]), "compared_with": int(typical["event"]), "grew": grew,
    }]
