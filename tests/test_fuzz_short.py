"""The fuzz campaign of ``benchmarks/fuzz.py`` (issue 25), short: a few hundred hostile inputs
per parser in a subprocess under an address-space limit -- no raw exception, the two Chrome
decoders never disagree, and the process stays small.  The full campaign (100,000 per parser)
and its numbers are in the README."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = 300


def test_short_fuzz_run_of_every_parser(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "fuzz.py"), "--cases", str(CASES), "--seed", "7",
         "--limit-mb", "3000", "--out", str(tmp_path / "failures")],
        capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONPATH": str(ROOT)})
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    parsers = [r for r in rows if "parser" in r]
    failures = {p.name: p.read_text()[-1500:] for p in (tmp_path / "failures").glob("*.txt")}
    assert proc.returncode == 0, (proc.stderr[-3000:], parsers, failures)
    assert {r["parser"] for r in parsers} == {
        "chrome", "xspace", "tf_step_stats", "torch_memory_timeline", "torch_cuda_snapshot",
        "megengine_json", "chainer_graph", "tf_node_order", "tf_node_shapes"}
    for row in parsers:
        assert row["cases"] == CASES and row["raw_exceptions"] == 0 and row["divergences"] == 0, row
        assert row["accepted"] > 0 and row["refused"] > 0, row  # the inputs reach both outcomes
    assert rows[-1]["total"]["peak_rss_mb"] < 1000, rows[-1]
