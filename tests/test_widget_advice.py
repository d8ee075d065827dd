"""The findings panel, kernel side: the `_advice` trait carries `Advice.findings`' numbers, and a
click on a finding (`_advice_pick`, as the front end sets it) highlights and selects exactly its
evidence and zooms into the step that holds the most of it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import jupyter_profview as profview
from jupyter_profview.widget.codec import decode_frame

DATA = Path(__file__).parent / "data"


def test_panel_numbers_are_the_dataframe() -> None:
    w = profview.show(DATA / "advice_rules.json", advice=True)
    f = w.advice.findings
    sent = w._advice["findings"]
    assert [r["rule"] for r in sent] == list(f["rule"])
    assert [r["time"] for r in sent] == [int(t) for t in f["time"]]
    assert [r["share"] for r in sent] == [float(s) for s in f["share"]]
    assert [r["count"] for r in sent] == [int(c) for c in f["count"]]
    assert w._advice["window"] == [0, 46_000_000]


def test_a_click_highlights_exactly_the_evidence() -> None:
    w = profview.show(DATA / "advice_rules.json", advice=True)
    f = w.advice.findings
    k = int(np.flatnonzero(f["rule"].to_numpy() == "tiny_kernels")[0])
    w._advice_pick = {"finding": k, "token": 1}
    evidence = sorted(f["events"].iloc[k])
    assert len(evidence) == 30
    assert sorted(decode_frame(w._highlight).columns["id"].tolist()) == evidence
    assert sorted(w.selection.index.tolist()) == evidence
    # all 30 launches are in ProfilerStep#2 (10-20 ms): the view zooms to the first of them
    first = w.trace.events.loc[evidence].sort_values("start").iloc[0]
    z = w._zoom_request
    assert z["start"] <= first["start"] < first["start"] + first["dur"] <= z["end"]
    assert z["start"] >= 10_000_000 and z["end"] <= 20_000_000


def test_advice_of_all_ranks_maps_to_the_combined_widget() -> None:
    ts = profview.load_many(DATA / "ddp", progress=False)
    w = profview.show(ts, advice=True)
    f = w.advice.findings
    k = int(np.flatnonzero(f["rule"].to_numpy() == "straggler")[0])
    w.pick_finding(k)
    lit = decode_frame(w._highlight).columns["id"]
    assert len(lit) == int(f["count"].iloc[k]) > 0
    names = set(w.trace.events.loc[lit.tolist(), "name"].astype(str))
    assert all(n.startswith("gloo:") for n in names)
