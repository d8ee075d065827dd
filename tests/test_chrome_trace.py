"""Chrome Trace Event format: real PyTorch / TensorFlow traces and hand-written
fixtures for the features those do not emit on CPU.

Expected values are computed here from the raw JSON (``json.load``) or from the
Trace Event spec, never copied from the loader's output.  Every test runs with
the pure-Python decoder and, where it is built, the native one.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter, defaultdict
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from pathlib import Path
from typing import Any

import pytest

import jupyter_profview as profview
from jupyter_profview.errors import ProfviewError
from jupyter_profview.formats import detect
from jupyter_profview.formats.chrome.trace import FORMAT, sniff
from jupyter_profview.sources import Source

DATA = Path(__file__).parent / "data"
TORCH = ["torch_mlp_train.json", "torch_mlp_train_adam.json.gz"]
HAND = ["chrome_begin_end.json", "chrome_counters_async.json", "chrome_flows_v1.json",
        "xprof_trace.json", "chrome_array_unclosed.json", "tf_timeline.json"]
ALL = TORCH + HAND + ["tf_timeline_real.json"]
PLACED = set("XBEiIRCstfbenSF")  # ph values whose records land in a time-indexed table



def raw_bytes(name: str) -> bytes:
    data = (DATA / name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


def raw_events(name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    text = raw_bytes(name).decode()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:  # bare array without its closing bracket
        doc = json.loads(text.rstrip().rstrip(",") + "]")
    if isinstance(doc, list):
        return doc, {}
    return doc["traceEvents"], {k: v for k, v in doc.items() if k != "traceEvents"}


def ns(us: Any) -> int:
    """Spec: ts/dur are microseconds; the model keeps int64 nanoseconds, exact from the
    decimal digits (the shortest repr of the parsed float gives back the fixtures' digits)."""
    if isinstance(us, int):
        return us * 1000
    with localcontext(prec=60):
        return int((Decimal(repr(float(us))) * 1000).to_integral_value(rounding=ROUND_HALF_EVEN))


def load(name: str) -> profview.Trace:
    return profview.load(DATA / name)


def first_time(events: list[dict[str, Any]]) -> int:
    """The trace origin: the earliest record that lands in a table."""
    return min(ns(e["ts"]) for e in events if "ts" in e and e.get("ph", "") in PLACED)


# -- every fixture ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_fixture_loads_fully_accounted(name: str, decoder: str) -> None:
    events, _ = raw_events(name)
    trace = load(name)
    assert trace.format == "chrome" and trace.time_unit == "ns"
    assert trace.metadata["decoder"] == decoder or decoder == "native"
    assert trace.quality.records_read == len(events)
    assert trace.quality.unaccounted == 0
    assert (trace.events["start"] >= 0).all()
    assert trace.events["start"].is_monotonic_increasing


@pytest.mark.parametrize("name", ALL)
def test_sniffed_from_content(name: str) -> None:
    assert detect(Source(DATA / name)).name == "chrome"


def test_sniff_rejects_other_json() -> None:
    assert not sniff(b'{"profiler": {}, "graph_exec": {}}')
    assert not sniff(b"[1, 2, 3]")
    assert sniff(b'\xef\xbb\xbf  \n{"traceEvents": []}')
    assert sniff(b'[ {"name": "a", "ph": "X"')
    assert "PyTorch" in FORMAT.description and "XProf" in FORMAT.description


@pytest.mark.parametrize("name", [n for n in ALL if n != "chrome_begin_end.json"])
def test_x_events_per_thread_and_duration(name: str, decoder: str) -> None:
    events, _ = raw_events(name)
    xs = [e for e in events if e.get("ph") == "X" and "ts" in e]
    trace = load(name)
    slices = trace.events[trace.events["kind"] == "slice"]
    assert Counter(slices["name"].astype(str)) == Counter(str(e["name"]) for e in xs)
    got = slices.groupby("name", observed=True)["dur"].sum().to_dict()
    want: dict[str, int] = defaultdict(int)
    for e in xs:
        want[str(e["name"])] += ns(e.get("dur", 0))
    assert got == dict(want)
    per_tid = Counter((str(e["pid"]), str(e["tid"])) for e in xs)
    assert sorted(Counter(zip(slices["process"], slices["thread"], strict=True)).values()) \
        == sorted(per_tid.values())


# -- PyTorch profiler (real traces) -----------------------------------------------------------


@pytest.mark.parametrize("name", TORCH)
def test_torch_memory_curve_matches_total_allocated(name: str, decoder: str) -> None:
    events, top = raw_events(name)
    mem = sorted(((ns(e["ts"]), k, e["args"]) for k, e in enumerate(events)
                  if e.get("name") == "[memory]"), key=lambda r: r[:2])
    assert mem, "fixture must hold [memory] events"
    assert all(a["Device Type"] == 0 for _, _, a in mem)  # CPU-only recording
    trace = load(name)
    cpu = trace.memory[trace.memory["device"] == "cpu"]
    assert (cpu["kind"] == "measured").all()
    assert cpu["bytes"].tolist() == [a["Total Allocated"] for _, _, a in mem]
    base = first_time(events)
    assert (cpu["time"] + base).tolist() == [t for t, _, _ in mem]
    assert int(cpu["bytes"].iloc[-1]) == mem[-1][2]["Total Allocated"]
    assert trace.quality.placed["memory"] == len(mem)
    # memory events are not events-table rows
    assert "[memory]" not in set(trace.events["name"].astype(str))
    assert trace.info.base_time_ns == top["baseTimeNanoseconds"] + base


@pytest.mark.parametrize("name", TORCH)
def test_torch_allocations_match_bytes(name: str, decoder: str) -> None:
    events, _ = raw_events(name)
    mem = [e["args"] for e in events if e.get("name") == "[memory]"]
    allocs = [a for a in mem if a["Bytes"] > 0]
    frees = [a for a in mem if a["Bytes"] < 0]
    trace = load(name)
    table = trace.allocations
    allocated = table[table["alloc_time"].notna()]
    assert len(allocated) == len(allocs)
    assert int(allocated["bytes"].sum()) == sum(a["Bytes"] for a in allocs)
    assert int(table["free_time"].notna().sum()) == len(frees)
    # blocks freed inside the trace: free after alloc, same address
    both = table[table["alloc_time"].notna() & table["free_time"].notna()]
    assert (both["free_time"] >= both["alloc_time"]).all()
    assert set(table["address"].dropna().astype(int)) <= {a["Addr"] for a in mem}
    owned = allocated[allocated["owner"] != ""]
    assert len(owned) > 0 and owned["owner"].str.startswith("aten::").any()


@pytest.mark.parametrize("name", TORCH)
def test_torch_phases_flows_and_args(name: str, decoder: str) -> None:
    events, _ = raw_events(name)
    trace = load(name)
    ev = trace.events
    phase = dict(zip(ev.index, ev["phase"].astype(str), strict=True))
    names = ev["name"].astype(str)
    assert {phase[i] for i in ev.index[names.str.startswith("autograd::engine::evaluate_function")]} \
        == {"backward"}
    assert {phase[i] for i in ev.index[names.str.startswith("Optimizer.step#")]} == {"optimizer"}
    assert {phase[i] for i in ev.index[names == "aten::mse_loss"]} == {"forward"}
    assert {phase[i] for i in ev.index[names == "aten::addmm"]} >= {"forward"}
    steps = ev.index[names.str.startswith("ProfilerStep#")]
    assert {phase[i] for i in steps} <= {"other"}
    # fwdbwd flows: one per s/f pair, each source encloses its s time
    starts = {e["id"]: ns(e["ts"]) for e in events if e.get("ph") == "s"}
    ends = {e["id"]: ns(e["ts"]) for e in events if e.get("ph") == "f"}
    assert len(trace.flows) == len(set(starts) & set(ends))
    base = first_time(events)
    for row in trace.flows.itertuples():
        assert row.start + base == starts[int(row.flow_id)]
        src = ev.loc[row.source]
        assert src["start"] <= row.start <= src["start"] + src["dur"]
        assert phase[row.target] == "backward"
    # args and external ids come from the raw event
    xs = [e for e in events if e.get("ph") == "X" and "External id" in e.get("args", {})]
    by_key = {(str(e["name"]), ns(e["ts"]) - base): e for e in xs}
    for i in ev.index[ev["external_id"].notna()][:50]:
        e = by_key[(names[i], int(ev.at[i, "start"]))]
        assert trace.args(i) == e["args"]
        assert int(ev.at[i, "external_id"]) == e["args"]["External id"]


def test_torch_metadata_labels_and_order(decoder: str) -> None:
    events, top = raw_events("torch_mlp_train.json")
    trace = load("torch_mlp_train.json")
    meta = {(e["name"], e.get("pid"), e.get("tid")): e["args"] for e in events if e.get("ph") == "M"}
    process = next(a["name"] for (k, _, _), a in meta.items() if k == "process_name")
    thread = next(a["name"] for (k, _, _), a in meta.items() if k == "thread_name")
    assert f"{process} / {thread}" == trace.info.track_order[0]
    assert trace.metadata["display_time_unit"] == top["displayTimeUnit"]
    assert list(trace.info.device_properties) == top["deviceProperties"]
    assert trace.info.process_labels == {process: "CPU"}


# -- hand-written fixtures --------------------------------------------------------------------


def test_begin_end(decoder: str) -> None:
    events, top = raw_events("chrome_begin_end.json")
    trace = load("chrome_begin_end.json")
    ev = trace.events.set_index(trace.events["name"].astype(str))
    base = first_time(events)
    assert ev.at["outer", "dur"] == ns(200 - 100) and ev.at["inner", "dur"] == ns(130 - 110)
    assert ev.at["inner", "parent"] == trace.events.index[trace.events["name"] == "outer"][0]
    end = max(ns(e["ts"]) + ns(e.get("dur", 0)) for e in events if "ts" in e and e["ph"] != "Z")
    assert bool(ev.at["never ends", "incomplete"]) is True
    assert ev.at["never ends", "start"] + base + ev.at["never ends", "dur"] == end
    assert not ev.loc[ev.index != "never ends", "incomplete"].any()
    q = trace.quality
    assert (q.unmatched_begin, q.unmatched_end) == (1, 1)
    assert q.skipped == Counter({"'E' without a matching 'B'": 1, "unknown ph 'Z'": 1,
                                 "sample events (P)": 1, "'X' event without ts": 1})
    kinds = Counter(trace.events["kind"].astype(str))
    assert kinds["instant"] == sum(e["ph"] in "iIR" for e in events)
    inner = int(trace.events.index[trace.events["name"] == "inner"][0])
    assert trace.args(inner) == {"result": "ok"}  # the E's args are merged
    assert list(trace.info.track_order) == [
        "Browser / thread 1", "Renderer / Compositor", "Renderer / CrRendererMain"]
    assert trace.info.process_labels == {"Renderer": "example.com"}
    assert trace.metadata["top_level"]["otherData"] == top["otherData"]


def test_counters_and_async(decoder: str) -> None:
    events, _ = raw_events("chrome_counters_async.json")
    trace = load("chrome_counters_async.json")
    numeric = [(e["name"], k, v) for e in events if e["ph"] == "C" for k, v in e["args"].items()
               if isinstance(v, (int, float))]
    assert len(trace.counters) == len(numeric)
    assert sorted(trace.counters["value"]) == sorted(float(v) for _, _, v in numeric)
    assert "queue 2" in set(trace.counters["name"].astype(str))  # counter id joins the name
    mem = trace.memory
    want = [v for e in events if e["ph"] == "C" and e.get("cat") == "memory"
            for k, v in e["args"].items() if k == "allocated"]
    assert mem[mem["device"] == "GPU memory: allocated"]["bytes"].tolist() == want
    ev = trace.events
    asyn = ev[ev["kind"] == "async"]
    assert set(asyn["thread"].astype(str)) == {f"async: {n}" for n in
                                                ("load", "progress", "outer", "inner", "req", "hang", "old")}
    by_name = asyn.groupby(asyn["name"].astype(str))["dur"].apply(sorted).to_dict()
    assert by_name["load"] == [ns(8)] and by_name["progress"] == [0]
    assert by_name["outer"] == [ns(7)] and by_name["inner"] == [ns(1)]
    assert by_name["req"] == [ns(2), ns(4)]  # id2.local ids are per process
    assert by_name["old"] == [ns(3)]
    assert asyn.loc[asyn["name"] == "hang", "incomplete"].all()
    q = trace.quality
    assert q.skipped["async end without a matching begin"] == 1
    assert q.skipped["legacy async step (T/p)"] == 1
    assert q.skipped["counter 'C' without numeric values"] == 1
    load_id = int(asyn.index[asyn["name"] == "load"][0])
    assert trace.args(load_id) == {"url": "a", "status": 200}


def test_flows_v1(decoder: str) -> None:
    events, _ = raw_events("chrome_flows_v1.json")
    trace = load("chrome_flows_v1.json")
    ev = trace.events
    base = first_time(events)
    idx = {str(n): int(i) for i, n in zip(ev.index, ev["name"], strict=True)}
    flows = trace.flows
    got = sorted(zip(flows["category"].astype(str), flows["source"], flows["target"], strict=True))
    # s binds to the deepest enclosing slice, f with bp "e" to the enclosing one,
    # f without bp to the next slice starting on its thread, t to the enclosing one
    assert got == sorted([
        ("ac2g", idx["cudaLaunchKernel"], idx["void sgd_kernel<float>"]),
        ("x", idx["Optimizer.step#SGD.step"], idx["void sgd_kernel<float>"]),
        ("x", idx["void sgd_kernel<float>"], idx["void other_kernel"]),
        ("y", idx["Optimizer.step#SGD.step"], idx["void other_kernel"]),
    ])
    assert sorted(flows["start"] + base) == sorted(
        [ns(e["ts"]) for e in events if e["ph"] in "st" and e.get("id") != 5])
    # the GPU kernel takes the phase of its launch through the ac2g flow
    assert ev.at[idx["void sgd_kernel<float>"], "phase"] == "optimizer"
    assert ev.at[idx["void other_kernel"], "phase"] == "other"
    assert int(ev.at[idx["void sgd_kernel<float>"], "correlation"]) == 42
    assert trace.quality.placed["flows"] == 7
    assert trace.quality.skipped["flow 'f' without an 's' of its (cat, id)"] == 1
    assert trace.quality.skipped["flow 's' without a 't' or 'f'"] == 1


def test_xprof_nanosecond_display_and_trailing_empty_event(decoder: str) -> None:
    events, top = raw_events("xprof_trace.json")
    assert events[-1] == {} and top["displayTimeUnit"] == "ns"
    trace = load("xprof_trace.json")
    xs = [e for e in events if e.get("ph") == "X"]
    base = min(ns(e["ts"]) for e in xs)
    got = sorted(zip(trace.events["start"] + base, trace.events["dur"], strict=True))
    assert got == sorted((ns(e["ts"]), ns(e["dur"])) for e in xs)  # ts stays µs despite "ns"
    assert trace.metadata["display_time_unit"] == "ns"
    assert trace.quality.skipped['event without "ph" (e.g. a trailing {})'] == 1
    threads = set(zip(trace.events["process"].astype(str), trace.events["thread"].astype(str), strict=True))
    assert ("/device:TPU:0", "XLA Ops") in threads


def test_array_without_closing_bracket(decoder: str) -> None:
    data = raw_bytes("chrome_array_unclosed.json")
    assert not data.rstrip().endswith(b"]")
    body = data.rstrip().rstrip(b",")
    for variant in (data, body, body + b"\n", body + b",\n  ", body + b"]"):
        trace = profview.load(variant)
        assert len(trace.events) == body.count(b'"ph"')
        assert trace.metadata["array_format"] is True
    for cut in (body[:-1], body[:-6], body + b",]x", body + b", {"):  # cut inside an event
        with pytest.raises(ProfviewError, match=r"byte \d+"):
            profview.load(cut)


@pytest.mark.parametrize("name", ["tf_timeline.json", "tf_timeline_real.json"])
def test_tf_timeline(name: str, decoder: str) -> None:
    events, _ = raw_events(name)
    trace = load(name)
    counters = [e for e in events if e["ph"] == "C"]
    assert len(trace.counters) == sum(len(e["args"]) for e in counters)
    for allocator in {e["name"] for e in counters}:
        want = [e["args"][allocator] for e in sorted(counters, key=lambda e: e["ts"])
                if e["name"] == allocator]
        assert trace.memory[trace.memory["device"] == allocator]["bytes"].tolist() == want
    assert trace.quality.skipped["object events (N/O/D)"] == sum(e["ph"] in "NOD" for e in events)
    flows = [e for e in events if e["ph"] in "st"]
    assert trace.quality.placed["flows"] == len(flows)
    compute = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert set(trace.events["process"].astype(str)) == {compute[e["pid"]] for e in events if e["ph"] == "X"}


@pytest.mark.parametrize("tokens", [
    ["1", "22", "-3"], ["1", "s:x"], ["s:", "2"], ["j:[1]", "x"], ["1", None], [None],
    ["a\0s:b", "c"], ["id2l:5", "id2g:s:7"], [],
])
def test_token_labels_fast_path_matches_token_label(tokens: list[str | None]) -> None:
    from jupyter_profview.formats.chrome.slices import token_label, token_labels

    assert token_labels(tokens) == [token_label(t) if t is not None else "" for t in tokens]
