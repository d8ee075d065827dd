"""``Trace.arg_numbers``: one search of the args blob gives what ``trace.args(id).get(key)`` gives
for every event (as float64, NaN where absent or not a number) -- on real files and on the cases
the search must hand to the full parse (a nested object, a bool, a string, an end record's args)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import jupyter_profview as profview

HTA = Path(__file__).parent / "data" / "hta"


def one_by_one(trace: profview.Trace, key: str) -> np.ndarray:
    out = []
    for i in trace.events.index:
        v = trace.args(int(i)).get(key)
        out.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan)
    return np.asarray(out)


@pytest.mark.parametrize("name", ["nccl_parser_config_nccl_data.json.gz",
                                  "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"])
@pytest.mark.parametrize("key", ["Sequence number", "Fwd thread id", "External id", "correlation", "stream"])
def test_equals_args_on_real_traces(name: str, key: str) -> None:
    trace = profview.load(HTA / name)
    got = trace.arg_numbers(trace.events.index.to_numpy(), key)
    want = one_by_one(trace, key)
    assert np.isfinite(want).any() or key == "stream"
    assert np.array_equal(got, want, equal_nan=True)


def test_cases_the_search_hands_to_the_parse() -> None:
    x = {"ph": "X", "pid": 1, "tid": 1, "dur": 1}
    events = [
        {**x, "name": "plain", "ts": 0, "args": {"n": 7, "m": -2.5e3}},
        {**x, "name": "nested", "ts": 1, "args": {"inner": {"n": 99}}},   # not the top-level key
        {**x, "name": "nested and own", "ts": 2, "args": {"inner": {"n": 1}, "n": 3}},
        {**x, "name": "bool", "ts": 3, "args": {"n": True}},
        {**x, "name": "text", "ts": 4, "args": {"n": "5"}},
        {**x, "name": "in a string", "ts": 5, "args": {"s": "\"n\": 4"}},
        {"ph": "B", "pid": 1, "tid": 2, "ts": 6, "name": "begin", "args": {"n": 1}},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 8, "args": {"n": 2}},  # the end's args win
    ]
    trace = profview.load(json.dumps({"traceEvents": events}).encode())
    ids = trace.events.index.to_numpy()
    for key in ("n", "m"):
        assert np.array_equal(trace.arg_numbers(ids, key), one_by_one(trace, key), equal_nan=True)
    by_name = dict(zip(trace.events["name"].astype(str), trace.arg_numbers(ids, "n"), strict=True))
    assert by_name["plain"] == 7 and by_name["nested and own"] == 3 and by_name["begin"] == 2
    assert all(np.isnan(by_name[k]) for k in ("nested", "bool", "text", "in a string"))


# -- value args: Trace.arg_values ----------------------------------------------------------------
ABSENT = object()


def values_one_by_one(trace: profview.Trace, key: str) -> list[object]:
    return [trace.args(int(i)).get(key, ABSENT) for i in trace.events.index]


def as_values(codes: np.ndarray, table: list[object]) -> list[object]:
    return [table[c] if c >= 0 else ABSENT for c in codes.tolist()]


@pytest.mark.parametrize("name", ["nccl_parser_config_nccl_data.json.gz",
                                  "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"])
@pytest.mark.parametrize("key", ["grid", "block", "Input Dims", "Input type", "Collective name",
                                 "Process Group Name", "dtype", "Input Strides"])
def test_values_equal_args_on_real_traces(name: str, key: str) -> None:
    """Every event's value of `key` (one the decoders take out, or `Input Strides`, which is parsed)
    equals `trace.args(id).get(key)`, absent where absent; the table holds distinct values only
    where the decoders made it."""
    trace = profview.load(HTA / name)
    codes, table = trace.arg_values(trace.events.index.to_numpy(), key)
    want = values_one_by_one(trace, key)
    assert as_values(codes, table) == want
    if key in ("grid", "block"):  # the kernels of both files have them
        assert sum(v is not ABSENT for v in want) > 10


def test_values_of_merged_end_records_and_absent_events() -> None:
    """A B/E slice whose end record has args of its own reads them merged (the end's value wins);
    an id of -1 has no value."""
    events = [
        {"ph": "X", "pid": 1, "tid": 1, "ts": 0, "dur": 1, "name": "x", "args": {"grid": [1, 1, 1]}},
        {"ph": "B", "pid": 1, "tid": 2, "ts": 6, "name": "begin", "args": {"grid": [2, 1, 1], "dtype": "a"}},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 8, "args": {"grid": [3, 1, 1]}},
        {"ph": "B", "pid": 1, "tid": 3, "ts": 6, "name": "end without args", "args": {"grid": [4, 1, 1]}},
        {"ph": "E", "pid": 1, "tid": 3, "ts": 8},
    ]
    trace = profview.load(json.dumps({"traceEvents": events}).encode())
    ids = trace.events.index.to_numpy()
    for key in ("grid", "dtype"):
        assert as_values(*trace.arg_values(ids, key)) == values_one_by_one(trace, key)
    grids = as_values(*trace.arg_values(ids, "grid"))
    by_name = dict(zip(trace.events["name"].astype(str), grids, strict=True))
    assert by_name == {"x": [1, 1, 1], "begin": [3, 1, 1], "end without args": [4, 1, 1]}
    codes, _ = trace.arg_values(np.array([-1, int(ids[0])]), "grid")
    assert codes[0] == -1 and codes[1] >= 0


def test_kernel_numbers_are_taken_out_by_the_decoders() -> None:
    """The numbers the kernel and collective analyses read are answered from the decoded columns
    (no args text read) and equal the args."""
    trace = profview.load(HTA / "nccl_parser_config_nccl_data.json.gz")
    ids = trace.events.index.to_numpy()
    for key in ("blocks per SM", "est. achieved occupancy %", "In msg nelems", "Group size"):
        assert key in trace._args.numeric
        got = trace.arg_numbers(ids, key)
        assert np.array_equal(got, one_by_one(trace, key), equal_nan=True)
        assert np.isfinite(got).any()


def test_a_value_text_the_parser_refused_is_read_from_the_args() -> None:
    """The scanner only validates JSON; a distinct value text that Python's parser then refuses
    (`UNPARSED` in the table) is answered by reading those events' args whole, the others from
    the table."""
    from jupyter_profview.formats.chrome.args import _ArgsLookup
    from jupyter_profview.formats.chrome.columns import UNPARSED

    blob = b'{"grid": [1, 1, 1]}{"grid": [3, 1, 1]}'
    none = np.zeros(0, np.int64)
    lookup = _ArgsLookup(blob, np.array([0, 19]), np.array([19, 19], np.int32), none, none, none,
                         value={"grid": (np.array([0, 1]), np.array([0, 1], np.int32))},
                         arg_values=[UNPARSED, [2, 1, 1]])
    codes, table = lookup.values(np.array([0, 1]), "grid")
    assert [table[c] for c in codes] == [[1, 1, 1], [2, 1, 1]]  # event 1: the table's, not the text's
