"""TensorFlow RunMetadata / StepStats (seed 002), text and binary.

Expected values are recomputed from the raw text with regular expressions
(one ``node_stats`` block at a time), following TensorFlow's own definitions
(op time = all_start + op_start_rel ... all_start + op_end_rel; negative
``alloc_bytes`` are frees), never taken from the loader.
"""

from __future__ import annotations

import gzip
import importlib.util
import re
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from google.protobuf import text_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_profview
from jupyter_profview.errors import ProfviewError
from jupyter_profview.formats import chainer_graph, tf_node_order, tf_node_shapes, tf_step_stats
from jupyter_profview.formats.step_stats_proto import message_class
from jupyter_profview.loader import load as profview_load
from jupyter_profview.sources import Source
from tests.format_helpers import mutate

EXAMPLES = Path(jupyter_profview.__file__).parent / "examples"
SEED = EXAMPLES / "002_6b18107121892edf.txt"
DATA = Path(__file__).parent / "data"
RAW = SEED.read_bytes()
TEXT = RAW.decode()
GPU = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU = "/job:localhost/replica:0/task:0/device:CPU:0"


def load(data: bytes | Path, name: str = "seed002.txt"):
    source = Source(data, name=name) if isinstance(data, bytes) else Source(data)
    trace = tf_step_stats.FORMAT.load(source)
    assert trace.quality.unaccounted == 0
    return trace


def _int(block: str, key: str) -> int:
    match = re.search(rf"\n\s*{key}: (-?\d+)", block)
    return int(match.group(1)) if match else 0


def raw_nodes() -> list[dict]:
    """Every node_stats of the seed, parsed with regexes only."""
    nodes = []
    for dev_block in TEXT.split("\n  dev_stats {")[1:]:
        device = re.search(r'device: "([^"]*)"', dev_block).group(1)
        for block in dev_block.split("\n    node_stats {")[1:]:
            start = _int(block, "all_start_micros")
            nodes.append({
                "device": device,
                "name": re.search(r'node_name: "([^"]*)"', block).group(1),
                "op": re.search(r'timeline_label: "[^"]*? = (\w+)\(', block).group(1),
                "start": start + _int(block, "op_start_rel_micros"),
                "end": start + _int(block, "op_end_rel_micros"),
                "all_end": start + _int(block, "all_end_rel_micros"),
                "scheduled": _int(block, "scheduled_micros"),
                "in_use": [int(v) for v in re.findall(r"allocator_bytes_in_use: (\d+)", block)],
                "records": [(int(t), int(b)) for t, b in
                            re.findall(r"alloc_micros: (\d+)\s+alloc_bytes: (-?\d+)", block)],
                "outputs": [(int(req), int(alloc or 0), allocator) for req, alloc, allocator in re.findall(
                    r'requested_bytes: (\d+)\s+(?:allocated_bytes: (\d+)\s+)?allocator_name: "(\w+)"',
                    block)],
                "temp": _int(block, "temp_memory_size"),
                "persistent": _int(block, "persistent_memory_size"),
            })
    return nodes


NODES = raw_nodes()


@pytest.fixture(scope="module")
def trace():
    return load(SEED)


def test_counts_match_formats_md(trace):
    per_device = Counter(n["device"] for n in NODES)
    assert per_device == {GPU: 283, CPU: 9}
    assert len(NODES) == TEXT.count("node_stats {") == 292
    assert trace.events.groupby("process", observed=True).size().to_dict() == per_device
    assert trace.metadata["devices"] == dict(per_device)
    assert trace.quality.records_read == 292 and trace.quality.placed["events"] == 292
    span_us = max(n["end"] for n in NODES) - min(n["start"] for n in NODES)
    assert span_us == 147_713
    assert trace.time_unit == "ns" and trace.duration == span_us * 1000
    assert trace.info.base_time_ns == min(n["start"] for n in NODES) * 1000


def test_every_event_matches_its_node_stats(trace):
    base = min(n["start"] for n in NODES)
    expected = {(n["device"], n["name"]): n for n in NODES}
    assert len(expected) == len(NODES)  # (device, name) is unique in this seed
    events = trace.events
    for row in events.itertuples():
        node = expected[(row.process, row.name)]
        assert row.start == (node["start"] - base) * 1000
        assert row.dur == (node["end"] - node["start"]) * 1000
        assert row.category == node["op"]
        assert row.scheduled == (node["scheduled"] - base) * 1000
        assert row.thread == row.process.rsplit("device:", 1)[1]
    assert events["output_bytes"].sum() == sum(req for n in NODES for req, _, _ in n["outputs"])
    assert events["temp_bytes"].sum() == sum(n["temp"] for n in NODES)
    assert events["persistent_bytes"].sum() == sum(n["persistent"] for n in NODES)
    assert list(events["start"]) == sorted(events["start"])


