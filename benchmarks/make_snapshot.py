"""Realistic CUDA memory snapshots (``torch.cuda.memory._snapshot()`` structure) from a simulated
caching allocator, at any size, with or without an out-of-memory at the end.

There is no GPU here, so no snapshot can be recorded; this follows the documented structure and
what ``torch/csrc/cuda/memory_snapshot.cpp`` writes: ``segments`` (``device``, ``address``,
``total_size``, ``allocated_size``, ``active_size``, ``requested_size``, ``stream``,
``segment_type``, ``segment_pool_id``, ``is_expandable``, ``frames``, ``blocks`` of ``address``,
``size``, ``requested_size``, ``state``, ``frames``) and ``device_traces`` (per device, entries
of ``action``, ``addr`` -- ``device_free`` instead for ``oom`` --, ``size``, ``stream``,
``time_us``, ``frames`` of ``name`` / ``filename`` / ``line``).

The allocator: sizes rounded up to 512 B; requests up to 1 MiB from 2 MiB segments (the small
pool), larger ones from segments of 20 MiB (requests under 10 MiB) or the request rounded up to
2 MiB; best fit among free blocks of the pool, the rest split off (large pool: only when more
than 1 MiB is left); freed blocks merge with free neighbours; when a new segment would pass the
device's capacity the empty cached segments are released first, then the request is an ``oom``.

A run: weights allocated before recording started (blocks without an alloc in the trace), a
training iteration (forward activations, backward frees and gradients, an optimizer step) that
returns the allocator to the same state, repeated to reach the requested size, then optionally
``oom="fragmentation"`` (interleaved long- and short-lived blocks leave enough memory free in
reserved segments but no block large enough) or ``oom="capacity"`` (live tensors themselves
outgrow the device).

``write(path, entries=..., protocol=4)`` streams the pickle (any size, bounded memory): protocol
4/5 are written opcode for opcode as Python's C pickler writes them (tests/test_snapshot_gen.py
compares the bytes with ``pickle.dumps``), protocol 2/3 through ``pickle.dump`` of the whole
object (small snapshots only).  ``python benchmarks/make_snapshot.py OUT --mb 100`` writes one.
"""

from __future__ import annotations

import argparse
import io
import pickle
import random
import struct
from pathlib import Path
from typing import Any, BinaryIO

MB = 1 << 20
SMALL, LARGE = 1 * MB, 10 * MB
LIB = "/usr/local/lib/python3.11/site-packages/torch/lib/libc10_cuda.so"  # C++ frames: the library
BYTES_PER_ENTRY = 240  # of this workload (protocol 4), measured


def _stacks(rng: random.Random, n: int) -> list[list[tuple[str, str, int]]]:
    """``n`` call stacks, innermost first: allocator C++ frames, torch frames, then model code."""
    cpp = [
        ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc", LIB, 0),
        ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate", LIB, 0),
        ("at::TensorBase at::detail::_empty_generic<long>", LIB, 0),
        ("at::detail::empty_cuda", LIB, 0),
    ]
    torch = [
        ("forward", "torch/nn/modules/linear.py", 125),
        ("_call_impl", "torch/nn/modules/module.py", 1750),
        ("_wrapped_call_impl", "torch/nn/modules/module.py", 1739),
        ("backward", "torch/_tensor.py", 648),
        ("_engine_run_backward", "torch/autograd/graph.py", 824),
        ("step", "torch/optim/adam.py", 226),
        ("forward", "torch/nn/modules/activation.py", 133),
        ("forward", "torch/nn/modules/normalization.py", 217),
    ]
    model = [(f"block_{k}", "model.py", 40 + 7 * k) for k in range(24)]
    out = []
    for _ in range(n):
        s = rng.sample(cpp, rng.randint(2, 4)) + rng.sample(torch, rng.randint(2, 5))
        s += rng.sample(model, rng.randint(1, 4))
        s += [("train_step", "train.py", 88), ("<module>", "train.py", 131)]
        out.append(s)
    return out


