"""Reference answers of HTA 0.5.0 on the hand-written parity traces of ``tests/data/hta_parity/``
(``tests/data/make_hta_parity.py``).  Run it in a throwaway environment, never in the project's:

    python3 -m venv /tmp/hta && /tmp/hta/bin/pip install holistictraceanalysis==0.5.0 "pandas<3"
    /tmp/hta/bin/python scripts/crosscheck/hta_parity.py tests/data/hta_parity \
        tests/data/hta_reference/parity.json.gz

For every trace, loaded both ways (``include_last_profiler_step`` False, HTA's default, and True):

- ``queue``: per stream, HTA's ``get_queue_length_summary`` (``count``, ``max``, ``mean`` of its
  series) and the series itself as ``[ts, queue_length]`` rows in HTA's order (ts in µs from
  HTA's origin, the trace's first event);
- ``device``: the device activities HTA's kernel breakdown reads (``stream != -1``) by name:
  ``count`` and ``sum`` of ``dur`` (µs), and by HTA's kernel type.

Every timestamp of these traces is a whole µs; HTA_DISABLE_NS_ROUNDING=1 all the same.
"""

import gzip
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"

from hta.analyzers.trace_counters import TraceCounters  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402
from hta.utils.utils import get_kernel_type  # noqa: E402


def one_way(path: Path, include_last: bool) -> dict:
    tmp = Path(tempfile.mkdtemp())
    shutil.copy(path, tmp / path.name)
    ta = TraceAnalysis(trace_dir=str(tmp), include_last_profiler_step=include_last)
    rank = next(iter(ta.t.traces))
    sym = ta.t.symbol_table.get_sym_table()
    series = TraceCounters.get_queue_length_time_series(ta.t, [rank]).get(rank)
    queue = {}
    if series is not None:
        for stream, g in series.groupby("stream"):
            values = g["queue_length"]
            queue[str(int(stream))] = {"count": int(len(values)), "max": float(values.max()),
                                       "mean": float(values.mean()),
                                       "series": [[int(t), int(v)]
                                                  for t, v in zip(g["ts"], values, strict=True)]}
    df = ta.t.get_trace(rank)
    kernels = df[df["stream"].ne(-1)]
    device: dict[str, dict] = {}
    for name_id, g in kernels.groupby("name"):
        name = sym[int(name_id)]
        device[name] = {"count": int(len(g)), "sum": int(g["dur"].sum()),
                        "kernel_type": get_kernel_type(name)}
    return {"queue": queue, "device": device}


def main() -> None:
    source, out = Path(sys.argv[1]), Path(sys.argv[2])
    result = {}
    for path in sorted(p for p in source.iterdir() if p.name.endswith((".json", ".json.gz"))):
        result[path.name] = {"default": one_way(path, False),
                             "include_last_profiler_step": one_way(path, True)}
    text = json.dumps({"hta": "0.5.0", "files": result}, indent=1, sort_keys=True) + "\n"
    out.write_bytes(gzip.compress(text.encode(), mtime=0))


if __name__ == "__main__":
    main()
