"""Reference answers of HTA 0.5.0's queue-length summary on the shared GPU traces (run it in a
throwaway environment, never in the project's):

    python3 -m venv /tmp/hta && /tmp/hta/bin/pip install holistictraceanalysis==0.5.0 "pandas<3"
    /tmp/hta/bin/python scripts/crosscheck/hta_queue_length.py ../shared/traces/hta \
        tests/data/hta_reference/queue_length.json

For every file and CUDA stream it writes HTA's ``get_queue_length_summary`` (``describe()`` of its
series): ``count``, ``max`` and ``mean``.  HTA's ``TraceAnalysis`` drops the last ProfilerStep
when it loads a trace (``include_last_profiler_step=False``).
"""

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"

from hta.analyzers.trace_counters import TraceCounters  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402


def one_file(path: Path) -> dict[str, dict[str, float]]:
    tmp = Path(tempfile.mkdtemp())
    shutil.copy(path, tmp / path.name)
    ta = TraceAnalysis(trace_dir=str(tmp))
    rank = next(iter(ta.t.traces))
    summary = TraceCounters.get_queue_length_summary(ta.t, [rank])
    if summary is None:
        return {}
    summary = summary["queue_length"].reset_index()
    return {str(int(r["stream"])): {"count": int(r["count"]), "max": float(r["max"]),
                                    "mean": float(r["mean"])} for _, r in summary.iterrows()}


def main() -> None:
    source, out = Path(sys.argv[1]), Path(sys.argv[2])
    result = {p.name: one_file(p) for p in sorted(source.glob("*.json.gz"))}
    out.write_text(json.dumps({"hta": "0.5.0", "files": result}, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
