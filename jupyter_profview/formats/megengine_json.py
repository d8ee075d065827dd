"""MegEngine graph-profiler JSON (seed 004: ResNet-50 inference, batch 10).

One JSON object, read with the standard library's ``json`` (bounded: a gzip input holding more
values than its stored size allows is refused while it streams in, see
``limits.json_value_budget``); times in seconds:

    {"profiler": {"host": {opr: {thread: {start, kern, end}}}, "device": {opr: {comp_node: {...}}},
                  "opr_footprint": {opr: {param, in_shapes, out_shapes, memory, computation}}},
     "graph_exec": {"operator": {opr: {name, type, input: [var], output: [var]}},
                    "comp_seq": [opr, ...],  "mem_chunk": {chunk: {dev_ptr, owner_var, size}},
                    "var": {var: {name, comp_node, flag, prev_dev_ptr, prev_dev_ptr_end, mem_plan,
                                  mem_readonly_fwd_src, static_infer_tags.SHAPE.inferred_result}}}}

Records and where they land: each host timing entry (operator x thread) and
device timing entry (operator x comp node) -> ``events``; each
``opr_footprint`` entry -> footprint columns of ``events``
(``placed["events:footprint"]``); each operator -> ``nodes``; each mem_chunk
and each var -> ``allocations`` (a var shares its chunk's or its forwarding
source's buffer, or owns one), else ``skipped`` with the reason.

``events``: seconds rounded to the nearest ns; ``dur = end - start``, which is
what MegEngine's ``profile_analyze`` calls an operator's time.  Host rows:
process ``host``, thread = thread name; device rows: process = comp node
(``gpu0:0``), thread ``device``.  ``category`` = operator type; ``phase`` from
the type (``*Backward*`` backward, ``*Update*`` optimizer, collectives
communication, callbacks/constants/copies other, the rest forward).  Extra
columns: ``opr_id``, ``op_type``, ``order`` (index in comp_seq), ``wait``
(``kern - start`` ns, the analyzer's "kern" time) and the operator's
footprint: ``in_shapes`` / ``out_shapes`` (lists of tuples) and ``param``
(JSON string) on all its rows, ``flops`` (Int64 FLOP count, <NA> where null)
and ``memory_bytes`` (Int64) on its device rows only (host rows if it has no
device row), so sums count each operator once.  The analyzer's per-operator
numbers come from the device rows: time = ``dur`` (max over comp nodes), FLOP/s
= ``flops / dur``, bandwidth = ``memory_bytes / dur``; "total device time" is
the sum of the times.

``memory`` (kind ``simulated``: the file has addresses, not an allocation log)
and ``allocations``, per comp node.  A buffer is a mem_chunk, or a var with no
``mem_plan`` and its own range ``[prev_dev_ptr, prev_dev_ptr_end)`` (dynamic
memory: activations, workspaces, the input data).  A var with a ``mem_plan``
lives in its chunk; one with ``mem_readonly_fwd_src`` / ``force_update_src``
shares its source's buffer.  Chunks whose owner var is
``PERSISTENT_DEVICE_VALUE`` / ``NO_MEM_RECLAIM`` (weights) or not computed in
comp_seq live for the whole trace; any other buffer is live from the device
start of the operator producing it to the end of the last comp_seq operator
reading a var in it (its producer's end if none).  On the seed no two buffers
live at once overlap in address, which supports the model.  Extra columns of
``allocations``: ``storage`` (static / dynamic), ``vars`` (var ids sharing the
buffer).  `jupyter_profview.analysis.live_at` lists what is live at
``peak_time(trace)``.  The memory model is implemented in `.megengine_memory`.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from typing import Any, NoReturn

import numpy as np
import orjson
import pandas as pd

from ..builder import build_events, make_trace
from ..errors import ProfviewError
from ..model import Quality, Trace
from ..sources import Source
from ..text_stream import utf8_clean
from . import TraceFormat
from .megengine_memory import Table, buffers, memory_tables, parse_vars, step_spans

__all__ = ["FORMAT"]

OTHER_TYPES = {"InputCallback", "OutputCallback", "ImmutableTensor", "SharedDeviceTensor", "Host2DeviceCopy",
               "Copy", "VolatileSharedDeviceTensor", "GetVarShape", "MultipleDeviceTensorHolder"}
COMM_TYPES = {"CollectiveComm", "RemoteSend", "RemoteRecv"}


class _Check:
    """Type checks on decoded JSON that raise ProfviewError naming the JSON path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, found: Any, expected: str) -> NoReturn:
        text = type(found).__name__ if not isinstance(found, (str, int, float)) else repr(found)[:60]
        raise ProfviewError(f"found {text}", source=self.source, position=f"at {path}", expected=expected)

    def obj(self, x: Any, path: str) -> dict[str, Any]:
        return x if isinstance(x, dict) else self.fail(path, x, "a JSON object")

    def lst(self, x: Any, path: str) -> list[Any]:
        return x if isinstance(x, list) else self.fail(path, x, "a JSON array")

    def text(self, x: Any, path: str) -> str:
        return x if isinstance(x, str) else self.fail(path, x, "a string")

    def key(self, x: dict[str, Any], key: str, path: str) -> Any:
        if key not in x:
            raise ProfviewError(f"missing key {key!r}", source=self.source, position=f"at {path}",
                                expected=f"an object with {key!r}")
        return x[key]

    def ident(self, x: Any, path: str) -> str:
        ok = isinstance(x, (str, int)) and not isinstance(x, bool)
        return str(x) if ok else self.fail(path, x, "an id (string)")

    def ids(self, x: Any, path: str) -> list[str]:
        return [self.ident(v, f"{path}[{i}]") for i, v in enumerate(self.lst(x, path))]

    def num(self, x: Any, path: str) -> float:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or abs(x) > 1e9:
            self.fail(path, x, "a finite number of seconds")
        return float(x)

    def count(self, x: Any, path: str, *, nullable: bool = True) -> int | None:
        if x is None and nullable:
            return None
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x <= 2**53:
            self.fail(path, x, "a non-negative integer" + (" or null" if nullable else ""))
        return int(round(x))

    @staticmethod
    def q(key: str) -> str:
        """``key`` as a JSON-path subscript: ``["key"]``."""
        return '["' + key.replace('"', '\\"') + '"]'

    def shape(self, x: Any, path: str) -> tuple[int, ...]:
        return tuple(self.count(d, f"{path}[{i}]", nullable=False) or 0
                     for i, d in enumerate(self.lst(x, path)))


