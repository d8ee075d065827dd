"""Cost in the number of threads: loading a trace and building its view stays linear in the
number of distinct (pid, tid) pairs.

    python benchmarks/bench_threads.py                 # 10k, 40k and 160k pairs
    python benchmarks/bench_threads.py --pairs 2000    # smaller, faster

A Chrome trace with N distinct (pid, tid) pairs, one complete event on each, is loaded with
``profview.load`` and its first view built (``ViewSession(trace, "auto").state()``: the lanes,
their labels and the first frame), at N, 4N and 16N pairs.  The baseline is the same work at N
pairs, measured in the same run.  The time is the process's CPU time (user + system, all its
threads), the best of ``--repeat`` runs, so that other jobs on a shared machine weigh less than in
wall time.

Target: each 4x step costs at most 5.5x the step before (linear, with room for the O(n log n)
sorts and noise).  The labels' clash check once scanned every label so far: 10k pairs 1.3 s, 40k
12 s, a 9x step; this is the check that fails on such a regression (it was a timed unit test, which
failed on a loaded machine instead).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 5.5


def cost(path: Path, pairs: int) -> float:
    """CPU seconds to load ``path`` and build its first view."""
    import jupyter_profview as profview
    from jupyter_profview.widget.session import ViewSession

    began = time.process_time()
    trace = profview.load(path)
    ViewSession(trace, "auto").state()
    spent = time.process_time() - began
    threads = trace.events["thread"].nunique()
    if threads != pairs:
        raise SystemExit(f"{path.name}: {threads} threads in trace.events, {pairs} written")
    return spent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=10_000, help="the baseline's (pid, tid) pairs")
    parser.add_argument("--steps", type=int, default=2, help="how many 4x steps above the baseline")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size (the best counts)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tests.server_helpers import threads_trace

    sizes = [args.pairs * 4**k for k in range(args.steps + 1)]
    with tempfile.TemporaryDirectory() as tmp:
        paths = [threads_trace(Path(tmp) / f"{n}.json.gz", n) for n in sizes]
        cost(paths[0], sizes[0])  # imports, caches
        best = [min(cost(p, n) for _ in range(args.repeat)) for p, n in zip(paths, sizes, strict=True)]
    print(f"load + first view, CPU seconds (best of {args.repeat}):")
    met = True
    for k, (n, t) in enumerate(zip(sizes, best, strict=True)):
        line = f"  {n:>9,} pairs: {t:7.3f} s   {t / best[0]:6.2f}x the baseline ({sizes[0]:,} pairs)"
        if k:
            step = t / best[k - 1]
            ok = step <= TARGET
            met &= ok
            line += f"   4x step: {step:.2f}x (<= {TARGET}x: {'MET' if ok else 'NOT MET'})"
        print(line)
    print(f"target each 4x step <= {TARGET}x: {'MET' if met else 'NOT MET'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
