"""Record the pipeline-parallel fixtures of `tests/data/pipeline/`: real `torch.distributed.pipelining` runs.

    .venv/bin/python scripts/record_pipeline.py                 # all three schedules
    .venv/bin/python scripts/record_pipeline.py --schedule gpipe --out /tmp/pp

Two CPU processes (`torch.multiprocessing` spawn) talk over gloo; each profiles its own steps with
`torch.profiler.profile(schedule=schedule(wait=1, warmup=1, active=STEPS))` and writes one Chrome
trace per rank, gzipped (`<out>/<schedule>/rank-<r>.pt.trace.json.gz`).  The model is a stack of
`Linear + ReLU` blocks of width `WIDTH`; every stage has `BLOCKS` blocks except the one named by
`SLOW_STAGE`, which has `SLOW_FACTOR` times as many (the deliberately slower stage).

- `interleaved`: `ScheduleInterleaved1F1B`, 4 stages, 2 per rank (rank r holds stages r and r + 2),
  stage 1 slow;
- `gpipe`: `ScheduleGPipe`, 2 stages (one per rank), stage 1 slow;
- `1f1b`: `Schedule1F1B`, 2 stages (one per rank), stage 0 slow.

Needs torch (`pip install torch==2.13.0`: a CPU build); not a dependency of the package.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import socket
from pathlib import Path

MICROBATCHES = 4
BATCH = 64  # rows per step (MICROBATCHES microbatches of BATCH / MICROBATCHES)
WIDTH = 256
BLOCKS = 2
SLOW_FACTOR = 3
STEPS = 2  # profiled steps (after 1 wait + 1 warmup)
SCHEDULES = {  # name: (stages per rank, slow stage)
    "interleaved": (2, 1),
    "gpipe": (1, 1),
    "1f1b": (1, 0),
}


def _stage_module(stage: int, slow: int):  # type: ignore[no-untyped-def]
    import torch

    blocks = BLOCKS * (SLOW_FACTOR if stage == slow else 1)
    layers: list[torch.nn.Module] = []
    for _ in range(blocks):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def _worker(rank: int, world: int, name: str, out: str, port: int) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed import pipelining as pp
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    per_rank, slow = SCHEDULES[name]
    n_stages = world * per_rank
    mine = [rank + world * k for k in range(per_rank)]  # loop placement: r, r + world, ...
    stages = [pp.PipelineStage(_stage_module(s, slow), s, n_stages, torch.device("cpu")) for s in mine]

    def loss_fn(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.mse_loss(output, target)

    if name == "interleaved":
        sched = pp.ScheduleInterleaved1F1B(stages, n_microbatches=MICROBATCHES, loss_fn=loss_fn)
    elif name == "gpipe":
        sched = pp.ScheduleGPipe(stages[0], n_microbatches=MICROBATCHES, loss_fn=loss_fn)
    else:
        sched = pp.Schedule1F1B(stages[0], n_microbatches=MICROBATCHES, loss_fn=loss_fn)
    params = [p for s in stages for p in s.submod.parameters()]
    opt = torch.optim.SGD(params, lr=1e-3)
    first, last = 0 in mine, n_stages - 1 in mine
    x = torch.randn(BATCH, WIDTH)
    y = torch.randn(BATCH, WIDTH)
    path = Path(out) / f"rank-{rank}.pt.trace.json"

    def ready(prof: profile) -> None:
        prof.export_chrome_trace(str(path))

    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=STEPS),
                 on_trace_ready=ready) as prof:
        for _ in range(2 + STEPS):
            opt.zero_grad()
            kwargs: dict[str, object] = {}
            if last:
                kwargs.update(target=y, losses=[])
            args = (x,) if first else ()
            sched.step(*args, **kwargs)
            opt.step()
            prof.step()
    dist.barrier()
    dist.destroy_process_group()
    with open(path, "rb") as src, gzip.open(str(path) + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    path.unlink()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def record(name: str, out: Path, world: int = 2) -> Path:
    """Record schedule `name` into `out / name` (one gzipped trace per rank); returns that folder."""
    import torch.multiprocessing as mp

    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    mp.spawn(_worker, args=(world, name, str(folder), _free_port()), nprocs=world, join=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedule", choices=[*SCHEDULES, "all"], default="all")
    default = Path(__file__).resolve().parents[1] / "tests" / "data" / "pipeline"
    parser.add_argument("--out", type=Path, default=default)
    a = parser.parse_args()
    for name in SCHEDULES if a.schedule == "all" else [a.schedule]:
        print(record(name, a.out))


if __name__ == "__main__":
    main()
