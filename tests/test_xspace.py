"""XSpace (``*.xplane.pb``) profiles: real files from TF2 (Keras ``fit`` with the
TensorBoard profiler callback) and JAX (``jax.profiler.trace``) on CPU, made by
``tests/data/make_xspace.py``.

Expected values come from an independent walk of the protobuf wire format
written here (no protobuf runtime, no schema from the package): field numbers
from ``tsl/profiler/protobuf/xplane.proto``.  Synthetic XSpaces for what CPU
runs do not produce (memory profile, correlation ids, aggregated events,
picosecond rounding) are encoded by hand with the same little writer.
"""

from __future__ import annotations

import gzip
import importlib.util
import os
import re
import shutil
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_profview as profview
from jupyter_profview.errors import ProfviewError
from jupyter_profview.formats import detect, tf_step_stats, xspace, xspace_build, xspace_proto
from jupyter_profview.sources import Source
from jupyter_profview.widget.codec import decode_frame
from tests.format_helpers import fuzz_check, load_with, mutate

DATA = Path(__file__).parent / "data"
TF_LOGDIR = DATA / "xspace" / "tf_keras"
TF_FILE = next(TF_LOGDIR.rglob("*.xplane.pb"))
JAX_FILE = DATA / "xspace" / "jax_cpu.xplane.pb.gz"


# -- an independent wire-format walker ------------------------------------------

def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def fields(buf: bytes) -> list[tuple[int, Any]]:
    """(field number, value) pairs: int for varint / fixed64, bytes for length-delimited."""
    out: list[tuple[int, Any]] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = int.from_bytes(buf[pos:pos + 8], "little"), pos + 8
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        else:
            raise AssertionError(f"wire type {wire}")
        out.append((number, value))
    return out


def _signed(v: int) -> int:
    return v - 2**64 if v >= 2**63 else v


