"""Load time and peak memory of a CUDA memory snapshot, against C ``pickle.load`` on the same file.

    python benchmarks/bench_snapshot.py               # ~100 MB snapshot (generated once)
    python benchmarks/bench_snapshot.py --mb 1000     # ~1 GB
    python benchmarks/bench_snapshot.py --file snap.pickle

The snapshot comes from ``make_snapshot.py`` (a simulated caching allocator, protocol 4, an OOM at
the end), written to ``benchmarks/data/`` (git-ignored).  Every measurement runs in a fresh
subprocess (peak RSS per method), in this run, on the same file:

    pickle        ``pickle.load(f)``: C pickle, builds the Python objects, runs no check
    profview      ``profview.load(path)``: the native interpreter, then the tables
    decode        the native interpreter alone (columns, no tables)
    profview-py   ``profview.load(path)`` with ``PROFVIEW_NATIVE=0`` (pure-Python reader;
                  only with ``--python``: minutes on a big file)

Prints wall time, CPU time and peak RSS (``ru_maxrss`` of the child, interpreter and imports
included; "base" is the RSS before the timed step) per method, then the targets:
``profview / pickle <= 1.0`` (time) and ``profview peak RSS / file size <= 1.5``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

CHILD = r"""
import json, os, resource, sys, time
path, method = sys.argv[1], sys.argv[2]
def rss(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
import pickle
import jupyter_profview as profview
from jupyter_profview import _native
from jupyter_profview.formats import torch_snapshot
from jupyter_profview._native.snapshot import decode_snapshot
from jupyter_profview.sources import Source
base = rss()
c0, t0 = time.process_time(), time.perf_counter()
if method == "pickle":
    with open(path, "rb") as f:
        obj = pickle.load(f)
    n = sum(len(t) for t in obj["device_traces"])
elif method == "decode":
    src = Source(path)
    cols = decode_snapshot(_native._lib(), src.chunks(), 1 << 62)
    n = len(cols["e_dev"])
else:
    trace = profview.load(path)
    n = len(trace.events)
    assert torch_snapshot.last_fallback is None, torch_snapshot.last_fallback
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"wall": wall, "cpu": cpu, "peak": rss(), "base": base, "n": n}))
"""


def run(path: Path, method: str) -> dict[str, float]:
    env = dict(os.environ)
    if method == "profview-py":
        env["PROFVIEW_NATIVE"] = "0"
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), method], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--file", type=Path)
    ap.add_argument("--python", action="store_true", help="also the pure-Python reader")
    args = ap.parse_args()
    path = args.file
    if path is None:
        import make_snapshot

        path = HERE / "data" / f"snapshot_{int(args.mb)}mb.pickle"
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            make_snapshot.write(path, entries=int(args.mb * 1e6 / make_snapshot.BYTES_PER_ENTRY))
    size = path.stat().st_size
    print(f"{path}: {size / 1e6:.1f} MB")
    results = {}
    for method in ("pickle", "profview", "decode", *(["profview-py"] if args.python else [])):
        r = results[method] = run(path, method)
        print(
            f"{method:12s} wall {r['wall']:7.2f} s  cpu {r['cpu']:7.2f} s  "
            f"peak RSS {r['peak'] / 1e6:7.0f} MB "
            f"(base {r['base'] / 1e6:.0f} MB)  entries {r['n']:,}"
        )
    p, v = results["pickle"], results["profview"]
    ratio, mem = v["wall"] / p["wall"], v["peak"] / size
    print(f"profview / pickle time: {ratio:.2f} (target <= 1.0; cpu {v['cpu'] / p['cpu']:.2f})")
    print(f"profview peak RSS / file: {mem:.2f} (target <= 1.5); pickle.load: {p['peak'] / size:.2f}")
    sys.exit(0 if ratio <= 1.0 and mem <= 1.5 else 1)


if __name__ == "__main__":
    main()