class Allocator:
    """The caching allocator's segments and blocks of one device, and its trace."""

    def __init__(self, device: int, capacity: int, base: int) -> None:
        self.device, self.capacity, self.next_addr = device, capacity, base
        # {address, total, pool, stack, blocks: [[addr, size, owner stack or None]]}
        self.segments: list[dict[str, Any]] = []
        self.trace: list[tuple[Any, ...]] = []  # (action, addr, size, time_us, stack, device_free)
        self.recording, self.time_us = False, 1_700_000_000_000_000
        self.live: dict[int, tuple[int, int]] = {}  # addr -> (size, stack)
        self.ooms: list[dict[str, int]] = []  # the allocator's own numbers at each oom

    def state(self, requested: int) -> dict[str, int]:
        """The allocator's numbers, from its own blocks (what analysis.oom must find)."""
        free = [b[1] for s in self.segments for b in s["blocks"] if b[2] is None]
        allocated = sum(b[1] for s in self.segments for b in s["blocks"] if b[2] is not None)
        return {
            "requested": requested,
            "allocated": allocated,
            "reserved": self.reserved(),
            "free_in_reserved": sum(free),
            "largest_free": max(free, default=0),
            "device_free": self.capacity - self.reserved(),
        }

    def _emit(self, action: str, addr: int, size: int, stack: int, free: int = -1) -> None:
        if self.recording:
            self.trace.append((action, addr, size, self.time_us, stack, free))

    def reserved(self) -> int:
        return sum(s["total"] for s in self.segments)

    def alloc(self, nbytes: int, stack: int) -> int | None:
        self.time_us += 3
        size = max(512, -(-nbytes // 512) * 512)
        pool = "small" if size <= SMALL else "large"
        best = None
        for seg in self.segments:
            if seg["pool"] != pool:
                continue
            for k, b in enumerate(seg["blocks"]):
                if b[2] is None and b[1] >= size and (best is None or b[1] < best[0][1][best[1]][1]):
                    best = (seg, seg["blocks"]), k
        if best is None:
            total = 2 * MB if pool == "small" else 20 * MB if size < LARGE else -(-size // (2 * MB)) * 2 * MB
            if self.reserved() + total > self.capacity:
                for seg in [s for s in self.segments if all(b[2] is None for b in s["blocks"])]:
                    self.segments.remove(seg)
                    self._emit("segment_free", seg["address"], seg["total"], -1)
            if self.reserved() + total > self.capacity:
                self._emit("oom", 0, size, stack, self.capacity - self.reserved())
                self.ooms.append(self.state(size))
                return None
            seg = {
                "address": self.next_addr,
                "total": total,
                "pool": pool,
                "stack": stack,
                "blocks": [[self.next_addr, total, None]],
            }
            self.next_addr += total + 2 * MB
            self.segments.append(seg)
            self.segments.sort(key=lambda s: s["address"])
            self._emit("segment_alloc", seg["address"], total, stack)
            best = (seg, seg["blocks"]), 0
        (seg, blocks), k = best
        b = blocks[k]
        rest = b[1] - size
        if rest >= (512 if pool == "small" else SMALL + 1):
            blocks.insert(k + 1, [b[0] + size, rest, None])
            b[1] = size
        b[2] = stack
        self.live[b[0]] = (b[1], stack)
        self._emit("alloc", b[0], b[1], stack)
        return int(b[0])

    def free(self, addr: int) -> None:
        self.time_us += 2
        size, stack = self.live.pop(addr)
        self._emit("free_requested", addr, size, stack)
        for seg in self.segments:
            blocks = seg["blocks"]
            for k, b in enumerate(blocks):
                if b[0] == addr:
                    b[2] = None
                    if k + 1 < len(blocks) and blocks[k + 1][2] is None:
                        b[1] += blocks.pop(k + 1)[1]
                    if k > 0 and blocks[k - 1][2] is None:
                        blocks[k - 1][1] += blocks.pop(k)[1]
                    self._emit("free_completed", addr, size, stack)
                    return
        raise KeyError(addr)


def simulate(
    rng: random.Random, device: int, capacity: int, layers: int, oom: str | None, nstacks: int = 64
) -> tuple[Allocator, list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(allocator at the end, the trace before the steady iteration, the steady iteration's trace);
    the OOM tail, if any, is in the allocator's trace after both (`Allocator.trace`)."""
    a = Allocator(device, capacity, 0x7F0000000000 + device * (1 << 40))
    sizes = [rng.choice([3, 6, 12, 24]) * MB + rng.randrange(0, MB, 512) for _ in range(layers)]
    for k in range(layers):  # weights, before recording
        a.alloc(sizes[k] // 2, k % nstacks)
    a.recording = True

    def iteration() -> None:
        acts = [a.alloc(s, (k * 3) % nstacks) for k, s in enumerate(sizes)]
        small = [a.alloc(rng.choice([4096, 65536, 262144]), (k * 5 + 1) % nstacks) for k in range(layers)]
        for k in reversed(range(layers)):
            g = a.alloc(sizes[k] // 2, (k * 7 + 2) % nstacks)
            a.free(acts[k])  # type: ignore[arg-type]
            a.free(small[k])  # type: ignore[arg-type]
            a.free(g)  # type: ignore[arg-type]

    iteration()  # warm-up: the segments are created
    warm = len(a.trace)
    iteration()  # steady state: the same addresses every time
    steady = a.trace[warm:]
    head = a.trace[:warm]
    del a.trace[:]
    if oom == "fragmentation":
        keep, drop = [], []
        while True:  # 6 MiB blocks, every other one kept: free memory in 6 MiB holes
            x = a.alloc(6 * MB, 5 % nstacks)
            if x is None:
                break
            (keep if len(keep) <= len(drop) else drop).append(x)
            if a.reserved() > capacity - 20 * MB:
                break
        for x in drop:
            a.free(x)
        a.alloc(512 * MB, 9 % nstacks)  # less than the free memory in reserved segments
    elif oom == "capacity":
        while a.alloc(40 * MB, 11 % nstacks) is not None:
            pass
    return a, head, steady


def snapshot_object(
    allocs: list[Allocator],
    traces: list[list[tuple[Any, ...]]],
    stacks: list[list[tuple[str, str, int]]],
    strings: dict[str, str],
) -> dict[str, Any]:
    """The snapshot as plain containers (what ``torch.cuda.memory._snapshot()`` returns)."""
    s = strings.setdefault

    def frames(k: int) -> list[dict[str, Any]]:
        if k < 0:
            return []
        return [{"name": s(n, n), "filename": s(f, f), "line": line} for n, f, line in stacks[k]]

    segments = []
    for a in allocs:
        for seg in a.segments:
            blocks = [
                {
                    "address": b[0],
                    "size": b[1],
                    "requested_size": b[1],
                    "state": "active_allocated" if b[2] is not None else "inactive",
                    "frames": frames(b[2]) if b[2] is not None else [],
                }
                for b in seg["blocks"]
            ]
            used = sum(b[1] for b in seg["blocks"] if b[2] is not None)
            segments.append(
                {
                    "device": a.device,
                    "address": seg["address"],
                    "total_size": seg["total"],
                    "allocated_size": used,
                    "active_size": used,
                    "requested_size": used,
                    "stream": 0,
                    "segment_type": seg["pool"],
                    "segment_pool_id": (0, 0),
                    "is_expandable": False,
                    "frames": frames(seg["stack"]),
                    "blocks": blocks,
                }
            )
    return {
        "segments": segments,
        "device_traces": [[entry(e, frames) for e in t] for t in traces],
        "allocator_settings": {
            "PYTORCH_CUDA_ALLOC_CONF": "",
            "max_split_size": -1,
            "expandable_segments": False,
        },
    }


def entry(e: tuple[Any, ...], frames: Any) -> dict[str, Any]:
    action, addr, size, time_us, stack, free = e
    d: dict[str, Any] = {"action": action}
    d["device_free" if action == "oom" else "addr"] = free if action == "oom" else addr
    d.update(size=size, stream=0, time_us=time_us, frames=frames(stack))
    return d


class _Writer:
    """Protocol 4/5 opcodes as ``_pickle.Pickler`` writes them (strings memoized by identity:
    here every string comes from one pool, so by value), framed per batch."""

    def __init__(self, out: BinaryIO, protocol: int) -> None:
        self.out, self.protocol, self.memo, self.n = out, protocol, {}, 0
        self.stacks: dict[int, tuple[bytes, int]] = {}
        self.buf = io.BytesIO()
        out.write(bytes([0x80, protocol]))

    def flush(self) -> None:
        data = self.buf.getvalue()
        if data:
            self.out.write(b"\x95" + struct.pack("<Q", len(data)) + data)
        self.buf = io.BytesIO()

    def memoize(self) -> None:
        self.buf.write(b"\x94")
        self.n += 1

    def save(self, obj: Any) -> None:
        w = self.buf.write
        if obj is None:
            w(b"N")
        elif obj is True or obj is False:
            w(b"\x88" if obj else b"\x89")
        elif isinstance(obj, int):
            if 0 <= obj < 256:
                w(b"K" + bytes([obj]))
            elif 0 <= obj < 65536:
                w(b"M" + struct.pack("<H", obj))
            elif -(2**31) <= obj < 2**31:
                w(b"J" + struct.pack("<i", obj))
            else:
                raw = obj.to_bytes((obj.bit_length() + 8) // 8, "little", signed=True)
                w(b"\x8a" + bytes([len(raw)]) + raw)
        elif isinstance(obj, str):
            if obj in self.memo:
                i = self.memo[obj]
                w(b"h" + bytes([i]) if i < 256 else b"j" + struct.pack("<I", i))
                return
            raw = obj.encode("utf-8", "surrogatepass")
            w((b"\x8c" + bytes([len(raw)]) if len(raw) < 256 else b"X" + struct.pack("<I", len(raw))) + raw)
            self.memo[obj] = self.n
            self.memoize()
        elif isinstance(obj, tuple):
            if not obj:
                w(b")")
                return
            for x in obj:
                self.save(x)
            w(bytes([0x84 + len(obj)]) if len(obj) <= 3 else b"t")
            self.memoize()
        elif isinstance(obj, list):
            w(b"]")
            self.memoize()
            self._batch(obj, b"a", b"e")
        elif isinstance(obj, dict):
            w(b"}")
            self.memoize()
            self._batch([x for kv in obj.items() for x in kv], b"s", b"u", 2)
        else:
            raise TypeError(type(obj))
        if self.buf.tell() >= 65536:
            self.flush()

    def save_entry(self, e: tuple[Any, ...], frames: Any) -> None:
        """A trace entry, as `save` of `entry` writes it, its frames list from a cache: once its
        strings are memoized, a stack's bytes are the same each time (MEMOIZE takes no index)."""
        action, addr, size, time_us, stack, free = e
        self.buf.write(b"}")
        self.memoize()
        self.buf.write(b"(")
        for x in (
            "action",
            action,
            "device_free" if action == "oom" else "addr",
            free if action == "oom" else addr,
            "size",
            size,
            "stream",
            0,
            "time_us",
            time_us,
            "frames",
        ):
            self.save(x)
        cached = self.stacks.get(stack)
        if cached is None:
            strings, before, buf = len(self.memo), self.n, self.buf
            self.buf = io.BytesIO()
            self.save(frames(stack) if stack >= 0 else [])
            data, self.buf = self.buf.getvalue(), buf
            buf.write(data)
            if len(self.memo) == strings:  # every string was memoized before: these bytes repeat
                self.stacks[stack] = (data, self.n - before)
        else:
            self.buf.write(cached[0])
            self.n += cached[1]
        self.buf.write(b"u")
        if self.buf.tell() >= 65536:
            self.flush()

    def _batch(self, items: list[Any], one: bytes, many: bytes, step: int = 1) -> None:
        if len(items) == step:
            for x in items:
                self.save(x)
            self.buf.write(one)
            return
        for i in range(0, len(items), 1000 * step):
            part = items[i : i + 1000 * step]
            if len(part) == step:
                for x in part:
                    self.save(x)
                self.buf.write(one)
                continue
            self.buf.write(b"(")
            for x in part:
                self.save(x)
            self.buf.write(many)


def write(
    path: Path,
    *,
    entries: int = 20_000,
    protocol: int = 4,
    oom: str | None = "fragmentation",
    devices: int = 1,
    seed: int = 0,
    capacity: int = 8 << 30,
    layers: int = 24,
) -> dict[str, Any]:
    """Write a snapshot of about ``entries`` trace entries per device; returns what was written
    (entries per device, the OOMs)."""
    rng = random.Random(seed)
    stacks = _stacks(rng, 64)
    allocs, traces = [], []
    for d in range(devices):
        a, head, steady = simulate(rng, d, capacity, layers, oom)
        tail = list(a.trace)
        reps = max(0, (entries - len(head) - len(tail)) // max(1, len(steady)))
        allocs.append(a)
        traces.append((head, steady, reps, tail))
    strings: dict[str, str] = {}
    if protocol < 4:
        full = [
            head
            + [_shift(e, r, steady) for r in range(reps) for e in steady]
            + [_shift(e, reps - 1, steady) for e in tail]
            for head, steady, reps, tail in traces
        ]
        obj = snapshot_object(allocs, full, stacks, strings)
        path.write_bytes(pickle.dumps(obj, protocol=protocol))
        return {"entries": [len(t) for t in full], "ooms": [a.ooms for a in allocs]}
    with open(path, "wb") as f:
        wr = _Writer(f, protocol)
        obj = snapshot_object(allocs, [[] for _ in allocs], stacks, strings)
        s = strings.setdefault

        def frames(k: int) -> list[dict[str, Any]]:
            return [{"name": s(n, n), "filename": s(fn, fn), "line": line} for n, fn, line in stacks[k]]

        wr.buf.write(b"}")
        wr.memoize()
        wr.buf.write(b"(")
        wr.save("segments")
        wr.save(obj["segments"])
        wr.save("device_traces")
        wr.buf.write(b"]")
        wr.memoize()
        wr.buf.write(b"(" if devices > 1 else b"")
        counts = []
        for head, steady, reps, tail in traces:
            wr.buf.write(b"]")
            wr.memoize()
            stream = (
                e
                for part in (
                    [head],
                    ([_shift(e, r, steady) for e in steady] for r in range(reps)),
                    [[_shift(e, reps - 1, steady) for e in tail]],
                )
                for chunk in part
                for e in chunk
            )
            n = 0
            batch: list[dict[str, Any]] = []
            first = True
            for e in stream:
                batch.append(e)
                n += 1
                if len(batch) == 1000:
                    _list_batch(wr, batch, first, last=False, frames=frames)
                    first, batch = False, []
            _list_batch(wr, batch, first, last=True, frames=frames)
            counts.append(n)
        if devices == 1:
            wr.buf.write(b"a")
        else:
            wr.buf.write(b"e")
        wr.save("allocator_settings")
        wr.save(obj["allocator_settings"])
        wr.buf.write(b"u.")
        wr.flush()
    return {"entries": counts, "ooms": [a.ooms for a in allocs]}


def _shift(e: tuple[Any, ...], r: int, steady: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """Entry ``e`` moved ``r`` iterations later (the steady iteration repeats every ``period``)."""
    period = steady[-1][3] - steady[0][3] + 500 if steady else 0
    return (*e[:3], e[3] + max(r, 0) * period, *e[4:])


def _list_batch(wr: _Writer, batch: list[tuple[Any, ...]], first: bool, last: bool, frames: Any) -> None:
    """One batch of a device trace list's items, as the pickler batches them (1000 a time;
    a lone last item is an APPEND)."""
    if not batch:
        return
    if len(batch) == 1 and (not first or last):
        wr.save_entry(batch[0], frames)
        wr.buf.write(b"a")
        return
    wr.buf.write(b"(")
    for x in batch:
        wr.save_entry(x, frames)
    wr.buf.write(b"e")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--mb", type=float, default=10.0, help="about this many MB")
    ap.add_argument("--protocol", type=int, default=4)
    ap.add_argument("--oom", choices=["fragmentation", "capacity", "none"], default="fragmentation")
    args = ap.parse_args()
    per_entry = BYTES_PER_ENTRY
    info = write(
        args.out,
        entries=int(args.mb * 1e6 / per_entry),
        protocol=args.protocol,
        oom=None if args.oom == "none" else args.oom,
    )
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.1f} MB, {info['entries']} entries")


if __name__ == "__main__":
    main()
