"""The native fast paths (``jupyter_profview/_native``) against the pure-Python
references: the Chrome scanner vs ``chrome_decode.decode_python`` and the C
``nest`` vs ``nesting.nest_python``.

Contract checked for the scanner, on any input:

* the reference decodes it  -> native gives identical columns, or None
  ("left to Python"; for the fixtures and the supported-only generated
  traces None is a failure);
* the reference raises ProfviewError -> native raises ProfviewError or
  returns None;
* never another exception type, never a crash.

Without the built library every test here is skipped with the reason.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from jupyter_profview import _native
from jupyter_profview.errors import ProfviewError
from jupyter_profview.formats import chrome as chrome_trace
from jupyter_profview.formats.chrome import native as chrome_native
from jupyter_profview.formats.chrome.columns import NUMERIC_ARGS, VALUE_ARGS, ChromeColumns
from jupyter_profview.formats.chrome.decode import decode_python, normalized
from jupyter_profview.nesting import nest_python
from jupyter_profview.sources import Source

pytestmark = pytest.mark.skipif(
    _native._load() is None,
    reason=f"native library not built ({_native.LIBRARY.name} missing or stale): run `python hatch_build.py`",
)

DATA = Path(__file__).parent / "data"
CHUNK_SIZES = (1, 2, 3, 5, 7, 64, 4096, 1 << 24)

CODE_ARRAYS = ("ph", "name_code", "cat_code", "pid_code", "tid_code", "id_code", "ts_ns", "dur_ns", "bp",
               "bind_code", "flow_dir")


def chrome_fixtures() -> list[Path]:
    files = sorted([*DATA.glob("*.json"), *DATA.glob("*.json.gz")])
    return [f for f in files if chrome_trace.sniff(Source(f).head())]


def native(data: bytes | Path, chunk_size: int = _native.CHUNK_SIZE) -> ChromeColumns | None:
    return chrome_native.decode_chrome(Source(data), chunk_size=chunk_size)


def assert_same(ref: ChromeColumns, got: ChromeColumns) -> None:
    """Identical columns: codes, dictionaries, times, args, numeric args."""
    assert got.n == ref.n
    for name in CODE_ARRAYS:
        a, b = getattr(ref, name), getattr(got, name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(b, a, err_msg=name)
    assert got.names == ref.names
    assert got.cats == ref.cats
    assert got.tokens == ref.tokens
    np.testing.assert_array_equal(got.args_offset < 0, ref.args_offset < 0)
    assert got.args_offset.dtype == np.int64 and got.args_length.dtype == np.int32
    assert normalized(got) == normalized(ref)  # parsed args, strings, top level ...
    assert list(got.numeric_args) == list(NUMERIC_ARGS)
    for key in NUMERIC_ARGS:
        a, b = ref.numeric_args[key], got.numeric_args[key]
        assert b.values.dtype == np.float64 and b.n == a.n == ref.n
        np.testing.assert_array_equal(b.index, a.index, err_msg=key)
        np.testing.assert_array_equal(b.values, a.values, err_msg=key)
    assert list(got.value_args) == list(VALUE_ARGS)
    for key in VALUE_ARGS:  # the same rows (their values: `normalized`)
        a_, b_ = ref.value_args[key], got.value_args[key]
        np.testing.assert_array_equal(b_.index, a_.index, err_msg=key)
    assert got.top_level == ref.top_level
    assert got.array_format == ref.array_format


def check(data: bytes, chunk_sizes: tuple[int, ...] = (1 << 24,), *, supported: bool = False) -> None:
    """The contract of the module docstring for one input."""
    try:
        ref: ChromeColumns | Exception = decode_python(Source(data))
    except ProfviewError as exc:
        ref = exc
    for size in chunk_sizes:
        try:
            got = native(data, size)
        except ProfviewError as exc:
            assert isinstance(ref, Exception), f"native error {exc} but Python decodes (chunk {size})"
            assert exc.position and exc.position.startswith(("byte ", "gzip header", "after "))
            continue
        if got is None:
            assert not (supported and isinstance(ref, ChromeColumns)), \
                f"native left a supported input to Python (chunk {size})"
            continue
        assert isinstance(ref, ChromeColumns), f"native decodes but Python raises {ref!r} (chunk {size})"
        assert_same(ref, got)


# -- fixtures -----------------------------------------------------------------------------


def test_fixtures_found() -> None:
    assert chrome_fixtures(), "no Chrome fixtures in tests/data"


@pytest.mark.parametrize("path", chrome_fixtures(), ids=lambda p: p.name)
def test_fixture_matches_python(path: Path) -> None:
    ref = decode_python(Source(path))
    for size in (1, 7, 4096, 1 << 24):
        got = native(path, size)
        assert got is not None, f"native left {path.name} to Python"
        assert_same(ref, got)


def test_fixture_loads_natively() -> None:
    path = DATA / "torch_mlp_train.json"
    if not path.exists():
        pytest.skip("torch_mlp_train.json fixture absent")
    columns, decoder = chrome_trace.decode(Source(path))
    assert decoder == "native"


# -- hand-written cases ---------------------------------------------------------------------

SMALL_TRACE = (
    b'\xef\xbb\xbf{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "A100"}],\n'
    b' "traceEvents": [\n'
    b'  {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": "t\\u00e9", '
    b'"ts": 1234.567, "dur": 10.5, "args": {"External id": 3, "Input Dims": [[32, 1024]], "Bytes": true}},\n'
    b'  {"ph": "s", "id": 5, "pid": 1, "tid": 1, "ts": 1, "bp": "e", "name": "ac2g", "cat": "ac2g"},\n'
    b'  {"ph": "f", "id2": {"local": "0x1"}, "pid": 1, "tid": 1, "ts": 1e3, "s": "t", '
    b'"name": "a\\u0063\\n2g", "cat": "a\\u0063\\n2g"},\n'
    b'  {"tid": 7, "pid": 8, "name": "ac2g", "id2": {"global": 12}, "ts": "  999.5 ", "ph": "\\u0058"},\n'
    b'  {"ph": "i", "s": "g", "name": "[memory]", "ts": 5, "args": {"Bytes": -512, "Addr": 140234567890123,'
    b' "Total Allocated": 1.5e9, "Device Id": 0, "Device Type": 1, "Bytes": 1024}},\n'
    b'  {"ph": "\xc3\xa9", "bp": "\xf0\x9f\x98\x80", "s": "pp", "name": "\\ud83d\\ude00 \xe2\x82\xac", '
    b'"args": null, "args": [1, {"a": "b"}]},\n'
    b'  {}, {"ph": "M", "name": "x", "name": "y", "args": {"name": "t\\"q\\\\"}},\n'
    b'  {"ph":"X","ts":-0.0005,"dur":0.0005,"pid":-3,"tid":0,"id":7,"id2":{"local":1}}\n'
    b' ], "displayTimeUnit": "ms", "k\\u00e9y": {"nested": [1, 2.5, null, true]}}'
)


@pytest.mark.parametrize("size", CHUNK_SIZES)
def test_small_trace(size: int) -> None:
    check(SMALL_TRACE, (size,), supported=True)
    got = native(SMALL_TRACE, size)
    assert got is not None
    assert got.names[:2] == ["aten::linear", "ac2g"]
    assert "\U0001f600 \u20ac" in got.names
    assert got.tokens[:4] == ["1", "s:t\u00e9", "5", "id2l:s:0x1"]
    assert got.ts_ns[:4].tolist() == [1234567, 1000, 1000000, 999500]
    assert got.numeric_args["Bytes"].dense()[4] == 1024.0
    assert got.top_level["k\u00e9y"] == {"nested": [1, 2.5, None, True]}


def test_gzip_source() -> None:
    check(gzip.compress(SMALL_TRACE), (3, 1 << 20), supported=True)


@pytest.mark.parametrize(
    "data",
    [
        b'[{"ph": "X", "ts": 1, "dur": 2}',
        b'[{"ph": "X", "ts": 1, "dur": 2},',
        b'[{"ph": "X", "ts": 1, "dur": 2}, \n ',
        b'[{"ph": "X", "ts": 1, "dur": 2}]',
        b"[",
        b"[]",
        b' [ {} , {"ph":"B"} ] \n',
        b'{"traceEvents": []}',
        b'{"traceEvents": [], "otherData": {"a": 1}, "x": "y"}',
    ],
)
def test_array_and_object_forms(data: bytes) -> None:
    check(data, (1, 1 << 20), supported=True)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"   ",
        b"[{",
        b'[{"ph": "X"',
        b'[{"ph": "X", "ts": 1',
        b'[{"ph": "X"},]',
        b'[{"ph": "X"}]x',
        b'{"traceEvents": [{"ph": "X"}]',
        b'{"traceEvents": [{"ph": "X"}],}',
        b'{"traceEvents": [{"ph": "X",}]}',
        b'{"traceEvents": [{"ph": "X"} {"ph": "X"}]}',
        b'{"traceEvents": [{"ph": "X", "ts": 01}]}',
        b'{"traceEvents": [{"ph": "X", "ts": 1.}]}',
        b'{"traceEvents": [{"ph": "X", "ts": -}]}',
        b'{"traceEvents": [{"ph": "X", "args": {"a": tru}}]}',
        b'{"traceEvents": [{"ph": "X\x01"}]}',
        b'{"traceEvents": [{"ph": "\\x"}]}',
        b'{"traceEvents": [{"ph": "\\u12G4"}]}',
        b'{"traceEvents": [{"ph": "\xff"}]}',
        b'{"traceEvents": [{"ph": "\xed\xa0\x80"}]}',
        b'{"traceEvents": [{"ph": "\xc3"}]}',
        b'{"traceEvents": [{"name": NaN}]}',
        b'{"traceEvents": [{"ts": Infinity}]}',
        b"\xef\xbb",
        b"\xef\xbb\xbf\xef\xbb\xbf{}",
        b' \xef\xbb\xbf{"traceEvents": []}',
    ],
)
def test_invalid_json(data: bytes) -> None:
    for size in (1, 3, 1 << 20):
        with pytest.raises(ProfviewError):
            got = native(data, size)
            if got is None:  # left to Python: then Python must reject it
                decode_python(Source(data))


@pytest.mark.parametrize(
    "data",
    [
        b'{"traceEvents": [{"pid": 1.5}]}',
        b'{"traceEvents": [{"pid": true}]}',
        b'{"traceEvents": [{"tid": null}]}',
        b'{"traceEvents": [{"id": [1]}]}',
        b'{"traceEvents": [{"name": 5}]}',
        b'{"traceEvents": [{"cat": ["a"]}]}',
        b'{"traceEvents": [{"id2": 5}]}',
        b'{"traceEvents": [{"id2": {"local": 1, "global": 2}}]}',
        b'{"traceEvents": [{"ts": "abc"}]}',
        b'{"traceEvents": [{"ts": null}]}',
        b'{"traceEvents": [{"ts": 1e999}]}',
        b'{"traceEvents": [{"ts": 99999999999999999999}]}',
        b'{"traceEvents": [{"name": "\\ud800"}]}',
        b'{"traceEvents": [1, 2]}',
        b'{"traceEvents": {}}',
        b'{"other": 1}',
        b'{"traceEvents": [], "traceEvents": []}',
    ],
)
def test_left_to_python_or_same(data: bytes) -> None:
    """Inputs the scanner may hand over to Python: whatever happens, the
    contract holds (same columns, or None, or both raise)."""
    check(data, (1, 1 << 20))


def test_error_position_is_a_byte_offset() -> None:
    data = b'{"traceEvents": [{"ph": "X", "ts": 1}, {"ph": "X" "ts": 2}]}'
    with pytest.raises(ProfviewError) as info:
        native(data, 5)
    offset = data.index(b'"ts": 2')
    assert info.value.position == f"byte {offset}"
    assert info.value.expected


def _near(pos: int, rng: random.Random) -> int:
    """A chunk size whose first boundary falls just before ``pos``, so the
    scanner carries the unit holding ``pos`` over a feed (as tiny chunks
    everywhere would, at a fraction of the cost)."""
    return max(1, pos - rng.randint(0, 64))


def test_truncated_generated_trace() -> None:
    """Cuts right after each kind of byte (structural characters, string
    bodies, escapes, digits, exponents, whitespace), three places each."""
    data = _generated_trace(300)
    rng = random.Random(1)
    cuts: set[int] = set()
    for byte in set(data):
        places = [i + 1 for i in range(len(data) - 1) if data[i] == byte]
        cuts.update(rng.sample(places, min(3, len(places))))
    cuts.update(rng.sample(range(1, len(data) - 1), 20))
    for cut in sorted(cuts):
        check(data[:cut], (_near(cut, rng), 1 << 20))


def test_corrupted_generated_trace() -> None:
    data = _generated_trace(200)
    rng = random.Random(2)
    for _ in range(150):
        buf = bytearray(data)
        spots = [rng.randrange(len(buf)) for _ in range(rng.randint(1, 3))]
        for spot in spots:
            buf[spot] = rng.choice(b'{}[]",:\\ 0a\x00\xff\xc3-.eE')
        check(bytes(buf), (_near(min(spots), rng), 1 << 20))


def _generated_trace(events: int) -> bytes:
    import importlib.util
    import io

    path = Path(__file__).parents[1] / "benchmarks" / "make_pytorch_trace.py"
    spec = importlib.util.spec_from_file_location("make_pytorch_trace", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = io.StringIO()
    module.generate(out, events, seed=3)
    return out.getvalue().encode()


def test_generated_pytorch_trace() -> None:
    data = _generated_trace(3000)
    check(data, (997, 1 << 20), supported=True)


# -- hypothesis: random traces serialised with odd whitespace and escapes ---------------------

WS = st.sampled_from(["", "", " ", "\n", "\t", "\r\n", "  \n    "])
TEXT = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.sampled_from('"\\/\n\t\x00\x1f\x7f\u00e9\u20ac\U0001f600\u2028'),
        st.characters(codec="utf-8", exclude_categories=["Cs"]),
    ),
    max_size=12,
)


@st.composite
def json_string(draw: st.DrawFn, text: str | None = None) -> str:
    """A JSON string literal for ``text`` with randomly chosen escapes."""
    if text is None:
        text = draw(TEXT)
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif code < 0x20:
            out.append(draw(st.sampled_from([f"\\u{code:04x}", json.dumps(ch)[1:-1]])))
        elif draw(st.integers(0, 9)) == 0:  # escape an ordinary character
            if code > 0xFFFF:
                hi, lo = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
                out.append(f"\\u{hi:04X}\\u{lo:04x}")
            else:
                out.append(draw(st.sampled_from([f"\\u{code:04x}", f"\\u{code:04X}"]))
                           if ch != "/" else "\\/")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


@st.composite
def json_number(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return str(draw(st.integers(-(2**63), 2**64 - 1)))
    if kind == 1:
        return repr(draw(st.floats(allow_nan=False, allow_infinity=False)))
    if kind == 2:
        whole = draw(st.integers(0, 10**13))
        sign = "-" if draw(st.booleans()) else ""
        return f"{sign}{whole}.{draw(st.integers(0, 999999)):0{draw(st.integers(1, 6))}d}"
    if kind == 3:
        mant = draw(st.integers(-(10**17), 10**17))
        e, sign = draw(st.sampled_from(["e", "E"])), draw(st.sampled_from(["", "+", "-"]))
        return f"{mant}{e}{sign}{draw(st.integers(0, 40))}"
    if kind == 4:
        return f"0.{'0' * draw(st.integers(0, 25))}{draw(st.integers(1, 10**20))}"
    return draw(st.sampled_from(["0", "-0", "0.0", "-0.0", "1e0", "2.5", "0.0005", "1.0005", "-1.5", "1e-7"]))


@st.composite
def json_value(draw: st.DrawFn, depth: int = 0) -> str:
    kind = draw(st.integers(0, 6 if depth < 3 else 3))
    if kind == 0:
        return draw(json_number())
    if kind == 1:
        return draw(json_string())
    if kind == 2:
        return draw(st.sampled_from(["true", "false", "null"]))
    if kind == 3:
        return draw(json_number())
    if kind in (4, 5):
        keys = draw(st.lists(st.one_of(st.sampled_from(NUMERIC_ARGS), st.sampled_from(VALUE_ARGS), TEXT),
                             max_size=5))
        return json_object(draw, [(k, draw(json_value(depth + 1))) for k in keys])
    items = draw(st.lists(json_value(depth + 1), max_size=4))
    return "[" + ",".join(draw(WS) + v + draw(WS) for v in items) + "]"


def json_object(draw: st.DrawFn, members: list[tuple[str, str]]) -> str:
    if not members:
        return "{" + draw(WS) + "}"
    parts = [draw(WS) + draw(json_string(k)) + draw(WS) + ":" + draw(WS) + v + draw(WS) for k, v in members]
    return "{" + ",".join(parts) + "}"


@st.composite
def token_value(draw: st.DrawFn, supported: bool) -> str:
    if supported or draw(st.integers(0, 9)):
        return draw(st.one_of(st.integers(-(2**63), 2**64 - 1).map(str), json_string()))
    return draw(st.sampled_from(["1.5", "true", "null", "[1]", '{"a": 1}', "-0", "1e2"]))


@st.composite
def event(draw: st.DrawFn, supported: bool) -> str:
    members: list[tuple[str, str]] = []
    keys = draw(st.lists(st.sampled_from(
        ["ph", "name", "cat", "pid", "tid", "id", "id2", "ts", "dur", "bp", "s", "args", "args", "tts",
         "cname", "other", "bind_id", "flow_in", "flow_out"]), max_size=10))
    for key in keys:
        if key in ("ph", "bp", "s"):
            short = draw(st.sampled_from(["X", "B", "e", "t", "", "XY", "\u00e9", "\n"]))
            value = draw(st.one_of(json_string(short), json_value(2)))
        elif key in ("name", "cat"):
            value = draw(json_string()) if supported or draw(st.integers(0, 9)) else draw(json_value(2))
        elif key in ("pid", "tid", "id", "bind_id"):
            value = draw(token_value(supported))
        elif key in ("flow_in", "flow_out"):
            value = draw(st.sampled_from(["true", "false", "1", '"true"', "null"]))
        elif key == "id2":
            inner = draw(token_value(supported))
            which = draw(st.sampled_from(["local", "global"] if supported else ["local", "global", "other"]))
            value = json_object(draw, [(which, inner)])
        elif key in ("ts", "dur"):
            if supported or draw(st.integers(0, 9)):
                value = draw(json_number())
                if draw(st.integers(0, 9)) == 0 and "e" not in value.lower():
                    value = '"' + draw(st.sampled_from(["", " "])) + value + '"'
            else:
                value = draw(st.sampled_from(['"x"', "null", "true", "[]"]))
        elif key == "args":
            value = draw(json_value(1))
        else:
            value = draw(json_value(1))
        members.append((key, value))
    return json_object(draw, members)


@st.composite
def trace_document(draw: st.DrawFn, supported: bool = True) -> bytes:
    events = draw(st.lists(event(supported), max_size=8))
    body = "[" + ",".join(draw(WS) + e + draw(WS) for e in events) + "]"
    form = draw(st.integers(0, 3))
    if form == 0:  # bare array
        text = body
    elif form == 1 and events:  # bare array, unclosed
        text = body[:-1] + draw(st.sampled_from(["", ",", ", \n"]))
    else:
        key = TEXT.filter(lambda k: k != "traceEvents")
        extra = draw(st.lists(st.tuples(key, json_value(1)), max_size=3))
        members = [*extra[:1], ("traceEvents", body), *extra[1:]]
        text = json_object(draw, members)
    text = draw(WS) + text + draw(WS)
    data = text.encode("utf-8", errors="surrogatepass")
    if draw(st.integers(0, 15)) == 0:
        data = b"\xef\xbb\xbf" + data.lstrip()
    return data


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(trace_document(supported=True), st.sampled_from([1, 2, 3, 5, 7, 13, 1 << 20]))
def test_hypothesis_supported_traces(data: bytes, size: int) -> None:
    check(data, (size,), supported=True)


@SETTINGS
@given(trace_document(supported=False), st.sampled_from([1, 4, 7, 1 << 20]))
def test_hypothesis_any_traces(data: bytes, size: int) -> None:
    check(data, (size,))


@SETTINGS
@given(trace_document(supported=False), st.data())
def test_hypothesis_truncated_or_corrupted(data: bytes, draw: st.DataObject) -> None:
    assume(len(data) > 2)
    if draw.draw(st.booleans()):
        data = data[: draw.draw(st.integers(0, len(data) - 1))]
    else:
        pos = draw.draw(st.integers(0, len(data) - 1))
        data = data[:pos] + draw.draw(st.binary(min_size=1, max_size=3)) + data[pos + 1:]
    check(data, (draw.draw(st.sampled_from([1, 3, 7, 1 << 20])),))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=4))
def test_hypothesis_integers_as_numeric_args(values: list[int]) -> None:
    members = ", ".join(f'"{NUMERIC_ARGS[i % len(NUMERIC_ARGS)]}": {v}' for i, v in enumerate(values))
    check(f'[{{"ph": "X", "args": {{{members}}}}}]'.encode(), supported=True)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15))
def test_hypothesis_times(x: float) -> None:
    for text in (repr(x), f"{x:.3f}", f"{x:.7e}"):
        check(f'[{{"ph": "X", "ts": {text}, "dur": {text}}}]'.encode(), supported=True)


# -- nest ----------------------------------------------------------------------------------------


def sorted_intervals(track: np.ndarray, start: np.ndarray, dur: np.ndarray) -> tuple[np.ndarray, ...]:
    order = np.lexsort((-dur, start, track))
    return track[order], start[order], (start + dur)[order]


def assert_nest_same(track: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
    ref = nest_python(track, start, end)
    got = _native.nest(track, start, end)
    for a, b, name in zip(ref, got, ("depth", "parent", "lane"), strict=True):
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(b, a, err_msg=name)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 60), st.integers(0, 30)), max_size=80))
def test_nest_matches_python(rows: list[tuple[int, int, int]]) -> None:
    arr = np.asarray(rows, np.int64).reshape(-1, 3)
    assert_nest_same(*sorted_intervals(arr[:, 0], arr[:, 1], arr[:, 2]))


def test_nest_random_large() -> None:
    rng = np.random.default_rng(0)
    n = 20000
    track = rng.integers(0, 5, n)
    start = rng.integers(0, 100000, n)
    dur = np.where(rng.random(n) < 0.1, 0, rng.integers(0, 5000, n))
    assert_nest_same(*sorted_intervals(track, start, dur))


def test_nest_edge_cases() -> None:
    empty = np.zeros(0, np.int64)
    assert_nest_same(empty, empty, empty)
    # nested, tie on the end, adjacent, partial overlap -> lane 1, zero durations
    track = np.zeros(7, np.int64)
    start = np.array([0, 0, 10, 10, 15, 20, 20])
    end = np.array([20, 10, 20, 25, 15, 20, 30])
    assert_nest_same(track, start, end)
    depth, parent, lane = _native.nest(track, start, end)
    assert lane.max() >= 1


def test_nest_used_by_builder() -> None:
    from jupyter_profview import builder

    track = np.array([0, 0, 1], np.int64)
    start = np.array([0, 1, 0], np.int64)
    end = np.array([5, 2, 1], np.int64)
    for a, b in zip(builder.nest(track, start, end), nest_python(track, start, end), strict=True):
        np.testing.assert_array_equal(a, b)


def test_env_disables_native(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFVIEW_NATIVE", "0")
    assert not _native.available()
    monkeypatch.setenv("PROFVIEW_NATIVE", "1")
    assert _native.available()


def test_numeric_arg_values() -> None:
    data = (b'[{"ph": "i", "args": {"Bytes": 12, "Addr": 140234567890123, "Total Allocated": 1.25e3, '
            b'"Device Id": "0", "stream": true, "device": null, "correlation": 18446744073709551615}}]')
    got = native(data)
    assert got is not None
    num = {k: v.dense() for k, v in got.numeric_args.items()}
    assert num["Bytes"][0] == 12 and num["Addr"][0] == 140234567890123.0
    assert num["Total Allocated"][0] == 1250.0
    assert np.isnan(num["Device Id"][0]) and np.isnan(num["stream"][0]) and np.isnan(num["device"][0])
    assert num["correlation"][0] == float(2**64 - 1)
    check(data, supported=True)



def test_value_arg_values() -> None:
    """Each value arg's JSON value, whatever its type, the last of duplicated keys, a key written
    with escapes; not a nested one, not from args that are not an object; one table entry per
    distinct value, shared by the rows that have it."""
    data = (b'[{"ph": "X", "args": {"grid": [8, 1, 1], "block": [128,1,1], "dtype": "Float", '
            b'"Input Dims": [[2, 3], []], "pg_name": null, "Group size": 4}},'
            b'{"ph": "X", "args": {"grid": [8,1,1], "gr\\u0069d": [9, 1, 1], "inner": {"dtype": "x"}}},'
            b'{"ph": "X", "args": {"block": {"x": 1}, "Collective name": "allreduce", "grid": 1.5}},'
            b'{"ph": "X", "args": [1, 2]}, {"ph": "X", "args": {"grid": [8,1, 1]}}]')
    check(data, CHUNK_SIZES, supported=True)
    got = native(data)
    assert got is not None
    values = {k: [got.arg_values[c] if c >= 0 else "-" for c in v.dense().tolist()]
              for k, v in got.value_args.items()}
    assert values["grid"] == [[8, 1, 1], [9, 1, 1], 1.5, "-", [8, 1, 1]]
    assert values["block"] == [[128, 1, 1], "-", {"x": 1}, "-", "-"]
    assert values["dtype"] == ["Float", "-", "-", "-", "-"]
    assert values["Input Dims"] == [[[2, 3], []], "-", "-", "-", "-"]
    assert values["pg_name"] == [None, "-", "-", "-", "-"]
    assert values["Collective name"] == ["-", "-", "allreduce", "-", "-"]
    assert got.numeric_args["Group size"].dense()[0] == 4
    # "[8, 1, 1]" and "[8,1, 1]" are two texts of one value: two entries, equal once parsed (the
    # second event's "[8,1,1]", overridden by its duplicate key, is not kept)
    assert sum(v == [8, 1, 1] for v in got.arg_values) == 2


def test_escaped_duplicates_merge_in_every_dictionary() -> None:
    """Raw-distinct entries that decode to the same text ("ac2g" / "a\\u0063\\u0032g")
    are one entry (the plain-dictionary fast paths must not skip the merge)."""
    data = (b'[{"ph":"X","name":"ac2g","cat":"c","pid":1,"tid":"x","ts":1,"dur":1},'
            b'{"ph":"X","name":"a\\u0063\\u0032g","cat":"\\u0063","pid":1,"tid":"\\u0078","ts":2,"dur":1}]')
    check(data, (1, 7, 1 << 24), supported=True)
    got = native(data)
    assert got is not None and got.names == ["ac2g"] and got.cats == ["c"] and got.tokens == ["1", "s:x"]
