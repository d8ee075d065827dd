"""Chrome decoders: the field rules of the pure-Python reference, bad input
(truncated, corrupted, wrong types) and fuzzing of both decoders."""

from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_profview import _native
from jupyter_profview.errors import ProfviewError
from jupyter_profview.formats.chrome import native as chrome_native
from jupyter_profview.formats.chrome.columns import ABSENT_TIME, ChromeColumns
from jupyter_profview.formats.chrome.decode import decode_python, normalized
from jupyter_profview.formats.chrome.trace import to_trace
from jupyter_profview.model import Trace
from jupyter_profview.sources import Source

DATA = Path(__file__).parent / "data"
FIXTURES = ["torch_mlp_train.json", "torch_mlp_train_adam.json.gz", "chrome_begin_end.json",
            "chrome_counters_async.json", "chrome_flows_v1.json", "chrome_flows_v2.json", "xprof_trace.json",
            "tf_timeline.json", "tf_timeline_real.json"]
NATIVE = _native.available()
FUZZ_EXAMPLES = int(os.environ.get("PROFVIEW_FUZZ_EXAMPLES", "150"))  # raise for a longer soak


def one(event: dict[str, Any], **top: Any) -> ChromeColumns:
    return decode_python(Source(orjson.dumps({"traceEvents": [event], **top})))


def decoders(data: bytes) -> list[tuple[str, Any]]:
    """(name, decode) for the Python decoder and, where built, the native one."""
    out: list[tuple[str, Any]] = [("python", decode_python)]
    if NATIVE:
        out.append(("native", chrome_native.decode_chrome))
    return out


def load_with(decode: Any, data: bytes) -> Trace | None:
    columns = decode(Source(data))
    return None if columns is None else to_trace(columns)


# -- field rules ------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "want"), [
    (1, "1"), (-3, "-3"), ("1", "s:1"), ("", "s:"), ("gpu 0", "s:gpu 0"), (1.5, "j:1.5"),
    (True, "j:true"), (None, "j:null"), ({"a": [1]}, 'j:{"a":[1]}'), ([1, "x"], 'j:[1,"x"]'),
])
def test_pid_tid_id_tokens(value: Any, want: str) -> None:
    c = one({"ph": "X", "pid": value, "tid": value, "id": value, "ts": 0})
    assert [c.tokens[c.pid_code[0]], c.tokens[c.tid_code[0]], c.tokens[c.id_code[0]]] == [want] * 3


@pytest.mark.parametrize(("id2", "want"), [
    ({"local": "0x2"}, "id2l:s:0x2"), ({"global": 7}, "id2g:7"), ({"other": 1}, 'id2:j:{"other":1}'),
])
def test_id2_tokens(id2: Any, want: str) -> None:
    c = one({"ph": "b", "id2": id2, "ts": 0})
    assert c.tokens[c.id_code[0]] == want


def test_absent_fields_and_empty_event() -> None:
    c = decode_python(Source(b'{"traceEvents": [{}, {"ph": "XY", "name": 5, "cat": null, "s": "g"}]}'))
    assert c.n == 2 and c.ph.tolist() == [0, 0] and c.bp.tolist() == [0, ord("g")]
    assert c.name_code[0] == -1 and c.names[c.name_code[1]] == "5" and c.cats[c.cat_code[1]] == "null"
    assert c.ts_ns.tolist() == [ABSENT_TIME] * 2 and c.args_offset.tolist() == [-1, -1]


@pytest.mark.parametrize(("ts", "want"), [
    (1, 1000), (1.0005, round(1.0005 * 1000)), (2.5e-3, round(2.5e-3 * 1000)), (-7.25, -7250),
    ("12.5", 12500), ("3", 3000), (1700000000000010, 1700000000000010000),
])
def test_times_are_rounded_nanoseconds(ts: Any, want: int) -> None:
    assert one({"ph": "X", "ts": ts, "dur": ts}).ts_ns.tolist() == [want]


@pytest.mark.parametrize("ts", [None, True, "abc", "1e", " nan", [1], {"us": 1}, 1e300])
def test_bad_times_name_record_and_field(ts: Any) -> None:
    data = orjson.dumps({"traceEvents": [{"ph": "X", "ts": 0}, {"ph": "X", "ts": 0, "dur": ts}]})
    with pytest.raises(ProfviewError, match=r"traceEvents\[1\].*'dur'"):
        decode_python(Source(data))


