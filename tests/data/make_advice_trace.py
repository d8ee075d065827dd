"""Write tests/data/advice_rules.json: the smallest Kineto trace in which every per-trace rule of
`profview.advise` has something to find (hand-written: no GPU here records one).

Times in µs, as Kineto writes them.  Four ProfilerSteps on the main thread (10 ms each, the last
16 ms); one A100 (compute capability 8.0) with a compute stream (7) and an NCCL stream (20):

- step 1: an FP32 ``aten::mm`` whose kernel runs 3 ms; ``aten::item`` waits in
  ``cudaStreamSynchronize`` (0.8 ms) after a 50 µs ``Memcpy DtoH (Device -> Pageable)``;
- step 2: 2 ms in the DataLoader, a 600 µs ``Memcpy HtoD (Pageable -> Device)``, then 30
  ``aten::add`` whose 30 µs launches start 5 µs kernels;
- step 3: a 4 ms NCCL all-reduce kernel, 1.5 ms of it beside a compute kernel;
- step 4 (the slow one): 5 ms in ``cudaDeviceSynchronize`` outside any op.

Host syncs (`kinds.HOST_SYNC_CALLS`, and async copies of pageable memory): 0.8 + 5 ms, plus the
two ``cudaMemcpyAsync`` of the pageable copies (20 + 40 µs, the GPU idle meanwhile): 5.86 ms.

Run: python tests/data/make_advice_trace.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HOST, TID = 1, 1
GPU = 0
events: list[dict[str, Any]] = []
_corr = iter(range(1, 10_000))


def x(name: str, cat: str, ts: float, dur: float, pid: int = HOST, tid: int = TID, **args: Any) -> None:
    events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                   "args": args})


def launch(call: str, ts: float, dur: float, kernel: str, cat: str, kts: float, kdur: float,
           stream: int = 7) -> None:
    corr = next(_corr)
    x(call, "cuda_runtime", ts, dur, correlation=corr)
    x(kernel, cat, kts, kdur, pid=GPU, tid=stream, device=GPU, stream=stream, correlation=corr)


def main() -> None:
    for i, (ts, dur) in enumerate([(0, 10_000), (10_000, 10_000), (20_000, 10_000), (30_000, 16_000)]):
        x(f"ProfilerStep#{i + 1}", "user_annotation", ts, dur)
    # step 1
    x("aten::mm", "cpu_op", 100, 200, **{"Input Dims": [[64, 128], [128, 256]],
                                         "Input type": ["float", "float"]})
    launch("cudaLaunchKernel", 150, 20, "ampere_sgemm_128x64_nn", "kernel", 400, 3_000)
    x("aten::item", "cpu_op", 3_500, 1_000)
    x("aten::_local_scalar_dense", "cpu_op", 3_510, 980)
    launch("cudaMemcpyAsync", 3_520, 20, "Memcpy DtoH (Device -> Pageable)", "gpu_memcpy", 3_550, 50)
    x("cudaStreamSynchronize", "cuda_runtime", 3_600, 800)
    # step 2
    x("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation", 10_010, 2_000)
    x("aten::copy_", "cpu_op", 12_040, 70)
    launch("cudaMemcpyAsync", 12_050, 40, "Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 12_100, 600)
    for k in range(30):
        t = 13_000 + 100 * k
        x("aten::add", "cpu_op", t - 5, 40)
        launch("cudaLaunchKernel", t, 30, "vectorized_elementwise_kernel<add>", "kernel", t + 40, 5)
    # step 3
    x("record_param_comms", "cpu_op", 20_390, 30)
    launch("cudaLaunchKernel", 20_400, 10, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)", "kernel",
           20_500, 4_000, stream=20)
    x("aten::relu", "cpu_op", 20_415, 20)
    launch("cudaLaunchKernel", 20_420, 10, "elementwise_kernel<relu>", "kernel", 21_000, 1_500)
    # step 4
    x("cudaDeviceSynchronize", "cuda_runtime", 40_000, 5_000)
    events.extend([
        {"ph": "M", "name": "process_name", "pid": HOST, "tid": 0, "args": {"name": "python3 (1)"}},
        {"ph": "M", "name": "thread_name", "pid": HOST, "tid": TID, "args": {"name": "main"}},
        {"ph": "M", "name": "process_labels", "pid": GPU, "tid": 0, "args": {"labels": "GPU 0"}},
    ])
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", "computeMajor": 8,
                              "computeMinor": 0, "numSms": 108}],
        "traceEvents": events,
    }
    out = Path(__file__).with_name("advice_rules.json")
    out.write_text(json.dumps(doc, indent=0) + "\n")
    print(f"wrote {out} ({len(events)} events)")


if __name__ == "__main__":
    main()
