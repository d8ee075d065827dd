"""The critical path in the widget, kernel side: the ``_critical_path`` frame against the
DataFrame, the highlight, the step picker (``critical_path_instance`` set as the front end sets it)
and one rank's path in the all-ranks widget."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import jupyter_profview as profview
from jupyter_profview.analysis import critical_path
from jupyter_profview.widget.codec import decode_frame

HTA = Path(__file__).parent / "data" / "hta"
RANK1 = HTA / "trace_filter_sampled_rank-1.json.gz"


def test_frame_is_the_path_in_order_with_lanes_and_the_breakdown() -> None:
    trace = profview.load(RANK1)
    cp = critical_path(trace)
    w = profview.show(trace, critical_path=cp)
    f = decode_frame(w._critical_path)
    path = cp.path
    assert len(f) == len(path) and list(f["order"]) == list(range(len(path)))
    assert np.array_equal(f["src"], path["src"]) and np.array_equal(f["dst"], path["dst"])
    assert np.array_equal(f["weight"], path["weight"]) and f["weight"].sum() == cp.length == f.meta["length"]
    assert [f.meta["edge_types"][k] for k in f["type"]] == list(path["type"].astype(str))
    assert [f.meta["bound_types"][k] for k in f["bound"]] == list(path["bound"].astype(str))
    # each end sits on the lane the widget draws that event on
    tracks = dict(zip(trace.events.index, w._data.timeline.event_track.tolist(), strict=True))
    assert list(f["src_track"]) == [tracks[int(i)] for i in path["src"]]
    assert [(b["type"], b["time"]) for b in f.meta["breakdown"]] == list(
        zip(cp.breakdown["type"], cp.breakdown["time"].astype(float), strict=True))
    assert f.meta["steps"] == ["ProfilerStep#551", "ProfilerStep#552"] and f.meta["instance"] == 0
    lit = decode_frame(w._highlight)["id"]
    assert sorted(lit.tolist()) == sorted(cp.events["event"].tolist())
    assert w.visible[0] <= cp.start and w.visible[1] >= cp.end  # zoomed to the step
    assert w.critical_path is cp and w.critical_path_instance == 0


def test_step_picker_recomputes_and_a_bad_instance_keeps_the_path() -> None:
    trace = profview.load(RANK1)
    w = profview.show(trace, critical_path=critical_path(trace))
    w.critical_path_instance = 1  # what the front end's picker sets
    assert w.critical_path.instance == 1
    assert decode_frame(w._critical_path).meta["length"] == critical_path(trace, instance=1).length
    w.critical_path_instance = 7  # no such step: the shown path stays, the trait goes back
    assert w.critical_path.instance == 1 and w.critical_path_instance == 1
    w.show_critical_path(None)
    assert w._critical_path == b"" and w.critical_path is None and len(decode_frame(w._highlight)) == 0
    with pytest.raises(TypeError):
        w.show_critical_path("ProfilerStep")  # type: ignore[arg-type]


def test_one_rank_in_the_all_ranks_widget() -> None:
    pytest.importorskip("duckdb")
    with pytest.warns(UserWarning):  # 126 of 128 ranks have no file
        ts = profview.load_many([HTA / "trace_filter_sampled_rank-0.json.gz", RANK1], progress=False,
                                cache=False)
    cp = critical_path(ts, rank=1)
    w = profview.show(ts, critical_path=cp)
    f = decode_frame(w._critical_path)
    ev = w.trace.events
    # every end is rank 1's event with the same rank-local id, its time moved by the rank's offset
    src = ev.loc[f["src"].astype(np.int64)]
    assert set(src["rank"]) == {1}
    assert list(src["rank_id"]) == list(cp.path["src"])
    offset = w.trace.info.offsets[1]
    assert np.array_equal(f["src_time"], cp.path["src_time"].to_numpy(np.float64) + offset)
    assert (f["src_track"] >= 0).all()
    w.critical_path_instance = 1  # recomputed on the TraceSet, same rank
    assert w.critical_path.rank == 1 and w.critical_path.instance == 1
    assert w.critical_path.length == critical_path(ts, rank=1, instance=1).length
