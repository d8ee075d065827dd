"""Record small PyTorch CPU traces with Python frames, and torch's own Self CPU for them.

Run from the repository root with torch installed (the CPU wheel is enough)::

    pip install torch==2.13.0
    python tests/data/make_torch_selftime.py

Writes, next to this script:

- ``torch_selftime.json.gz``: three training steps of a small model with nested modules, recorded
  with ``record_shapes=True``, ``with_stack=True`` and ``with_modules=True``.  Each step is a
  ``record_function("## step ##")`` around ``"## forward ##"``, ``"## backward ##"`` and the
  optimizer's own ``Optimizer.step#SGD.step`` range: every range starts inside its
  ``__enter__`` / ``_record_function_enter_new`` frames and ends inside ``__exit__``, so the Python
  frames partly overlap the ranges, and ``## step ##``'s children partly overlap each other.
- ``torch_selftime_key_averages.json``: ``prof.key_averages()`` of the same run,
  ``{name: {"count", "self_cpu_time_total", "cpu_time_total"}}`` (µs floats, as torch computes
  them), and the names of the events torch flags ``is_python_function`` and ``is_user_annotation``
  (``prof.events()``), so that the tests know which names are ops, ranges or Python frames from
  torch itself.

The outputs are committed; re-running changes the timings, and the tests derive every expected
value from these two files.
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


class Block(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(torch.relu(self.fc(x)) + x)


def _steps(model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, n: int) -> None:
    for _ in range(n):
        with record_function("## step ##"):
            opt.zero_grad()
            with record_function("## forward ##"):
                loss = nn.functional.mse_loss(model(x), y)
            with record_function("## backward ##"):
                loss.backward()
            opt.step()


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)  # one thread: the backward runs on the Python thread, one CPU track
    model = nn.Sequential(Block(16), Block(16), nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(4, 16), torch.randn(4, 2)
    _steps(model, opt, x, y, 1)  # warm-up outside the profiler: no lazy initialisation in the trace
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True,
                     with_modules=True) as prof:
            _steps(model, opt, x, y, 3)
        prof.export_chrome_trace(path)
        data = Path(path).read_bytes()
    out = HERE / "torch_selftime.json.gz"
    out.write_bytes(gzip.compress(data, mtime=0))
    averages = {
        e.key: {"count": e.count, "self_cpu_time_total": e.self_cpu_time_total,
                "cpu_time_total": e.cpu_time_total}
        for e in prof.key_averages()
    }
    events = prof.events()
    numbers = {"torch": torch.__version__, "unit": "us", "key_averages": averages,
               "python_function": sorted({e.name for e in events if e.is_python_function}),
               "user_annotation": sorted({e.name for e in events if e.is_user_annotation})}
    text = json.dumps(numbers, indent=1, sort_keys=True) + "\n"
    (HERE / "torch_selftime_key_averages.json").write_text(text)
    print(f"{out.name}: {len(data):,} bytes, {out.stat().st_size:,} stored; {len(averages)} keys")


if __name__ == "__main__":
    main()
