"""Write the hand-written Kineto traces of the critical-path tests (``tests/data/critical_path/``).

Run from the repository root (plain Python, no dependency)::

    python tests/data/make_critical_path_traces.py

Each trace is what Kineto writes for a CUDA run, reduced to what the critical path reads: whole-µs
timestamps (as on real A100 traces), one CPU thread, `cudaLaunchKernel` calls with `correlation`
ids, their kernels on a CUDA stream with the same ids, the `ac2g` flows (`s` on the call, `f` on
the kernel), `ProfilerStep#N` annotations (a second, short step, because HTA drops a trace's last
ProfilerStep when it loads it), a `cudaDeviceSynchronize` with its `cuda_sync` event (Context
Sync), `distributedInfo` and `deviceProperties`.

- `overlap_us.json.gz`: kernels of one stream that overlap by a few µs (5 and 3 µs) in a
  GPU-bound step; in the next two steps a kernel that lies wholly inside the previous one, and
  a kernel launched (or queued) while the stream still runs the longer of the two (the case
  where "the previous kernel" is ambiguous).
- `deep_queue.json.gz`: one op launches 1,500 kernels in 1 µs calls every 2 µs while each kernel
  runs 6 µs: the stream's queue grows to 1,000, and the CPU waits at the end in
  `cudaDeviceSynchronize`.

- `ties_us.json.gz`: 400 small ops each launching a small kernel, a quarter of which start in
  the µs in which the next launch call starts (whole-µs timestamps tie): how a tie between a
  launch and a kernel start is read decides launch edges.

HTA 0.5.0's answers on them: `scripts/crosscheck/hta_critical_path.py` (see there), stored in
`tests/data/hta_reference/critical_path_handmade.json.gz`.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "critical_path"
BASE = 1_712_867_402_000_000  # µs, like the real A100 traces
PID, TID, GPU, STREAM = 4242, 4242, 0, 7


class _Writer:
    """Builds a Kineto trace on one CPU thread and one CUDA stream, in µs from BASE."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.corr = 0

    def cpu(self, name: str, ts: int, dur: int, cat: str = "cpu_op", **args: Any) -> None:
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID,
                            "ts": BASE + ts, "dur": dur, "args": args})

    def launch(self, ts: int, dur: int, kernel: str, k_ts: int, k_dur: int) -> None:
        """A `cudaLaunchKernel` call and its kernel, tied by a correlation id and an ac2g flow."""
        self.corr += 1
        c = self.corr
        self.cpu("cudaLaunchKernel", ts, dur, cat="cuda_runtime", correlation=c, cbid=211)
        self.events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": GPU, "tid": STREAM,
                            "ts": BASE + k_ts, "dur": k_dur,
                            "args": {"device": GPU, "context": 1, "stream": STREAM, "correlation": c}})
        self.events.append({"ph": "s", "id": c, "pid": PID, "tid": TID, "ts": BASE + ts, "cat": "ac2g",
                            "name": "ac2g"})
        self.events.append({"ph": "f", "id": c, "pid": GPU, "tid": STREAM, "ts": BASE + k_ts, "cat": "ac2g",
                            "name": "ac2g", "bp": "e"})

    def synchronize(self, ts: int, dur: int) -> None:
        """`cudaDeviceSynchronize` and Kineto's `Context Sync` record of it."""
        self.corr += 1
        c = self.corr
        self.cpu("cudaDeviceSynchronize", ts, dur, cat="cuda_runtime", correlation=c, cbid=165)
        self.events.append({"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": GPU, "tid": -1,
                            "ts": BASE + ts + 1, "dur": dur - 2,
                            "args": {"cuda_sync_kind": "Context Sync", "wait_on_stream": -1,
                                     "wait_on_cuda_event_record_corr_id": -1, "stream": -1,
                                     "correlation": c, "device": GPU, "context": 1}})

    def trace(self) -> dict[str, Any]:
        meta = [{"name": "process_name", "ph": "M", "ts": BASE, "pid": PID, "tid": 0,
                 "args": {"name": "python3"}},
                {"name": "process_name", "ph": "M", "ts": BASE, "pid": GPU, "tid": 0,
                 "args": {"name": "python3"}},
                {"name": "process_labels", "ph": "M", "ts": BASE, "pid": GPU, "tid": 0,
                 "args": {"labels": "GPU 0"}},
                {"name": "thread_name", "ph": "M", "ts": BASE, "pid": GPU, "tid": STREAM,
                 "args": {"name": f"stream {STREAM}"}}]
        return {"schemaVersion": 1, "distributedInfo": {"rank": 0},
                "deviceProperties": [{"id": GPU, "name": "NVIDIA A100-SXM4-40GB", "numSms": 108}],
                "traceEvents": meta + self.events, "traceName": "hand-written"}


