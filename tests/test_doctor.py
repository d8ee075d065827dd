"""``profview doctor`` / ``python -m jupyter_profview doctor``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from jupyter_profview import EXAMPLES, _native
from jupyter_profview.cli import main


def doctor(env: dict[str, str] | None = None) -> str:
    proc = subprocess.run([sys.executable, "-m", "jupyter_profview", "doctor"], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def line(report: str, label: str) -> str:
    rows = [r for r in report.splitlines() if r.startswith(label + "  ")]
    assert len(rows) == 1, report
    return rows[0]


def test_doctor_reports_versions_decoder_bundle_and_examples() -> None:
    from importlib.metadata import version

    from jupyter_profview.widget.widget import _ESM_PATH

    report = doctor({"PROFVIEW_NATIVE": "1"})
    assert version("numpy") in line(report, "numpy")
    assert version("pandas") in line(report, "pandas")
    assert sys.version.split()[0] in line(report, "python")
    decoder = line(report, "decoder")
    if _native._load() is not None:
        assert "native C scanner" in decoder and f"ABI {_native.ABI_VERSION}" in decoder
    else:
        assert "pure Python" in decoder and "hatch_build.py" in decoder
    if _native._load() is not None:
        assert line(doctor({"PROFVIEW_SCAN_THREADS": "1"}), "scan threads").split()[2] == "1"
    bundle = line(report, "front end")
    assert ("present" if _ESM_PATH.is_file() else "MISSING") in bundle
    assert str(EXAMPLES) in line(report, "examples")


def test_doctor_says_why_python_is_used() -> None:
    decoder = line(doctor({"PROFVIEW_NATIVE": "0"}), "decoder")
    assert "pure Python" in decoder and "PROFVIEW_NATIVE=0" in decoder


def test_doctor_through_the_cli_entry_point(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor"]) == 0
    assert "decoder" in capsys.readouterr().out
