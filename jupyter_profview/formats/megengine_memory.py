"""MegEngine graph-profiler JSON: the simulated memory (the ``memory`` and ``allocations``
tables of `.megengine_json`, whose docstring states the model).

The file has addresses, not an allocation log: a buffer is a mem_chunk or a var with its own
address range; vars with a ``mem_plan`` or a forwarding source share a buffer; a buffer lives
over the comp_seq steps between its producer and its last reader (weights: the whole trace).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..model import Quality, memory_frame

if TYPE_CHECKING:
    from .megengine_json import _Check

PERSISTENT_FLAGS = {"PERSISTENT_DEVICE_VALUE", "NO_MEM_RECLAIM"}
Table = dict[str, dict[str, Any]]  # id -> record


def parse_vars(c: _Check, graph: dict[str, Any]) -> Table:
    """graph_exec.var: per var its name, comp node, flags, address range, chunk, forwarding
    source and inferred shape."""
    out: Table = {}
    for vid, raw in c.obj(graph.get("var", {}), "graph_exec.var").items():
        p = f"graph_exec.var{c.q(vid)}"
        r = c.obj(raw, p)
        plan = r.get("mem_plan")
        chunk = None
        if plan is not None:
            chunk_id = c.obj(plan, f"{p}.mem_plan").get("mem_chunk_id")
            chunk = None if chunk_id is None else c.ident(chunk_id, f"{p}.mem_plan.mem_chunk_id")
        src = r.get("mem_readonly_fwd_src") or r.get("force_update_src")
        shape = r.get("static_infer_tags")
        for k in ("SHAPE", "inferred_result"):
            shape = shape.get(k) if isinstance(shape, dict) else None
        cn = r.get("comp_node")
        out[vid] = {
            "name": c.text(r.get("name", vid), f"{p}.name"),
            "comp_node": None if cn is None else c.text(cn, f"{p}.comp_node"),
            "flag": [c.text(f, f"{p}.flag[{i}]")
                     for i, f in enumerate(c.lst(r.get("flag", []), f"{p}.flag"))],
            "ptr": c.count(r.get("prev_dev_ptr"), f"{p}.prev_dev_ptr"),
            "ptr_end": c.count(r.get("prev_dev_ptr_end"), f"{p}.prev_dev_ptr_end"),
            "chunk": chunk,
            "fwd_src": None if src is None else c.ident(src, f"{p}.mem_readonly_fwd_src"),
            "shape": None if shape is None
            else c.shape(shape, f"{p}.static_infer_tags.SHAPE.inferred_result"),
        }
    return out


def buffers(c: _Check, graph: dict[str, Any], variables: Table, ops: Table, seq: list[str],
            step: dict[str, int], quality: Quality) -> Table:
    """Buffers with ``alloc``/``free`` comp_seq steps (None = whole trace), per the module docstring."""
    producer = {v: oid for oid, op in ops.items() for v in op["output"]}
    last_read = {v: step[oid] for oid in seq for v in ops[oid]["input"]}
    bufs: Table = {}
    for cid, raw in c.obj(graph.get("mem_chunk", {}), "graph_exec.mem_chunk").items():
        p = f"graph_exec.mem_chunk{c.q(cid)}"
        r = c.obj(raw, p)
        owner = c.ident(c.key(r, "owner_var", p), f"{p}.owner_var")
        ov = variables.get(owner, {})
        whole = bool(PERSISTENT_FLAGS & set(ov.get("flag", ()))) or producer.get(owner) not in step
        size = c.count(c.key(r, "size", p), f"{p}.size", nullable=False)
        bufs[cid] = {"device": ov.get("comp_node") or "device", "bytes": size,
                     "address": c.count(r.get("dev_ptr"), f"{p}.dev_ptr"), "owner": ov.get("name") or owner,
                     "storage": "static", "vars": [], "alloc": None if whole else step[producer[owner]],
                     "free": None if whole else step[producer[owner]]}
        quality.records_read += 1
        quality.placed["allocations"] += 1

    def resolve(vid: str) -> tuple[str | None, str]:
        seen = {vid}
        while True:
            v = variables[vid]
            if producer.get(vid) not in step:
                return None, "var of an operator not in comp_seq"
            if v["chunk"] is not None:
                return (v["chunk"], "") if v["chunk"] in bufs else (None, "var in an unknown mem_chunk")
            src = v["fwd_src"]
            if src is None or src not in variables or src in seen:
                break
            vid = src  # shares its source's memory
            seen.add(vid)
        lo, hi = v["ptr"], v["ptr_end"]
        if not lo or hi is None or hi <= lo:
            return None, "var without a device address range"
        if f"var:{vid}" not in bufs:
            s = step[producer[vid]]
            bufs[f"var:{vid}"] = {"device": v["comp_node"] or "device", "address": lo, "bytes": hi - lo,
                                  "owner": v["name"], "storage": "dynamic", "vars": [], "alloc": s, "free": s}
        return f"var:{vid}", ""

    for vid in variables:
        quality.records_read += 1
        key, reason = resolve(vid)
        if key is None:
            quality.skipped[reason] += 1
            continue
        quality.placed["allocations"] += 1
        b = bufs[key]
        b["vars"].append(vid)
        if b["free"] is not None:
            b["free"] = max(b["free"], last_read.get(vid, -1), step[producer[vid]])
            b["alloc"] = min(b["alloc"], step[producer[vid]])
    return bufs


def step_spans(seq: list[str], spans: dict[str, dict[str, list[int]]],
               base: int) -> tuple[list[int], list[int]]:
    """Start and end (ns) of each comp_seq step: the operator's device span (host if untimed
    there; else the previous step's end)."""
    t_start, t_end, prev = [], [], base
    for oid in seq:
        s, e = spans["device"].get(oid) or spans["host"].get(oid) or [prev, prev]
        t_start.append(s)
        t_end.append(e)
        prev = e
    return t_start, t_end


