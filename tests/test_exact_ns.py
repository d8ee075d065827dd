"""Times are exact nanoseconds from the decimal digits of the JSON (never
through a double), in both Chrome decoders; out-of-range times are errors.

Expected values come from the raw JSON text: the stdlib ``json`` parser with
``parse_float=Decimal`` keeps every digit, and ``Decimal`` does the x1000 and
the rounding (ties to even)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jupyter_profview as profview
from jupyter_profview import _native
from jupyter_profview.errors import ProfviewError
from jupyter_profview.formats.chrome.columns import ABSENT_TIME, ChromeColumns
from jupyter_profview.formats.chrome.decode import decode_python
from jupyter_profview.formats.chrome.native import decode_chrome
from jupyter_profview.sources import Source

DATA = Path(__file__).parent / "data"
FIXTURE = DATA / "chrome_exact_ns.json"  # hand-written: epoch-scale us, fractions, exponents, ties
TORCH = DATA / "torch_mlp_train.json"
REAL = [TORCH, DATA / "torch_mlp_train_adam.json.gz", DATA / "torch_overlap.json.gz"]  # real torch traces

needs_native = pytest.mark.skipif(_native._load() is None, reason="native library not built")


def _decoders() -> list[Any]:
    return [pytest.param(decode_python, id="python"),
            pytest.param(decode_chrome, id="native", marks=needs_native)]


def raw_text(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode()


def expected_ns(path: Path) -> tuple[list[int], list[int]]:
    """ts and dur of every record in ns, from the digits of the file."""
    doc = json.loads(raw_text(path), parse_float=Decimal)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc

    def ns(value: Any) -> int:
        if value is None:
            return ABSENT_TIME
        if isinstance(value, str):
            value = Decimal(value.strip())
        with localcontext(prec=200):  # every digit kept
            return int((Decimal(value) * 1000).to_integral_value(rounding=ROUND_HALF_EVEN))

    return [ns(e.get("ts")) for e in events], [ns(e.get("dur")) for e in events]


def decode(decoder: Any, path: Path) -> ChromeColumns:
    columns = decoder(Source(path))
    assert columns is not None, "the native scanner left the file to Python"
    return columns


@pytest.mark.parametrize("decoder", _decoders())
@pytest.mark.parametrize("path", [FIXTURE, *REAL], ids=lambda p: p.name)
def test_times_are_exact(decoder: Any, path: Path) -> None:
    ts, dur = expected_ns(path)
    columns = decode(decoder, path)
    assert columns.ts_ns.tolist() == ts
    assert columns.dur_ns.tolist() == dur


@pytest.mark.parametrize("path", [FIXTURE, *REAL[:2]], ids=lambda p: p.name)
def test_fixtures_would_catch_rounding_through_a_double(path: Path) -> None:
    """The files hold values where round(float(x) * 1000) is off by 1 ns:
    the test above could fail."""
    doc = json.loads(raw_text(path), parse_float=Decimal)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    ts, _ = expected_ns(path)
    via_double = [round(float(e["ts"]) * 1000) if isinstance(e.get("ts"), Decimal) else t
                  for e, t in zip(events, ts, strict=True)]
    assert sum(a != b for a, b in zip(via_double, ts, strict=True)) > 0


def test_hand_written_values() -> None:
    """A few values spelled out (independent of the Decimal helper above)."""
    ts, dur = expected_ns(FIXTURE)
    assert 4421857470102117 in ts  # "ts": 4421857470102.117
    assert 1700000000123456800 in ts  # 1.7000000001234568e15
    assert 1700000000123457000 in ts and 1700000000123457002 in ts  # ties to even
    assert 1700000000123457001 in ts  # just beyond a tie


@pytest.mark.parametrize("native", [pytest.param(True, marks=needs_native), False], ids=["native", "python"])
def test_child_ending_at_parent_end_does_not_stick_out(native: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFVIEW_NATIVE", "1" if native else "0")
    trace = profview.load(FIXTURE)
    assert trace.metadata["decoder"] == ("native" if native else "python")
    ev = trace.events.set_index("name")
    for parent, child in (("parent", "child ending at its parent's end"),
                          ("epoch parent", "epoch child, exponent form")):
        p, c = ev.loc[parent], ev.loc[child]
        assert c["start"] + c["dur"] == p["start"] + p["dur"]
        assert c["depth"] == p["depth"] + 1


# -- numbers out of range -----------------------------------------------------------------

OVERFLOW = [
    ('{"ph": "X", "ts": 1, "dur": 1e40}', "dur"),
    ('{"ph": "X", "ts": 1e40}', "ts"),
    ('{"ph": "X", "ts": -1E40}', "ts"),
    ('{"ph": "X", "ts": 1e400}', "ts"),
    ('{"ph": "X", "ts": "1e40"}', "ts"),
    ('{"ph": "X", "ts": 9223372036854775.808}', "ts"),
    ('{"ph": "X", "ts": 99999999999999999999999}', "ts"),
    ('{"ph": "X", "ts": 1000000000000000000000000000000000000000}', "ts"),  # 1e39 as digits
    ('{"ph": "X", "ts": 1' + "0" * 400 + '}', "ts"),  # beyond a double: not "invalid JSON"
    ('{"ph": "X", "ts": -1' + "0" * 400 + '}', "ts"),
    ('{"ph": "X", "ts": 0, "dur": 1' + "0" * 400 + '}', "dur"),
    ('{"ph": "X", "ts": 9223372036854776}', "ts"),  # one past INT64_MAX ns
]


@pytest.mark.parametrize("decoder", _decoders())
@pytest.mark.parametrize(("record", "field"), OVERFLOW)
def test_overflow_is_an_error_with_position(decoder: Any, record: str, field: str) -> None:
    data = f'{{"traceEvents": [{{"ph": "X", "ts": 0}}, {record}]}}'.encode()
    with pytest.raises(ProfviewError) as info:
        decoder(Source(data, name="big.json"))
    err = info.value
    assert err.source == "big.json"
    assert err.position and "traceEvents[1]" in err.position
    assert f"'{field}'" in str(err) and "out of range" in str(err)
    assert err.expected == "a time in microseconds within ±292 years"  # one message, both decoders
    if decoder is decode_chrome:
        offset = data.index(record.encode()) + record.index(field) + len(field) + 3
        assert err.position.startswith(f"byte {offset}")


def available_decoders() -> list[Callable[[Source], ChromeColumns | None]]:
    return [decode_python, *([decode_chrome] if _native._load() else [])]


def test_largest_time_in_range() -> None:
    data = b'[{"ph": "X", "ts": 9223372036854775.807, "dur": -9223372036854775.807}]'
    for decoder in available_decoders():
        columns = decoder(Source(data))
        assert columns is not None
        np.testing.assert_array_equal(columns.ts_ns, [2**63 - 1])
        np.testing.assert_array_equal(columns.dur_ns, [-(2**63) + 1])


def test_last_duplicate_key_wins_over_an_out_of_range_one() -> None:
    data = b'[{"ph": "X", "ts": 1e40, "t\\u0073": 2.5}]'
    for decoder in available_decoders():
        columns = decoder(Source(data))
        assert columns is not None and columns.ts_ns.tolist() == [2500]


# -- both decoders, any number ---------------------------------------------------------------------

_digits = st.text("0123456789", min_size=1, max_size=45).map(lambda d: d.lstrip("0") or "0")
NUMBER = st.builds(
    lambda sign, whole, frac, exp: f"{sign}{whole}{frac}{exp}",
    st.sampled_from(["", "-"]), _digits,
    st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=12).map(lambda d: "." + d)),
    st.one_of(st.just(""), st.integers(-30, 30).map(lambda e: f"e{e:+d}"), st.just("E400")),
)


def expected_time(text: str) -> int | None:
    """x1000 ns, ties to even, from the digits (None beyond the int64 range)."""
    with localcontext() as ctx:
        ctx.prec = 600
        ns = (Decimal(text) * 1000).to_integral_value(ROUND_HALF_EVEN)
    return int(ns) if -(2**63) < ns <= 2**63 - 1 else None


@needs_native
@settings(max_examples=400, deadline=None)
@given(NUMBER, st.sampled_from(["ts", "dur"]))
def test_both_decoders_agree_on_any_number(text: str, field: str) -> None:
    """Any JSON number in ``ts`` or ``dur``: both decoders give the same exact ns, or both refuse
    it as out of range with the same message (an integer of 400 digits included)."""
    event = f'{{"ph": "X", "ts": {text if field == "ts" else 0}, "dur": {text if field == "dur" else 0}}}'
    data = f'{{"traceEvents": [{event}]}}'.encode()
    want = expected_time(text)
    outcomes = []
    for decoder in (decode_python, decode_chrome):
        try:
            cols = decoder(Source(data, name="n.json"))
            assert cols is not None
            outcomes.append(int((cols.ts_ns if field == "ts" else cols.dur_ns)[0]))
        except ProfviewError as err:
            outcomes.append((f"'{field}'" in str(err) and "out of range" in str(err), err.expected))
    assert outcomes[0] == outcomes[1], (text, outcomes)
    if want is not None and abs(want) < 2**63 - 1 and want != ABSENT_TIME:
        assert outcomes[0] == want, (text, outcomes)
    elif want is None:
        assert outcomes[0] == (True, "a time in microseconds within ±292 years"), (text, outcomes)
