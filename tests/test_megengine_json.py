"""MegEngine graph-profiler JSON (seed 004).  Expected values are recomputed from
the raw file with the stdlib ``json`` module, the way MegEngine's
``profile_analyze`` defines them (time = end - start, FLOP/s = computation /
time, bandwidth = memory / time)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_profview
import jupyter_profview as profview
from jupyter_profview import analysis
from jupyter_profview.errors import ProfviewError
from jupyter_profview.formats import chainer_graph, megengine_json
from tests.format_helpers import fuzz_check, load_with

SEED = Path(jupyter_profview.__file__).parent / "examples" / "004_825e28a4f520ddc2.txt"
RAW = SEED.read_bytes()
DOC = json.loads(RAW)
PROF, GRAPH = DOC["profiler"], DOC["graph_exec"]


def load(data: bytes | Path, name: str = "seed004.json"):
    return load_with(megengine_json, data, name)


@pytest.fixture(scope="module")
def trace():
    return load(SEED)


def device_rows(trace):
    return trace.events[trace.events["process"] != "host"]


def test_counts(trace):
    assert len(GRAPH["comp_seq"]) == 234
    n_dev = sum(len(v) for v in PROF["device"].values())
    n_host = sum(len(v) for v in PROF["host"].values())
    assert len(device_rows(trace)) == n_dev == 234
    assert (trace.events["process"] == "host").sum() == n_host == 234
    assert set(trace.events.loc[trace.events["process"] == "host", "thread"]) == {"interpreter"}
    assert set(device_rows(trace)["process"]) == {"gpu0:0"}
    assert len(trace.nodes) == len(GRAPH["operator"]) == 240
    assert trace.nodes["order"].notna().sum() == 234
    executed = trace.nodes.dropna(subset=["order"]).sort_values("order")
    assert list(executed["id"]) == GRAPH["comp_seq"]
    q = trace.quality
    assert q.placed["events"] == n_dev + n_host and q.placed["nodes"] == 240
    assert q.records_read == (n_dev + n_host + len(PROF["opr_footprint"]) + len(GRAPH["operator"])
                              + len(GRAPH["var"]) + len(GRAPH["mem_chunk"]))


def test_device_time_per_operator_type(trace):
    expected = defaultdict(float)
    for oid, lanes in PROF["device"].items():
        for rec in lanes.values():
            expected[GRAPH["operator"][oid]["type"]] += (rec["end"] - rec["start"]) * 1e9
    got = device_rows(trace).groupby("category", observed=True)["dur"].sum()
    counts = device_rows(trace)["category"].value_counts()
    assert set(got.index) == set(expected)
    for op_type, ns in expected.items():
        assert abs(got[op_type] - ns) <= counts[op_type] + 1e-6, op_type  # <= 1 ns rounding per event
    total = sum(max(r["end"] - r["start"] for r in lanes.values()) for lanes in PROF["device"].values())
    assert abs(device_rows(trace)["dur"].sum() - total * 1e9) <= 234


def test_absolute_times_and_wait(trace):
    base = trace.info.base_time_ns
    dev = device_rows(trace).set_index("opr_id")
    for oid in ("621", "517", GRAPH["comp_seq"][-1]):
        rec = PROF["device"][oid]["gpu0:0"]
        assert dev.loc[oid, "start"] + base == round(rec["start"] * 1e9)
        assert abs(dev.loc[oid, "dur"] - (rec["end"] - rec["start"]) * 1e9) <= 1
        assert abs(dev.loc[oid, "wait"] - (rec["kern"] - rec["start"]) * 1e9) <= 1
    assert base == round(min(r["start"] for side in ("host", "device") for lanes in PROF[side].values()
                             for r in lanes.values()) * 1e9)


def test_footprint_reproduces_the_analyzer(trace):
    dev = device_rows(trace)
    flops_by_type = defaultdict(int)
    mem_by_type = defaultdict(int)
    for oid, fp in PROF["opr_footprint"].items():
        op_type = GRAPH["operator"][oid]["type"]
        flops_by_type[op_type] += fp["computation"] or 0
        mem_by_type[op_type] += fp["memory"]
    got_flops = dev.groupby("category", observed=True)["flops"].sum()
    got_mem = dev.groupby("category", observed=True)["memory_bytes"].sum()
    for op_type in flops_by_type:
        assert got_flops[op_type] == flops_by_type[op_type]
        assert got_mem[op_type] == mem_by_type[op_type]
    row = dev.set_index("opr_id").loc["621"]
    fp, rec = PROF["opr_footprint"]["621"], PROF["device"]["621"]["gpu0:0"]
    seconds = rec["end"] - rec["start"]
    assert math.isclose(row["flops"] / (row["dur"] / 1e9), fp["computation"] / seconds, rel_tol=1e-3)
    assert math.isclose(row["memory_bytes"] / (row["dur"] / 1e9), fp["memory"] / seconds, rel_tol=1e-3)
    assert row["in_shapes"] == [tuple(s) for s in fp["in_shapes"]]
    assert json.loads(row["param"]) == fp["param"]
    null_flops = sum(1 for fp in PROF["opr_footprint"].values() if fp["computation"] is None)
    assert dev["flops"].isna().sum() == null_flops
    host = trace.events[trace.events["process"] == "host"]
    assert host["flops"].isna().all() and host["memory_bytes"].isna().all()  # counted once, on the device
    assert host.set_index("opr_id").loc["621", "out_shapes"] == [tuple(s) for s in fp["out_shapes"]]


def test_summary_per_type_matches_the_analyzer(trace):
    """profile_analyze --aggregate-by type --aggregate sum, on the device rows."""
    pytest.importorskip("jupyter_profview.analysis")
    time_s, comp = defaultdict(float), defaultdict(int)
    for oid, lanes in PROF["device"].items():
        op_type = GRAPH["operator"][oid]["type"]
        time_s[op_type] += max(r["end"] - r["start"] for r in lanes.values())
        comp[op_type] += PROF["opr_footprint"][oid]["computation"] or 0
    summary = profview.summary(trace, by="category")
    conv = "ConvolutionForward"
    assert summary.loc[conv, "flops"] == comp[conv]
    # every convolution has a FLOP count, so its FLOP/s is computation / device time
    assert math.isclose(summary.loc[conv, "flop_rate"], comp[conv] / time_s[conv], rel_tol=1e-4)


def reference_buffers():
    """Buffers per the documented model, from the stdlib-parsed file."""
    ops, var, seq = GRAPH["operator"], GRAPH["var"], GRAPH["comp_seq"]
    step = {o: i for i, o in enumerate(seq)}
    producer = {v: o for o, op in ops.items() for v in op["output"]}
    readers = defaultdict(list)
    for o in seq:
        for v in ops[o]["input"]:
            readers[v].append(step[o])
    static = sum(c["size"] for c in GRAPH["mem_chunk"].values())
    dynamic = {}  # root var -> [size, first step, last step]
    for vid, v in var.items():
        if producer[vid] not in step or v["mem_plan"] is not None:
            continue
        root = v["mem_readonly_fwd_src"] or vid
        r = var[root]
        if not r["prev_dev_ptr"] or r.get("prev_dev_ptr_end") is None:
            continue
        entry = dynamic.setdefault(root, [r["prev_dev_ptr_end"] - r["prev_dev_ptr"], step[producer[root]],
                                          step[producer[root]]])
        entry[2] = max([entry[2], step[producer[vid]], *readers[vid]])
    return static, dynamic, len(seq)


def test_simulated_memory_peak(trace):
    static, dynamic, n = reference_buffers()
    per_step = [static + sum(size for size, a, f in dynamic.values() if a <= s <= f) for s in range(n)]
    assert int(trace.memory["bytes"].max()) == max(per_step)
    assert int(trace.memory["bytes"].iloc[-1]) == static  # everything dynamic freed at the end
    assert set(trace.memory["kind"]) == {"simulated"}
    alloc = trace.allocations
    assert (alloc["storage"] == "static").sum() == len(GRAPH["mem_chunk"])
    assert alloc.loc[alloc["storage"] == "static", "bytes"].sum() == static
    assert (alloc["storage"] == "dynamic").sum() == len(dynamic)
    peak_t = analysis.peak_time(trace)
    live = analysis.live_at(trace, peak_t)
    assert int(live["bytes"].sum()) == max(per_step)


def test_live_buffers_never_overlap_in_address_space(trace):
    a = trace.allocations.dropna(subset=["address"])
    lo = a["address"].to_numpy(dtype=np.int64)
    hi = lo + a["bytes"].to_numpy(dtype=np.int64)
    born = a["alloc_time"].to_numpy(dtype=np.int64)
    dies = a["free_time"].fillna(2**62).to_numpy(dtype=np.int64)
    both_live = (born[:, None] < dies[None, :]) & (born[None, :] < dies[:, None])
    overlap = (lo[:, None] < hi[None, :]) & (lo[None, :] < hi[:, None])
    np.fill_diagonal(overlap, False)
    assert not (overlap & both_live).any()
    assert overlap.any()  # addresses are reused, just never while both are live


def test_sniff_and_args(trace):
    assert megengine_json.sniff(RAW[:65536])
    assert not megengine_json.sniff(b'{"traceEvents": [{"name": "profiler"}]}')
    assert not chainer_graph.sniff(RAW[:65536])
    args = trace.args(0)
    assert args["opr_id"] == trace.events.loc[0, "opr_id"] and "timing" in args


def test_through_the_loader():
    try:
        trace = jupyter_profview.load(SEED)
    except ModuleNotFoundError as exc:
        pytest.skip(f"registry incomplete: {exc}")
    assert trace.format == "megengine_json" and trace.quality.unaccounted == 0


def expect_error(data: bytes, *fragments: str) -> None:
    with pytest.raises(ProfviewError) as info:
        load(data)
    message = str(info.value)
    assert "seed004.json" in message
    for fragment in fragments:
        assert fragment in message, message


def mutated(path: list, value) -> bytes:
    doc = json.loads(RAW)
    node = doc
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return json.dumps(doc).encode()


def test_truncated_and_corrupted():
    expect_error(RAW[: len(RAW) // 2], "invalid JSON", "line 1, column 191085")
    expect_error(b"", "empty")
    expect_error(b"[1, 2]", "top level", "JSON object")
    expect_error(mutated(["profiler", "device", "621", "gpu0:0", "start"], "abc"),
                 'profiler.device["621"]["gpu0:0"].start', "number")
    expect_error(mutated(["profiler", "host", "621", "interpreter", "end"], KeyError), "missing key 'end'")
    expect_error(mutated(["graph_exec"], KeyError), "graph_exec")
    expect_error(mutated(["graph_exec", "comp_seq", 3], "nope"), "graph_exec.comp_seq[3]")
    expect_error(mutated(["graph_exec", "operator", "621", "input"], 5), 'operator["621"].input')
    expect_error(mutated(["graph_exec", "mem_chunk", "chk349", "size"], -4), 'mem_chunk["chk349"].size')
    expect_error(mutated(["profiler", "opr_footprint", "621", "in_shapes"], [[1, "x"]]), "in_shapes[0][1]")
    expect_error(mutated(["graph_exec", "var", "783", "prev_dev_ptr"], {}), 'var["783"].prev_dev_ptr')


def test_missing_timing_is_accounted():
    doc = json.loads(RAW)
    doc["profiler"]["device"]["99999"] = {"gpu0:0": {"start": 0.2, "kern": 0.2, "end": 0.3}}
    doc["profiler"]["opr_internal_pf"] = {"1": {}}
    del doc["profiler"]["host"]["621"]
    del doc["profiler"]["device"]["621"]
    trace = load(json.dumps(doc).encode())
    assert trace.quality.skipped["timing of an operator missing from graph_exec.operator"] == 1
    assert trace.quality.skipped["footprint of an operator without timing"] == 1
    assert trace.quality.skipped["opr_internal_pf entry (not interpreted)"] == 1


def _paths(node, prefix, out):
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return
    for k, v in items:
        out.append((*prefix, k))
        _paths(v, (*prefix, k), out)


PATHS: list = []
_paths(DOC, (), PATHS)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


def _check(data: bytes) -> None:
    fuzz_check(megengine_json, data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PATHS), json_values | st.just(KeyError)), min_size=1, max_size=3))
def test_fuzz_json_values(changes):
    doc = orjson.loads(RAW)  # orjson only to keep the fuzz loop fast
    for path, value in changes:
        node = doc
        try:
            for key in path[:-1]:
                node = node[key]
            if value is KeyError:
                del node[path[-1]]
            else:
                node[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed the path
    _check(json.dumps(doc).encode())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(RAW)), st.binary(max_size=4), st.sampled_from(["truncate", "splice"]))
def test_fuzz_bytes(cut, junk, mode):
    _check(RAW[:cut] if mode == "truncate" else RAW[:cut] + junk + RAW[cut + len(junk):])