def test_args_and_numeric_args() -> None:
    args = {"Total Allocated": 10, "Bytes": -2.5, "Addr": True, "Device Id": "0", "x": [1]}
    c = one({"ph": "i", "ts": 1, "args": args}, baseTimeNanoseconds=5, displayTimeUnit="ns")
    assert c.args(0) == args
    num = {k: v.dense() for k, v in c.numeric_args.items()}
    assert num["Total Allocated"][0] == 10 and num["Bytes"][0] == -2.5
    assert math.isnan(num["Addr"][0]) and math.isnan(num["Device Id"][0])  # bools, strings: no
    assert c.top_level == {"baseTimeNanoseconds": 5, "displayTimeUnit": "ns"}


@pytest.mark.parametrize(("data", "match"), [
    (b'{"traceEvents": {"a": 1}}', r"traceEvents.*an array"),
    (b'{"traceEvents": [{"ph": "X"}, 3]}', r"traceEvents\[1\].*a JSON object"),
    (b'{"events": []}', r'no "traceEvents"'),
    (b'"text"', r"top level"),
    (b"   \n ", r"empty"),
    (b'{"traceEvents": [\n {"ph": "X"},\n {"ph": "X" "ts": 1}\n]}', r"line 3, column 13"),
    # the stray x comes after a 2-byte character: columns count bytes
    (b'{"traceEvents": [{"ph": "X", "name": "caf\xc3\xa9"} x]}', r"line 1, column 47 \(byte 46\)"),
    (b'{"traceEvents": [{"ph": "X"}', r"truncated"),
])
def test_structural_errors(data: bytes, match: str) -> None:
    with pytest.raises(ProfviewError, match=match) as info:
        decode_python(Source(data, name="t.json"))
    assert info.value.source == "t.json" and info.value.expected


def test_byte_order_mark_is_ignored() -> None:
    c = decode_python(Source(b'\xef\xbb\xbf[{"ph": "X", "ts": 1}]'))
    assert c.n == 1 and c.array_format


# -- decoders agree ----------------------------------------------------------------------------


@pytest.mark.skipif(not NATIVE, reason="native library not built")
@pytest.mark.parametrize("name", FIXTURES)
def test_native_matches_python_on_fixtures(name: str) -> None:
    source = Source(DATA / name)
    native = chrome_native.decode_chrome(source)
    if native is None:
        pytest.skip("native decoder declined this file")
    assert normalized(native) == normalized(decode_python(source))


# -- truncated and corrupted files --------------------------------------------------------------


def _content(name: str) -> bytes:
    data = (DATA / name).read_bytes()
    return gzip.decompress(data) if name.endswith(".gz") else data


@pytest.mark.parametrize("name", FIXTURES)
def test_truncated_copies_fail_cleanly(name: str) -> None:
    data = _content(name).rstrip()
    for cut in np.linspace(1, len(data) - 1, 9).astype(int).tolist():
        for label, decode in decoders(data):
            with pytest.raises(ProfviewError):
                load_with(decode, data[:cut])
            assert label
    if name.endswith(".gz"):
        raw = (DATA / name).read_bytes()
        with pytest.raises(ProfviewError, match="gzip"):
            load_with(decode_python, raw[: len(raw) // 2])


@pytest.mark.parametrize("name", FIXTURES)
def test_corrupted_copies_fail_cleanly(name: str) -> None:
    data = _content(name)
    for pos in np.linspace(0, len(data) - 2, 9).astype(int).tolist():
        bad = data[:pos] + b"\x01" + data[pos:]  # a control byte is invalid anywhere in JSON
        for _, decode in decoders(bad):
            with pytest.raises(ProfviewError, match=r"byte \d+"):
                load_with(decode, bad)


# -- fuzzing ---------------------------------------------------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40),
                    st.floats(-1e9, 1e9, allow_nan=False), st.text(max_size=4),
                    st.sampled_from(["X", "B", "E", "i", "C", "M", "s", "t", "f", "b", "e", "n", "e",
                                     "[memory]", "process_name", "thread_name", "1.5", "-3"]))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)), max_leaves=6)
numbers = st.one_of(st.integers(-(10**6), 10**6), st.floats(-1e6, 1e6, allow_nan=False))
arg_values = st.dictionaries(
    st.sampled_from(["Total Allocated", "Bytes", "Addr", "Device Id", "Device Type", "name",
                     "sort_index", "labels", "External id", "v"]),
    st.one_of(numbers, json_values), max_size=5)
