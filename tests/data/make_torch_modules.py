"""Record a real PyTorch CPU trace with nested modules, for the module attribution tests.

Run from the repository root with torch installed (the CPU wheel is enough)::

    pip install torch==2.13.0
    python tests/data/make_torch_modules.py

Writes ``torch_modules.json.gz`` next to this script: three training steps of a small model whose
modules nest three deep (``Net`` -> ``Sequential`` -> ``Block`` -> ``Linear`` / ``LayerNorm``, and a
``TransformerEncoderLayer``), recorded with ``with_modules=True``, ``with_stack=True``,
``record_shapes=True`` and a ``record_function("## step ##")`` per step, under
``torch.profiler.schedule`` so that every step is a ``ProfilerStep#N``.  The tests derive every
expected value from the file itself, so re-running (other timings) is fine.
"""

from __future__ import annotations

import gzip
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


class Net(nn.Module):
    def __init__(self, d: int = 64) -> None:
        super().__init__()
        self.blocks = nn.Sequential(Block(d), Block(d))
        self.encoder = nn.TransformerEncoderLayer(d, nhead=4, dim_feedforward=128, batch_first=True)
        self.head = nn.Linear(d, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.blocks(x))).mean(dim=1)


def main() -> None:
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 16, 64), torch.randn(8, 1)
    with profile(activities=[ProfilerActivity.CPU], with_modules=True, with_stack=True, record_shapes=True,
                 schedule=torch.profiler.schedule(wait=0, warmup=1, active=3, repeat=1)) as prof:
        for _ in range(4):
            with record_function("## step ##"):
                opt.zero_grad()
                loss = nn.functional.mse_loss(model(x), y)
                loss.backward()
                opt.step()
            prof.step()
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(raw)
        data = Path(raw).read_bytes()
    (HERE / "torch_modules.json.gz").write_bytes(gzip.compress(data, mtime=0))
    print(f"torch_modules.json.gz: {len(data):,} bytes of JSON")


if __name__ == "__main__":
    main()
