"""``profview.compare``: expectations counted from the fixture files themselves.

Fixtures: ``tests/data/compare/`` (one MLP recorded twice with torch.profiler, ReLU in
the base run, GELU in the test run; ``make_compare_traces.py``), ``tests/data/hta/``
(HolisticTraceAnalysis' trace-diff pair, with CUDA kernels), and modified copies of the
TF StepStats and MegEngine seeds written by the tests themselves.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_profview as profview
from jupyter_profview import ProfviewError
from jupyter_profview.analysis.compare import DEVICE_CATEGORIES
from tests.format_helpers import union_ns

DATA = Path(__file__).parent / "data"
BASE, TEST = DATA / "compare" / "base.pt.trace.json.gz", DATA / "compare" / "test.pt.trace.json.gz"
HTA_BASE = DATA / "hta" / "trace_compare_base_base.json.gz"
HTA_TEST = DATA / "hta" / "trace_compare_test_test.json.gz"
STEP = re.compile(r"^ProfilerStep#\d+$")


# -- counting from the Kineto JSON, independently of the package -------------------------

def kineto(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return list(json.load(f, parse_float=Decimal)["traceEvents"])


def ns(us: Any) -> int:
    return int(Decimal(us) * 1000)


def slices(events: list[dict[str, Any]], group: str) -> list[dict[str, Any]]:
    """X events of one group, by the documented rule: kernels by category, steps by name,
    ops = the rest except the profiler's own span (category "Trace")."""
    out = []
    for e in events:
        if e.get("ph") != "X":
            continue
        cat = str(e.get("cat", "")).lower()
        is_kernel = cat in DEVICE_CATEGORIES
        is_step = bool(STEP.match(e["name"]))
        kind = "kernels" if is_kernel else "steps" if is_step else None if cat == "trace" else "ops"
        if kind == group:
            out.append(e)
    return out


def count_total(events: list[dict[str, Any]], key: str = "name") -> dict[str, tuple[int, int]]:
    acc: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in events:
        acc[str(e[key])][0] += 1
        acc[str(e[key])][1] += ns(e["dur"])
    return {k: (v[0], v[1]) for k, v in acc.items()}


def self_times(events: list[dict[str, Any]], group: str) -> dict[str, int]:
    """Self time per name: dur minus the dur of direct children on the same (pid, tid),
    nesting by containment (a stack per thread)."""
    per_thread: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            per_thread[(e["pid"], e["tid"])].append(e)
    own: dict[int, int] = {}
    for evs in per_thread.values():
        evs.sort(key=lambda e: (ns(e["ts"]), -ns(e["dur"])))
        stack: list[dict[str, Any]] = []
        for e in evs:
            start, end = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
            while stack and ns(stack[-1]["ts"]) + ns(stack[-1]["dur"]) < end:
                stack.pop()
            if stack and ns(stack[-1]["ts"]) <= start:
                own[id(stack[-1])] -= ns(e["dur"])
            own[id(e)] = ns(e["dur"])
            stack.append(e)
    out: dict[str, int] = defaultdict(int)
    for e in slices(events, group):
        out[e["name"]] += own[id(e)]
    return dict(out)


def children(events: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """Direct children (by id() of the parent) of X events: containment per (pid, tid)."""
    per_thread: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            per_thread[(e["pid"], e["tid"])].append(e)
    kids: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for evs in per_thread.values():
        evs.sort(key=lambda e: (ns(e["ts"]), -ns(e["dur"])))
        stack: list[dict[str, Any]] = []
        for e in evs:
            end = ns(e["ts"]) + ns(e["dur"])
            while stack and ns(stack[-1]["ts"]) + ns(stack[-1]["dur"]) < end:
                stack.pop()
            if stack:
                kids[id(stack[-1])].append(e)
            stack.append(e)
    return kids


def span(e: dict[str, Any]) -> tuple[int, int]:
    return ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])


def x_count(path: Path, name: str) -> int:
    return sum(1 for e in kineto(path) if e.get("ph") == "X" and e["name"] == name)


@pytest.fixture(scope="module")
def torch_pair() -> profview.Comparison:
    return profview.compare(BASE, TEST)


@pytest.fixture(scope="module")
def hta_pair() -> profview.Comparison:
    return profview.compare(HTA_BASE, HTA_TEST)


# -- ops, kernels, steps -------------------------------------------------------------------

