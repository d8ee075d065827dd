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
    phases        ``.phases`` (union of self intervals per phase, both traces; one
                  vectorised pass, ``compare.phase_totals``)
    phases ref    ``profview.phases`` of both traces, summed: what ``.phases`` used
                  to call (per device and phase DataFrames) -- same numbers
    ops_by_shape  ``.ops_by_shape`` (``Input Dims`` of every op from the args blob)
    kernels_by_type ``.kernels_by_type`` (computation / communication / memory)
    memory        ``.memory`` (peaks and allocation-size histogram)
    show          ``.show()``: both TraceWidgets, fitted into one display budget

Each line gives seconds and the ratio to the baseline of the same run.  The lazy
tables are timed once each on a fresh comparison (``--repeat`` applies to the
baseline and ``compare``).  Target: ``compare`` <= 2 s; ``show``'s binary widget
state of both <= 4 MiB.
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
from jupyter_profview.model import PHASES  # noqa: E402
from jupyter_profview.widget.compare import state_bytes  # noqa: E402

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

    def lazily(name: str) -> float:
        fresh = profview.compare(a, b)
        return timed(lambda: getattr(fresh, name), 1)[0]

    def phases_reference() -> list[Any]:
        return [profview.phases(t)[[*PHASES, "busy"]].sum() for t in (a, b)]

    lazy = {name: lazily(name) for name in ("phases", "ops_by_shape", "kernels_by_type", "memory")}
    phases_ref_t, ref = timed(phases_reference, 1)
    assert [list(map(int, r)) for r in ref] == [c.phases[side].tolist() for side in ("a", "b")], \
        "compare.phases differs from profview.phases"
    show_t, view = timed(c.show, 1)
    nbytes = state_bytes(view.a) + state_bytes(view.b)

    def line(label: str, t: float, extra: str = "") -> None:
        print(f"{label:<36} {t:7.3f} s   {t / base_t:6.2f}x baseline{extra}")

    line("baseline (pandas groupby of both)", base_t)
    line("compare + summary", cmp_t,
         f"   target <= {TIME_TARGET} s: {'met' if cmp_t <= TIME_TARGET else 'MISSED'}")
    line("phases (both, lazily)", lazy["phases"])
    line("  ref: profview.phases of both", phases_ref_t, "   (same numbers, checked)")
    line("ops_by_shape (both, lazily)", lazy["ops_by_shape"])
    line("kernels_by_type (both, lazily)", lazy["kernels_by_type"])
    line("memory (both, lazily)", lazy["memory"])
    line("show (two widgets)", show_t, f"   state {nbytes / 2**20:.2f} MiB, target <= 4 MiB: "
         f"{'met' if nbytes <= BYTES_TARGET else 'MISSED'}")
    print(f"ops: {len(c.ops)}, ops by shape: {len(c.ops_by_shape)}, kernels: {len(c.kernels)}, "
          f"steps: {len(c.steps)}")
    print("verdict:", c.summary())
    return 0 if cmp_t <= TIME_TARGET and nbytes <= BYTES_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
