"""Hostile input stays bounded: a gzip bomb of text lines is refused in bounded memory.

    python benchmarks/bench_hostile.py            # 4 GiB of TF node-order lines in ~8 MB of gzip
    python benchmarks/bench_hostile.py --gib 1

The bomb (written once to ``benchmarks/data/``, streamed through zlib so that
it is never held whole): seed 000's format, TensorFlow node names one per
line, the seed file's first 200 lines (~8 KB, within deflate's window, so it
compresses ~1000x as a bomb does) repeated until ``--gib`` GiB.  It is loaded in
a fresh subprocess with ``profview.load``, which must refuse it with a
``ProfviewError`` naming the line past ``limits.MAX_TEXT_RECORDS``.  The
baseline, measured in the same run, is a load of the seed file itself
(2,467 lines).

Prints: the bomb's size and inflated size, the error, the seconds to the
refusal (per line, against the seed's whole load per line), the peak RSS
above the interpreter's baseline (after imports and a warm-up load) and the
bytes per line read; target: peak RSS above base
<= 8 bytes x MAX_TEXT_RECORDS + 64 MiB (the int32 columns at the limit,
plus slack), whatever the inflated size.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SEED = ROOT / "jupyter_profview" / "examples" / "000_5bf2854c930b1b8f.txt"


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(path: str) -> None:
    sys.path.insert(0, str(ROOT))
    import numpy  # noqa: F401
    import pandas  # noqa: F401

    import jupyter_profview as profview
    from jupyter_profview.errors import ProfviewError
    from jupyter_profview.formats import tf_node_order  # noqa: F401

    profview.load(SEED)  # warm: every module the load needs is imported
    base = _rss()
    t0 = time.perf_counter()
    info: dict[str, object] = {}
    try:
        trace = profview.load(path)
        info["events"] = len(trace.events)
    except ProfviewError as exc:
        info["error"] = str(exc)
        info["position"] = exc.position
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "peak": peak, "base": base, **info}))


def run(path: Path) -> dict[str, object]:
    proc = subprocess.run([sys.executable, __file__, "--child", str(path)], capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{path.name} failed:\n{proc.stderr}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def make_bomb(gib: float) -> Path:
    path = HERE / "data" / f"node_order_bomb_{gib:g}gib.txt.gz"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = SEED.read_bytes().splitlines(keepends=True)
    block = b"".join(lines[:200])  # within deflate's 32 KiB window: ~1000x, as a bomb compresses
    target = int(gib * 2**30)
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    written = 0
    with open(path, "wb") as out:
        chunk = block * max(1, (8 << 20) // len(block))
        while written < target:
            out.write(packer.compress(chunk))
            written += len(chunk)
        out.write(packer.flush())
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, default=4.0, help="inflated size of the bomb")
    parser.add_argument("--child", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    sys.path.insert(0, str(ROOT))
    from jupyter_profview.limits import MAX_TEXT_RECORDS

    bomb = make_bomb(args.gib)
    seed = run(SEED)
    got = run(bomb)
    seed_lines = SEED.read_bytes().count(b"\n")
    above = float(got["peak"]) - float(got["base"])  # type: ignore[arg-type]
    seed_above = float(seed["peak"]) - float(seed["base"])  # type: ignore[arg-type]
    print(f"bomb: {bomb.stat().st_size / 1e6:.1f} MB of gzip inflating to {args.gib:g} GiB")
    print(f"  seed (baseline): {seed_lines:,} lines in {float(seed['seconds']):.3f} s, "  # type: ignore[arg-type]
          f"peak +{seed_above / 1e6:.1f} MB")
    print(f"  bomb: {got.get('error', 'LOADED: ' + str(got.get('events')))}")
    per_line = float(got["seconds"]) / MAX_TEXT_RECORDS  # type: ignore[arg-type]
    seed_per_line = float(seed["seconds"]) / seed_lines  # type: ignore[arg-type]
    print(f"  refused after {float(got['seconds']):.1f} s ({per_line * 1e6:.2f} µs per line read, "  # type: ignore[arg-type]
          f"{per_line / seed_per_line:.2f}x the seed's µs per line loaded), "
          f"peak +{above / 1e6:.0f} MB above base = {above / MAX_TEXT_RECORDS:.1f} bytes per line read")
    limit = 8 * MAX_TEXT_RECORDS + 64 * 2**20
    refused = "error" in got and f"line {MAX_TEXT_RECORDS + 1}" == got.get("position")
    bounded = above <= limit
    print(f"target refused at line {MAX_TEXT_RECORDS + 1:,}: {'MET' if refused else 'NOT MET'}")
    print(f"target peak above base = {above / 1e6:.0f} MB (<= {limit / 1e6:.0f} MB): "
          f"{'MET' if bounded else 'NOT MET'}")
    return 0 if refused and bounded else 1


if __name__ == "__main__":
    raise SystemExit(main())