@pytest.mark.parametrize("pair", ["torch", "hta"])
@pytest.mark.parametrize("group", ["ops", "kernels"])
def test_counts_and_totals_are_the_files(pair: str, group: str, request: pytest.FixtureRequest) -> None:
    c = request.getfixturevalue(f"{pair}_pair")
    base, test = (BASE, TEST) if pair == "torch" else (HTA_BASE, HTA_TEST)
    a, b = count_total(slices(kineto(base), group)), count_total(slices(kineto(test), group))
    table = getattr(c, group)
    assert set(table.index) == set(a) | set(b)
    if pair == "hta":  # the HTA pair has kernels, copies and sets: the table cannot be empty
        assert len(table) == len(set(a) | set(b)) > 0
    for name, row in table.iterrows():
        assert (row["count_a"], row["total_a"]) == a.get(name, (0, 0)), name
        assert (row["count_b"], row["total_b"]) == b.get(name, (0, 0)), name
        expected = "added" if name not in a else "removed" if name not in b else None
        if expected:
            assert row["status"] == expected, name
        else:
            assert row["status"] in ("same", "changed"), name


@pytest.mark.parametrize("pair", ["torch", "hta"])
def test_self_times_and_delta(pair: str, request: pytest.FixtureRequest) -> None:
    c = request.getfixturevalue(f"{pair}_pair")
    base, test = (BASE, TEST) if pair == "torch" else (HTA_BASE, HTA_TEST)
    sa, sb = self_times(kineto(base), "ops"), self_times(kineto(test), "ops")
    for name, row in c.ops.iterrows():
        assert row["self_a"] == sa.get(name, 0) and row["self_b"] == sb.get(name, 0), name
        assert row["delta"] == sb.get(name, 0) - sa.get(name, 0)
        if sa.get(name, 0) > 0:
            assert row["ratio"] == pytest.approx(sb.get(name, 0) / sa[name])
        else:
            assert math.isnan(row["ratio"])
    # largest |delta| first
    deltas = np.abs(c.ops["delta"].to_numpy())
    assert (deltas[:-1] >= deltas[1:]).all()


def test_the_swapped_layer_is_what_changed(torch_pair: profview.Comparison) -> None:
    ops = torch_pair.ops
    a, b = count_total(slices(kineto(BASE), "ops")), count_total(slices(kineto(TEST), "ops"))
    only_b = {n for n in b if n not in a}
    only_a = {n for n in a if n not in b}
    assert {"aten::gelu", "aten::gelu_backward"} <= only_b  # the GELU run's own ops
    assert {"aten::relu", "aten::threshold_backward"} <= only_a
    assert set(ops.index[ops["status"] == "added"]) == only_b
    assert set(ops.index[ops["status"] == "removed"]) == only_a


def test_status_tolerance() -> None:
    strict = profview.compare(BASE, TEST, rtol=0, atol=0)
    both = strict.ops[strict.ops["status"].isin(["same", "changed"])]
    differs = (both["self_a"] != both["self_b"]) | (both["count_a"] != both["count_b"])
    assert ((both["status"] == "changed") == differs).all()
    loose = profview.compare(BASE, TEST, rtol=10.0)
    both = loose.ops[loose.ops["status"].isin(["same", "changed"])]
    assert (both["status"] == "same").all()  # counts are equal in both runs: same model, same steps
    itself = profview.compare(BASE, BASE)
    assert (itself.ops["status"] == "same").all() and (itself.ops["delta"] == 0).all()


@pytest.mark.parametrize("pair", ["torch", "hta"])
def test_steps_side_by_side(pair: str, request: pytest.FixtureRequest) -> None:
    c = request.getfixturevalue(f"{pair}_pair")
    base, test = (BASE, TEST) if pair == "torch" else (HTA_BASE, HTA_TEST)
    for side, path in (("a", base), ("b", test)):
        steps = sorted(slices(kineto(path), "steps"), key=lambda e: ns(e["ts"]))
        assert c.steps[f"name_{side}"].tolist() == [e["name"] for e in steps]
        assert c.steps[f"dur_{side}"].tolist() == [ns(e["dur"]) for e in steps]
        gaps = [ns(y["ts"]) - ns(x["ts"]) for x, y in zip(steps, steps[1:], strict=False)]
        assert np.diff(c.steps[f"start_{side}"].to_numpy(np.int64)).tolist() == gaps
    assert (c.steps["delta"] == c.steps["dur_b"] - c.steps["dur_a"]).all()


def test_step_alignment(torch_pair: profview.Comparison) -> None:
    c = torch_pair
    assert c.align == "step"
    ea, eb = c.a.events, c.b.events
    first_a = ea[ea["name"] == "ProfilerStep#1"]["start"].iat[0]
    first_b = eb[eb["name"] == "ProfilerStep#1"]["start"].iat[0]
    assert first_a + c.offset == first_b
    assert profview.compare(BASE, TEST, align="start").offset == 0
    assert profview.compare(BASE, TEST, align=1234.0).offset == 1234.0
    with pytest.raises(ProfviewError, match="align"):
        profview.compare(BASE, TEST, align="middle")


