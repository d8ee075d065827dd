"""Many ranks: ``load_many`` vs loading the ranks one after another, cache re-open, DuckDB.

    python benchmarks/bench_ranks.py                          # 8 ranks x 1M timeline events
    python benchmarks/bench_ranks.py --ranks 8 --events 200000  # quick mode

The rank files are ``benchmarks/data/ranks_<N>x_<ranks>/rank-<r>.json``: the
traces of ``make_pytorch_trace.py`` (seeds 0 and 1 alternate; generated once,
not timed) with a ``distributedInfo`` naming the rank, as torch writes it.
Every measurement runs in a fresh subprocess, in one run:

    sequential   ``profview.load(f)`` for each file, one after another
                 (each Trace dropped before the next: the best case for RSS)
    load_many    ``profview.load_many(dir, cache=<fresh dir>)``: parse in
                 worker processes, write Parquet
    reopen       ``load_many`` again on the same cache
    sql          on the re-opened set: ``select rank, name, count(*) from
                 events group by all`` (DuckDB over all ranks' Parquet files)
    step_times   ``analysis.step_times(ts)`` (a DuckDB query too)
    hta          with ``--hta PYTHON`` (an interpreter with HolisticTraceAnalysis
                 installed, e.g. a separate venv): ``TraceAnalysis(trace_dir=run)``,
                 which parses the ranks in its own worker pool

Each line shows the 1-minute load average when it started and the CPU time
other processes took while it ran (from /proc/stat; the machine may be shared,
and CPU taken by others makes the parallel numbers pessimistic).
Peak RSS is ``ru_maxrss`` of the measuring process itself (the notebook's
side: worker processes are not counted; the interpreter and imports are).
Prints the ratios of the issue's targets: sequential / load_many >= 1.8,
parent peak RSS <= 1.5x the largest file, reopen <= 0.1x the first load,
SQL over all ranks <= 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"
QUERY = "select rank, name, count(*) as n from events group by all"


def rank_files(ranks: int, events: int, data: Path = DATA) -> Path:
    """The run directory ``<data>/ranks_<N>x_<ranks>/``, written on first use: the trace of seed
    ``r % 2`` with ``"distributedInfo": {"rank": r, "world_size": ranks}`` added at the top."""
    sys.path.insert(0, str(HERE))
    import make_pytorch_trace

    run = data / f"ranks_{events}x_{ranks}"
    run.mkdir(parents=True, exist_ok=True)
    for seed in range(min(2, ranks)):
        source = data / f"pytorch_{events}x_seed{seed}.json"
        if not source.exists():
            make_pytorch_trace.main(["--events", str(events), "--seed", str(seed), "--out", str(source)])
    for r in range(ranks):
        target = run / f"rank-{r}.json"
        if target.exists():
            continue
        info = json.dumps({"backend": "nccl", "rank": r, "world_size": ranks}).encode()
        tmp = target.with_name(target.name + ".tmp")
        with open(data / f"pytorch_{events}x_seed{r % 2}.json", "rb") as src, open(tmp, "wb") as out:
            head = src.read(1 << 20)
            brace = head.index(b"{")
            out.write(head[:brace + 1] + b'\n  "distributedInfo": ' + info + b"," + head[brace + 1:])
            shutil.copyfileobj(src, out, 16 << 20)
        tmp.replace(target)
    return run


CHILD = r"""
import json, resource, sys, time
import jupyter_profview as profview
from jupyter_profview.analysis import step_times
mode, run, cache, query, codec = sys.argv[1:6]
if codec:
    import jupyter_profview.ranks.cache
    jupyter_profview.ranks.cache.CODEC = codec
out = {}
t0 = time.perf_counter()
if mode == "sequential":
    from pathlib import Path
    for f in sorted(Path(run).glob("rank-*.json")):
        t = profview.load(f)
        del t
    out["wall"] = time.perf_counter() - t0
else:
    ts = profview.load_many(run, cache=cache, progress=False)
    out["wall"] = time.perf_counter() - t0
    out["cached"] = sum(ts.cached.values())
    cpu = ts.info["load_cpu_s"].dropna()
    out["worker_cpu"] = float(cpu.mean()) if len(cpu) else None
    out["workers_cpu_total"] = float(cpu.sum())
    if mode == "reopen":
        t1 = time.perf_counter()
        rows = ts.sql(query)
        out["sql"] = time.perf_counter() - t1
        out["sql_rows"] = len(rows)
        t1 = time.perf_counter()
        steps = step_times(ts)
        out["step_times"] = time.perf_counter() - t1
        out["steps"] = len(steps)
own = resource.getrusage(resource.RUSAGE_SELF)
out["peak_rss"] = own.ru_maxrss * 1024
out["own_cpu"] = own.ru_utime + own.ru_stime
print(json.dumps(out))
"""


HTA_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_dir=sys.argv[1])
out = {"wall": time.perf_counter() - t0, "ranks": len(analysis.t.traces),
       "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
       "children_rss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}
print(json.dumps(out))
"""


