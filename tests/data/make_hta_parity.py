"""Hand-written Kineto traces for the cases where this project and HTA 0.5.0 used to differ
(issue 24): a stream queue 1,000 deep, kernels of one stream that overlap by a few µs with µs
timestamps (launches at the same µs as kernel starts), and MTIA DMA transfers that HTA keeps or
drops.  Run from the repository root (no dependency):

    python tests/data/make_hta_parity.py

It writes ``tests/data/hta_parity/*.json`` (``deep_queue.json.gz`` gzipped); HTA's answers on them are in
``tests/data/hta_reference/parity.json.gz`` (``scripts/crosscheck/hta_parity.py``, run with HTA).
Every timestamp is a whole µs, so HTA's rounding changes nothing.

``deep_queue.json.gz`` (GPU 0, streams 7 and 9; three ``ProfilerStep``):
  - step 1 [0, 4000): 1,000 ``cudaLaunchKernel`` at 10, 11, ..., 1009 µs, their kernels back to
    back on stream 7 from 1500 µs, 2 µs each: the queue reaches 1,000; one ``cudaGraphLaunch`` at
    1200 µs whose 5 kernels run on stream 9 (HTA's series does not count a graph launch);
  - step 2 [4000, 8000): 300 launches at 4010 + 2k µs, kernel k at 4016 + 2k µs (3 µs each):
    each launch falls on the µs a kernel starts (a tie at every change);
  - step 3 [8000, 9000): 50 launches and kernels (HTA drops the last step by default).
``overlap_stream.json`` (GPU 0, stream 7; two ``ProfilerStep``): 40 kernels 10 µs apart, 13 µs
  each (each overlaps the next by 3 µs, as CUDA-graph kernels do in real traces), each launched
  at the µs the kernel before it starts.
``mtia_dma.json`` (an MTIA device, ``mtia_ccp_events`` on stream 3; three ``ProfilerStep``):
  ``dma_request`` transfers launched by ``runFunction - job_prep_and_submit_for_execution``:
  - 6 in step 1, launched there (both count them);
  - 2 whose launch is not in the trace (correlation of no CPU event: launched before the window);
  - 1 without a ``correlation`` arg;
  - 1 without a ``stream`` arg (on the stream's thread);
  - 3 launched in the last step;
  and 4 compute kernels in step 1.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "hta_parity"
CPU_PID, CPU_TID = 100, 100


def x(name: str, cat: str, pid: int, tid: int, ts: int, dur: int, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def meta(pid: int, name: str, label: str | None = None) -> list[dict[str, Any]]:
    out = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}]
    if label:
        out.append({"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": label}})
    return out


def steps(bounds: list[int]) -> list[dict[str, Any]]:
    return [x(f"ProfilerStep#{i + 1}", "user_annotation", CPU_PID, CPU_TID, a, b - a,
              **{"External id": i + 1})
            for i, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False))]


def launch(ts: int, corr: int, stream: int, kernel_ts: int, dur: int, name: str = "gemm",
           call: str = "cudaLaunchKernel") -> list[dict[str, Any]]:
    return [x(call, "cuda_runtime", CPU_PID, CPU_TID, ts, 1, correlation=corr),
            x(name, "kernel", 0, stream, kernel_ts, dur, correlation=corr, stream=stream, device=0)]


def doc(events: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"schemaVersion": 1, "traceEvents": events, **(extra or {})}


GPU_PROPS = {"deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}]}


def deep_queue() -> dict[str, Any]:
    events = [*meta(CPU_PID, "python"), *meta(0, "GPU 0", "GPU 0"), *steps([0, 4000, 8000, 9000])]
    corr = 1
    for i in range(1000):
        events += launch(10 + i, corr, 7, 1500 + 2 * i, 2)
        corr += 1
    events.append(x("cudaGraphLaunch", "cuda_runtime", CPU_PID, CPU_TID, 1200, 5, correlation=corr))
    events += [x("graph_kernel", "kernel", 0, 9, 1300 + 10 * k, 5, correlation=corr, stream=9, device=0)
               for k in range(5)]
    corr += 1
    for k in range(300):
        events += launch(4010 + 2 * k, corr, 7, 4016 + 2 * k, 3)
        corr += 1
    for k in range(50):
        events += launch(8010 + 4 * k, corr, 7, 8020 + 4 * k, 2)
        corr += 1
    return doc(events, GPU_PROPS)


def overlap_stream() -> dict[str, Any]:
    events = [*meta(CPU_PID, "python"), *meta(0, "GPU 0", "GPU 0"), *steps([0, 300, 600])]
    for i in range(40):
        start = 100 + 10 * i
        events += launch(start - 10, 500 + i, 7, start, 13)
    return doc(events, GPU_PROPS)


def mtia_dma() -> dict[str, Any]:
    dev = 1
    events = [*meta(CPU_PID, "python"), *meta(dev, "MTIA 0"), *steps([0, 1000, 2000, 3000])]
    run = "runFunction - job_prep_and_submit_for_execution"

    def on_device(name: str, ts: int, dur: int, **args: Any) -> dict[str, Any]:
        return x(name, "mtia_ccp_events", dev, 3, ts, dur, device=0, **args)

    corr = 1
    for k in range(6):  # launched in step 1
        events += [x(run, "mtia_runtime", CPU_PID, CPU_TID, 100 + 50 * k, 5, correlation=corr),
                   on_device("dma_request", 120 + 50 * k, 10, correlation=corr, stream=3)]
        corr += 1
    for k in range(4):  # compute kernels in step 1
        events += [x(run, "mtia_runtime", CPU_PID, CPU_TID, 500 + 50 * k, 5, correlation=corr),
                   on_device("fused_kernel", 520 + 50 * k, 20, correlation=corr, stream=3)]
        corr += 1
    events += [on_device("dma_request", 20 + 5 * k, 3, correlation=9000 + k, stream=3) for k in range(2)]
    events.append(on_device("dma_request", 900, 4, stream=3))  # no correlation
    events += [x(run, "mtia_runtime", CPU_PID, CPU_TID, 940, 5, correlation=corr),
               on_device("dma_request", 950, 4, correlation=corr)]  # no stream arg
    corr += 1
    for k in range(3):  # launched in the last step
        events += [x(run, "mtia_runtime", CPU_PID, CPU_TID, 2100 + 50 * k, 5, correlation=corr),
                   on_device("dma_request", 2120 + 50 * k, 10, correlation=corr, stream=3)]
        corr += 1
    return doc(events)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name, make in (("overlap_stream", overlap_stream), ("mtia_dma", mtia_dma)):
        (OUT / f"{name}.json").write_text(json.dumps(make(), separators=(",", ":")) + "\n")
    text = json.dumps(deep_queue(), separators=(",", ":")) + "\n"
    (OUT / "deep_queue.json.gz").write_bytes(gzip.compress(text.encode(), mtime=0))


if __name__ == "__main__":
    main()
