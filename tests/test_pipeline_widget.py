"""The per-stage selection of a pipeline run in the all-ranks widget (`widget.pipeline`)."""

from __future__ import annotations

import pandas as pd
import pytest
from pipeline_walk import DATA

import jupyter_profview as profview
from jupyter_profview.analysis import pipeline_bubbles
from jupyter_profview.widget.pipeline import highlight_stage

pytest.importorskip("anywidget")


def test_a_stage_highlights_its_actions_on_its_rank(tmp_path) -> None:
    ts = profview.load_many(DATA / "interleaved", cache=tmp_path / "cache", progress=False)
    pp = pipeline_bubbles(ts)
    w = profview.show(ts)
    rows = highlight_stage(w, pp, 1)
    # stage 1 lives on rank 1: its 2 steps x (4 F + 4 B + sends + receives) ranges, read back by name
    want = pp.actions[pp.actions["stage"] == 1]
    assert len(rows) == len(want) > 0
    assert set(rows["rank"]) == {1}
    pairs = zip(want["kind"], want["microbatch"], strict=True)
    labels = (f"PP:1{k}{'' if pd.isna(m) else m}" for k, m in pairs)
    assert sorted(rows["name"].astype(str)) == sorted(labels)
    forward = highlight_stage(w, pp, 2, step="ProfilerStep#3", kinds=("F",), zoom=False)
    assert sorted(forward["name"].astype(str)) == [f"PP:2F{m}" for m in range(4)]
    assert set(forward["rank"]) == {0}
