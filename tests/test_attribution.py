"""``analysis.attribute``: the call tree of one node kind with the GPU time under each node.

Every expectation is computed here from the raw JSON with a plain walk, not with the code under
test: for each node its enclosing nodes of the same kind on its (pid, tid) by containment, for
each kernel its launch call (same correlation, cuda_runtime / cuda_driver) and the nodes that
contain the call's start; durations from the file's decimal text in ns.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

import jupyter_profview as profview
from jupyter_profview.analysis import attribute
from jupyter_profview.errors import ProfviewError
from tests.format_helpers import ns, read_json

DATA = Path(__file__).parent / "data"
HTA = DATA / "hta"
GPU_FILES = ["nccl_parser_config_nccl_data.json.gz", "trace_filter_sampled_rank-0.json.gz",
             "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
             "distributed_info_unavailable_distributed_info_not_found.json.gz"]
DEVICE = {"kernel", "gpu_memcpy", "gpu_memset"}
RUNTIME = {"cuda_runtime", "cuda_driver"}


def is_node(e: dict[str, Any], by: str, gpu_pids: set[Any]) -> bool:
    if e.get("ph") != "X" or e.get("pid") in gpu_pids:
        return False
    cat, name = e.get("cat"), str(e.get("name"))
    return {"annotation": cat == "user_annotation", "op": cat == "cpu_op",
            "stack": cat == "python_function",
            "module": cat == "python_function" and name.startswith("nn.Module: ")}[by]


def walk(path: Path, by: str) -> tuple[Counter[str], Counter[str], Counter[str], int]:
    """(instances per path, kernel ns directly under each path, kernels per path, total kernel ns)."""
    events = [e for e in read_json(path)["traceEvents"] if isinstance(e, dict)]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") in DEVICE]
    gpu_pids = {e["pid"] for e in kernels}
    nodes: dict[tuple[Any, Any], list[tuple[int, int, str]]] = defaultdict(list)
    for e in events:
        if is_node(e, by, gpu_pids):
            nodes[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), str(e["name"])))
    for lst in nodes.values():
        lst.sort(key=lambda n: (n[0], -(n[1] - n[0])))

    def chain(key: tuple[Any, Any], t: int, inclusive_end: bool, until: int | None = None) -> list[str]:
        """Names of the nodes whose interval holds time t (outermost first)."""
        out = []
        for i, (s, e, name) in enumerate(nodes.get(key, [])):
            if until is not None and i == until:
                break
            if s <= t < e or (inclusive_end and s <= t <= e):
                out.append(name)
        return out

    count: Counter[str] = Counter()
    for lst in nodes.values():
        for i, (s, _, name) in enumerate(lst):
            # the enclosing nodes: those before it in start order still open at its start
            outer = [n for n in lst[:i] if n[0] <= s < n[1]]
            count[" / ".join([o[2] for o in outer] + [name])] += 1
    calls = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in RUNTIME and "correlation" in e.get("args", {}):
            calls.setdefault(e["args"]["correlation"], e)
    gpu: Counter[str] = Counter()
    nk: Counter[str] = Counter()
    total = 0
    for k in kernels:
        d = ns(k["dur"])
        total += d
        call = calls.get(k.get("args", {}).get("correlation"))
        names = chain((call["pid"], call["tid"]), ns(call["ts"]), False) if call else []
        where = " / ".join(names) if names else "(unattributed)"
        gpu[where] += d
        nk[where] += 1
    return count, gpu, nk, total


@pytest.mark.parametrize("by", ["annotation", "op"])
@pytest.mark.parametrize("name", GPU_FILES)
def test_tree_matches_the_independent_walk_on_real_gpu_traces(name: str, by: str) -> None:
    count, gpu, nk, total = walk(HTA / name, by)
    a = attribute(profview.load(HTA / name), by)
    rows = a.set_index("path")
    assert dict(rows.loc[rows["name"] != "(unattributed)", "count"]) == dict(count)
    got = {p: v for p, v in rows["gpu_self"].items() if v}
    assert got == {p: v for p, v in gpu.items() if v}
    assert {p: v for p, v in rows["kernels_self"].items() if v} == dict(nk)
    # the roots add up to the trace's device time; each row's total is itself plus its children
    assert int(a.loc[a["parent"] == -1, "gpu_total"].sum()) == total
    children = a[a["parent"] >= 0].groupby("parent")["gpu_total"].sum()
    for node, row in a.set_index("node").iterrows():
        assert row["gpu_total"] == row["gpu_self"] + int(children.get(node, 0))
        if row["parent"] >= 0:
            assert row["depth"] == a.set_index("node").loc[row["parent"], "depth"] + 1


@pytest.mark.parametrize("name", ["torch_overlap.json.gz", "torch_modules.json.gz"])
def test_module_stack_and_op_trees_on_real_torch_cpu_traces(name: str) -> None:
    # torch 2.13 on CPU: torch_overlap (record_function + with_stack) and torch_modules (made by
    # tests/data/make_torch_modules.py: with_modules + with_stack + record_shapes, modules nested
    # four deep); nn.Module frames, Python frames and ops, no GPU
    path = DATA / name
    trace = profview.load(path)
    for by in ("module", "stack", "op", "annotation"):
        count, _, _, total = walk(path, by)
        a = attribute(trace, by)
        assert total == 0 and (a["gpu_total"] == 0).all() and (a["kernels"] == 0).all()
        assert dict(a.set_index("path")["count"]) == dict(count)
        assert (a["cpu_self"] >= 0).all() and (a["cpu_self"] <= a["cpu_total"]).all()
    modules = attribute(trace, "module")
    deepest = 3 if name == "torch_modules.json.gz" else 1  # Net / Sequential / Block / Linear
    assert max(p.count(" / ") for p in modules["path"]) == deepest


def test_cpu_times_are_the_instances_durations() -> None:
    path = DATA / "torch_overlap.json.gz"
    events = [e for e in read_json(path)["traceEvents"]
              if e.get("cat") == "user_annotation" and e.get("ph") == "X"]
    a = attribute(profview.load(path), "annotation")
    by_name: Counter[str] = Counter()
    for e in events:
        by_name[str(e["name"])] += ns(e["dur"])
    got: Counter[str] = Counter()
    for name, t in zip(a["name"], a["cpu_total"], strict=True):
        got[name] += int(t)
    assert got == by_name


def test_backward_kernels_go_to_the_forward_ops_nodes() -> None:
    # the A100 + NCCL DDP run: backward kernels are launched from pt_autograd_0 under
    # "autograd::engine::evaluate_function: XBackward" ops whose Sequence number names the
    # forward op; counted here from the JSON.
    path = HTA / "nccl_parser_config_nccl_data.json.gz"
    trace = profview.load(path)
    plain = attribute(trace, "annotation")
    moved = attribute(trace, "annotation", backward="forward")
    assert int(moved.loc[moved["parent"] == -1, "gpu_total"].sum()) == int(trace.launches["kernel_dur"].sum())
    events = [e for e in read_json(path)["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    fwd_seq = {e["args"]["Sequence number"] for e in ops
               if "Sequence number" in e["args"] and not e["args"].get("Fwd thread id")}
    bwd = [e for e in ops if e["args"].get("Fwd thread id") and e["args"].get("Sequence number") in fwd_seq]
    calls = {e["args"]["correlation"]: e for e in events
             if e.get("cat") in RUNTIME and "correlation" in e["args"]}
    linked = 0
    for k in (e for e in events if e.get("cat") in DEVICE):
        c = calls.get(k["args"].get("correlation"))
        if c and any(b["pid"] == c["pid"] and b["tid"] == c["tid"]
                     and ns(b["ts"]) <= ns(c["ts"]) < ns(b["ts"]) + ns(b["dur"]) for b in bwd):
            linked += 1
    un_plain = int(plain.loc[plain["name"] == "(unattributed)", "kernels"].sum())
    un_moved = int(moved.loc[moved["name"] == "(unattributed)", "kernels"].sum())
    # every kernel under a linked backward op leaves (unattributed) (it was there: the autograd
    # thread has no annotation) unless its forward op lies under no annotation either
    back = moved[moved["name"] == "[backward]"]
    assert linked > 1000 and int(back["kernels_self"].sum()) == linked
    assert un_plain - un_moved == linked - int(back.loc[back["parent"] == -1, "kernels_self"].sum())
    # each step's backward kernels land under the step's DDP forward (where their forward ops ran)
    top = back.sort_values("gpu_self", ascending=False).head(3)
    ddp = "## forward ## / DistributedDataParallel.forward / [backward]"
    assert sorted(top["path"]) == [f"ProfilerStep#{s} / {ddp}" for s in (4, 5, 6)]


def test_errors_and_traceset() -> None:
    trace = profview.load(HTA / "trace_filter_sampled_rank-0.json.gz")
    with pytest.raises(ProfviewError, match="not a node kind"):
        attribute(trace, "modules")
    with pytest.raises(ProfviewError, match="backward"):
        attribute(trace, backward="autograd")
    windowed = attribute(trace, "annotation", window=(0, 0))
    assert len(windowed) == 0 or int(windowed["gpu_total"].sum()) == 0
    pytest.importorskip("duckdb")
    with pytest.warns(UserWarning):
        ts = profview.load_many([HTA / "trace_filter_sampled_rank-0.json.gz",
                                 HTA / "trace_filter_sampled_rank-1.json.gz"], progress=False, cache=False)
    both = attribute(ts, "annotation")
    assert set(both["rank"]) == {0, 1}
    one = attribute(ts, "annotation", rank=0).drop(columns="rank")
    assert one.equals(attribute(trace, "annotation"))
