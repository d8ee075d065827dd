"""Load-time and peak-memory benchmark of ``profview.load`` on a PyTorch trace.

    python benchmarks/bench_load.py                     # 1M timeline events (generated once)
    python benchmarks/bench_load.py --events 200000     # quick mode (~1 min)
    python benchmarks/bench_load.py --size 10m --repeat 1   # 10M events (3.9 GB), load + show()
    python benchmarks/bench_load.py --file trace.json --repeat 3

``--events N`` is the number of timeline (``X``) events of the generated
PyTorch trace; its ``[memory]`` instants, flow records and metadata come on
top (see ``make_pytorch_trace.py``), so the file has about 1.5 N records.

Every measurement runs in a fresh subprocess (so peak RSS is per method) on
the same file, in the same run:

    simdjson      ``simdjson.Parser().parse(data)`` on bytes already in memory
                  (time of the parse only) -- the reference; beyond 2 GB (pysimdjson
                  needs ~5x the document in RAM and stops at 4 GiB) the sum of its
                  parse times over the file cut into ~256 MB documents at event
                  boundaries
    orjson        ``orjson.loads(data)`` (parse only)
    json+pandas   ``json.load(f)`` + ``pandas.DataFrame(events)``
    profview      ``profview.load(path)`` with the native decoder
    profview-py   ``profview.load(path)`` with ``PROFVIEW_NATIVE=0`` (pure Python)
    scan          the native scan alone, the first step of ``profview.load``: the
                  file decoded into columns (on both cores for a big uncompressed
                  file), none of the tables built -- where the load's time goes
    show          ``profview.load(path)`` then ``profview.show(trace)`` (the widget
                  built as in a notebook, its state taken with ``get_state()``):
                  the time of ``show`` and the synced state's size

Prints the median wall time, CPU time (user + system, all threads; steadier
on a busy machine) and peak RSS (``ru_maxrss`` of the child, which
includes the interpreter and imports; the RSS right before the timed step is
shown as "base") per method, then the targets:
``profview / simdjson <= 2`` and ``profview peak RSS / file size <= 1.5``;
with ``--size 10m`` (10M timeline events, written ``--compact``: one event
per line, 3.9 GB, inside simdjson's 4 GiB document limit) the targets are
``<= 1.0`` and ``<= 1.0``, for the peak RSS of ``show`` (load + widget) too,
and a widget state of at most 4 MB.
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
RSS_TARGET = 1.5

METHODS = ("simdjson", "orjson", "json+pandas", "profview", "profview-py", "scan", "show")
SIZES = {"1m": (1_000_000, False), "5m": (5_000_000, True), "10m": (10_000_000, True)}  # events, compact
STRICT = {"10m": (1.0, 1.0)}  # --size: (time, memory) targets instead of TIME_TARGET, RSS_TARGET
STATE_TARGET = 4_000_000  # bytes of widget state
# pysimdjson holds ~5x a document in memory and refuses past 4 GiB: bigger files are parsed in
# pieces of PIECE bytes (see _simdjson_in_pieces)
SIMDJSON_WHOLE = 2_000_000_000
PIECE = 256_000_000
TOUCH = 1 << 30  # bytes of fresh memory written by the first-touch probe


def _rss_now() -> int:
    """Current RSS in bytes (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _cpu() -> float:
    """CPU seconds (user + system, all threads) of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _sys() -> float:
    """System (kernel) CPU seconds of this process so far: mostly page faults here."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime


def _first_touch() -> dict[str, float]:
    """GB/s of writing TOUCH bytes of fresh memory, then the same pages again:
    what a page fault costs on this machine (on a VM, memory the guest never
    touched is far slower the first time)."""
    import numpy as np

    out = {}
    block = np.empty(TOUCH // 8, np.int64)
    for label in ("fresh", "again"):
        t0 = time.perf_counter()
        block.fill(1)
        out[label] = TOUCH / 1e9 / (time.perf_counter() - t0)
    return out


def _simdjson_in_pieces(path: str) -> tuple[int, float, float]:
    """pysimdjson's parse time of a file too big for it, summed over the file
    cut into documents of about PIECE bytes at event boundaries (``},\n  {``
    between two events of ``traceEvents``, as the generator writes them).
    simdjson is linear in the input and its parser reuses its buffers between
    documents, so the sum is its parse time of the whole content, if anything
    a little less (no page faults for one huge index)."""
    import simdjson

    data = Path(path).read_bytes()
    head = data.index(b'"traceEvents": [') + len(b'"traceEvents": [')
    tail = data.rindex(b"\n  ]")
    parser = simdjson.Parser()
    base = _rss_now()
    seconds = cpu = 0.0
    at = head
    while at < tail:
        cut = data.find(b"},\n  {", min(at + PIECE, tail))
        stop = tail if cut < 0 or cut >= tail else cut + 1
        doc = b"[" + data[at:stop].strip().rstrip(b",") + b"]"
        t0, c0 = time.perf_counter(), _cpu()
        parsed = parser.parse(doc)
        seconds, cpu = seconds + time.perf_counter() - t0, cpu + _cpu() - c0
        del parsed, doc
        at = stop + 1  # past the "," between the events
    return base, seconds, cpu


def child(method: str, path: str) -> None:
    """Run one measurement and print a JSON line with seconds and RSS."""
    info: dict[str, object] = {}
    if method == "touch":
        print(json.dumps(_first_touch()))
        return
    if method == "simdjson" and Path(path).stat().st_size > SIMDJSON_WHOLE:
        base, seconds, cpu = _simdjson_in_pieces(path)
    elif method in ("simdjson", "orjson"):
        data = Path(path).read_bytes()
        if method == "simdjson":
            import simdjson

            parser = simdjson.Parser()
            base = _rss_now()
            t0, c0 = time.perf_counter(), _cpu()
            doc = parser.parse(data)
            seconds, cpu = time.perf_counter() - t0, _cpu() - c0
            del doc
        else:
            import orjson

            base = _rss_now()
            t0, c0 = time.perf_counter(), _cpu()
            doc = orjson.loads(data)
            seconds, cpu = time.perf_counter() - t0, _cpu() - c0
            del doc
    elif method == "scan":
        sys.path.insert(0, str(ROOT))
        from jupyter_profview.formats.chrome.native import decode_chrome
        from jupyter_profview.sources import Source

        base = _rss_now()
        t0, c0, s0 = time.perf_counter(), _cpu(), _sys()
        columns = decode_chrome(Source(path))
        seconds, cpu = time.perf_counter() - t0, _cpu() - c0
        info["sys"] = _sys() - s0
        if columns is None:
            raise SystemExit("the native scanner left this file to the Python decoder")
        del columns
    elif method == "json+pandas":
        import json as std_json

        import pandas as pd

        base = _rss_now()
        t0, c0 = time.perf_counter(), _cpu()
        with open(path, "rb") as f:
            doc = std_json.load(f)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        frame = pd.DataFrame(events)
        seconds, cpu = time.perf_counter() - t0, _cpu() - c0
        del frame, events, doc
    else:
        sys.path.insert(0, str(ROOT))
        import jupyter_profview as profview
        from jupyter_profview import _native
        from jupyter_profview.formats import chrome  # noqa: F401  (import outside the timing)

        base = _rss_now()
        t0, c0, s0 = time.perf_counter(), _cpu(), _sys()
        trace = profview.load(path)
        seconds, cpu = time.perf_counter() - t0, _cpu() - c0
        info["sys"] = _sys() - s0
        if method == "show":
            t1 = time.perf_counter()
            widget = profview.show(trace)
            state = widget.get_state()
            info["show_seconds"] = time.perf_counter() - t1
            info["state_bytes"] = sum(len(v) if isinstance(v, (bytes, memoryview)) else len(str(v))
                                      for v in state.values())
            del widget, state
        info["decoder"] = trace.metadata.get("decoder")
        info["native_available"] = _native.available()
        info["events"] = len(trace.events)
        info["records"] = trace.quality.records_read
        info["x_events"] = int((trace.events["kind"] == "slice").sum())
        del trace
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    print(json.dumps({"seconds": seconds, "cpu": cpu, "maxrss": maxrss, "base": base, **info}))


def measure(method: str, path: Path, repeat: int) -> list[dict[str, object]]:
    env = dict(os.environ)
    env["PROFVIEW_NATIVE"] = "0" if method == "profview-py" else "1"
    env.setdefault("OMP_NUM_THREADS", "1")
    results = []
    for _ in range(repeat):
        proc = subprocess.run(
            [sys.executable, __file__, "--child", method, str(path)],
            capture_output=True, text=True, env=env, check=False,
        )
        if proc.returncode != 0:
            raise SystemExit(f"{method} failed:\n{proc.stderr}")
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return results


def ensure_file(events: int, gz: bool, compact: bool = False) -> Path:
    sys.path.insert(0, str(HERE))
    from make_pytorch_trace import default_path

    path = default_path(events, gz, compact=compact)
    if not path.exists():
        cmd = [sys.executable, str(HERE / "make_pytorch_trace.py"), "--events", str(events)]
        if gz:
            cmd.append("--gzip")
        if compact:
            cmd.append("--compact")
        print("generating", path, "...", file=sys.stderr)
        subprocess.run(cmd, check=True)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="profview.load vs simdjson: time and peak RSS")
    parser.add_argument("--events", type=int, default=1_000_000,
                        help="timeline (X) events in the generated trace")
    parser.add_argument("--size", choices=sorted(SIZES), help="a preset: 1m, 5m or 10m timeline events "
                        "(5m and 10m written --compact); 10m has the stricter targets")
    parser.add_argument("--file", type=Path, help="benchmark this file instead of a generated one")
    parser.add_argument("--gzip", action="store_true", help="use a gzipped generated trace")
    parser.add_argument("--repeat", type=int, default=5, help="runs per method (median reported)")
    parser.add_argument("--python-repeat", type=int, default=1,
                        help="runs of the slow pure-Python paths (json+pandas, profview-py)")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated subset of {METHODS}")
    parser.add_argument("--child", nargs=2, metavar=("METHOD", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0

    time_target, rss_target = STRICT.get(args.size or "", (TIME_TARGET, RSS_TARGET))
    if args.size:
        events, compact = SIZES[args.size]
        path = args.file or ensure_file(events, args.gzip, compact)
    else:
        path = args.file or ensure_file(args.events, args.gzip)
    size = path.stat().st_size
    methods = [m for m in args.methods.split(",") if m]
    print(f"file: {path} ({size / 1e6:.1f} MB), repeat {args.repeat}, cpus {os.cpu_count()}")
    counts: dict[str, int] = {}
    medians: dict[str, tuple[float, float]] = {}
    cpus: dict[str, float] = {}
    shows: list[dict[str, object]] = []
    for method in methods:
        slow = method in ("json+pandas", "profview-py")
        runs = measure(method, path, args.python_repeat if slow else args.repeat)
        secs = statistics.median(float(r["seconds"]) for r in runs)  # type: ignore[arg-type]
        rss = statistics.median(float(r["maxrss"]) for r in runs)  # type: ignore[arg-type]
        base = statistics.median(float(r["base"]) for r in runs)  # type: ignore[arg-type]
        cpus[method] = statistics.median(float(r["cpu"]) for r in runs)  # type: ignore[arg-type]
        medians[method] = (secs, rss)
        extra = ""
        if "decoder" in runs[0]:
            extra = f"  decoder={runs[0]['decoder']}"
            counts.setdefault("records", int(runs[0]["records"]))  # type: ignore[call-overload]
            counts.setdefault("slices", int(runs[0]["x_events"]))  # type: ignore[call-overload]
            counts.setdefault("events", int(runs[0]["events"]))  # type: ignore[call-overload]
        if "sys" in runs[0]:
            extra += f"  system {statistics.median(float(r['sys']) for r in runs):.2f} s"  # type: ignore[arg-type]
        if method == "show":
            shows = runs
            extra += (f"  show() {statistics.median(float(r['show_seconds']) for r in runs):.2f} s, "  # type: ignore[arg-type]
                      f"state {statistics.median(float(r['state_bytes']) for r in runs) / 1e6:.2f} MB")  # type: ignore[arg-type]
        each = ", ".join(f"{float(r['seconds']):.3f}" for r in runs)  # type: ignore[arg-type]
        print(f"  {method:12s} {secs:8.3f} s (cpu {cpus[method]:.3f} s)   peak RSS {rss / 1e6:8.1f} MB"
              f" (base {base / 1e6:.0f} MB)   runs: {each}{extra}")

    touch = measure("touch", path, 1)[0]
    print(f"  this machine: writing {TOUCH >> 30} GiB of fresh memory {touch['fresh']:.2f} GB/s, "
          f"the same pages again {touch['again']:.2f} GB/s (the page faults' share of a load)")
    if counts:
        print(f"  trace: {counts['records']:,} records -> {counts['events']:,} events, "
              f"{counts['slices']:,} of them slices (X / B-E)")
    ok = True
    if "simdjson" in medians:
        ref = medians["simdjson"][0]
        for method in methods:
            if method != "simdjson":
                print(f"  {method:12s} / simdjson = {medians[method][0] / ref:6.2f}x wall, "
                      f"{cpus[method] / cpus['simdjson']:6.2f}x cpu")
    if "profview" in medians:
        secs, rss = medians["profview"]
        if "simdjson" in medians:
            ratio = secs / medians["simdjson"][0]
            met = ratio <= time_target
            ok &= met
            print(f"target time: profview.load / simdjson = {ratio:.2f} (<= {time_target}): "
                  f"{'MET' if met else 'NOT MET'}")
        ratio = rss / size
        met = ratio <= rss_target
        ok &= met
        print(f"target memory: peak RSS / file size = {ratio:.2f} (<= {rss_target}): "
              f"{'MET' if met else 'NOT MET'}")
    if "show" in medians:
        ratio = medians["show"][1] / size
        met = ratio <= rss_target
        ok &= met
        print(f"target memory: load + show() peak RSS / file size = {ratio:.2f} (<= {rss_target}): "
              f"{'MET' if met else 'NOT MET'}")
        state = statistics.median(float(r["state_bytes"]) for r in shows)  # type: ignore[arg-type]
        met = state <= STATE_TARGET
        ok &= met
        print(f"target widget state = {state / 1e6:.2f} MB (<= {STATE_TARGET / 1e6:.0f} MB): "
              f"{'MET' if met else 'NOT MET'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
