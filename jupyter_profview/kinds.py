"""What an event *is*, decided from its name and category: the one definition of each.

Every layer that must tell a step, a collective or a kind of device activity apart reads it
here -- the formats when they type `trace.launches`, the derived layer
([`derived`][jupyter_profview.derived]) when it builds steps, activities and queues, the analyses
and the front ends through the derived layer.  A second regex for "communication" elsewhere is a
bug waiting for this one to change.

- **Steps**: a step is an instance of an annotation: a slice named `<annotation>` or
  `<annotation>#<N>` (PyTorch's `ProfilerStep#12`); `N` is its number.
- **Device activity kinds**: `computation` (a kernel), `communication` (a kernel whose name starts
  with `nccl` or `rccl`, any case, or contains `gloo:` -- HTA's `COMMUNICATION` kernel type, and
  RCCL's),
  `memory` (memcpy, memset), `dma` (MTIA's DMA transfers: a device activity whose name starts
  with `dma`), `sync` (`cuda_sync` device events: a stream or context waiting for an event).
- **Collective calls**: CPU-side slices that run a collective: `nccl:<op>`, `rccl:<op>`,
  `gloo:<op>` (PyTorch's `user_annotation` around the collective's work) and
  `record_param_comms` (the op carrying the collective's parameters); device kernels of kind
  `communication`.
- **Enqueueing calls**: the runtime calls that put work on a stream, as HTA counts them in queue
  lengths (`ENQUEUE_CALLS`).
- **Communication** (`is_communication`): a collective call, a `c10d::` op or a communication
  kernel; the time inside one is waiting for (or moving data to) another rank.
- **Pipeline actions** (`pipeline_action`): the ranges `torch.distributed.pipelining` records
  around each action of a schedule: `PP:<stage><kind><microbatch>` in the multi-stage runtime
  schedules (`PP:1F0`, `PP:0SEND_F2`, `PP:3UNSHARD`), `Forward <mb>` / `Backward <mb>` in
  `ScheduleGPipe` (no stage: the rank's one stage).
- **Host-sync calls**: the runtime calls that hold the host until the device is done
  (`HOST_SYNC_CALLS`, and `HOST_SYNC_COPIES` where the copy is pageable); the critical path and
  the advisor read them through `derived.host_syncs`.
- **Tensor-core kernels**: a kernel whose name matches `TENSOR_CORE_KERNEL` (a name heuristic,
  see there).
- **Wrappers** (`WRAPPER_CATEGORIES`, `WRAPPER_MARKER`; per event: `derived.wrapper_mask`): the
  profiler's own records around a recording, not the program's work. Kineto writes a span of
  category `Trace` covering the whole recording (`PyTorch Profiler (0)` on process `Spans`;
  `__cupti_profiler__ (-1)` in a CUPTI-profiler trace) and two global markers,
  `Iteration Start: <span>` (process `Traces`) and `Record Window End` (no process, no thread).
  The collapsed groups' busy lanes leave them out; the timeline hides their lanes by default.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

import numpy as np

STEP_ANNOTATION = "ProfilerStep"
"""PyTorch's profiler step annotation"""

ACTIVITY_KINDS = ("computation", "communication", "memory", "dma", "sync")
"""device-side activity kinds, in display order"""

COMMUNICATION_KERNEL = re.compile(r"^(?:nccl|rccl)|gloo:", re.IGNORECASE)
"""a device kernel that moves data between ranks (NCCL / RCCL / gloo). Wider than HTA 0.5.0's
`^nccl.*Kernel` (case-sensitive): RCCL kernels (ROCm) and gloo are communication too; every NCCL
kernel name (`ncclKernel_*`, `ncclDevKernel_*`) matches both"""

COLLECTIVE_ANNOTATION = re.compile(r"^(?:nccl|rccl|gloo):", re.IGNORECASE)
"""a CPU-side slice around a collective's work (`nccl:all_reduce`, `gloo:broadcast`)"""

COLLECTIVE_OP = re.compile(r"^c10d::")
"""PyTorch's c10d dispatcher ops of the collectives (`c10d::allreduce_`): on the calling thread,
they queue the collective's work (the `nccl:` / `gloo:` annotation is where it runs)"""

COLLECTIVE_PARAMS = "record_param_comms"
"""the op PyTorch records with a collective's parameters (sizes, dtype, process group)"""

TENSOR_CORE_KERNEL = re.compile(
    r"h884|h1688|h16816|s1688|s16816|i8816|hmma|xmma|wgmma|tensorop|gmma|_tf32|bf16.*gemm|gemm.*bf16",
    re.IGNORECASE)
