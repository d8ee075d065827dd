"""GPU traces: flow pairing, ``trace.launches`` and device lanes on the real
Kineto traces of ``data/hta/`` (HolisticTraceAnalysis test data, MIT) and on
tiny hand-made traces for the quirks those files do not show.

Expected values are counted here from the raw JSON with ``json``/``gzip``,
never copied from the loader's output.  Each test runs with the pure-Python
decoder and, where built, the native one.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_profview as profview
from jupyter_profview.model import empty_launches
from jupyter_profview.schema import LAUNCHES

HTA = Path(__file__).parent / "data" / "hta"
FILES = sorted(p.name for p in HTA.glob("*.json.gz"))
DEVICE = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset", "mtia_ccp_events"}
RUNTIME = {"cuda_runtime", "cuda_driver", "Runtime", "mtia_runtime"}



def raw(name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    doc = json.loads(gzip.decompress((HTA / name).read_bytes()), parse_float=Decimal)
    if isinstance(doc, list):
        return doc, {}
    return doc["traceEvents"], doc


def ns(us: Any) -> int:
    return int((Decimal(us) * 1000).to_integral_value())


def flow_groups(events: list[dict[str, Any]]) -> dict[tuple[Any, str], Counter[str]]:
    groups: dict[tuple[Any, str], Counter[str]] = defaultdict(Counter)
    for e in events:
        if e.get("ph") in ("s", "t", "f") and "ts" in e:
            groups[(e.get("cat"), json.dumps(e.get("id", e.get("id2")), sort_keys=True))][e["ph"]] += 1
    return groups


def test_every_fixture_is_there() -> None:
    assert len(FILES) == 10 and (HTA / "LICENSE").exists()


@pytest.mark.parametrize("name", FILES)
def test_flows_pair_by_cat_and_id_whatever_the_order(name: str, decoder: str) -> None:
    events, _ = raw(name)
    groups = flow_groups(events)
    pairs = sum(g["t"] + g["f"] for g in groups.values() if g["s"])
    unpaired_ends = sum(g["t"] + g["f"] for g in groups.values() if not g["s"])
    lone_starts = sum(g["s"] for g in groups.values() if not g["t"] and not g["f"])
    trace = profview.load(HTA / name)
    assert len(trace.flows) == pairs
    skipped = trace.quality.skipped
    assert sum(v for k, v in skipped.items() if "without an 's' of its (cat, id)" in k) == unpaired_ends
    assert skipped["flow 's' without a 't' or 'f'"] == lone_starts
    assert trace.quality.unaccounted == 0
    assert trace.quality.placed["flows"] == sum(sum(g.values()) for g in groups.values() if g["s"]) - \
        sum(g["s"] for g in groups.values() if g["s"] and not g["t"] and not g["f"])
    # the launch flows link the runtime call and the device activity of that correlation
    runtime = {e["args"]["correlation"]: e["name"] for e in events
               if e.get("ph") == "X" and e.get("cat") in RUNTIME and "correlation" in e.get("args", {})}
    device = defaultdict(set)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") not in RUNTIME and "correlation" in e.get("args", {}):
            device[e["args"]["correlation"]].add(e["name"])  # kernels, memcpy, memset, cuda_sync
    names = trace.events["name"].astype(str).to_numpy()
    launch_flows = trace.flows[trace.flows["category"].astype(str) == "ac2g"]
    for row in launch_flows.itertuples():
        corr = int(row.flow_id)
        assert names[row.source] == runtime[corr]
        assert names[row.target] in device[corr]


@pytest.mark.parametrize("name", FILES)
def test_launches_link_every_device_activity_with_a_matching_correlation(name: str, decoder: str) -> None:
    events, top = raw(name)
    xs = [e for e in events if e.get("ph") == "X"]
    device = [e for e in xs if e.get("cat") in DEVICE]
    runtime = {}
    for e in xs:
        if e.get("cat") in RUNTIME and "correlation" in e.get("args", {}):
            runtime.setdefault(e["args"]["correlation"], e)
    matching = [e for e in device if e.get("args", {}).get("correlation") in runtime]
    trace = profview.load(HTA / name)
    launches = trace.launches
    assert list(launches.columns) == list(LAUNCHES.names)
    assert len(launches) == len(device)
    assert int(launches["launch"].notna().sum()) == len(matching)
    if not device:
        assert launches.dtypes.equals(empty_launches().dtypes)
        return
    base = min(ns(e["ts"]) for e in events if "ts" in e and e.get("ph") not in ("M",))
    names = trace.events["name"].astype(str).to_numpy()
    got = {int(r.correlation): r for r in launches.dropna(subset=["launch"]).itertuples()}
    ops_by_thread = defaultdict(list)
    for e in xs:
        if e.get("cat") == "cpu_op":
            ops_by_thread[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]))
    for k in matching:
        r, rt = got[k["args"]["correlation"]], runtime[k["args"]["correlation"]]
        assert names[r.launch] == rt["name"] and names[r.kernel] == k["name"]
        assert abs(r.launch_start + base - ns(rt["ts"])) <= 1 and abs(r.launch_dur - ns(rt["dur"])) <= 1
        assert abs(r.kernel_start + base - ns(k["ts"])) <= 1 and abs(r.kernel_dur - ns(k["dur"])) <= 1
        want_delay = max(ns(k["ts"]) - ns(rt["ts"]) - ns(rt["dur"]), 0)
        assert abs(r.delay - want_delay) <= 2
        assert r.stream == k["args"].get("stream", k["tid"])
        # the enclosing cpu_op: the latest-starting cpu_op on the launch's thread that contains it
        rt_start, rt_end = ns(rt["ts"]), ns(rt["ts"]) + ns(rt["dur"])
        ops = [op for op in ops_by_thread[(rt["pid"], rt["tid"])] if op[0] <= rt_start and op[1] >= rt_end]
        if ops:
            deepest = max((op[0], -op[1]) for op in ops)  # ties (same start and end): any of them
            assert r.cpu_op_name in {op[2] for op in ops if (op[0], -op[1]) == deepest}
        else:
            assert pd.isna(r.cpu_op)
    types = launches["type"].astype(str).to_numpy()
    kinds = Counter()
    for e in device:
        n = e["name"]
        kind = "memcpy" if e["cat"] in ("gpu_memcpy", "Memcpy") else \
            "memset" if e["cat"] in ("gpu_memset", "Memset") else \
            "communication" if n.lower().startswith(("nccl", "rccl")) else "kernel"
        kinds[kind] += 1
    assert Counter(types.tolist()) == kinds
    assert trace.metadata["gpu"]["linked"] == len(matching)


@pytest.mark.parametrize("name", [n for n in FILES if any(e.get("cat") in DEVICE for e in raw(n)[0])])
def test_device_lanes_are_labelled_and_come_after_the_host(name: str, decoder: str) -> None:
    events, top = raw(name)
    device = [e for e in events if e.get("ph") == "X" and e.get("cat") in DEVICE]
    props = {p["id"]: p["name"] for p in top.get("deviceProperties", [])}
    labels = {e["args"]["device"] for e in device}
    want = {f"GPU {d}" + (f" · {props[d].removeprefix('NVIDIA ')}" if d in props else "") for d in labels}
    trace = profview.load(HTA / name)
    assert set(trace.launches["gpu"].astype(str)) == want
    streams = {f"stream {e['args']['stream']}" for e in device}
    lanes = trace.events.loc[trace.launches["kernel"], "thread"].astype(str)
    assert set(lanes) == streams
    order = trace.info.track_order
    pairs = zip(trace.events["process"].astype(str), trace.events["thread"].astype(str), strict=True)
    host = {f"{p} / {t}" for p, t in pairs if t.startswith("thread ")}
    gpu_tracks = [k for k, track in enumerate(order) if track.split(" / ")[0] in want]
    assert gpu_tracks and all(order.index(h) < min(gpu_tracks) for h in host)


# -- hand-made traces for the quirks ---------------------------------------------------------


def load_events(events: list[dict[str, Any]], **top: Any) -> Any:
    return profview.load(json.dumps({"traceEvents": events, **top}).encode())


def x(name: str, cat: str, pid: Any, tid: Any, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def flow(ph: str, ident: int, pid: Any, tid: Any, ts: float, cat: str = "ac2g") -> dict[str, Any]:
    e = {"ph": ph, "id": ident, "pid": pid, "tid": tid, "ts": ts, "cat": cat, "name": cat}
    if ph == "f":
        e["bp"] = "e"
    return e


def arrows(trace: Any) -> list[tuple[str, str]]:
    names = trace.events["name"].astype(str).to_numpy()
    return [(names[s], names[t]) for s, t in zip(trace.flows["source"], trace.flows["target"], strict=True)]


def test_cuda_graph_one_start_many_ends_in_any_order(decoder: str) -> None:
    # three kernels of one graph, overlapping on stream 7, all correlation 5; the f's come first
    events = [
        flow("f", 5, 0, 7, 30), flow("f", 5, 0, 7, 32), flow("f", 5, 0, 7, 34),
        x("aten::graph_replay", "cpu_op", 1, 1, 5, 20),
        x("cudaGraphLaunch", "cuda_runtime", 1, 1, 10, 6, correlation=5),
        flow("s", 5, 1, 1, 10),
        x("k0", "kernel", 0, 7, 30, 10, correlation=5, stream=7, device=0),
        x("k1", "kernel", 0, 7, 32, 10, correlation=5, stream=7, device=0),
        x("k2", "kernel", 0, 7, 34, 10, correlation=5, stream=7, device=0),
    ]
    trace = load_events(events)
    names = trace.events["name"].astype(str).to_numpy()
    assert sorted(arrows(trace)) == [("cudaGraphLaunch", k) for k in ("k0", "k1", "k2")]
    launches = trace.launches
    assert sorted(names[launches["kernel"]]) == ["k0", "k1", "k2"]
    assert set(names[launches["launch"].astype(int)]) == {"cudaGraphLaunch"}
    assert sorted(launches["delay"].tolist()) == [14_000, 16_000, 18_000]
    assert set(launches["cpu_op_name"].astype(str)) == {"aten::graph_replay"}


def test_calls_sharing_the_launch_microsecond_are_told_apart_by_correlation(decoder: str) -> None:
    events = [
        x("aten::mm", "cpu_op", 1, 1, 0, 50),
        x("cudaFuncSetAttribute", "cuda_runtime", 1, 1, 10, 0, correlation=7),
        x("cudaLaunchKernel", "cuda_runtime", 1, 1, 10, 5, correlation=8),
        flow("s", 8, 1, 1, 10), flow("f", 8, 0, 7, 20),
        x("gemm", "kernel", 0, 7, 20, 3, correlation=8, stream=7),
    ]
    trace = load_events(events)
    names = trace.events["name"].astype(str).to_numpy()
    (src,), (dst,) = trace.flows["source"].tolist(), trace.flows["target"].tolist()
    assert (names[src], names[dst]) == ("cudaLaunchKernel", "gemm")
    row = trace.launches.iloc[0]
    assert names[int(row["launch"])] == "cudaLaunchKernel" and row["delay"] == 5_000
    assert row["launch_name"] == "cudaLaunchKernel" and row["cpu_op_name"] == "aten::mm"


def test_amd_string_stream_and_older_categories(decoder: str) -> None:
    events = [
        x("hipLaunchKernel", "cuda_runtime", 1, 1, 0, 4, correlation=3, stream="0x0"),
        x("Cijk_gemm", "kernel", 2, 0, 10, 5, correlation=3, stream=0, device=2),
        x("cudaLaunchKernel", "Runtime", 1, 1, 20, 4, correlation=4),
        x("old_kernel", "Kernel", 2, 0, 30, 5, correlation=4),
        flow("s", 4, 1, 1, 20, cat="async_gpu"), flow("f", 4, 2, 0, 30, cat="async_gpu"),
        x("ncclDevKernel_AllReduce", "kernel", 2, 1, 40, 5, device=2, stream=1),
        x("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 2, 0, 50, 5, device=2, stream=0),
    ]
    trace = load_events(events, deviceProperties=[{"id": 2, "name": "AMD Instinct MI250X"}])
    la = trace.launches.set_index(trace.events["name"].astype(str).to_numpy()[trace.launches["kernel"]])
    assert la.loc["Cijk_gemm", "stream"] == 0 and la.loc["Cijk_gemm", "delay"] == 6_000
    assert la.loc["old_kernel", "launch_name"] == "cudaLaunchKernel"
    assert la.loc["old_kernel", "stream"] == 0  # from the tid
    assert la["type"].astype(str).to_dict() == {"Cijk_gemm": "kernel", "old_kernel": "kernel",
                                                "ncclDevKernel_AllReduce": "communication",
                                                "Memcpy HtoD (Pageable -> Device)": "memcpy"}
    assert set(la["gpu"].astype(str)) == {"GPU 2 · AMD Instinct MI250X"}
    assert len(trace.flows) == 1
    assert trace.events.loc[trace.flows["target"].iloc[0], "phase"] == "other"


def test_mtia_device_events_without_correlation(decoder: str) -> None:
    events = [
        {"ph": "M", "name": "process_labels", "pid": 9, "args": {"labels": "GPU 1"}},
        x("runFunction", "mtia_runtime", 9, 100, 0, 5, correlation=11),  # runtime on the device process
        x("mtia_kernel_a", "mtia_ccp_events", 9, 3, 10, 5),
        x("mtia_kernel_b", "mtia_ccp_events", 9, 3, 20, 5, correlation=11),
        flow("s", 11, 9, 100, 0), flow("f", 11, 9, 3, 10), flow("f", 11, 9, 3, 20),
    ]
    trace = load_events(events)
    la = trace.launches
    assert len(la) == 2 and la["correlation"].isna().sum() == 1 and la["launch"].notna().sum() == 1
    assert trace.metadata["gpu"]["without_correlation"] == 1
    assert set(la["gpu"].astype(str)) == {"GPU 1"}
    assert len(trace.flows) == 2  # one start, two ends: one pair per end
    lanes = dict(zip(trace.events["name"].astype(str), trace.events["thread"].astype(str), strict=True))
    assert lanes["mtia_kernel_a"] == "stream 3" and lanes["runFunction"] == "thread 100"  # not a stream


def test_mtia_dma_is_memory_traffic(decoder: str) -> None:
    """MTIA's DMA transfers (device activities named ``dma...``) are memory,
    not computation, as HTA's kernel types (``MEMORY_KERNEL_RE = ^Memcpy|^Memset|^dma``):
    in the launches' type, the kernel breakdown and the temporal breakdown."""
    from jupyter_profview.analysis import kernel_breakdown, temporal_breakdown

    events = [
        {"ph": "M", "name": "process_labels", "pid": 9, "args": {"labels": "GPU 0"}},
        x("runFunction", "mtia_runtime", 1, 1, 0, 2, correlation=1),
        x("dmaRequest", "mtia_runtime", 1, 1, 5, 2, correlation=2),
        x("fused_matmul", "mtia_ccp_events", 9, 3, 10, 40, correlation=1),  # [10, 50)
        x("dma_request_h2d", "mtia_ccp_events", 9, 4, 30, 50, correlation=2),  # [30, 80): 30 beyond compute
    ]
    trace = load_events(events)
    types = dict(zip(trace.launches["name"].astype(str), trace.launches["type"].astype(str), strict=True))
    assert types == {"fused_matmul": "kernel", "dma_request_h2d": "dma"}
    by_type = kernel_breakdown(trace).set_index("type")["total"].to_dict()
    assert by_type == {"memory": 50_000, "computation": 40_000}
    (row,) = temporal_breakdown(trace).to_dict("records")
    assert (row["span"], row["compute"], row["non_compute"], row["idle"]) == (70_000, 40_000, 30_000, 0)


