"""Benchmark of ``profview.compare`` on two generated 1M-event PyTorch traces, already loaded.

    python benchmarks/bench_compare.py                    # 1M timeline events per trace
    python benchmarks/bench_compare.py --events 200000    # quick mode

The two traces come from ``make_pytorch_trace.py`` with seeds 0 and 1 (same op
vocabulary, different layer mix, so most ops change).  They are written once
under ``benchmarks/data/`` and loaded before timing.  Timed, median of
``--repeat`` runs, in the same process and run:

    baseline      a plain pandas ``groupby("name")`` of both events tables
                  (count and sum of ``dur`` and ``self``) -- the reference
    compare       ``profview.compare(a, b)`` (ops, kernels, steps, alignment)
                  plus ``.summary()``
    phases        ``.phases`` (union of self intervals per phase, both traces)
    memory        ``.memory`` (peaks and allocation-size histogram)
    show          ``.show()``: both TraceWidgets, fitted into one display budget

Target: ``compare`` <= 2 s; ``show``'s binary widget state of both <= 4 MiB.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import make_pytorch_trace  # noqa: E402

import jupyter_profview as profview  # noqa: E402
from jupyter_profview.analysis.compare_view import state_bytes  # noqa: E402

TIME_TARGET = 2.0
BYTES_TARGET = 4 * 2**20


def trace_file(events: int, seed: int) -> Path:
    path = HERE / "data" / f"pytorch_{events}x_seed{seed}.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as f:
            make_pytorch_trace.generate(f, events, seed=seed)
        tmp.rename(path)
    return path


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def baseline(a: Any, b: Any) -> list[Any]:
    return [t.events.groupby("name", observed=True)[["dur", "self"]].agg(["count", "sum"]) for t in (a, b)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    paths = [trace_file(args.events, seed) for seed in (0, 1)]
    a, b = (profview.load(p) for p in paths)
    print(f"A: {len(a.events):,} events, B: {len(b.events):,} events (loaded; not timed)")

    base_t, _ = timed(lambda: baseline(a, b), args.repeat)

    def run_compare() -> Any:
        c = profview.compare(a, b)
        c.summary()
        return c

    cmp_t, c = timed(run_compare, args.repeat)
    phases_t, _ = timed(lambda: profview.compare(a, b).phases, 1)
    memory_t, _ = timed(lambda: profview.compare(a, b).memory, 1)
    show_t, view = timed(c.show, 1)
    nbytes = state_bytes(view.a) + state_bytes(view.b)
    print(f"{'baseline (pandas groupby of both)':<36} {base_t:7.3f} s   1.00x")
    print(f"{'compare + summary':<36} {cmp_t:7.3f} s   {cmp_t / base_t:5.2f}x   target <= {TIME_TARGET} s: "
          f"{'met' if cmp_t <= TIME_TARGET else 'MISSED'}")
    print(f"{'phases (both, lazily)':<36} {phases_t:7.3f} s")
    print(f"{'memory (both, lazily)':<36} {memory_t:7.3f} s")
    print(f"{'show (two widgets)':<36} {show_t:7.3f} s   state {nbytes / 2**20:.2f} MiB, target <= 4 MiB: "
          f"{'met' if nbytes <= BYTES_TARGET else 'MISSED'}")
    print(f"ops: {len(c.ops)}, kernels: {len(c.kernels)}, steps: {len(c.steps)}")
    print("verdict:", c.summary())
    return 0 if cmp_t <= TIME_TARGET and nbytes <= BYTES_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
