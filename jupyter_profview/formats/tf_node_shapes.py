"""TensorFlow node list with shapes: one row per line,
``name, input..., output, device, device_index`` separated by ``", "``
(e.g. a TF1 AlexNet graph dump).

Inputs are data-input shapes ``(128x224x224x3)`` / ``(int32 4x1)`` / ``(1)``
(``(1)`` is what source nodes such as ``Variable`` or ``_SOURCE`` list; it is
kept as the shape ``(1,)``), control inputs ``^name``, or ``(no input)``; the output is a shape,
``(no output)``, or ``(output N bytes)`` (memcpy rows).  ``name:OpType`` rows
are the kernel records of op ``name``: they give its ``op_type`` and are
merged onto the op's row.  A kernel row whose op has no row of its own (the
``edge_N_<src>:MEMCPYDtoH`` copies) becomes a node itself; a copy lists its
source op ``<src>`` as input when that op exists.

The format has no timing, and its rows are sorted by name rather than by
execution, so it is a graph/table view: ``events`` is empty (``time_unit =
"step"``) and ``nodes`` holds everything, with ``order`` <NA>.  ``op_type`` is
<NA> for ops without a kernel row.  ``bytes`` = output elements x dtype size
(float32 where no dtype is written; exact N for ``(output N bytes)``; 0 for
``(no output)``; <NA> when a dimension or dtype size is unknown).  Data inputs
are anonymous here (shapes only), so ``inputs`` holds the node ids this row
names: its control inputs (and a copy's source).

Extra node columns: ``control_inputs`` (list of names), ``input_dtypes`` /
``output_dtypes`` (lists), ``kernel`` (bool: a kernel row was seen), ``line``
(1-based line of the node's row).  Quality: op rows and merged kernel rows are
both placed in ``nodes``; ``metadata["kernel_rows"]`` says how many merged.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import pandas as pd

from ..builder import build_events, make_trace
from ..dtypes import dtype_bytes
from ..errors import ProfviewError
from ..limits import MAX_INT_DIGITS
from ..model import Quality, Trace
from ..sources import Source
from . import TraceFormat

_NODE = r"[A-Za-z0-9._][A-Za-z0-9_.\-/>]*"
_NAME = re.compile(rf"(?P<op>{_NODE})(?::(?P<type>[A-Za-z_]\w*))?")
_CONTROL = re.compile(rf"\^(?P<name>{_NODE})")
_DIM = r"(?:\d+|\?|-1)"
_SHAPE = re.compile(rf"(?:(?P<dtype>[a-z][a-z0-9_]*) ?)?(?P<dims>{_DIM}(?:x{_DIM})*)?")
_BYTES = re.compile(r"output (?P<n>\d+) bytes")
_DEVICE = re.compile(r"[A-Za-z_]\w*")
_ROW = re.compile(r"[^,\s]+(?:, (?:\^[^,\s]+|\([^()]*\)))*, \([^()]*\), [A-Za-z_]\w*, \d+")
_MEMCPY_SOURCE = re.compile(r"edge_\d+_(?P<src>.+)")
Shape = tuple[int, ...]


@dataclass
class _Row:
    name: str
    op_type: str | None
    line: int
    device: str
    shapes: list[Shape] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    control: list[str] = field(default_factory=list)
    out_shapes: list[Shape] = field(default_factory=list)
    out_dtypes: list[str] = field(default_factory=list)
    nbytes: int | None = 0
    copy_of: str | None = None


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, what: str, line: int, col: int, expected: str) -> ProfviewError:
        return ProfviewError(what, source=self.source, position=f"line {line}, column {col}",
                             expected=expected)

    def shape(self, text: str, line: int, col: int, what: str) -> tuple[Shape, str, int | None]:
        """(dims, dtype, bytes) of a ``(...)`` field; -1 marks an unknown dim."""
        match = _SHAPE.fullmatch(text[1:-1])
        if match is None:
            raise self.error(f"bad {what} shape {text[:60]!r}", line, col,
                             "a shape like (128x224x224x3), (int32 4x1) or (1)")
        parts = [d for d in (match["dims"] or "").split("x") if d]
        if any(len(d) > MAX_INT_DIGITS for d in parts):  # before int() meets Python's digit limit
            raise self.error(f"a {what} dimension of more than {MAX_INT_DIGITS} digits", line, col,
                             "a shape like (128x224x224x3), (int32 4x1) or (1)")
        dims = tuple(-1 if d in ("?", "-1") else int(d) for d in parts)
        dtype = match["dtype"] or "float32"
        size = dtype_bytes(dtype)
        nbytes = None if size is None or -1 in dims else math.prod(dims) * size
        return dims, dtype, (nbytes if nbytes is not None and nbytes < 2**63 else None)

    def row(self, raw: str, line: int) -> _Row:
        fields = raw.split(", ")
        cols = [1]
        for f in fields[:-1]:
            cols.append(cols[-1] + len(f) + 2)
        if len(fields) < 4:
            raise self.error(f"{len(fields)} fields", line, 1,
                             "'name, input..., output, device, device_index' separated by ', '")
        name, *inputs, output, device, index = fields
        match = _NAME.fullmatch(name)
        if match is None:
            raise self.error(f"{name[:60]!r} is not a node name", line, 1, "a TF node name or name:OpType")
        if not _DEVICE.fullmatch(device):
            raise self.error(f"bad device {device[:30]!r}", line, cols[-2], "a device type like GPU or CPU")
        if not index.isdigit() or len(index) > MAX_INT_DIGITS:
            raise self.error(f"bad device index {index[:30]!r}", line, cols[-1], "a device index like 0")
        row = _Row(match["op"], match["type"], line, f"{device}:{int(index)}")
        for text, col in zip(inputs, cols[1:], strict=False):
            control = _CONTROL.fullmatch(text)
            if control:
                row.control.append(control["name"])
            elif text == "(no input)":
                continue
            elif text.startswith("(") and text.endswith(")"):
                dims, dtype, _ = self.shape(text, line, col, "input")
                row.shapes.append(dims)
                row.dtypes.append(dtype)
            else:
                raise self.error(f"bad input {text[:60]!r}", line, col,
                                 "a shape (...), a control input ^name or (no input)")
        col = cols[-3]
        copied = _BYTES.fullmatch(output[1:-1]) if output.startswith("(") else None
        if output == "(no output)":
            pass
        elif copied:
            row.nbytes = int(copied["n"]) if len(copied["n"]) < 19 else None
        elif output.startswith("(") and output.endswith(")"):
            dims, dtype, row.nbytes = self.shape(output, line, col, "output")
            row.out_shapes.append(dims)
            row.out_dtypes.append(dtype)
        else:
            raise self.error(f"bad output {output[:60]!r}", line, col,
                             "a shape (...), (no output) or (output N bytes)")
        return row


def sniff(head: bytes) -> bool:
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    lines = text.split("\n")
    if len(head) >= 65536:
        lines = lines[:-1]
    lines = [line.strip() for line in lines if line.strip()][:5]
    return bool(lines) and all(_ROW.fullmatch(line) for line in lines)


def load(source: Source) -> Trace:
    reader = _Reader(source.name)
    quality = Quality()
    lines = source.lines()  # streamed line by line
    ops: dict[str, _Row] = {}
    kernels: dict[str, _Row] = {}
    for number, raw in lines:
        quality.records_read += 1
        text = raw.strip()
        if not text:
            quality.skipped["blank line"] += 1
            continue
        row = reader.row(text, number)
        table, reason = (kernels, "duplicate kernel row") if row.op_type else (ops, "duplicate op row")
        if row.name in table:
            quality.skipped[reason] += 1
            continue
        table[row.name] = row
        quality.placed["nodes"] += 1
    if lines.squeezed:  # runs of blank lines skipped while streaming
        quality.records_read += lines.squeezed
        quality.skipped["blank line"] += lines.squeezed
    if not ops and not kernels:
        raise ProfviewError("no node rows in the input", source=source.name,
                            expected="'name, input..., output, device, device_index' lines")
    merged = 0
    rows: list[tuple[_Row, bool]] = []
    for name, op in ops.items():
        kernel = kernels.pop(name, None)
        if kernel is not None:
            op.op_type = kernel.op_type
            merged += 1
        rows.append((op, kernel is not None))
    standalone = len(kernels)
    for name, kernel in kernels.items():
        copy = _MEMCPY_SOURCE.fullmatch(name)
        if copy and copy["src"] in ops:
            kernel.copy_of = copy["src"]
        rows.append((kernel, True))
    rows.sort(key=lambda r: r[0].line)
    has_output = [bool(r.out_shapes) or r.nbytes not in (0, None) for r, _ in rows]
    nodes = pd.DataFrame({
        "id": pd.array([r.name for r, _ in rows], dtype="string"),
        "name": pd.array([r.name for r, _ in rows], dtype="string"),
        "op_type": pd.Categorical([r.op_type for r, _ in rows]),
        "inputs": [r.control + ([r.copy_of] if r.copy_of else []) for r, _ in rows],
        "outputs": [[f"{r.name}:0"] if out else [] for (r, _), out in zip(rows, has_output, strict=True)],
        "input_shapes": [r.shapes for r, _ in rows],
        "output_shapes": [r.out_shapes for r, _ in rows],
        "bytes": pd.array([r.nbytes for r, _ in rows], dtype="Int64"),
        "device": pd.Categorical([r.device for r, _ in rows]),
        "order": pd.array([None] * len(rows), dtype="Int64"),
        "control_inputs": [list(r.control) for r, _ in rows],
        "input_dtypes": [r.dtypes for r, _ in rows],
        "output_dtypes": [r.out_dtypes for r, _ in rows],
        "kernel": [k for _, k in rows],
        "line": pd.array([r.line for r, _ in rows], dtype="Int64"),
    })
    columns = ("name", "category", "process", "thread", "start", "dur")
    empty: dict[str, list[object]] = {k: [] for k in columns}
    events, _raw, base = build_events(empty, quality, base=0)
    metadata = {
        "view": "graph/table: no timing, rows sorted by name (not execution order), so no events",
        "kernel_rows": {"merged": merged, "standalone": standalone},
        "devices": sorted({r.device for r, _ in rows}),
    }
    return make_trace(FORMAT.name, "step", events, quality, base=base, nodes=nodes, metadata=metadata)


FORMAT = TraceFormat(
    name="tf_node_shapes",
    description="TensorFlow node list 'name, input shapes..., output shape, device, index' (no timing)",
    sniff=sniff,
    load=load,
)
