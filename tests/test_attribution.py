"""``analysis.attribute``: the call tree of one node kind with the GPU time under each node.

Every expectation is computed here from the raw JSON with a plain walk, not with the code under
test: for each node its enclosing nodes of the same kind on its (pid, tid) by containment, for
each kernel its launch call (same correlation, cuda_runtime / cuda_driver) and the nodes that
contain the call; durations from the file's decimal text in ns.  A hand-written trace
(`data/attr_outlasting_annotation.json`) has an annotation that outlasts its parent, with
expected values worked out by hand.
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

    def chain(key: tuple[Any, Any], t0: int, t1: int) -> list[str]:
        """Names of the nodes that contain [t0, t1) (outermost first)."""
        return [name for s, e, name in nodes.get(key, []) if s <= t0 < e and t1 <= e]

    count: Counter[str] = Counter()
    for lst in nodes.values():
        for i, (s, e, name) in enumerate(lst):
            # the enclosing nodes: those before it in start order that contain it
            outer = [n for n in lst[:i] if n[0] <= s < n[1] and e <= n[1]]
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
        names = chain((call["pid"], call["tid"]), ns(call["ts"]), ns(call["ts"]) + ns(call["dur"])) \
            if call else []
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


def test_annotation_that_outlasts_its_parent_nests_as_in_the_events_table() -> None:
    """The MTIA shape, by hand (`data/attr_outlasting_annotation.json`, µs): a step [0, 1000), an
    annotation A `start_sparse_data_dist` [100, 300) in it, an annotation B `hccl:all_to_all`
    [200, 800) that starts inside A and ends 500 after it; kernels (11, 13, 17, 19, 23 µs)
    launched from calls at 150 (in A), 250 (in A and B), 400 (in B after A ended), 900 (in the
    step only) and 1100 (in nothing).

    B is not inside A: its parent is the step, as in `trace.events`.  A launch inside both A and
    B goes to B, the innermost node containing the call (B started later; the events table makes
    B the call's parent).  Self time among the annotations, each instant to the one running:
    step [0, 100) + [800, 1000) = 300, A [100, 200) = 100, B [200, 800) = 600."""
    trace = profview.load(DATA / "attr_outlasting_annotation.json")
    a = attribute(trace, "annotation").set_index("path")
    step = "ProfilerStep#0"
    a_path, b_path = f"{step} / start_sparse_data_dist", f"{step} / hccl:all_to_all"
    assert list(a.index) == [step, a_path, b_path, "(unattributed)"]
    assert a["depth"].tolist() == [0, 1, 1, 0]
    us = 1000
    assert a["cpu_total"].tolist() == [1000 * us, 200 * us, 600 * us, 0]
    assert a["cpu_self"].tolist() == [300 * us, 100 * us, 600 * us, 0]
    assert a["gpu_self"].tolist() == [19 * us, 11 * us, (13 + 17) * us, 23 * us]
    assert a["gpu_total"].tolist() == [(19 + 11 + 13 + 17) * us, 11 * us, 30 * us, 23 * us]
    assert a["kernels"].tolist() == [4, 1, 2, 1]
    # the same parents and depths as the events table, whose nesting mixes kinds
    ev = trace.events
    for name, path in (("start_sparse_data_dist", a_path), ("hccl:all_to_all", b_path)):
        row = ev[ev["name"] == name].iloc[0]
        assert ev.loc[row["parent"], "name"] == step
        assert row["depth"] == a.loc[path, "depth"] == 1
    calls = ev[ev["name"] == "cudaLaunchKernel"].sort_values("start")
    assert ev.loc[calls["parent"].iloc[1], "name"] == "hccl:all_to_all"  # the call at 250


@pytest.mark.parametrize("name", sorted(p.name for p in HTA.glob("*.json.gz")))
def test_every_kind_on_every_real_trace(name: str) -> None:
    """Every `by` and `backward` on every real trace gives a tree, never a raw exception.  A
    trace without nodes of the kind (no `with_modules` / `with_stack`: no `nn.Module` frames;
    no `user_annotation`) gives one `(unattributed)` row holding every device activity (no row
    without any; with `backward="forward"` a root `[backward]` row beside it), counted from the
    JSON."""
    events = [e for e in read_json(HTA / name)["traceEvents"] if isinstance(e, dict)]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") in DEVICE]
    gpu_pids = {e["pid"] for e in kernels}
    total = sum(ns(e["dur"]) for e in kernels)
    trace = profview.load(HTA / name)
    for by in ("annotation", "module", "stack", "op"):
        has_nodes = any(is_node(e, by, gpu_pids) for e in events)
        for backward in ("launch", "forward"):
            a = attribute(trace, by, backward=backward)
            assert int(a.loc[a["parent"] == -1, "gpu_total"].sum()) == total
            assert int(a.loc[a["parent"] == -1, "kernels"].sum()) == len(kernels)
            if not has_nodes and backward == "launch":
                assert a["path"].tolist() == (["(unattributed)"] if kernels else [])
            elif not has_nodes:  # the backward kernels linked to forward ops: a root [backward]
                assert set(a["path"]) <= {"(unattributed)", "[backward]"} and (a["depth"] == 0).all()
