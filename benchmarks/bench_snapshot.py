"""Load time and peak memory of a CUDA memory snapshot, against C ``pickle.load`` on the same file.

    python benchmarks/bench_snapshot.py               # ~100 MB snapshot (generated once)
    python benchmarks/bench_snapshot.py --mb 1000     # ~1 GB
    python benchmarks/bench_snapshot.py --file snap.pickle
    python benchmarks/bench_snapshot.py --mb 1000 --file /tmp/snap.pickle --repeat 2   # generated once there

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
``profview / pickle <= 1.0`` (time) and ``profview peak RSS / file size <= 1.5``, with PASS or
FAIL per repetition (``--repeat``: the three methods again, in the same order, on the same file).
The RSS target counts the whole child (gross peak: interpreter, numpy and pandas included, ~120 MB),
which is what the user's kernel pays; the net ratio ``(peak - base) / file`` is printed beside it for
information only and decides nothing.
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
    cols = decode_snapshot(_native._lib(), src.chunks(torch_snapshot.CHUNK), 1 << 62)
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
    ap.add_argument("--repeat", type=int, default=1, help="repetitions of the whole comparison")
    args = ap.parse_args()
    path = args.file
    if path is None:
        path = HERE / "data" / f"snapshot_{int(args.mb)}mb.pickle"
    if not path.exists():
        import make_snapshot

        path.parent.mkdir(parents=True, exist_ok=True)
        make_snapshot.write(path, entries=int(args.mb * 1e6 / make_snapshot.BYTES_PER_ENTRY))
    size = path.stat().st_size
    print(f"{path}: {size / 1e6:.1f} MB")
    ok = True
    for rep in range(1, args.repeat + 1):
        results = {}
        for method in ("pickle", "profview", "decode", *(["profview-py"] if args.python else [])):
            r = results[method] = run(path, method)
            print(
                f"[{rep}] {method:12s} wall {r['wall']:7.2f} s  cpu {r['cpu']:7.2f} s  "
                f"peak RSS {r['peak'] / 1e6:7.0f} MB "
                f"(base {r['base'] / 1e6:.0f} MB)  entries {r['n']:,}"
            )
        p, v = results["pickle"], results["profview"]
        ratio, mem = v["wall"] / p["wall"], v["peak"] / size
        net = (v["peak"] - v["base"]) / size
        t_ok, m_ok = ratio <= 1.0, mem <= 1.5
        ok = ok and t_ok and m_ok
        print(f"[{rep}] profview / pickle time: {ratio:.2f} (target <= 1.0; cpu {v['cpu'] / p['cpu']:.2f}) "
              f"{'PASS' if t_ok else 'FAIL'}")
        print(f"[{rep}] profview peak RSS / file: {mem:.2f} (target <= 1.5) {'PASS' if m_ok else 'FAIL'}; "
              f"net of base {net:.2f} (information); pickle.load: {p['peak'] / size:.2f}")
    sys.exit(0 if ok else 1)

if __name__ == "__main__":
    main()
