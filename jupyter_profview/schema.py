"""The trace's tables, declared once.

Each table of a [Trace][jupyter_profview.model.Trace] is a [Table][jupyter_profview.schema.Table]
of [Column][jupyter_profview.schema.Column]s: name, dtype, unit, meaning, whether it may hold
`<NA>`, and -- for the columns only some formats write -- which formats.  From these declarations:

- the empty tables ([`Table.empty`][jupyter_profview.schema.Table.empty], e.g. `empty_memory()`
  in [jupyter_profview.model][]);
- [`Trace.validate()`][jupyter_profview.model.Trace.validate], which checks a loaded trace
  against them ([jupyter_profview.validation][]);
- the schema page of the reference site ([`markdown`][jupyter_profview.schema.markdown], called
  by the site's build hook `docs/hooks.py`).

Dtypes are pandas dtype names: `int64` / `int32` / `float64` / `bool` (numpy, never `<NA>`),
`Int64` (pandas' nullable integer), `string`, `category` (a Categorical; where the values are a
fixed set, `categories` names it) and `object` (lists or tuples per row).  Unit `time_unit` means
the trace's [`time_unit`][jupyter_profview.model.Trace]: ns since the trace's first event, or an
execution-step index for formats without a clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

PHASES = ("forward", "backward", "optimizer", "communication", "other")
KINDS = ("slice", "instant", "async")
MEMORY_KINDS = ("measured", "simulated")
KERNEL_TYPES = ("kernel", "memcpy", "memset", "communication", "dma")  # appended: codes stay
TIME = "time_unit"
#: the "format" of the columns only a TraceSet's combined trace has (`rank`)
RANKS = "traceset"
DTYPES = ("int64", "int32", "float64", "bool", "Int64", "string", "category", "object")


@dataclass(frozen=True)
class Column:
    """One column of a table.

    `formats` is empty for a column every trace has; for an optional column it names the
    formats that write it (the column is absent from the others' tables)."""

    name: str
    dtype: str
    meaning: str
    unit: str = ""
    nullable: bool = False
    categories: tuple[str, ...] | None = None
    formats: tuple[str, ...] = ()

    def empty(self) -> Any:
        """A zero-length array of this column's dtype."""
        if self.dtype == "category":
            return pd.Categorical([], categories=None if self.categories is None else list(self.categories))
        if self.dtype == "Int64":
            return pd.array([], dtype="Int64")
        if self.dtype == "string":
            return pd.array([], dtype="string")
        if self.dtype == "object":
            return pd.Series([], dtype=object)
        return np.empty(0, self.dtype)


@dataclass(frozen=True)
class Table:
    """One table: its columns (every trace has them), the optional columns some formats add,
    and the order its rows are promised in (`sorted_by`, empty: none)."""

    name: str
    meaning: str
    columns: tuple[Column, ...]
    optional: tuple[Column, ...] = ()
    sorted_by: tuple[str, ...] = ()
    index: str = ""

    def empty(self) -> pd.DataFrame:
        """The table with no rows: its required columns, in order, with their dtypes."""
        frame = pd.DataFrame({c.name: c.empty() for c in self.columns})
        if self.index:
            frame.index = pd.Index(np.empty(0, np.int64), name=self.index)
        return frame

    def column(self, name: str) -> Column | None:
        """The declaration of column `name` (required or optional), or None."""
        for c in (*self.columns, *self.optional):
            if c.name == name:
                return c
        return None

    @property
    def names(self) -> tuple[str, ...]:
        """The required columns' names, in order."""
        return tuple(c.name for c in self.columns)


def _c(name: str, dtype: str, meaning: str, unit: str = "", *, nullable: bool = False,
       categories: tuple[str, ...] | None = None, formats: str = "") -> Column:
    return Column(name, dtype, meaning, unit, nullable or dtype == "Int64", categories,
                  tuple(formats.split()))


EVENTS = Table(
    "events",
    "One row per timed slice or instant; the index (`id`) is the event id every other table "
    "and the widget's selections refer to.",
    (
        _c("name", "category", "event / op name", nullable=True),
        _c("category", "category", "op type or Chrome `cat`", nullable=True),
        _c("phase", "category", "forward, backward, optimizer, communication or other (inferred "
           "where the format allows)", categories=PHASES),
        _c("process", "category", "process / device label", nullable=True),
        _c("thread", "category", "thread / stream label", nullable=True),
        _c("track", "category", "display lane key (`process / thread`); of two events that partly "
           "overlap on one thread the shorter goes to a sub-lane `... [overlap N]`"),
        _c("kind", "category", "`slice`, `instant` or `async`", categories=KINDS),
        _c("start", "int64", "start, relative to the trace's first event", TIME),
        _c("dur", "int64", "duration (0 for instants; never negative)", TIME),
        _c("depth", "int32", "nesting level: 0 iff `parent` is -1, else the parent's `depth` + 1"),
        _c("parent", "int64", "id of the innermost event on its thread that encloses it (may be on "
           "another track), or -1; the child lies inside `[start, start + dur]`"),
        _c("self", "int64", "time the event is the one running (`0 <= self <= dur`): `dur` minus "
           "the `dur` of direct children, as torch's `key_averages()` Self CPU, wherever children "
           "do not partly overlap (see `jupyter_profview.nesting`)", TIME),
    ),
    (
        _c("external_id", "Int64", "PyTorch `External id` arg: links a CPU op to its runtime "
           "calls", formats="chrome"),
        _c("correlation", "Int64", "`correlation` arg: links a runtime call to the device "
           "activity it launched", formats="chrome"),
        _c("incomplete", "bool", "a begin without an end, running to the trace's end",
           formats="chrome perfetto"),
        _c("has_args", "bool", "the record has `args` (`trace.args(id)` reads them)",
           formats="chrome perfetto"),
        _c("long_name", "category", "the event metadata's `name` (where `name` shows its "
           "`display_name`)", nullable=True, formats="xspace"),
        _c("flops", "Int64", "floating-point operations of the op", formats="xspace megengine_json"),
        _c("bytes", "Int64", "bytes accessed (`bytes_accessed` stat)", "bytes", formats="xspace"),
        _c("correlation_id", "Int64", "CUPTI correlation id: host launch and device op share it",
           formats="xspace"),
        _c("step", "Int64", "training step (`step_num` stat)", formats="xspace"),
        _c("shapes", "category", "tensor shapes as written (`shape_with_layout`, "
           "`tensor_shapes`, `shapes`)", nullable=True, formats="xspace"),
        _c("hlo_module", "category", "the XLA module of the op", nullable=True, formats="xspace"),
        _c("tf_op", "category", "the TensorFlow op of the event", nullable=True, formats="xspace"),
        _c("opr_id", "string", "the operator's id in the file", nullable=True, formats="megengine_json"),
        _c("op_type", "category", "the operator's type", nullable=True, formats="megengine_json"),
        _c("order", "Int64", "index of the operator in the execution sequence (`comp_seq`)",
           formats="megengine_json"),
        _c("wait", "Int64", "time the device op waited for its kernel to start", TIME,
           formats="megengine_json"),
        _c("in_shapes", "object", "input shapes (list of tuples)", formats="megengine_json"),
        _c("out_shapes", "object", "output shapes (list of tuples)", formats="megengine_json"),
        _c("param", "string", "the operator's parameters as written", nullable=True,
           formats="megengine_json"),
        _c("memory_bytes", "Int64", "bytes the operator moves (its footprint's `memory`)", "bytes",
           formats="megengine_json"),
        _c("scheduled", "Int64", "when the node became runnable, relative like `start`", TIME,
           formats="tf_step_stats"),
        _c("output_bytes", "int64", "sum of the outputs' bytes", "bytes",
           formats="tf_step_stats chainer_graph"),
        _c("temp_bytes", "int64", "temporary memory of the node (`memory_stats`)", "bytes",
           formats="tf_step_stats"),
        _c("persistent_bytes", "int64", "persistent memory of the node (`memory_stats`)", "bytes",
           formats="tf_step_stats"),
        _c("output_shapes", "object", "output shapes (list of tuples)", formats="tf_step_stats"),
        _c("rank", "int64", "the process rank of the file the event comes from: only in a "
           "TraceSet's combined trace, whose `info.ranks` lists the ranks (no format writes it; "
           "the one column the views read as \"several ranks\")", formats=RANKS),
        _c("graph_rank", "int64", "the function's rank in the computational graph (its depth "
           "from the inputs; not a process rank)", formats="chainer_graph"),
        _c("node", "string", "the function node's id", nullable=True, formats="chainer_graph"),
        _c("addr", "Int64", "address of the block the action is on", formats="torch_cuda_snapshot"),
        _c("size", "Int64", "bytes of the action", "bytes", formats="torch_cuda_snapshot"),
        _c("frame", "string", "the owner frame of the action (`name (file:line)`)", nullable=True,
           formats="torch_cuda_snapshot"),
        _c("file", "category", "the Python file of the function", nullable=True, formats="python_calls"),
        _c("line", "int64", "the function's first line in it", formats="python_calls"),
    ),
    sorted_by=("start",),
    index="id",
)

MEMORY = Table(
    "memory",
    "Memory in use over time, one row per change, per device.",
    (
        _c("time", "int64", "when the amount changed", TIME),
        _c("device", "category", "device or allocator"),
        _c("bytes", "int64", "bytes in use after that instant", "bytes"),
        _c("kind", "category", "`measured` (from the file's allocation records / counters) or "
           "`simulated` (from tensor lifetimes)", categories=MEMORY_KINDS),
    ),
    sorted_by=("device", "time"),
)

ALLOCATIONS = Table(
    "allocations",
    "One row per allocation seen.",
    (
        _c("device", "category", "device or allocator"),
        _c("address", "Int64", "address (<NA>: not in the file)"),
        _c("bytes", "int64", "size", "bytes"),
        _c("alloc_time", "Int64", "when it was allocated (<NA>: not seen)", TIME),
        _c("free_time", "Int64", "when it was freed (<NA>: not seen)", TIME),
        _c("owner", "string", "op or tensor that owns it", nullable=True),
    ),
    (
        _c("frames", "object", "the allocating stack, `name (file:line)`, innermost first",
           formats="torch_cuda_snapshot"),
        _c("requested_free", "Int64", "when the free was requested", TIME, formats="torch_cuda_snapshot"),
        _c("storage", "category", "`static` or `dynamic`", nullable=True, formats="megengine_json"),
        _c("vars", "object", "ids of the vars sharing the storage", formats="megengine_json"),
        _c("tensor", "string", "the tensor's id", nullable=True, formats="chainer_graph"),
        _c("role", "category", "parameter, input, activation, output, gradient, ...", nullable=True,
           formats="chainer_graph"),
    ),
)

NODES = Table(
    "nodes",
    "Graph formats: one row per node of the graph.",
    (
        _c("id", "string", "node id"),
        _c("name", "string", "node name", nullable=True),
        _c("op_type", "category", "op type", nullable=True),
        _c("inputs", "object", "ids of the input nodes or tensors (list)"),
        _c("outputs", "object", "ids of the output nodes or tensors (list)"),
        _c("input_shapes", "object", "input shapes (list of tuples)"),
        _c("output_shapes", "object", "output shapes (list of tuples)"),
        _c("bytes", "Int64", "output bytes", "bytes"),
        _c("device", "category", "device", nullable=True),
        _c("order", "Int64", "execution order (<NA>: not executed)"),
    ),
    (
        _c("control_inputs", "object", "control inputs' names (list)", formats="tf_node_shapes"),
        _c("input_dtypes", "object", "input dtypes (list)", formats="tf_node_shapes"),
        _c("output_dtypes", "object", "output dtypes (list)", formats="tf_node_shapes"),
        _c("kernel", "bool", "a kernel row of the node was seen", formats="tf_node_shapes"),
        _c("line", "Int64", "line of the node in the file", formats="tf_node_shapes"),
        _c("phase", "category", "forward or backward", categories=PHASES, formats="chainer_graph"),
        _c("graph_rank", "int64", "the function's rank in the graph (not a process rank)",
           formats="chainer_graph"),
    ),
)

FLOWS = Table(
    "flows",
    "Arrows between events.",
    (
        _c("flow_id", "string", "the flow's id in the file", nullable=True),
        _c("name", "category", "name", nullable=True),
        _c("category", "category", "category", nullable=True),
        _c("source", "int64", "event id of the arrow's tail, -1 where no event encloses it"),
        _c("target", "int64", "event id of the arrow's head, -1 where no event encloses it"),
        _c("start", "int64", "time of the tail", TIME),
        _c("end", "int64", "time of the head", TIME),
    ),
)

LAUNCHES = Table(
    "launches",
    "One row per device activity (GPU kernel, memcpy, memset, and the ROCm / MTIA equivalents), "
    "joined by correlation id to the runtime / driver call that launched it (Chrome/Kineto traces; "
    "empty with these columns for others).",
    (
        _c("kernel", "int64", "event id of the device activity"),
        _c("launch", "Int64", "event id of the launching runtime / driver call, <NA> when it is "
           "not in the trace"),
        _c("correlation", "Int64", "the correlation id joining them (<NA>: none)"),
        _c("name", "category", "the activity's name", nullable=True),
        _c("type", "category", "`kernel`, `memcpy`, `memset`, `communication` (NCCL / RCCL / gloo) "
           "or `dma`", categories=KERNEL_TYPES),
        _c("gpu", "category", "the device's process label (`GPU 0 · A100`)", nullable=True),
        _c("device", "Int64", "device index from the file (<NA>: unknown)"),
        _c("stream", "Int64", "stream (<NA>: unknown)"),
        _c("kernel_start", "int64", "start of the activity", TIME),
        _c("kernel_dur", "int64", "its duration", TIME),
        _c("launch_start", "Int64", "start of the launch call", TIME),
        _c("launch_dur", "Int64", "its duration", TIME),
        _c("delay", "Int64", "launch delay: `kernel_start - (launch_start + launch_dur)`, clipped "
           "at 0 (a kernel can start before its launch call returns)", TIME),
        _c("launch_name", "category", "name of the launch call (`cudaLaunchKernel`)", nullable=True),
        _c("cpu_op", "Int64", "id of the nearest enclosing `cpu_op` of the launch (the framework op "
           "that issued it)"),
        _c("cpu_op_name", "category", "its name", nullable=True),
    ),
    sorted_by=("kernel",),
)

COUNTERS = Table(
    "counters",
    "Counter samples, one row per numeric series of a counter record (`None` on the trace "
    "where the format has none).",
    (
        _c("time", "int64", "when the sample was taken", TIME),
        _c("process", "category", "process label"),
        _c("name", "category", "counter name"),
        _c("series", "category", "series of the counter (its argument name)"),
        _c("value", "float64", "the sample", nullable=True),
    ),
)

TABLES: dict[str, Table] = {t.name: t for t in (EVENTS, MEMORY, ALLOCATIONS, NODES, FLOWS, LAUNCHES,
                                                 COUNTERS)}


# ---------------------------------------------------------------------------
# The reference page
# ---------------------------------------------------------------------------

def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _rows(columns: tuple[Column, ...], optional: bool) -> list[str]:
    head = "| column | dtype | unit | meaning |" + (" formats |" if optional else "")
    rows = [head, "|---|---|---|---|" + ("---|" if optional else "")]
    for c in columns:
        dtype = f"`{c.dtype}`" + (" (nullable)" if c.nullable and c.dtype != "Int64" else "")
        meaning = c.meaning + (f"; values: {', '.join(f'`{v}`' for v in c.categories)}"
                               if c.categories else "")
        row = f"| `{c.name}` | {dtype} | {c.unit} | {_cell(meaning)} |"
        if optional:
            row += f" {', '.join(f'`{f}`' for f in c.formats)} |"
        rows.append(row)
    return rows


def markdown(table: Table, level: int = 2) -> str:
    """The table's schema as Markdown: a heading, its meaning and row order, the columns every
    trace has and the optional ones with the formats that write them."""
    lines = [f"{'#' * level} `{table.name}`", "", table.meaning]
    if table.index:
        lines[-1] += f" Index: `{table.index}` (int64, unique)."
    if table.sorted_by:
        lines[-1] += f" Rows are sorted by {', '.join(f'`{s}`' for s in table.sorted_by)}."
    lines += ["", *_rows(table.columns, False), ""]
    if table.optional:
        lines += ["Columns some formats add:", "", *_rows(table.optional, True), ""]
    return "\n".join(lines)


def markdown_all(level: int = 2) -> str:
    """Every table's [markdown][jupyter_profview.schema.markdown], in the order of `TABLES`."""
    return "\n".join(markdown(t, level) for t in TABLES.values())
