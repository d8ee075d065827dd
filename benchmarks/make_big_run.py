"""A run larger than this machine's RAM: generate it, ``load_many`` it, query it, delete it.

    python benchmarks/make_big_run.py --out-dir /work/bigrun            # 16 ranks x 4M X events
    python benchmarks/make_big_run.py --out-dir /tmp/run --ranks 4 --events 200000 --keep

The rank files are those of ``bench_ranks.py`` (the ``make_pytorch_trace.py``
trace of seed ``r % 2`` with a ``distributedInfo`` naming the rank), here
about 430 bytes of JSON per X event: 4M events make a ~1.7 GB file.  Before
generating, the free space of ``--out-dir`` is checked: the JSON, the two
seed files and the Parquet cache must leave ``--margin`` GB free, else the
number of ranks is reduced to what fits (and the script says so).

Then, in a fresh interpreter (the "notebook" process): ``load_many(run)``
(worker processes parse the ranks and write the cache next to the traces),
``step_times(ts)`` and ``ts.sql(...)`` (DuckDB over the Parquet files), with
wall times and that process's peak RSS (``ru_maxrss``; the workers are
separate processes).  Prints one JSON line with the numbers and deletes the
whole ``--out-dir`` run (unless ``--keep``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BYTES_PER_EVENT = 432  # JSON bytes per X event of make_pytorch_trace.py (431 MB per 1M)
CACHE_SHARE = 0.25  # the Parquet cache is at most this share of the JSON (0.1 with LZ4)
QUERY = ("select rank, count(*) as events, sum(dur) as busy_ns from events "
         "where category = 'kernel' group by rank order by rank")

CHILD = r"""
import json, os, resource, sys, time
import jupyter_profview as profview
from jupyter_profview.analysis import step_times
run, query = sys.argv[1:3]
out = {"load_average_before": os.getloadavg()[0]}
t0 = time.perf_counter()
ts = profview.load_many(run, progress=False)
out["load_many_s"] = time.perf_counter() - t0
out["rss_after_load"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
out["ranks"] = len(ts)
out["worker_cpu_s"] = ts.info["load_cpu_s"].tolist()
t0 = time.perf_counter()
steps = step_times(ts)
out["step_times_s"] = time.perf_counter() - t0
out["rank_steps"] = len(steps)
t0 = time.perf_counter()
rows = ts.sql(query)
out["sql_s"] = time.perf_counter() - t0
out["sql_rows"] = len(rows)
out["kernel_events"] = int(rows["events"].sum())
out["cache_dir"] = str(ts.entry(ts.ranks[0]).parent)
out["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
out["load_average_after"] = os.getloadavg()[0]
print(json.dumps(out))
"""


def fit_ranks(out_dir: Path, ranks: int, events: int, margin: float) -> int:
    """How many ranks fit on the disk of ``out_dir`` with ``margin`` bytes left over."""
    free = shutil.disk_usage(out_dir).free
    per_rank = BYTES_PER_EVENT * events * (1 + CACHE_SHARE)
    seeds = 2 * BYTES_PER_EVENT * events
    fits = int((free - margin - seeds) // per_rank)
    print(f"{out_dir}: {free / 1e9:.1f} GB free; {ranks} ranks need "
          f"{(ranks * per_rank + seeds) / 1e9:.1f} GB + {margin / 1e9:.0f} GB margin", flush=True)
    if fits < ranks:
        print(f"only {max(fits, 0)} ranks fit: running with {max(fits, 0)}", flush=True)
    return max(0, min(ranks, fits))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, required=True, help="where the run is generated")
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--events", type=int, default=4_000_000, help="X events per rank")
    parser.add_argument("--margin", type=float, default=15, help="GB to leave free on the disk")
    parser.add_argument("--keep", action="store_true", help="keep the generated files and the cache")
    args = parser.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    ranks = fit_ranks(args.out_dir, args.ranks, args.events, args.margin * 1e9)
    if ranks < 2:
        raise SystemExit("not enough disk space for two ranks")
    sys.path.insert(0, str(HERE))
    from bench_ranks import rank_files

    t0 = time.perf_counter()
    run = rank_files(ranks, args.events, data=args.out_dir)
    for seed in (0, 1):  # the ranks are written: the seed traces are not needed any more
        (args.out_dir / f"pytorch_{args.events}x_seed{seed}.json").unlink(missing_ok=True)
    files = sorted(run.glob("rank-*.json"))
    total = sum(f.stat().st_size for f in files)
    largest = max(f.stat().st_size for f in files)
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    print(f"generated {len(files)} ranks in {time.perf_counter() - t0:.0f} s: {total / 1e9:.1f} GB of JSON "
          f"(largest {largest / 1e9:.2f} GB), RAM {ram / 2**30:.1f} GiB", flush=True)
    try:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        proc = subprocess.run([sys.executable, "-c", CHILD, str(run), QUERY], capture_output=True, text=True,
                              env=env, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"load_many failed:\n{proc.stderr[-3000:]}")
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        cache = Path(out["cache_dir"])
        out.update(json_bytes=total, largest_file=largest, ram_bytes=ram, events_per_rank=args.events,
                   cache_bytes=sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()))
        gb = 1e9
        print(f"load_many   {out['load_many_s']:8.1f} s   ({out['ranks']} ranks, "
              f"{total / gb:.1f} GB JSON vs {ram / 2**30:.1f} GiB RAM; "
              f"load {out['load_average_before']:.2f})")
        print(f"step_times  {out['step_times_s']:8.2f} s   ({out['rank_steps']} rank-steps)")
        print(f"sql         {out['sql_s']:8.2f} s   ({out['sql_rows']} rows: {QUERY})")
        rss, cached = out["peak_rss"], out["cache_bytes"]
        print(f"parent peak RSS {rss / 1e6:,.0f} MB ({rss / largest:.2f}x the largest file); "
              f"cache on disk {cached / gb:.2f} GB ({cached / total:.2f}x the JSON)")
        print(json.dumps(out))
    finally:
        if not args.keep:
            shutil.rmtree(run, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
