"""How close each GEMM / convolution / attention op runs to the hardware: achieved FLOP/s and
bandwidth against the device's peak, by the roofline.

Definition (`op_efficiency`):

rows
:   One row per CPU op instance (``cpu_op``) whose FLOPs are modelled (`MODELLED`) from its
    ``Input Dims`` (recorded with ``record_shapes=True``), that launched device activities, and
    that has no modelled op inside it (``aten::linear`` -> ``aten::addmm``: the row is the addmm,
    so each kernel counts once).

flops
:   As torch's own counter (``torch.utils.flop_counter``): ``mm``/``addmm`` 2·M·N·K (the bias add
    of addmm not counted), ``bmm``/``baddbmm`` 2·B·M·N·K, ``matmul`` 2·(broadcast batch)·M·N·K
    (a vector operand is not modelled: torch counts matrix-vector products as 0),
    ``linear`` 2·(rows of the input)·N·K, convolutions 2·batch·prod(weight)·prod(output spatial)
    (the output's size from ``Concrete Inputs``: stride, padding, dilation; without them the op
    is not modelled), ``scaled_dot_product_attention`` 2·B·H·L·S·(E + Ev).

bytes
:   The tensor inputs and the output, at their dtype (``Input type``): the least traffic the op
    can have.

gpu_time
:   The summed duration of the device activities launched under the op: those whose issuing op
    (``trace.launches``' ``cpu_op``) is the op or nested in it.

peak
:   `PEAKS`: dense peak FLOP/s per dtype and memory bandwidth from the vendors' datasheets,
    matched on the device name of ``deviceProperties``; NaN when the device is not in the table.
    fp32 ops use the plain fp32 peak (not TF32); fp16 / bf16 the tensor-core peak.

roofline
:   ``intensity`` = flops / bytes; the ridge is peak_flops / peak_bandwidth.  ``bound`` is
    ``memory`` below the ridge, ``compute`` above; ``pct_of_peak`` = achieved TFLOP/s / peak
    TFLOP/s x 100, ``pct_of_roofline`` = achieved / the roof at its intensity x 100.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..dtypes import dtype_bytes
from ..errors import ProfviewError
from ..model import Trace
from ..nesting import climb
from .columns import among, thread_keys
from .traceset import is_traceset

if TYPE_CHECKING:
    from ..ranks.traceset import TraceSet

MODELLED = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
            "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution",
            "aten::cudnn_convolution", "aten::scaled_dot_product_attention")
_PRECISION = {"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16"}

#: Device name pattern -> dense peak TFLOP/s by precision and memory bandwidth (GB/s), from the
#: vendors' datasheets (NVIDIA V100 SXM2, A100 SXM4 40/80 GB, H100 SXM5 / PCIe, H200 SXM; AMD
#: Instinct MI250 / MI250X, MI300X).  The first pattern that matches the name wins.
PEAKS: list[tuple[str, dict[str, float]]] = [
    (r"V100", {"fp64": 7.8, "fp32": 15.7, "fp16": 125.0, "bf16": math.nan, "gbps": 900.0}),
    (r"A100.*80GB", {"fp64": 9.7, "fp32": 19.5, "fp16": 312.0, "bf16": 312.0, "gbps": 2039.0}),
    (r"A100", {"fp64": 9.7, "fp32": 19.5, "fp16": 312.0, "bf16": 312.0, "gbps": 1555.0}),
    (r"H200", {"fp64": 34.0, "fp32": 67.0, "fp16": 989.4, "bf16": 989.4, "gbps": 4800.0}),
    (r"H100.*PCIe", {"fp64": 26.0, "fp32": 51.0, "fp16": 756.5, "bf16": 756.5, "gbps": 2000.0}),
    (r"H100", {"fp64": 34.0, "fp32": 67.0, "fp16": 989.4, "bf16": 989.4, "gbps": 3350.0}),
    (r"MI250X", {"fp64": 47.9, "fp32": 47.9, "fp16": 383.0, "bf16": 383.0, "gbps": 3276.8}),
    (r"MI250", {"fp64": 45.3, "fp32": 45.3, "fp16": 362.1, "bf16": 362.1, "gbps": 3276.8}),
    (r"MI300X", {"fp64": 81.7, "fp32": 163.4, "fp16": 1307.4, "bf16": 1307.4, "gbps": 5300.0}),
]
COLUMNS = ("event", "name", "shapes", "dtype", "flops", "bytes", "gpu_time", "tflops", "gbps", "intensity",
           "peak_tflops", "peak_gbps", "pct_of_peak", "pct_of_roofline", "bound", "device")


def device_peak(name: str, precision: str) -> tuple[float, float]:
    """(peak TFLOP/s at ``precision``, peak GB/s) of a device name; NaNs when unknown."""
    for pattern, peaks in PEAKS:
        if re.search(pattern, name):
            return peaks.get(precision, math.nan), peaks["gbps"]
    return math.nan, math.nan


def _prod(xs: Any) -> float:
    """The product of a shape's sizes; NaN when one is not an integer (the file's args are
    untrusted: ``Input Dims`` may hold text), so the numbers it feeds are NaN, never an error."""
    out = 1
    for x in xs:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            return math.nan
        out *= int(x)
    return out


def _conv_out(x: list[int], w: list[int], concrete: list[Any], transposed: bool) -> list[int] | None:
    """Output spatial size of a convolution from ``Concrete Inputs`` (stride, padding, dilation)."""
    spatial = len(x) - 2

    def ints(v: Any) -> list[int] | None:
        if isinstance(v, str) and v.strip().startswith("["):
            v = v.strip("[] ").split(",") if v.strip("[] ") else []
        if isinstance(v, (list, tuple)):
            try:
                vals = [int(str(a).strip()) for a in v]
            except ValueError:
                return None
            return vals * spatial if len(vals) == 1 else vals
        return None

    if len(concrete) < 6:
        return None
    stride, padding, dilation = ints(concrete[3]), ints(concrete[4]), ints(concrete[5])
    if not stride or padding is None or not dilation or len(stride) != spatial:
        return None
    if transposed:
        return list(x[2:])
    return [(x[2 + i] + 2 * padding[i] - dilation[i] * (w[2 + i] - 1) - 1) // stride[i] + 1
            for i in range(spatial)]


def op_flops(name: str, dims: list[list[int]],
             concrete: list[Any] | None = None) -> tuple[float, list[int] | None]:
    """(FLOPs, output shape) of one op from its input shapes, by torch's flop counter; (NaN, None)
    when the shapes do not fit the formula."""
    try:
        if name in ("aten::mm", "aten::addmm"):
            a, b = (dims[0], dims[1]) if name == "aten::mm" else (dims[1], dims[2])
            m, k = a
            k2, n = b
            return (2.0 * m * n * k if k == k2 else math.nan), [m, n]
        if name in ("aten::bmm", "aten::baddbmm"):
            a, b = (dims[0], dims[1]) if name == "aten::bmm" else (dims[1], dims[2])
            bb, m, k = a
            _, k2, n = b
            return (2.0 * bb * m * n * k if k == k2 else math.nan), [bb, m, n]
        if name == "aten::matmul":
            a, b = list(dims[0]), list(dims[1])
            if len(a) < 2 or len(b) < 2:  # matrix-vector: torch's counter has no formula (0)
                return math.nan, None
            batch = list(np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2])))
            m, k, n = a[-2], a[-1], b[-1]
            if k != b[-2]:
                return math.nan, None
            return 2.0 * _prod(batch) * m * n * k, [*batch, m, n]
        if name == "aten::linear":
            x, w = dims[0], dims[1]
            n, k = w
            return (2.0 * _prod(x[:-1]) * n * k if x[-1] == k else math.nan), [*x[:-1], n]
        if name == "aten::scaled_dot_product_attention":
            q, k_, v = dims[0], dims[1], dims[2]
            *batch, l_, e = q
            s, ev = k_[-2], v[-1]
            return 2.0 * _prod(batch) * l_ * s * (e + ev), [*batch, l_, ev]
        if "conv" in name:
            x, w = dims[0], dims[1]
            transposed = False
            if name in ("aten::convolution", "aten::_convolution") and concrete and len(concrete) > 6:
                transposed = str(concrete[6]).strip().lower() in ("true", "1")
            spatial = _conv_out(x, w, concrete or [], transposed)
            if spatial is None:
                return math.nan, None
            flops = 2.0 * x[0] * _prod(w) * _prod(spatial)
            return flops, [x[0], w[1] if transposed else w[0], *spatial]
    except (IndexError, ValueError, TypeError):
        return math.nan, None
    return math.nan, None


def op_efficiency(trace: Trace | TraceSet, *, device: str | None = None) -> pd.DataFrame:
    """Achieved TFLOP/s and GB/s of every modelled op against the device's peak (module doc).
    ``device``: the name to look the peaks up by, for a trace whose ``deviceProperties`` name is
    generic (ROCm reports ``AMD Radeon Graphics`` for an MI250).  Not for a TraceSet: its ranks
    keep no args, so no shapes (a [ProfviewError][jupyter_profview.ProfviewError]; load the rank's
    file with `profview.load`)."""
    if is_traceset(trace):
        raise ProfviewError("op_efficiency reads each op's input shapes (its args), which the ranks of a "
                            "TraceSet do not keep", expected="one rank's file, loaded with profview.load")
    ev = trace.events
    la = trace.launches
    names = ev["name"]
    modelled = among(names, MODELLED) & among(ev["category"], ("cpu_op",))
    pos = np.flatnonzero(modelled)
    linked = la[la["launch"].notna()]
    if len(pos) == 0 or len(linked) == 0:
        return _empty()
    start = ev["start"].to_numpy(np.int64)
    end = start + ev["dur"].to_numpy(np.int64)
    thread = thread_keys(ev)
    # innermost: per thread by start (longer first), drop an op that contains the next one
    order = pos[np.lexsort((-(end[pos] - start[pos]), start[pos], thread[pos]))]
    same = thread[order[1:]] == thread[order[:-1]]
    contains = same & (start[order[1:]] < end[order[:-1]]) & (end[order[1:]] <= end[order[:-1]])
    inner = order[np.append(~contains, True)]
    # each launch's op: the launch's issuing op (`trace.launches`' cpu_op) or the nearest op above
    # it that is an innermost modelled op (the one ancestor walk)
    is_inner = np.zeros(len(ev), bool)
    is_inner[inner] = True
    issuing = ev.index.get_indexer(pd.Index(linked["cpu_op"].to_numpy(np.int64, na_value=-1)))
    op = climb(ev["parent"].to_numpy(np.int64), issuing, lambda _which, at: is_inner[at])
    placed = op >= 0
    op, kdur = op[placed], linked["kernel_dur"].to_numpy(np.int64)[placed]
    lstart = linked["launch_start"].to_numpy(np.int64)[placed]
    gpu = linked["gpu"].astype(str).to_numpy()[placed]
    inner = np.unique(op)  # the innermost ops that launched device activities
    at = np.searchsorted(inner, op)
    gpu_times = np.bincount(at, weights=kdur, minlength=len(inner)).astype(np.int64)
    first = np.lexsort((lstart, at))  # by op, then launch start: each op's first launch first
    first_gpu = gpu[first[np.searchsorted(at[first], np.arange(len(inner)))]]
    devices = _device_names(trace)
    ids = ev.index.to_numpy(np.int64)[inner]
    cats = np.asarray(names.cat.categories.astype(str), dtype=object) \
        if isinstance(names.dtype, pd.CategoricalDtype) else None
    name_of = cats[names.cat.codes.to_numpy()[inner]] if cats is not None \
        else names.iloc[inner].astype(str).to_numpy(object)
    # each op's input shapes, types and (convolutions) concrete inputs as codes into their
    # distinct values: every op of one (name, shapes, types, concrete inputs, device) has the same
    # model, made once
    dims, dims_values = trace.arg_values(ids, "Input Dims")
    types, types_values = trace.arg_values(ids, "Input type")
    conv = np.fromiter(("conv" in str(n) for n in name_of.tolist()), bool, len(ids))
    concrete = np.full(len(ids), -1, np.int64)
    concrete_values: list[Any] = []
    if conv.any():
        concrete[conv], concrete_values = trace.arg_values(ids[conv], "Concrete Inputs")
    columns = (pd.factorize(np.asarray(name_of, dtype=object))[0], dims, types, concrete,
               pd.factorize(np.asarray(first_gpu, dtype=object))[0])
    parts = np.stack(columns, axis=1)
    _, first, codes = np.unique(parts, axis=0, return_index=True, return_inverse=True)
    codes = codes.reshape(-1)

    def value(table: list[Any], code: int) -> Any:
        return table[code] if code >= 0 else None

    model = [_model(str(name_of[k]), value(dims_values, int(dims[k])), value(types_values, int(types[k])),
                    value(concrete_values, int(concrete[k])),
                    device or devices.get(str(first_gpu[k]), str(first_gpu[k]))) for k in first.tolist()]
    ok = np.array([m is not None for m in model], bool)
    keep = ok[codes]
    if not keep.any():
        return _empty()
    picked = codes[keep]
    out = pd.DataFrame({"event": ids[keep]})
    for col in ("name", "shapes", "dtype", "flops", "bytes", "device", "peak_tflops", "peak_gbps"):
        values = np.array([m[col] if m is not None else None for m in model],
                          dtype=object if col in ("name", "shapes", "dtype", "device") else np.float64)
        out[col] = values[picked]
    out["gpu_time"] = gpu_times[keep].astype(np.int64)
    t = out["gpu_time"].to_numpy(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["tflops"] = np.where(t > 0, out["flops"] / t / 1e3, np.nan)   # flop/ns = GFLOP/s
        out["gbps"] = np.where(t > 0, out["bytes"] / t, np.nan)            # byte/ns = GB/s
        out["intensity"] = out["flops"] / out["bytes"]
        ridge = out["peak_tflops"] * 1e3 / out["peak_gbps"]                # flop/byte
        roof = np.minimum(out["peak_tflops"], out["intensity"] * out["peak_gbps"] / 1e3)
        out["pct_of_peak"] = out["tflops"] / out["peak_tflops"] * 100
        out["pct_of_roofline"] = out["tflops"] / roof * 100
    kind = np.where(out["intensity"].to_numpy() < ridge.to_numpy(), "memory", "compute").astype(object)
    kind[ridge.isna().to_numpy()] = None
    out["bound"] = kind
    return out[list(COLUMNS)]


def _model(name: str, dims: Any, types: Any, concrete: Any, named: str) -> dict[str, Any] | None:
    """The efficiency model of one kind of op (everything but its GPU time) from its args'
    `Input Dims`, `Input type` and `Concrete Inputs`, or None where the shapes do not fit its
    formula."""
    if not isinstance(dims, list) or not dims:
        return None
    types = types if isinstance(types, list) else []
    concrete = concrete if "conv" in name else None
    flops, out_shape = op_flops(name, dims, concrete if isinstance(concrete, list) else None)
    if not math.isfinite(flops) or out_shape is None:
        return None
    dtype = str(types[0]) if types else ""
    size = _bytes_of(dtype)
    tensors = [(d, str(t)) for d, t in zip(dims, list(types) + [""] * len(dims), strict=False)
               if isinstance(d, list) and d]
    nbytes = sum(_prod(d) * _bytes_of(t) for d, t in tensors) + _prod(out_shape) * size
    peak_tflops, peak_gbps = device_peak(named, _PRECISION.get(dtype, ""))
    return {"name": name, "shapes": str(dims), "dtype": dtype, "flops": flops, "bytes": float(nbytes),
            "device": named, "peak_tflops": peak_tflops, "peak_gbps": peak_gbps}


def _bytes_of(dtype: Any) -> float:
    """Bytes per element of an `Input type` name (`jupyter_profview.dtypes`), NaN if unknown."""
    size = dtype_bytes(dtype)
    return math.nan if size is None else float(size)


def _device_names(trace: Trace) -> dict[str, str]:
    """GPU label of ``trace.launches`` -> the device's name from ``deviceProperties``."""
    props = trace.info.device_properties
    by_id = {int(p["id"]): str(p.get("name", "")) for p in props if isinstance(p, dict) and "id" in p}
    la = trace.launches[["gpu", "device"]].drop_duplicates("gpu")  # the first row of each device
    out: dict[str, str] = {}
    for label, dev in zip(la["gpu"].astype(str), la["device"].to_numpy(np.int64, na_value=-1), strict=True):
        out[label] = by_id.get(int(dev), label)
    return out


def _empty() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object if c in ("name", "shapes", "dtype", "bound", "device")
                                      else np.float64) for c in COLUMNS})