def test_ops_by_shape_counts_input_dims(torch_pair: profview.Comparison) -> None:
    table = torch_pair.ops_by_shape
    for side, path in (("a", BASE), ("b", TEST)):
        acc: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        for e in slices(kineto(path), "ops"):
            dims = e.get("args", {}).get("Input Dims")
            key = (e["name"], "" if dims is None else str(dims))
            acc[key][0] += 1
            acc[key][1] += ns(e["dur"])
        got = table[table[f"count_{side}"] > 0]
        assert len(got) == len(acc)
        for key, (count, total) in acc.items():
            assert (got.loc[key, f"count_{side}"], got.loc[key, f"total_{side}"]) == (count, total), key
    assert table.loc[("aten::gelu", "[[128, 384], []]"), "status"] == "added"


COMM_KERNEL = re.compile(r"^(?:nccl|rccl)|gloo:", re.IGNORECASE)


def kernel_group(e: dict[str, Any]) -> str:
    """The documented split, from a Kineto event: copies and sets are memory (by category or a
    Memcpy / Memset name), NCCL / RCCL / gloo kernels communication, other kernels computation."""
    cat = str(e["cat"]).lower().removeprefix("gpu_")
    if cat in ("memcpy", "memset") or e["name"].startswith(("Memcpy", "Memset")):
        return "memory"
    return "communication" if COMM_KERNEL.search(e["name"]) else "computation"


def group_counts(path: Path) -> dict[tuple[str, str], tuple[int, int]]:
    acc: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for e in slices(kineto(path), "kernels"):
        key = (kernel_group(e), str(e["cat"]))
        acc[key][0] += 1
        acc[key][1] += ns(e["dur"])
    return {k: (v[0], v[1]) for k, v in acc.items()}


NCCL = DATA / "hta" / "nccl_parser_config_nccl_data.json.gz"


@pytest.fixture(scope="module")
def nccl_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[profview.Comparison, Path]:
    """The HTA NCCL trace against a copy without every other NCCL kernel."""
    data = json.loads(gzip.decompress(NCCL.read_bytes()))
    seen = 0
    kept = []
    for e in data["traceEvents"]:
        if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel" and COMM_KERNEL.search(e["name"]):
            seen += 1
            if seen % 2 == 0:
                continue
        kept.append(e)
    data["traceEvents"] = kept
    fewer = tmp_path_factory.mktemp("nccl") / "fewer_nccl.json.gz"
    fewer.write_bytes(gzip.compress(json.dumps(data).encode()))
    return profview.compare(NCCL, fewer), fewer


@pytest.mark.parametrize("pair", ["hta", "nccl"])
def test_kernels_by_type(pair: str, request: pytest.FixtureRequest) -> None:
    if pair == "hta":
        c, paths = request.getfixturevalue("hta_pair"), (HTA_BASE, HTA_TEST)
    else:
        c, fewer = request.getfixturevalue("nccl_pair")
        paths = (NCCL, fewer)
    table = c.kernels_by_type
    assert table.index.names == ["group", "category"]
    for side, path in zip("ab", paths, strict=True):
        expected = group_counts(path)
        got = {k: (int(r[f"count_{side}"]), int(r[f"total_{side}"])) for k, r in table.iterrows()
               if r[f"count_{side}"] > 0}
        assert got == expected
    groups = {g for g, _ in table.index}
    if pair == "nccl":  # all three groups, and the NCCL kernels dropped from B are what changed
        assert groups == {"computation", "communication", "memory"}
        comm = table.xs("communication", level="group")
        a, b = group_counts(NCCL), group_counts(paths[1])
        assert comm.loc["kernel", "count_b"] == b[("communication", "kernel")][0] \
            < a[("communication", "kernel")][0] == comm.loc["kernel", "count_a"]
        assert comm.loc["kernel", "status"] == "changed"
        assert table.loc[("computation", "kernel"), "status"] == "same"


# -- verdict, phases, memory, chart ---------------------------------------------------------

def test_summary_verdict(torch_pair: profview.Comparison, hta_pair: profview.Comparison) -> None:
    mean = [np.mean([ns(e["dur"]) for e in slices(kineto(p), "steps")]) for p in (BASE, TEST)]
    pct = (mean[1] / mean[0] - 1) * 100
    text = torch_pair.summary()
    assert f"{abs(pct):.1f} % {'slower' if pct > 0 else 'faster'} per step" in text
    top = pd.concat([torch_pair.ops, torch_pair.kernels])
    top = top[np.sign(top["delta"]) == np.sign(top["delta"].sum())]
    assert str(top["delta"].abs().idxmax()) in text
    a, b = count_total(slices(kineto(BASE), "ops")), count_total(slices(kineto(TEST), "ops"))
    assert f"{len(set(b) - set(a))} ops new in B" in text
    assert f"{len(set(a) - set(b))} ops gone from B" in text
    ha, hb = count_total(slices(kineto(HTA_BASE), "ops")), count_total(slices(kineto(HTA_TEST), "ops"))
    assert f"{len(set(hb) - set(ha))} ops new in B" in hta_pair.summary()


