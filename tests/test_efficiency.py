"""``analysis.op_efficiency``: FLOPs from Kineto's ``Input Dims`` equal torch's own flop counter
(``torch.utils.flop_counter.FlopCounterMode`` run on tensors of those shapes), the GPU time is
counted from the raw JSON, and the roofline numbers follow from the documented peak table."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import jupyter_profview as profview
from jupyter_profview.analysis import op_efficiency
from jupyter_profview.analysis.efficiency import device_peak, op_flops
from tests.format_helpers import ns, read_json

AMD = Path(__file__).parent / "data" / "hta" / "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"

# (op, input shapes, Concrete Inputs, the torch call that makes the same op)
CASES: list[tuple[str, list[list[int]], list[str] | None, str]] = [
    ("aten::mm", [[64, 32], [32, 48]], None, "torch.mm(t(64, 32), t(32, 48))"),
    ("aten::addmm", [[48], [64, 32], [32, 48], [], []], None, "torch.addmm(t(48), t(64, 32), t(32, 48))"),
    ("aten::bmm", [[3, 64, 32], [3, 32, 48]], None, "torch.bmm(t(3, 64, 32), t(3, 32, 48))"),
    ("aten::baddbmm", [[3, 64, 48], [3, 64, 32], [3, 32, 48], [], []], None,
     "torch.baddbmm(t(3, 64, 48), t(3, 64, 32), t(3, 32, 48))"),
    ("aten::matmul", [[5, 1, 64, 32], [3, 32, 48]], None, "torch.matmul(t(5, 1, 64, 32), t(3, 32, 48))"),
    ("aten::matmul", [[4, 64, 32], [32, 48]], None, "torch.matmul(t(4, 64, 32), t(32, 48))"),
    ("aten::linear", [[4, 16, 32], [48, 32], [48]], None,
     "torch.nn.functional.linear(t(4, 16, 32), t(48, 32), t(48))"),
    ("aten::conv2d", [[2, 3, 16, 16], [4, 3, 3, 3], [], [], [], [], []],
     ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"],
     "torch.nn.functional.conv2d(t(2, 3, 16, 16), t(4, 3, 3, 3), stride=2, padding=1)"),
    ("aten::conv2d", [[1, 8, 20, 20], [6, 8, 5, 5], [6], [], [], [], []],
     ["", "", "", "[1, 1]", "[0, 0]", "[2, 2]", "1"],
     "torch.nn.functional.conv2d(t(1, 8, 20, 20), t(6, 8, 5, 5), t(6), dilation=2)"),
    ("aten::scaled_dot_product_attention", [[2, 4, 8, 16], [2, 4, 10, 16], [2, 4, 10, 32]], None,
     "torch.nn.functional.scaled_dot_product_attention(t(2, 4, 8, 16), t(2, 4, 10, 16), t(2, 4, 10, 32))"),
]


def torch_flops(call: str) -> int:
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    def t(*shape: int) -> Any:
        return torch.randn(*shape)

    with FlopCounterMode(display=False) as counter:
        eval(call, {"torch": torch, "t": t})  # noqa: S307 -- the test's own literal calls above
    return int(counter.get_total_flops())


@pytest.mark.parametrize(("op", "dims", "concrete", "call"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_flops_equal_torchs_own_counter(op: str, dims: list[list[int]], concrete: list[str] | None,
                                        call: str) -> None:
    flops, _ = op_flops(op, dims, concrete)
    assert flops == torch_flops(call)


def test_conv_without_concrete_inputs_is_not_modelled() -> None:
    flops, out = op_flops("aten::conv2d", [[2, 3, 16, 16], [4, 3, 3, 3]], None)
    assert math.isnan(flops) and out is None
    assert math.isnan(op_flops("aten::mm", [[4, 5], [6, 7]])[0])  # mismatched K
    # matrix-vector: torch's counter has no formula for it (it counts 0), so no row here either
    assert torch_flops("torch.matmul(t(64, 32), t(32))") == 0
    assert math.isnan(op_flops("aten::matmul", [[64, 32], [32]])[0])


def test_real_rocm_trace_rows_flops_and_gpu_time_from_the_json() -> None:
    doc = read_json(AMD)
    events = [e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime"}
    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    got = op_efficiency(profview.load(AMD))
    # the GEMMs of the run: aten::linear's aten::addmm (linear is not a row: the addmm is inside it)
    # and the backward aten::mm; each with its kernels counted from the JSON
    ops = [e for e in events if e.get("name") in ("aten::addmm", "aten::mm") and e["args"].get("Input Dims")]
    want = {}
    for op in ops:
        t0, t1 = ns(op["ts"]), ns(op["ts"]) + ns(op["dur"])
        under = [k for k in kernels if (c := calls.get(k["args"].get("correlation"))) is not None
                 and c["tid"] == op["tid"] and t0 <= ns(c["ts"]) < t1]
        if under:
            want[op["name"]] = (sum(ns(k["dur"]) for k in under), op["args"]["Input Dims"])
    assert sorted(got["name"]) == sorted(want)
    for row in got.itertuples():
        gpu_time, dims = want[row.name]
        assert row.gpu_time == gpu_time
        assert row.shapes == str(dims)
        assert row.flops == op_flops(row.name, dims)[0]
        assert row.tflops == pytest.approx(row.flops / gpu_time / 1e3)
    # the device reports itself as "AMD Radeon Graphics": not in the peak table -> NaN, no error
    assert got["peak_tflops"].isna().all() and got["bound"].isna().all()


def kineto_gemm(device: str, dtype: str, m: int, k: int, n: int, kernel_us: float) -> Any:
    x = {"ph": "X", "pid": 1, "tid": 1}
    events = [
        {**x, "name": "aten::mm", "cat": "cpu_op", "ts": 0, "dur": 50,
         "args": {"Input Dims": [[m, k], [k, n]], "Input type": [dtype, dtype]}},
        {**x, "name": "cudaLaunchKernel", "cat": "cuda_runtime", "ts": 10, "dur": 5,
         "args": {"correlation": 7}},
        {"ph": "X", "pid": 0, "tid": 7, "name": "gemm", "cat": "kernel", "ts": 20, "dur": kernel_us,
         "args": {"correlation": 7, "stream": 7, "device": 0}},
    ]
    doc = {"deviceProperties": [{"id": 0, "name": device}], "traceEvents": events}
    return profview.load(json.dumps(doc).encode())


def test_roofline_on_a_known_device() -> None:
    # A100 SXM4 80GB, bf16: 312 TFLOP/s dense, 2039 GB/s -> ridge 153 flop/byte.
    # 4096^3 bf16 GEMM in 1 ms: 2*4096^3 = 137.4 GFLOP -> 137.4 TFLOP/s = 44.0 % of peak;
    # bytes 3 * 4096^2 * 2 = 100.7 MB -> intensity 1365 flop/byte: compute-bound.
    row = op_efficiency(kineto_gemm("NVIDIA A100-SXM4-80GB", "c10::BFloat16", 4096, 4096, 4096, 1000)).iloc[0]
    flops = 2 * 4096**3
    assert row.flops == flops and row.bytes == 3 * 4096 * 4096 * 2 and row.gpu_time == 1_000_000
    assert row.peak_tflops == 312.0 and row.peak_gbps == 2039.0
    tflops = flops / 1e-3 / 1e12  # flops in 1 ms, in TFLOP/s
    assert row.tflops == pytest.approx(tflops) and tflops == pytest.approx(137.44, abs=0.01)
    assert row.pct_of_peak == pytest.approx(tflops / 312.0 * 100)
    assert row.pct_of_peak == pytest.approx(44.05, abs=0.01)
    assert row.bound == "compute" and row.pct_of_roofline == pytest.approx(row.pct_of_peak)
    # a skinny fp32 GEMM on a V100: 8 x 4096 x 4096 -> intensity ~ 4 flop/byte < ridge 17.4: memory-bound
    thin = op_efficiency(kineto_gemm("Tesla V100-SXM2-16GB", "float", 8, 4096, 4096, 100)).iloc[0]
    assert thin.bound == "memory" and thin.peak_gbps == 900.0
    roof_tflops = thin.intensity * 900.0 / 1e3
    assert thin.pct_of_roofline == pytest.approx(thin.tflops / roof_tflops * 100)


def test_peak_table_covers_the_named_devices() -> None:
    for name, want in [("NVIDIA H100 80GB HBM3", 989.4), ("NVIDIA H100 PCIe", 756.5), ("NVIDIA H200", 989.4),
                       ("AMD Instinct MI250X", 383.0), ("AMD Instinct MI300X", 1307.4),
                       ("NVIDIA A100-SXM4-40GB", 312.0), ("Tesla V100-SXM2-32GB", 125.0)]:
        assert device_peak(name, "fp16")[0] == want
    assert all(math.isnan(v) for v in device_peak("Some NPU", "fp16"))


def test_device_override_and_the_roofline_chart() -> None:
    from jupyter_profview import charts_gpu

    # the MI250 run reports "AMD Radeon Graphics": name the device to get its peaks (fp32 45.3)
    eff = op_efficiency(profview.load(AMD), device="AMD Instinct MI250")
    assert (eff["peak_tflops"] == 45.3).all() and (eff["peak_gbps"] == 3276.8).all()
    assert (eff["bound"] == "memory").all()  # 5-row GEMMs: ~2.3 flop/byte, far below the ridge
    spec = charts_gpu.roofline_chart(eff).to_dict()
    layers = spec["layer"]
    assert len(layers) == 2 and len(spec["datasets"][layers[1]["data"]["name"]]) == len(eff)
    empty = charts_gpu.roofline_chart(eff.iloc[:0]).to_dict()
    assert "record_shapes=True" in str(empty)


def test_table_efficiency_tab_lists_the_selected_ops() -> None:
    """The widget's ``_table`` efficiency rows, requested as the front end does."""
    from jupyter_profview.widget import rpc
    from jupyter_profview.widget.codec import decode_frame

    trace = profview.load(AMD)
    eff = op_efficiency(trace)
    w = profview.show(trace)
    # selecting the run's kernels picks the ops that issued them: the addmm and the mm
    w._selection = {"ids": trace.launches["kernel"].tolist()}
    reply, _ = rpc.table(w._data, {"mode": "selection", "sort": "dur", "descending": True},
                         w.session.selected)
    assert reply["efficiency"] == len(eff) == 2
    reply, frames = rpc.table(w._data, {"mode": "selection", "kind": "efficiency", "sort": "tflops",
                                        "descending": True, "offset": 0, "limit": 50}, w.session.selected)
    f = decode_frame(frames[0])
    want = eff.sort_values("tflops", ascending=False)
    assert list(f["id"]) == list(want["event"]) and list(f["tflops"]) == list(want["tflops"])
    assert reply["total"] == float(eff["gpu_time"].sum())
    assert reply["tflops"] == pytest.approx(eff["flops"].sum() / eff["gpu_time"].sum() / 1e3)
    # selecting one unrelated event picks no op
    w._selection = {"ids": [int(trace.events.index[0])]}
    reply, _ = rpc.table(w._data, {"mode": "selection"}, w.session.selected)
    assert reply["efficiency"] == 0