"""A kernel that runs on tensor cores, guessed from its name: cuBLAS / CUTLASS / cuDNN name their
tensor-core kernels after the MMA shape or instruction (`h884`, `h1688`, `s16816`, `i8816`,
`hmma`, `xmma`, `gmma` / `wgmma` on Hopper, `tensorop`), the TF32 path (`_tf32`) or the bf16 GEMM.
A name heuristic, known to miss: Triton and other JIT-compiled kernels
(`triton_tem_fused_mm_...`), flash attention (`flash_fwd_kernel`) and other hand-written kernels
that use MMA without saying so; fp16 cuBLAS kernels named only by tile (`ampere_fp16_s16816...`
matches, `ampere_h16816...` too, a plain `sm80_..._gemm_f16` does not); ROCm's MFMA kernels
(`Cijk_..._MFMA`). A bf16 GEMM that runs on plain FMA units is counted."""

DMA_ACTIVITY = re.compile(r"^dma")
"""a device activity that is a DMA transfer (MTIA `dma_request`), as HTA's `MEMORY_KERNEL_RE`
(`^dma`, case-sensitive)"""


KIND_OF_TYPE = {"kernel": "computation", "communication": "communication", "memcpy": "memory",
                "memset": "memory", "dma": "dma"}
"""the device activity kind of each `launches["type"]` (the formats type an activity by the rules
above; `dma` is memory traffic too, and HTA's kernel breakdown counts it as memory)"""

SYNC_CATEGORY = "cuda_sync"
"""Kineto's category of the device-side synchronisation events (`Event Sync`, `Stream Wait Event`)"""

ENQUEUE_CALLS = frozenset({
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync",
    "runFunction - job_prep_and_submit_for_execution", "hipLaunchKernel", "hipExtModuleLaunchKernel",
    "hipMemsetAsync", "hipMemcpyAsync", "hipMemcpyWithStream",
})
"""runtime calls that enqueue work on a stream: HTA 0.5.0's list
(`TraceSymbolTable.get_runtime_launch_events_query`); only they count in queue lengths"""


HOST_SYNC_CALLS = frozenset(
    f"{api}{call}" for api in ("cuda", "hip")
    for call in ("DeviceSynchronize", "StreamSynchronize", "EventSynchronize", "Memcpy")
)
"""Runtime calls that block the host until the device is done, by the CUDA runtime's semantics
(and HIP's, which copies them): `cudaDeviceSynchronize`, `cudaStreamSynchronize`,
`cudaEventSynchronize` wait for the work; the synchronous `cudaMemcpy` returns once the copy is
done.  Not here: `cudaEventQuery` / `cudaStreamQuery` (they poll and return at once,
`cudaErrorNotReady` while the work runs: the host is not held), and the asynchronous copies
(`HOST_SYNC_COPIES`), which block only when the host memory is pageable."""

HOST_SYNC_COPIES = frozenset({"cudaMemcpyAsync", "hipMemcpyAsync", "hipMemcpyWithStream"})
"""Asynchronous copies that block the host only when the host side is pageable memory (CUDA
runtime: a copy from pageable memory returns once staged, one to pageable memory once done;
pinned memory: the call returns at once).  A call of these blocks where the copy it launched is
named as pageable (Kineto's `Memcpy DtoH (Device -> Pageable)`: `PAGEABLE_COPY`)."""

PAGEABLE_COPY = re.compile(r"pageable", re.IGNORECASE)
"""A copy (device activity) from or to pageable host memory, by its name."""

HTA_PATH_WAITS = frozenset({"cudaEventQuery", "cudaMemcpyAsync"})
"""Calls HTA 0.5.0's critical path also treats as waits for the device (the edge into their end
weighs 0) though by CUDA's semantics they need not hold the host (`cudaEventQuery` polls; an
async copy with pinned memory returns at once).  The critical path adds them to the host-sync
calls, and only there, so that its lengths stay HTA's (tests/test_critical_path.py compares
them with HTA's own on its traces); the advisor's `host_sync` does not count them."""

NUMBERED_INSTANCE = re.compile(r"^(.*\S)#(\d+)$")
"""an instance of a numbered annotation, `<annotation>#<N>` (PyTorch's `ProfilerStep#12`)"""


def annotation_of(name: str) -> str:
    """The annotation a numbered instance belongs to (`ProfilerStep#12` -> `ProfilerStep`); any
    other name as it is."""
    match = NUMBERED_INSTANCE.match(name)
    return match.group(1) if match else name


def step_pattern(annotation: str = STEP_ANNOTATION) -> re.Pattern[str]:
    """The names of the instances of `annotation`: `annotation` itself or `annotation#N`
    (group 1: `N`, `None` for the bare name)."""
    return re.compile(rf"^{re.escape(annotation)}(?:#(\d+))?$")


