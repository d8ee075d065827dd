"""HTA parity on hand-written Kineto traces (`data/hta_parity/`, `data/make_hta_parity.py`): a stream
queue 1,000 deep, kernels of one stream overlapping by 3 µs with a launch on the µs of every kernel
start, and MTIA DMA transfers HTA keeps or drops.

HTA 0.5.0's answers are in `data/hta_reference/parity.json.gz` (`scripts/crosscheck/hta_parity.py`);
the other expected values are counted here from the JSON with plain `json`/`gzip`.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jupyter_profview as profview
from jupyter_profview import analysis, derived

DATA = Path(__file__).parent / "data"
PARITY = DATA / "hta_parity"
HTA = json.loads(gzip.decompress((DATA / "hta_reference" / "parity.json.gz").read_bytes()))["files"]
ENQUEUE = {"cudaLaunchKernel", "runFunction - job_prep_and_submit_for_execution"}  # the calls used here


def raw(name: str) -> list[dict[str, Any]]:
    data = (PARITY / name).read_bytes()
    return json.loads(gzip.decompress(data) if name.endswith(".gz") else data)["traceEvents"]


def pairs(name: str, *, cut: bool) -> dict[int, list[tuple[int, int]]]:
    """Per stream arg: (launch ts, kernel ts) of every launch whose activity is in the file, from
    the JSON; `cut`: only those launched before the last ProfilerStep starts (µs)."""
    events = [e for e in raw(name) if e.get("ph") == "X"]
    last = max(e["ts"] for e in events if e["name"].startswith("ProfilerStep#"))
    calls = {e["args"]["correlation"]: e for e in events if e["name"] in ENQUEUE}
    out: dict[int, list[tuple[int, int]]] = {}
    for e in events:
        corr, stream = e["args"].get("correlation"), e["args"].get("stream")
        device = e["cat"] in ("kernel", "mtia_ccp_events") and corr in calls and stream is not None
        if device and (not cut or calls[corr]["ts"] < last):
            out.setdefault(stream, []).append((calls[corr]["ts"], e["ts"]))
    return out


def series(changes: list[tuple[int, int]], launch_first: bool) -> np.ndarray:
    """The queue length after each change, ties in one order or the other."""
    rows = [(t, 0 if launch_first else 1, 1) for t, _ in changes] + \
        [(t, 1 if launch_first else 0, -1) for _, t in changes]
    rows.sort()
    return np.cumsum([d for _, _, d in rows])


def check_queue(name: str, way: str, cut: bool) -> None:
    trace = profview.load(PARITY / name)
    expected = pairs(name, cut=cut)
    hta = HTA[name][way]["queue"]
    ours = analysis.queue_length(trace, complete_steps=cut).set_index("stream")
    assert sorted(hta) == sorted(str(s) for s in expected) == sorted(str(s) for s in ours.index)
    for stream, changes in expected.items():
        ref, row = hta[str(stream)], ours.loc[stream]
        first, last = series(changes, True), series(changes, False)
        assert row["changes"] == ref["count"] == 2 * len(changes)
        assert row["max"] == ref["max"] == first.max()
        assert row["mean_per_change"] == pytest.approx(first.mean())
        # HTA's order at ties is its unstable sort's: its mean lies between the two orders'
        assert last.mean() - 1e-9 <= ref["mean"] <= first.mean() + 1e-9


@pytest.mark.parametrize(("way", "cut"), [("default", True), ("include_last_profiler_step", False)])
def test_queue_1000_deep_is_htas(way: str, cut: bool) -> None:
    check_queue("deep_queue.json.gz", way, cut)
    assert HTA["deep_queue.json.gz"][way]["queue"]["7"]["max"] == 1000


def test_graph_launches_enqueue_nothing() -> None:
    """The 5 kernels of one cudaGraphLaunch (stream 9): not in HTA's series, nor here (they used
    to add 5 at the graph launch's start)."""
    trace = profview.load(PARITY / "deep_queue.json.gz")
    graph = [e for e in raw("deep_queue.json.gz") if e.get("ph") == "X" and e["name"] == "graph_kernel"]
    assert len(graph) == 5 and {e["args"]["stream"] for e in graph} == {9}
    assert 9 not in set(analysis.queue_length_series(trace)["stream"])
    assert "9" not in HTA["deep_queue.json.gz"]["default"]["queue"]


