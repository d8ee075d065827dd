"""`analysis.pipeline_bubbles` against a walk of the recorded JSON written here, apart from the code.

The fixtures (`tests/data/pipeline/<schedule>/rank-<r>.pt.trace.json.gz`) are real runs of
`torch.distributed.pipelining` 2.13 over gloo on CPU (`scripts/record_pipeline.py`): an
interleaved 1F1B with 2 stages per rank and a slow stage 1, GPipe with a slow stage 1, and
1F1B (no labels) with a slow stage 0.  The walk reads each file with the `json` module (times as
decimals, to the ns), finds the thread of the pipeline's ranges, the `ProfilerStep#N` slices on it
and its `cpu_op` slices, and measures unions with its own interval code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from pipeline_walk import DATA, SCHEDULES, walk

import jupyter_profview as profview
from jupyter_profview import ProfviewError
from jupyter_profview.analysis import pipeline_bubbles


@pytest.fixture(scope="module", params=SCHEDULES)
def recorded(request, tmp_path_factory):
    folder = DATA / request.param
    ts = profview.load_many(folder, cache=tmp_path_factory.mktemp("cache"), progress=False)
    walks = {w["rank"]: w for w in (walk(p) for p in sorted(folder.glob("rank-*.pt.trace.json.gz")))}
    return request.param, folder, ts, walks


def test_the_walk_finds_what_each_schedule_records(recorded):
    name, _folder, _ts, walks = recorded
    assert sorted(walks) == [0, 1]
    assert all(len(w["steps"]) == 2 for w in walks.values())
    expect_m = {"interleaved": 4, "gpipe": 4, "1f1b": None}[name]
    assert {w["m"] for w in walks.values()} == {expect_m}


def test_ranks_equal_the_walk(recorded):
    name, _folder, ts, walks = recorded
    result = pipeline_bubbles(ts)
    assert len(result.ranks) == sum(len(w["steps"]) for w in walks.values())
    for row in result.ranks.itertuples(index=False):
        want = walks[row.rank]["steps"][row.step]
        assert (row.dur, row.compute) == (want["dur"], want["compute"]), (name, row)
        assert row.bubble == want["dur"] - want["compute"]
        assert row.share == pytest.approx((want["dur"] - want["compute"]) / want["dur"])
        assert 0 < row.compute < row.dur


def test_stages_and_the_slowest_equal_the_walk(recorded):
    name, _folder, ts, walks = recorded
    result = pipeline_bubbles(ts)
    got = {(r.step, r.rank, r.stage): r.compute for r in result.stages.itertuples(index=False)}
    want = {(step, w["rank"], stage): c for w in walks.values() for step, s in w["steps"].items()
            for stage, c in s["stages"].items()}
    assert got == want
    for row in result.slowest.itertuples(index=False):
        per_step = {k[2]: c for k, c in want.items() if k[0] == row.step}
        assert row.compute == max(per_step.values())
        assert per_step[row.stage] == row.compute
    # the deliberately slow stage (3x the layers) is the slowest in every step
    slow = {"interleaved": 1, "gpipe": 1, "1f1b": 0}[name]
    assert set(result.slowest["stage"]) == {slow}


def test_schedule_shape_and_expected_share(recorded):
    name, _folder, ts, walks = recorded
    result = pipeline_bubbles(ts)
    m = walks[0]["m"]
    v = max(w["v"] for w in walks.values())
    assert (result.microbatches, result.stages_per_rank, result.pipeline_size) == (m, v, 2)
    if m is None:
        assert result.expected_share is None
        assert len(result.actions) == 0
    else:  # (p - 1) / (v m + p - 1): interleaved 1 / 9, GPipe 1 / 5
        assert result.expected_share == pytest.approx({"interleaved": 1 / 9, "gpipe": 1 / 5}[name])
        assert result.expected_share == pytest.approx(1 / (v * m + 1))


def test_one_trace_answers_for_its_rank(recorded):
    _name, folder, ts, walks = recorded
    trace = profview.load(folder / "rank-1.pt.trace.json.gz")
    alone = pipeline_bubbles(trace)
    assert set(alone.ranks["rank"]) == {1}
    for row in alone.ranks.itertuples(index=False):
        assert row.compute == walks[1]["steps"][row.step]["compute"]
    both_ranks = pipeline_bubbles(ts).ranks
    mine = both_ranks[both_ranks["rank"] == 1].reset_index(drop=True)
    assert alone.ranks["dur"].tolist() == mine["dur"].tolist()
    assert alone.pipeline_size == 2  # its distributedInfo's world size


def test_actions_point_at_their_events(recorded):
    name, folder, ts, _walks = recorded
    result = pipeline_bubbles(ts)
    if name == "1f1b":
        return
    trace = ts[0]
    rows = result.actions[result.actions["rank"] == 0]
    names = trace.events.loc[rows["event"].to_numpy(), "name"].astype(str).tolist()
    for n, row in zip(names, rows.itertuples(index=False), strict=True):
        if n.startswith("PP:"):
            assert n == f"PP:{row.stage}{row.kind}{'' if pd.isna(row.microbatch) else row.microbatch}"
        else:
            assert n == f"{'Forward' if row.kind == 'F' else 'Backward'} {row.microbatch}"


# --- a trace written here, every number worked by hand -----------------------------------------
def hand_trace(tmp_path: Path) -> Path:
    """One step of 100 us on thread 1 holding: PP:1F0 [10, 40) with ops [12, 30) and [32, 38);
    PP:1SEND_F0 [40, 50) with c10d::send [41, 49) around an aten::copy_ [42, 44) (inside the
    communication: waiting); an async gloo:send [45, 95) (not waiting); PP:1B0 [60, 90) with an op
    [60, 80) that holds a c10d::recv_ [70, 75); an op on another thread [0, 100) (not the pipeline's)."""
    def x(name: str, cat: str, ts: int, dur: int, tid: int = 1) -> dict:
        return {"ph": "X", "name": name, "cat": cat, "pid": 1, "tid": tid, "ts": ts, "dur": dur}

    ev = [
        x("ProfilerStep#5", "user_annotation", 0, 100),
        x("PP:1F0", "user_annotation", 10, 30),
        x("aten::mm", "cpu_op", 12, 18),
        x("aten::relu", "cpu_op", 32, 6),
        x("PP:1SEND_F0", "user_annotation", 40, 10),
        x("c10d::send", "cpu_op", 41, 8),
        x("aten::copy_", "cpu_op", 42, 2),
        x("gloo:send", "user_annotation", 45, 50),
        x("PP:1B0", "user_annotation", 60, 30),
        x("aten::mm_backward", "cpu_op", 60, 20),
        x("c10d::recv_", "cpu_op", 70, 5),
        x("aten::mm", "cpu_op", 0, 100, tid=2),
    ]
    path = tmp_path / "hand.json"
    path.write_text(json.dumps({"traceEvents": ev, "distributedInfo": {"rank": 1, "world_size": 4}}))
    return path


def test_a_step_worked_by_hand(tmp_path):
    result = pipeline_bubbles(profview.load(hand_trace(tmp_path)))
    # ops of thread 1: [12,30) [32,38) [41,49) [60,80) minus the communication [41,49) [70,75):
    # 18 + 6 + 15 = 39 us of compute in the 100 us step
    row = result.ranks.iloc[0]
    assert (row["step"], row["rank"], row["dur"], row["compute"], row["bubble"]) == \
        ("ProfilerStep#5", 1, 100_000, 39_000, 61_000)
    assert row["share"] == pytest.approx(0.61)
    # stage 1: inside F0 [10,40) 24 us, inside B0 [60,90) 15 us
    assert result.stages[["stage", "actions", "compute"]].values.tolist() == [[1, 2, 39_000]]
    assert result.actions.set_index("kind")["compute"].to_dict() == {"F": 24_000, "SEND_F": 0, "B": 15_000}
    # m = 1 (F0), v = 1, p = 4 (world size): (4 - 1) / (1 * 1 + 4 - 1)
    assert (result.microbatches, result.stages_per_rank, result.pipeline_size) == (1, 1, 4)
    assert result.expected_share == pytest.approx(3 / 4)


def test_without_steps_or_labels(tmp_path):
    path = tmp_path / "plain.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}))
    result = pipeline_bubbles(profview.load(path))
    assert len(result.ranks) == len(result.stages) == len(result.actions) == len(result.slowest) == 0
    assert result.expected_share is None


def test_bad_input_is_a_profview_error():
    with pytest.raises(ProfviewError, match="TraceSet or a Trace"):
        pipeline_bubbles("run/")  # type: ignore[arg-type]
