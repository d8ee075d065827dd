"""GPU benchmark: ``trace.launches``, the GPU analyses and the cost of linking
launches and flows at load time, on the generated multi-stream GPU trace.

    python benchmarks/bench_gpu.py                      # 1M timeline events (generated once)
    python benchmarks/bench_gpu.py --events 300000 --repeat 3
    python benchmarks/bench_gpu.py --events 20000 --repeat 1 --data /tmp/x   # smoke run (tests)

The trace is ``make_pytorch_trace.py --gpu`` (three streams, NCCL, memcpy /
memset, flow ``f`` before ``s``).  In one process, alternating, ``--repeat``
times each:

    load (linked)     ``profview.load(path)`` as shipped: flows paired by
                      (cat, id), rebound by correlation, ``trace.launches`` built
    load (flows only) the same without the launches join and the rebinding
                      (the work the loader did before: flows paired, bound by time)
    load (unlinked)   also without any flow pairing (no ``flows`` table)

then, on the loaded trace, the ``trace.launches`` join alone and each
analysis.  Prints medians and the targets: every analysis and the launches
join <= 2 s, linked / flows-only load <= 1.10.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import jupyter_profview as profview  # noqa: E402
from jupyter_profview import analysis  # noqa: E402
from jupyter_profview.formats.chrome import flows as flows_mod  # noqa: E402
from jupyter_profview.formats.chrome import gpu as gpu_mod  # noqa: E402
from jupyter_profview.formats.chrome import trace as trace_mod  # noqa: E402
from jupyter_profview.model import empty_launches  # noqa: E402

ANALYSIS_TARGET = 2.0
LOAD_RATIO_TARGET = 1.10


def ensure_file(events: int, data: Path | None = None) -> Path:
    """The generated trace of ``events`` X events (made once), in ``data`` if given, else in
    the generator's default place."""
    sys.path.insert(0, str(HERE))
    from make_pytorch_trace import default_path

    path = default_path(events, gpu=True)
    if data is not None:
        path = data / path.name
    if not path.exists():
        cmd = [sys.executable, str(HERE / "make_pytorch_trace.py"), "--events", str(events), "--gpu",
               "--out", str(path)]
        subprocess.run(cmd, check=True)
    return path


def unlinked(flows: bool) -> Any:
    """Patch the loader so that it does not link launches (nor, unless
    ``flows``, flows); returns an undo function."""
    saved = (trace_mod.build_flows, trace_mod.bind_by_correlation, gpu_mod.DeviceRows.launches)

    def no_flows(c: Any, records: Any, pairs: Any, index: Any, base: int, quality: Any) -> pd.DataFrame:
        quality.placed["flows"] += len(records)  # keep the loader's record accounting balanced
        from jupyter_profview.model import empty_flows
        return empty_flows()

    if not flows:
        trace_mod.build_flows = no_flows
    trace_mod.bind_by_correlation = lambda *a, **k: 0
    gpu_mod.DeviceRows.launches = lambda self, events, event_of_row: (  # type: ignore[method-assign]
        empty_launches(), {"device_activities": 0})

    def undo() -> None:
        trace_mod.build_flows, trace_mod.bind_by_correlation = saved[0], saved[1]
        gpu_mod.DeviceRows.launches = saved[2]  # type: ignore[method-assign]

    return undo


def timed(fn: Any, cpu: list[float] | None = None) -> tuple[float, Any]:
    """Wall seconds of ``fn()`` (its CPU seconds appended to ``cpu``) and its result."""
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    wall = time.perf_counter() - t0
    if cpu is not None:
        cpu.append(time.process_time() - c0)
    return wall, out