event = st.fixed_dictionaries({}, optional={
    "ph": st.one_of(st.sampled_from(list("XBEiIRCMstfbenNODPSTFZ")), json_values),
    "name": st.one_of(st.sampled_from(["a", "b", "[memory]", "process_name", "thread_name",
                                       "ProfilerStep#1", "autograd::engine::evaluate_function: x"]),
                      json_values),
    "cat": st.one_of(st.sampled_from(["ac2g", "memory", "x"]), json_values),
    "pid": st.one_of(st.integers(0, 3), st.sampled_from(["p", "1"]), json_values),
    "tid": st.one_of(st.integers(0, 3), st.sampled_from(["t", ""]), json_values),
    "id": st.one_of(st.integers(0, 3), json_values),
    "id2": st.one_of(st.fixed_dictionaries({"local": st.integers(0, 2)}), json_values),
    "ts": st.one_of(numbers, numbers.map(str), json_values),
    "dur": st.one_of(numbers, json_values),
    "bp": st.one_of(st.just("e"), json_values),
    "s": st.sampled_from(["g", "p", "t"]),
    "args": st.one_of(arg_values, json_values),
    "bind_id": st.one_of(st.integers(0, 3), st.sampled_from(["0x1", "1", "a", "zz"]), json_values),
    "flow_in": st.one_of(st.booleans(), json_values),
    "flow_out": st.one_of(st.booleans(), json_values),
})


def _check(data: bytes) -> None:
    results = []
    for _, decode in decoders(data):
        try:
            columns = decode(Source(data))
        except ProfviewError:
            results.append("error")
            continue
        if columns is None:  # native: unsupported construct
            continue
        trace = to_trace(columns)
        assert trace.quality.unaccounted == 0
        assert trace.quality.records_read == columns.n
        results.append(normalized(columns))
    assert all(r == results[0] for r in results), "decoders disagree"


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(event, max_size=12), st.booleans(), st.booleans())
def test_fuzz_random_events(events: list[dict[str, Any]], array: bool, trailing: bool) -> None:
    doc: Any = events if array else {"traceEvents": events, "displayTimeUnit": "ns"}
    data = json.dumps(doc).encode()
    if array and trailing and data.endswith(b"]"):
        data = data[:-1]  # the spec allows the missing bracket
    _check(data)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255), st.sampled_from("rid")),
                min_size=1, max_size=4))
def test_fuzz_byte_mutations(edits: list[tuple[int, int, str]]) -> None:
    data = bytearray((DATA / "chrome_counters_async.json").read_bytes())
    for pos, byte, op in edits:
        pos %= len(data)
        if op == "r":
            data[pos] = byte
        elif op == "i":
            data.insert(pos, byte)
        elif len(data) > 1:
            del data[pos]
    _check(bytes(data))


def test_many_events_load_quickly() -> None:
    """50k X events + memory instants + flows through the Python decoder: the
    X path is vectorised, so this stays well under a few seconds."""
    events: list[dict[str, Any]] = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1,
                                     "args": {"name": "main"}}]
    for i in range(50_000):
        events.append({"ph": "X", "name": f"op{i % 50}", "pid": 1, "tid": 1 + i % 3, "ts": i * 10.5,
                       "dur": 10 - i % 4, "args": {"External id": i}})
        if i % 50 == 0:
            events.append({"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": i * 10.5 + 1,
                           "args": {"Total Allocated": i, "Bytes": 64, "Addr": i, "Device Type": 0,
                                    "Device Id": -1}})
            events.append({"ph": "s", "id": i, "cat": "ac2g", "pid": 1, "tid": 1, "ts": i * 10.5 + 2})
            events.append({"ph": "f", "id": i, "cat": "ac2g", "pid": 1, "tid": 2, "ts": i * 10.5 + 12,
                           "bp": "e"})
    columns = decode_python(Source(orjson.dumps({"traceEvents": events})))
    trace = to_trace(columns)
    assert len(trace.events) == 50_000 and len(trace.memory) == 1000 and len(trace.flows) == 1000
    assert trace.quality.unaccounted == 0
    bound = trace.flows[trace.flows["target"] >= 0]
    assert len(bound) > 0
    assert trace.events.loc[bound["target"], "thread"].astype(str).unique().tolist() == ["thread 2"]
    target = trace.events.loc[bound["target"]]
    assert (target["start"].to_numpy() <= bound["end"].to_numpy()).all()
    assert (bound["end"].to_numpy() <= (target["start"] + target["dur"]).to_numpy()).all()
