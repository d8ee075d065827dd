"""Attribution benchmark: ``analysis.attribute`` (and ``op_efficiency``) on the generated 1M-event
GPU trace.

    python benchmarks/bench_attribution.py                  # 1M timeline events (generated once)
    python benchmarks/bench_attribution.py --events 20000 --repeat 1 --data /tmp/x   # smoke run

Medians of ``--repeat`` runs on one loaded trace (``make_pytorch_trace.py --gpu``), each with the
size of its tree, against ``analysis.kernel_breakdown`` measured in the same run (the baseline:
one pass over ``trace.launches``).  Target: ``attribute`` <= 2 s for every node kind.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_gpu import generated_trace, timed  # noqa: E402

import jupyter_profview as profview  # noqa: E402
from jupyter_profview import analysis  # noqa: E402

TARGET = 2.0


def main(argv: list[str] | None = None) -> int:
    args, path = generated_trace(__doc__, argv)
    trace = profview.load(path)
    print(f"{path.name}: {len(trace.events):,} events, {len(trace.launches):,} device activities")
    cases = {
        "attribute(by='annotation')": lambda: analysis.attribute(trace, "annotation"),
        "attribute(by='op')": lambda: analysis.attribute(trace, "op"),
        "attribute(by='op', backward='forward')": lambda: analysis.attribute(trace, "op", backward="forward"),
        "op_efficiency": lambda: analysis.op_efficiency(trace),
    }
    runs: dict[str, list[float]] = {k: [] for k in [*cases, "base"]}
    sizes: dict[str, int] = {}
    for _ in range(args.repeat):
        secs, _ = timed(lambda: analysis.kernel_breakdown(trace))
        runs["base"].append(secs)
        for key, fn in cases.items():
            secs, out = timed(fn)
            runs[key].append(secs)
            sizes[key] = len(out)
    base = statistics.median(runs["base"])
    print(f"{'':42}{'median s':>10}{'x baseline':>12}  rows")
    for key in cases:
        med = statistics.median(runs[key])
        verdict = ""
        if key.startswith("attribute"):
            verdict = f"  <= {TARGET} s: {'ok' if med <= TARGET else 'MISSED'}"
        print(f"{key:42}{med:10.3f}{med / base:12.1f}  {sizes[key]:,}{verdict}")
    print(f"{'baseline kernel_breakdown':42}{base:10.3f}{1.0:12.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
