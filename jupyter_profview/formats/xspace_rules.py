"""What XSpace stats and names mean for the events table: the stats that feed a column
(`STAT_COLUMN`) or decide the category, and the category rules (see
[jupyter_profview.formats.xspace][] for the mapping).  Used by
[jupyter_profview.formats.xspace_build][] once per event metadata entry and by
[jupyter_profview.formats.xspace_columns][] per group of events."""

from __future__ import annotations

import re
from typing import Any

LIMIT = 2**62
MEMORY_EVENTS = ("MemoryAllocation", "MemoryDeallocation")
INT_COLUMNS = ("flops", "bytes", "correlation_id", "step")
STR_COLUMNS = ("long_name", "shapes", "hlo_module", "tf_op")
SHAPE_STATS = ("shape_with_layout", "tensor_shapes", "shapes")
CONTEXT_STATS = ("_p", "_pt", "_c", "_ct")
# stats that feed a column or the category
CATEGORY_STATS = frozenset({"hlo_category", "step_num", "hlo_op", "hlo_module", "correlation_id"})
VALUED_STATS = frozenset({"hlo_category", "hlo_op"})  # the others decide by being there
STAT_COLUMN = {"flops": "flops", "model_flops": "flops", "bytes_accessed": "bytes",
               "correlation_id": "correlation_id", "step_num": "step", "hlo_module": "hlo_module",
               "tf_op": "tf_op", **{k: "shapes" for k in SHAPE_STATS}}
TF_OP_LINES = ("TensorFlow Ops", "TensorFlow Name Scope", "Framework Ops")
# A TensorFlow op's TraceMe on a host thread: "scope/name:Type" (XProf's TF op full name)
TF_OP_NAME = re.compile(r"^[\w./\-]+:([A-Za-z_]\w*)$")
# Op name -> category where no hlo_category stat says it: the first rule with a token of the
# name wins (tokens: the name split at non-letters and lowerCase->UpperCase, lower-cased, and
# joined with "_", so "all-reduce.1" has "all_reduce" and "_MklNativeFusedMatMul" has "mat_mul").
OP_RULES = (
    ("communication", ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute",
                       "collective_broadcast", "allreduce", "allgather", "reducescatter", "alltoall",
                       "send", "recv", "nccl")),
    ("convolution", ("convolution", "conv")),
    ("matmul", ("dot", "gemm", "matmul", "mat_mul", "cublas", "einsum")),
    ("memory", ("copy", "memcpy", "memset")),
    ("fusion", ("fusion",)),
)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_NON_LETTERS = re.compile(r"[^a-z]+")


def stat_value(stat: Any, names: dict[int, str]) -> Any:
    which = stat.WhichOneof("value")
    if which is None:
        return None
    if which == "ref_value":
        return names.get(stat.ref_value, f"<stat metadata {stat.ref_value}>")
    if which == "bytes_value":
        return f"<{len(stat.bytes_value)} bytes>"
    return getattr(stat, which)


def as_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)) and abs(value) < LIMIT:
        return int(value)
    return None


def op_category(op: str) -> str | None:
    """The category of an XLA / TensorFlow op from its name (`OP_RULES`), or None:
    ``dot.4`` -> ``matmul``, ``multiply_add_fusion`` -> ``fusion``, ``all-reduce.1`` ->
    ``communication``, ``copy-start`` -> ``memory``, ``Conv2D`` -> ``convolution``."""
    key = "_" + _NON_LETTERS.sub("_", _CAMEL.sub("_", op).lower()).strip("_") + "_"
    for cat, tokens in OP_RULES:
        if any(f"_{t}_" in key for t in tokens):
            return cat
    return None


def category(stats: dict[str, Any], line: str, host: bool, name: str, full_name: str | None = None) -> str:
    """An event's category (see `.xspace`); ``name`` is its shown name, ``full_name``
    its metadata ``name`` where that differs."""
    if "hlo_category" in stats:
        return str(stats["hlo_category"])
    if "step_num" in stats or line == "Steps":
        return "step"
    if name in MEMORY_EVENTS:
        return "memory"
    if "hlo_op" in stats or line == "XLA Ops":
        return op_category(str(stats.get("hlo_op", name))) or "xla_op"
    if "hlo_module" in stats or line == "XLA Modules":
        return "xla_module"
    tf_op = TF_OP_NAME.match(full_name or name) if host or line in TF_OP_LINES else None
    if line in TF_OP_LINES or tf_op:
        return op_category(tf_op.group(1) if tf_op else name) or "tf_op"
    if "correlation_id" in stats:
        return "launch" if host else "kernel"
    return "host" if host else "device"


def derived(stats: dict[str, Any]) -> dict[str, Any]:
    """The stat-fed columns of one event (or metadata entry)."""
    shapes = next((stats[k] for k in SHAPE_STATS if k in stats), None)
    return {
        "flops": as_int(stats.get("flops", stats.get("model_flops"))),
        "bytes": as_int(stats.get("bytes_accessed")),
        "correlation_id": as_int(stats.get("correlation_id")),
        "step": as_int(stats.get("step_num")),
        "shapes": None if shapes is None else str(shapes),
        "hlo_module": None if "hlo_module" not in stats else str(stats["hlo_module"]),
        "tf_op": None if "tf_op" not in stats else str(stats["tf_op"]),
    }
