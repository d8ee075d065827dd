"""PyTorch memory files: ``prof.export_memory_timeline`` outputs (real, from
``tests/data/make_torch_memory.py`` with torch 2.13 on CPU) and memory snapshot
pickles.

There is no GPU here, so no snapshot from ``torch.cuda.memory._dump_snapshot``:
``cuda_snapshot_synthetic.pickle`` and the snapshots below are built by hand
following the structure documented in ``torch.cuda.memory._snapshot``, and
``mlp_adam.profile_snapshot.pickle`` is torch's own converter
(``torch.cuda._memory_viz._profile_to_snapshot``) applied to a CPU profile.
Expected values come from the files (``json`` / ``pickle`` in the test) and from
torch's other export of the same run, never from the loaders.
"""

from __future__ import annotations

import gzip
import json
import pickle
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_profview as profview
from jupyter_profview.analysis.memory import live_at, peak_time
from jupyter_profview.errors import ProfviewError
from jupyter_profview.formats import detect, torch_memory, torch_snapshot
from jupyter_profview.sources import Source
from jupyter_profview.widget.codec import decode_frame
from tests.format_helpers import fuzz_check, load_with, mutate

DIR = Path(__file__).parent / "data" / "torch_memory"
SERIES = DIR / "mlp_adam.memory.json"
RAW = DIR / "mlp_adam.memory.raw.json.gz"
TRACE = DIR / "mlp_adam.trace.json.gz"
PROFILE_SNAPSHOT = DIR / "mlp_adam.profile_snapshot.pickle"
CUDA_SNAPSHOT = DIR / "cuda_snapshot_synthetic.pickle"
# torch.profiler._memory_profiler._CATEGORY_TO_INDEX, in order (None = unknown)
ORDER = ("parameter", "optimizer state", "input", "temporary", "activation", "gradient", "autograd detail",
         "unknown")


def _curves(trace: profview.Trace) -> dict[str, list[tuple[int, int]]]:
    base = trace.info.base_time_ns
    out: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for t, d, b in zip(trace.memory["time"], trace.memory["device"].astype(str), trace.memory["bytes"],
                       strict=True):
        out[d].append((int(t) + base, int(b)))
    return out


# -- memory timeline -------------------------------------------------------------------

def test_series_file_is_every_point_of_every_category() -> None:
    times, sizes = json.loads(SERIES.read_text())
    trace = load_with(torch_memory, SERIES, SERIES.name)
    assert trace.quality.records_read == len(times) and len(trace.events) == 0
    curves = _curves(trace)
    assert sorted(curves) == sorted(ORDER)
    for i, category in enumerate(ORDER):
        assert curves[category] == [(t * 1000, row[i + 1]) for t, row in zip(times, sizes, strict=True)]
    assert trace.metadata["peak_bytes"] == max(sum(row) for row in sizes)


def test_raw_events_agree_with_torchs_series_export() -> None:
    raw = json.loads(gzip.decompress(RAW.read_bytes()))
    times, sizes = json.loads(SERIES.read_text())
    trace = load_with(torch_memory, RAW, RAW.name)
    assert trace.quality.records_read == len(raw)
    curves = _curves(trace)
    first = min(t for t, *_ in raw if t >= 0)
    for i, category in enumerate(ORDER):
        points = curves.get(category, [])
        assert points == sorted(points)
        # exact ns: the final level is the sum of the category's deltas, every time is a raw time
        assert (points[-1][1] if points else 0) == sum(b for _, _, b, c in raw if c == i)
        assert {t for t, _ in points} <= {t if t >= 0 else first for t, _, _, c in raw if c == i}
        # torch's series: int(t / 1000) per event; preexisting tensors get a row of their own at the
        # first time, so a time can repeat: the last row of a time is the level after it
        for t_us, row in dict(zip(times, sizes, strict=True)).items():
            level = [b for t, b in points if int(t / 1000) <= t_us]
            assert (level[-1] if level else 0) == row[i + 1], (category, t_us)