def test_phases_follow_tf_naming(trace):
    phase = trace.events.set_index("name")["phase"]
    grads = [n["name"] for n in NODES if "/gradients/" in n["name"]]
    assert grads and all(phase[g] == "backward" for g in grads)
    applies = [n["name"] for n in NODES if n["op"] == "ApplyGradientDescent"]
    assert len(applies) == 16 and all(phase[a] == "optimizer" for a in applies)
    fwd = [n["name"] for n in NODES if n["op"] == "Conv2D"]
    assert fwd and all(phase[f] == "forward" for f in fwd)


def test_memory_curve_from_allocation_records(trace):
    records = sorted(r for n in NODES for r in n["records"])
    assert len(records) == TEXT.count("allocation_records {") == 328
    assert sum(b for _, b in records) == 0  # everything allocated in the step is freed
    # Anchor: allocator_bytes_in_use of the node that finished first (all the
    # seed's memory entries are GPU_0_bfc), minus records up to that instant.
    first = min((n for n in NODES if n["in_use"]), key=lambda n: n["all_end"])
    baseline = first["in_use"][0] - sum(b for t, b in records if t <= first["all_end"])
    per_time: dict[int, int] = defaultdict(int)
    for t, b in records:
        per_time[t] += b
    running, level = [], baseline
    for t in sorted(per_time):
        level += per_time[t]
        running.append(level)
    gpu = trace.memory[trace.memory["device"] == "GPU_0_bfc"]
    assert set(trace.memory["device"]) == {"GPU_0_bfc"}
    assert set(trace.memory["kind"]) == {"measured"}
    assert gpu["bytes"].max() == max(running) and gpu["bytes"].iloc[-1] == baseline
    assert gpu["bytes"].iloc[0] == first["in_use"][0]
    assert len(gpu) == len(per_time) + (first["all_end"] not in per_time)
    assert list(gpu["time"]) == sorted(gpu["time"])
    assert gpu["time"].iloc[-1] == (max(per_time) - min(n["start"] for n in NODES)) * 1000
    assert trace.metadata["allocators"]["GPU_0_bfc"]["baseline_bytes"] == baseline


def test_allocations_from_output_descriptions(trace):
    outputs = [(n, o) for n in NODES for o in n["outputs"]]
    allocs = trace.allocations
    assert len(allocs) == len(outputs) == TEXT.count("allocation_description {") == 283
    assert allocs["bytes"].sum() == sum(alloc or req for _, (req, alloc, _) in outputs)
    assert Counter(allocs["device"]) == Counter(a for _, (_, _, a) in outputs)
    assert set(trace.metadata["allocators"]) == {"GPU_0_bfc", "cuda_host_bfc", "cpu"}
    ptrs = [int(p) for p in re.findall(r"\bptr: (\d+)", TEXT)]
    assert sorted(allocs["address"].dropna()) == sorted(ptrs)
    # A free is known exactly when the owner's own records hold +bytes and -bytes.
    freed = sum(1 for n, (req, alloc, _) in outputs
                if (alloc or req) in [b for _, b in n["records"]]
                and -(alloc or req) in [b for _, b in n["records"]])
    assert allocs["free_time"].notna().sum() == freed == 118
    assert (allocs["free_time"].dropna() >= allocs.loc[allocs["free_time"].notna(), "alloc_time"]).all()
    assert set(allocs["owner"]) <= {n["name"] for n in NODES}


def test_args_give_the_raw_node(trace):
    row = trace.events.index[trace.events["category"] == "Conv2D"][0]
    args = trace.args(row)
    assert args["node_name"] == trace.events.loc[row, "name"]
    # labels may start with a memory note: "[GPU_0_bfc 94.6MB 94.6MB] name = Conv2D(...)"
    assert f'{args["node_name"]} = Conv2D(' in args["timeline_label"]
    assert args["outputs"][0]["dtype"] in {"DT_HALF", "DT_FLOAT"}


# -- binary protobuf ------------------------------------------------------------

