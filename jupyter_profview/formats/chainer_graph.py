"""Chainer computational-graph dump with tensor sizes (seed 003, VGG-19).

The format (text, one item per line):

    86 92                       n_tensors n_functions
    <id> <bytes> <name>         x n_tensors; name "_" = unnamed activation,
                                "/predictor/..." = parameter, "0"/"1" = inputs
    forward|backward            x n_functions, each record:
    <n_in> <n_out>
    <id> <tag>                  x n_in; tag "_" (forward) or "gradient" /
                                "input" / "output" (backward)
    <id>                        x n_out
    <FunctionName>
    {"rank": 25, ...}           JSON attributes (parsed with json, never eval)

Records are not in execution order: forward functions run by ascending
``rank``, then backward functions by descending ``rank`` (file order breaks
ties).  The file has no clock, so ``time_unit == "step"``: step ``s`` is the
``s``-th function executed.

Records: each tensor line and each function record.  Tensor lines land in
``allocations`` (one no function references is ``skipped``), function
records in ``events`` (and ``nodes``).

Tables
------
``events``: one slice per function at its step (``dur`` 1), ``name`` and
``category`` = function name, ``phase`` forward/backward, process ``chainer``,
thread ``main``.  Extra columns: ``rank`` (int64), ``node`` (node id),
``output_bytes`` (int64, bytes of the outputs).  ``trace.args(id)`` gives the JSON
attributes.

``nodes``: one row per function in execution order; ``id`` is
``"forward:<rank>"`` / ``"backward:<rank>"`` (``#k`` appended on a tie).
Inputs/outputs are tensor ids; a gradient is ``"grad(<id>)"``.  Extra
columns: ``phase``, ``rank``.  Shapes are unknown (empty lists).

``memory`` / ``allocations``: a **simulated** curve (kind ``simulated``) on
device ``chainer``.  Lifetime rules (a tensor is live at steps ``alloc_time
<= s < free_time``; ``free_time`` <NA> = still live at the end):

* leaf tensors (no forward producer: parameters ``/...`` and the inputs
  ``0``/``1``) are live from step 0 to the end: parameters persist, and the
  caller holds the input batch through the whole update;
* every other forward tensor is allocated at its producer's step and freed
  after its last reader: a forward function consuming it, or a backward
  function that lists it with tag ``input``/``output`` (retained for
  backward).  A tensor nothing reads (the loss) is a graph output: the caller
  holds it to the end;
* a backward function's outputs are the gradients of the listed variables,
  ``grad(v)``, with ``v``'s size.  ``grad(v)`` is allocated at the first step
  that produces it (several producers accumulate into it) or, for the seed
  gradient of the loss, at its first reader; it is freed after the last
  backward function that reads it (tag ``gradient``), or right after its
  producer if nothing reads it.  Parameter gradients live to the end, where
  an optimizer would use them.

``allocations`` has one row per tensor line plus one per gradient, with extra
columns ``tensor`` (id) and ``role`` (parameter, input, activation, output,
gradient, parameter_gradient).  `jupyter_profview.analysis.live_at` lists what is live at a step
(``live_at(trace, peak_time(trace))`` answers "what fills memory at the
peak"); both work on any trace whose ``allocations`` times follow this rule.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..builder import build_events, make_trace
from ..errors import ProfviewError
from ..model import Quality, Trace, memory_frame
from ..sources import Source
from ..text_stream import utf8_clean
from . import TraceFormat

DEVICE = "chainer"
BACKWARD_TAGS = ("gradient", "input", "output")


@dataclass
class _Function:
    direction: str
    line: int
    inputs: list[tuple[int, str]] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    name: str = ""
    attrs: dict[str, Any] = field(default_factory=dict)
    rank: int = 0


class _Lines:
    """Numbered lines with errors that name the source and position."""

    def __init__(self, source: Source) -> None:
        self.reader = source.lines()  # streamed; long runs of blank lines skipped
        self._lines = iter(self.reader)
        self._ahead: tuple[int, str] | None = None
        self.current = ""
        self.source = source.name
        self.pos = 0
        self.context = ""

    def _peek(self) -> tuple[int, str] | None:
        if self._ahead is None:
            self._ahead = next(self._lines, None)
        return self._ahead

    def remaining(self) -> Iterator[str]:
        """The lines after the current one (skipped blank lines are not seen)."""
        while (ahead := self._peek()) is not None:
            self.pos, self.current = ahead
            self._ahead = None
            yield self.current

    def error(self, message: str, expected: str, line: int | None = None, column: int = 1) -> ProfviewError:
        where = f"line {line if line is not None else self.pos}, column {column}"
        if self.context:
            where += f" ({self.context})"
        return ProfviewError(message, source=self.source, position=where, expected=expected)

    def next(self, expected: str) -> str:
        ahead = self._peek()
        if ahead is None:
            raise ProfviewError(
                "the file ends early", source=self.source,
                position=f"after line {self.reader.count}" + (f" ({self.context})" if self.context else ""),
                expected=expected,
            )
        self.pos += 1
        if ahead[0] > self.pos:  # one of the blank lines the reader skipped
            self.current = ""
        else:
            self.current = ahead[1]
            self._ahead = None
        return self.current.rstrip("\r")

    def ints(self, count: int, expected: str) -> list[int]:
        parts = self.next(expected).split()
        if len(parts) != count:
            raise self.error(f"found {len(parts)} fields", expected)
        return [self.int(p, expected) for p in parts]

    def int(self, text: str, expected: str) -> int:
        if not text.isascii() or not text.isdigit():
            line = self.current
            raise self.error(f"{text[:40]!r} is not a non-negative integer", expected,
                             column=line.find(text) + 1)
        if len(text) > 15:
            raise self.error(f"{text[:40]!r} is too large", expected)
        return int(text)


def _parse(source: Source) -> tuple[dict[int, tuple[int, str]], list[_Function]]:
    lines = _Lines(source)
    n_tensors, n_functions = lines.ints(2, "a header '<n_tensors> <n_functions>'")
    tensors: dict[int, tuple[int, str]] = {}
    for k in range(n_tensors):
        lines.context = f"tensor line {k + 1} of {n_tensors}"
        expected = "a tensor line '<id> <bytes> <name>'"
        parts = lines.next(expected).split(maxsplit=2)
        if len(parts) != 3:
            raise lines.error(f"found {len(parts)} fields", expected)
        tid, nbytes = lines.int(parts[0], expected), lines.int(parts[1], expected)
        if tid in tensors:
            raise lines.error(f"tensor id {tid} is defined twice", "unique tensor ids")
        tensors[tid] = (nbytes, parts[2])
    functions = []
    for k in range(n_functions):
        lines.context = f"function record {k + 1} of {n_functions}"
        direction = lines.next("'forward' or 'backward'").strip()
        if direction not in ("forward", "backward"):
            raise lines.error(f"found {direction[:40]!r}", "'forward' or 'backward'")
        fn = _Function(direction, lines.pos)
        n_in, n_out = lines.ints(2, "'<n_in> <n_out>'")
        tags = ("_",) if direction == "forward" else BACKWARD_TAGS
        for _ in range(n_in):
            expected = f"an input line '<tensor id> <tag>' with tag {' or '.join(tags)}"
            parts = lines.next(expected).split()
            if len(parts) != 2 or parts[1] not in tags:
                raise lines.error(f"found {' '.join(parts)[:60]!r}", expected)
            fn.inputs.append((_known(lines, tensors, parts[0], expected), parts[1]))
        for _ in range(n_out):
            text = lines.next("an output tensor id").strip()
            fn.outputs.append(_known(lines, tensors, text, "a tensor id"))
        fn.name = lines.next("a function name").strip()
        if not fn.name or " " in fn.name:
            raise lines.error(f"found {fn.name[:60]!r}", "a function name such as 'ReLU'")
        raw = lines.next("a JSON attributes line")
        try:  # the standard library's parser: under a memory limit it raises, never crashes
            attrs = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise lines.error(f"invalid JSON ({exc.msg})", "a JSON object of attributes",
                              column=exc.colno) from None
        except (ValueError, RecursionError):  # an integer past Python's digit limit, deep nesting
            raise lines.error("JSON attributes too long or too deeply nested to read",
                              "a JSON object of attributes") from None
        if "\\u" in raw and not utf8_clean(attrs):
            raise lines.error("a string holds a lone UTF-16 surrogate", "a JSON object of attributes")
        if not isinstance(attrs, dict):
            raise lines.error(f"found JSON {type(attrs).__name__}", "a JSON object of attributes")
        rank = attrs.get("rank")
        if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < 2**62:
            raise lines.error(f"'rank' is {rank!r}", "an integer 'rank' >= 0 in the attributes")
        fn.attrs, fn.rank = attrs, rank
        functions.append(fn)
    lines.context = ""
    for rest in lines.remaining():
        if rest.strip():
            raise lines.error("unexpected content after the last function record",
                              f"exactly {n_functions} function records, as the header says")
    return tensors, functions


def _known(lines: _Lines, tensors: dict[int, tuple[int, str]], text: str, expected: str) -> int:
    tid = lines.int(text, expected)
    if tid not in tensors:
        raise lines.error(f"tensor id {tid} is not among the tensor lines", "a declared tensor id")
    return tid


def _simulate(
    tensors: dict[int, tuple[int, str]], order: list[_Function], source: str
) -> tuple[list[dict[str, Any]], set[int]]:
    """Allocation rows (see the module docstring for the rules)."""
    n = len(order)
    producer: dict[int, int] = {}
    last_read: dict[int, int] = {}
    grad_first: dict[int, int] = {}
    grad_last_read: dict[int, int] = {}
    referenced: set[int] = set()
    for step, fn in enumerate(order):
        for tid, tag in fn.inputs:
            referenced.add(tid)
            if tag == "gradient":
                grad_first.setdefault(tid, step)
                grad_last_read[tid] = step
            else:
                last_read[tid] = step
        for tid in fn.outputs:
            referenced.add(tid)
            if fn.direction == "backward":
                grad_first.setdefault(tid, step)
            elif tid in producer:
                raise ProfviewError(
                    f"tensor {tid} is an output of two forward functions", source=source,
                    position=f"line {fn.line} ({fn.name})", expected="each tensor produced once",
                )
            else:
                producer[tid] = step
    rows: list[dict[str, Any]] = []
    for tid, (nbytes, name) in tensors.items():
        if tid not in referenced:
            continue
        parameter = name.startswith("/")
        if tid not in producer:
            role, alloc, free = ("parameter" if parameter else "input"), 0, None
            owner = name
        else:
            alloc = producer[tid]
            reader = last_read.get(tid)
            role = "activation" if reader is not None else "output"
            free = None if reader is None else max(reader, alloc) + 1
            fn = order[alloc]
            owner = name if name != "_" else f"{fn.name} ({fn.direction}, rank {fn.rank})"
        rows.append(dict(tensor=str(tid), role=role, bytes=nbytes, alloc_time=alloc, free_time=free,
                         owner=owner))
        if tid in grad_first:
            leaf_param = parameter and tid not in producer
            g_alloc = grad_first[tid]
            g_free = None if leaf_param else max(grad_last_read.get(tid, g_alloc), g_alloc) + 1
            rows.append(dict(
                tensor=f"grad({tid})", role="parameter_gradient" if leaf_param else "gradient",
                bytes=nbytes, alloc_time=g_alloc, free_time=g_free, owner=f"grad of {owner}",
            ))
    for row in rows:
        if row["free_time"] is not None and row["free_time"] > n:
            row["free_time"] = n
    return rows, referenced


def _allocations(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame({
        "device": pd.Categorical([DEVICE] * len(rows)),
        "address": pd.array([None] * len(rows), dtype="Int64"),
        "bytes": np.array([r["bytes"] for r in rows], dtype=np.int64),
        "alloc_time": pd.array([r["alloc_time"] for r in rows], dtype="Int64"),
        "free_time": pd.array([r["free_time"] for r in rows], dtype="Int64"),
        "owner": pd.array([r["owner"] for r in rows], dtype="string"),
        "tensor": pd.array([r["tensor"] for r in rows], dtype="string"),
        "role": pd.Categorical([r["role"] for r in rows]),
    })
    return frame


def _memory(rows: list[dict[str, Any]], n_steps: int) -> pd.DataFrame:
    """Bytes live at each step 0..n_steps (n_steps = after the last function)."""
    delta = np.zeros(n_steps + 2, np.int64)
    for r in rows:
        delta[r["alloc_time"]] += r["bytes"]
        delta[n_steps + 1 if r["free_time"] is None else r["free_time"]] -= r["bytes"]
    live = np.cumsum(delta)[: n_steps + 1]
    return memory_frame(np.arange(n_steps + 1), [DEVICE] * (n_steps + 1), live, "simulated")


def load(source: Source) -> Trace:
    tensors, functions = _parse(source)
    quality = Quality(records_read=len(tensors) + len(functions))
    forward = sorted((f for f in functions if f.direction == "forward"), key=lambda f: f.rank)
    backward = sorted((f for f in functions if f.direction == "backward"), key=lambda f: -f.rank)
    order = forward + backward
    rows, referenced = _simulate(tensors, order, source.name)
    quality.placed["allocations"] += len(referenced)
    if len(tensors) > len(referenced):
        quality.skipped["tensor not used by any function"] += len(tensors) - len(referenced)
    quality.placed["events"] += len(order)

    seen: Counter[str] = Counter()
    node_ids = []
    for fn in order:
        base_id = f"{fn.direction}:{fn.rank}"
        seen[base_id] += 1
        node_ids.append(base_id if seen[base_id] == 1 else f"{base_id}#{seen[base_id] - 1}")
    n = len(order)
    out_bytes = [sum(tensors[t][0] for t in fn.outputs) for fn in order]
    events, raw_index, base = build_events({
        "name": [fn.name for fn in order], "category": [fn.name for fn in order],
        "phase": [fn.direction for fn in order], "process": [DEVICE] * n, "thread": ["main"] * n,
        "start": np.arange(n, dtype=np.int64), "dur": np.ones(n, np.int64),
        "graph_rank": np.array([fn.rank for fn in order], dtype=np.int64),
        "node": pd.array(node_ids, dtype="string"),
        "output_bytes": np.array(out_bytes, dtype=np.int64),
    }, quality, base=0)

    def ref(tid: int, gradient: bool) -> str:
        return f"grad({tid})" if gradient else str(tid)

    nodes = pd.DataFrame({
        "id": pd.array(node_ids, dtype="string"),
        "name": pd.array([f"{fn.name}[{fn.direction} rank {fn.rank}]" for fn in order], dtype="string"),
        "op_type": pd.Categorical([fn.name for fn in order]),
        "inputs": pd.Series([[ref(t, tag == "gradient") for t, tag in fn.inputs] for fn in order],
                            dtype=object),
        "outputs": pd.Series([[ref(t, fn.direction == "backward") for t in fn.outputs] for fn in order],
                             dtype=object),
        "input_shapes": pd.Series([[] for _ in order], dtype=object),
        "output_shapes": pd.Series([[] for _ in order], dtype=object),
        "bytes": pd.array(out_bytes, dtype="Int64"),
        "device": pd.Categorical([DEVICE] * n),
        "order": pd.array(list(range(n)), dtype="Int64"),
        "phase": pd.Categorical([fn.direction for fn in order], categories=["forward", "backward"]),
        "graph_rank": np.array([fn.rank for fn in order], dtype=np.int64),
    })
    attrs = [order[int(i)].attrs for i in raw_index]

    def args(event_id: int) -> dict[str, Any]:
        return dict(attrs[event_id]) if 0 <= event_id < len(attrs) else {}

    return make_trace(
        "chainer_graph", "step", events, quality, base=base,
        memory=_memory(rows, n), allocations=_allocations(rows), nodes=nodes,
        metadata={
            "memory_model": "simulated from tensor lifetimes (see jupyter_profview.formats.chainer_graph)",
            "time_axis": "execution step (forward by rank, then backward by reverse rank)",
            "n_tensors": len(tensors), "n_functions": len(functions),
        },
        args=args,
    )


def sniff(head: bytes) -> bool:
    """Header ``<int> <int>``, then a tensor line ``<int> <int> <name>`` (or a record)."""
    lines = head.lstrip().split(b"\n", 3)
    if len(lines) < 2:
        return False
    first, second = lines[0].split(), lines[1].split()
    if len(first) != 2 or not all(p.isdigit() for p in first):
        return False
    if first[0] == b"0":
        return lines[1].strip() in (b"forward", b"backward", b"")
    return len(second) == 3 and second[0].isdigit() and second[1].isdigit()


FORMAT = TraceFormat(
    name="chainer_graph",
    description="Chainer computational-graph dump: tensor sizes and forward/backward functions",
    sniff=sniff,
    load=load,
)
