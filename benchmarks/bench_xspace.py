"""XSpace loading at scale: linear cost, bounded hostile case.

    python benchmarks/bench_xspace.py                  # the real JAX and TF profiles, ~276k and 5x
    python benchmarks/bench_xspace.py --profiles jax --repeat 1

Inputs come from ``make_xspace.py``, generated once into ``benchmarks/data``:
a real profile with every line's events repeated K times, ``small`` (~276k
events) and ``large`` (5x), and both again ``--hostile`` (the copies keep
their TraceMe context ids: every copy of a producer shares its id with every
copy of its consumers).  Profiles: ``jax`` (the package's JAX CPU profile,
``jax.profiler.trace``, 160 events with ~4.5 stats each: K = 1730 and 8650)
and ``tf`` (the TensorFlow/Keras CPU profile, 688 events with ~1.3 stats
each: K = 400 and 2000).

Each measurement runs in a fresh subprocess.  ``base`` is the RSS after the
imports (numpy, pandas, protobuf, the package and its XSpace schema), so
"bytes/event" is the peak RSS above the interpreter's baseline per event.
The reference measured in the same run is protobuf's own parse of the whole
file (``XSpace.ParseFromString``, the C upb parser: parse only, no columns).

Prints per input: seconds, events/s, peak RSS above base and bytes/event, the
ratio to protobuf's parse, then the targets: >= 200k events/s, <= 400
bytes/event, 5x the events <= 6x the time and the memory, hostile <= 1.5x the
time of the same file with unique ids.
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
RATE_TARGET = 200_000
BYTES_TARGET = 400
GROWTH_TARGET = 6.0
HOSTILE_TARGET = 1.5
EXAMPLES = ROOT / "jupyter_profview" / "examples" / "xspace"
PROFILES = {"jax": (EXAMPLES / "jax_cpu.xplane.pb.gz", 1730),
            "tf": (next(EXAMPLES.rglob("*.xplane.pb")), 400)}


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(method: str, path: str) -> None:
    sys.path.insert(0, str(ROOT))
    import numpy  # noqa: F401
    import pandas  # noqa: F401

    import jupyter_profview as profview
    from jupyter_profview.formats import xspace  # noqa: F401
    from jupyter_profview.formats.xspace_proto import message_class

    space = message_class("XSpace")
    data = Path(path).read_bytes() if method == "protobuf" else b""
    base = _rss()
    t0 = time.perf_counter()
    info: dict[str, object] = {}
    if method == "protobuf":
        parsed = space()
        parsed.ParseFromString(data)
        seconds = time.perf_counter() - t0
        info["events"] = sum(len(line.events) for plane in parsed.planes for line in plane.lines)
    else:
        trace = profview.load(path)
        seconds = time.perf_counter() - t0
        info["events"] = len(trace.events)
        info["flows"] = len(trace.flows)
        info["extra_producers"] = trace.quality.extra_producers
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


def ensure(profile: str, repeat: int, hostile: bool) -> Path:
    tag = "" if profile == "tf" else f"{profile}_"
    path = HERE / "data" / f"xspace_{tag}{repeat}x{'_hostile' if hostile else ''}.xplane.pb"
    if not path.exists():
        cmd = [sys.executable, str(HERE / "make_xspace.py"), "--repeat", str(repeat), "--out", str(path),
               "--source", str(PROFILES[profile][0])]
        subprocess.run(cmd + (["--hostile"] if hostile else []), check=True)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles", default="jax,tf", help="comma-separated: jax, tf")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--child", nargs=2, metavar=("METHOD", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    results: dict[tuple[str, str], dict[str, float]] = {}
    print(f"XSpace load, median of {args.repeat} fresh processes, cpus {os.cpu_count()}")
    names = []
    for profile in [p for p in args.profiles.split(",") if p]:
        for label, k in (("small", PROFILES[profile][1]), ("large", 5 * PROFILES[profile][1])):
            for hostile in (False, True):
                path = ensure(profile, k, hostile)
                name = f"{profile} {label}{' hostile' if hostile else ''}"
                names.append(name)
                ref = measure("protobuf", path, args.repeat)
                got = measure("profview", path, args.repeat)
                results[(name, "profview")], results[(name, "protobuf")] = got, ref
                n = float(got["events"])
                above = got["peak"] - got["base"]
                print(f"  {name:18s} {path.stat().st_size / 1e6:6.1f} MB {int(n):>9,} events  "
                      f"{got['seconds']:6.2f} s  {n / got['seconds'] / 1e3:6.0f}k events/s  "
                      f"peak +{above / 1e6:6.0f} MB = {above / n:4.0f} B/event  "
                      f"flows {int(got['flows']):,} (+{int(got['extra_producers']):,} producers not linked)  "
                      f"protobuf parse {ref['seconds']:.2f} s "
                      f"(load / parse = {got['seconds'] / ref['seconds']:.1f}x)")
    ok = True

    def check(text: str, value: float, limit: float, higher: bool = False) -> None:
        nonlocal ok
        met = value >= limit if higher else value <= limit
        ok &= met
        print(f"target {text} = {value:,.2f} ({'>=' if higher else '<='} {limit:,}): "
              f"{'MET' if met else 'NOT MET'}")

    for name in names:
        got = results[(name, "profview")]
        check(f"{name}: events/s", got["events"] / got["seconds"], RATE_TARGET, higher=True)
        check(f"{name}: bytes/event", (got["peak"] - got["base"]) / got["events"], BYTES_TARGET)
    for profile in [p for p in args.profiles.split(",") if p]:
        for kind in ("", " hostile"):
            small = results[(f"{profile} small{kind}", "profview")]
            large = results[(f"{profile} large{kind}", "profview")]
            events = large["events"] / small["events"]
            check(f"{profile} {events:.1f}x the events{kind}: time ratio",
                  large["seconds"] / small["seconds"], GROWTH_TARGET)
            check(f"{profile} {events:.1f}x the events{kind}: memory ratio",
                  (large["peak"] - large["base"]) / (small["peak"] - small["base"]), GROWTH_TARGET)
        for label in ("small", "large"):
            check(f"{profile} {label}: hostile / unique ids time",
                  results[(f"{profile} {label} hostile", "profview")]["seconds"]
                  / results[(f"{profile} {label}", "profview")]["seconds"], HOSTILE_TARGET)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
