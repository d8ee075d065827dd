"""Record the small real PyTorch memory-timeline files used by ``tests/test_torch_memory.py``.

Run from the repository root with torch installed (the CPU wheel is enough)::

    python tests/data/make_torch_memory.py

One profiled run (a tiny MLP, 3 training steps with Adam so every category
shows up: parameters, gradients, activations, optimizer state, inputs,
temporaries) exported four ways from the same ``torch.profiler.profile``
(``record_shapes``, ``profile_memory`` and ``with_stack``, which
``export_memory_timeline`` needs), into ``tests/data/torch_memory/``:

- ``mlp_adam.trace.json.gz``: the Chrome trace (``prof.export_chrome_trace``),
- ``mlp_adam.memory.json``: ``prof.export_memory_timeline(path, "cpu")`` with a
  ``.json`` suffix: ``[times_us, sizes_by_category]``,
- ``mlp_adam.memory.raw.json.gz``: the same with ``.raw.json.gz``: the raw
  ``[time_ns, action, bytes, category]`` events.

Memory snapshots (``torch_snapshot`` format), pickles:

- ``mlp_adam.profile_snapshot.pickle``: ``torch.cuda._memory_viz._profile_to_snapshot(prof)``
  of the same run: torch's own converter from a CPU profile to the snapshot
  structure (no ``time_us``: it keeps the order of events only).
- ``cuda_snapshot_synthetic.pickle``: there is no GPU here, so a small CUDA
  snapshot with ``time_us`` is built by :func:`synthetic_cuda_snapshot` by hand,
  following the structure documented in ``torch.cuda.memory._snapshot``: a
  segment reserved before recording (holding a block allocated before
  recording), a segment reserved during it, allocations with stack frames,
  free_requested / free_completed, an ``oom`` entry and a segment_free.

``tests/data/torch_memory/`` holds symlinks to the bundled examples
(``jupyter_profview/examples/torch_memory/``: the trace, both memory timelines and
the synthetic CUDA snapshot); writing through them replaces the one copy.

The ``.html`` variant only embeds a PNG picture of the plot (and needs
matplotlib), so it is not generated; the tests build one from torch's template.
Re-running changes timings; the tests derive expected values from the files.
"""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

OUT = Path(__file__).parent / "torch_memory"


MiB = 2**20


def _frames(*names: str) -> list[dict[str, object]]:
    """Innermost first, as torch records them."""
    return [{"filename": "/work/train.py" if not n.startswith("torch") else f"/site-packages/{n}.py",
             "line": 10 + i, "name": n.rsplit("/", 1)[-1]} for i, n in enumerate(names)]


def synthetic_cuda_snapshot() -> dict[str, object]:
    """A hand-built snapshot in the documented structure (see the module docstring)."""
    seg0, seg1 = 0x7F0000000000, 0x7F0000200000
    t0 = 1_795_000_000_000_000  # µs since the epoch
    trace: list[dict[str, object]] = []

    def entry(action: str, addr: int, size: int, dt: int, frames: list[dict[str, object]] | None = None,
              **extra: object) -> None:
        trace.append({"action": action, "addr": addr, "size": size, "stream": 7, "time_us": t0 + dt,
                      "frames": frames or [], **extra})

    fwd = _frames("torch/nn/functional/linear", "forward", "train_step", "main")
    bwd = _frames("torch/autograd/graph/_engine_run_backward", "backward", "train_step", "main")
    opt = _frames("torch/optim/adam/_single_tensor_adam", "step", "train_step", "main")
    entry("alloc", seg0 + 1 * MiB, 256 * 1024, 10, fwd)          # activation 1
    entry("alloc", seg0 + 1 * MiB + 256 * 1024, 256 * 1024, 20, fwd)  # activation 2
    entry("segment_alloc", seg1, 2 * MiB, 30, bwd)
    entry("alloc", seg1, 1 * MiB, 31, bwd)                       # gradient buffer
    entry("free_requested", seg0 + 1 * MiB, 256 * 1024, 40, fwd)
    entry("free_completed", seg0 + 1 * MiB, 256 * 1024, 41, fwd)
    entry("alloc", seg1 + 1 * MiB, 512 * 1024, 50, opt)          # optimizer temporary
    entry("oom", 0, 64 * MiB, 55, opt, device_free=3 * MiB)
    entry("free_requested", seg1 + 1 * MiB, 512 * 1024, 60, opt)
    entry("free_completed", seg1 + 1 * MiB, 512 * 1024, 61, opt)
    entry("free_requested", seg1, 1 * MiB, 70, bwd)
    entry("free_completed", seg1, 1 * MiB, 71, bwd)
    entry("segment_free", seg1, 2 * MiB, 80, bwd)
    weights = _frames("torch/nn/modules/module/_apply", "cuda", "main")
    segments = [{
        "device": 0, "address": seg0, "total_size": 2 * MiB, "allocated_size": 1 * MiB + 256 * 1024,
        "active_size": 1 * MiB + 256 * 1024, "requested_size": 1 * MiB + 256 * 1024, "stream": 7,
        "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False, "frames": weights,
        "blocks": [
            {"address": seg0, "size": 1 * MiB, "requested_size": 1 * MiB, "state": "active_allocated",
             "frames": weights},                                  # weights, from before recording
            {"address": seg0 + 1 * MiB, "size": 256 * 1024, "requested_size": 256 * 1024,
             "state": "inactive", "frames": []},
            {"address": seg0 + 1 * MiB + 256 * 1024, "size": 256 * 1024, "requested_size": 200 * 1024,
             "state": "active_allocated", "frames": fwd},
            {"address": seg0 + 1 * MiB + 512 * 1024, "size": 512 * 1024, "requested_size": 0,
             "state": "inactive", "frames": []},
        ],
    }]
    return {"segments": segments, "device_traces": [trace, []],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1}}


def main() -> None:
    OUT.mkdir(exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True,
                 with_stack=True) as prof:
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
    trace = OUT / "mlp_adam.trace.json"
    prof.export_chrome_trace(str(trace))
    (OUT / "mlp_adam.trace.json.gz").write_bytes(gzip.compress(trace.read_bytes(), mtime=0))
    trace.unlink()
    prof.export_memory_timeline(str(OUT / "mlp_adam.memory.json"), "cpu")
    prof.export_memory_timeline(str(OUT / "mlp_adam.memory.raw.json.gz"), "cpu")
    from torch.cuda._memory_viz import _profile_to_snapshot

    with open(OUT / "mlp_adam.profile_snapshot.pickle", "wb") as f:
        pickle.dump(_profile_to_snapshot(prof), f)
    with open(OUT / "cuda_snapshot_synthetic.pickle", "wb") as f:
        pickle.dump(synthetic_cuda_snapshot(), f)
    for path in sorted(OUT.iterdir()):
        print(path, path.stat().st_size)


if __name__ == "__main__":
    main()
