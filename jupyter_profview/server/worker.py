"""What runs in the server extension's worker process.

The server's event loop never parses a trace: `TraceStore` submits
these small functions to a ``ProcessPoolExecutor`` of one process, which keeps
every open tab's [`ViewSession`][jupyter_profview.widget.session.ViewSession] (the same
session the notebook widget wraps: the loaded Trace, its indexes, the tab's selection and
ranks) in the module-level `SESSIONS`.  Replies are framed bytes (`server/wire.py`), ready to
send.
"""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path
from typing import Any

from ..errors import ProfviewError
from ..sources import walk
from ..widget.files import ViewFiles
from ..widget.requests import CommandFailed, failure
from ..widget.session import ViewSession
from . import wire

#: session id -> its view; lives in the worker process only
SESSIONS: dict[str, ViewSession] = {}

#: names the loader sniffs well; a directory without ``ranks.load_many`` opens its first such file
TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz", ".trace.json", ".trace.json.gz", ".json",
                  ".json.gz", ".xplane.pb", ".pb", ".pb.gz", ".pbtxt", ".txt")


#: the load running now and when it began, shared with the server process (`pool.WorkerPool`)
_CLOCK: tuple[Any, Any] | None = None


def init(running: Any, began: Any) -> None:
    """The worker process's initializer: where it tells the server which load it runs since when."""
    global _CLOCK
    _CLOCK = (running, began)


def warm() -> int:
    """Run once when the worker starts: import the heavy modules before the first request."""
    return os.getpid()


def _load_directory(path: Path, files: list[Path] | None = None) -> tuple[Any, dict[str, Any], Any]:
    """A run directory: all its ranks as one Trace with ``ranks.load_many`` (the ``ranks`` extra;
    Parquet cache in the user cache dir, never next to the traces), else its first trace file.

    Returns the trace, what was loaded (``run`` of the session's status): ``{"mode": "ranks",
    "ranks": [...]}``, or ``{"mode": "one-file", "file": name, "files": n, "reason": text}`` when
    the ``ranks`` extra is missing -- the tab says so, and its "Open in notebook" code loads that
    one file -- and what the view's panels analyse (the TraceSet of the ranks, or the trace)."""
    try:
        ranks = importlib.import_module("jupyter_profview.ranks")
        cache = importlib.import_module("jupyter_profview.ranks.cache")
        run = [p for p in files if p.name.lower().endswith(TRACE_SUFFIXES)] if files is not None else path
        if not run:
            raise ProfviewError("no trace file in this directory", source=path.name,
                                expected=f"a file named *{', *'.join(TRACE_SUFFIXES[:6])} ...")
        ts = ranks.load_many(run, progress=False, cache=cache.user_cache_dir())
    except ImportError as exc:  # the package or its extra is missing: one file
        reason = str(exc) or f"{type(exc).__name__}: pip install 'jupyter_profview[ranks]'"
    else:
        trace = ts.combined()
        if not trace.info.source:
            trace.info = trace.info.replace(source=str(path))
        return trace, {"mode": "ranks", "ranks": [int(r) for r in ts.ranks]}, ts
    files = sorted(p for p in (path.iterdir() if files is None else files)
                   if p.is_file() and not p.name.startswith(".") and p.name.lower().endswith(TRACE_SUFFIXES))
    if not files:
        raise ProfviewError("no trace file in this directory", source=str(path),
                            expected=f"a file named *{', *'.join(TRACE_SUFFIXES[:6])} ...")
    from ..loader import load

    trace = load(files[0])
    trace.info = trace.info.replace(run_files=tuple(p.name for p in files))
    return trace, {"mode": "one-file", "file": files[0].name, "files": len(files), "reason": reason}, trace


