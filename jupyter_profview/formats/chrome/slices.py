"""Chrome traces: process/thread labels from ``M`` metadata, ``B``/``E``
matching and async (``b``/``e``/``n``) matching.

These are the parts of `.chrome_trace` that loop over records; they only
touch the (usually few) metadata, begin/end and async records, never the
``X`` events.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ...builder import dense_codes
from ...model import Quality
from .columns import ChromeColumns, Interner

MISSING_PID = "(no pid)"
MISSING_TID = "(no tid)"
ASYNC_PREFIX = "async: "


def from_codes(codes: Any, categories: Sequence[str]) -> pd.Categorical[str]:
    """``pd.Categorical.from_codes`` for int codes and a list of unique labels."""
    return pd.Categorical.from_codes(np.asarray(codes, np.int64), categories=pd.Index(list(categories)))


def token_label(tok: str | None) -> str:
    """Display text of a pid/tid token: ``"12"`` -> ``12``, ``"s:gpu"`` -> ``gpu``."""
    if tok is None:
        return "?"
    if tok.startswith("s:"):
        return tok[2:] if len(tok) > 2 else '""'
    if tok.startswith("j:"):
        return tok[2:]
    return tok


def token_labels(tokens: list[str | None]) -> list[str]:
    """`token_label` of many tokens, ``None`` (absent) giving ``""``."""
    if None not in tokens:  # fast path (e.g. ~200k integer flow ids): no prefix to strip
        joined = "\0".join(tokens)  # type: ignore[arg-type]
        if not joined.startswith(("s:", "j:")) and "\0s:" not in joined and "\0j:" not in joined:
            return list(tokens)  # type: ignore[arg-type]
    return [("" if t is None else t[2:] if t.startswith(("s:", "j:")) and t != "s:" else
             '""' if t == "s:" else t) for t in tokens]


def _token_number(tok: str | None) -> float:
    """Numeric value of an integer token for sorting (inf for others)."""
    if tok is None or tok.startswith(("s:", "j:", "id2")):
        return math.inf
    try:
        return float(tok)
    except ValueError:
        return math.inf


@dataclass
class Labels:
    """Process and thread labels of a Chrome trace, from ``M`` records.

    Process labels are the ``process_name`` (suffixed with `` (pid)`` where
    two processes share a name) or the pid's text; thread labels are the
    ``thread_name`` (suffixed with `` (tid)`` on a clash within a process) or
    the tid's text.  ``thread_labels`` is the category list of the ``thread``
    column; async tracks add ``async: <name>`` labels to it.  Processes in
    ``devices`` (pid code -> (label, GPU index), set before `finish`)
    take that label and sort after the host processes, by GPU index; their
    unnamed threads in ``streams`` (those with device activity) are
    ``stream <tid>``.

    A thread with two different ``thread_name`` records (Kineto names gloo
    threads ``... (python)`` and ``... (pt_gloo_runloop)``, in either order)
    takes the name not ending ``(python)`` (else the last one); all its names
    are in `renamed_threads`.
    """

    columns: ChromeColumns
    process_name: dict[int, str] = field(default_factory=dict)
    process_labels: dict[int, str] = field(default_factory=dict)
    process_sort: dict[int, float] = field(default_factory=dict)
    thread_name: dict[tuple[int, int], str] = field(default_factory=dict)
    thread_sort: dict[tuple[int, int], float] = field(default_factory=dict)
    thread_names_seen: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    other: list[dict[str, Any]] = field(default_factory=list)
    devices: dict[int, tuple[str, int]] = field(default_factory=dict)
    streams: set[tuple[int, int]] = field(default_factory=set)  # (pid, tid) codes with device activity
    process_list: list[str] = field(default_factory=list)
    _threads: Interner = field(default_factory=Interner)
    _pair_label: dict[tuple[int, int], str] = field(default_factory=dict)
    _labels_in_pid: set[tuple[int, str]] = field(default_factory=set)  # (pid, label) of _pair_label
    _proc_of_token: np.ndarray | None = None
    _labels_by_pid: dict[int, str] = field(default_factory=dict)

    def _tok(self, code: int) -> str | None:
        return self.columns.tokens[code] if code >= 0 else None

    def read_metadata(self, records: np.ndarray, quality: Quality) -> None:
        """Read the ``M`` records (placed in ``metadata`` or skipped)."""
        c = self.columns
        for i in records.tolist():
            kind = c.names[c.name_code[i]] if c.name_code[i] >= 0 else ""
            args = c.args(i)
            pid, tid = int(c.pid_code[i]), int(c.tid_code[i])
            value: Any = None
            if kind in ("process_name", "thread_name"):
                value = args.get("name")
                ok = isinstance(value, str)
            elif kind == "process_labels":
                value = args.get("labels")
                ok = isinstance(value, str)
            elif kind in ("process_sort_index", "thread_sort_index"):
                value = args.get("sort_index")
                ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            else:
                self.other.append({"name": kind, "pid": token_label(self._tok(pid)),
                                   "tid": token_label(self._tok(tid)), "args": args})
                quality.placed["metadata"] += 1
                continue
            if not ok:
                quality.skipped[f"metadata {kind!r} without a usable value"] += 1
                continue
            quality.placed["metadata"] += 1
            if kind == "process_name":
                self.process_name[pid] = value
            elif kind == "process_labels":
                self.process_labels[pid] = value
            elif kind == "process_sort_index":
                self.process_sort[pid] = float(value)
            elif kind == "thread_name":
                seen = self.thread_names_seen.setdefault((pid, tid), [])
                if value not in seen:
                    seen.append(value)
                old = self.thread_name.get((pid, tid))
                if old is None or not value.endswith("(python)"):  # else keep old (see the class doc)
                    self.thread_name[(pid, tid)] = value
            else:
                self.thread_sort[(pid, tid)] = float(value)

    def renamed_threads(self) -> list[dict[str, Any]]:
        """Threads with more than one ``thread_name``: ``pid``, ``tid``, ``names`` (each
        distinct name, in file order) and ``kept`` (the thread's name here)."""
        return [{"pid": token_label(self._tok(pid)), "tid": token_label(self._tok(tid)), "names": list(names),
                 "kept": self.thread_name[(pid, tid)]}
                for (pid, tid), names in self.thread_names_seen.items() if len(names) > 1]

    def finish(self) -> None:
        """Fix the process labels (call after `read_metadata`)."""
        c = self.columns
        pids = np.unique(c.pid_code).tolist()
        names = {p: self.devices[p][0] if p in self.devices else
                 self.process_name.get(p) or (token_label(self._tok(p)) if p >= 0 else MISSING_PID)
                 for p in pids}
        counts: dict[str, int] = {}
        for label in names.values():
            counts[label] = counts.get(label, 0) + 1
        labels: dict[int, str] = {}
        for p, label in names.items():
            if counts[label] > 1 and (p in self.process_name or p in self.devices):
                label = f"{label} ({token_label(self._tok(p))})"
            labels[p] = label
        self.process_list = list(dict.fromkeys(labels.values()))
        index = {label: k for k, label in enumerate(self.process_list)}
        lookup = np.zeros(len(c.tokens) + 1, np.int64)  # slot -1 = missing pid
        for p, label in labels.items():
            lookup[p] = index[label]
        self._proc_of_token = lookup
        self._labels_by_pid = labels

    def process_label(self, pid: int) -> str:
        return self._labels_by_pid[pid]

    def process_codes(self, pid_code: np.ndarray) -> np.ndarray:
        assert self._proc_of_token is not None
        return self._proc_of_token[pid_code]

    @property
    def thread_labels(self) -> list[str]:
        return self._threads.values

    def thread_code(self, label: str) -> int:
        return self._threads(label)

    def pair_label(self, pid: int, tid: int) -> str:
        label = self._pair_label.get((pid, tid))
        if label is None:
            named = self.thread_name.get((pid, tid))
            label = named or (token_label(self._tok(tid)) if tid >= 0 else MISSING_TID)
            if (pid, tid) in self.streams:  # Kineto names streams "stream 7 " (trailing space)
                label = label.strip() if named or tid < 0 else f"stream {label}"
            elif not named and tid >= 0 and label.lstrip("-").isdigit():
                label = f"thread {label}"  # an unnamed thread: its id, said as one
            if (pid, label) in self._labels_in_pid:  # another thread of this process has it
                label = f"{label} ({token_label(self._tok(tid))})"
            self._pair_label[(pid, tid)] = label
            self._labels_in_pid.add((pid, label))
        return label

    def thread_codes(self, pid_code: np.ndarray, tid_code: np.ndarray) -> np.ndarray:
        """Thread label codes of (pid, tid) token pairs, vectorised over unique pairs."""
        if len(pid_code) == 0:
            return np.zeros(0, np.int64)
        width = len(self.columns.tokens) + 1
        pair = pid_code.astype(np.int64)
        pair *= width
        pair += tid_code
        # np.unique(pair, return_inverse=True), without sorting: by their range when it is small
        # (pid and tid are usually among the first tokens), else by hashing (few distinct pairs)
        low = int(pair.min())
        if int(pair.max()) - low <= 4 * len(pair) + 4096:
            pair -= low
            found, inverse = dense_codes(pair)
            found += low
        else:
            inverse, found = pd.factorize(pair)
        order = np.argsort(found)  # labels are interned in pair order
        label_code = np.empty(len(found), np.int64)
        for k, v in zip(order.tolist(), found[order].tolist(), strict=True):
            pid, tid = divmod(v, width)
            if tid == width - 1:  # tid -1 wrapped into the next pid's slot
                pid, tid = pid + 1, -1
            label_code[k] = self.thread_code(self.pair_label(pid, tid))
        return label_code[inverse]

    def track_order(self, tracks: set[tuple[str, str]]) -> list[str]:
        """Base track labels (``process / thread``) in display order: process
        sort index (else pid), then thread sort index (else tid), async last."""
        proc_key: dict[str, tuple[int, float, str]] = {}
        for p, label in self._labels_by_pid.items():
            key = self.process_sort.get(p, _token_number(self._tok(p)))
            group = 1 if p in self.devices else 0 if math.isfinite(key) else 2
            proc_key[label] = (group, self.devices[p][1] if p in self.devices else key, label)
        thread_key: dict[tuple[str, str], tuple[float, float, str]] = {}
        for (p, t), label in self._pair_label.items():
            sort = self.thread_sort.get((p, t), _token_number(self._tok(t)))
            thread_key[(self._labels_by_pid[p], label)] = (0.0, sort, label)

        def order(track: tuple[str, str]) -> tuple[Any, ...]:
            process, thread = track
            default = (1.0, math.inf, thread) if thread.startswith(ASYNC_PREFIX) else (0.5, math.inf, thread)
            return (*proc_key.get(process, (2, math.inf, process)), *thread_key.get(track, default))

        return [f"{p} / {t}" for p, t in sorted(tracks, key=order)]


@dataclass
class Rows:
    """Event rows collected from loops (B/E pairs, async): record index,
    start/dur (ns), pid token code, thread label code, kind, incomplete, and
    the record of the matching end event (-1) whose args are merged."""

    rec: list[int] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    dur: list[int] = field(default_factory=list)
    pid: list[int] = field(default_factory=list)
    thread: list[int] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    incomplete: list[bool] = field(default_factory=list)
    end_rec: list[int] = field(default_factory=list)

    def add(self, rec: int, start: int, dur: int, pid: int, thread: int, kind: str,
            incomplete: bool = False, end_rec: int = -1) -> None:
        self.rec.append(rec)
        self.start.append(start)
        self.dur.append(dur)
        self.pid.append(pid)
        self.thread.append(thread)
        self.kind.append(kind)
        self.incomplete.append(incomplete)
        self.end_rec.append(end_rec)


def match_begin_end(c: ChromeColumns, records: np.ndarray, labels: Labels, trace_end: int,
                    rows: Rows, quality: Quality) -> None:
    """``B``/``E`` pairs, matched as a stack per (pid, tid) in time order.

    A ``B`` without ``E`` runs to ``trace_end`` (``incomplete``); an ``E``
    without ``B`` is skipped.  The ``E``'s args are merged into the slice's.
    """
    if len(records) == 0:
        return
    ts = c.ts_ns[records]
    pid = c.pid_code[records]
    tid = c.tid_code[records]
    order = np.lexsort((records, ts, tid, pid))
    threads = labels.thread_codes(pid, tid)
    is_begin = c.ph[records] == ord("B")
    stack: list[int] = []
    current: tuple[int, int] | None = None

    def flush() -> None:
        for b in stack:
            k = int(b)
            rows.add(int(records[k]), int(ts[k]), max(trace_end - int(ts[k]), 0), int(pid[k]),
                     int(threads[k]), "slice", incomplete=True)
            quality.unmatched_begin += 1
            quality.placed["events"] += 1
        stack.clear()

    for k in order.tolist():
        key = (int(pid[k]), int(tid[k]))
        if key != current:
            flush()
            current = key
        if is_begin[k]:
            stack.append(k)
        elif stack:
            b = stack.pop()
            rows.add(int(records[b]), int(ts[b]), int(ts[k] - ts[b]), int(pid[b]), int(threads[b]),
                     "slice", end_rec=int(records[k]))
            quality.placed["events"] += 2
        else:
            quality.unmatched_end += 1
            quality.skipped["'E' without a matching 'B'"] += 1
    flush()


def match_async(c: ChromeColumns, records: np.ndarray, labels: Labels, trace_end: int,
                rows: Rows, quality: Quality) -> None:
    """Async ``b``/``e`` (and legacy ``S``/``F``) matched by (cat, id, name),
    per process for ``id2.local`` ids; ``n`` instants.  Each goes to the
    process's ``async: <name>`` track with kind ``async``."""
    if len(records) == 0:
        return
    ts = c.ts_ns[records]
    order = np.lexsort((records, ts))
    open_: dict[tuple[int, int, int, int], list[int]] = {}
    for k in order.tolist():
        i = int(records[k])
        ident = int(c.id_code[i])
        local = ident >= 0 and c.tokens[ident].startswith("id2l:")
        pid = int(c.pid_code[i])
        key = (int(c.cat_code[i]), ident, int(c.name_code[i]), pid if local else -2)
        ph = chr(c.ph[i])
        if ph in "bS":
            open_.setdefault(key, []).append(i)
        elif ph in "eF":
            stack = open_.get(key)
            if stack:
                b = stack.pop()
                _add_async(c, labels, rows, b, int(c.ts_ns[i] - c.ts_ns[b]), end_rec=i)
                quality.placed["events"] += 2
            else:
                quality.unmatched_end += 1
                quality.skipped["async end without a matching begin"] += 1
        else:  # "n"
            _add_async(c, labels, rows, i, 0)
            quality.placed["events"] += 1
    for stack in open_.values():
        for b in stack:
            _add_async(c, labels, rows, b, max(trace_end - int(c.ts_ns[b]), 0), incomplete=True)
            quality.unmatched_begin += 1
            quality.placed["events"] += 1


def _add_async(c: ChromeColumns, labels: Labels, rows: Rows, i: int, dur: int,
               end_rec: int = -1, incomplete: bool = False) -> None:
    name = c.names[c.name_code[i]] if c.name_code[i] >= 0 else ""
    thread = labels.thread_code(ASYNC_PREFIX + name)
    rows.add(i, int(c.ts_ns[i]), dur, int(c.pid_code[i]), thread, "async",
             incomplete=incomplete, end_rec=end_rec)