def phases_from_file(path: Path) -> dict[str, int]:
    """Phase times of a single-threaded PyTorch CPU trace, recounted from the JSON with
    PyTorch's own conventions (not the package's rules): busy = union of all X slices per
    process (pid); optimizer = union of the ``Optimizer.*`` annotations; backward = union of
    the autograd engine's ``autograd::engine::evaluate_function`` ops; forward = union of the
    direct children of each ``ProfilerStep#N`` that start before its first backward op (other
    than the optimizer's); other = the rest of busy (one thread per process here, so the
    phases partition busy); no communication in a single-process run."""
    events = kineto(path)
    xs = [e for e in events if e.get("ph") == "X"]
    assert len({(e["pid"], e["tid"]) for e in xs}) == len({e["pid"] for e in xs})  # one thread each

    def per_process(pick: Any) -> int:
        by_pid: dict[Any, list[tuple[int, int]]] = defaultdict(list)
        for e in xs:
            if pick(e):
                by_pid[e["pid"]].append(span(e))
        return sum(union_ns(v) for v in by_pid.values())

    kids = children(events)
    forward: list[tuple[int, int]] = []
    for step in (e for e in xs if STEP.match(e["name"])):
        mine = kids[id(step)]
        first_bwd = min((ns(k["ts"]) for k in mine if k["name"].startswith("autograd::engine")), default=None)
        forward += [span(k) for k in mine if not k["name"].startswith(("Optimizer.", "autograd::engine"))
                    and (first_bwd is None or ns(k["ts"]) < first_bwd)]
    out = {"busy": per_process(lambda e: True),
           "optimizer": per_process(lambda e: e["name"].startswith("Optimizer.")),
           "backward": per_process(lambda e: e["name"].startswith("autograd::engine::evaluate_function")),
           "forward": union_ns(forward), "communication": 0}
    out["other"] = out["busy"] - out["forward"] - out["backward"] - out["optimizer"]
    return out


def test_phases_side_by_side(torch_pair: profview.Comparison) -> None:
    table = torch_pair.phases
    for side, path in (("a", BASE), ("b", TEST)):
        expected = phases_from_file(path)
        assert {k: int(table.loc[k, side]) for k in expected} == expected
        assert all(v > 0 for k, v in expected.items() if k != "communication")
    assert (table["delta"] == table["b"] - table["a"]).all()
    assert table.loc["backward", "delta"] > 0  # GELU's backward is the slow part of the swap


@pytest.mark.parametrize("path", [BASE, HTA_BASE, DATA / "hta" / "nccl_parser_config_nccl_data.json.gz",
                                  "tf_step_stats", "megengine_json", "xspace_jax"])
def test_phases_are_profview_phases_summed(path: Any) -> None:
    """Consistency: ``.phases`` (one vectorised pass) gives the column sums of
    ``profview.phases``; that one is checked against brute force in test_analysis.py."""
    trace = profview.load(profview.example(path) if isinstance(path, str) else path)
    table = profview.compare(trace, trace).phases
    per_device = profview.phases(trace)
    for phase in ("forward", "backward", "optimizer", "communication", "other", "busy"):
        assert table.loc[phase, "a"] == per_device[phase].sum(), phase


def test_memory_peak_and_sizes(torch_pair: profview.Comparison) -> None:
    mem = torch_pair.memory
    for side, path in (("a", BASE), ("b", TEST)):
        records = [e["args"] for e in kineto(path) if e.get("name") == "[memory]"]
        assert mem.peak.loc["cpu", f"peak_{side}"] == max(int(r["Total Allocated"]) for r in records)
        sizes = [int(r["Bytes"]) for r in records if int(r["Bytes"]) > 0]
        bins: dict[int, int] = defaultdict(int)
        for s in sizes:
            bins[1 << (s - 1).bit_length()] += 1
        got = mem.sizes[f"count_{side}"]
        assert {int(k): int(v) for k, v in got[got > 0].items()} == dict(bins)
        assert mem.sizes[f"bytes_{side}"].sum() == sum(sizes)


def test_chart_waterfall_adds_up(torch_pair: profview.Comparison) -> None:
    from jupyter_profview import charts

    chart = torch_pair.chart(n=5)
    data = chart.data
    both = pd.concat([torch_pair.ops, torch_pair.kernels])
    assert data["end"].iat[0] == pytest.approx(both["self_a"].sum() / 1e6)
    assert data["end"].iat[-1] == pytest.approx(both["self_b"].sum() / 1e6)
    assert data["end"].iat[-2] == pytest.approx(both["self_b"].sum() / 1e6)  # the steps land on B
    assert len(data) == 1 + 5 + 1 + 1  # A, five deltas, the rest, B
    svg = charts.to_svg(chart)
    assert "<svg" in svg.data and "aten::gelu_backward" in svg.data


# -- other formats, rank sets, errors -----------------------------------------------------