def open_session(sid: str, path: str, name: str | None = None,
                 confinement: dict[str, Any] | None = None, ticket: int = 0) -> dict[str, Any]:
    """Load ``path`` (a file, or a run directory) for session ``sid``; returns facts for its
    status: ``events``, timings and, for a directory, ``run`` (see `_load_directory`).
    ``ticket``: the server's number of this load, published with its start time while it runs
    (the load timeout counts from here).

    Raises `ProfviewError` for a bad trace (the store sends its text to the browser).
    """
    if _CLOCK is not None and ticket:
        running, began = _CLOCK
        began.value = time.monotonic()  # before the ticket: whoever sees the ticket sees its time
        running.value = ticket
    try:
        return _open_session(sid, path, name, confinement)
    finally:
        if _CLOCK is not None and ticket:
            _CLOCK[0].value = 0


def _open_session(sid: str, path: str, name: str | None,
                  confinement: dict[str, Any] | None) -> dict[str, Any]:
    from ..loader import load

    began = time.perf_counter()
    p = Path(path)
    facts: dict[str, Any] = {}
    source: Any = None
    try:
        if p.is_dir():  # its files by the server's one rule (sources.confine); the others noted
            c = confinement or {"root": str(p)}
            files, skipped = walk(c["root"], p, scope=c.get("scope") and Path(c["scope"]),
                                  allow_hidden=bool(c.get("allow_hidden")))
            trace, facts["run"], source = _load_directory(p, files)
            if skipped:
                facts["skipped"] = skipped
        else:
            trace = load(p, name=name)
    except ProfviewError as exc:  # named relative to the root, as asked: never a server path
        root = str((confinement or {}).get("root", "")).rstrip("/") + "/"
        if root != "/" and exc.source and exc.source.startswith(root):
            raise ProfviewError(exc.reason, source=exc.source[len(root):], position=exc.position,
                                expected=exc.expected) from None
        raise
    if name is not None:
        trace.info = trace.info.replace(source=name)
    loaded = time.perf_counter()
    session = ViewSession(trace, "auto", source=source)
    c = confinement or {}
    session.files = ViewFiles(root=Path(c["root"]) if c.get("root") else p.parent,
                              scope=Path(c["scope"]) if c.get("scope") else None,
                              allow_hidden=bool(c.get("allow_hidden")), trace_file=p)
    if session.traceset is not None:  # kernel and collective numbers from the ranks' args
        session.data.metrics.source = session.traceset
    SESSIONS[sid] = session
    return {"events": session.data.n, "load_s": loaded - began, "index_s": time.perf_counter() - loaded,
            **facts}


def _session(sid: str) -> ViewSession:
    try:
        return SESSIONS[sid]
    except KeyError:
        raise KeyError(f"no open session {sid!r}") from None


def state(sid: str) -> bytes:
    """The synced traits a tab starts with
    ([`ViewSession.state`][jupyter_profview.widget.session.ViewSession.state])."""
    return wire.encode(_session(sid).state())


def call(sid: str, name: str, msg: Any) -> bytes:
    """One command of the widget's RPC (``_detail``, ``_table`` ...), framed; a command that
    failed (its ``{"error": ...}`` reply, `failure`'s public message) raises `CommandFailed`:
    the server answers it with an error status, never a 200."""
    session = _session(sid)
    try:
        reply, buffers = session.call(name, msg)
    except Exception as exc:  # noqa: BLE001 - the one error boundary (requests.failure)
        raise CommandFailed(*failure(exc, name)) from None
    if isinstance(reply.get("error"), str):
        raise CommandFailed(400, reply["error"])
    return wire.encode(reply, buffers)


def set_traits(sid: str, changes: dict[str, Any]) -> bytes:
    """Apply traits the browser set; returns the traits the kernel side changed in answer
    (as the widget's observers do: a new ``color_by`` sends a new ``_info`` and ``_overview``).
    A refused or failed change raises `CommandFailed` (an error status)."""
    session = _session(sid)
    try:
        return wire.encode(session.apply(changes))
    except Exception as exc:  # noqa: BLE001 - the one error boundary (requests.failure)
        raise CommandFailed(*failure(exc, "traits")) from None


def close(sid: str) -> bool:
    return SESSIONS.pop(sid, None) is not None