@pytest.mark.parametrize(("way", "cut"), [("default", True), ("include_last_profiler_step", False)])
def test_overlapping_kernels_on_one_stream_queue_is_htas(way: str, cut: bool) -> None:
    kernels = sorted((e["ts"], e["ts"] + e["dur"]) for e in raw("overlap_stream.json")
                     if e.get("ph") == "X" and e["cat"] == "kernel")
    assert all(b[0] < a[1] for a, b in zip(kernels, kernels[1:], strict=False))  # each overlaps the next
    launches = {e["ts"] for e in raw("overlap_stream.json") if e.get("name") == "cudaLaunchKernel"}
    assert len(launches & {s for s, _ in kernels}) == 39  # a launch on the µs of every kernel start but one
    check_queue("overlap_stream.json", way, cut)
    # both tie orders occur in HTA's own series: a transient 2 -> 1 at some ties, 0 -> 1 at others
    values = [v for _, v in HTA["overlap_stream.json"][way]["queue"]["7"]["series"]]
    assert 2 in values and 0 in values[2:-1]


def test_queue_time_weighted_mean_does_not_depend_on_the_tie_order() -> None:
    trace = profview.load(PARITY / "overlap_stream.json")
    (changes,) = pairs("overlap_stream.json", cut=False).values()
    times = sorted({t for c in changes for t in c})
    value = np.array([sum(ls <= t for ls, _ in changes) - sum(ks <= t for _, ks in changes) for t in times])
    expected = (value[:-1] * np.diff(times)).sum() / (times[-1] - times[0])
    assert analysis.queue_length(trace).iloc[0]["mean"] == pytest.approx(expected)


def dma(name: str) -> list[dict[str, Any]]:
    return [e for e in raw(name) if e.get("ph") == "X" and e["name"] == "dma_request"]


def test_mtia_dma_what_hta_keeps() -> None:
    """HTA's breakdown by default keeps 7 of the 13 transfers: the 6 launched in step 1 and the one
    without a correlation id (filed with the CPU events, kept by its own start, counted because it
    has a stream); it drops the 3 of the last step, the 2 whose launch is not in the trace and the
    one without a `stream` arg.  Here every transfer counts (13); `complete_steps=True` keeps HTA's
    window (8): HTA's 7 and the transfer without a `stream` arg, which runs on its stream's thread."""
    events = dma("mtia_dma.json")
    no_stream = [e for e in events if "stream" not in e["args"]]
    assert len(events) == 13 and len(no_stream) == 1
    hta = HTA["mtia_dma.json"]
    assert hta["default"]["device"]["dma_request"]["count"] == 7
    assert hta["include_last_profiler_step"]["device"]["dma_request"]["count"] == 10
    assert hta["default"]["device"]["dma_request"]["kernel_type"] == "MEMORY"
    trace = profview.load(PARITY / "mtia_dma.json")
    table = analysis.kernel_breakdown(trace, by="name").set_index("name")
    assert table.loc["dma_request", "count"] == 13 and table.loc["dma_request", "type"] == "memory"
    window = analysis.kernel_breakdown(trace, by="name", complete_steps=True).set_index("name")
    kept = hta["default"]["device"]["dma_request"]["count"]
    assert window.loc["dma_request", "count"] == kept + len(no_stream)
    assert window.loc["dma_request", "total"] == 1000 * (hta["default"]["device"]["dma_request"]["sum"]
                                                          + sum(e["dur"] for e in no_stream))
    assert window.loc["fused_kernel", "count"] == hta["default"]["device"]["fused_kernel"]["count"]
    kinds = analysis.device_activities(trace)
    assert (kinds.loc[kinds["name"] == "dma_request", "kind"] == "dma").all()


def test_mtia_queue_counts_only_htas_launch_call_and_known_streams() -> None:
    """HTA counts the runFunction pairs on a stream it knows (stream arg): 10 pairs in its window;
    here also the pair whose transfer has no stream arg (on its stream's thread)."""
    hta = HTA["mtia_dma.json"]["default"]["queue"]["3"]
    assert (hta["count"], hta["max"]) == (20, 1.0)
    trace = profview.load(PARITY / "mtia_dma.json")
    row = analysis.queue_length(trace, complete_steps=True).iloc[0]
    assert (row["changes"], row["max"]) == (hta["count"] + 2, hta["max"])
    assert derived.queue_series(trace)["stream"].unique().tolist() == [3]
