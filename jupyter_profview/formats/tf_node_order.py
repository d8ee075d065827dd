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


def read_names(source: Source) -> tuple[list[int], list[str], Quality]:
    """(0-based line index, name) of every node line; blank lines skipped.
    Streamed line by line (:meth:`Source.lines`)."""
    quality = Quality()
    steps: list[int] = []
    names: list[str] = []
    lines = source.lines()
    for number, raw in lines:
        i = number - 1
        quality.records_read += 1
        line = raw.strip()
        if not line:
            quality.skipped["blank line"] += 1
            continue
        match = NAME.match(line)
        if match is None or match.end() != len(line):
            col = (match.end() if match else 0) + len(raw) - len(raw.lstrip()) + 1
            raise ProfviewError(
                f"{line[:80]!r} is not a TensorFlow node name", source=source.name,
                position=f"line {i + 1}, column {col}",
                expected="one node name per line (letters, digits, '._-/>')",
            )
        steps.append(i)
        names.append(line)
        quality.placed["events"] += 1
    if lines.squeezed:  # runs of blank lines skipped while streaming
        quality.records_read += lines.squeezed
        quality.skipped["blank line"] += lines.squeezed
    return steps, names, quality


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
    steps, names, quality = read_names(source)
    if not names:
        raise ProfviewError("no node names in the input", source=source.name,
                            expected="one TensorFlow node name per line")
    name_cat = pd.Categorical(names)
    categories = [str(c) for c in name_cat.categories]
    kind_of = dict(zip(categories, map(op_kind, categories), strict=True))
    phase_of_name = dict(zip(categories, phase_of(categories), strict=True))
    kinds = [kind_of[n] for n in names]
    phase_list = [phase_of_name[n] for n in names]
    columns = {
        "name": name_cat, "category": kinds, "phase": phase_list,
        "process": ["graph"] * len(names), "thread": phase_list,
        "start": np.asarray(steps, np.int64), "dur": np.ones(len(names), np.int64),
    }
    events, _raw, base = build_events(columns, quality, base=0)
    first: dict[str, int] = {}
    for step, name in zip(steps, names, strict=True):
        first.setdefault(name, step)
    nodes = pd.DataFrame({
        "id": pd.array(list(first), dtype="string"), "name": pd.array(list(first), dtype="string"),
        "op_type": pd.Categorical([kind_of[n] for n in first]),
        "inputs": [[] for _ in first], "outputs": [[] for _ in first],
        "input_shapes": [[] for _ in first], "output_shapes": [[] for _ in first],
        "bytes": pd.array([None] * len(first), dtype="Int64"),
        "device": pd.Categorical([None] * len(first)),
        "order": pd.array(list(first.values()), dtype="Int64"),
    })
    metadata = {"time_axis": "execution step (line index); the file has no clock",
                "lanes": "one per phase", "distinct_nodes": len(first)}
    return make_trace(FORMAT.name, "step", events, quality, base=base, nodes=nodes, metadata=metadata)


FORMAT = TraceFormat(
    name="tf_node_order",
    description="TensorFlow node names, one per line, in execution order (no timing)",
    sniff=sniff,
    load=load,
)
