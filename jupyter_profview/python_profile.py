"""Profile Python code into a Trace of nested function-call slices.

The fallback of ``%%profview`` when torch is not importable, usable on its
own:

    with PythonProfiler() as prof:
        work()
    trace = prof.trace()          # format "python_calls", time_unit "ns"

Uses `sys.setprofile` (and `threading.setprofile` for threads
started while profiling), so it sees every Python function call and every
call of a C function (builtins, numpy ufunc methods ...) with the wall-clock
time of entry and exit.  A top-level ``exec``/``eval`` (how a profiled cell is
run) is not recorded, so the trace starts at the profiled code itself.  Each
resumption of a generator or coroutine is its own slice.  The overhead is
roughly 1 µs per call, so deep call trees run several times slower;
``max_events`` caps the memory used.

Events table
------------
``name``: the function's qualified name (``<cell>`` for the profiled cell's
top level); ``category``: its module (``builtins`` for C builtins);
``process``: ``python (pid N)``; ``thread``: the thread's name; extra columns
``file`` (category) and ``line`` (int64, first line of the function, 0 for C
functions).  Calls still open when profiling stops (threads still running)
end at the stop time and count in ``quality.unmatched_begin``.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from types import CodeType, FrameType
from typing import Any

import numpy as np
import pandas as pd

from .builder import build_events, make_trace
from .model import Quality, Trace

FORMAT_NAME = "python_calls"
CELL_NAME = "<cell>"
_CALL, _RETURN = 0, 1


class PythonProfiler:
    """Record Python and C function calls between ``start()`` and ``stop()``."""

    def __init__(self, max_events: int = 2_000_000, cell_filename: str | None = None) -> None:
        self.max_events = max_events
        self.cell_filename = cell_filename
        self._log: list[tuple[Any, ...]] = []
        self._kept = 0
        self._started_ns = 0
        self._stopped_ns = 0
        self._epoch_offset_ns = 0
        self._threads: dict[int, str] = {}

    # -- recording ---------------------------------------------------------
    def _callback(self, frame: FrameType, event: str, arg: Any) -> None:
        now = time.perf_counter_ns()
        log = self._log
        if event == "call" or event == "c_call":
            tid = threading.get_ident()
            if tid not in self._threads:
                self._threads[tid] = threading.current_thread().name
            if self._kept >= self.max_events:
                # a dropped call: only its place in the nesting is kept
                log.append((tid, frame.f_code if event == "call" else arg))
                return
            self._kept += 1
            if event == "call":
                log.append((tid, _CALL, frame.f_code, frame.f_globals.get("__name__"), now))
            else:
                log.append((tid, _CALL, arg, None, now))
        elif event == "return" or event == "c_return" or event == "c_exception":
            log.append((threading.get_ident(), _RETURN, None, None, now))

    def start(self) -> None:
        self._threads = {t.ident: t.name for t in threading.enumerate() if t.ident is not None}
        self._epoch_offset_ns = time.time_ns() - time.perf_counter_ns()
        self._started_ns = time.perf_counter_ns()
        threading.setprofile(self._callback)
        sys.setprofile(self._callback)

    def stop(self) -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        self._stopped_ns = time.perf_counter_ns()
        self._threads.update({t.ident: t.name for t in threading.enumerate() if t.ident is not None})

    def __enter__(self) -> PythonProfiler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- building ----------------------------------------------------------
    def _is_machinery(self, what: Any, depth: int) -> bool:
        """The profiler's own calls (stopping it) and an outermost ``exec``/``eval``."""
        return any(what is m for m in _MACHINERY) or (depth == 0 and (what is exec or what is eval))

    def _describe(self, what: Any, module: str | None) -> tuple[str, str, str, int]:
        if isinstance(what, CodeType):
            if self.cell_filename is not None and what.co_filename == self.cell_filename \
                    and what.co_name == "<module>":
                name = CELL_NAME
            else:
                name = getattr(what, "co_qualname", what.co_name)
            return name, module or "<unknown>", what.co_filename, what.co_firstlineno
        name = getattr(what, "__qualname__", None) or getattr(what, "__name__", None) or repr(what)
        owner = getattr(what, "__module__", None)
        if owner is None:
            bound = getattr(what, "__self__", None)
            owner = type(bound).__module__ if bound is not None else "builtins"
        return str(name), str(owner), "<built-in>", 0

    def trace(self) -> Trace:
        """The recorded calls as a Trace (one slice per call)."""
        quality = Quality()
        names: list[str] = []
        cats: list[str] = []
        files: list[str] = []
        lines: list[int] = []
        threads: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        stacks: dict[int, list[int | None]] = {}
        described: dict[int, tuple[str, str, str, int]] = {}
        dropped = 0
        for entry in self._log:
            if len(entry) == 2:  # a call past max_events
                stack = stacks.setdefault(entry[0], [])
                dropped += not self._is_machinery(entry[1], len(stack))
                stack.append(None)
                continue
            tid, kind, what, module, t = entry
            stack = stacks.setdefault(tid, [])
            if kind == _CALL:
                if self._is_machinery(what, len(stack)):
                    stack.append(None)  # placeholder: its return is not an event either
                    continue
                key = id(what)
                info = described.get(key)
                if info is None:
                    info = described[key] = self._describe(what, module)
                quality.records_read += 1
                names.append(info[0])
                cats.append(info[1])
                files.append(info[2])
                lines.append(info[3])
                threads.append(self._threads.get(tid, f"thread {tid}"))
                starts.append(t)
                ends.append(-1)
                stack.append(len(starts) - 1)
            elif stack:
                slot = stack.pop()
                if slot is not None:
                    ends[slot] = t
            # a return with an empty stack closes a call made before start(): ignored
        for slot in (s for stack in stacks.values() for s in stack if s is not None):
            ends[slot] = self._stopped_ns
            quality.unmatched_begin += 1
        quality.records_read += dropped
        if dropped:
            quality.skipped[f"over max_events={self.max_events}"] += dropped
        quality.placed["events"] += len(starts)
        start = np.asarray(starts, np.int64)
        end = np.asarray(ends, np.int64)
        pid = os.getpid()
        columns: dict[str, Any] = {
            "name": names, "category": cats,
            "process": [f"python (pid {pid})"] * len(starts), "thread": threads,
            "start": start, "dur": end - start,
            "file": pd.Categorical(files), "line": np.asarray(lines, np.int64),
        }
        events, _, base = build_events(columns, quality)
        return make_trace(
            FORMAT_NAME, "ns", events, quality, base=base,
            metadata={"profiler": "sys.setprofile", "base_time_ns": base + self._epoch_offset_ns,
                      "profiled_ns": self._stopped_ns - self._started_ns},
        )


_MACHINERY = (
    sys.setprofile, threading.setprofile,
    PythonProfiler.stop.__code__, PythonProfiler.__exit__.__code__,
)
