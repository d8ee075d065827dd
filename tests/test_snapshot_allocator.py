"""analysis.allocator against independent numbers: the simulated caching allocator's own blocks
at each OOM (benchmarks/make_snapshot.py records them when it writes the ``oom`` entry), and the
snapshot's segments and blocks as unpickled here, at the trace's end."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from typing import Any

import pytest

from jupyter_profview.analysis import advise, allocator_state, fragmentation, oom
from jupyter_profview.errors import ProfviewError
from jupyter_profview.loader import load

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import make_snapshot  # noqa: E402

sys.path.pop(0)


def _snapshot(tmp_path: Path, kind: str | None, devices: int = 2) -> tuple[Path, dict[str, Any]]:
    path = tmp_path / f"{kind}.pickle"
    return path, make_snapshot.write(path, entries=2000, oom=kind, devices=devices)


@pytest.mark.parametrize("kind", ["fragmentation", "capacity"])
def test_oom_numbers_equal_the_allocators_own(tmp_path: Path, kind: str) -> None:
    path, info = _snapshot(tmp_path, kind)
    table = oom(load(path))
    truth = [(f"cuda:{d}", o) for d, ooms in enumerate(info["ooms"]) for o in ooms]
    assert len(table) == len(truth) == 2
    for (device, o), (_, row) in zip(truth, table.iterrows(), strict=True):
        assert row["device"] == device
        for key in ("requested", "allocated", "reserved", "free_in_reserved", "largest_free", "device_free"):
            assert int(row[key]) == o[key], (key, row[key], o[key])
        assert row["verdict"] == kind
        assert ("expandable_segments:True" in row["what_to_try"]) == (kind == "fragmentation")
        assert ("checkpointing" in row["what_to_try"]) == (kind == "capacity")
        assert sum(b for _, b in row["top_owners"]) <= o["allocated"]
        assert row["top_owners"][0][0].startswith("block_")  # model code, not the allocator's frames


def test_state_at_the_end_is_the_snapshots(tmp_path: Path) -> None:
    path, _ = _snapshot(tmp_path, "fragmentation", devices=1)
    snap = pickle.loads(path.read_bytes())
    trace = load(path)
    end = int(trace.events["start"].max())
    state = allocator_state(trace, end)
    blocks = {
        (b["address"], b["size"], "free" if b["state"] == "inactive" else "allocated")
        for s in snap["segments"]
        for b in s["blocks"]
    }
    assert set(zip(state["address"], state["size"], state["state"], strict=True)) == blocks
    frag = fragmentation(trace).iloc[-1]
    used = sum(b["size"] for s in snap["segments"] for b in s["blocks"] if b["state"] != "inactive")
    total = sum(s["total_size"] for s in snap["segments"])
    assert (frag["allocated"], frag["reserved"]) == (used, total)
    assert frag["fragmented"] == total - used
    assert frag["largest_free"] == max(
        b["size"] for s in snap["segments"] for b in s["blocks"] if b["state"] == "inactive"
    )


def test_state_at_the_oom_matches_the_oom_row(tmp_path: Path) -> None:
    path, _ = _snapshot(tmp_path, "capacity", devices=1)
    trace = load(path)
    row = oom(trace).iloc[0]
    state = allocator_state(trace, int(row["time"]) - 1)  # the oom comes last: nothing after it at its time
    assert state.loc[state["state"] == "allocated", "size"].sum() == row["allocated"]


def test_advise_reports_the_oom(tmp_path: Path) -> None:
    path, _ = _snapshot(tmp_path, "fragmentation", devices=1)
    found = advise(load(path)).findings
    hit = found[found["rule"] == "out_of_memory"]
    assert len(hit) == 1 and "fragmentation" in hit["message"].iloc[0]
    assert "expandable_segments:True" in hit["fix"].iloc[0]
    path, _ = _snapshot(tmp_path, None, devices=1)
    assert "out_of_memory" not in set(advise(load(path)).findings["rule"])


def test_not_a_snapshot() -> None:
    trace = load(Path(__file__).parent / "data" / "torch_memory" / "mlp_adam.profile_snapshot.pickle")
    assert len(oom(trace)) == 0
    with pytest.raises(ProfviewError, match="not a CUDA memory snapshot"):
        oom(load(b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]}'))