def test_combined_with_the_trace_on_its_time_axis() -> None:
    plain = profview.load(TRACE)
    trace = profview.load(TRACE, memory=RAW)
    raw = json.loads(gzip.decompress(RAW.read_bytes()))
    base = trace.info.base_time_ns
    timeline = trace.memory[trace.memory["device"].astype(str).isin(ORDER)]
    assert len(trace.memory) == len(plain.memory) + len(timeline)
    assert int(timeline["time"].min()) + base == min(t for t, *_ in raw if t >= 0)
    assert int(timeline["time"].min()) >= 0 and int(timeline["time"].max()) <= trace.duration
    w = profview.show(trace)
    series = {s["device"] for s in decode_frame(w._memory).meta["series"]}
    assert set(ORDER) <= series and "cpu" in series
    assert int(decode_frame(w._overview)["count"].sum()) == len(trace.events)
    with pytest.raises(ProfviewError, match="clock"):
        profview.load(TRACE, memory=PROFILE_SNAPSHOT)  # step-indexed: no clock to align


def test_memory_only_timeline_shows_curves() -> None:
    w = profview.show(profview.load(SERIES))
    assert len(decode_frame(w._memory).meta["series"]) == len(ORDER)


def test_html_export_is_recognised_and_refused() -> None:
    # torch's export_memory_timeline_html template (the picture is a PNG, not data)
    html = (b"<html>\n<head><meta charset=\"utf-8\" /><title>GPU Memory Timeline HTML</title></head>\n"
            b"<body>\n  <img src='data:image/png;base64,iVBORw0KGgo='>\n</body>\n</html>")
    assert detect(Source(html)).name == "torch_memory_timeline"
    with pytest.raises(ProfviewError, match=r"PNG.*\.raw\.json\.gz"):
        profview.load(html)


def test_sniffing() -> None:
    for path in (SERIES, RAW):
        assert detect(Source(path)).name == "torch_memory_timeline"
    assert detect(Source(TRACE)).name == "chrome"
    assert not torch_memory.sniff(b'[{"ph": "X"}]') and not torch_memory.sniff(b"[[1, 2], {}]")


@pytest.mark.parametrize(("doc", "match"), [
    (b"[[1, 2, 3", "line 1.*invalid JSON"),
    (b"[[1, 2, 200, 9]]", "category 9"),
    (b"[[1, 7, 200, 0]]", "action 7"),
    (b"[[1, 2, 200]]", "element 0"),
    (b"[[1, 2], [[0, 1, 2, 3, 4, 5, 6, 7, 8]]]", "same length"),
    (b"[[1], [[0, 1, 2]]]", r"sizes\[0\]"),
    (b"[[], []]", "empty"),
])
def test_bad_timelines_name_the_element(doc: bytes, match: str) -> None:
    with pytest.raises(ProfviewError, match=match):
        load_with(torch_memory, doc, "bad.json")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_timelines(data: st.DataObject) -> None:
    base = data.draw(st.sampled_from([b"[[5, 6], [[0, 1, 2, 3, 4, 5, 6, 7, 8], [0, 8, 7, 6, 5, 4, 3, 2, 1]]]",
                                      b"[[-1, 1, 64, 0], [10, 2, 32, 4], [12, 4, -32, 4], [12, 3, -64, 0]]"]))
    blob = bytearray(base)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(blob) - 1))
        blob[at:at + data.draw(st.integers(0, 2))] = data.draw(
            st.sampled_from([b"", b"[", b"]", b",", b"-", b"99999999999999999999", b"1.5", b"true", b"\xff"]))
    fuzz_check(torch_memory, bytes(blob))


# -- memory snapshots ------------------------------------------------------------------