def _fixture_module():
    spec = importlib.util.spec_from_file_location("make_002_fixtures", DATA / "make_002_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_fixtures_are_reproducible():
    built = _fixture_module().build()
    for name, data in built.items():
        if name.endswith(".gz"):
            assert gzip.decompress((DATA / name).read_bytes()) == gzip.decompress(data)
        else:
            assert (DATA / name).read_bytes() == data, name


@pytest.mark.parametrize("fixture, kind", [
    ("002_run_metadata.pb", "RunMetadata"), ("002_step_stats.pb", "StepStats"),
    ("002_run_metadata.pb.gz", "RunMetadata"),
])
def test_binary_equals_text(trace, fixture, kind):
    binary = load(DATA / fixture)
    assert binary.metadata["encoding"] == "binary" and binary.metadata["message"] == kind
    for table in ("events", "memory", "allocations", "nodes", "flows"):
        pd.testing.assert_frame_equal(getattr(binary, table), getattr(trace, table))
    assert binary.quality == trace.quality
    skip = {"encoding", "message"}
    assert {k: v for k, v in binary.metadata.items() if k not in skip} == \
        {k: v for k, v in trace.metadata.items() if k not in skip}


def test_bare_step_stats_text():
    text = TEXT.replace("step_stats {\n", "", 1).rstrip().removesuffix("}")
    trace = load(text.encode())
    assert trace.metadata["message"] == "StepStats" and len(trace.events) == 292



def test_detected_and_loaded_through_the_public_loader():
    trace = profview_load(SEED)
    assert trace.format == "tf_step_stats" and trace.quality.unaccounted == 0
    for fixture in ("002_run_metadata.pb", "002_step_stats.pb", "002_run_metadata.pb.gz"):
        assert profview_load(DATA / fixture).format == "tf_step_stats"


def test_sniff_recognises_only_step_stats():
    heads = {p.name[:3]: Source(p).head() for p in sorted(EXAMPLES.glob("00*.txt"))}
    assert tf_step_stats.sniff(heads["002"])
    assert not any(tf_step_stats.sniff(h) for k, h in heads.items() if k != "002")
    for fixture in ("002_run_metadata.pb", "002_step_stats.pb", "002_run_metadata.pb.gz"):
        head = Source(DATA / fixture).head()
        assert tf_step_stats.sniff(head)
        for other in (tf_node_order, tf_node_shapes, chainer_graph):
            assert not other.FORMAT.sniff(head)
    assert not tf_step_stats.sniff(b"\n\nstep_stats")  # newlines are also field-1 tags
    assert not tf_step_stats.sniff(b"")


# -- bad input -------------------------------------------------------------------

def test_truncated_text():
    with pytest.raises(ProfviewError, match=r"seed002\.txt: line \d+, column \d+"):
        load(RAW[: len(RAW) // 2])


def test_corrupted_text_names_line_and_column():
    bad = TEXT.replace("all_start_micros: 1552507523166505", "all_start_micros: \"soon\"", 1)
    line = TEXT[: TEXT.index("all_start_micros: 1552507523166505")].count("\n") + 1
    with pytest.raises(ProfviewError, match=rf"line {line}, column \d+"):
        load(bad.encode())
    with pytest.raises(ProfviewError, match="line 4"):
        load(b"step_stats {\n  dev_stats {\n    node_stats {\n      op_end_rel_micros: 1.5\n")


def test_truncated_and_corrupted_binary():
    pb = (DATA / "002_run_metadata.pb").read_bytes()
    with pytest.raises(ProfviewError, match=r"byte \d+"):
        load(pb[: len(pb) // 2], name="cut.pb")
    at = pb.index(b"_SOURCE") - 1  # the node_name's length byte: now runs past its parent
    corrupt = pb[:at] + b"\x7f" + pb[at + 1:]
    with pytest.raises(ProfviewError, match=r"cut\.pb: byte \d+ \(in step_stats\.dev_stats\[0\]"):
        load(corrupt, name="cut.pb")
    gz = (DATA / "002_run_metadata.pb.gz").read_bytes()
    with pytest.raises(ProfviewError):
        load(gz[: len(gz) // 2], name="cut.pb.gz")


@pytest.mark.parametrize("data, message", [
    (b"", "empty"), (b"   \n", "empty"), (b"step_stats {\n}\n", "no timed node_stats"),
    (b"dev_stats { node_stats { node_name: 'x' } }", "no timed node_stats"),
    (b"dev_stats { node_stats { all_start_micros: 9223372036854775807 } }", "out of range"),
    (b"{\"traceEvents\": []}", "byte 0"),
    (b"\x0a\x05\x0a\x03/x:", "no timed node_stats"),
    (b"\x0a\x08\x0a\x04/x:0\x12\x05", r"byte 8 \(in dev_stats\[0\]\.node_stats\[0\]\)"),
])
def test_bad_inputs(data, message):
    with pytest.raises(ProfviewError, match=message):
        load(data)


def _small_step_stats() -> bytes:
    msg = message_class("RunMetadata")()
    text_format.Parse(TEXT, msg)
    for dev in msg.step_stats.dev_stats:
        del dev.node_stats[12:]
    return msg.step_stats.SerializeToString()


SMALL_PB = _small_step_stats()
SMALL_TEXT = TEXT[: TEXT.index("\n    node_stats {", 4000)] + "\n  }\n}\n"


def _check(data: bytes) -> None:
    try:
        trace = load(data, name="fuzz")
    except ProfviewError:
        return
    assert len(trace.events) > 0 and np.issubdtype(trace.events["start"].dtype, np.integer)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_binary_mutations(data):
    _check(mutate(data, SMALL_PB))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_text_mutations(data):
    text = bytearray(SMALL_TEXT.encode())
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text) - 1))
        text[at:at + data.draw(st.integers(0, 3))] = data.draw(
            st.sampled_from([b"", b"{", b"}", b"\"", b"-", b"9999999999999999999", b"x", b"\xff", b":"]))
    _check(bytes(text))


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_random_bytes(blob):
    _check(b"\x0a" + blob)
    _check(blob)