def test_flow_steps_and_unpaired_ends_are_accounted(decoder: str) -> None:
    events = [
        x("a", "cpu_op", 1, 1, 0, 10), x("b", "cpu_op", 1, 2, 20, 10), x("c", "cpu_op", 1, 3, 40, 10),
        flow("f", 1, 1, 3, 45, "chain"), flow("t", 1, 1, 2, 25, "chain"), flow("s", 1, 1, 1, 5, "chain"),
        flow("f", 2, 1, 3, 46, "chain"), flow("t", 3, 1, 3, 47, "chain"), flow("s", 4, 1, 1, 6, "chain"),
    ]
    trace = load_events(events)
    assert sorted(arrows(trace)) == [("a", "b"), ("b", "c")]
    q = trace.quality
    assert q.skipped["flow 'f' without an 's' of its (cat, id)"] == 1
    assert q.skipped["flow 't' without an 's' of its (cat, id)"] == 1
    assert q.skipped["flow 's' without a 't' or 'f'"] == 1
    assert q.placed["flows"] == 3 and q.unaccounted == 0
    assert len(trace.launches) == 0 and list(trace.launches.columns) == list(LAUNCHES.names)
    assert "gpu" not in trace.metadata
    assert np.array_equal(trace.launches.dtypes.to_numpy(), empty_launches().dtypes.to_numpy())


def test_parse_decimal_matches_int() -> None:
    from jupyter_profview.formats.chrome.flows import parse_decimal

    texts = ["0", "7", "007", "123456789012345678", "1234567890123456789", "", "-1", "1a", "s:5", "12 ", "٣"]
    values, ok = parse_decimal(np.asarray(texts, dtype=str))
    for text, value, good in zip(texts, values.tolist(), ok.tolist(), strict=True):
        want = text.isascii() and text.isdigit() and len(text) <= 18
        assert good == want, text
        assert value == (int(text) if want else 0)
