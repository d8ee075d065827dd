"""The stage lanes panel (`widget/stage_lanes.py`) on the recorded runs: every number of its table,
every action and every shaded bubble equal the independent walk of the JSON (`pipeline_walk`);
a stage row selects exactly that stage's actions, an action its stage."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pipeline_walk import DATA, walk

import jupyter_profview as profview
from jupyter_profview.analysis import pipeline_bubbles
from jupyter_profview.palette import PIPELINE_BUBBLE_COLOR, PIPELINE_COLORS, PIPELINE_KIND_GROUP

pytest.importorskip("anywidget")


def walks(run: str) -> dict[int, dict]:
    return {w["rank"]: w for w in (walk(p) for p in sorted((DATA / run).glob("rank-*.json.gz")))}


@pytest.fixture(scope="module")
def opened(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = {}
    for run in ("interleaved", "gpipe"):
        w = profview.show(profview.load_many(DATA / run, cache=tmp_path_factory.mktemp(run), progress=False,
                                             workers=1))
        traits = w.session.open_panel({"panel": "stage_lanes", "show": True})
        out[run] = (w, traits)
    return out


@pytest.mark.parametrize("run", ["interleaved", "gpipe"])
def test_the_table_and_the_lanes_equal_the_walk(opened: dict[str, Any], run: str) -> None:
    w, traits = opened[run]
    assert traits["_panel_status"]["error"] == ""
    value = traits["_stage_lanes"]
    walked = walks(run)
    # the table: per stage, over the profiled steps, the walk's compute and its rank's steps minus it
    want: dict[int, tuple[int, int, int]] = {}
    for wk in walked.values():
        for st in wk["steps"].values():
            for stage, compute in st["stages"].items():
                c, d, n = want.get(stage, (0, 0, 0))
                want[stage] = (c + compute, d + st["dur"], n)
        for a in wk["actions"]:
            c, d, n = want[a[0]]
            want[a[0]] = (c, d, n + 1)
    got = {s["stage"]: (s["compute"], s["dur"], s["actions"]) for s in value["stages"]}
    assert got == want
    for s in value["stages"]:
        assert s["bubble"] == s["dur"] - s["compute"]
        assert s["share"] == pytest.approx((s["dur"] - s["compute"]) / s["dur"])
        # the shaded bubbles: exactly the walk's, step by step (relative to the step's start)
        rank = walked[s["rank"]]
        origin = value["origin"]
        steps = [x for x in value["steps"] if x["rank"] == s["rank"]]
        shaded = [(a + origin, b + origin) for a, b in s["bubbles"]]
        for step in steps:
            st = rank["steps"][step["step"]]
            s0 = step["start"] + origin
            mine = [(a - s0, b - s0) for a, b in shaded if s0 <= a < step["end"] + origin]
            assert mine == [(a - st["start"], b - st["start"]) for a, b in st["bubbles"][s["stage"]]]
            assert step["end"] - step["start"] == st["dur"]
    # the actions: the walk's, with their microbatch, kind and colour group
    acts = value["actions"]
    drawn = Counter(zip(acts["stage"], acts["kind"], acts["microbatch"], strict=True))
    walked_actions = Counter((a[0], a[1], -1 if a[2] is None else a[2]) for wk in walked.values()
                             for a in wk["actions"])
    assert drawn == walked_actions
    assert acts["group"] == [PIPELINE_KIND_GROUP[k] for k in acts["kind"]]
    # the legend: every group drawn and the bubble, in the palette's colours, nothing else
    assert [g["group"] for g in value["groups"]] == [g for g in PIPELINE_COLORS if g in set(acts["group"])] \
        + ["bubble"]
    assert {g["color"] for g in value["groups"]} == {PIPELINE_COLORS[g] for g in acts["group"]} \
        | {PIPELINE_BUBBLE_COLOR}
    # each action's view id is that event, with that name and time
    events = w.trace.events.loc[acts["id"]]
    assert (events["start"].to_numpy(np.int64) - value["origin"] == np.asarray(acts["start"])).all()


def test_a_row_selects_its_stage_and_an_action_its_row(opened: dict[str, Any]) -> None:
    w, traits = opened["interleaved"]
    walked = walks("interleaved")
    for stage in (0, 1, 2, 3):
        out = w.session.apply({"_stage_pick": {"stage": stage, "token": stage}})
        n = sum(1 for wk in walked.values() for a in wk["actions"] if a[0] == stage)
        assert out["_kernel_selection"]["count"] == n == len(w.session.selected) > 0
        assert out["_stage_lanes"]["selected"] == stage
        names = w.trace.events["name"].to_numpy()[w.session.selected].astype(str)
        assert all(name.startswith(f"PP:{stage}") for name in names)
    acts = traits["_stage_lanes"]["actions"]
    k = acts["stage"].index(2)
    out = w.session.apply({"_stage_pick": {"action": k, "token": 9}})
    assert out["_stage_lanes"]["selected"] == 2 and out["_kernel_selection"]["count"] == 1


def test_the_button_only_on_a_labelled_pipeline(tmp_path: Path) -> None:
    ts = profview.load_many(DATA / "1f1b", cache=tmp_path / "c", progress=False, workers=1)
    w = profview.show(ts)
    assert w.session.panels["stage_lanes"].state()["_stage_lanes"] == {"available": False}
    out = w.session.open_panel({"panel": "stage_lanes", "show": True})
    assert "names no pipeline actions" in out["_panel_status"]["error"]
    flat = profview.show(profview.load(Path(profview.__file__).parent / "examples" / "torch_memory"
                                       / "mlp_adam.trace.json.gz"))
    assert flat.session.panels["stage_lanes"].state()["_stage_lanes"] == {"available": False}


def test_stage_runs_are_the_stage_compute(tmp_path: Path) -> None:
    pp = pipeline_bubbles(profview.load_many(DATA / "interleaved", cache=tmp_path / "c", progress=False,
                                             workers=1))
    for row in pp.stages.itertuples():
        lo, hi = pp.stage_runs(int(row.stage))
        step = pp.ranks[(pp.ranks["step"] == row.step) & (pp.ranks["rank"] == row.rank)].iloc[0]
        inside = np.clip(np.minimum(hi, step.start + step.dur) - np.maximum(lo, step.start), 0, None).sum()
        assert inside == row.compute
