"""Record the PyTorch trace with partially overlapping slices, and torch's own numbers for it.

Run from the repository root with torch installed (CPU wheel is enough)::

    pip install torch==2.13.0
    python tests/data/make_torch_overlap.py

Writes, next to this script:

- ``torch_overlap.json.gz``: two training steps of a tiny MLP (forward in a
  ``record_function("## forward ##")``, backward in ``"## backward ##"``, an SGD
  step, whose ``Optimizer.step#SGD.step`` annotation torch adds itself),
  recorded with ``record_shapes=True``, ``with_stack=True`` and
  ``profile_memory=True``.  With ``with_stack`` the trace has the Python frames
  (``python_function``); every ``record_function`` starts inside the
  ``__enter__`` / ``_record_function_enter_new`` frames and ends inside the
  ``__exit__`` frames, so each annotation partly overlaps those helpers.
- ``torch_overlap_key_averages.json``: ``prof.key_averages()`` of the same
  run, the framework's own numbers: ``{name: {"count", "self_cpu_time_total",
  "cpu_time_total"}}`` (times in µs as torch computes them, floats), plus
  ``self_cpu_time_total`` over all names.

The outputs are committed; re-running changes the timings, and the tests
derive every expected value from these two files, so that is fine.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function

HERE = Path(__file__).parent


def _steps(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, n: int) -> None:
    loss_fn = nn.MSELoss()
    for _ in range(n):
        opt.zero_grad()
        with record_function("## forward ##"):
            loss = loss_fn(model(x), y)
        with record_function("## backward ##"):
            loss.backward()
        opt.step()


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)  # one thread: a small trace with one CPU track
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 16)
    y = torch.randn(8, 4)
    _steps(model, opt, x, y, 1)  # warm-up outside the profiler: no lazy initialisation in the trace
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True,
                     profile_memory=True) as prof:
            _steps(model, opt, x, y, 2)
        prof.export_chrome_trace(path)
        data = Path(path).read_bytes()
    out = HERE / "torch_overlap.json.gz"
    out.write_bytes(gzip.compress(data, mtime=0))
    averages = {
        e.key: {"count": e.count, "self_cpu_time_total": e.self_cpu_time_total,
                "cpu_time_total": e.cpu_time_total}
        for e in prof.key_averages()
    }
    numbers = {"torch": torch.__version__, "unit": "us",
               "self_cpu_time_total": sum(v["self_cpu_time_total"] for v in averages.values()),
               "key_averages": averages}
    text = json.dumps(numbers, indent=1, sort_keys=True) + "\n"
    (HERE / "torch_overlap_key_averages.json").write_text(text)
    print(f"{out.name}: {len(data)} bytes uncompressed, {out.stat().st_size} stored; {len(averages)} keys")


if __name__ == "__main__":
    main()
