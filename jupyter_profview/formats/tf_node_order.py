"""TensorFlow node execution order: one graph node name per line, in the order
the nodes ran (e.g. a TF2 + Horovod ResNet-50 step).  There is no clock.

``time_unit="step"``: line *i* (0-based) becomes an event with ``start=i``,
``dur=1``.  ``process`` is ``"graph"`` and ``thread`` is the event's phase, so
the timeline shows one lane per phase (forward / backward / optimizer /
communication / other) and how they interleave over the step; a single lane
would hide that.  Blank lines are skipped; anything else that is not a valid
TF node name is an error.

``category`` is the op kind guessed from the name: the last path part without
its ``_N`` uniquifier (``ReadVariableOp_3`` -> ``ReadVariableOp``).  Grappler
rewrites get the kind of the node they insert: ``ConstantFolding/...`` ->
``Const``; ``...-PermConst...-LayoutOptimizer`` -> ``Const``,
``...-Transpose...`` -> ``Transpose``, ``...-DataFormatVecPermute...`` ->
``DataFormatVecPermute``; ``ArithmeticOptimizer/..._<Op>`` -> ``<Op>``;
inlining/lowering artifacts ``Func/.../_N`` -> ``Identity`` and
``.../output/_N`` -> ``Merge``; Python-level names ``add``/``mul``/``truediv``
-> ``AddV2``/``Mul``/``RealDiv``, Keras ``AssignNewValue`` (batch-norm moving
statistics) -> ``AssignVariableOp``, constant inputs (``shape``,
``paddings``...) -> ``Const``.

``phase`` is inferred from the *underlying* name (Grappler prefixes/suffixes and
``Func/`` stripped): ``gradient_tape/`` or ``gradients/`` -> backward; top-level
``AddN_N`` (gradient aggregation) -> backward; any scope that also appears
under ``gradient_tape/<scope>/`` (the model, the loss) -> forward; then the
shared rules (``HorovodBroadcast``/``..._Allreduce`` -> communication,
``SGD/`` -> optimizer).  Everything else (e.g. ``AssignVariableOp_N``) stays
``other``.

``nodes``: one row per distinct name, ``op_type`` = category, ``order`` = the
step of its first execution; no inputs, shapes or devices in this format.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable

import numpy as np
import pandas as pd

from .. import phase_rules as phases
from ..builder import build_events, make_trace
from ..errors import ProfviewError
from ..model import Quality, Trace
from ..sources import Source
from . import TraceFormat

NAME = re.compile(r"[A-Za-z0-9._][A-Za-z0-9_.\-/>]*")
_LAYOUT = re.compile(r"(?:-\d+)*-?(?P<kind>[A-Z]\w*?)?(?:NHWC|NCHW)?(?:To(?:NHWC|NCHW))?"
                     r"-LayoutOptimizer(?:/clone_\d+)?$")
_LAYOUT_KINDS = {"PermConst": "Const", "Transpose": "Transpose",
                 "DataFormatVecPermute": "DataFormatVecPermute", "DataFormatDimMap": "DataFormatDimMap"}
_REWRITE_PREFIX = re.compile(r"^(?:ConstantFolding|ArithmeticOptimizer|Func|LayoutOptimizer)/")
_NAMED_OPS = {"add": "AddV2", "mul": "Mul", "truediv": "RealDiv", "sub": "Sub",
              "AssignNewValue": "AssignVariableOp", "AssignMovingAvg": "AssignSubVariableOp"}
_CONST_INPUTS = {"shape", "paddings", "multiples", "reduction_indices", "perm", "axis", "begin",
                 "size", "dims", "value"}
_GRAD_SCOPE = re.compile(r"^(?:gradient_tape|gradients(?:_\d+)?)/([^/]+)/")
_UNIQUIFIER = re.compile(r"_\d+$")
BACKWARD_RULES = (
    phases.rule(r"^(gradient_tape|gradients(_\d+)?)/", "backward"),
    phases.rule(r"^AddN(_\d+)?$", "backward"),
)


def underlying(name: str) -> str:
    """The name a Grappler / inlining rewrite was derived from."""
    name = _LAYOUT.sub("", name)
    while True:
        stripped = _REWRITE_PREFIX.sub("", name)
        if stripped == name:
            return name
        name = stripped


def op_kind(name: str) -> str:
    """The op kind a node name suggests (see the module docstring)."""
    if name.startswith("ConstantFolding/"):
        return "Const"
    layout = _LAYOUT.search(name)
    if layout:
        kind = layout.group("kind") or ""
        return next((v for k, v in _LAYOUT_KINDS.items() if kind.startswith(k)), "LayoutOptimizer")
    parts = name.split("/")
    if len(parts) > 1 and re.fullmatch(r"_\d+", parts[-1]):
        if parts[0] == "Func":
            return "Identity"
        return "Merge" if parts[-2] == "output" else _UNIQUIFIER.sub("", parts[-2])
    last = _UNIQUIFIER.sub("", parts[-1])
    if parts[0] == "ArithmeticOptimizer":
        return last.rsplit("_", 1)[-1]
    if last in _CONST_INPUTS:
        return "Const"
    return _NAMED_OPS.get(last, last)


def phase_of(names: Iterable[str]) -> list[str]:
    """Phase of each name, with forward scopes learned from the gradient scopes."""
    names = list(names)
    bases = [underlying(n) for n in names]
    scopes = {_UNIQUIFIER.sub("", m.group(1)) for b in bases if (m := _GRAD_SCOPE.match(b))}
    extra = list(BACKWARD_RULES)
    if scopes:
        pattern = "|".join(re.escape(s) for s in sorted(scopes))
        extra.append((re.compile(rf"^(?:{pattern})(?:_\d+)?(?:/|$)"), "forward"))
    return phases.classify(bases, extra)


class _Int32Column:
    """int32 values appended one by one, held in blocks of BLOCK (no array is
    ever copied whole while growing: ~4 bytes per value at any time)."""

    BLOCK = 1 << 20

    def __init__(self) -> None:
        self.blocks: list[np.ndarray] = []
        self.buf = array("i")

    def append(self, value: int) -> None:
        self.buf.append(value)
        if len(self.buf) >= self.BLOCK:
            self.blocks.append(np.frombuffer(self.buf, np.int32).copy())
            self.buf = array("i")

    def __len__(self) -> int:
        return len(self.blocks) * self.BLOCK + len(self.buf)

    def values(self) -> np.ndarray:
        out = np.concatenate([*self.blocks, np.frombuffer(self.buf, np.int32)]) if len(self) else \
            np.zeros(0, np.int32)
        self.blocks, self.buf = [], array("i")
        return out


def read_names(source: Source) -> tuple[np.ndarray, np.ndarray, list[str], Quality]:
    """(0-based line index, name code, distinct names) of every node line, blank
    lines skipped.  Streamed line by line (`Source.lines`) into int32
    columns, each distinct name kept once: ~8 bytes per line, whatever the
    file repeats, up to ``limits.MAX_TEXT_RECORDS`` lines (< 2**31)."""
    quality = Quality()
    steps, codes = _Int32Column(), _Int32Column()
    index: dict[str, int] = {}
    lines = source.lines()
    for number, raw in lines:
        quality.records_read += 1
        line = raw.strip()
        if not line:
            quality.skipped["blank line"] += 1
            continue
        code = index.get(line)
        if code is None:
            match = NAME.match(line)
            if match is None or match.end() != len(line):
                col = (match.end() if match else 0) + len(raw) - len(raw.lstrip()) + 1
                raise ProfviewError(
                    f"{line[:80]!r} is not a TensorFlow node name", source=source.name,
                    position=f"line {number}, column {col}",
                    expected="one node name per line (letters, digits, '._-/>')",
                )
            code = index[line] = len(index)
        steps.append(number - 1)
        codes.append(code)
    quality.placed["events"] += len(codes)
    if lines.squeezed:  # runs of blank lines skipped while streaming
        quality.records_read += lines.squeezed
        quality.skipped["blank line"] += lines.squeezed
    return steps.values().astype(np.int64), codes.values(), list(index), quality


def sniff(head: bytes) -> bool:
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    lines = text.split("\n")
    if len(head) >= 65536:
        lines = lines[:-1]  # probably cut in the middle
    lines = [line.strip() for line in lines if line.strip()]
    return bool(lines) and any("/" in line for line in lines) and all(NAME.fullmatch(x) for x in lines)


def load(source: Source) -> Trace:
    steps, codes, distinct, quality = read_names(source)
    if not len(codes):
        raise ProfviewError("no node names in the input", source=source.name,
                            expected="one TensorFlow node name per line")
    order = np.argsort(np.asarray(distinct, dtype=object))  # categories sorted, as pd.Categorical does
    rank = np.empty(len(order), np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    categories = [distinct[i] for i in order.tolist()]
    codes = rank[codes]
    kinds = [op_kind(c) for c in categories]
    phases_ = phase_of(categories)
    kind_values, kind_codes = np.unique(np.asarray(kinds, dtype=object), return_inverse=True)
    phase_values, phase_codes = np.unique(np.asarray(phases_, dtype=object), return_inverse=True)
    phase = pd.Categorical.from_codes(phase_codes.reshape(-1)[codes],
                                      categories=pd.Index(phase_values, dtype=str))
    columns = {
        "name": pd.Categorical.from_codes(codes, categories=pd.Index(categories, dtype=str)),
        "category": pd.Categorical.from_codes(kind_codes.reshape(-1)[codes],
                                              categories=pd.Index(kind_values, dtype=str)),
        "phase": phase, "thread": phase,
        "process": pd.Categorical.from_codes(np.zeros(len(codes), np.int8), categories=pd.Index(["graph"])),
        "start": steps, "dur": np.ones(len(codes), np.int64),
    }
    uniq, first_at = np.unique(codes, return_index=True)
    first = np.argsort(first_at, kind="stable")  # distinct names in order of first execution
    node_codes, node_steps = uniq[first], steps[first_at[first]]
    events, _raw, base = build_events(columns, quality, base=0, consume=True)
    names = [categories[c] for c in node_codes.tolist()]
    n = len(names)
    nodes = pd.DataFrame({
        "id": pd.array(names, dtype="string"), "name": pd.array(names, dtype="string"),
        "op_type": pd.Categorical([kinds[c] for c in node_codes.tolist()]),
        "inputs": [[] for _ in range(n)], "outputs": [[] for _ in range(n)],
        "input_shapes": [[] for _ in range(n)], "output_shapes": [[] for _ in range(n)],
        "bytes": pd.array([None] * n, dtype="Int64"),
        "device": pd.Categorical([None] * n),
        "order": pd.array(node_steps, dtype="Int64"),
    })
    metadata = {"time_axis": "execution step (line index); the file has no clock",
                "lanes": "one per phase", "distinct_nodes": n}
    return make_trace(FORMAT.name, "step", events, quality, base=base, nodes=nodes, metadata=metadata)


FORMAT = TraceFormat(
    name="tf_node_order",
    description="TensorFlow node names, one per line, in execution order (no timing)",
    sniff=sniff,
    load=load,
)