def _stretch_tf_node(text: str, node: str, extra_us: int) -> str:
    block = re.compile(r'(node_name: "' + re.escape(node)
                       + r'"\n(?:(?!node_stats \{).)*?op_end_rel_micros: )(\d+)', re.S)
    out, n = block.subn(lambda m: m.group(1) + str(int(m.group(2)) + extra_us), text, count=1)
    assert n == 1
    return out


def _tf_durations(text: str) -> dict[str, tuple[int, int]]:
    acc: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for block in text.split("node_stats {")[1:]:
        name = re.search(r'node_name: "([^"]*)"', block).group(1)  # type: ignore[union-attr]
        start = re.search(r"op_start_rel_micros: (\d+)", block.split("memory")[0])
        end = re.search(r"op_end_rel_micros: (\d+)", block.split("memory")[0])
        acc[name][0] += 1
        acc[name][1] += ((int(end.group(1)) if end else 0) - (int(start.group(1)) if start else 0)) * 1000
    return {k: (v[0], v[1]) for k, v in acc.items()}


def test_two_tf_step_stats_runs(tmp_path: Path) -> None:
    seed = profview.example("tf_step_stats")
    text = seed.read_text(encoding="utf-8")
    # the last node of the GPU's thread: stretched, it runs alone, so all 5 ms are its self time
    # (stretched over later nodes, those would own the time they run: nesting.py)
    node = "main_fetch_group/_40"
    assert text.count(f'node_name: "{node}"') == 1
    slower = tmp_path / "slower.pbtxt"
    slower.write_text(_stretch_tf_node(text, node, 5000), encoding="utf-8")
    c = profview.compare(seed, slower)
    a, b = _tf_durations(text), _tf_durations(slower.read_text(encoding="utf-8"))
    for name, row in c.ops.iterrows():
        assert (row["count_a"], row["total_a"]) == a[name] and (row["count_b"], row["total_b"]) == b[name]
    assert c.ops.index[0] == node and c.ops["delta_total"].iat[0] == 5_000_000
    assert c.ops.loc[node, "status"] == "changed"
    # other rows change only through nesting on the stream (their own durations did not move)
    others = c.ops.drop(index=node)
    assert (others["delta_total"] == 0).all() and (others["status"] != "same").sum() <= 2
    assert list(c.steps["name_a"]) == ["iteration"] and c.steps["delta"].iat[0] >= 0
    assert "iteration" in c.summary() and node in c.summary()


def _megengine_ops(data: dict[str, Any]) -> dict[str, tuple[int, int]]:
    names = {oid: op["name"] for oid, op in data["graph_exec"]["operator"].items()}
    acc: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for side in ("host", "device"):
        for oid, lanes in data["profiler"][side].items():
            for r in lanes.values():
                acc[names[oid]][0] += 1
                acc[names[oid]][1] += round(r["end"] * 1e9) - round(r["start"] * 1e9)
    return {k: (v[0], v[1]) for k, v in acc.items()}


def test_two_megengine_runs(tmp_path: Path) -> None:
    seed = profview.example("megengine_json")
    data = json.loads(seed.read_text(encoding="utf-8"))
    oid = data["graph_exec"]["comp_seq"][10]
    timing = data["profiler"]["device"][oid]["gpu0:0"]
    timing["end"] = timing["start"] + 3 * (timing["end"] - timing["start"])
    slower = tmp_path / "megengine_slower.json"
    slower.write_text(json.dumps(data), encoding="utf-8")
    c = profview.compare(seed, slower)
    a = _megengine_ops(json.loads(seed.read_text(encoding="utf-8")))
    b = _megengine_ops(data)
    for name, row in c.ops.iterrows():
        assert (row["count_a"], row["total_a"]) == a[name] and (row["count_b"], row["total_b"]) == b[name]
    name = data["graph_exec"]["operator"][oid]["name"]
    assert c.ops.index[0] == name and c.ops.loc[name, "status"] == "changed"
    # MegEngine records input shapes in its own column: keyed by (name, shapes) too
    assert name in c.ops_by_shape.index.get_level_values(0)


def test_no_common_names_is_an_error() -> None:
    with pytest.raises(ProfviewError) as err:
        profview.compare(profview.example("tf_step_stats"), profview.example("megengine_json"))
    text = str(err.value)
    assert "no op or kernel names in common" in text
    assert "002_6b18107121892edf.txt" in text and "004_825e28a4f520ddc2.txt" in text


def test_mismatched_time_units_and_bad_inputs() -> None:
    with pytest.raises(ProfviewError, match="time unit"):
        profview.compare(profview.example("tf_node_order"), profview.example("tf_step_stats"))
    with pytest.raises(ProfviewError, match="cannot compare"):
        profview.compare(BASE, 42)
    with pytest.raises(ProfviewError, match="no events column"):
        profview.compare(BASE, TEST, by="nope")
    tf = profview.example("tf_step_stats")
    with pytest.raises(ProfviewError, match="no input shapes"):
        _ = profview.compare(tf, tf).ops_by_shape


