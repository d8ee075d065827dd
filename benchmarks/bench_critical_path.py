"""Critical-path benchmark: ``analysis.critical_path`` on the generated 1M-event GPU trace.

    python benchmarks/bench_critical_path.py                  # 1M timeline events (generated once)
    python benchmarks/bench_critical_path.py --events 20000 --repeat 1 --data /tmp/x   # smoke run

Times, medians of ``--repeat`` runs on one loaded trace (``make_pytorch_trace.py --gpu``: three
streams, NCCL, memcpy / memset), each printed with the size of its graph (nodes, edges):

    one step        ``critical_path(trace, instance=k)`` for the middle ProfilerStep (target <= 2 s)
    whole trace     ``critical_path(trace, annotation=None)``: every event of the file in one graph
    baseline        ``analysis.kernel_breakdown(trace)`` in the same run, for the ratios (a pass over
                    all of ``trace.launches``: the machine's speed today)
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_gpu import generated_trace, timed  # noqa: E402

import jupyter_profview as profview  # noqa: E402
from jupyter_profview import analysis  # noqa: E402

STEP_TARGET = 2.0


def main(argv: list[str] | None = None) -> int:
    args, path = generated_trace(__doc__, argv)
    trace = profview.load(path)
    table = analysis.critical_path_steps(trace)
    middle = len(table) // 2
    print(f"{path.name}: {len(trace.events):,} events, {len(trace.launches):,} device activities, "
          f"{len(table)} ProfilerSteps")
    runs: dict[str, list[float]] = {"step": [], "whole": [], "base": []}
    result: dict[str, Any] = {}
    for _ in range(args.repeat):
        secs, _ = timed(lambda: analysis.kernel_breakdown(trace))
        runs["base"].append(secs)
        secs, result["step"] = timed(lambda: analysis.critical_path(trace, instance=middle))
        runs["step"].append(secs)
        secs, result["whole"] = timed(lambda: analysis.critical_path(trace, annotation=None))
        runs["whole"].append(secs)
    base = statistics.median(runs["base"])
    print(f"{'':28}{'median s':>10}{'x baseline':>12}  graph (nodes, edges), path")
    for key, label in (("step", f"one step (instance {middle})"), ("whole", "whole trace")):
        cp = result[key]
        med = statistics.median(runs[key])
        verdict = f"  <= {STEP_TARGET} s: {'ok' if med <= STEP_TARGET else 'MISSED'}" if key == "step" else ""
        print(f"{label:28}{med:10.3f}{med / base:12.1f}  ({cp.graph_nodes:,}, {len(cp.edges):,}), "
              f"{cp.length / 1e6:.3f} ms over {len(cp.events):,} events{verdict}")
    print(f"{'baseline kernel_breakdown':28}{base:10.3f}{1.0:12.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