class Evil:
    """Unpickling this would create ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return open, (str(self.path), "w")


@pytest.mark.parametrize("protocol", range(0, pickle.HIGHEST_PROTOCOL + 1))
def test_a_reduce_payload_is_refused_and_runs_nothing(tmp_path: Path, protocol: int) -> None:
    target = tmp_path / "pwned"
    blob = pickle.dumps({"segments": [], "device_traces": [[Evil(target)]]}, protocol=protocol)
    with pytest.raises(ProfviewError, match=r"refused.*io\.open"):
        load_with(torch_snapshot, blob, "evil.pickle")
    if protocol >= 2:  # protocols 0/1 have no PROTO opcode: not sniffed as a snapshot at all
        with pytest.raises(ProfviewError, match="refused"):
            profview.load(blob)
    assert not target.exists()


def test_persistent_ids_and_extension_codes_are_refused() -> None:
    for blob in (b"\x80\x02}q\x00X\x08\x00\x00\x00segmentsq\x01P1\nq\x02s.",   # PERSID
                 b"\x80\x02}q\x00X\x08\x00\x00\x00segmentsq\x01\x82\x01s."):  # EXT1
        with pytest.raises(ProfviewError, match="refused|corrupt"):
            load_with(torch_snapshot, blob, "odd.pickle")


def _replay(snapshot: dict[str, Any]) -> dict[str, Any]:
    """Independent reading of the documented structure: allocated bytes over entries."""
    trace = snapshot["device_traces"][0]
    delta = [e["size"] if e["action"] == "alloc" else -e["size"] if e["action"] == "free_completed" else 0
             for e in trace]
    in_use = ("active_allocated", "active_awaiting_free")
    end = sum(b["size"] for s in snapshot["segments"] for b in s["blocks"] if b["state"] in in_use)
    levels, level = [], end - sum(delta)
    for d in delta:
        level += d
        levels.append(level)
    return {"levels": levels, "peak": max([end - sum(delta), *levels]), "baseline": end - sum(delta)}


def test_synthetic_cuda_snapshot() -> None:
    snap = pickle.loads(CUDA_SNAPSHOT.read_bytes())  # our own fixture, trusted
    entries = snap["device_traces"][0]
    blocks = [b for s in snap["segments"] for b in s["blocks"]]
    trace = load_with(torch_snapshot, CUDA_SNAPSHOT, CUDA_SNAPSHOT.name)
    assert trace.time_unit == "ns"
    assert trace.quality.records_read == len(entries) + len(snap["segments"]) + len(blocks)
    instants = trace.events[trace.events["kind"] == "instant"]
    assert sorted(instants["name"].astype(str)) == sorted(e["action"] for e in entries)
    base = trace.info.base_time_ns
    assert base == min(e["time_us"] for e in entries) * 1000
    assert sorted((instants["start"] + base).tolist()) == sorted(e["time_us"] * 1000 for e in entries)
    expected = _replay(snap)
    assert trace.metadata["peaks"]["cuda:0"]["bytes"] == expected["peak"] == int(trace.memory["bytes"].max())
    peak = peak_time(trace)
    live = live_at(trace, peak)
    assert int(live["bytes"].sum()) == expected["peak"]
    assert "(allocated before recording)" in set(live["owner"])
    allocs = [e for e in entries if e["action"] == "alloc"]
    timed = trace.allocations[trace.allocations["owner"] != "(allocated before recording)"]
    assert len(timed) == len(allocs)
    outside = [e["frames"][1] for e in allocs]  # the first frame outside torch/
    assert timed["owner"].tolist() == [f"{f['name']} ({f['filename']}:{f['line']})" for f in outside]
    assert all(isinstance(f, list) and f for f in timed["frames"])
    reserved = trace.counters
    seg = [e for e in entries if e["action"].startswith("segment_")]
    assert reserved is not None
    assert reserved["value"].max() == snap["segments"][0]["total_size"] + seg[0]["size"]
    assert "oom" in set(instants["name"].astype(str))


def test_profile_snapshot_from_torchs_converter_matches_the_timeline_export() -> None:
    snap = pickle.loads(PROFILE_SNAPSHOT.read_bytes())  # our own fixture, trusted
    entries = snap["device_traces"][0]
    trace = load_with(torch_snapshot, PROFILE_SNAPSHOT, PROFILE_SNAPSHOT.name)
    assert trace.time_unit == "step" and len(entries) > 100
    times, sizes = json.loads(SERIES.read_text())
    # the same run's export_memory_timeline: the peak of the categories' sum
    peak = max(sum(row) for row in sizes)
    assert trace.metadata["peaks"]["cuda:0"]["bytes"] == peak == _replay(snap)["peak"]
    live = live_at(trace, peak_time(trace))
    assert int(live["bytes"].sum()) == max(sum(row) for row in sizes)
    n_alloc = sum(e["action"] == "alloc" for e in entries)
    assert (trace.allocations["owner"] != "(allocated before recording)").sum() == n_alloc


def test_snapshot_in_the_widget() -> None:
    trace = profview.load(CUDA_SNAPSHOT)
    w = profview.show(trace)
    assert int(decode_frame(w._overview)["count"].sum()) == len(trace.events) > 0
    assert decode_frame(w._memory).meta["series"][0]["device"] == "cuda:0"


@pytest.mark.parametrize("blob", [
    b"\x80\x05\x96" + (2**60).to_bytes(8, "little"),  # BYTEARRAY8 of 2**60 bytes (found by the fuzzer)
    b"\x80\x05\x8e" + (2**40).to_bytes(8, "little"),  # BINBYTES8 of 1 TiB
])
def test_a_size_larger_than_memory_is_a_profview_error(blob: bytes) -> None:
    """A length field asking for more memory than there is ends in a ProfviewError with a
    position, not a MemoryError, whether the pickle comes as bytes or from a file."""
    for source in (blob, Source(blob, name="huge.pickle")):
        with pytest.raises(ProfviewError) as err:
            torch_snapshot.unpickle(source, "huge.pickle")
        assert err.value.position and "huge.pickle" in str(err.value)


def test_bytes_and_files_unpickle_alike() -> None:
    snapshot = {"segments": [], "device_traces": [[]]}
    blob = pickle.dumps(snapshot, protocol=5)
    from_file = torch_snapshot.unpickle(Source(blob, name="s"), "s")
    assert torch_snapshot.unpickle(blob, "s") == from_file == snapshot


@pytest.mark.parametrize(("mutate", "match"), [
    (lambda s: s.update(segments={}), "segments"),
    (lambda s: s["device_traces"][0][0].update(action="explode"), "unknown action"),
    (lambda s: s["device_traces"][0][0].update(size="big"), r"device_traces\[0\]\[0\]\.size"),
    (lambda s: s["segments"][0]["blocks"][0].pop("size"), r"segments\[0\]\.blocks\[0\]"),
    (lambda s: s["device_traces"][0][3].pop("time_us"), "time_us"),
])
def test_bad_snapshots_name_the_place(mutate: Any, match: str) -> None:
    snap = pickle.loads(CUDA_SNAPSHOT.read_bytes())
    mutate(snap)
    with pytest.raises(ProfviewError, match=match):
        load_with(torch_snapshot, pickle.dumps(snap), "bad.pickle")


def test_truncated_snapshot() -> None:
    data = CUDA_SNAPSHOT.read_bytes()
    for cut in (10, len(data) // 2, len(data) - 1):
        with pytest.raises(ProfviewError, match=r"byte \d+: corrupt pickle"):
            load_with(torch_snapshot, data[:cut], "cut.pickle")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_snapshots(data: st.DataObject) -> None:
    blob = mutate(data, CUDA_SNAPSHOT.read_bytes(), max_insert=6)
    if blob:
        fuzz_check(torch_snapshot, blob)