def test_rank_sets_overall_and_per_rank(torch_pair: profview.Comparison) -> None:
    """Anything with an ``events`` table carrying a ``rank`` column compares as a rank set."""
    ta, tb = torch_pair.a, torch_pair.b
    def rank_set(rank0: Any, rank1: Any, source: str) -> SimpleNamespace:
        events = pd.concat([rank0.events.assign(rank=0), rank1.events.assign(rank=1)], ignore_index=True)
        return SimpleNamespace(time_unit="ns", events=events, metadata={"source": source})

    set_a, set_b = rank_set(ta, ta, "runA"), rank_set(tb, ta, "runB")
    c = profview.compare(set_a, set_b)
    single = torch_pair.ops
    for name, row in c.ops.iterrows():
        assert row["count_a"] == 2 * single.loc[name, "count_a"]
        assert row["self_b"] == single.loc[name, "self_b"] + single.loc[name, "self_a"]
    by_rank = c.ops_by_rank
    rank1 = by_rank.xs("1", level="rank")
    assert (rank1.loc[rank1["count_a"] > 0, "status"] == "same").all()  # rank 1 is the same run twice
    assert set(by_rank.xs("0", level="rank").index) == set(single.index)
    assert list(c.steps.index.get_level_values("rank").unique()) == [0, 1]
    rank0 = c.steps.xs(0, level="rank")
    assert rank0["dur_b"].tolist() == torch_pair.steps["dur_b"].tolist()
    assert c.phases.loc["busy", "a"] == 2 * torch_pair.phases.loc["busy", "a"]
    with pytest.raises(ProfviewError, match="rank"):
        _ = torch_pair.ops_by_rank


# -- the side-by-side view (kernel side; the browser test drives the real front end) ----------

def _highlighted(widget: Any) -> list[int]:
    from jupyter_profview.widget.codec import decode_frame

    return sorted(decode_frame(widget._highlight).columns["id"].tolist())


def test_show_syncs_zoom_through_the_offset(torch_pair: profview.Comparison) -> None:
    view = profview.show(torch_pair)
    a, b, off = view.a, view.b, torch_pair.offset
    assert off != 0
    # the initial window: the time both runs have, in each one's own clock
    za, zb = a._zoom_request, b._zoom_request
    assert zb["start"] == pytest.approx(za["start"] + off) and zb["end"] == pytest.approx(za["end"] + off)
    # the user zooms A (the front end reports its view): B is asked for the mapped window
    a._view = {"start": 1_000_000.0, "end": 2_000_000.0}
    assert (b._zoom_request["start"], b._zoom_request["end"]) == (1_000_000.0 + off, 2_000_000.0 + off)
    # B's front end answers: that echo is not sent back to A
    token = a._zoom_request["token"]
    b._view = {"start": 1_000_000.0 + off, "end": 2_000_000.0 + off}
    assert a._zoom_request["token"] == token
    # the user then pans B: A follows, mapped back
    b._view = {"start": 3_000_000.0 + off, "end": 4_000_000.0 + off}
    assert (a._zoom_request["start"], a._zoom_request["end"]) == (3_000_000.0, 4_000_000.0)
    assert a._zoom_request["token"] != token


def test_show_row_highlights_the_op_in_both(torch_pair: profview.Comparison) -> None:
    view = profview.show(torch_pair)
    keys = [value for _, value in view.table.options if value is not None]
    assert len(keys) == len(torch_pair.ops) + len(torch_pair.kernels)
    assert keys[0] == ("name", str(torch_pair.ops.index[0]))  # largest |delta| first
    view.table.value = ("name", "aten::mm")
    for w, trace, path in ((view.a, torch_pair.a, BASE), (view.b, torch_pair.b, TEST)):
        ev = trace.events
        assert _highlighted(w) == sorted(ev.index[ev["name"] == "aten::mm"].tolist())
        assert len(_highlighted(w)) == x_count(path, "aten::mm") > 0
    view.table.value = ("name", "aten::gelu")  # only in B
    assert x_count(BASE, "aten::gelu") == 0
    assert _highlighted(view.a) == [] and len(_highlighted(view.b)) == x_count(TEST, "aten::gelu") > 0
    view.table.value = None
    assert _highlighted(view.a) == [] and _highlighted(view.b) == []


def _state_bytes(widget: Any) -> int:
    return sum(len(v) for v in widget.get_state().values() if isinstance(v, (bytes, memoryview)))