def _stats(raw: list[bytes], names: dict[int, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for blob in raw:
        f = dict(fields(blob))
        name = names.get(_signed(f.get(1, 0)), "?")
        if 7 in f:
            out[name] = names.get(f[7])
        elif 4 in f:
            out[name] = _signed(f[4])
        elif 5 in f:
            out[name] = f[5].decode()
        else:
            out[name] = f.get(3, f.get(2, f.get(6)))
    return out


def walk(path_or_bytes: Path | bytes) -> dict[str, Any]:
    """Planes -> lines -> events, decoded by hand."""
    data = path_or_bytes if isinstance(path_or_bytes, bytes) else path_or_bytes.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    planes = []
    for number, plane_blob in fields(data):
        if number != 1:
            continue
        pf = fields(plane_blob)
        stat_names: dict[int, str] = {}
        for n, v in pf:
            if n == 5:
                entry = dict(fields(v))
                stat_names[_signed(entry.get(1, 0))] = dict(fields(entry.get(2, b""))).get(2, b"").decode()
        metas: dict[int, tuple[str, str, dict[str, Any]]] = {}
        for n, v in pf:
            if n == 4:
                entry = dict(fields(v))
                mf = fields(entry.get(2, b""))
                md = dict(mf)
                shown = (md.get(4) or md.get(2) or b"").decode()
                full = (md.get(2) or b"").decode()
                mstats = _stats([x for k, x in mf if k == 5], stat_names)
                metas[_signed(entry.get(1, 0))] = (shown, full, mstats)
        pd_ = dict(pf)
        plane = {"name": pd_.get(2, b"").decode(), "lines": [],
                 "stats": _stats([v for n, v in pf if n == 6], stat_names)}
        for n, line_blob in pf:
            if n != 3:
                continue
            lf = fields(line_blob)
            ld = dict(lf)
            line = {"name": (ld.get(11) or ld.get(2) or b"").decode(), "ts": _signed(ld.get(3, 0)),
                    "events": []}
            for k, ev_blob in lf:
                if k != 4:
                    continue
                ef = fields(ev_blob)
                ed = dict(ef)
                name, full, mstats = metas.get(_signed(ed.get(1, 0)), ("", "", {}))
                stats = {**mstats, **_stats([x for j, x in ef if j == 4], stat_names)}
                line["events"].append({"name": name, "full": full or name, "off": _signed(ed.get(2, 0)),
                                       "dur": _signed(ed.get(3, 0)), "aggregated": 5 in ed, "stats": stats})
            plane["lines"].append(line)
        planes.append(plane)
    hostnames = [v.decode() for number, v in fields(data) if number == 4]
    return {"planes": planes, "hostnames": hostnames}


def expected_rows(space: dict[str, Any]) -> list[tuple[str, str, str, int, int]]:
    """(process, thread, name, absolute start ns, dur ns) of every timed event."""
    start0 = 0
    for plane in space["planes"]:
        if plane["name"] == "Task Environment":
            start0 = plane["stats"].get("profile_start_time", 0)
    rows = []
    for plane in space["planes"]:
        for line in plane["lines"]:
            for ev in line["events"]:
                if ev["aggregated"]:
                    continue
                s = start0 + line["ts"] + ev["off"] // 1000
                e = start0 + line["ts"] + (ev["off"] + ev["dur"]) // 1000
                rows.append((plane["name"], line["name"], ev["name"], s, e - s))
    return sorted(rows)


def actual_rows(trace: profview.Trace) -> list[tuple[str, str, str, int, int]]:
    ev = trace.events
    base = trace.info.base_time_ns
    thread = ev["thread"].astype(str).str.replace(r" #-?\d+$", "", regex=True)
    return sorted(zip(ev["process"].astype(str), thread, ev["name"].astype(str),
                      (ev["start"] + base).tolist(), ev["dur"].tolist(), strict=True))


# -- a tiny writer for synthetic XSpaces --------------------------------------------

def _vi(v: int) -> bytes:
    v &= 2**64 - 1
    out = bytearray()
    while True:
        out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return bytes(out)


def f_int(n: int, v: int) -> bytes:
    return _vi(n << 3) + _vi(v)


def f_len(n: int, v: bytes | str) -> bytes:
    b = v.encode() if isinstance(v, str) else v
    return _vi(n << 3 | 2) + _vi(len(b)) + b


def stat(mid: int, value: int | str) -> bytes:
    return f_int(1, mid) + (f_len(5, value) if isinstance(value, str) else f_int(4, value))


def plane(name: str, stat_names: dict[int, str], event_names: dict[int, str],
          lines: list[tuple[str, int, list[bytes]]]) -> bytes:
    body = f_len(2, name)
    for ts_line in lines:
        lname, ts, events = ts_line
        body += f_len(3, f_len(2, lname) + f_int(3, ts) + b"".join(f_len(4, e) for e in events))
    for k, v in event_names.items():
        body += f_len(4, f_int(1, k) + f_len(2, f_int(1, k) + f_len(2, v)))
    for k, v in stat_names.items():
        body += f_len(5, f_int(1, k) + f_len(2, f_int(1, k) + f_len(2, v)))
    return f_len(1, body)


def event(mid: int, off: int, dur: int, *stats: bytes) -> bytes:
    return f_int(1, mid) + f_int(2, off) + f_int(3, dur) + b"".join(f_len(4, s) for s in stats)


# -- real files ---------------------------------------------------------------------

@pytest.mark.parametrize("path", [TF_FILE, JAX_FILE], ids=["tf_keras", "jax"])
def test_every_event_with_exact_timestamps(path: Path) -> None:
    space = walk(path)
    trace = load_with(xspace, path, path.name)
    expected = expected_rows(space)
    assert len(expected) > 100
    assert actual_rows(trace) == expected
    assert trace.quality.records_read == sum(len(ln["events"]) for p in space["planes"] for ln in p["lines"])
    hosts = [p["name"] for p in space["planes"] if p["lines"]]
    assert sorted(trace.events["process"].astype(str).unique()) == sorted(set(hosts))


@pytest.mark.parametrize("path", [TF_FILE, JAX_FILE], ids=["tf_keras", "jax"])
def test_steps_ops_and_flows_match_the_stats(path: Path) -> None:
    space = walk(path)
    events = [ev for p in space["planes"] for ln in p["lines"] for ev in ln["events"]]
    steps = sorted(ev["stats"]["step_num"] for ev in events if "step_num" in ev["stats"])
    trace = load_with(xspace, path, path.name)
    is_step = trace.events["category"] == "step"
    assert len(steps) > 0 and sorted(trace.events.loc[is_step, "step"].tolist()) == steps
    assert trace.metadata["steps"] == len(steps)
    producers = Counter((ev["stats"]["_pt"], ev["stats"]["_p"]) for ev in events
                        if "_p" in ev["stats"] and "_pt" in ev["stats"])
    consumers = Counter((ev["stats"]["_ct"], ev["stats"]["_c"]) for ev in events
                        if "_c" in ev["stats"] and "_ct" in ev["stats"])
    # one arrow per consumer whose id has a producer; these real runs have one producer per id
    assert set(producers.values()) == {1}
    pairs = sum(n for k, n in consumers.items() if k in producers)
    assert pairs > 0 and len(trace.flows) == pairs and trace.quality.extra_producers == 0
    ok = trace.flows
    assert (ok["source"] >= 0).all() and (ok["target"] >= 0).all()
    assert (ok["start"].to_numpy() == trace.events["start"].to_numpy()[ok["source"]]).all()
    # each arrow is named by its consumer's context (type, id), whichever storage backs strings
    want = Counter(f"context:{ct}:{c}" for (ct, c), n in consumers.items() if (ct, c) in producers
                   for _ in range(n))
    assert Counter(ok["flow_id"].tolist()) == want
    with pd.option_context("mode.string_storage", "python"):
        again = load_with(xspace, path, path.name).flows
    assert again["flow_id"].array.dtype.storage == "python"
    assert again["flow_id"].tolist() == ok["flow_id"].tolist()


# -- categories: the documented order, with op names classified here independently ---------------

def xla_kind(op: str) -> str:
    """An HLO instruction name is ``<opcode or fusion kind>[.N]``: its category by opcode."""
    base = re.sub(r"\.\d+$", "", op).lower()
    if base.startswith(("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
                        "send", "recv")):
        return "communication"
    if base.startswith("convolution"):
        return "convolution"
    if base.startswith("dot") or "gemm" in base:
        return "matmul"
    if base.startswith("copy"):
        return "memory"
    if base.endswith("fusion"):
        return "fusion"
    return "xla_op"


def tf_kind(op_type: str) -> str:
    """A TensorFlow op type's category."""
    if "MatMul" in op_type or "Einsum" in op_type:
        return "matmul"
    if op_type.lstrip("_").startswith("Conv") or "Conv2D" in op_type or "Conv3D" in op_type:
        return "convolution"
    if any(k in op_type for k in ("Send", "Recv", "Nccl", "AllReduce", "AllGather")):
        return "communication"
    if "Copy" in op_type:
        return "memory"
    return "tf_op"


def expected_category(plane: str, line: str, ev: dict[str, Any]) -> str:
    stats, host = ev["stats"], plane.startswith("/host:")
    full = ev["full"]
    is_tf_op = host and full.count(":") == 1 and " " not in full and full.split(":")[1].isidentifier()
    if "hlo_category" in stats:
        return str(stats["hlo_category"])
    if "step_num" in stats or line == "Steps":
        return "step"
    if ev["name"] in ("MemoryAllocation", "MemoryDeallocation"):
        return "memory"
    if "hlo_op" in stats or line == "XLA Ops":
        return xla_kind(str(stats.get("hlo_op", ev["name"])))
    if "hlo_module" in stats or line == "XLA Modules":
        return "xla_module"
    if line in ("TensorFlow Ops", "TensorFlow Name Scope", "Framework Ops") or is_tf_op:
        return tf_kind(full.split(":")[1] if is_tf_op else ev["name"])
    if "correlation_id" in stats:
        return "launch" if host else "kernel"
    return "host" if host else "device"


@pytest.mark.parametrize("path", [TF_FILE, JAX_FILE], ids=["tf_keras", "jax"])
def test_op_categories_from_line_and_op_names(path: Path) -> None:
    space = walk(path)
    expected = Counter(expected_category(p["name"], ln["name"], ev) for p in space["planes"]
                       for ln in p["lines"] for ev in ln["events"] if not ev["aggregated"])
    trace = load_with(xspace, path, path.name)
    assert Counter(trace.events["category"].astype(str)) == expected
    # what the real CPU files hold: JAX's XLA ops by name (dot -> matmul, *fusion), TF's op
    # TraceMes ("scope/name:Type") as TF ops, its MatMuls as matmul
    kinds = set(expected)
    if path == JAX_FILE:
        assert {"matmul", "fusion"} <= kinds
    else:
        assert {"matmul", "tf_op"} <= kinds


def test_op_category_rules_on_synthetic_lines() -> None:
    names = {1: "dot.3", 2: "all-reduce.1", 3: "copy-start.2", 4: "convolution.7", 5: "loop_fusion",
             6: "tanh.2", 7: "train/dense/MatMul:MatMul", 8: "train/Relu:Relu", 9: "jit_step(1)",
             10: "fusion.9"}
    xla = plane("/device:GPU:0", {1: "hlo_category"}, names, [
        ("XLA Ops", 1_000, [event(k, 100 * k, 50) for k in range(1, 7)]
         + [event(10, 2_000, 10, stat(1, "convolution fusion"))]),  # the stat wins
        ("XLA Modules", 1_000, [event(9, 0, 5_000)]),
        ("TensorFlow Ops", 1_000, [event(7, 0, 10), event(8, 100, 10)]),
    ])
    trace = load_with(xspace, xla, "synthetic")
    got = dict(zip(trace.events["name"].astype(str), trace.events["category"].astype(str), strict=True))
    assert got == {"dot.3": "matmul", "all-reduce.1": "communication", "copy-start.2": "memory",
                   "convolution.7": "convolution", "loop_fusion": "fusion", "tanh.2": "xla_op",
                   "fusion.9": "convolution fusion", "jit_step(1)": "xla_module",
                   "train/dense/MatMul:MatMul": "matmul", "train/Relu:Relu": "tf_op"}


def test_jax_file_has_xla_ops_with_modules_and_args() -> None:
    space = walk(JAX_FILE)
    hlo = Counter((ev["name"], ev["stats"]["hlo_op"], ev["stats"].get("hlo_module")) for p in space["planes"]
                  for ln in p["lines"] for ev in ln["events"] if "hlo_op" in ev["stats"])
    assert hlo
    trace = load_with(xspace, JAX_FILE, "jax")
    ops = trace.events[trace.events["hlo_module"].notna()]
    got = Counter()
    for i, row in ops.iterrows():
        args = trace.args(int(i))
        assert args["plane"] == "/host:CPU" and "offset_ps" in args
        got[(str(row["name"]), args["hlo_op"], row["hlo_module"])] += 1
    assert got == hlo


def test_sniffing_keeps_xspace_and_step_stats_apart() -> None:
    for path in (TF_FILE, JAX_FILE):
        assert detect(Source(path)).name == "xspace"
        assert not tf_step_stats.sniff(Source(path).head())
    for name in ("002_run_metadata.pb", "002_step_stats.pb", "002_run_metadata.pb.gz"):
        head = Source(DATA / name).head()
        assert not xspace.sniff(head) and detect(Source(DATA / name)).name == "tf_step_stats"


def test_logdir_run_dir_and_several_hosts(tmp_path: Path) -> None:
    direct = profview.load(TF_FILE)
    for where in (TF_LOGDIR, TF_LOGDIR / "plugins" / "profile", TF_FILE.parent):
        trace = profview.load(where)
        assert isinstance(trace, profview.Trace) and trace.format == "xspace"
        assert len(trace.events) == len(direct.events)
        assert trace.metadata["host"] == walk(TF_FILE)["hostnames"][0]  # what TF wrote: the host name
    run = tmp_path / "plugins" / "profile" / "2030_01_01_00_00_00"
    run.mkdir(parents=True)
    shutil.copyfile(JAX_FILE, run / "b.xplane.pb.gz")
    shutil.copyfile(TF_FILE, run / "a.xplane.pb")
    (run / "c.xplane.pb").write_bytes(_synthetic())  # no hostnames: the file name says the host
    old = tmp_path / "plugins" / "profile" / "2020_01_01_00_00_00"
    old.mkdir()
    shutil.copyfile(JAX_FILE, old / "x.xplane.pb.gz")
    # load gives one Trace only: it names the hosts and load_many, which loads them as ranks
    with pytest.raises(ProfviewError, match=r"3 hosts' XSpace profiles \(a.xplane.pb, b.xplane.pb.gz, c.xpl"
                                            r".*profview.load_many"):
        profview.load(tmp_path)
    if importlib.util.find_spec("pyarrow") is not None:
        ts = profview.load_many(tmp_path, cache=False, progress=False)  # the latest run, a rank per host
        assert isinstance(ts, profview.TraceSet) and ts.ranks == [0, 1, 2]
        assert [ts.files[r].name for r in ts.ranks] == ["a.xplane.pb", "b.xplane.pb.gz", "c.xplane.pb"]
        counts = ts.events.groupby("rank").size().to_dict()
        assert counts == {0: len(expected_rows(walk(TF_FILE))), 1: len(expected_rows(walk(JAX_FILE))),
                          2: len(expected_rows(walk(_synthetic())))}
        assert [ts[r].metadata["host"] for r in ts.ranks] == [walk(TF_FILE)["hostnames"][0],
                                                              walk(JAX_FILE)["hostnames"][0], "c"]
    with pytest.raises(ProfviewError, match="no \\*.xplane.pb"):
        profview.load(_empty(tmp_path))


def test_several_hosts_without_the_ranks_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copyfile(TF_FILE, tmp_path / "a.xplane.pb")
    shutil.copyfile(JAX_FILE, tmp_path / "b.xplane.pb.gz")
    with pytest.raises(ProfviewError) as err:
        profview.load(tmp_path)
    text = str(err.value)
    assert "2 hosts' XSpace profiles" in text and "load_many" in text
    assert "pip install 'jupyter_profview[ranks]'" in text
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pyarrow" else real(name, *a))
    with pytest.raises(ImportError, match=r"load_many needs pyarrow: pip install 'jupyter_profview\[ranks"):
        profview.load_many(tmp_path)


def test_several_hosts_as_a_traceset(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    shutil.copyfile(TF_FILE, tmp_path / "host0.xplane.pb")
    shutil.copyfile(JAX_FILE, tmp_path / "host1.xplane.pb.gz")
    ts = profview.load_many(sorted(tmp_path.glob("*.xplane.pb*")), cache=False, progress=False, workers=1)
    counts = ts.events.groupby("rank").size().to_dict()
    assert counts == {0: len(expected_rows(walk(TF_FILE))), 1: len(expected_rows(walk(JAX_FILE)))}


def _empty(tmp_path: Path) -> Path:
    (tmp_path / "empty").mkdir()
    return tmp_path / "empty"


def test_widget_shows_the_profile() -> None:
    trace = profview.load(JAX_FILE)
    w = profview.show(trace)
    assert int(decode_frame(w._overview)["count"].sum()) == len(trace.events) > 0
    assert len(w._tracks) == trace.events["track"].nunique()


# -- synthetic: what CPU runs do not write ----------------------------------------------

STATS = {1: "correlation_id", 2: "bytes_allocated", 3: "allocator_name", 4: "addr", 5: "allocation_bytes",
         6: "tf_op", 7: "hlo_category", 8: "flops", 9: "bytes_accessed"}


def _synthetic(host_plane: str = "/host:CPU") -> bytes:
    host = plane(host_plane, STATS, {1: "cuLaunchKernel", 2: "MemoryAllocation", 3: "MemoryDeallocation"}, [
        ("python", 1_000, [
            event(1, 5_000, 2_000, stat(1, 42)),
            event(2, 10_000, 0, stat(2, 4096), stat(3, "GPU_0_bfc"), stat(4, 0x1000), stat(5, 4096),
                  stat(6, "dense/MatMul")),
            event(2, 20_000, 0, stat(2, 6144), stat(3, "GPU_0_bfc"), stat(4, 0x2000), stat(5, 2048)),
            event(3, 30_000, 0, stat(2, 2048), stat(3, "GPU_0_bfc"), stat(4, 0x1000)),
        ]),
    ])
    device = plane("/device:GPU:0", STATS, {7: "fusion.1"}, [
        ("stream 7", 1_000, [
            event(7, 1_999, 2, stat(1, 42), stat(7, "convolution"), stat(8, 1_000_000), stat(9, 65536)),
            f_int(1, 7) + f_int(5, 3) + f_int(3, 10),  # aggregated: num_occurrences, no offset
        ]),
    ])
    return host + device


def test_synthetic_flows_memory_rounding_and_aggregates() -> None:
    trace = load_with(xspace, _synthetic(), "synthetic")
    base = trace.info.base_time_ns
    ev = trace.events
    kernel = ev[ev["name"] == "fusion.1"].iloc[0]
    # 1_000 ns + 1_999 ps = 1_001 ns (floor); end (1_999 + 2) ps = 2_001 ps -> 1_002 ns
    assert int(kernel["start"]) + base == 1_001 and int(kernel["dur"]) == 1
    assert kernel["category"] == "convolution" and kernel["flops"] == 1_000_000 and kernel["bytes"] == 65536
    assert trace.quality.skipped["aggregated event (num_occurrences, no timestamp)"] == 1
    launch = ev[ev["name"] == "cuLaunchKernel"].index[0]
    flows = trace.flows
    assert len(flows) == 1 and flows.iloc[0]["source"] == launch and flows.iloc[0]["target"] == kernel.name
    assert flows.iloc[0]["category"] == "host->device"
    mem = trace.memory
    assert (mem["time"] + base).tolist() == [1_010, 1_020, 1_030]
    assert mem["bytes"].tolist() == [4096, 6144, 2048]
    assert set(mem["device"].astype(str)) == {"GPU_0_bfc"}
    al = trace.allocations.sort_values("address")
    assert al["bytes"].tolist() == [4096, 2048] and al["owner"].tolist() == ["dense/MatMul", ""]
    assert (al["free_time"] + base).tolist()[0] == 1_030 and al["free_time"].isna().tolist() == [False, True]


def _shared_ids() -> bytes:
    """Three producers and two consumers of one context id; two kernels of one correlation id."""
    names = {1: "_pt", 2: "_p", 3: "_ct", 4: "_c", 5: "correlation_id"}
    metas = {10: "produce", 11: "consume", 12: "cudaLaunch", 13: "kernel"}
    us = 1_000_000  # ps

    def producer(t: int) -> bytes:
        return event(10, t * us, us, stat(1, 7), stat(2, 99))

    def consumer(t: int) -> bytes:
        return event(11, t * us, us, stat(3, 7), stat(4, 99))

    host = plane("/host:CPU", names, metas, [
        ("main", 0, [producer(0), producer(10), producer(20), event(12, 3 * us, us, stat(5, 5)),
                     event(12, 13 * us, us, stat(5, 5))]),
        ("worker", 0, [consumer(12), consumer(5), consumer(-1)])])
    device = plane("/device:GPU:0", names, metas, [("stream", 0, [event(13, 15 * us, us, stat(5, 5)),
                                                                   event(13, 4 * us, us, stat(5, 5))])])
    return host + device


@pytest.mark.parametrize("name", ["tf_keras", "jax", "synthetic"])
def test_args_give_the_files_picoseconds(name: str) -> None:
    """``offset_ps`` / ``duration_ps`` in ``trace.args`` are the file's, to the picosecond (the
    loader keeps only the ps below each ns and rebuilds them), counted by the wire walk."""
    data = {"tf_keras": lambda: TF_FILE.read_bytes(), "jax": lambda: gzip.decompress(JAX_FILE.read_bytes()),
            "synthetic": _synthetic}[name]()
    space = walk(data)
    want = Counter((ev["name"], ev["off"], ev["dur"]) for p in space["planes"] for ln in p["lines"]
                   for ev in ln["events"] if not ev["aggregated"])
    trace = load_with(xspace, data, name)
    got = Counter((str(trace.events.at[i, "name"]), a["offset_ps"], a["duration_ps"])
                  for i in trace.events.index for a in [trace.args(int(i))])
    assert got == want and sum(want.values()) >= 5


def test_shared_context_ids_link_each_consumer_to_one_producer() -> None:
    """A merged or hostile file: three producers and two consumers share one
    context id (and two kernels one correlation id).  Each consumer links to
    the latest producer that starts no later than it (else the first one);
    the producers left over are counted, not drawn: linear, not all pairs."""
    trace = load_with(xspace, _shared_ids(), "shared ids")
    ev, flows = trace.events, trace.flows
    start = (ev["start"] // 1000).to_numpy()  # µs from the first event (-1 µs)
    arrows = sorted((str(ev["name"].iat[s]), int(start[s]) - 1, int(start[t]) - 1)
                    for s, t in zip(flows["source"], flows["target"], strict=True))
    assert arrows == [("cudaLaunch", 3, 4), ("cudaLaunch", 13, 15),
                      ("produce", 0, -1), ("produce", 0, 5), ("produce", 10, 12)]
    # consumers: 3 producers each, 1 linked; kernels: 2 launches each, 1 linked
    assert trace.quality.extra_producers == 3 * 2 + 2 * 1


# -- corruption ---------------------------------------------------------------------------

def test_streamed_in_small_chunks_like_in_one_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    data = TF_FILE.read_bytes() + _synthetic("/host:CPU (second host)")
    whole = list(xspace_proto.top_level_fields([data]))
    assert [n for n, _, _ in whole].count(1) == len(walk(data)["planes"])
    monkeypatch.setattr(xspace_proto, "BIG_FIELD", 16)  # every plane takes the big-field path
    for size in (1, 7, 4096):
        chunks = (data[i:i + size] for i in range(0, len(data), size))
        assert [(n, at, bytes(v)) for n, at, v in xspace_proto.top_level_fields(chunks)] == whole
    assert actual_rows(load_with(xspace, data, "two")) == expected_rows(walk(data))
    with pytest.raises(ProfviewError, match="runs past the end"):
        load_with(xspace, data[:-5], "cut")


def test_truncation_names_the_byte() -> None:
    data = TF_FILE.read_bytes()
    for cut in (3, 100, len(data) // 2, len(data) - 1):
        with pytest.raises(ProfviewError, match=r"byte \d+") as info:
            load_with(xspace, data[:cut], "cut.xplane.pb")
        assert "cut.xplane.pb" in str(info.value) and "XSpace" in str(info.value)


def test_no_events_and_bad_head() -> None:
    with pytest.raises(ProfviewError, match="no timed events"):
        load_with(xspace, plane("/host:CPU", {}, {}, []), "empty")
    with pytest.raises(ProfviewError, match="byte 0"):
        load_with(xspace, b"\x0a\x02\x08\x01junk", "junk")


SMALL = _synthetic()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_mutations(data: st.DataObject) -> None:
    blob = mutate(data, data.draw(st.sampled_from([SMALL, TF_FILE.read_bytes()[:3000]])))
    if not blob:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fuzz_check(xspace, bytes(blob))


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_random_bytes(blob: bytes) -> None:
    fuzz_check(xspace, b"\x0a" + blob)
    fuzz_check(xspace, b"\x0a\x20\x12\x09/host:CPU" + blob)


# -- the native line decoder (xplane.c) against the protobuf reference ------------------------------

def _native_available() -> bool:
    from jupyter_profview import _native

    return _native.available()


def _both(data: bytes) -> list[Any]:
    """The load of ``data`` with the native line decoder and with protobuf's: (tables, quality,
    args of every event), or the error each raised."""
    out = []
    saved = os.environ.get("PROFVIEW_NATIVE")
    for native in ("1", "0"):
        os.environ["PROFVIEW_NATIVE"] = native
        try:
            t = load_with(xspace, data, "both")
        except ProfviewError as exc:
            out.append(("error", exc.reason, exc.position))
            continue
        finally:
            if saved is None:
                os.environ.pop("PROFVIEW_NATIVE", None)
            else:
                os.environ["PROFVIEW_NATIVE"] = saved
        out.append((t.events.to_dict("list"), t.flows.to_dict("list"), t.quality.as_dict(),
                    [t.args(int(i)) for i in t.events.index]))
    return out


@pytest.mark.skipif(not _native_available(), reason="native library not built")
@pytest.mark.parametrize("name", ["tf_keras", "jax", "synthetic", "shared ids"])
def test_native_lines_equal_protobufs(name: str) -> None:
    data = {"tf_keras": lambda: TF_FILE.read_bytes(), "jax": lambda: gzip.decompress(JAX_FILE.read_bytes()),
            "synthetic": _synthetic, "shared ids": _shared_ids}[name]()
    native, reference = _both(data)
    assert native[0] != "error" and native == reference


@pytest.mark.skipif(not _native_available(), reason="native library not built")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_native_lines_equal_protobufs_on_mutations(data: st.DataObject) -> None:
    blob = mutate(data, data.draw(st.sampled_from([SMALL, TF_FILE.read_bytes()[:3000]])))
    if blob:
        native, reference = _both(bytes(blob))
        assert native == reference


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-2**63, 2**63 - 1), st.integers(-3, 3),
                          st.sampled_from([0, 7, -2**62])), min_size=1, max_size=60))
def test_unique_rows_is_numpys_unique_of_the_rows(rows: list[tuple[int, int, int]]) -> None:
    """The hashing ``unique_rows`` gives what ``np.unique(..., axis=0)`` gives (sorted rows, inverse)."""
    table = np.array(rows, np.int64)
    want_rows, want_inverse = np.unique(table, axis=0, return_inverse=True)
    got_rows, got_inverse = xspace_build.unique_rows([table[:, 0], table[:, 1], table[:, 2]])
    assert got_rows.tolist() == want_rows.tolist()
    assert got_inverse.tolist() == want_inverse.reshape(-1).tolist()
