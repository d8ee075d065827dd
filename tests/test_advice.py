"""`profview.advise`: every rule against an independent walk of the file's JSON
(tests/advice_reference.py), on a hand-written trace that has every problem
(tests/data/make_advice_trace.py) and on HTA's real GPU traces; the cross-rank rule on the
4-rank gloo DDP run whose rank 2 sleeps before its collectives."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path

import pytest
from advice_reference import Walk

import jupyter_profview as profview
from jupyter_profview.analysis import advise
from jupyter_profview.errors import ProfviewError

DATA = Path(__file__).parent / "data"
FIXTURE = DATA / "advice_rules.json"
HTA = sorted((DATA / "hta").glob("*.json.gz"))
SINGLE = ("pageable_memcpy", "host_sync", "dataloader", "tiny_kernels", "step_outliers")


def keys(trace: profview.Trace, ids: list[int]) -> set[tuple[str, int]]:
    base = int(trace.info.base_time_ns or 0)
    ev = trace.events.loc[ids]
    return set(zip(ev["name"].astype(str), (ev["start"] + base).tolist(), strict=True))


def check(path: Path) -> None:
    trace = profview.load(path)
    walk = Walk(path)
    advice = advise(trace)
    base = int(trace.info.base_time_ns or 0)
    assert (advice.window[0] + base, advice.window[1] + base) == walk.window
    span = walk.window[1] - walk.window[0]
    found = advice.findings
    for rule in SINGLE:
        time, evidence = getattr(walk, rule)()
        row = found[found["rule"] == rule]
        emitted = time > 0 and (100 * time / span >= 1 if rule != "step_outliers" else True)
        assert len(row) == int(emitted), (rule, time, row)
        if emitted:
            assert int(row["time"].iloc[0]) == time, rule
            assert keys(trace, list(row["events"].iloc[0])) == evidence, rule
            assert row["share"].iloc[0] == pytest.approx(100 * time / span)
    for rule in ("gpu_idle", "exposed_communication"):
        expected = {t for t in getattr(walk, rule)().values() if 100 * t / span >= 1 and t > 0}
        assert set(found.loc[found["rule"] == rule, "time"].astype(int)) == expected, rule


def test_every_rule_on_the_hand_written_trace() -> None:
    check(FIXTURE)
    advice = advise(profview.load(FIXTURE))
    got = dict(zip(advice.findings["rule"], advice.findings["time"], strict=True))
    # the times stated in tests/data/make_advice_trace.py's docstring, in ns
    assert got == {"gpu_idle": 38_200_000, "step_outliers": 6_000_000, "host_sync": 5_860_000,
                   "fp32_matmul": 3_000_000, "exposed_communication": 2_500_000,
                   "dataloader": 2_000_000, "tiny_kernels": 750_000, "pageable_memcpy": 650_000}
    assert list(advice.findings["time"]) == sorted(advice.findings["time"], reverse=True)
    sev = dict(zip(advice.findings["rule"], advice.findings["severity"], strict=True))
    assert sev["gpu_idle"] == "high" and sev["fp32_matmul"] == "medium" and sev["tiny_kernels"] == "low"
    idle = advice.details[(None, "gpu_idle", advice.findings.loc[0, "device"])]
    assert (idle["idle_sync"], idle["idle_dataloader"]) == (5_860_000, 2_000_000)
    slow = advice.findings[advice.findings["rule"] == "step_outliers"].iloc[0]
    assert "ProfilerStep#4" in slow["message"] and "host_sync" in slow["message"]
    sync = advice.findings[advice.findings["rule"] == "host_sync"].iloc[0]
    assert "aten::_local_scalar_dense" in sync["message"]
    assert advice.skipped.empty
    assert "gpu_idle" in advice.explain().splitlines()[0]


@pytest.mark.parametrize("path", HTA, ids=[p.name[:40] for p in HTA])
def test_every_rule_on_real_gpu_traces(path: Path) -> None:
    check(path)


def test_skipped_rules_say_why() -> None:
    rocm = advise(profview.load(DATA / "hta" / "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"))
    assert "ROCm" in rocm.skipped.set_index("rule").loc["fp32_matmul", "why"]
    bare = advise(profview.load(DATA / "hta" / "trace_compare_base_base.json.gz"))
    assert "deviceProperties" in bare.skipped.set_index("rule").loc["fp32_matmul", "why"]


def test_threshold_and_window(tmp_path: Path) -> None:
    doc = json.loads(FIXTURE.read_text())
    # one step only: the window is that step; the memcpy of step 2 is outside it
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("name") not in
                          ("ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4")]
    path = tmp_path / "one_step.json"
    path.write_text(json.dumps(doc))
    check(path)
    advice = advise(profview.load(path))
    assert advice.window[1] - advice.window[0] == 10_000_000
    assert "pageable_memcpy" not in set(advice.findings["rule"])  # 50 µs of a 10 ms window < 1 %
    whole = advise(profview.load(path), annotation=None)
    assert whole.window[1] - whole.window[0] == 45_000_000  # first start to last end


def test_cpu_and_graph_traces_give_no_error() -> None:
    for name in ("torch_mlp_train.json", "tf_timeline.json"):
        advice = advise(profview.load(DATA / name))
        assert set(advice.findings.columns) >= {"rule", "severity", "time", "share", "count", "events",
                                                "device", "message", "fix"}
    with pytest.raises(ProfviewError):
        advise(profview.load(DATA / "hta" / "trace_compare_base_base.json.gz"), rank=1)


def _ddp_walk() -> tuple[int, int, set[tuple[int, str, int]]]:
    """Rank 2's straggler time over the k-th gloo:* call of each name across the 4 ranks, from
    the JSON: sum of max(0, its start - the latest start of the others), and its late calls."""
    starts: dict[tuple[str, int], dict[int, int]] = {}
    for r in range(4):
        doc = json.loads(gzip.decompress((DATA / "ddp" / f"rank-{r}.pt.trace.json.gz").read_bytes()))
        seen: dict[str, int] = {}
        calls = sorted((e for e in doc["traceEvents"]
                        if e.get("ph") == "X" and e["name"].startswith("gloo:")), key=lambda e: e["ts"])
        base = int(doc.get("baseTimeNanoseconds", 0))
        for e in calls:
            k = seen.get(e["name"], 0)
            seen[e["name"]] = k + 1
            starts.setdefault((e["name"], k), {})[r] = int(Decimal(str(e["ts"])) * 1000) + base
    lateness = {r: 0 for r in range(4)}
    for by_rank in starts.values():
        first = min(by_rank.values())
        for r, s in by_rank.items():
            lateness[r] += s - first
    worst = max(lateness, key=lambda r: lateness[r])
    time, late = 0, set()
    for (name, k), by_rank in starts.items():
        others = max(s for r, s in by_rank.items() if r != worst)
        time += max(0, by_rank[worst] - others)
        if by_rank[worst] == max(by_rank.values()):
            late.add((worst, name, k))
    return worst, time, late


def test_straggler_on_a_real_four_rank_run() -> None:
    ts = profview.load_many(DATA / "ddp", progress=False)
    advice = advise(ts)
    worst, time, late = _ddp_walk()
    row = advice.findings[advice.findings["rule"] == "straggler"]
    assert len(row) == 1
    assert int(row["rank"].iloc[0]) == worst == 2
    assert int(row["time"].iloc[0]) == time
    assert int(row["count"].iloc[0]) == len(late)
    assert "slow_rank_sleep" in row["message"].iloc[0]  # rank 2 sleeps before its collectives
    assert set(advice.findings["rank"]) <= {0, 1, 2, 3}
    one = advise(ts, rank=1)
    assert set(one.findings["rank"]) <= {1} and "straggler" not in set(one.findings["rule"])
