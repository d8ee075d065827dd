"""`advise` on the recorded pipeline runs: the `pipeline_bubble` finding (numbers from the JSON walk
of `test_pipeline.py`) and the straggler rule not blaming the waiting the schedule causes."""

from __future__ import annotations

from pathlib import Path

import pytest
from pipeline_walk import DATA, walk

import jupyter_profview as profview
from jupyter_profview.numbers import format_duration


def load(name: str, tmp_path: Path) -> profview.TraceSet:
    return profview.load_many(DATA / name, cache=tmp_path / "cache", progress=False)


def walks(name: str) -> dict[int, dict]:
    return {w["rank"]: w for w in (walk(p) for p in sorted((DATA / name).glob("rank-*.pt.trace.json.gz")))}


@pytest.mark.parametrize("name", ["interleaved", "gpipe"])
def test_pipeline_bubble_finding(name: str, tmp_path: Path) -> None:
    advice = profview.advise(load(name, tmp_path))
    found = advice.findings[advice.findings["rule"] == "pipeline_bubble"].sort_values("rank")
    walked = walks(name)
    assert found["rank"].tolist() == [0, 1]
    for row in found.itertuples(index=False):
        steps = walked[row.rank]["steps"].values()
        bubble = sum(s["dur"] - s["compute"] for s in steps)
        assert row.time == bubble
        assert f"waited {format_duration(bubble)} of its 2 steps' " in row.message
        # every stage's mean compute per step, the slow stage 1 first
        per_stage: dict[int, list[int]] = {}
        for w in walked.values():
            for s in w["steps"].values():
                for stage, c in s["stages"].items():
                    per_stage.setdefault(stage, []).append(c)
        means = sorted(((sum(v) / len(v), k) for k, v in per_stage.items()), reverse=True)
        assert means[0][1] == 1
        text = ", ".join(f"stage {k} {format_duration(c)}" for c, k in means)
        assert f"Per step the stages compute: {text}." in row.message
        slow = format_duration(means[0][0])
        assert f"Move layers from stage 1 ({slow} a step) to stage {means[-1][1]}" in row.fix
        # p = 2 ranks, m = 4; v = 2 interleaved, 1 GPipe: (p-1)/(v m + p-1) at m and at 2m
        v = 2 if name == "interleaved" else 1
        now, doubled = 100 / (v * 4 + 1), 100 / (v * 8 + 1)
        assert f"leaves {now:.1f} %" in row.message
        assert f"8 instead of 4 brings the schedule's bubble from {now:.1f} % to {doubled:.1f} %" in row.fix
        assert len(row.events) == sum(1 for _ in row.events) > 0


def test_unlabelled_schedule_has_no_pipeline_finding(tmp_path: Path) -> None:
    advice = profview.advise(load("1f1b", tmp_path))
    assert "pipeline_bubble" not in set(advice.findings["rule"])


def test_one_trace_gets_its_rank_finding() -> None:
    trace = profview.load(DATA / "interleaved" / "rank-1.pt.trace.json.gz")
    found = profview.advise(trace).findings
    row = found[found["rule"] == "pipeline_bubble"].iloc[0]
    steps = walks("interleaved")[1]["steps"].values()
    assert row["time"] == sum(s["dur"] - s["compute"] for s in steps)


@pytest.mark.parametrize("name", ["interleaved", "gpipe", "1f1b"])
def test_straggler_does_not_blame_the_schedule(name: str, tmp_path: Path) -> None:
    """Before the rule left point-to-point calls out, it named rank 1 of the interleaved run a
    straggler, 104.8 ms late: its k-th send matched rank 0's k-th send, a different transfer."""
    ts = load(name, tmp_path)
    assert set(ts.collectives["name"].astype(str)) == {"gloo:send", "gloo:recv"}
    assert "straggler" not in set(profview.advise(ts).findings["rule"])
