"""``analysis.kernel_efficiency`` against the files themselves: every kernel's numbers equal its
args read with plain ``json``/``gzip`` on every shared GPU trace, aggregates equal a hand
computation, files without the args give NaN rows, and a TraceSet (read from its Parquet cache,
which keeps no args) answers as the files do."""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import jupyter_profview as profview
from jupyter_profview import analysis
from jupyter_profview.errors import ProfviewError
from tests.format_helpers import ns, read_json

HTA = Path(__file__).parent / "data" / "hta"
ALL_FILES = sorted(p.name for p in HTA.glob("*.json.gz"))
#: the issue's rule, written here independently of kinds.py
TENSOR_CORE = re.compile(r"h884|h1688|h16816|s1688|s16816|i8816|hmma|xmma|wgmma|tensorop|gmma|_tf32|"
                         r"bf16.*gemm|gemm.*bf16", re.IGNORECASE)
ARGS = {"blocks_per_sm": "blocks per SM", "warps_per_sm": "warps per SM",
        "occupancy": "est. achieved occupancy %", "registers": "registers per thread",
        "shared_memory": "shared memory"}


def file_kernels(name: str) -> list[dict[str, Any]]:
    """The kernel records of a file (``cat`` kernel, any case), as the stdlib reads them."""
    data = read_json(HTA / name)
    events = data["traceEvents"] if isinstance(data, dict) else data
    return [e for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel"]


@pytest.mark.parametrize("name", ALL_FILES)
def test_every_kernel_equals_its_args(name: str) -> None:
    kernels = file_kernels(name)
    table = analysis.kernel_efficiency(profview.load(HTA / name))
    assert list(table.columns) == ["event", "name", "device", "stream", "dur", "grid", "block",
                                   "blocks_per_sm", "warps_per_sm", "occupancy", "registers",
                                   "shared_memory", "sm_efficiency", "tensor_core"]
    assert len(table) == len(kernels)
    # each file kernel, by (name, correlation, duration): the row's numbers are its args
    expected: dict[tuple[str, int, int], list[dict[str, Any]]] = defaultdict(list)
    for e in kernels:
        expected[(e["name"], int(e["args"]["correlation"]), ns(e["dur"]))].append(e["args"])
    la = profview.load(HTA / name).launches.set_index("kernel")
    for row in table.itertuples(index=False):
        corr = int(la.at[row.event, "correlation"])
        (args,) = expected[(row.name, corr, int(row.dur))]
        assert row.device == args.get("device") and row.stream == args.get("stream")
        for col in ("grid", "block"):  # missing (NaN) where the kernel has none, as the numbers
            got = getattr(row, col)
            assert got == str(args[col]) if col in args else pd.isna(got), (col, args)
        for col, key in ARGS.items():
            got = getattr(row, col)
            assert (math.isnan(got) if key not in args else got == float(args[key])), (col, args)
        bps = args.get("blocks per SM")
        assert (math.isnan(row.sm_efficiency) if bps is None
                else row.sm_efficiency == pytest.approx(min(float(bps), 1.0) * 100))
        assert row.tensor_core == bool(TENSOR_CORE.search(row.name))


def test_files_without_args_give_nan_rows() -> None:
    # ROCm (MI250): kernels with device / stream but no occupancy args
    rocm = "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    table = analysis.kernel_efficiency(profview.load(HTA / rocm))
    assert len(table) == len(file_kernels(rocm)) > 0
    assert table[["blocks_per_sm", "occupancy", "sm_efficiency", "registers"]].isna().all().all()
    by_name = analysis.kernel_efficiency(profview.load(HTA / rocm), by="name")
    assert by_name["sm_efficiency"].isna().all() and by_name["count"].sum() == len(table)
    # a CPU-only trace: no kernels, the columns all the same
    cpu_only = profview.load(HTA / "cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    cpu = analysis.kernel_efficiency(cpu_only, by="op")
    assert len(cpu) == 0 and list(cpu.columns) == ["op", "count", "time", "sm_efficiency", "occupancy",
                                                   "tensor_core_share"]


def kernel(name: str, launched: float, ts: float, dur: float, corr: int,
           **args: Any) -> list[dict[str, Any]]:
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
              "ts": launched, "dur": 2, "args": {"correlation": corr}}
    return [launch, {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                     "args": {"correlation": corr, "device": 0, "stream": 7, **args}}]


def op(name: str, ts: float, dur: float) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": {}}


def test_worked_example_by_name_and_op() -> None:
    """Three kernels, by hand:

    - `ampere_h16816gemm` 10 µs with blocks per SM 0.5, occupancy 25 (SM efficiency 50 %),
      launched in `aten::mm`;
    - `ampere_h16816gemm` 30 µs with blocks per SM 2, occupancy 50 (SM efficiency 100 %),
      launched in `aten::mm`;
    - `elementwise` 20 µs without args, launched in `aten::add`.

    by name: the gemm has count 2, time 40 µs, SM efficiency (10×50 + 30×100) / 40 = 87.5 %,
    occupancy (10×25 + 30×50) / 40 = 43.75 %, tensor-core share 100 %; `elementwise` NaN, NaN, 0 %.
    by op: `aten::mm` the gemm's numbers; `aten::add` the elementwise's."""
    occ = "est. achieved occupancy %"
    events = [op("aten::mm", 0, 20),
              *kernel("ampere_h16816gemm", 5, 100, 10, 1, **{"blocks per SM": 0.5, occ: 25}),
              op("aten::mm", 30, 20),
              *kernel("ampere_h16816gemm", 35, 200, 30, 2, **{"blocks per SM": 2, occ: 50}),
              op("aten::add", 60, 20), *kernel("elementwise", 65, 300, 20, 3)]
    trace = profview.load(json.dumps({"traceEvents": events}).encode())
    by_name = analysis.kernel_efficiency(trace, by="name").set_index("name")
    gemm, ew = by_name.loc["ampere_h16816gemm"], by_name.loc["elementwise"]
    assert (gemm["count"], gemm["time"]) == (2, 40_000)
    assert gemm["sm_efficiency"] == pytest.approx(87.5) and gemm["occupancy"] == pytest.approx(43.75)
    assert gemm["tensor_core_share"] == 100.0
    assert (ew["count"], ew["time"]) == (1, 20_000) and math.isnan(ew["sm_efficiency"])
    assert math.isnan(ew["occupancy"]) and ew["tensor_core_share"] == 0.0
    assert list(by_name.index) == ["ampere_h16816gemm", "elementwise"]  # by time, largest first
    by_op = analysis.kernel_efficiency(trace, by="op").set_index("op")
    assert by_op.loc["aten::mm", "sm_efficiency"] == pytest.approx(87.5)
    assert by_op.loc["aten::add", "time"] == 20_000 and math.isnan(by_op.loc["aten::add", "occupancy"])


def test_aggregate_on_a_real_trace_equals_the_json() -> None:
    """Per kernel name on the A100 NCCL trace: count, time and the duration-weighted SM efficiency
    and occupancy, counted from the JSON."""
    name = "nccl_parser_config_nccl_data.json.gz"
    sums: dict[str, list[Any]] = defaultdict(lambda: [0, 0, 0.0, 0.0])
    for e in file_kernels(name):
        d, a = ns(e["dur"]), e["args"]
        s = sums[e["name"]]
        s[0] += 1
        s[1] += d
        s[2] += d * min(float(a["blocks per SM"]), 1.0) * 100
        s[3] += d * float(a["est. achieved occupancy %"])
    table = analysis.kernel_efficiency(profview.load(HTA / name), by="name").set_index("name")
    assert len(table) == len(sums)
    for kname, (count, time, sm, occ) in sums.items():
        row = table.loc[kname]
        assert (row["count"], row["time"]) == (count, time)
        if time:
            assert row["sm_efficiency"] == pytest.approx(sm / time, rel=1e-12)
            assert row["occupancy"] == pytest.approx(occ / time, rel=1e-12)
    # the table is sorted by time
    assert (np.diff(table["time"].to_numpy()) <= 0).all()


def test_traceset_from_the_cache_equals_the_files(tmp_path: Path) -> None:
    files = [HTA / "trace_filter_sampled_rank-0.json.gz", HTA / "trace_filter_sampled_rank-1.json.gz"]
    with pytest.warns(UserWarning):  # 126 of the 128 ranks have no file
        ts = profview.load_many(files, cache=tmp_path, progress=False, workers=1)
    for by in ("kernel", "name"):
        both = analysis.kernel_efficiency(ts, by=by)
        assert list(both.columns)[0] == "rank"
        for rank, path in zip((0, 1), files, strict=True):
            mine = both[both["rank"] == rank].drop(columns="rank").reset_index(drop=True)
            alone = analysis.kernel_efficiency(profview.load(path), by=by)
            if by == "kernel":  # categories differ in order (cached vs searched)
                mine, alone = (f.astype({"grid": str, "block": str}) for f in (mine, alone))
            pd.testing.assert_frame_equal(mine, alone, check_categorical=False)
    # a rank's Trace read from the cache (no args) answers from the cached table too
    alone = analysis.kernel_efficiency(profview.load(files[0]))
    from_cache = analysis.kernel_efficiency(ts[0])
    np.testing.assert_array_equal(from_cache["blocks_per_sm"].to_numpy(), alone["blocks_per_sm"].to_numpy())


def test_bad_by_raises_profview_error() -> None:
    with pytest.raises(ProfviewError, match="by must be"):
        analysis.kernel_efficiency(profview.load(HTA / ALL_FILES[0]), by="stream")


@pytest.mark.parametrize("name", ["nccl_parser_config_nccl_data.json.gz",
                                  "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"])
def test_args_parsed_in_one_go_equal_one_by_one(name: str) -> None:
    """`_ArgsLookup.many` (one orjson parse over many events' args) gives `trace.args(id)` for
    every event, in the order asked, with or without args."""
    trace = profview.load(HTA / name)
    ids = trace.events.index.to_numpy(np.int64)[::-1]
    assert trace._args.many(ids) == [trace.args(int(i)) for i in ids]  # type: ignore[union-attr]
