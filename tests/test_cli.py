"""The command line, run as a subprocess: exit codes, help, summary, convert round trips."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import jupyter_profview as profview
from jupyter_profview import export
from jupyter_profview.builder import build_events, make_trace
from jupyter_profview.model import Quality

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ["tf_node_order", "tf_node_shapes", "tf_step_stats", "chainer_graph", "megengine_json"]
DATA = ROOT / "tests" / "data"


def profview_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PROFVIEW_TRACEBACK", None)
    return subprocess.run([sys.executable, "-m", "jupyter_profview", *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def test_help_and_formats():
    res = profview_cli("--help")
    assert res.returncode == 0
    for command in ("summary", "convert", "formats"):
        assert command in res.stdout
    for command in ("summary", "convert"):
        res = profview_cli(command, "--help")
        assert res.returncode == 0 and "usage: profview " + command in res.stdout
    res = profview_cli("formats")
    assert res.returncode == 0
    listed = [line.split()[0] for line in res.stdout.splitlines()]
    assert listed == list(profview.formats())


def test_summary_of_megengine_device():
    raw = json.loads(profview.example("megengine_json").read_text())
    seconds: dict[str, float] = defaultdict(float)
    for opr_id, per_node in raw["profiler"]["device"].items():
        for timing in per_node.values():
            seconds[raw["graph_exec"]["operator"][opr_id]["type"]] += timing["end"] - timing["start"]
    res = profview_cli("summary", profview.example("megengine_json"), "--process", "gpu0:0", "--top", "3")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "megengine_json" in lines[0]
    header = lines[1].split()
    assert header[:3] == ["count", "total_ms", "self_ms"] and "TFLOP/s" in header and "GB/s" in header
    rows = lines[3:]
    expected = sorted(seconds, key=seconds.get, reverse=True)[:3]
    assert [r.split()[0] for r in rows] == expected
    first_ms = float(rows[0].split()[2].replace(",", ""))
    assert first_ms == pytest.approx(seconds[expected[0]] * 1e3, abs=1e-3)


@pytest.mark.parametrize("args, message", [
    (["summary", "{missing}"], "no such file"),
    (["summary", "{garbage}"], "unrecognised trace format"),
    (["summary", "{example}", "--by", "nope"], "no column 'nope'"),
    (["summary", "{example}", "--process", "tpu9"], "no process 'tpu9'"),
    (["summary", "{example}", "--format", "nope"], "unknown format 'nope'"),
    (["convert", "{example}", "{tmp}/out.txt"], "cannot tell the output format"),
    (["summary"], "the following arguments are required"),
    (["explode"], "invalid choice"),
])
def test_bad_input_exits_2_without_traceback(tmp_path, args, message):
    garbage = tmp_path / "garbage.txt"
    garbage.write_bytes(b"\x00\x01\x02 definitely not a trace")
    values = {"missing": tmp_path / "missing.json", "garbage": garbage,
              "example": profview.example("megengine_json"), "tmp": tmp_path}
    res = profview_cli(*[a.format(**values) for a in args])
    assert res.returncode == 2
    assert message in res.stderr
    assert "Traceback" not in res.stderr
    assert res.stdout == ""


def test_other_failures_exit_1_without_traceback(tmp_path):
    res = profview_cli("convert", profview.example("megengine_json"), tmp_path / "no" / "such" / "dir.json")
    assert res.returncode == 1
    assert "profview: failed: FileNotFoundError" in res.stderr
    assert "Traceback" not in res.stderr


def comparable(trace):
    """(name, dur in ns) of every event, sorted: steps are written as µs, i.e. 1000 ns."""
    scale = 1000 if trace.time_unit == "step" else 1
    return sorted(zip(trace.events["name"].astype(str), (trace.events["dur"] * scale).tolist(), strict=True))


@pytest.mark.parametrize("example", EXAMPLES)
def test_convert_to_chrome_round_trip(tmp_path, example):
    source = profview.example(example)
    original = profview.load(source)
    out = tmp_path / f"{example}.json"
    res = profview_cli("convert", source, out)
    assert res.returncode == 0, res.stderr
    data = json.loads(out.read_text())
    events = data["traceEvents"]
    # Structure Perfetto and chrome://tracing need: integer pid/tid, M names for every pid/tid used
    named_pids = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    named_tids = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    slices = [e for e in events if e["ph"] in ("X", "i")]
    assert len(slices) == len(original.events)
    for e in slices:
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and e["ts"] >= 0
        assert e["pid"] in named_pids and (e["pid"], e["tid"]) in named_tids
    assert data["otherData"]["source_format"] == original.format
    if original.time_unit == "step":
        assert "1 step is written as 1 µs" in data["otherData"]["time_unit_note"]

    back = profview.load(out)
    assert back.format == "chrome"
    assert len(back.events) == len(original.events)
    assert comparable(back) == comparable(original)
    scale = 1000 if original.time_unit == "step" else 1
    assert (np.sort(back.events["start"]) == np.sort(original.events["start"]) * scale).all()
    # memory curves come back as the same devices and values
    assert len(back.memory) == len(original.memory)
    for device, mem in original.memory.groupby("device", observed=True):
        again = back.memory[back.memory["device"] == device]
        assert list(again["bytes"]) == list(mem["bytes"])
        assert list(again["time"]) == list(mem["time"] * scale)


def test_convert_gzip_and_torch_fixture_round_trip(tmp_path):
    source = DATA / "torch_mlp_train.json"
    original = profview.load(source)
    out = tmp_path / "torch.json.gz"
    assert profview_cli("convert", source, out).returncode == 0
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    back = profview.load(out)
    assert comparable(back) == comparable(original)
    assert len(back.memory) == len(original.memory)


def test_flows_become_s_f_pairs(tmp_path):
    q = Quality()
    events, _, base = build_events({
        "name": ["launch", "kernel"], "category": ["cpu_op", "kernel"], "process": ["host", "gpu"],
        "thread": ["main", "stream 7"], "start": [1000, 5000], "dur": [2000, 3000]}, q)
    flows = pd.DataFrame({
        "flow_id": pd.array(["17", "18"], dtype="string"),
        "name": pd.Categorical(["ac2g", "dangling"]), "category": pd.Categorical(["ac2g", "ac2g"]),
        "source": np.array([0, 0]), "target": np.array([1, -1]),
        "start": np.array([1500, 1500]), "end": np.array([5000, 9000]),
    })
    trace = make_trace("test", "ns", events, q, base=0, flows=flows)
    data = export.chrome_trace(trace)
    pairs = [e for e in data["traceEvents"] if e["ph"] in ("s", "f")]
    pid = {e["args"]["name"]: e["pid"] for e in data["traceEvents"] if e["name"] == "process_name"}
    assert [(e["ph"], e["id"], e["pid"], e["ts"]) for e in pairs] == [
        ("s", "17", pid["host"], 1.5), ("f", "17", pid["gpu"], 5.0)]
    assert pairs[1]["bp"] == "e"
    assert data["otherData"]["flows_dropped_without_both_events"] == 1
    export.write_chrome(trace, tmp_path / "flows.json")
    back = profview.load(tmp_path / "flows.json")
    assert len(back.flows) == 1
    flow = back.flows.iloc[0]
    assert back.events.loc[flow["source"], "name"] == "launch"
    assert back.events.loc[flow["target"], "name"] == "kernel"


@pytest.mark.parametrize("example", ["megengine_json", "tf_node_shapes", "chainer_graph"])
def test_convert_to_parquet(tmp_path, example):
    source = profview.example(example)
    trace = profview.load(source)
    res = profview_cli("convert", source, tmp_path / "out.parquet")
    assert res.returncode == 0, res.stderr
    written = sorted(p.name for p in tmp_path.iterdir())
    expected = {f"out.{t}.parquet" for t in ("events", "memory", "allocations", "nodes", "flows")}
    if trace.counters is not None:
        expected.add("out.counters.parquet")
    assert set(written) == expected
    events = pd.read_parquet(tmp_path / "out.events.parquet")
    assert list(events["id"]) == list(trace.events.index)
    assert list(events["name"].astype(str)) == list(trace.events["name"].astype(str))
    assert list(events["dur"]) == list(trace.events["dur"])
    nodes = pd.read_parquet(tmp_path / "out.nodes.parquet")
    assert len(nodes) == len(trace.nodes)
    if len(trace.nodes):
        first = trace.nodes.iloc[0]
        assert list(nodes.iloc[0]["inputs"]) == list(first["inputs"])
    for table in ("memory", "allocations"):
        assert len(pd.read_parquet(tmp_path / f"out.{table}.parquet")) == len(getattr(trace, table))
    meta = json.loads(pq.read_schema(tmp_path / "out.events.parquet").metadata[b"jupyter_profview"])
    assert meta["format"] == trace.format and meta["time_unit"] == trace.time_unit
    assert meta["quality"]["records_read"] == trace.quality.records_read


def test_parquet_mixed_object_values_fall_back_to_json():
    column = export._arrow_column(pd.Series([[(1, 2)], "int32 4x1", None], dtype=object))
    assert column.to_pylist() == ["[[1, 2]]", '"int32 4x1"', None]