def memory_tables(rows: list[dict[str, Any]], t_start: list[int], t_end: list[int],
                  base: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``allocations`` table of the buffers and the ``memory`` (kind ``simulated``) series
    of their running sum per device."""
    alloc_t = [base if b["alloc"] is None else t_start[b["alloc"]] for b in rows]
    allocations = pd.DataFrame({
        "device": pd.Categorical([b["device"] for b in rows]),
        "address": pd.array([b["address"] for b in rows], dtype="Int64"),
        "bytes": np.array([b["bytes"] for b in rows], dtype=np.int64),
        "alloc_time": pd.array(alloc_t, dtype="Int64"),
        "free_time": pd.array([None if b["free"] is None else t_end[b["free"]] for b in rows], dtype="Int64"),
        "owner": pd.array([b["owner"] for b in rows], dtype="string"),
        "storage": pd.Categorical([b["storage"] for b in rows], categories=["static", "dynamic"]),
        "vars": pd.Series([list(b["vars"]) for b in rows], dtype=object),
    })
    # (device, time, step, 0 alloc / 1 free, delta): frees of one operator precede the next one's allocs
    deltas = [(b["device"], t, -1 if b["alloc"] is None else b["alloc"], 0, b["bytes"])
              for b, t in zip(rows, alloc_t, strict=True)]
    deltas += [(b["device"], t_end[b["free"]], b["free"], 1, -b["bytes"])
               for b in rows if b["free"] is not None]
    deltas.sort(key=lambda d: d[:4])
    points: list[tuple[str, int, int]] = []
    level: dict[str, int] = defaultdict(int)
    for i, (dev, t, s, kind, nbytes) in enumerate(deltas):
        level[dev] += nbytes
        if i + 1 == len(deltas) or deltas[i + 1][:4] != (dev, t, s, kind):  # one row per group
            points.append((dev, t, level[dev]))
    memory = memory_frame([p[1] for p in points], [p[0] for p in points], [p[2] for p in points], "simulated")
    return allocations, memory
