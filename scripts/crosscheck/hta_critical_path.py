"""Reference answers of HTA 0.5.0's critical path on the shared GPU traces (run it in a throwaway
environment, never in the project's):

    python3 -m venv /tmp/hta && /tmp/hta/bin/pip install holistictraceanalysis==0.5.0 "pandas<3"
    /tmp/hta/bin/python scripts/crosscheck/hta_critical_path.py ../shared/traces/hta \
        tests/data/hta_reference/critical_path.json.gz
    /tmp/hta/bin/python scripts/crosscheck/hta_critical_path.py tests/data/critical_path \
        tests/data/hta_reference/critical_path_handmade.json.gz

(the second: the hand-written traces of ``tests/data/make_critical_path_traces.py``).

For every file and every CPU-side ProfilerStep instance (or the whole trace when a file has none) it
writes (gzipped JSON) HTA's path length, the events on the path ([name, start in µs from HTA's own
origin, duration in µs, stream]) and HTA's breakdown by bound_by, in µs.  HTA_DISABLE_NS_ROUNDING=1 keeps its
timestamps as close to the file as it can (HTA still keeps whole µs for ts).
"""

import gzip
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"

import networkx as nx  # noqa: E402
from hta.analyzers.critical_path_analysis import CriticalPathAnalysis  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402


def one_file(path: Path) -> list[dict]:
    tmp = Path(tempfile.mkdtemp())
    shutil.copy(path, tmp / path.name)
    ta = TraceAnalysis(trace_dir=str(tmp))
    rank = next(iter(ta.t.traces))
    df = ta.t.get_trace(rank)
    sym = ta.t.symbol_table.get_sym_table()
    ids = ta.t.symbol_table.get_sym_id_map()
    names = df["name"].map(lambda i: sym[i])
    steps = df[names.str.startswith("ProfilerStep#") & (df["stream"] == -1)
               & (df["cat"] == ids.get("user_annotation", -99))].sort_values("ts")
    all_steps = df[names.str.startswith("ProfilerStep#")].sort_values("ts")
    cases = []
    if len(steps) == 0:
        cases.append(("", 0, None))
    else:
        for k, idx in enumerate(steps.index):
            # HTA counts every annotation instance in its frame order, GPU-side copies too
            cases.append(("ProfilerStep", list(all_steps.index).index(idx), k))
    out = []
    for annotation, hta_instance, ours in cases:
        res = CriticalPathAnalysis.critical_path_analysis(ta.t, rank, annotation, hta_instance)
        if res is None:
            out.append({"file": path.name, "instance": ours, "error": "no result"})
            continue
        g, ok = res
        if not ok:
            out.append({"file": path.name, "instance": ours, "error": "critical_path() failed"})
            continue
        length = nx.dag_longest_path_length(g, weight="weight")
        events = []
        for ev in sorted(g.critical_path_events_set):
            row = df.loc[ev]
            events.append([sym[row["name"]], int(row["ts"]), float(row["dur"]), int(row["stream"])])
        bd = g.get_critical_path_breakdown()
        breakdown = {str(k): float(v) for k, v in bd.groupby("bound_by")["duration"].sum().items()}
        out.append({"file": path.name, "annotation": annotation or None, "instance": ours,
                    "hta_instance": hta_instance, "length_us": float(length), "events": events,
                    "breakdown_us": breakdown, "edges_on_path": len(g.critical_path_edges_set),
                    "graph_nodes": g.number_of_nodes(), "graph_edges": g.number_of_edges()})
    shutil.rmtree(tmp)
    return out


def main() -> None:
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    names = sys.argv[3:] or sorted(p.name for p in src.glob("*.json.gz"))
    results = []
    for name in names:
        try:
            results.extend(one_file(src / name))
        except Exception as exc:  # record HTA's own failure on a file, as an answer
            results.append({"file": name, "error": f"{type(exc).__name__}: {exc}"})
    dst.write_bytes(gzip.compress(json.dumps(results, separators=(",", ":")).encode(), mtime=0))


if __name__ == "__main__":
    main()
