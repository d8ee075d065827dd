"""`analysis.pipeline_bubbles` on a big pipeline run: 8 ranks x 1M events in <= 2 s.

    python benchmarks/bench_pipeline.py                           # 8 ranks x 1M events
    python benchmarks/bench_pipeline.py --ranks 2 --events 100000  # quick mode

The run is ``benchmarks/data/pipeline_<N>x_<ranks>/rank-<r>.json`` (generated once, not timed):
per rank, `ProfilerStep#N` steps on one thread holding an interleaved schedule's ranges
(`PP:<stage>F<mb>`, `PP:<stage>B<mb>`, `PP:<stage>SEND_F<mb>` / `RECV_B` with a `c10d::send` /
`c10d::recv_` inside), and `aten::*` ops (a parent and a child) filling the compute actions, as
`torch.distributed.pipelining` records them (`scripts/record_pipeline.py` records real ones), with a
`distributedInfo` naming the rank.  `load_many` writes the Parquet cache (not timed).  Then, in a
fresh subprocess each, on the cached set:

    baseline    ``analysis.step_times(ts)``: a DuckDB query over every rank's events
    pipeline    ``analysis.pipeline_bubbles(ts)``: reads each rank's events columns from its cache

Prints the seconds, the ratio pipeline / baseline, and the target (pipeline <= 2 s).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
STAGES_PER_RANK = 2
MICROBATCHES = 8
TARGET_S = 2.0

CHILD = r"""
import json, sys, time
import jupyter_profview as profview
from jupyter_profview import analysis
run, cache, what = sys.argv[1:4]
ts = profview.load_many(run, cache=cache, progress=False)
t0 = time.perf_counter()
if what == "pipeline":
    out = analysis.pipeline_bubbles(ts)
    rows = len(out.ranks) + len(out.actions)
else:
    rows = len(analysis.step_times(ts))
print(json.dumps({"s": time.perf_counter() - t0, "rows": rows}))
"""


def _rank_file(path: Path, rank: int, ranks: int, events: int) -> None:
    """About `events` X events on one thread: steps of 2 v m compute actions + their sends."""
    stages = [rank + ranks * k for k in range(STAGES_PER_RANK)]
    actions_per_step = 2 * STAGES_PER_RANK * MICROBATCHES  # F and B per (stage, microbatch)
    steps = 10
    ops_per_action = max(1, (events // steps - 4 * actions_per_step) // (2 * actions_per_step))
    out: list[str] = []
    t = 1000.0

    def x(name: str, cat: str, ts: float, dur: float) -> None:
        out.append(f'{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":7,"ts":{ts:.3f},"dur":{dur:.3f}}}')

    for step in range(steps):
        step_start = t
        body: list[str] = []
        out, body = body, out  # the step's children first, the step itself after (order is free)
        for mb in range(MICROBATCHES):
            for kind in ("F", "B"):
                for stage in stages:
                    t += 5.0 if rank == 0 else 40.0  # a bubble: waiting for the previous stage
                    start = t
                    for _ in range(ops_per_action):
                        x("aten::linear", "cpu_op", t, 3.0)
                        x("aten::addmm", "cpu_op", t + 0.5, 2.0)
                        t += 3.5 * (1.5 if stage == 1 else 1.0)
                    x(f"PP:{stage}{kind}{mb}", "user_annotation", start - 0.1, t - start + 0.2)
                    t += 0.5
                    send = "SEND_F" if kind == "F" else "SEND_B"
                    x(f"PP:{stage}{send}{mb}", "user_annotation", t, 4.0)
                    x("c10d::send", "cpu_op", t + 0.5, 3.0)
                    t += 4.5
        body, out = out, body
        out.extend(body)
        x(f"ProfilerStep#{step}", "user_annotation", step_start, t - step_start + 1.0)
        t += 10.0
    doc = {"schemaVersion": 1, "distributedInfo": {"backend": "gloo", "rank": rank, "world_size": ranks},
           "baseTimeNanoseconds": 1_700_000_000_000_000_000}
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.write(json.dumps(doc)[:-1] + ', "traceEvents": [\n')
        f.write(",\n".join(out))
        f.write("\n]}\n")
    os.replace(tmp, path)


def rank_files(ranks: int, events: int) -> Path:
    run = DATA / f"pipeline_{events}x_{ranks}"
    run.mkdir(parents=True, exist_ok=True)
    for r in range(ranks):
        path = run / f"rank-{r}.json"
        if not path.exists():
            _rank_file(path, r, ranks, events)
    return run


def child(run: Path, cache: Path, what: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(run), str(cache), what], check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--events", type=int, default=1_000_000)
    a = parser.parse_args()
    t0 = time.perf_counter()
    run = rank_files(a.ranks, a.events)
    print(f"run {run} ({time.perf_counter() - t0:.1f} s to make)")
    cache = Path(tempfile.mkdtemp(prefix="bench_pipeline_"))
    try:
        t0 = time.perf_counter()
        child(run, cache, "baseline")  # the first load_many writes the cache
        print(f"load_many (writes the cache, not timed below): {time.perf_counter() - t0:.1f} s")
        base = child(run, cache, "baseline")
        pipe = child(run, cache, "pipeline")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(json.dumps({"ranks": a.ranks, "events_per_rank": a.events, "step_times_s": round(base["s"], 3),
                      "pipeline_bubbles_s": round(pipe["s"], 3), "rows": pipe["rows"],
                      "ratio_pipeline_over_step_times": round(pipe["s"] / base["s"], 2),
                      "target_s": TARGET_S, "ok": pipe["s"] <= TARGET_S}))
    print(f"pipeline_bubbles {pipe['s']:.3f} s, target <= {TARGET_S} s: "
          f"{'PASS' if pipe['s'] <= TARGET_S else 'FAIL'} (ratio to step_times {pipe['s'] / base['s']:.2f})")


if __name__ == "__main__":
    main()
