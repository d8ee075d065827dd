"""The critical-path graph: two nodes per event, the CPU edges of each thread's op tree and the
device edges of each stream (launch, gap, sync).  The definition:
[`critical_path`][jupyter_profview.analysis.critical_path]."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...derived import queue_levels
from ...kinds import HTA_PATH_WAITS
from ...model import Trace
from ...nesting import nest, nest_order
from ..columns import among, host_syncs, on_device, thread_keys
from .syncs import stream_keys, sync_events

GRAPH_CATEGORIES = ("cpu_op", "cuda_runtime", "cuda_driver")
EDGE_TYPES = ("operator", "launch", "kernel", "sync", "dependency")
BREAKDOWN_TYPES = ("cpu", "kernel", "communication", "launch", "kernel_gap", "sync")
ENDS = ("start", "end")
OPERATOR, LAUNCH, KERNEL, SYNC, DEPENDENCY = range(5)


class Graph:
    """Nodes 2k (start) and 2k+1 (end) of the k-th graph event; edges in flat lists."""

    def __init__(self, trace: Trace, start: int, end: int) -> None:
        self.trace, self.start, self.end = trace, start, end
        ev = trace.events
        s = ev["start"].to_numpy(np.int64)
        d = ev["dur"].to_numpy(np.int64)
        device = on_device(trace)
        cpu = (~device & among(ev["category"], GRAPH_CATEGORIES) & (d > 0) & (s >= start) & (s <= end)
               & among(ev["kind"], ("slice",)))
        la = trace.launches
        has_launch = la["launch"].notna().to_numpy(bool)
        ls = la["launch_start"].to_numpy(np.float64, na_value=np.nan)
        ld = la["launch_dur"].to_numpy(np.float64, na_value=np.nan)
        launch_ids = la["launch"].to_numpy(np.int64, na_value=-1)
        pos = ev.index.get_indexer(pd.Index(launch_ids))
        launch_is_node = np.zeros(len(la), bool)
        ok = pos >= 0
        launch_is_node[ok] = cpu[pos[ok]]
        gpu_rows = np.flatnonzero(has_launch & (ls >= start) & (ls <= end) & (ld > 0) & launch_is_node)
        self.cpu_pos = np.flatnonzero(cpu)
        self.gpu_rows = gpu_rows
        ids = ev.index.to_numpy(np.int64)
        cpu_ids = ids[self.cpu_pos]
        gpu_ids = la["kernel"].to_numpy(np.int64)[gpu_rows]
        self.ids = np.concatenate([cpu_ids, gpu_ids])
        self.n_cpu = len(cpu_ids)
        self.t0 = np.concatenate([s[self.cpu_pos], la["kernel_start"].to_numpy(np.int64)[gpu_rows]])
        self.t1 = self.t0 + np.concatenate([d[self.cpu_pos], la["kernel_dur"].to_numpy(np.int64)[gpu_rows]])
        self.local = {int(e): k for k, e in enumerate(self.ids)}
        self.src: list[int] = []
        self.dst: list[int] = []
        self.kind: list[int] = []
        self.weight: list[int] = []
        self.attr: list[int] = []
        self.unlinked = 0
        self._cpu_edges()
        self._gpu_edges()

    # -- edges ------------------------------------------------------------------------------
    def _edge(self, src: int, dst: int, kind: int, attr: int = -1, zero: bool = False) -> None:
        t = (self.t0, self.t1)
        w = 0 if zero or kind in (SYNC, DEPENDENCY) else int(t[dst & 1][dst >> 1] - t[src & 1][src >> 1])
        self.src.append(src)
        self.dst.append(dst)
        self.kind.append(kind)
        # no negative time: a child ending after its parent, a kernel starting before the
        # previous one of its stream ends (HTA zeroes both in its graph, as here)
        self.weight.append(max(w, 0))
        self.attr.append(attr)

    def _cpu_edges(self) -> None:
        """Per CPU thread: nest the graph's ops by the events table's rule
        (`nest`, among the graph's own events) and walk the tree
        depth first."""
        ev = self.trace.events
        n = self.n_cpu
        if n == 0:
            return
        key = thread_keys(ev)[self.cpu_pos]
        t0, t1 = self.t0[:n], self.t1[:n]
        order = nest_order(key, t0, t1 - t0)
        _, parent_pos, _ = nest(key[order], t0[order], t1[order])
        parent = np.full(n, -1, np.int64)
        has = parent_pos >= 0
        parent[order[has]] = order[parent_pos[has]]
        # calls that wait for the device (`derived.host_syncs`, plus HTA's polls and async
        # copies: `kinds.HTA_PATH_WAITS`): the edge into their end weighs 0
        waits = host_syncs(self.trace) | among(ev["name"], HTA_PATH_WAITS)
        blocking = waits[self.cpu_pos].tolist()
        edge = self._edge
        stack: list[int] = []
        last = -1       # the last node walked in the current top-level op
        last_top = -1   # the end node of the previous top-level op on this thread
        cur_key = -1

        def close() -> None:
            nonlocal last, last_top
            k = stack.pop()
            edge(last, 2 * k + 1, OPERATOR, attr=k, zero=blocking[k])
            if stack:
                last = 2 * k + 1
            else:
                last, last_top = -1, 2 * k + 1

        for k, kk, p in zip(order.tolist(), key[order].tolist(), parent[order].tolist(), strict=True):
            if kk != cur_key:
                while stack:
                    close()
                cur_key, last, last_top = kk, -1, -1
            while stack and stack[-1] != p:  # close what is not its parent (its parent is open)
                close()
            if not stack:
                if last_top >= 0:
                    edge(last_top, 2 * k, DEPENDENCY)
            elif last & 1:   # a sibling's end -> this start: time in the enclosing op
                edge(last, 2 * k, OPERATOR, attr=stack[-1])
            else:            # the parent's start -> this start: time in the parent
                edge(last, 2 * k, OPERATOR, attr=last >> 1)
            stack.append(k)
            last = 2 * k
        while stack:
            close()

    def _gpu_edges(self) -> None:
        """Kernels by start (sync events by end, as HTA): a launch, gap or sync edge into each."""
        la = self.trace.launches
        rows = self.gpu_rows
        n_cpu = self.n_cpu
        qr, qk = queue_levels(la)
        stream_key = stream_keys(la)
        launch_start = la["launch_start"].to_numpy(np.float64, na_value=np.nan)
        launch_ids = la["launch"].to_numpy(np.int64, na_value=-1)[rows]
        launch_local = [self.local.get(int(x), -1) for x in launch_ids]
        syncs = sync_events(self.trace, self.local, la, stream_key)
        waits = syncs.pop("wait_edges")  # dest kernel (row of launches) -> src kernel (row)
        row_local = {int(r): n_cpu + j for j, r in enumerate(rows)}
        # one sequence: kernels sort by start, sync events by end
        items: list[tuple[int, int, int]] = [(int(self.t0[n_cpu + j]), 0, j) for j in range(len(rows))]
        items += [(int(t), 1, j) for j, t in enumerate(syncs["end"])]
        items.sort()
        last: dict[int, int] = {}     # stream key -> local index of the last activity
        gpu_of_stream: dict[int, int] = {}
        edge = self._edge
        for _, is_sync, j in items:
            if is_sync:
                call = syncs["call"][j]
                kind = syncs["kind"][j]
                if kind == "Stream Sync":
                    srcs = [last.get(syncs["stream"][j])]
                elif kind == "Context Sync":
                    srcs = [k for s, k in last.items() if gpu_of_stream[s] == syncs["gpu"][j]]
                else:  # Event Sync: the activity the event was recorded after
                    srcs = [row_local.get(syncs["recorded_row"][j])]
                for k in srcs:
                    if k is not None and call >= 0:
                        edge(2 * k + 1, 2 * call + 1, SYNC)
                continue
            r = int(rows[j])
            k = n_cpu + j
            edge(2 * k, 2 * k + 1, OPERATOR, attr=k)
            s = int(stream_key[r])
            gpu_of_stream[s] = s >> 32
            prev = last.get(s)
            wait_src = row_local.get(waits.get(r, -1))
            linked = False
            if wait_src is not None:
                edge(2 * wait_src + 1, 2 * k, SYNC)
                linked = True
            t_launch = launch_start[r]
            wait_ok = wait_src is None or self.t1[wait_src] < t_launch
            if (qr[r] == 1 and qk[r] == 0 and (prev is None or self.t1[prev] < t_launch) and wait_ok
                    and launch_local[j] >= 0):
                edge(2 * launch_local[j], 2 * k, LAUNCH)
                linked = True
            elif prev is not None and (wait_src is None or self.t1[wait_src] < self.t1[prev]):
                edge(2 * prev + 1, 2 * k, KERNEL, attr=prev)
                linked = True
            self.unlinked += not linked
            if prev is None or self.t1[k] >= self.t1[prev]:
                last[s] = k   # the stream's activity that ends last so far