def generated_trace(doc: str, argv: list[str] | None) -> tuple[argparse.Namespace, Path]:
    """The options of a benchmark on the generated GPU trace (``--events``, ``--repeat``,
    ``--data``; its description: the first line of ``doc``), parsed, and the trace's file
    (generated once by ``ensure_file``)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, default=None,
                        help="directory of the generated trace (default: the generator's)")
    args = parser.parse_args(argv)
    return args, ensure_file(args.events, args.data)


def main(argv: list[str] | None = None) -> int:
    args, path = generated_trace(__doc__, argv)
    print(f"{path.name}: {path.stat().st_size / 1e6:.0f} MB")
    linked_t: list[float] = []
    flows_t: list[float] = []
    unlinked_t: list[float] = []
    cpu: dict[str, list[float]] = {"linked": [], "flows": [], "none": []}
    trace = profview.load(path)  # warm up (imports, page cache); not timed
    for _ in range(args.repeat):
        secs, trace = timed(lambda: profview.load(path), cpu["linked"])
        linked_t.append(secs)
        for keep_flows, times in ((True, flows_t), (False, unlinked_t)):
            undo = unlinked(keep_flows)
            try:
                secs, bare = timed(lambda: profview.load(path), cpu["flows" if keep_flows else "none"])
            finally:
                undo()
            assert len(bare.launches) == 0 and (len(bare.flows) > 0) == keep_flows
            del bare
            times.append(secs)
    la = trace.launches
    print(f"events {len(trace.events):,}  flows {len(trace.flows):,}  launches {len(la):,} "
          f"(linked {int(la['launch'].notna().sum()):,})")
    rows: list[tuple[str, float, str]] = []
    load_l, load_f, load_u = (statistics.median(t) for t in (linked_t, flows_t, unlinked_t))
    ratio = load_l / load_f
    cpu_l, cpu_f, cpu_u = (statistics.median(cpu[k]) for k in ("linked", "flows", "none"))
    rows.append(("load, linked", load_l, f"(CPU {cpu_l:.3f} s)"))
    rows.append(("load, flows only (as before)", load_f, f"(CPU {cpu_f:.3f} s)"))
    rows.append(("load, unlinked (no flows)", load_u, f"(CPU {cpu_u:.3f} s)"))
    verdict = "ok" if ratio <= LOAD_RATIO_TARGET else "MISSED"
    rows.append(("  ratio linked / flows only", ratio, f"<= {LOAD_RATIO_TARGET}: {verdict}; "
                 f"CPU {cpu_l / cpu_f:.3f}"))
    rows.append(("  ratio linked / no flows", load_l / load_u, f"(information); CPU {cpu_l / cpu_u:.3f}"))

    kinds = la["type"].astype(str).map({"kernel": "kernel", "communication": "kernel", "memcpy": "memcpy",
                                        "memset": "memset"}).to_numpy().astype(str)
    stream = la["stream"].to_numpy(np.float64, na_value=np.nan)
    device = la["device"].to_numpy(np.float64, na_value=np.nan)
    kernel = la["kernel"].to_numpy()
    jobs = {
        "trace.launches (join)": lambda: gpu_mod.build_launches(trace.events, kernel, kinds, stream, device),
        "flow rebinding by correlation": lambda: flows_mod.bind_by_correlation(
            trace.flows.copy(), trace.events, la, ("ac2g",)),
        "kernel_breakdown(type)": lambda: analysis.kernel_breakdown(trace),
        "kernel_breakdown(name)": lambda: analysis.kernel_breakdown(trace, by="name"),
        "temporal_breakdown": lambda: analysis.temporal_breakdown(trace),
        "comm_comp_overlap": lambda: analysis.comm_comp_overlap(trace),
        "idle_time": lambda: analysis.idle_time(trace),
        "launch_stats": lambda: analysis.launch_stats(trace),
        "queue_length": lambda: analysis.queue_length(trace),
    }
    worst = 0.0
    for label, fn in jobs.items():
        secs = statistics.median(timed(fn)[0] for _ in range(args.repeat))
        worst = max(worst, secs)
        rows.append((label, secs, f"<= {ANALYSIS_TARGET} s: {'ok' if secs <= ANALYSIS_TARGET else 'MISSED'}"))
    width = max(len(r[0]) for r in rows)
    print(f"medians of {args.repeat} runs")
    for label, value, note in rows:
        unit = "" if label.strip().startswith("ratio") else " s"
        print(f"  {label:<{width}}  {value:8.3f}{unit}  {note}")
    ok = worst <= ANALYSIS_TARGET and ratio <= LOAD_RATIO_TARGET
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