def measure_hta(python: str, run: Path) -> dict[str, float]:
    proc = subprocess.run([python, "-c", HTA_CHILD, str(run)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"HTA failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def load_average() -> str:
    return f"load {os.getloadavg()[0]:4.2f}"


def cpu_jiffies() -> tuple[int, int]:
    """(busy, total) CPU time of the whole machine so far, in clock ticks (Linux /proc/stat)."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


def contention(before: tuple[int, int], after: tuple[int, int], ours: float) -> str:
    """How much CPU other processes took while a phase ran (ours: the phase's own CPU seconds)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    busy, total = (after[0] - before[0]) / tick, (after[1] - before[1]) / tick
    if total <= 0:
        return "others: unknown"
    return f"others used {max(0.0, busy - ours):.1f} of {total:.1f} CPU-s"


def measure(mode: str, run: Path, cache: Path, codec: str = "") -> dict[str, Any]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path}
    before = cpu_jiffies()
    proc = subprocess.run([sys.executable, "-c", CHILD, mode, str(run), str(cache), QUERY, codec],
                          capture_output=True, text=True, env=env, check=False)
    after = cpu_jiffies()
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{proc.stderr}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["others"] = contention(before, after, out["own_cpu"] + out.get("workers_cpu_total", 0.0))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--events", type=int, default=1_000_000, help="X events per rank")
    parser.add_argument("--codec", default="", help="Parquet codec of the cache (default: the package's)")
    parser.add_argument("--hta", metavar="PYTHON", help="also time HTA's TraceAnalysis with this interpreter")
    args = parser.parse_args(argv)
    run = rank_files(args.ranks, args.events)
    files = sorted(run.glob("rank-*.json"))
    largest = max(f.stat().st_size for f in files)
    total = sum(f.stat().st_size for f in files)
    print(f"{len(files)} ranks x {args.events:,} X events: {total / 1e6:,.0f} MB "
          f"(largest file {largest / 1e6:,.0f} MB), {os.cpu_count()} cores", flush=True)
    cache = Path(tempfile.mkdtemp(prefix="bench-ranks-"))
    try:
        mb = 1e6
        load = load_average()
        seq = measure("sequential", run, cache)
        print(f"sequential load   {seq['wall']:7.2f} s   peak RSS {seq['peak_rss'] / mb:7.0f} MB   "
              f"[{load}; {seq['others']}]", flush=True)
        load = load_average()
        first = measure("load_many", run, cache, args.codec)
        print(f"load_many         {first['wall']:7.2f} s   peak RSS {first['peak_rss'] / mb:7.0f} MB "
              f"(parent)   [{load}; {first['others']}]", flush=True)
        print(f"  per rank: a worker spent {first['worker_cpu']:.2f} CPU-s (parse + Parquet); sequential "
              f"{seq['wall'] / len(files):.2f} s wall, {seq['own_cpu'] / len(files):.2f} CPU-s", flush=True)
        load = load_average()
        again = measure("reopen", run, cache)
        assert again["cached"] == len(files), again
        print(f"reopen (cache)    {again['wall']:7.2f} s   peak RSS {again['peak_rss'] / mb:7.0f} MB   "
              f"[{load}; {again['others']}]")
        print(f"sql over ranks    {again['sql']:7.2f} s   ({again['sql_rows']} rows: {QUERY})")
        print(f"step_times        {again['step_times']:7.2f} s   ({again['steps']} rank-steps)")
        if args.hta:
            hta = measure_hta(args.hta, run)
            print(f"HTA TraceAnalysis {hta['wall']:7.2f} s   peak RSS {hta['peak_rss'] / mb:7.0f} MB "
                  f"(parent), {hta['children_rss'] / mb:.0f} MB (largest worker), {hta['ranks']} ranks",
                  flush=True)
        cache_bytes = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
        print(f"cache on disk     {cache_bytes / 1e6:7.0f} MB ({cache_bytes / total:.2f}x the JSON)")
        print()
        if args.hta:
            print(f"HTA / load_many            {hta['wall'] / first['wall']:5.2f}x")
        speed = seq["wall"] / first["wall"]
        rss = first["peak_rss"] / largest
        reopen = again["wall"] / first["wall"]
        for label, value, target, ok in (
                ("sequential / load_many", f"{speed:5.2f}x", ">= 1.8", speed >= 1.8),
                ("parent RSS / largest file", f"{rss:5.2f}x", "<= 1.5", rss <= 1.5),
                ("reopen / first load", f"{reopen:5.3f}x", "<= 0.1", reopen <= 0.1),
                ("sql over all ranks", f"{again['sql']:5.2f} s", "<= 2 s", again["sql"] <= 2)):
            print(f"{label:26} {value:>8}   (target {target})  {'met' if ok else 'NOT met'}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