def _phase(op_type: str, name: str) -> str:
    if "Backward" in op_type or name.startswith("grad"):
        return "backward"
    if "Update" in op_type:
        return "optimizer"
    if op_type in COMM_TYPES:
        return "communication"
    return "other" if op_type in OTHER_TYPES else "forward"


def _decode(source: Source) -> dict[str, Any]:
    document = source.json_document()  # streamed: whitespace squeezed, strings limited
    data = document.data
    if not data.strip():
        raise ProfviewError("the input is empty", source=source.name,
                            expected="a MegEngine profiler JSON object")
    expected = "one JSON object with 'profiler' and 'graph_exec'"
    try:  # the standard library's parser: under a memory limit it raises MemoryError, never crashes
        doc = json.loads(data)
    except json.JSONDecodeError as exc:
        raise ProfviewError(f"invalid JSON ({exc.msg})", source=source.name,
                            position=document.position(exc.pos), expected=expected) from None
    except UnicodeDecodeError as exc:
        raise ProfviewError("not UTF-8 text", source=source.name, position=document.position(exc.start),
                            expected=expected) from None
    except RecursionError:
        raise ProfviewError("nesting too deep", source=source.name, expected=expected) from None
    except ValueError:  # an integer beyond Python's digit limit
        raise ProfviewError("an integer too long to read", source=source.name, expected=expected) from None
    if b"\\u" in data and not utf8_clean(doc):
        raise ProfviewError("a string holds a lone UTF-16 surrogate (\\ud800-\\udfff)", source=source.name,
                            expected=expected)
    return _Check(source.name).obj(doc, "the top level")


def _operators(c: _Check, graph: dict[str, Any]) -> tuple[Table, list[str], dict[str, int]]:
    ops: Table = {}
    for oid, raw in c.obj(c.key(graph, "operator", "graph_exec"), "graph_exec.operator").items():
        p = f"graph_exec.operator{c.q(oid)}"
        r = c.obj(raw, p)
        ops[oid] = {"name": c.text(c.key(r, "name", p), f"{p}.name"),
                    "type": c.text(c.key(r, "type", p), f"{p}.type"),
                    "input": c.ids(r.get("input", []), f"{p}.input"),
                    "output": c.ids(r.get("output", []), f"{p}.output")}
    seq = c.ids(c.key(graph, "comp_seq", "graph_exec"), "graph_exec.comp_seq")
    step: dict[str, int] = {}
    for i, oid in enumerate(seq):
        if oid not in ops or oid in step:
            why = "an operator id of graph_exec.operator" if oid not in ops else "each operator once"
            c.fail(f"graph_exec.comp_seq[{i}]", oid, why)
        step[oid] = i
    return ops, seq, step


