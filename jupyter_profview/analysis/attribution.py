"""GPU time by the model's own structure: a call tree of one node kind, with the device time of
the kernels launched under each node.

Definition ([attribute][jupyter_profview.analysis.attribution.attribute]):

- **Node kinds** (`by`): `annotation`: `user_annotation` slices on CPU threads
  (`record_function` ranges, `ProfilerStep#N`; the device-side `gpu_user_annotation` copies are
  not nodes); `module`: `python_function` slices named `nn.Module: X` (`with_modules` /
  `with_stack`); `stack`: every `python_function` frame; `op`: `cpu_op` slices.
- **Tree**: a node's parent is its nearest ancestor of the same kind in `trace.events`' own
  tree (`events.parent`, walked by `jupyter_profview.nesting.nearest_marked`), so a node nests
  here exactly as the timeline and `trace.events` nest it: a node that starts inside another and
  outlasts it is not its child (an `hccl:all_to_all` that starts inside
  `start_sparse_data_dist` and ends after it is a child of the step), nor is a node inside an
  event that partly overlaps the other (that event is on an overlap lane).  `stack` is the
  exception: Python frames are recorded with ends that overlap the ops they call, so the events
  table puts many on overlap lanes; a frame's parent is the innermost frame on the same thread
  that *contains* it, by time (`jupyter_profview.nesting.nest` among the frames).  Nodes with
  the same path (names from the root, joined by `" / "`) are one row: `count` instances.
- **CPU time**: `cpu_total`: the summed durations of the row's instances; `cpu_self`: the time
  each instance is the one running among the nodes of its kind, by the events table's self-time
  rule (`jupyter_profview.nesting.self_times`: its duration minus its children's
  where they do not partly overlap; never negative; the roots' instances add up to the kind's
  busy time).
- **GPU time**: a device activity (a row of `trace.launches`) belongs to the innermost node of
  the kind over its launch call, by the same rule as the tree (`trace.events`' tree; `stack`:
  the innermost frame containing the call on the launching thread); `gpu_self`/`kernels_self` sum
  the activities of the row itself, `gpu_total`/`kernels` those of the row and every row below
  it.  Activities whose launch is under no node (or not in the trace) are one root row
  `(unattributed)`, so the roots' `gpu_total` add up to the trace's device time (the sum of
  `launches.kernel_dur`).
- **A trace without nodes of the kind** (no `user_annotation`, or recorded without
  `with_modules` / `with_stack` for `module` / `stack`): not an error, the same definition
  applied: every device activity is `(unattributed)`, so the result is that one row (no row at
  all without device activity; with `backward="forward"`, the backward kernels linked to a
  forward op in a root `[backward]` row beside it).  Record with
  `torch.profiler.profile(with_modules=True)` (module rows) or `with_stack=True` (module and
  stack rows) to attribute by the model's structure.
- **backward**: `backward="launch"` (default): the rule above, by the launching thread.  On real
  traces the backward kernels are launched from the autograd thread, which carries no
  annotation and no module frame.  `backward="forward"`: an activity launched under a backward
  op (a `cpu_op` whose args carry a non-zero `Fwd thread id`; torch writes 0 on forward ops) goes
  to the nodes containing the forward op that recorded it (the outermost forward `cpu_op` with
  the `Sequence number` of the outermost backward op over the launch), under a child row
  `[backward]` (a root `[backward]` row when no node contains the forward op); one without such
  a link stays where the launch rule puts it.

A TraceSet gives every rank's rows with a `rank` column first (`rank=` picks one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import ProfviewError
from ..kinds import annotation_of
from ..model import Trace
from ..nesting import climb, nearest_marked, nest, nest_order, self_times
from .columns import among, match, on_device, thread_keys
from .traceset import is_traceset

if TYPE_CHECKING:
    from ..ranks.traceset import TraceSet

BY = ("annotation", "module", "stack", "op")
UNATTRIBUTED = "(unattributed)"
BACKWARD = "[backward]"
SEP = " / "
COLUMNS = ("node", "parent", "depth", "name", "path", "count", "cpu_total", "cpu_self", "kernels",
           "kernels_self", "gpu_total", "gpu_self")


def node_mask(trace: Trace, by: str) -> np.ndarray:
    """Rows of ``trace.events`` that are nodes of kind ``by`` (see the module doc)."""
    ev = trace.events
    slices = among(ev["kind"], ("slice",)) & ~on_device(trace)
    if by == "annotation":
        return slices & among(ev["category"], ("user_annotation",))
    if by == "module":
        frames = slices & among(ev["category"], ("python_function",))
        return frames & match(ev["name"], lambda name: name.startswith("nn.Module: "))
    if by == "stack":
        return slices & among(ev["category"], ("python_function",))
    if by == "op":
        return slices & among(ev["category"], ("cpu_op",))
    raise ProfviewError(f"attribute(by={by!r}): not a node kind", expected=f"one of {', '.join(BY)}")


def attribute(trace: Trace | TraceSet, by: str = "annotation", *, rank: int | None = None,
              backward: str = "launch", window: tuple[float, float] | None = None,
              merge_steps: bool = False) -> pd.DataFrame:
    """The call tree of node kind `by` with the GPU time launched under each node, one row per
    path (columns `COLUMNS`; `node` is the row's id, `parent` its parent's, -1 at a root).
    `window=(start, end)`: only node instances and launches that start inside it.  See the
    module doc for the definition; a trace without nodes of the kind gives the one
    `(unattributed)` row (or no row), never an error.  `merge_steps=True`: the instances of a
    numbered annotation (`ProfilerStep#1009`, `ProfilerStep#1010`, ...) are one node named after
    the annotation (`ProfilerStep`, its `count` the number of instances), so the rows below it
    are the whole run's ([`kinds.annotation_of`][jupyter_profview.kinds.annotation_of])."""
    if is_traceset(trace):
        ranks = list(trace) if rank is None else [rank]
        frames = []
        for r in ranks:
            one = attribute(trace[r], by, backward=backward, window=window, merge_steps=merge_steps)
            one.insert(0, "rank", np.int64(r))
            frames.append(one)
        return pd.concat(frames, ignore_index=True) if frames else _empty().assign(rank=np.int64(0))
    if not isinstance(trace, Trace):
        raise TypeError(f"attribute needs a Trace or TraceSet, got {type(trace).__name__}")
    return _Tree(trace, by, backward, window, merge_steps).frame()


