"""Benchmark of ``profview.advise`` on the generated 1M-event multi-stream GPU trace.

    python benchmarks/bench_advise.py                    # 1M timeline events (generated once)
    python benchmarks/bench_advise.py --events 20000 --repeat 1 --data /tmp/x   # smoke run

The trace is ``make_pytorch_trace.py --gpu`` (three streams, NCCL, memcpy / memset, steps).  On the
loaded trace, alternating, ``--repeat`` times each: ``analysis.kernel_breakdown(t, by="name")``
(the baseline: one group-by over the device activities), ``analysis.op_efficiency(t)`` (what the
``fp32_matmul`` rule reads) and ``analysis.advise(t)`` (every rule, including the step-outlier
rule's re-evaluation in two steps).  Prints the medians, the ratio
advise / kernel_breakdown, and the target: advise <= 2 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_gpu import ensure_file  # noqa: E402

import jupyter_profview as profview  # noqa: E402
from jupyter_profview import analysis  # noqa: E402

TARGET = 2.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data", type=Path, default=None, help="folder for the generated trace")
    args = ap.parse_args()
    path = ensure_file(args.events, args.data)
    t0 = time.perf_counter()
    trace = profview.load(path)
    print(f"{path.name}: {len(trace.events):,} events, {len(trace.launches):,} device activities "
          f"(loaded in {time.perf_counter() - t0:.2f} s)")
    base: list[float] = []
    runs: list[float] = []
    eff: list[float] = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        analysis.op_efficiency(trace)  # what the fp32_matmul rule reads (every GEMM's args)
        eff.append(time.perf_counter() - t)
        t = time.perf_counter()
        analysis.kernel_breakdown(trace, by="name")
        base.append(time.perf_counter() - t)
        t = time.perf_counter()
        advice = analysis.advise(trace)
        runs.append(time.perf_counter() - t)
    b, a = statistics.median(base), statistics.median(runs)
    print(f"kernel_breakdown(by='name') (baseline): {b:.3f} s")
    print(f"advise: {a:.3f} s = {a / b:.1f}x the baseline; target <= {TARGET:.1f} s: "
          f"{'MET' if a <= TARGET else 'NOT MET'}")
    e = statistics.median(eff)
    print(f"  of which op_efficiency (the fp32_matmul rule's input: every GEMM's shapes and types): "
          f"{e:.3f} s; the other rules: {a - e:.3f} s")
    print(f"findings: {', '.join(advice.findings['rule'])}")


if __name__ == "__main__":
    main()
