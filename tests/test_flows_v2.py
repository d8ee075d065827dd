"""Chrome flow events v2 (``bind_id`` + ``flow_in``/``flow_out`` on slices,
Perfetto's JSON importer): decoding in both decoders and pairing into
``trace.flows``.  Expected arrows are worked out here from the JSON with a
plain-Python model of the documented rule, not taken from the loader."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jupyter_profview as profview
from jupyter_profview import _native
from jupyter_profview.formats.chrome import native as chrome_native
from jupyter_profview.formats.chrome.columns import FLOW_IN, FLOW_OUT
from jupyter_profview.formats.chrome.decode import decode_python, normalized
from jupyter_profview.formats.chrome.trace import to_trace
from jupyter_profview.model import Trace
from jupyter_profview.sources import Source

FIXTURE = Path(__file__).parent / "data" / "chrome_flows_v2.json"
SLICE_PHASES = ("X", "B", "b", "n")  # the records whose bind_id Perfetto reads


def _key(value: Any) -> tuple[str, Any]:
    """Perfetto's reading of a bind_id: a number as is, a string as hexadecimal."""
    if isinstance(value, int):
        return ("int", value)
    text = value[2:] if value[:2] in ("0x", "0X") else value
    try:
        return ("int", int(text, 16))
    except ValueError:
        return ("text", value)


def expected(events: list[dict[str, Any]]) -> tuple[list[tuple[str, str]], int]:
    """(sorted (source name, target name) arrows, slices with a bind_id in no arrow).

    Rule: per bind id, in time order (ties: flow_out only, then both, then
    flow_in only, then file order), a flow_in links from the latest earlier
    flow_out of its id, or else from its id's first flow_out."""
    groups: dict[tuple[str, Any], list[tuple[int, int, int, str]]] = {}
    slices = 0
    for i, e in enumerate(events):
        if e.get("ph") not in SLICE_PHASES or "bind_id" not in e or "ts" not in e:
            continue
        slices += 1
        into, out = e.get("flow_in") is True, e.get("flow_out") is True
        if into or out:
            role = 1 if into and out else 2 if into else 0
            groups.setdefault(_key(e["bind_id"]), []).append((e["ts"], role, i, e["name"]))
    arrows, used = [], set()
    for members in groups.values():
        members.sort()
        starts = [m for m in members if m[1] == 0]
        for k, (_, role, i, name) in enumerate(members):
            if role == 0:
                continue
            earlier = [m for m in members[:k] if m[1] in (0, 1)]
            source = earlier[-1] if earlier else starts[0] if starts else None
            if source is None:
                continue
            arrows.append((source[3], name))
            used.update((source[2], i))
    return sorted(arrows), slices - len(used)


def v2_arrows(trace: Trace) -> list[tuple[str, str]]:
    flows = trace.flows[trace.flows["category"].astype(str) != "v1"]
    names = trace.events["name"].astype(str).to_numpy()
    return sorted(zip(names[flows["source"].to_numpy()], names[flows["target"].to_numpy()], strict=True))


def events_of_fixture() -> list[dict[str, Any]]:
    return json.loads(FIXTURE.read_text())["traceEvents"]


def test_fixture_pairs_as_counted_from_the_json() -> None:
    events = events_of_fixture()
    want, unpaired = expected(events)
    assert len(want) >= 8 and unpaired >= 3  # the fixture exercises chains, fan-out, orphans
    trace = profview.load(FIXTURE)
    assert v2_arrows(trace) == want
    assert trace.quality.unpaired_flows == unpaired
    assert trace.quality.unaccounted == 0
    v1 = trace.flows[trace.flows["category"].astype(str) == "v1"]
    assert len(v1) == sum(e.get("ph") == "f" for e in events)  # v1 flows still pair alongside


