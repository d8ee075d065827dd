"""Kernel efficiency and collective bandwidth: on one 1M-event GPU trace and on an 8-rank set.

    python benchmarks/bench_efficiency.py                                  # 1M events; 8 ranks x 1M
    python benchmarks/bench_efficiency.py --events 200000 --rank-events 200000 --repeat 1  # quick
    python benchmarks/bench_efficiency.py --only set --cache /tmp/eff-cache   # the set; re-run: re-opened

Inputs (generated once, not timed; ``benchmarks/data/``): the multi-stream GPU trace of
``make_pytorch_trace.py --gpu`` (every kernel with Kineto's occupancy args, an NCCL all-reduce per
backward layer launched from an ``nccl:all_reduce`` op with ``Input Dims``), and for the set
``--ranks`` copies of the GPU traces of seeds 0 and 1 (alternating) with a ``distributedInfo``
naming the rank, loaded once with ``load_many`` into a fresh cache (its time is printed, not part
of the targets).  Then, in this one process, each measured ``--repeat`` times (median):

    kernel_breakdown       ``analysis.kernel_breakdown(x, by="name")``: the baseline, an existing
                           per-kernel analysis over the same rows
    kernel_efficiency      ``by="kernel"``, ``by="name"`` and ``by="op"``
    collective_bandwidth   one row per collective call
    collective_summary     the set only: calls matched across ranks

Each call on the single trace starts cold (``derived.forget(trace)`` first: the kernel and collective
args, like the baseline's device activities, are computed once per Trace and kept).  Target: each
<= 2 s on both inputs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import jupyter_profview as profview  # noqa: E402
from jupyter_profview import analysis, derived  # noqa: E402

DATA = HERE / "data"
TARGET = 2.0


def gpu_trace(events: int, seed: int, data: Path = DATA) -> Path:
    """The ``--gpu`` trace of ``events`` X events and ``seed`` (made once)."""
    import make_pytorch_trace

    path = data / f"pytorch_{events}x_gpu_seed{seed}.json"
    if not path.exists():
        make_pytorch_trace.main(["--events", str(events), "--seed", str(seed), "--gpu", "--out", str(path)])
    return path


def rank_run(ranks: int, events: int, data: Path = DATA) -> Path:
    """``<data>/efficiency_<N>x_<ranks>/rank-<r>.json``: the GPU trace of seed ``r % 2`` with a
    ``distributedInfo`` naming the rank (written once)."""
    run = data / f"efficiency_{events}x_{ranks}"
    run.mkdir(parents=True, exist_ok=True)
    for r in range(ranks):
        target = run / f"rank-{r}.json"
        if target.exists():
            continue
        info = json.dumps({"backend": "nccl", "rank": r, "world_size": ranks}).encode()
        tmp = target.with_name(target.name + ".tmp")
        with open(gpu_trace(events, r % 2, data), "rb") as src, open(tmp, "wb") as out:
            head = src.read(1 << 20)
            brace = head.index(b"{")
            out.write(head[:brace + 1] + b'\n  "distributedInfo": ' + info + b"," + head[brace + 1:])
            shutil.copyfileobj(src, out, 16 << 20)
        tmp.replace(target)
    return run


def median_time(fn: Callable[[], Any], repeat: int, reset: Callable[[], None] | None = None
                ) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        if reset is not None:
            reset()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def report(label: str, cases: list[tuple[str, Callable[[], Any]]], repeat: int,
           reset: Callable[[], None] | None = None) -> list[str]:
    lines, base = [], None
    for name, fn in cases:
        secs, out = median_time(fn, repeat, reset)
        rows = len(out.calls) if hasattr(out, "calls") else len(out)
        if base is None:
            base = secs
            verdict = "(baseline)"
        else:
            met = "ok" if secs <= TARGET else "MISSED"
            verdict = f"{secs / base:5.2f}x baseline  <= {TARGET:.0f} s: {met}"
        lines.append(f"  {label:<8} {name:<34} {secs:7.3f} s  {rows:>9,} rows  {verdict}")
        print(lines[-1], flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="X events of the single trace")
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--rank-events", type=int, default=1_000_000, help="X events per rank")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--only", choices=("trace", "set"), default=None, help="one of the two inputs")
    parser.add_argument("--cache", type=Path, default=None,
                        help="the set's cache directory (kept: a second run re-opens it); "
                             "default: a fresh one")
    args = parser.parse_args(argv)

    if args.only != "set":
        single(args)
    if args.only != "trace":
        if args.cache is not None:
            ranks(args, args.cache)
        else:
            with tempfile.TemporaryDirectory(prefix="bench-efficiency-") as cache:
                ranks(args, Path(cache))
    return 0


def single(args: argparse.Namespace) -> None:
    path = gpu_trace(args.events, 0, args.data)
    trace = profview.load(path)
    print(f"{path.name}: {len(trace.events):,} events, {len(trace.launches):,} device activities")
    report("trace", [
        ("kernel_breakdown(by='name')", lambda: analysis.kernel_breakdown(trace, by="name")),
        ("kernel_efficiency(by='kernel')", lambda: analysis.kernel_efficiency(trace)),
        ("kernel_efficiency(by='name')", lambda: analysis.kernel_efficiency(trace, by="name")),
        ("kernel_efficiency(by='op')", lambda: analysis.kernel_efficiency(trace, by="op")),
        ("collective_bandwidth", lambda: analysis.collective_bandwidth(trace)),
    ], args.repeat, reset=lambda: derived.forget(trace))  # cold: nothing derived kept between calls


def ranks(args: argparse.Namespace, cache: Path) -> None:
    run = rank_run(args.ranks, args.rank_events, args.data)
    t0 = time.perf_counter()
    ts = profview.load_many(run, cache=cache, progress=False)
    print(f"{run.name}: {len(ts)} ranks loaded in {time.perf_counter() - t0:.1f} s "
          f"({sum(ts.cached.values())} from the cache; not timed below)")
    report("set", [
        ("kernel_breakdown(by='name')", lambda: analysis.kernel_breakdown(ts, by="name")),
        ("kernel_efficiency(by='kernel')", lambda: analysis.kernel_efficiency(ts)),
        ("kernel_efficiency(by='name')", lambda: analysis.kernel_efficiency(ts, by="name")),
        ("collective_bandwidth", lambda: analysis.collective_bandwidth(ts)),
        ("collective_summary", lambda: analysis.collective_summary(ts)),
    ], args.repeat)


if __name__ == "__main__":
    raise SystemExit(main())
