"""Perfetto protobuf loading at scale, against protobuf's own parse of the same bytes.

    python benchmarks/bench_perfetto.py              # ~100 MB, median of 3 fresh processes
    python benchmarks/bench_perfetto.py --mb 20 --repeat 1

The input is the recorded Chromium trace (tests/data/chromium_perfetto.pftrace.gz, 2.2 MB)
repeated, each copy shifted in time after the previous one (``make_perfetto.py``), written
once to ``benchmarks/data/perfetto_<MB>mb.pftrace`` (gitignored).

Each measurement runs in a fresh subprocess.  ``base`` is the RSS after the imports, so
"peak" is what the work itself adds (the file's bytes included).  The reference measured in the
same run: ``perfetto_trace_pb2.Trace.FromString`` of the whole file with Google's classes (the
``perfetto`` package; the C upb parser: parse only, no interning, no tables).

Targets (issue #32): load time <= 2x the reference's parse, peak RSS above base <= 2x the file.
Exit status 1 when a target is not met.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TIME_TARGET = 2.0
RSS_TARGET = 2.0


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(method: str, path: str) -> None:
    sys.path.insert(0, str(ROOT))
    import numpy  # noqa: F401
    import pandas  # noqa: F401

    import jupyter_profview as profview
    from jupyter_profview.formats import perfetto  # noqa: F401

    if method == "google":
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    base = _rss()
    info: dict[str, object] = {}
    t0 = time.perf_counter()
    if method == "google":
        parsed = perfetto_trace_pb2.Trace.FromString(Path(path).read_bytes())
        seconds = time.perf_counter() - t0
        info["packets"] = len(parsed.packet)
    else:
        trace = profview.load(path)
        seconds = time.perf_counter() - t0
        info.update(events=len(trace.events), flows=len(trace.flows),
                    samples=0 if trace.counters is None else len(trace.counters),
                    packets=trace.quality.records_read)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "peak": peak, "base": base, **info}))


def measure(method: str, path: Path, repeat: int) -> dict[str, float]:
    runs = []
    for _ in range(repeat):
        proc = subprocess.run([sys.executable, __file__, "--child", method, str(path)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"{method} {path.name} failed:\n{proc.stderr}")
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    out = {k: statistics.median(float(r[k]) for r in runs) for k in ("seconds", "peak", "base")}
    out.update({k: v for k, v in runs[0].items() if k not in out})
    return out


def ensure(mb: float) -> Path:
    path = HERE / "data" / f"perfetto_{mb:g}mb.pftrace"
    if not path.exists():
        subprocess.run([sys.executable, str(HERE / "make_perfetto.py"), str(path), "--mb", str(mb)],
                       check=True)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=100.0, help="input size in MB (default 100)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--child", nargs=2, metavar=("METHOD", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    path = ensure(args.mb)
    size = path.stat().st_size
    print(f"Perfetto load, {size / 1e6:.1f} MB, median of {args.repeat} fresh processes, "
          f"cpus {os.cpu_count()}")
    ref = measure("google", path, args.repeat)
    got = measure("profview", path, args.repeat)
    above, ref_above = got["peak"] - got["base"], ref["peak"] - ref["base"]
    print(f"  Trace.FromString (Google's classes): {ref['seconds']:7.2f} s  peak +{ref_above / 1e6:6.0f} MB  "
          f"{int(ref['packets']):,} packets")
    print(f"  profview.load:                       {got['seconds']:7.2f} s  peak +{above / 1e6:6.0f} MB  "
          f"{int(got['events']):,} events, {int(got['samples']):,} counter samples, "
          f"{int(got['flows']):,} flows, {int(got['packets']):,} packets")
    ok = True
    for text, value, limit in (("load / FromString time", got["seconds"] / ref["seconds"], TIME_TARGET),
                               ("peak RSS / file size", above / size, RSS_TARGET)):
        met = value <= limit
        ok &= met
        print(f"target {text} = {value:.2f}x (<= {limit}x): {'MET' if met else 'NOT MET'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