def test_arrows_run_from_slice_start_to_slice_start() -> None:
    trace = profview.load(FIXTURE)
    flows = trace.flows[trace.flows["category"].astype(str) != "v1"]
    start = trace.events["start"].to_numpy()
    np.testing.assert_array_equal(flows["start"].to_numpy(), start[flows["source"].to_numpy()])
    np.testing.assert_array_equal(flows["end"].to_numpy(), start[flows["target"].to_numpy()])


@pytest.mark.parametrize("seed", range(5))
def test_file_order_does_not_matter(seed: int) -> None:
    events = events_of_fixture()
    meta, rest = events[:2], events[2:]
    begin_end = [e for e in rest if e["ph"] in "BEbe"]  # keep begin/end pairs in order
    others = [e for e in rest if e["ph"] not in "BEbe"]
    random.Random(seed).shuffle(others)
    data = json.dumps({"traceEvents": [*meta, *others, *begin_end]}).encode()
    trace = to_trace(decode_python(Source(data)))
    assert v2_arrows(trace) == expected(events)[0]
    assert trace.quality.unpaired_flows == expected(events)[1]


def test_decoded_fields() -> None:
    c = decode_python(Source(FIXTURE))
    events = events_of_fixture()
    for i, e in enumerate(events):
        token = c.tokens[c.bind_code[i]] if c.bind_code[i] >= 0 else None
        if "bind_id" not in e:
            assert token is None
        else:
            value = e["bind_id"]
            assert token == (str(value) if isinstance(value, int) else "s:" + value)
        bits = (FLOW_IN if e.get("flow_in") is True else 0) | (FLOW_OUT if e.get("flow_out") is True else 0)
        assert c.flow_dir[i] == bits, i


@pytest.mark.skipif(not _native.available(), reason="native library not built")
def test_native_and_python_agree() -> None:
    ref = decode_python(Source(FIXTURE))
    for size in (1, 7, 4096, 1 << 24):
        got = chrome_native.decode_chrome(Source(FIXTURE), chunk_size=size)
        assert got is not None
        assert normalized(got) == normalized(ref)
        np.testing.assert_array_equal(got.bind_code, ref.bind_code)
        np.testing.assert_array_equal(got.flow_dir, ref.flow_dir)
    a, b = to_trace(ref), profview.load(FIXTURE)
    assert b.metadata["decoder"] == "native"
    assert v2_arrows(a) == v2_arrows(b)


@pytest.mark.parametrize("doc", [
    '[{"ph": "X", "ts": 1, "dur": 1, "bind_id": 3, "flow_out": true, "flow_out": false}]',
    '[{"ph": "X", "ts": 1, "dur": 1, "bind_id": 3, "bind_id": "0x3", "flow_in": true}]',
    '[{"ph": "X", "ts": 1, "dur": 1, "bind_id": "a\\u0062", "flow_in": "true", "flow_out": 1}]',
    '[{"ph": "X", "ts": 1, "dur": 1, "bind_id": -4, "flow_in": null, "flow_out": [true]}]',
])
def test_duplicate_and_odd_values_agree(doc: str) -> None:
    ref = decode_python(Source(doc.encode()))
    want = json.loads(doc)[0]  # json keeps the last duplicate, like both decoders
    assert ref.flow_dir[0] == (FLOW_IN if want.get("flow_in") is True else 0) \
        | (FLOW_OUT if want.get("flow_out") is True else 0)
    if _native.available():
        got = chrome_native.decode_chrome(Source(doc.encode()), chunk_size=3)
        assert got is not None and normalized(got) == normalized(ref)


def test_bind_id_of_other_types_is_left_to_python() -> None:
    doc = b'[{"ph": "X", "ts": 1, "dur": 1, "bind_id": 1.5, "flow_out": true}]'
    ref = decode_python(Source(doc))
    assert ref.tokens[ref.bind_code[0]] == "j:1.5"
    if _native.available():
        assert chrome_native.decode_chrome(Source(doc)) is None