@dataclass(frozen=True)
class Attribution:
    """`attribute`'s tree with its members: ``nodes`` (``event``: a node instance's id in
    ``trace.events``, ``row``: its row of ``tree``) and ``kernels`` (``event``: a device
    activity's id, ``row``: the row its time counts for)."""

    tree: pd.DataFrame
    nodes: pd.DataFrame
    kernels: pd.DataFrame

    def descendants(self, row: int) -> np.ndarray:
        """``row`` and every row below it."""
        parent = self.tree["parent"].to_numpy(np.int64)
        keep = np.zeros(len(parent), bool)
        keep[row] = True
        for r in range(row + 1, len(parent)):  # children come after their parents
            if parent[r] >= 0 and keep[parent[r]]:
                keep[r] = True
        return np.flatnonzero(keep)

    def events_under(self, row: int) -> np.ndarray:
        """Ids of the node instances and device activities of ``row`` and the rows below it."""
        rows = self.descendants(row)
        a = self.nodes["event"].to_numpy(np.int64)[np.isin(self.nodes["row"].to_numpy(), rows)]
        b = self.kernels["event"].to_numpy(np.int64)[np.isin(self.kernels["row"].to_numpy(), rows)]
        return np.union1d(a, b)


def attribute_members(trace: Trace, by: str = "annotation", *, backward: str = "launch",
                      window: tuple[float, float] | None = None, merge_steps: bool = False) -> Attribution:
    """`attribute` of one Trace with the events behind every row (the widget's icicle
    highlights them)."""
    tree = _Tree(trace, by, backward, window, merge_steps)
    frame = tree.frame()
    row_of, act, kr = tree.members
    ids = trace.events.index.to_numpy(np.int64)
    nodes = pd.DataFrame({"event": ids[tree.pos], "row": row_of})
    kernels = pd.DataFrame({"event": trace.launches["kernel"].to_numpy(np.int64)[act], "row": kr})
    return Attribution(frame, nodes, kernels[kernels["row"] < len(frame)].reset_index(drop=True))


def _empty() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object if c in ("name", "path") else np.int64) for c in COLUMNS})


