"""Generate a PyTorch-profiler-shaped Chrome trace (Kineto JSON) of N timeline events.

    python benchmarks/make_pytorch_trace.py [--events 1000000] [--gzip] [--gpu] [--out PATH]

``--events N`` is the number of timeline events: ``X`` slices (``cpu_op``,
``python_function``, ``cuda_runtime``, ``kernel``, ``user_annotation``).  The
``[memory]`` instants, ``ac2g`` flow records (``s``/``f``) and ``M``
metadata records come on top of those N, as they would in a real trace with N
timeline events (about 1.5 records per X event here); the script prints both
counts.  Generation stops right after the N-th ``X`` event (what belongs to it
but would follow it, e.g. its ``f`` flow end, is not written).

The layout follows what ``torch.profiler`` writes: an object with
``schemaVersion``, ``deviceProperties``, ``baseTimeNanoseconds`` and
``traceEvents``; events pretty-printed one key group per line; timestamps in
microseconds with three decimals.  Content per training step:

* ``M`` metadata (process/thread names, sort indices) at the start;
* ``ProfilerStep#k`` ``user_annotation`` on the main thread;
* forward: ``python_function`` frames around nested ``cpu_op`` X stacks
  (``aten::linear`` -> ``aten::t`` -> ``aten::transpose`` -> ``aten::as_strided``,
  ``aten::addmm`` ...) with ``Input Dims`` / ``Input type`` / ``External id`` /
  ``Sequence number`` args;
* backward on a second (autograd) thread with ``Fwd thread id``;
* each kernel: a ``cuda_runtime`` ``cudaLaunchKernel`` on the CPU thread, an
  ``ac2g`` flow (``s`` at the launch, ``f`` with ``bp: "e"`` at the kernel) and
  a ``kernel`` event on the GPU stream (pid 0, tid 7);
* ``[memory]`` instants (``ph: "i"``, ``s: "t"``) for allocations and frees.

``--gpu`` makes it a multi-stream GPU trace as real Kineto files are (written
to ``pytorch_<N>x_gpu.json``): forward kernels on stream 7, backward GEMMs on
stream 20, an NCCL all-reduce per backward layer on stream 24 (launched with
``cudaLaunchKernelExC``), a ``cudaMemcpyAsync`` + ``gpu_memcpy`` and a
``cudaMemsetAsync`` + ``gpu_memset`` per step, per-stream GPU clocks (so
streams overlap), each kernel written *before* its launch with the flow ``f``
before its ``s`` (the file order of real traces), and a
``cudaStreamIsCapturing`` per step with the lone ``f`` Kineto writes for it.

Deterministic for a given N and seed.  Written streaming (batches of
formatted lines), so memory stays small whatever N is.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
from pathlib import Path
from typing import IO, Any

DATA = Path(__file__).parent / "data"
PID = 2417031
MAIN_TID = 2417031
BWD_TID = 2417188
GPU_PID = 0
STREAM = 7
BWD_STREAM = 20
COMM_STREAM = 24
GPU_THREADS = (("thread_name", GPU_PID, BWD_STREAM, "stream 20 "),
               ("thread_name", GPU_PID, COMM_STREAM, "stream 24 "))
NCCL_KERNEL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
BASE_US = 1_712_300_000_000_000  # ns; printed timestamps are relative-ish microseconds

# (name, input dims, input types, kernel) per forward op; children are expanded below
LINEAR_KERNEL = "ampere_sgemm_128x64_tn"
GELU_KERNEL = (
    "void at::native::vectorized_elementwise_kernel<4, "
    "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::"
    "{lambda(float)#1}, at::detail::Array<char*, 2> >(int, "
    "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::"
    "{lambda(float)#1}, at::detail::Array<char*, 2>)"
)
LN_KERNEL = (
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"
    "(int, float, float const*, float const*, float const*, float*, float*, float*)"
)
ADD_KERNEL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"
)
SOFTMAX_KERNEL = (
    "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>"
    "(float*, float const*, int, int, int, bool const*, int, bool)"
)
MM_KERNEL = "ampere_sgemm_64x64_nn"


class Writer:
    """Formats events into batches of lines and streams them out."""

    def __init__(self, out: IO[str], limit: int, rng: random.Random, gpu: bool = False) -> None:
        self.out = out
        self.gpu = gpu
        self.clocks: dict[int, int] = {}  # --gpu: per-stream GPU clock (ns)
        self.limit = limit
        self.rng = rng
        self.count = 0  # records written
        self.timeline = 0  # X events written (the N of --events)
        self.lines: list[str] = []
        self.compact = False
        self.external_id = 0
        self.sequence = 0
        self.correlation = 0
        self.gpu_clock = 0  # ns
        self.addr = 0x7F3A_0000_0000
        self.allocated = 0
        self.reserved = 2 * 1024**3

    @property
    def full(self) -> bool:
        return self.timeline >= self.limit

    def _emit(self, text: str, timeline: bool = False) -> None:
        if self.full:  # exactly N X events: drop the rest of the last op
            return
        if self.count:
            self.lines.append(",\n")
        self.lines.append(text)
        self.count += 1
        self.timeline += timeline
        if len(self.lines) >= 20000:
            self.flush()

    def flush(self) -> None:
        text = "".join(self.lines)
        if self.compact:  # one event per line: the same JSON without the indentation
            text = _INDENT.sub(" ", text).replace("{ ", "{").replace(" }", "}")
        self.out.write(text)
        self.lines.clear()

    # -- event kinds -----------------------------------------------------
    def x(self, cat: str, name: str, pid: int, tid: int, ts: int, dur: int, args: str) -> None:
        self._emit(
            f'  {{\n    "ph": "X", "cat": "{cat}", "name": {json.dumps(name)}, "pid": {pid}, "tid": {tid},\n'
            f'    "ts": {us(ts)}, "dur": {us(dur)},\n    "args": {{\n      {args}\n    }}\n  }}',
            timeline=True,
        )

    def flow(self, ph: str, fid: int, pid: int, tid: int, ts: int) -> None:
        bp = ', "bp": "e"' if ph == "f" else ""
        self._emit(
            f'  {{\n    "ph": "{ph}", "id": {fid}, "pid": {pid}, "tid": {tid}, "ts": {us(ts)},\n'
            f'    "cat": "ac2g", "name": "ac2g"{bp}\n  }}'
        )

    def memory(self, tid: int, ts: int, nbytes: int, addr: int) -> None:
        self.allocated += nbytes
        self._emit(
            f'  {{\n    "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",\n'
            f'    "pid": {PID}, "tid": {tid},\n    "ts": {us(ts)},\n    "args": {{\n'
            f'      "Total Reserved": {self.reserved}, "Total Allocated": {self.allocated}, '
            f'"Bytes": {nbytes}, "Addr": {addr}, "Device Id": 0, "Device Type": 1\n    }}\n  }}'
        )

    def metadata(self, name: str, pid: int, tid: int, value: Any) -> None:
        key = "sort_index" if name.endswith("sort_index") else "name"
        key = "labels" if name == "process_labels" else key
        self._emit(
            f'  {{\n    "name": "{name}", "ph": "M", "ts": {us(0)}, "pid": {pid}, "tid": {tid},\n'
            f'    "args": {{\n      "{key}": {json.dumps(value)}\n    }}\n  }}'
        )

    # -- composite ops ---------------------------------------------------
    def launch(self, tid: int, ts: int, kernel: str, ext: int, grid: int, stream: int = STREAM,
               api: str = "cudaLaunchKernel", cat: str = "kernel") -> int:
        """cudaLaunchKernel at ts on tid + flow + kernel; returns the launch's end."""
        self.correlation += 1
        corr = self.correlation
        dur = self.rng.randint(3_000, 9_000)
        clock = self.clocks.get(stream, 0) if self.gpu else self.gpu_clock
        k_start = max(clock, ts + dur + self.rng.randint(2_000, 20_000))
        k_dur = self.rng.randint(2_000, 400_000) if cat == "kernel" else self.rng.randint(1_000, 20_000)
        clock = k_start + k_dur + self.rng.randint(500, 3_000)
        if self.gpu:
            self.clocks[stream] = clock
            self.gpu_clock = max(self.gpu_clock, clock)
        else:
            self.gpu_clock = clock
        args = f'"External id": {ext},\n      "queued": 0, "device": 0, "context": 1,\n' \
               f'      "stream": {stream}, "correlation": {corr}'
        if cat == "kernel":
            args += f',\n      "registers per thread": 128,\n' \
                    f'      "shared memory": 16384,\n      "blocks per SM": {grid / 108:.6f},\n' \
                    f'      "warps per SM": {grid * 4 / 108:.6f},\n      "grid": [{grid}, 1, 1],\n' \
                    f'      "block": [128, 1, 1],\n      "est. achieved occupancy %": {min(100, grid // 2)}'
        runtime = (f'"External id": {ext}, "cbid": 211, "correlation": {corr}',)
        if self.gpu:  # device side first, as in real files: the flow's f precedes its s
            self.x(cat, kernel, GPU_PID, stream, k_start, k_dur, args)
            self.flow("f", corr, GPU_PID, stream, k_start)
            self.x("cuda_runtime", api, PID, tid, ts, dur, runtime[0])
            self.flow("s", corr, PID, tid, ts + 1_000)
            return ts + dur
        self.x("cuda_runtime", api, PID, tid, ts, dur, runtime[0])
        self.flow("s", corr, PID, tid, ts + 1_000)
        self.x(cat, kernel, GPU_PID, stream, k_start, k_dur, args)
        self.flow("f", corr, GPU_PID, stream, k_start)
        return ts + dur

    def step_extras(self, ts: int) -> int:
        """--gpu: a cudaStreamIsCapturing (with Kineto's lone f), an H2D copy and a memset."""
        self.correlation += 1
        self.x("cuda_runtime", "cudaStreamIsCapturing", PID, MAIN_TID, ts, 2_000,
               f'"External id": 0, "cbid": 317, "correlation": {self.correlation}')
        self.flow("f", self.correlation, PID, MAIN_TID, ts)
        ts = self.launch(MAIN_TID, ts + 3_000, "Memcpy HtoD (Pinned -> Device)", 0, 1,
                         api="cudaMemcpyAsync", cat="gpu_memcpy")
        return self.launch(MAIN_TID, ts + 1_000, "Memset (Device)", 0, 1, api="cudaMemsetAsync",
                           cat="gpu_memset")

    def cpu_op(self, tid: int, name: str, ts: int, dims: str, types: str, body: Any, seq: bool = True,
               fwd: bool = False) -> int:
        """A cpu_op X event around body(t) -> end; returns its end."""
        self.external_id += 1
        ext = self.external_id
        extra = ""
        if seq:
            self.sequence += 1
            extra = f', "Sequence number": {self.sequence}'
            if fwd:
                extra += ', "Fwd thread id": 1'
        # children are emitted before the parent here; parsers must not rely on order
        start = ts
        end = body(ts + self.rng.randint(1_000, 4_000), ext) + self.rng.randint(1_000, 5_000)
        self.x("cpu_op", name, PID, tid, start, end - start,
               f'"External id": {ext},"Record function id": 0{extra}, "Ev Idx": {self.count}, '
               f'"Input Dims": {dims}, "Input type": {types}')
        return end

    def leaf(self, tid: int, name: str, ts: int, dims: str, types: str) -> int:
        self.external_id += 1
        dur = self.rng.randint(1_000, 6_000)
        self.x("cpu_op", name, PID, tid, ts, dur,
               f'"External id": {self.external_id},"Record function id": 0, "Ev Idx": {self.count}, '
               f'"Input Dims": {dims}, "Input type": {types}')
        return ts + dur

    def alloc(self, tid: int, ts: int, size: int) -> int:
        self.addr += size + 512
        self.memory(tid, ts, size, self.addr)
        return self.addr

    def linear(self, tid: int, ts: int, m: int, k: int, n: int) -> int:
        dims = f"[[{m}, {k}], [{n}, {k}], [{n}]]"
        types = '["float", "float", "float"]'

        def body(t: int, ext: int) -> int:
            def t_body(t2: int, e2: int) -> int:
                def tr_body(t3: int, e3: int) -> int:
                    return self.leaf(tid, "aten::as_strided", t3, f"[[{n}, {k}], [], [], []]",
                                     '["float", "", "", ""]')
                return self.cpu_op(tid, "aten::transpose", t2, f"[[{n}, {k}], [], []]",
                                   '["float", "Scalar", "Scalar"]', tr_body, seq=False)
            t = self.cpu_op(tid, "aten::t", t, f"[[{n}, {k}]]", '["float"]', t_body, seq=False)

            def mm_body(t2: int, e2: int) -> int:
                self.alloc(tid, t2, m * n * 4)
                return self.launch(tid, t2 + 2_000, LINEAR_KERNEL, e2, max(1, m * n // 8192))
            return self.cpu_op(tid, "aten::addmm", t + 1_000, f"[[{n}], [{m}, {k}], [{k}, {n}], [], []]",
                               '["float", "float", "float", "Scalar", "Scalar"]', mm_body)

        return self.cpu_op(tid, "aten::linear", ts, dims, types, body)

    def pointwise(self, tid: int, ts: int, name: str, kernel: str, m: int, n: int) -> int:
        def body(t: int, ext: int) -> int:
            self.alloc(tid, t, m * n * 4)
            return self.launch(tid, t + 1_500, kernel, ext, max(1, m * n // 4096))
        return self.cpu_op(tid, name, ts, f"[[{m}, {n}]]", '["float"]', body)

    def module(self, tid: int, ts: int, label: str, inner: Any) -> int:
        """python_function frames around inner(t) -> end."""
        start = ts
        end = inner(ts + 2_000) + 2_000
        pid_ = self.rng.randint(1, 10_000)
        self.x("python_function", f"nn.Module: {label}", PID, tid, start, end - start,
               f'"Python parent id": {pid_}, "Python id": {pid_ + 1}, "Python thread": 0')
        return end

    def backward(self, ts: int, m: int, k: int, n: int) -> int:
        tid = BWD_TID
        stream = BWD_STREAM if self.gpu else STREAM

        def fn(t: int, ext: int) -> int:
            def bw(t2: int, e2: int) -> int:
                t2 = self.cpu_op(tid, "aten::mm", t2, f"[[{m}, {n}], [{n}, {k}]]", '["float", "float"]',
                                 lambda t3, e3: self.launch(tid, t3, MM_KERNEL, e3, max(1, m * k // 8192),
                                                            stream),
                                 seq=False)
                t2 = self.cpu_op(tid, "aten::mm", t2 + 1_000, f"[[{n}, {m}], [{m}, {k}]]",
                                 '["float", "float"]',
                                 lambda t3, e3: self.launch(tid, t3, MM_KERNEL, e3, max(1, n * k // 8192),
                                                            stream),
                                 seq=False)
                if not self.gpu:
                    return t2
                return self.cpu_op(tid, "nccl:all_reduce", t2 + 1_000, f"[[{k}, {n}]]", '["float"]',
                                   lambda t3, e3: self.launch(tid, t3, NCCL_KERNEL, e3, 8, COMM_STREAM,
                                                              api="cudaLaunchKernelExC"), seq=False)
            return self.cpu_op(tid, "AddmmBackward0", t, "[]", "[]", bw, fwd=True)

        return self.cpu_op(tid, "autograd::engine::evaluate_function: AddmmBackward0", ts, "[]", "[]", fn,
                           seq=False)


def us(ns: int) -> str:
    """Microseconds with three decimals, as Kineto prints them."""
    return f"{ns // 1000}.{ns % 1000:03d}"


_INDENT = re.compile(r"\n {4,}|\n  (?=\})")


def generate(out: IO[str], events: int, seed: int = 0, gpu: bool = False,
             compact: bool = False) -> tuple[int, int]:
    """Write the trace; returns (records, X events).  ``compact``: one event
    per line, without the indentation inside events (the same JSON, ~15 %
    smaller: 10M events stay within simdjson's 4 GiB document limit)."""
    rng = random.Random(seed)
    header = {
        "schemaVersion": 1,
        "deviceProperties": [{
            "id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85174583296,
            "computeMajor": 8, "computeMinor": 0, "maxThreadsPerBlock": 1024,
            "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "regsPerMultiprocessor": 65536,
            "warpSize": 32, "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 167936,
            "numSms": 108, "sharedMemPerBlockOptin": 166912,
        }],
        "cupti_version": 16, "cuda_runtime_version": 12010, "cuda_driver_version": 12020,
        "trace_id": "5F2C0E7A3B1D4C8E9A0B1C2D3E4F5A6B",
    }
    out.write("{\n")
    for key, value in header.items():
        out.write(f'  "{key}": {json.dumps(value, indent=None)},\n')
    out.write('  "traceEvents": [\n')
    w = Writer(out, events, rng, gpu)
    w.compact = compact
    for name, pid, tid, value in (
        ("process_name", PID, 0, "python3"), ("process_labels", PID, 0, "CPU"),
        ("process_sort_index", PID, 0, PID), ("thread_name", PID, MAIN_TID, "thread 1 (python3)"),
        ("thread_sort_index", PID, MAIN_TID, MAIN_TID),
        ("thread_name", PID, BWD_TID, "thread 2 (pt_autograd_0)"),
        ("process_name", GPU_PID, 0, "python3"), ("process_labels", GPU_PID, 0, "GPU 0"),
        ("thread_name", GPU_PID, STREAM, "stream 7 "),
        *GPU_THREADS[:len(GPU_THREADS) if gpu else 0],
    ):
        if not w.full:
            w.metadata(name, pid, tid, value)
    t = 5_000_000
    step = 0
    sizes = [(32, 1024, 1024), (32, 1024, 4096), (32, 4096, 1024), (64, 768, 768), (128, 512, 2048)]
    while not w.full:
        step_start = t
        fwd_ops = 0
        cursor = t + 10_000
        if gpu and not w.full:
            cursor = w.step_extras(cursor) + 2_000
        while not w.full and fwd_ops < 24:
            m, k, n = sizes[rng.randrange(len(sizes))]
            label = f"Linear_{fwd_ops}"

            def layer(tt: int, m: int = m, k: int = k, n: int = n) -> int:
                tt = w.linear(MAIN_TID, tt, m, k, n)
                if rng.random() < 0.5:
                    return w.pointwise(MAIN_TID, tt + 1_000, "aten::gelu", GELU_KERNEL, m, n)
                if rng.random() < 0.5:
                    return w.pointwise(MAIN_TID, tt + 1_000, "aten::layer_norm", LN_KERNEL, m, n)
                if rng.random() < 0.5:
                    return w.pointwise(MAIN_TID, tt + 1_000, "aten::_softmax", SOFTMAX_KERNEL, m, n)
                return w.pointwise(MAIN_TID, tt + 1_000, "aten::add", ADD_KERNEL, m, n)

            cursor = w.module(MAIN_TID, cursor, label, layer) + rng.randint(1_000, 8_000)
            fwd_ops += 1
        bcursor = cursor + 5_000
        for _ in range(fwd_ops):
            if w.full:
                break
            m, k, n = sizes[rng.randrange(len(sizes))]
            bcursor = w.backward(bcursor, m, k, n) + rng.randint(1_000, 6_000)
            if not w.full and rng.random() < 0.3:
                w.memory(BWD_TID, bcursor, -m * n * 4, w.addr)
        t = max(bcursor, w.gpu_clock) + 20_000
        if not w.full:
            w.x("user_annotation", f"ProfilerStep#{step}", PID, MAIN_TID, step_start, t - step_start - 5_000,
                '"External id": 0, "Record function id": 0')
        step += 1
    w.flush()
    out.write("\n  ],\n")
    out.write('  "traceName": "rank0.pt.trace.json",\n')
    out.write(f'  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": {BASE_US}\n}}\n')
    return w.count, w.timeline


def default_path(events: int, gz: bool = False, gpu: bool = False, compact: bool = False) -> Path:
    # "x": N counts X events (older files named pytorch_<N>.json counted all records)
    return DATA / f"pytorch_{events}x{'_gpu' if gpu else ''}{'_compact' if compact else ''}" \
        f".json{'.gz' if gz else ''}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="X (timeline) events")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gzip", action="store_true", help="write a .json.gz")
    parser.add_argument("--gpu", action="store_true", help="several streams, NCCL, memcpy/memset, f before s")
    parser.add_argument("--compact", action="store_true", help="one event per line, no indentation")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    path = args.out or default_path(args.events, args.gzip, args.gpu, args.compact)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    if args.gzip:
        with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=6, newline="\n") as f:
            records, timeline = generate(f, args.events, args.seed, args.gpu, args.compact)
    else:
        with open(tmp, "w", encoding="utf-8", newline="\n", buffering=1 << 20) as f:
            records, timeline = generate(f, args.events, args.seed, args.gpu, args.compact)
    tmp.replace(path)
    print(f"{path}: {timeline} X events, {records} records, {path.stat().st_size / 1e6:.1f} MB",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
