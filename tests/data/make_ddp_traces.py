"""Record real multi-rank PyTorch profiler traces: CPU DistributedDataParallel over gloo.

Run from the repository root with torch installed (CPU wheel is enough)::

    python tests/data/make_ddp_traces.py [--out jupyter_profview/examples/ddp] [--slow-rank 2] [--sleep-ms 30]
    python tests/data/make_ddp_traces.py --shapes --out jupyter_profview/examples/ddp_shapes

Starts ``--world-size`` (4) processes with ``torch.multiprocessing``; each
trains a small MLP wrapped in ``DistributedDataParallel`` (backend ``gloo``)
under ``torch.profiler`` with a schedule (``wait=1, warmup=1, active=3``), so
the trace holds ``ProfilerStep#2`` .. ``ProfilerStep#4``.  Rank
``--slow-rank`` sleeps ``--sleep-ms`` in every step (in a
``record_function("slow_rank_sleep")`` before its forward pass), so the
others wait for it in each step's gradient ``allreduce``.  Each rank also
runs one ``dist.broadcast`` from rank 0 per step (a rooted collective).

``--shapes`` profiles with ``record_shapes=True`` (so each ``gloo:*`` annotation carries its
tensor's ``Input Dims`` and ``Input type``: the collective's size) and adds one
``dist.all_gather`` of a 256-float tensor per step (``ddp_shapes``: the collective bandwidth
example).

Writes ``rank-<r>.pt.trace.json.gz`` per rank (torch's own
``export_chrome_trace``, then gzip) with ``distributedInfo`` in the head.
The outputs are committed; re-running changes timings, and the tests derive
every expected value from the files themselves (or from the ``--slow-rank``
written in ``README.md`` next to them).
"""

from __future__ import annotations

import argparse
import gzip
import os
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, record_function, schedule

HERE = Path(__file__).parent
EXAMPLES_DDP = HERE.parent.parent / "jupyter_profview" / "examples" / "ddp"  # tests/data/ddp links here
WAIT, WARMUP, ACTIVE = 1, 1, 3


def _worker(rank: int, world: int, port: int, out: str, slow_rank: int, sleep_ms: float,
            shapes: bool = False) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(16, 32), torch.randn(16, 8)
    flag = torch.zeros(1)
    piece, gathered = torch.full((256,), float(rank)), [torch.zeros(256) for _ in range(world)]
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "trace.json")
        with profile(activities=[ProfilerActivity.CPU], record_shapes=shapes,
                     schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
                     on_trace_ready=lambda p: p.export_chrome_trace(raw)) as prof:
            for _ in range(WAIT + WARMUP + ACTIVE):
                if rank == slow_rank:
                    with record_function("slow_rank_sleep"):
                        time.sleep(sleep_ms / 1000)
                opt.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                opt.step()
                dist.broadcast(flag, src=0)
                if shapes:
                    dist.all_gather(gathered, piece)
                prof.step()
        data = Path(raw).read_bytes()
    Path(out, f"rank-{rank}.pt.trace.json.gz").write_bytes(gzip.compress(data, mtime=0))
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=EXAMPLES_DDP)
    parser.add_argument("--world-size", type=int, default=4)
    parser.add_argument("--slow-rank", type=int, default=2)
    parser.add_argument("--sleep-ms", type=float, default=30.0)
    parser.add_argument("--port", type=int, default=29517)
    parser.add_argument("--shapes", action="store_true",
                        help="record_shapes=True and an all_gather per step (the collectives' sizes)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    mp.spawn(_worker, args=(args.world_size, args.port, str(args.out), args.slow_rank, args.sleep_ms,
                                    args.shapes),
             nprocs=args.world_size, join=True)
    for path in sorted(args.out.glob("rank-*.pt.trace.json.gz")):
        print(f"{path}  {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