def _nested(key: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Each interval's parent (index, -1 for none) by the events table's rule
    (`jupyter_profview.nesting.nest`: per thread key, the innermost open interval that
    contains it)."""
    order = nest_order(key, start, end - start)
    _, parent_s, _ = nest(key[order], start[order], end[order])
    parent = np.full(len(start), -1, np.int64)
    has = parent_s >= 0
    parent[order[has]] = order[parent_s[has]]
    return parent


def _locate(key_n: np.ndarray, start_n: np.ndarray, end_n: np.ndarray, key_q: np.ndarray,
            start_q: np.ndarray, end_q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Intervals (queries: launch calls, ops) placed among nodes by the events table's rule,
    nested together: each query's innermost node and outermost node containing it (index into
    the nodes, -1 for none).  Nodes come first, so a query equal to a node nests in it."""
    n = len(start_n)
    parent = _nested(np.concatenate([key_n, key_q]), np.concatenate([start_n, start_q]),
                     np.concatenate([end_n, end_q]))
    order = nest_order(np.concatenate([key_n, key_q]), np.concatenate([start_n, start_q]),
                       np.concatenate([end_n - start_n, end_q - start_q]))
    inner = np.full(len(parent), -1, np.int64)  # innermost node over each item (itself if a node)
    outer = np.full(len(parent), -1, np.int64)
    for i in order.tolist():  # parents come before their children
        p = int(parent[i])
        if i < n:
            inner[i] = i
            outer[i] = outer[p] if p >= 0 and outer[p] >= 0 else i
        elif p >= 0:
            inner[i], outer[i] = inner[p], outer[p]
    return inner[n:], outer[n:]


class _Tree:
    def __init__(self, trace: Trace, by: str, backward: str, window: tuple[float, float] | None,
                 merge_steps: bool = False) -> None:
        if by not in BY:
            raise ProfviewError(f"attribute(by={by!r}): not a node kind", expected=f"one of {', '.join(BY)}")
        if backward not in ("launch", "forward"):
            raise ProfviewError(f"attribute(backward={backward!r})", expected="'launch' or 'forward'")
        self.trace, self.by = trace, by
        ev = trace.events
        start = ev["start"].to_numpy(np.int64)
        dur = ev["dur"].to_numpy(np.int64)
        self.keys = thread_keys(ev)
        mask = node_mask(trace, by)
        if window is not None:
            mask &= (start >= window[0]) & (start <= window[1])
        self.pos = np.flatnonzero(mask)
        self.start, self.end = start[self.pos], start[self.pos] + dur[self.pos]
        names = ev["name"].iloc[self.pos].astype(str).tolist()
        if merge_steps:
            names = [annotation_of(n) for n in names]
        la = trace.launches
        linked = la["launch"].notna().to_numpy(bool)
        lpos = np.full(len(la), -1, np.int64)
        lpos[linked] = ev.index.get_indexer(pd.Index(la["launch"].to_numpy(np.int64, na_value=-1)[linked]))
        keep = lpos >= 0
        if window is not None:  # launches in the window; unlinked activities have no launch time
            ls = la["launch_start"].to_numpy(np.float64, na_value=np.nan)
            keep &= (ls >= window[0]) & (ls <= window[1])
            self.activities = np.flatnonzero(keep)
        else:
            self.activities = np.arange(len(la))
        self.kdur = la["kernel_dur"].to_numpy(np.int64)
        # innermost node (local index) over each linked launch, -1 for none
        owner = np.full(len(la), -1, np.int64)
        parent = self._nest_and_locate(start, keep, lpos, owner)
        self.owner = owner
        self.node_parent = parent
        self.names = names
        self.backward = backward
        if backward == "forward":
            self._reassign_backward(ev, lpos)

    def _nest_and_locate(self, start: np.ndarray, keep: np.ndarray, lpos: np.ndarray,
                         owner: np.ndarray) -> np.ndarray:
        """Each node's parent (local index, -1 at a root): its nearest node ancestor in
        `trace.events` (`nesting.nearest_marked`: the events table's own tree, so a node nests
        here exactly as it does there); each kept launch's owner (in place): the innermost node
        over its launch call in that tree."""
        launches = np.flatnonzero(keep)
        owner[launches] = self._nodes_over(lpos[launches])
        if self.by == "stack":  # frames nest among themselves by time (module doc)
            return _nested(self.keys[self.pos], self.start, self.end)
        local = self._local()
        up = nearest_marked(self._parents(), self.pos, local >= 0)
        return np.where(up >= 0, local[np.maximum(up, 0)], -1)

    def _parents(self) -> np.ndarray:
        return self.trace.events["parent"].to_numpy(np.int64)

    def _local(self) -> np.ndarray:
        """Over all event positions: the node's local index, -1 for an event that is no node."""
        local = np.full(len(self.trace.events), -1, np.int64)
        local[self.pos] = np.arange(len(self.pos))
        return local

    def _reassign_backward(self, ev: pd.DataFrame, lpos: np.ndarray) -> None:
        """``backward="forward"``: activities under a backward op move to the nodes enclosing its
        forward op, flagged so that they land in a ``[backward]`` child."""
        trace = self.trace
        ops = np.flatnonzero(node_mask(trace, "op"))
        self.bwd_owner = np.full(len(self.owner), -2, np.int64)  # -2: not moved
        if len(ops) == 0:
            return
        ids = ev.index.to_numpy(np.int64)[ops]
        seq_f = trace.arg_numbers(ids, "Sequence number")
        tid_f = trace.arg_numbers(ids, "Fwd thread id")
        seq = np.where(np.isfinite(seq_f), seq_f, -1).astype(np.int64)
        fwd_tid = np.where(np.isfinite(tid_f), tid_f, -1).astype(np.int64)
        is_bwd = fwd_tid > 0  # forward ops carry 0 (torch's own thread index, not an OS id)
        # forward ops by sequence number: the outermost (earliest, then longest) of each
        fwd = np.flatnonzero((seq >= 0) & ~is_bwd)
        start = ev["start"].to_numpy(np.int64)
        dur = ev["dur"].to_numpy(np.int64)
        order = fwd[np.lexsort((-dur[ops[fwd]], start[ops[fwd]]))]
        fwd_of: dict[int, int] = {}
        for j in order.tolist():
            fwd_of.setdefault(int(seq[j]), int(ops[j]))
        bwd = np.flatnonzero(is_bwd & (seq >= 0))
        if len(bwd) == 0:
            return
        bpos = ops[bwd]
        la_pos = np.flatnonzero(lpos >= 0)
        # the outermost backward op over each launch carries the autograd node's sequence number
        calls = lpos[la_pos]
        _, outer = _locate(self.keys[bpos], start[bpos], start[bpos] + dur[bpos], self.keys[calls],
                           start[calls], start[calls] + dur[calls])
        # the forward op's position -> the node enclosing it (the innermost node over its start)
        fwd_positions = sorted(set(fwd_of.values()))
        node_of = dict(zip(fwd_positions, self._nodes_over(np.asarray(fwd_positions, np.int64)).tolist(),
                           strict=True))
        seq_b = seq[bwd]
        for j in np.flatnonzero(outer >= 0).tolist():
            fp = fwd_of.get(int(seq_b[outer[j]]))
            if fp is not None:
                self.bwd_owner[la_pos[j]] = node_of[fp]

    def _nodes_over(self, positions: np.ndarray) -> np.ndarray:
        """The innermost node (local index, -1 none) over each event position in `trace.events`'
        tree: the event itself where it is a node, else its nearest node ancestor."""
        if self.by == "stack":
            ev = self.trace.events
            start = ev["start"].to_numpy(np.int64)[positions]
            end = start + ev["dur"].to_numpy(np.int64)[positions]
            return _locate(self.keys[self.pos], self.start, self.end, self.keys[positions], start, end)[0]
        local = self._local()
        at = climb(self._parents(), positions, lambda _which, pos: local[pos] >= 0)
        return np.where(at >= 0, local[np.maximum(at, 0)], -1)

    def frame(self) -> pd.DataFrame:
        n = len(self.pos)
        # path ids: parents come before children in start order
        order = np.lexsort((-(self.end - self.start), self.start))
        row_of = np.full(n, -1, np.int64)
        key_to_row: dict[tuple[int, str], int] = {}
        rows_parent: list[int] = []
        rows_name: list[str] = []
        for k in order.tolist():
            p = int(self.node_parent[k])
            prow = int(row_of[p]) if p >= 0 else -1
            if p >= 0 and prow < 0:  # a parent that starts later (equal start, shorter): resolve it first
                prow = self._row_for(p, row_of, key_to_row, rows_parent, rows_name)
            row_of[k] = self._row(prow, self.names[k], key_to_row, rows_parent, rows_name)
        backward_rows: dict[int, int] = {}

        def backward_row(node_row: int) -> int:
            if node_row not in backward_rows:
                backward_rows[node_row] = self._row(node_row, BACKWARD, key_to_row, rows_parent, rows_name)
            return backward_rows[node_row]

        kernel_row = np.full(len(self.owner), -1, np.int64)
        act = self.activities
        own = self.owner[act]
        owned = own >= 0  # (a trace without nodes of the kind: none)
        kernel_row[act[owned]] = row_of[own[owned]]
        if self.backward == "forward":
            in_act = np.zeros(len(self.owner), bool)
            in_act[act] = True
            for a in np.flatnonzero((self.bwd_owner >= -1) & in_act).tolist():
                node = int(self.bwd_owner[a])
                if node >= 0:
                    kernel_row[a] = backward_row(int(row_of[node]))
                else:  # the forward op is under no node of this kind: a root [backward] row
                    kernel_row[a] = self._row(-1, BACKWARD, key_to_row, rows_parent, rows_name)
        total_rows = len(rows_parent)
        unattributed = total_rows
        rows_parent.append(-1)
        rows_name.append(UNATTRIBUTED)
        m = total_rows + 1
        kr = kernel_row[act]
        kr = np.where(kr >= 0, kr, unattributed)
        self.members = (row_of, act, kr)
        gpu_self = np.bincount(kr, weights=self.kdur[act], minlength=m).astype(np.int64)
        k_self = np.bincount(kr, minlength=m).astype(np.int64)
        count = np.bincount(row_of, minlength=m).astype(np.int64)
        dur = self.end - self.start
        self_each = self._self_times()
        cpu_total = np.bincount(row_of, weights=dur, minlength=m).astype(np.int64)
        cpu_self = np.bincount(row_of, weights=self_each, minlength=m).astype(np.int64)
        parent = np.asarray(rows_parent, np.int64)
        gpu_total, kernels = gpu_self.copy(), k_self.copy()
        depth = np.zeros(m, np.int64)
        for r in range(m):  # parents were created before their children
            if parent[r] >= 0:
                depth[r] = depth[parent[r]] + 1
        for r in range(m - 1, -1, -1):
            if parent[r] >= 0:
                gpu_total[parent[r]] += gpu_total[r]
                kernels[parent[r]] += kernels[r]
        paths: list[str] = []
        for r in range(m):
            paths.append(rows_name[r] if parent[r] < 0 else paths[parent[r]] + SEP + rows_name[r])
        out = pd.DataFrame({
            "node": np.arange(m, dtype=np.int64), "parent": parent, "depth": depth, "name": rows_name,
            "path": paths, "count": count, "cpu_total": cpu_total, "cpu_self": cpu_self,
            "kernels": kernels, "kernels_self": k_self, "gpu_total": gpu_total, "gpu_self": gpu_self,
        })
        if kernels[unattributed] == 0:
            out = out.iloc[:-1]
        return out.reset_index(drop=True)

    def _self_times(self) -> np.ndarray:
        """Each node's self time among the nodes of its kind, by the events table's rule
        (`jupyter_profview.nesting.self_times`)."""
        key = self.keys[self.pos]
        order = nest_order(key, self.start, self.end - self.start)
        k, s, e = key[order], self.start[order], self.end[order]
        _, parent, lane = nest(k, s, e)
        out = np.empty(len(order), np.int64)
        out[order] = self_times(k, s, e, parent, lane)
        return out

    @staticmethod
    def _row(parent_row: int, name: str, key_to_row: dict[tuple[int, str], int], rows_parent: list[int],
             rows_name: list[str]) -> int:
        key = (parent_row, name)
        row = key_to_row.get(key)
        if row is None:
            row = key_to_row[key] = len(rows_parent)
            rows_parent.append(parent_row)
            rows_name.append(name)
        return row

    def _row_for(self, k: int, row_of: np.ndarray, key_to_row: dict[tuple[int, str], int],
                 rows_parent: list[int], rows_name: list[str]) -> int:
        if row_of[k] >= 0:
            return int(row_of[k])
        p = int(self.node_parent[k])
        prow = self._row_for(p, row_of, key_to_row, rows_parent, rows_name) if p >= 0 else -1
        row_of[k] = self._row(prow, self.names[k], key_to_row, rows_parent, rows_name)
        return int(row_of[k])

