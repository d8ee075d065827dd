"""Record the pair of real PyTorch CPU traces used by ``profview.compare`` (tests, notebook 09).

Run from the repository root with torch installed (CPU wheel is enough)::

    pip install torch==2.13.0
    python tests/data/make_compare_traces.py

One small MLP trained twice under ``torch.profiler`` with ``record_shapes=True``,
``profile_memory=True`` and a schedule (one warm-up step, four active ones, so the
traces have ``ProfilerStep#N`` annotations).  The two runs differ in one thing:
the activation layers, ``nn.ReLU`` in the base run and ``nn.GELU`` in the test
run (everything else -- sizes, batch, optimizer, seed -- is the same).

Writes ``jupyter_profview/examples/compare/{base,test}.pt.trace.json.gz`` (bundled
examples: ``profview.example("compare_base")``, for the notebook and Binder);
``tests/data/compare/`` holds symlinks to them.
Re-running changes timings; the tests derive every expected value from the
files themselves, so that is fine.
"""

from __future__ import annotations

import gzip
import os
import tempfile
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule

HERE = Path(__file__).parent
OUT = HERE / "compare"
EXAMPLES = HERE.parents[1] / "jupyter_profview" / "examples" / "compare"
ACTIVE_STEPS = 4
BATCH, WIDTH = 128, 384


def model(activation: type[nn.Module]) -> nn.Module:
    return nn.Sequential(
        nn.Linear(64, WIDTH), activation(),
        nn.Linear(WIDTH, WIDTH), activation(),
        nn.Linear(WIDTH, 10),
    )


def record(activation: type[nn.Module], out: Path) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)  # one intra-op thread: smaller traces, steadier timings
    net = model(activation)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x = torch.randn(BATCH, 64)
    y = torch.randint(0, 10, (BATCH,))
    loss_fn = nn.CrossEntropyLoss()
    loss_fn(net(x), y).backward()  # warm-up outside the profiler: no lazy initialisation in the trace
    opt.zero_grad()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True,
                     with_stack=False, schedule=schedule(wait=0, warmup=1, active=ACTIVE_STEPS, repeat=1),
                     on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
            for _ in range(ACTIVE_STEPS + 1):
                opt.zero_grad()
                loss = loss_fn(net(x), y)
                loss.backward()
                opt.step()
                prof.step()
        data = Path(path).read_bytes()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(gzip.compress(data, mtime=0))
    print(f"{out}: {len(data)} bytes uncompressed, {out.stat().st_size} stored")


def main() -> None:
    for name, activation in (("base", nn.ReLU), ("test", nn.GELU)):
        target = EXAMPLES / f"{name}.pt.trace.json.gz"
        record(activation, target)
        link = OUT / target.name
        OUT.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to(os.path.relpath(target, OUT))


if __name__ == "__main__":
    main()
