"""`attribute(..., merge_steps=True)` and the widget's icicle: the instances of a numbered annotation
(`ProfilerStep#N`) are one node, so "which part of my step costs most" is one tree."""

from __future__ import annotations

import gzip
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

import jupyter_profview as profview
from jupyter_profview.analysis import attribute

DATA = Path(__file__).parent / "data"
TRACES = [DATA / "hta" / "nccl_parser_config_nccl_data.json.gz", DATA / "torch_modules.json.gz",
          DATA / "advice_rules.json"]


def steps_in_file(path: Path) -> list[int]:
    """Durations (ns) of the CPU-side ProfilerStep#N annotations, from the JSON."""
    raw = path.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    return [int(Decimal(str(e["dur"])) * 1000) for e in doc["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") == "user_annotation"
            and re.fullmatch(r"ProfilerStep#\d+", e["name"])]


@pytest.mark.parametrize("path", TRACES, ids=[p.name for p in TRACES])
def test_steps_are_one_node(path: Path) -> None:
    trace = profview.load(path)
    apart = attribute(trace, "annotation")
    merged = attribute(trace, "annotation", merge_steps=True)
    durs = steps_in_file(path)
    assert len(durs) >= 2
    step = merged[merged["path"] == "ProfilerStep"].iloc[0]
    assert int(step["count"]) == len(durs)
    assert int(step["cpu_total"]) == sum(durs)
    numbered = apart[apart["path"].str.fullmatch(r"ProfilerStep#\d+")]
    assert int(step["gpu_total"]) == int(numbered["gpu_total"].sum())
    # every row below a step is the sum of the same path under each numbered step
    under = apart[apart["path"].str.match(r"ProfilerStep#\d+ / ")].assign(
        key=lambda f: f["path"].str.replace(r"^ProfilerStep#\d+", "ProfilerStep", regex=True))
    sums = under.groupby("key")[["count", "gpu_total", "cpu_total"]].sum()
    got = merged.set_index("path").loc[sums.index, ["count", "gpu_total", "cpu_total"]]
    assert (got.to_numpy() == sums.to_numpy()).all()
    # nothing else changes: the roots still add up to the trace's device time
    assert int(merged.loc[merged["parent"] < 0, "gpu_total"].sum()) == int(trace.launches["kernel_dur"].sum())


def test_the_widgets_icicle_merges_steps_by_default() -> None:
    w = profview.show(DATA / "torch_modules.json.gz", icicle="annotation")
    assert "ProfilerStep" in set(w.icicle["name"])
    assert not w.icicle["name"].str.fullmatch(r"ProfilerStep#\d+").any()
    w.show_icicle("annotation", merge_steps=False)
    steps = steps_in_file(DATA / "torch_modules.json.gz")
    assert w.icicle["name"].str.fullmatch(r"ProfilerStep#\d+").sum() == len(steps)
