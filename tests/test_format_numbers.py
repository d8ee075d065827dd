"""The kernel-side number formatters against the fixture shared with vitest (js/test/format.test.ts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_profview.numbers import share_text, tflops_text
from jupyter_profview.widget.numbers import fixed_half_up, format_bytes, format_duration

FIXTURE = json.loads((Path(__file__).parent / "shared_fixtures" / "format_numbers.json")
                     .read_text(encoding="utf-8"))


def _num(v: float | str) -> float:
    return float(v)  # "NaN", "Infinity", "-Infinity" parse too


@pytest.mark.parametrize(("value", "want"), FIXTURE["duration_ns"])
def test_duration_ns(value: float | str, want: str) -> None:
    assert format_duration(_num(value), "ns") == want


@pytest.mark.parametrize(("value", "want"), FIXTURE["duration_step"])
def test_duration_steps(value: float | str, want: str) -> None:
    assert format_duration(_num(value), "step") == want


@pytest.mark.parametrize(("value", "want"), FIXTURE["bytes"])
def test_bytes(value: float | str, want: str) -> None:
    assert format_bytes(_num(value)) == want


@pytest.mark.parametrize(("value", "want"), FIXTURE["tflops"])
def test_tflops(value: float | str, want: str) -> None:
    assert tflops_text(_num(value)) == want


@pytest.mark.parametrize(("value", "want"), FIXTURE["share"])
def test_share(value: float, want: str) -> None:
    assert share_text(value) == want


def test_ties_round_away_from_zero_on_the_decimal_text() -> None:
    assert f"{1.005:.2f}" == "1.00"  # Python's own rounding of the double
    assert fixed_half_up(1.005, 2) == "1.01"
    assert fixed_half_up(-2.5, 0) == "-3"
    assert fixed_half_up(-0.0004, 3) == "0.000"
    assert fixed_half_up(1e-7, 9) == "0.000000100"
    assert fixed_half_up(123456789012, 0) == "123456789012"


def test_numpy_integers_format_like_python_ints() -> None:
    np = pytest.importorskip("numpy")
    assert format_duration(np.int64(400_400)) == "400.4 µs"
    assert format_bytes(np.float32(1536)) == "1.5 KiB"


def test_cli_summary_prints_the_span_with_the_shared_rule(capsys: pytest.CaptureFixture[str]) -> None:
    from jupyter_profview import load
    from jupyter_profview.cli import main

    path = Path(__file__).parent.parent / "jupyter_profview" / "examples" / "torch_mlp_train.json"
    assert main(["summary", str(path), "--top", "3"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.endswith(f"span {format_duration(load(path).duration)}")
    assert head.split("span ")[1].endswith((" ns", " µs", " ms", " s"))
