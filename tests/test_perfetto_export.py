"""`export.to_perfetto`: a real Kineto GPU trace (HTA's NCCL trace: CPU threads, GPU streams,
launch -> kernel flows) written as Perfetto protobuf, checked with Google's classes and read
back with the same slices (name, start, duration, lane) and flows; counters and args survive."""

from __future__ import annotations

from pathlib import Path

import pytest

import jupyter_profview as profview
from jupyter_profview.export import to_perfetto

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
DATA = Path(__file__).parent / "data"
HTA = DATA / "hta" / "nccl_parser_config_nccl_data.json.gz"


def _slices(trace: profview.Trace) -> list[tuple[str, int, int, str]]:
    e = trace.events
    return sorted(zip(e["name"].astype(str), (e["start"] + trace.info.base_time_ns).tolist(),
                      e["dur"].tolist(), e["track"].astype(str), strict=True))


def _flows(trace: profview.Trace) -> list[tuple[tuple[str, int, str], tuple[str, int, str]]]:
    e = trace.events

    def end(i: int) -> tuple[str, int, str]:
        return str(e.at[i, "name"]), int(e.at[i, "start"]), str(e.at[i, "track"])

    f = trace.flows[(trace.flows["source"] >= 0) & (trace.flows["target"] >= 0)]
    return sorted((end(s), end(t)) for s, t in zip(f["source"], f["target"], strict=True))


@pytest.fixture(scope="module")
def gpu(tmp_path_factory: pytest.TempPathFactory) -> tuple[profview.Trace, Path]:
    trace = profview.load(HTA)
    return trace, to_perfetto(trace, tmp_path_factory.mktemp("pf") / "nccl.pftrace")


def test_gpu_trace_round_trips(gpu: tuple[profview.Trace, Path]) -> None:
    trace, path = gpu
    back = profview.load(path)
    assert back.format == "perfetto"
    assert len(trace.events) > 20_000 and len(trace.flows) > 4000
    assert any("stream" in t for t in trace.events["thread"].astype(str))  # GPU streams are in it
    assert _slices(back) == _slices(trace)
    assert _flows(back) == _flows(trace)
    assert back.quality.unaccounted == 0


def test_output_is_a_valid_perfetto_trace(gpu: tuple[profview.Trace, Path]) -> None:
    trace, path = gpu
    parsed = pb.Trace.FromString(path.read_bytes())
    events = [p.track_event for p in parsed.packet if p.HasField("track_event")]
    begins = sum(e.type == pb.TrackEvent.TYPE_SLICE_BEGIN for e in events)
    ends = sum(e.type == pb.TrackEvent.TYPE_SLICE_END for e in events)
    instants = sum(e.type == pb.TrackEvent.TYPE_INSTANT for e in events)
    assert begins == ends == int((trace.events["kind"] != "instant").sum())
    assert instants == int((trace.events["kind"] == "instant").sum())
    declared = {p.track_descriptor.uuid for p in parsed.packet if p.HasField("track_descriptor")}
    assert {e.track_uuid for e in events} <= declared
    flows_out = sum(len(e.flow_ids) for e in events)
    assert flows_out == sum(len(e.terminating_flow_ids) for e in events) == len(trace.flows)


def test_args_survive(gpu: tuple[profview.Trace, Path]) -> None:
    trace, path = gpu
    back = profview.load(path)
    ev, bev = trace.events, back.events
    kernel = int(ev.index[ev["name"].astype(str).str.contains("nccl|Kernel", regex=True)][0])
    match = bev[(bev["name"] == ev.at[kernel, "name"]) & (bev["start"] == ev.at[kernel, "start"])
                & (bev["track"] == ev.at[kernel, "track"])]
    assert back.args(int(match.index[0])) == trace.args(kernel)


def test_perfetto_trace_round_trips_with_counters(tmp_path: Path) -> None:
    trace = profview.load(DATA / "chromium_perfetto.pftrace.gz")
    back = profview.load(to_perfetto(trace, tmp_path / "again.pftrace", args=False))
    assert _slices(back) == _slices(trace)
    assert _flows(back) == _flows(trace)
    assert trace.counters is not None and back.counters is not None
    for t in (trace, back):
        t.counters["when"] = t.counters["time"] + t.info.base_time_ns
    assert sorted(zip(back.counters["when"], back.counters["value"], strict=True)) == \
        sorted(zip(trace.counters["when"], trace.counters["value"], strict=True))


def test_widget_saves_next_to_the_trace(tmp_path: Path) -> None:
    import shutil

    from jupyter_profview.widget import TraceWidget

    copy = tmp_path / "run.pt.trace.json.gz"
    shutil.copy(DATA / "hta" / "trace_compare_base_base.json.gz", copy)
    trace = profview.load(copy)
    written = TraceWidget(trace).to_perfetto()
    assert written == tmp_path / "run.pt.trace.pftrace"
    assert _slices(profview.load(written)) == _slices(trace)


def test_cli_convert_writes_a_perfetto_trace(tmp_path: Path) -> None:
    """``profview convert TRACE OUT.pftrace`` (a subprocess, as a user runs it): the file is a
    Perfetto trace for Google's classes and reads back with the same slices and flows;
    ``--no-args`` leaves the debug annotations out."""
    import os
    import subprocess
    import sys

    source = DATA / "hta" / "trace_compare_base_base.json.gz"
    trace = profview.load(source)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    annotations = {}
    for name, extra in (("out.pftrace", []), ("bare.perfetto-trace", ["--no-args"])):
        out = tmp_path / name
        res = subprocess.run([sys.executable, "-m", "jupyter_profview", "convert", str(source), str(out),
                              *extra], capture_output=True, text=True, env=env, timeout=300)
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip() == str(out)
        parsed = pb.Trace.FromString(out.read_bytes())
        annotations[name] = sum(len(p.track_event.debug_annotations) for p in parsed.packet)
        back = profview.load(out)
        assert back.format == "perfetto"
        assert _slices(back) == _slices(trace)
        assert _flows(back) == _flows(trace)
    assert annotations["out.pftrace"] > 0 and annotations["bare.perfetto-trace"] == 0
    res = subprocess.run([sys.executable, "-m", "jupyter_profview", "convert", str(source),
                          str(tmp_path / "out.proto")], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 2 and ".pftrace" in res.stderr