def is_communication_kernel(name: str) -> bool:
    """Whether a device activity named `name` is communication (`COMMUNICATION_KERNEL`)."""
    return COMMUNICATION_KERNEL.search(name) is not None


def is_tensor_core_kernel(name: str) -> bool:
    """Whether a kernel named `name` runs on tensor cores, by its name (`TENSOR_CORE_KERNEL`)."""
    return TENSOR_CORE_KERNEL.search(name) is not None


def is_collective_call(name: str) -> bool:
    """Whether a CPU-side slice named `name` is a collective call (module docstring)."""
    return name == COLLECTIVE_PARAMS or COLLECTIVE_ANNOTATION.match(name) is not None


def is_communication(name: str) -> bool:
    """Whether a slice named `name` is communication: a collective call (`is_collective_call`), a
    `c10d::` op (`COLLECTIVE_OP`) or a communication kernel (`COMMUNICATION_KERNEL`)."""
    return (is_collective_call(name) or COLLECTIVE_OP.match(name) is not None
            or is_communication_kernel(name))


#: the kinds of a `torch.distributed.pipelining` action (its `_ComputationType` values): `F`
#: forward, `I` backward of the input, `W` backward of the weights, `B` full backward, the
#: point-to-point sends and receives, FSDP's unshard / reshard, the gradient reduction, and
#: DualPipeV's overlapped forward + backward
PIPELINE_ACTION_KINDS = ("F", "I", "B", "W", "SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD", "RESHARD",
                         "REDUCE_GRAD", "OVERLAP_F_B")
#: the actions that compute (the others move data or memory)
PIPELINE_COMPUTE_KINDS = frozenset({"F", "I", "B", "W", "OVERLAP_F_B"})
#: `record_function(f"PP:{action}")` of the runtime schedules: `PP:<stage><kind><microbatch>`, or
#: `PP:(<sub-action>;...)OVERLAP_F_B` (stage and microbatch: the first sub-action's)
PIPELINE_ACTION = re.compile(
    r"^PP:(?:(\d+)(F|I|B|W|UNSHARD|RESHARD|REDUCE_GRAD|SEND_F|RECV_F|SEND_B|RECV_B)(\d*)"
    r"|\((\d+)[A-Z_]+?(\d*)(?:;[^)]*)?\)(OVERLAP_F_B))$")
#: `record_function(f"Forward {i}")` / `f"Backward {i}"` of `ScheduleGPipe`
PIPELINE_SINGLE_ACTION = re.compile(r"^(Forward|Backward) (\d+)$")


def pipeline_action(name: str) -> tuple[int | None, str, int | None] | None:
    """`(stage, kind, microbatch)` of a pipeline action's range (module docstring), None for
    any other name; `stage` is None for GPipe's `Forward <mb>` / `Backward <mb>` (kind `F` /
    `B`), `microbatch` None for an action of no microbatch (`PP:0UNSHARD`)."""
    hit = PIPELINE_ACTION.match(name)
    if hit is not None:
        if hit.group(6):  # OVERLAP_F_B: the first sub-action's stage and microbatch
            return int(hit.group(4)), "OVERLAP_F_B", int(hit.group(5)) if hit.group(5) else None
        return int(hit.group(1)), hit.group(2), int(hit.group(3)) if hit.group(3) else None
    single = PIPELINE_SINGLE_ACTION.match(name)
    if single is not None:
        return None, "F" if single.group(1) == "Forward" else "B", int(single.group(2))
    return None



#: categories of the profiler's own spans covering the whole recording (Kineto's ``Trace``)
WRAPPER_CATEGORIES = frozenset({"Trace"})
#: names of the profiler's own markers: Kineto's ``Iteration Start: <span>`` and ``Record Window End``
WRAPPER_MARKER = re.compile(r"^(?:Iteration Start: .+|Record Window End)$")


def by_code(hits: Sequence[bool] | np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The per-category mask, written once: rows whose code's entry in `hits` (one bool per
    distinct value) is true; code -1 (missing) never a hit."""
    table = np.append(np.asarray(hits, bool), False)
    if not table.any():  # nothing matches: no gather over the rows
        return np.zeros(len(codes), bool)
    return table[np.asarray(codes, np.int64)]


def code_mask(values: Iterable[object], codes: np.ndarray, predicate: Callable[[str], object]) -> np.ndarray:
    """Rows whose value (`values[codes[i]]`) satisfies `predicate(str(value))`, the predicate
    evaluated once per distinct value, never once per row (`by_code`).  `derived.masks.match`
    is this over a categorical column; the loaders use it on their code columns."""
    return by_code([bool(predicate(str(v))) for v in values], codes)
