"""Memory snapshot panel benchmark: the first draw of the active memory timeline of a large
generated snapshot (benchmarks/make_snapshot.py), and its payload.

    python benchmarks/bench_memview.py [--mb 100] [--file snap.pickle] [--no-browser]

Kernel side, on the loaded trace: the ``_alloc_timeline`` frame of the whole trace and of a 1 %
window (time, bytes), against, in the same run, the memory curve the view already sends
(``_memory``: the baseline) and what shipping every allocation would weigh (memory_viz's way:
40 bytes per allocation plus its stack ids).  Browser side (headless Chromium + JupyterLab):
from ``profview.show(t)`` in the kernel to the panel's first draw (``data-memview-at`` of the view,
epoch ms, against the kernel's clock before ``show``: target < 2 s), broken down into the kernel's
``show()`` call (the widget's state: every panel's first payload), the rest up to the first draw
(comm, widget render, the panel's request) and the panel's own decode + stack + draw
(``data-memview-ms``).  ``profview.load`` runs before ``show`` and is printed apart (kernel and
notebook), with the load average.  The package is byte-compiled first, as an installed wheel is.
Exit status 1 when the first draw misses the target.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import make_snapshot  # noqa: E402

import jupyter_profview as profview  # noqa: E402
from jupyter_profview.widget.alloc_timeline import busiest_device, timeline_frame  # noqa: E402
from jupyter_profview.widget.state import WidgetData  # noqa: E402

TARGET_MS = 2000.0


def best(fn, repeat: int = 3) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "profview_bench_memview")
    ap.add_argument("--file", type=Path, help="a snapshot (generated there when absent)")
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args(argv)
    args.data.mkdir(parents=True, exist_ok=True)
    path = args.file or args.data / f"snapshot_{args.mb:g}mb.pickle"
    if not path.exists():
        make_snapshot.write(path, entries=int(args.mb * 1e6 / make_snapshot.BYTES_PER_ENTRY))
    t0 = time.perf_counter()
    trace = profview.load(path)
    print(f"{path.name}: {path.stat().st_size / 1e6:.1f} MB, {len(trace.allocations):,} allocations, "
          f"{len(trace.memory):,} memory points; load {time.perf_counter() - t0:.1f} s; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    dev = busiest_device(trace)
    lo, hi = float(trace.memory["time"].min()), float(trace.memory["time"].max())
    data = WidgetData(trace, "auto")
    t_base, base = best(lambda: data.memory_overview())
    t_full, full = best(lambda: timeline_frame(trace, dev, None, token=1))
    mid = (lo + hi) / 2
    t_zoom, zoom = best(lambda: timeline_frame(trace, dev, (mid, mid + (hi - lo) / 100), token=1))
    naive = len(trace.allocations) * 40 + sum(len(f) for f in trace.allocations["frames"]) * 4
    row = "{:<52}{:8.1f} ms {:9.1f} kB"
    print(row.format("baseline _memory (the curve the view already sends)", t_base * 1e3, len(base) / 1e3))
    print(row.format("_alloc_timeline, whole trace", t_full * 1e3, len(full) / 1e3),
          f"({t_full / t_base:.2f}x the baseline's time)")
    print(row.format("_alloc_timeline, a 1 % window", t_zoom * 1e3, len(zoom) / 1e3))
    print(f"every allocation shipped (memory_viz's way):                   {naive / 1e3:9.1f} kB "
          f"({naive / len(full):.0f}x the frame)")
    if args.no_browser:
        return 0
    from tests.browser.lab import CHROMIUM, LabNotebook, headless_lab, wait_until

    # the package's bytecode, as an installed wheel has it (this box runs with
    # PYTHONDONTWRITEBYTECODE=1: without it the kernel compiles ~100 modules in show(), ~0.6 s)
    compileall.compile_dir(REPO / "jupyter_profview", quiet=1)

    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is absent: apt-get install chromium fonts-liberation", file=sys.stderr)
        return 2
    with headless_lab(300_000) as (lab, page):
        nb = LabNotebook(lab, page, "bench_memview", [
            "import time\nimport jupyter_profview as profview\n"
            f"_t_load = time.time()\nt = profview.load(r'{path}')\n_t_load = time.time() - _t_load",
            "_t_show = time.time()\nw = profview.show(t)\n_t_shown = time.time()\nw"])
        nb.run_all()
        view = nb.wait_widget(timeout=600_000)
        assert wait_until(lambda: view.get_attribute("data-memview-at") is not None, timeout=120)
        t_load, t_show = float(nb.value("_t_load")), float(nb.value("_t_show"))
        t_shown = float(nb.value("_t_shown"))
        drawn = float(view.get_attribute("data-memview-at") or 0)
        own = float(view.get_attribute("data-memview-ms") or 0)
    first = drawn - t_show * 1000
    print(f"profview.load in the notebook's kernel: {t_load:.1f} s (before show, not in the target)")
    print(f"show() -> first draw of the bands: {first:8.1f} ms (target < {TARGET_MS:.0f} ms): "
          f"{'PASS' if first < TARGET_MS else 'FAIL'}; load average {os.getloadavg()[0]:.1f}")
    print(f"  kernel show() (widget state, every panel's first payload): {(t_shown - t_show) * 1e3:8.1f} ms")
    rest = drawn - t_shown * 1e3 - own
    print(f"  comm + widget render + the panel's request and frame:     {rest:8.1f} ms")
    print(f"  the panel's decode + stack + draw (data-memview-ms):       {own:8.1f} ms")
    return 0 if first < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