def _compact(value: dict[str, Any]) -> str:
    """Compact JSON text with sorted keys (orjson; an integer past 64 bits, which it cannot
    write, through the standard library)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _footprints(c: _Check, prof: dict[str, Any]) -> Table:
    foot: Table = {}
    for oid, raw in c.obj(prof.get("opr_footprint", {}), "profiler.opr_footprint").items():
        p = f"profiler.opr_footprint{c.q(oid)}"
        r = c.obj(raw, p)
        shapes = {k: [c.shape(s, f"{p}.{k}[{i}]") for i, s in enumerate(c.lst(r.get(k, []), f"{p}.{k}"))]
                  for k in ("in_shapes", "out_shapes")}
        param = _compact(c.obj(r.get("param", {}), f"{p}.param"))
        foot[oid] = {"flops": c.count(r.get("computation"), f"{p}.computation"),
                     "memory_bytes": c.count(r.get("memory"), f"{p}.memory"),
                     **shapes, "param": param, "raw": r}
    return foot


def _timings(c: _Check, prof: dict[str, Any], ops: Table, step: dict[str, int], foot: Table,
             quality: Quality) -> tuple[dict[str, list[Any]], list[Any], Any]:
    """Event columns, raw args per row, and side -> opr_id -> [start, end] in ns."""
    cols: dict[str, list[Any]] = defaultdict(list)
    raw_args: list[dict[str, Any]] = []
    spans: dict[str, dict[str, list[int]]] = {"device": {}, "host": {}}
    for side in ("device", "host"):
        for oid, lanes in c.obj(prof.get(side, {}), f"profiler.{side}").items():
            p = f"profiler.{side}{c.q(oid)}"
            for lane, raw in c.obj(lanes, p).items():
                lp = p + c.q(lane)
                r = c.obj(raw, lp)
                t0, t1 = (round(c.num(c.key(r, k, lp), f"{lp}.{k}") * 1e9) for k in ("start", "end"))
                kern = None if r.get("kern") is None else c.num(r["kern"], f"{lp}.kern")
                quality.records_read += 1
                if oid not in ops:
                    quality.skipped["timing of an operator missing from graph_exec.operator"] += 1
                    continue
                quality.placed["events"] += 1
                span = spans[side].setdefault(oid, [t0, t1])
                span[:] = [min(span[0], t0), max(span[1], t1)]
                op, f = ops[oid], foot.get(oid, {})
                row = {"name": op["name"], "category": op["type"], "phase": _phase(op["type"], op["name"]),
                       "process": "host" if side == "host" else lane,
                       "thread": lane if side == "host" else "device", "start": t0, "dur": t1 - t0,
                       "wait": None if kern is None else round(kern * 1e9) - t0, "opr_id": oid,
                       "order": step.get(oid)}
                for k, v in row.items():
                    cols[k].append(v)
                counted = side == "device" or oid not in spans["device"]  # FLOPs/bytes counted once
                for k in ("flops", "memory_bytes", "in_shapes", "out_shapes", "param"):
                    cols[k].append(f.get(k) if counted or k not in ("flops", "memory_bytes") else None)
                raw_args.append({"opr_id": oid, "side": side, "lane": lane, "timing": r,
                                 "footprint": f.get("raw")})
    timed = set(spans["device"]) | set(spans["host"])
    quality.records_read += len(foot)
    quality.placed["events:footprint"] += len(timed & set(foot))
    if set(foot) - timed:
        quality.skipped["footprint of an operator without timing"] += len(set(foot) - timed)
    internal = c.obj(prof.get("opr_internal_pf", {}), "profiler.opr_internal_pf")
    quality.records_read += len(internal)
    if internal:
        quality.skipped["opr_internal_pf entry (not interpreted)"] += len(internal)
    return cols, raw_args, spans


def load(source: Source) -> Trace:
    c = _Check(source.name)
    root = _decode(source)
    prof = c.obj(c.key(root, "profiler", "the top level"), "profiler")
    graph = c.obj(c.key(root, "graph_exec", "the top level"), "graph_exec")
    quality = Quality()
    ops, seq, step = _operators(c, graph)
    cols, raw_args, spans = _timings(c, prof, ops, step, _footprints(c, prof), quality)
    base = min(cols["start"]) if cols["start"] else 0
    events, raw_index, base = build_events({
        **{k: cols[k] for k in ("name", "category", "phase", "process", "thread")},
        "start": np.array(cols["start"], np.int64), "dur": np.array(cols["dur"], np.int64),
        "opr_id": pd.array(cols["opr_id"], dtype="string"), "op_type": pd.Categorical(cols["category"]),
        "order": pd.array(cols["order"], dtype="Int64"), "wait": pd.array(cols["wait"], dtype="Int64"),
        "flops": pd.array(cols["flops"], dtype="Int64"),
        "memory_bytes": pd.array(cols["memory_bytes"], dtype="Int64"),
        "in_shapes": cols["in_shapes"], "out_shapes": cols["out_shapes"],
        "param": pd.array(cols["param"], dtype="string"),
    }, quality, base=base)
    variables = parse_vars(c, graph)
    bufs = buffers(c, graph, variables, ops, seq, step, quality)
    t_start, t_end = step_spans(seq, spans, base)
    allocations, memory = memory_tables(list(bufs.values()), t_start, t_end, base)
    quality.records_read += len(ops)
    quality.placed["nodes"] += len(ops)

    def args(event_id: int) -> dict[str, Any]:
        return dict(raw_args[int(raw_index[event_id])]) if 0 <= event_id < len(raw_index) else {}

    return make_trace(
        "megengine_json", "ns", events, quality, base=base, memory=memory, allocations=allocations,
        nodes=_nodes(ops, seq, step, variables, bufs), args=args,
        metadata={"memory_model": "simulated from mem_chunks and var address ranges over comp_seq "
                                  "(see jupyter_profview.formats.megengine_json)",
                  "n_operators": len(ops), "n_executed": len(seq)},
    )


def _nodes(ops: Table, seq: list[str], step: dict[str, int],
           variables: Table, bufs: Table) -> pd.DataFrame:
    def size(vid: str) -> int | None:
        v = variables.get(vid)
        if v is None:
            return None
        if v["ptr"] and v["ptr_end"] is not None and v["ptr_end"] > v["ptr"]:
            return int(v["ptr_end"] - v["ptr"])
        chunk = bufs.get(v["chunk"] or "")
        return chunk["bytes"] if chunk is not None and chunk["owner"] == v["name"] else None

    def shapes(vids: list[str]) -> list[Any]:
        return [variables.get(v, {}).get("shape") for v in vids]

    position = {o: i for i, o in enumerate(ops)}
    order = sorted(ops, key=lambda o: (step.get(o, len(seq)), position[o]))
    sizes = [[n for n in map(size, ops[o]["output"]) if n is not None] for o in order]
    return pd.DataFrame({
        "id": pd.array(order, dtype="string"),
        "name": pd.array([ops[o]["name"] for o in order], dtype="string"),
        "op_type": pd.Categorical([ops[o]["type"] for o in order]),
        "inputs": pd.Series([list(ops[o]["input"]) for o in order], dtype=object),
        "outputs": pd.Series([list(ops[o]["output"]) for o in order], dtype=object),
        "input_shapes": pd.Series([shapes(ops[o]["input"]) for o in order], dtype=object),
        "output_shapes": pd.Series([shapes(ops[o]["output"]) for o in order], dtype=object),
        "bytes": pd.array([sum(z) if z else None for z in sizes], dtype="Int64"),
        "device": pd.Categorical([next((variables[v]["comp_node"] for v in ops[o]["output"]
                                        if variables.get(v, {}).get("comp_node")), None) for o in order]),
        "order": pd.array([step.get(o) for o in order], dtype="Int64"),
    })


_HEAD = re.compile(rb'^\s*\{\s*"(profiler|graph_exec)"\s*:\s*\{')


def sniff(head: bytes) -> bool:
    """A JSON object opening with ``"profiler"`` or ``"graph_exec"`` (or naming both early)."""
    if _HEAD.match(head):
        return True
    stripped = head.lstrip()
    return stripped.startswith(b"{") and b'"graph_exec"' in head and b'"profiler"' in head \
        and b'"traceEvents"' not in head


FORMAT = TraceFormat(
    name="megengine_json",
    description="MegEngine graph profiler JSON (profiler.host/device timings, graph_exec operators, memory)",
    sniff=sniff,
    load=load,
)