def test_show_keeps_one_widgets_display_budget(tmp_path: Path) -> None:
    import io
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    try:
        import make_pytorch_trace
    finally:
        sys.path.pop(0)
    traces = []
    for seed in (1, 2):
        buf = io.StringIO()
        make_pytorch_trace.generate(buf, 60_000, seed=seed)
        traces.append(profview.load(buf.getvalue().encode()))
    c = profview.compare(*traces)
    natural = profview.show(c)
    sizes = [_state_bytes(natural.a), _state_bytes(natural.b)]
    assert sum(sizes) <= 4 * 2**20
    budget = int(sum(sizes) * 0.6)  # less than the two would take: both overviews are narrowed
    tight = profview.show(c, budget=budget)
    assert _state_bytes(tight.a) + _state_bytes(tight.b) <= budget
    assert len(tight.a._overview) < len(natural.a._overview)


def test_two_trace_sets_per_rank_and_overall(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from jupyter_profview.ranks import load_many

    files = sorted((DATA / "ddp").glob("rank-*.pt.trace.json.gz"))
    assert len(files) == 4
    whole = load_many(files, cache=tmp_path / "a", progress=False)
    with pytest.warns(UserWarning, match="2 of 4 ranks have no file"):
        half = load_many(files[:2], cache=tmp_path / "b", progress=False)  # ranks 0, 1 of the same run
    c = profview.compare(whole, half)
    a = [count_total(slices(kineto(f), "ops")) for f in files]
    for name, row in c.ops.iterrows():
        assert row["count_a"] == sum(per.get(name, (0, 0))[0] for per in a), name
        assert row["total_b"] == sum(per.get(name, (0, 0))[1] for per in a[:2]), name
    by_rank = c.ops_by_rank
    assert set(by_rank.xs("2", level="rank")["status"]) == {"removed"}
    assert set(by_rank.xs("0", level="rank")["status"]) == {"same"}
    steps = c.steps
    assert sorted(steps.index.get_level_values("rank").unique()) == [0, 1, 2, 3]
    rank2 = sorted(slices(kineto(files[2]), "steps"), key=lambda e: ns(e["ts"]))
    assert steps.xs(2, level="rank")["dur_a"].tolist() == [ns(e["dur"]) for e in rank2]
    assert steps.xs(2, level="rank")["dur_b"].isna().all()
    # phases summed over ranks = each rank's own phases, loaded alone
    busy = sum(int(profview.phases(profview.load(f))["busy"].sum()) for f in files)
    assert c.phases.loc["busy", "a"] == busy
    with pytest.raises(ProfviewError, match="single traces"):
        profview.show(c)


# -- the verdict's numbers: the shared rule of the front end -------------------------------------

def chrome_run(steps: list[int], ops: list[tuple[str, int]]) -> bytes:
    """A PyTorch-like Chrome trace: ``ProfilerStep#N`` back to back on one thread, the ops
    back to back on another (no nesting: self = dur); durations in ns."""
    events, t = [], 0
    for i, dur in enumerate(steps, start=1):
        events.append({"ph": "X", "pid": 1, "tid": 1, "name": f"ProfilerStep#{i}", "cat": "user_annotation",
                       "ts": t / 1000, "dur": dur / 1000})
        t += dur
    t = 0
    for name, dur in ops:
        events.append({"ph": "X", "pid": 1, "tid": 2, "name": name, "cat": "cpu_op", "ts": t / 1000,
                       "dur": dur / 1000})
        t += dur
    return json.dumps({"traceEvents": events}).encode()


VERDICTS = [
    pytest.param([400_400] * 2, [("aten::mm", 1000)], [1_001_000] * 2, [("aten::mm", 3000)],
                 "B is 150.0 % slower per step (400.4 µs -> 1.001 ms, 2 vs 2 steps); "
                 "100% of the added busy time (2 µs) is aten::mm, +2 µs.", id="slower"),
    pytest.param([1_000_000], [("aten::mm", 5000)], [999_999], [("aten::mm", 4000), ("aten::gelu", 600)],
                 "B is the same time per step (1 ms -> 1 ms); the largest change is aten::mm, -1 µs "
                 "(busy time -400 ns net); 1 ops new in B.", id="999999ns-is-1ms"),
    pytest.param([], [("aten::mm", 400_400), ("aten::relu", 1000)], [], [("aten::mm", 400_000)],
                 "B is 0.3 % faster per iteration (401.4 µs -> 400 µs); 71% of the saved busy time "
                 "(1.4 µs) is aten::relu, -1 µs; 1 ops gone from B.", id="no-steps"),
]


@pytest.mark.parametrize(("steps_a", "ops_a", "steps_b", "ops_b", "text"), VERDICTS)
def test_verdict_text(steps_a: list[int], ops_a: list[tuple[str, int]], steps_b: list[int],
                      ops_b: list[tuple[str, int]], text: str) -> None:
    c = profview.compare(chrome_run(steps_a, ops_a), chrome_run(steps_b, ops_b))
    assert c.summary() == text


@pytest.mark.parametrize(("value", "unit", "text"), [
    (999_999, "ns", "1 ms"), (400_400, "ns", "400.4 µs"), (1_001_000, "ns", "1.001 ms"),
    (-2500, "ns", "-2.5 µs"), (12, "ns", "12 ns"), (float("nan"), "ns", "–"), (17, "step", "17 steps"),
    (1, "step", "1 step")])
def test_verdict_durations_use_the_shared_rule(value: float, unit: str, text: str) -> None:
    from jupyter_profview.analysis.compare_view import time_text

    assert time_text(value, unit) == text


# -- Input Dims without a parse per event ---------------------------------------------------------

def shapes_of(trace: profview.Trace) -> list[str]:
    """What ``Comparison.ops_by_shape`` shows of each event's ``Input Dims``."""
    from jupyter_profview.analysis.compare import _shapes

    out = _shapes(trace, trace.events)
    return [""] * len(trace.events) if out is None else list(out)


def test_input_dims_from_the_args_blob(decoder: str) -> None:
    """``Comparison.ops_by_shape`` reads ``args["Input Dims"]`` of Chrome traces as the decoders
    took it out while reading; every case here must give ``str`` of what the JSON holds at the
    top level."""
    cases = [  # (args, expected text)
        ({"Input Dims": [[2, 3], []]}, "[[2, 3], []]"),
        ({"External id": 4, "Input Dims": [[[1, 2], [3]], [4]]}, "[[[1, 2], [3]], [4]]"),
        ({"Input Dims": [[[[1]]]]}, "[[[[1]]]]"),  # deeper than the search reads: parsed
        ({"Input Dims": ["a", [1]]}, "['a', [1]]"),  # strings: parsed
        ({"Input Dims": None}, ""),
        ({"note": 'text with "Input Dims": [9] in it'}, ""),
        ({"nested": {"Input Dims": [[5]]}}, ""),
        ({"nested": {"Input Dims": [[5]]}, "Input Dims": [[6]]}, "[[6]]"),
        ({}, ""),
    ]
    events = [{"ph": "X", "pid": 1, "tid": 1, "name": f"op{i}", "cat": "cpu_op", "ts": 10 * i, "dur": 5,
               "args": args} for i, (args, _) in enumerate(cases)]
    text = json.dumps({"traceEvents": events}, indent=1)  # whitespace inside the args, too
    # a B/E pair: the end record's Input Dims wins, as in trace.args
    text = text[:-3] + (',{"ph": "B", "pid": 1, "tid": 2, "name": "be", "ts": 500, '
                        '"args": {"Input Dims": [[7]]}},'
                        '{"ph": "E", "pid": 1, "tid": 2, "ts": 600, "args": {"Input Dims": [[8, 9]]}}]}')
    trace = profview.load(text.encode())
    ev = trace.events
    got = dict(zip(ev["name"].astype(str), shapes_of(trace), strict=True))
    for i, (_, expected) in enumerate(cases):
        assert got[f"op{i}"] == expected, cases[i]
    assert got["be"] == "[[8, 9]]"


@pytest.mark.parametrize("source", ["bytes", "file"])
def test_input_dims_of_a_begin_whose_end_has_no_args(source: str, tmp_path: Path) -> None:
    """An ``E`` record without args adds nothing to its ``B``'s: the search reads only the
    ``B``'s args (it once read at offset -1: an OSError from a file, the wrong bytes from memory)."""
    events = [{"ph": "B", "pid": 1, "tid": 1, "name": "be", "ts": 5, "args": {"Input Dims": [[7, 2]]}},
              {"ph": "X", "pid": 1, "tid": 1, "name": "x", "ts": 6, "dur": 1, "args": {"Input Dims": [[3]]}},
              {"ph": "E", "pid": 1, "tid": 1, "ts": 9}]
    text = json.dumps({"traceEvents": events}).encode()
    path = tmp_path / "be.json"
    path.write_bytes(text)
    trace = profview.load(text if source == "bytes" else path)
    names = trace.events["name"].astype(str).tolist()
    got = dict(zip(names, shapes_of(trace), strict=True))
    assert got == {e["name"]: str(e["args"]["Input Dims"]) for e in events if "name" in e}
    shapes = profview.compare(trace, trace).ops_by_shape
    assert sorted(shapes.index.get_level_values("shapes")) == ["[[3]]", "[[7, 2]]"]


# -- layering: formats -> model -> analysis -> front ends ------------------------------------------

def test_comparing_and_the_verdict_load_no_widget_code() -> None:
    import subprocess
    import sys

    code = ("import sys, jupyter_profview as pv\n"
            "c = pv.compare(pv.example('compare_base'), pv.example('compare_test'))\n"
            "c.summary(); c.memory; c.phases; c.kernels_by_type; c.ops_by_shape\n"
            "print(sorted(m for m in sys.modules if m.startswith(('jupyter_profview.widget', 'ipywidgets',"
            " 'anywidget'))))\n")  # not c.chart(): importing altair imports anywidget
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