def overlap_us() -> dict[str, Any]:
    """Three steps; every launch call lasts 5 µs; no kernel starts in the µs of a launch call's
    start (HTA orders such ties arbitrarily).

    Step 1 [0, 400]: `aten::linear` [5, 60] launches four kernels on stream 7 that overlap:

    | kernel | runs    | launched at | note                                        |
    |--------|---------|-------------|---------------------------------------------|
    | gemm1  | 18-118  | 10          | the stream is empty: launch edge (8 µs)     |
    | gemm2  | 113-163 | 20          | starts 5 µs before gemm1 ends               |
    | gemm3  | 160-200 | 30          | starts 3 µs before gemm2 ends               |
    | relu   | 205-215 | 40          | queued behind gemm3: a 5 µs gap             |

    `cudaDeviceSynchronize` [65, 217] waits for the stream (Context Sync).

    Step 2 [1000, 1400]: `aten::add` [1005, 1030] launches add1 (1018-1118, at 1010) and add2
    (1030-1040, at 1020: wholly inside add1); `aten::mul` [1045, 1060] launches mul at 1050, after
    add2 ended but while add1 still runs; mul runs 1123-1193; `cudaDeviceSynchronize` [1065, 1195].

    Step 3 [2000, 2400]: the same two kernels, but mul is launched at 2032, while add2 still runs:
    it is queued, and runs 2123-2193; `cudaDeviceSynchronize` [2045, 2195].

    Step 4 [3000, 3100]: one op (HTA drops a trace's last step).
    """
    w = _Writer()
    w.cpu("ProfilerStep#1", 0, 400, cat="user_annotation")
    w.cpu("aten::linear", 5, 55)
    w.launch(10, 5, "gemm1", 18, 100)
    w.launch(20, 5, "gemm2", 113, 50)
    w.launch(30, 5, "gemm3", 160, 40)
    w.launch(40, 5, "relu", 205, 10)
    w.synchronize(65, 152)
    w.cpu("ProfilerStep#2", 1000, 400, cat="user_annotation")
    w.cpu("aten::add", 1005, 25)
    w.launch(1010, 5, "add1", 1018, 100)
    w.launch(1020, 5, "add2", 1030, 10)
    w.cpu("aten::mul", 1045, 15)
    w.launch(1050, 5, "mul", 1123, 70)
    w.synchronize(1065, 130)
    w.cpu("ProfilerStep#3", 2000, 400, cat="user_annotation")
    w.cpu("aten::add", 2005, 35)
    w.launch(2010, 5, "add1", 2018, 100)
    w.launch(2020, 5, "add2", 2030, 10)
    w.launch(2032, 5, "mul", 2123, 70)
    w.synchronize(2045, 150)
    w.cpu("ProfilerStep#4", 3000, 100, cat="user_annotation")
    w.cpu("aten::zeros", 3010, 20)
    return w.trace()


def deep_queue(n: int = 1500) -> dict[str, Any]:
    """Step 1: `aten::_foreach_add_` [10, 2n + 20] launches n kernels, call i at 10 + 2i (1 µs);
    kernel i runs 6 µs from 11 + 6i (back to back: from kernel 1 on each is queued behind the
    previous one; calls start on even µs, kernels on odd ones, so there are no ties).  The queue
    at call i holds i + 1 - ceil((2i - 1) / 6) (the kernels started by then): 1,000 at the last call.
    `cudaDeviceSynchronize` waits from the op's end to 1 µs after the last kernel ends.
    Step 2: one op (HTA drops a trace's last step)."""
    w = _Writer()
    op_end = 2 * n + 20
    last_end = 11 + 6 * n
    w.cpu("ProfilerStep#1", 0, last_end + 20, cat="user_annotation")
    w.cpu("aten::_foreach_add_", 10, op_end - 10)
    for i in range(n):
        w.launch(10 + 2 * i, 1, "vectorized_elementwise_kernel", 11 + 6 * i, 6)
    w.synchronize(op_end + 2, last_end + 1 - (op_end + 2))
    w.cpu("ProfilerStep#2", last_end + 100, 100, cat="user_annotation")
    w.cpu("aten::zeros", last_end + 110, 20)
    return w.trace()


def ties_us(n: int = 400, seed: int = 1) -> dict[str, Any]:
    """Step 1: n top-level ops every 6 µs, each 4 µs long, each launching one kernel (call 1 µs
    into the op, 2 µs long).  Kernel i starts 2, 3 or 6 µs after its call (6: in the µs in which
    the next call starts, a tie) but not before the previous kernel ends (+0 or 1 µs), and runs
    1-10 µs (drawn with `random.Random(seed)`).  `cudaDeviceSynchronize` waits for the last.
    Step 2: one op (HTA drops a trace's last step)."""
    rng = random.Random(seed)
    w = _Writer()
    w.cpu("ProfilerStep#1", 0, 6 * n + 2000, cat="user_annotation")
    prev_end = 0
    for i in range(n):
        op = 10 + 6 * i
        w.cpu("aten::op", op, 4)
        start = max(op + 1 + rng.choice([2, 3, 6, 6, 6, 6]), prev_end + rng.choice([0, 0, 1]))
        dur = rng.randint(1, 10)
        w.launch(op + 1, 2, "k", start, dur)
        prev_end = start + dur
    end = 10 + 6 * n
    w.synchronize(end, max(prev_end - end + 1, 3))
    w.cpu("ProfilerStep#2", 6 * n + 3000, 100, cat="user_annotation")
    w.cpu("aten::zeros", 6 * n + 3010, 20)
    return w.trace()


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for name, trace in (("overlap_us", overlap_us()), ("deep_queue", deep_queue()), ("ties_us", ties_us())):
        data = json.dumps(trace, separators=(",", ":")).encode()
        (OUT / f"{name}.json.gz").write_bytes(gzip.compress(data, mtime=0))


if __name__ == "__main__":
    main()
