"""The recorded Chromium trace (tests/data/chromium_perfetto.pftrace.gz, written by headless
Chromium through the DevTools protocol: scripts/record_perfetto_trace.py) against an independent
walk of the same file with Google's classes (tests/perfetto_reference.py): every slice, instant,
counter sample and flow is loaded, names and durations exact, starts within 1 us."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import jupyter_profview as profview

ref = pytest.importorskip("tests.perfetto_reference")
FIXTURE = Path(__file__).parent / "data" / "chromium_perfetto.pftrace.gz"


@pytest.fixture(scope="module")
def loaded() -> profview.Trace:
    return profview.load(FIXTURE)


@pytest.fixture(scope="module")
def walk() -> ref.Walk:
    return ref.walk(ref.read_trace(FIXTURE))


def _abs(trace: profview.Trace) -> np.ndarray:
    return trace.events["start"].to_numpy() + trace.info.base_time_ns


def test_detected_from_content(loaded: profview.Trace) -> None:
    assert loaded.format == "perfetto"
    assert profview.load(FIXTURE.read_bytes()).format == "perfetto"


def test_every_slice_with_exact_duration(loaded: profview.Trace, walk: ref.Walk) -> None:
    ev = loaded.events
    closed = [s for s in walk.slices if s["end"] is not None]
    expected = Counter((s["name"], walk.times[s["end"]] - walk.times[s["start"]]) for s in closed)
    slices = ev[(ev["kind"] == "slice") & ~ev["incomplete"]]
    got = Counter(zip(slices["name"].astype(str), slices["dur"].tolist(), strict=True))
    assert len(closed) > 1000
    assert got == expected
    # starts within 1 us of the independent reading, slice by slice (same name and duration)
    mine: dict[tuple[str, int], list[int]] = {}
    for name, dur, start in zip(slices["name"].astype(str), slices["dur"].tolist(),
                                (slices["start"] + loaded.info.base_time_ns).tolist(), strict=True):
        mine.setdefault((name, dur), []).append(start)
    theirs: dict[tuple[str, int], list[int]] = {}
    for s in closed:
        theirs.setdefault((s["name"], walk.times[s["end"]] - walk.times[s["start"]]), []).append(
            walk.times[s["start"]])
    worst = max(np.abs(np.sort(mine[k]) - np.sort(v)).max() for k, v in theirs.items())
    assert worst <= 1000


def test_open_slices_are_incomplete(loaded: profview.Trace, walk: ref.Walk) -> None:
    ev = loaded.events
    open_ = [s for s in walk.slices if s["end"] is None]
    assert Counter(ev.loc[ev["incomplete"], "name"].astype(str)) == Counter(s["name"] for s in open_)
    assert loaded.quality.unmatched_begin == len(open_)


def test_every_instant(loaded: profview.Trace, walk: ref.Walk) -> None:
    ev = loaded.events
    inst = ev[ev["kind"] == "instant"]
    assert len(walk.instants) > 10
    starts = (inst["start"] + loaded.info.base_time_ns).tolist()
    assert Counter(zip(inst["name"].astype(str), starts, strict=True)) == \
        Counter((i["name"], walk.times[i["start"]]) for i in walk.instants)
    assert (inst["dur"] == 0).all()


def test_every_counter_sample(loaded: profview.Trace, walk: ref.Walk) -> None:
    c = loaded.counters
    assert c is not None and len(walk.samples) > 1000
    got = Counter(zip((c["time"] + loaded.info.base_time_ns).tolist(), c["value"].tolist(), strict=True))
    assert got == Counter((walk.times[t], float(v)) for _, t, v in walk.samples)
    # thread time (an incremental counter in us on every slice) is accumulated: it never falls
    tt = c[c["name"] == "thread_time"]
    assert len(tt) > 1000
    for _, series in tt.groupby("series", observed=True):
        assert (np.diff(series["value"].to_numpy()) >= 0).all()


def test_every_flow(loaded: profview.Trace, walk: ref.Walk) -> None:
    def key(index: object) -> tuple[str, int]:
        item = walk.instants[index[1]] if isinstance(index, tuple) else walk.slices[index]  # type: ignore[call-overload]
        return item["name"], walk.times[item["start"]]

    arrows = ref.flows(walk)
    assert len(arrows) > 10
    ev = loaded.events
    base = loaded.info.base_time_ns
    f = loaded.flows
    def mine(i: int) -> tuple[str, int]:
        return ev.at[i, "name"], int(ev.at[i, "start"]) + base

    got = Counter((mine(s), mine(t))
                  for s, t in zip(f["source"], f["target"], strict=True))
    assert got == Counter((key(a), key(b)) for a, b in arrows)


def test_lanes_and_args(loaded: profview.Trace) -> None:
    ev = loaded.events
    threads = set(ev["thread"].astype(str))
    assert "CrRendererMain" in {t.rsplit(" (", 1)[0] for t in threads}
    assert {"Browser", "Renderer", "GPU Process"} <= set(ev["process"].astype(str))
    with_args = ev.index[ev["has_args"]]
    assert len(with_args) > 10
    assert all(loaded.args(i) for i in with_args[:50])
    assert loaded.args(int(ev.index[~ev["has_args"]][0])) == {}


def test_quality_accounts_for_every_packet(loaded: profview.Trace, walk: ref.Walk) -> None:
    q = loaded.quality
    assert q.unaccounted == 0
    assert q.records_read == sum(1 for _ in ref._packets(ref.read_trace(FIXTURE)))
    loaded.validate()
