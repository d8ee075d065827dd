"""The longest path through the critical-path graph, and the path read back as events, edges and
a breakdown."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...errors import ProfviewError
from ..columns import among
from .graph import BREAKDOWN_TYPES, EDGE_TYPES, ENDS, OPERATOR, Graph
from .result import CriticalPath


def _codes(codes: np.ndarray, names: tuple[str, ...]) -> Any:
    return pd.Categorical.from_codes(codes.astype(np.int64), categories=pd.Index(list(names)))


def solve(graph: Graph, *, annotation: str | None, instance: int | None, rank: int | None,
          steps: pd.DataFrame) -> CriticalPath:
    """The longest path of `graph`, read back as a
    [`CriticalPath`][jupyter_profview.analysis.critical_path.CriticalPath]."""
    n_nodes = 2 * len(graph.ids)
    src = np.asarray(graph.src, np.int64)
    dst = np.asarray(graph.dst, np.int64)
    weight = np.asarray(graph.weight, np.int64)
    kind = np.asarray(graph.kind, np.int8)
    attr = np.asarray(graph.attr, np.int64)
    order_on_path = np.full(len(src), -1, np.int64)
    length = 0
    if len(src):
        length, path_edges = _longest_path(n_nodes, src, dst, weight)
        order_on_path[path_edges] = np.arange(len(path_edges))
    on_path = order_on_path >= 0
    t = np.stack([graph.t0, graph.t1])
    ids = graph.ids
    edges = pd.DataFrame({
        "src": ids[src >> 1], "src_at": _codes(src & 1, ENDS),
        "dst": ids[dst >> 1], "dst_at": _codes(dst & 1, ENDS),
        "src_time": t[src & 1, src >> 1], "dst_time": t[dst & 1, dst >> 1],
        "type": _codes(kind, EDGE_TYPES),
        "weight": weight, "event": np.where(attr >= 0, ids[np.maximum(attr, 0)], -1),
        "on_path": on_path, "order": order_on_path,
    })
    events = _events(graph, src, dst, attr, weight, on_path)
    bound = _bounds(graph, kind, attr)
    edges["bound"] = _codes(bound, BREAKDOWN_TYPES)
    breakdown = _breakdown(bound, weight, on_path, length)
    return CriticalPath(length=int(length), events=events, edges=edges, breakdown=breakdown,
                        start=graph.start, end=graph.end, annotation=annotation, instance=instance,
                        rank=rank, unlinked=graph.unlinked, graph_nodes=n_nodes, steps=steps)


def _events(graph: Graph, src: np.ndarray, dst: np.ndarray, attr: np.ndarray, weight: np.ndarray,
            on_path: np.ndarray) -> pd.DataFrame:
    local = np.unique(np.concatenate([src[on_path] >> 1, dst[on_path] >> 1]))
    spent = np.bincount(attr[on_path & (attr >= 0)], weights=weight[on_path & (attr >= 0)],
                        minlength=len(graph.ids)).astype(np.int64)
    ev = graph.trace.events
    ids = graph.ids[local]
    rows = ev.loc[ids]
    out = pd.DataFrame({
        "event": ids, "name": rows["name"].to_numpy(), "category": rows["category"].to_numpy(),
        "start": graph.t0[local], "dur": graph.t1[local] - graph.t0[local], "on_path": spent[local],
    })
    for col in ("name", "category"):
        out[col] = pd.Categorical(out[col].astype(str))
    return out.sort_values(["start", "event"], kind="stable").reset_index(drop=True)


def _bounds(graph: Graph, kind: np.ndarray, attr: np.ndarray) -> np.ndarray:
    """Each edge's breakdown category (index into BREAKDOWN_TYPES)."""
    comm = np.zeros(len(graph.ids), bool)
    comm[graph.n_cpu:] = among(graph.trace.launches["type"], ("communication",))[graph.gpu_rows]
    on_gpu = attr >= graph.n_cpu
    operator = np.where(on_gpu, np.where(comm[np.maximum(attr, 0)], 2, 1), 0)
    other = np.array([0, 3, 4, 5, 5])[kind]  # launch -> launch, kernel -> kernel_gap, sync/dependency
    return np.where(kind == OPERATOR, operator, other).astype(np.int8)


def _breakdown(bound: np.ndarray, weight: np.ndarray, on_path: np.ndarray, length: int) -> pd.DataFrame:
    time = np.bincount(bound[on_path], weights=weight[on_path], minlength=len(BREAKDOWN_TYPES))
    time = time.astype(np.int64)
    share = time / length * 100 if length else np.zeros(len(time))
    return pd.DataFrame({"type": list(BREAKDOWN_TYPES), "time": time, "share": share})


def _longest_path(n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> tuple[int, np.ndarray]:
    """Length and edge indices (in order) of a longest path of the DAG (Kahn's order, then one
    relaxation pass); a cycle is a ProfviewError (the trace's clocks disagree)."""
    by_src = np.argsort(src, kind="stable")
    first = np.searchsorted(src[by_src], np.arange(n + 1))
    indeg = np.bincount(dst, minlength=n)
    out_edges = by_src.tolist()
    first_l = first.tolist()
    dst_l = dst.tolist()
    w_l = weight.tolist()
    indeg_l = indeg.tolist()
    dist = [0] * n
    pred = [-1] * n
    ready = [v for v in range(n) if indeg_l[v] == 0]
    seen = 0
    while ready:
        u = ready.pop()
        seen += 1
        du = dist[u]
        for e in out_edges[first_l[u]:first_l[u + 1]]:
            v = dst_l[e]
            cand = du + w_l[e]
            if cand > dist[v] or (pred[v] < 0 and cand == dist[v] and w_l[e] >= 0):
                dist[v] = cand
                pred[v] = e
            indeg_l[v] -= 1
            if indeg_l[v] == 0:
                ready.append(v)
    if seen != n:
        raise ProfviewError(f"the critical-path graph has a cycle ({n - seen} of {n} nodes on it): "
                            "the trace's CPU and GPU clocks disagree about the order of these events")
    end = int(np.argmax(dist))
    path: list[int] = []
    v = end
    while pred[v] >= 0:
        e = pred[v]
        path.append(e)
        v = int(src[e])
    return dist[end], np.asarray(path[::-1], np.int64)
