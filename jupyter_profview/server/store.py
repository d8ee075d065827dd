"""Open traces of the server extension: a bounded set of sessions held by one worker process."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import secrets
import time
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import PathRefused, ProfviewError
from ..sources import walk

log = logging.getLogger(__name__)
#: seconds a session may take to load before the worker is restarted (its other sessions are lost)
LOAD_TIMEOUT = 600.0


def public_message(exc: ProfviewError) -> str:
    """What the browser is told of a ProfviewError: the source (relative to the root: the worker
    loads under that name), where, and what was expected -- not the reason, which may quote the
    file (its first bytes, a value); the server log has the whole text."""
    if isinstance(exc, PathRefused):
        return str(exc)
    where = ": ".join(part for part in (exc.source, exc.position) if part)
    text = f"{where}: cannot be read as a trace" if where else "cannot be read as a trace"
    return text + (f" (expected {exc.expected})" if exc.expected else "")


class _WorkerCall:
    """A picklable reference to a function of `.worker`, resolved in the worker process."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: Any) -> Any:
        from . import worker

        return getattr(worker, self.name)(*args)


class SessionGone(KeyError):
    """The session was closed, evicted or lost with its worker."""


@dataclass
class Session:
    id: str
    path: Path
    name: str
    size: int
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    task: asyncio.Task[dict[str, Any]] | None = None
    state: str = "loading"  # loading | ready | error
    error: str = ""
    facts: dict[str, Any] = field(default_factory=dict)
    relative: str = ""  # the path relative to the server root: the name the worker loads it under
    confinement: dict[str, Any] = field(default_factory=dict)  # sources.confine's root, scope, hidden

    def status(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "size": self.size, "state": self.state,
                "elapsed": round((self.finished or time.monotonic()) - self.started, 3), "error": self.error,
                **self.facts}


class TraceStore:
    """Sessions (one per open tab) in LRU order; at most ``max_sessions`` are kept in the worker,
    the least recently used is closed when a new one opens.  ``DELETE`` closes one at once."""

    def __init__(self, max_sessions: int = 8, load_timeout: float = LOAD_TIMEOUT) -> None:
        self.max_sessions = max_sessions
        self.load_timeout = load_timeout
        self.sessions: OrderedDict[str, Session] = OrderedDict()
        self._pool: ProcessPoolExecutor | None = None

    # -- the worker -----------------------------------------------------------------
    def pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawn, not fork: the server process has threads; one process keeps every session
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
            self._pool.submit(_WorkerCall("warm"))  # import pandas & co. before the first request
        return self._pool

    async def _run(self, name: str, *args: Any) -> Any:
        """Call ``worker.<name>(*args)`` in the worker process (the server process never imports
        the worker module: it pulls in pandas and the widget)."""
        loop = asyncio.get_running_loop()
        fn = _WorkerCall(name)
        try:
            return await loop.run_in_executor(self.pool(), fn, *args)
        except KeyError as exc:  # the worker does not hold that session (restarted, closed)
            raise SessionGone(str(exc.args[0]) if exc.args else "no such session") from None
        except BrokenProcessPool:
            log.error("profview: the worker process died; its %d sessions are lost", len(self.sessions))
            self._pool = None
            for s in self.sessions.values():
                if s.state == "ready":
                    s.state, s.error = "error", "the worker process died (out of memory?); reopen the file"
            raise SessionGone("the profview worker process died (out of memory?); reopen the file") from None

    def _restart(self) -> None:
        """Kill the worker (stuck in a load) and forget it: the next call starts a fresh one."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.kill()
        pool.shutdown(wait=False, cancel_futures=True)
        for s in self.sessions.values():
            if s.state == "ready":
                s.state, s.error = "error", "the worker was restarted; reopen the file"

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    # -- sessions -----------------------------------------------------------------------
    def open(self, path: Path, name: str, root: str | Path | None = None, scope: Path | None = None,
             allow_hidden: bool = False) -> Session:
        """Start loading ``path`` (already [confine][jupyter_profview.sources.confine]d under
        ``root``) in the worker; returns at once (poll `get` for status).  The worker
        loads it under its name relative to ``root`` (errors and the state's ``source`` never
        show a server path) and walks a directory by the same rule."""
        base = Path(root).expanduser().resolve() if root is not None else path.parent
        confinement = {"root": str(base), "scope": None if scope is None else str(scope),
                       "allow_hidden": allow_hidden}
        if path.is_dir():
            files, _ = walk(base, path, scope=scope, allow_hidden=allow_hidden)
            size = sum(p.stat().st_size for p in files)
        else:
            size = path.stat().st_size
        sess = Session(id=secrets.token_hex(8), path=path, name=name, size=size)
        sess.relative = path.relative_to(base).as_posix() if path.is_relative_to(base) else path.name
        sess.confinement = confinement
        self.sessions[sess.id] = sess
        sess.task = asyncio.ensure_future(self._load(sess))
        # a failed load is reported to whoever asks for the state; none may ask (tab closed)
        sess.task.add_done_callback(lambda t: t.cancelled() or t.exception())
        while len(self.sessions) > self.max_sessions:
            oldest = next(iter(self.sessions))
            log.info("profview: closing session %s (more than %d open)", oldest, self.max_sessions)
            asyncio.ensure_future(self.close(oldest))
            self.sessions.pop(oldest, None)
        return sess

    async def _load(self, sess: Session) -> dict[str, Any]:
        try:
            facts: dict[str, Any] = await asyncio.wait_for(
                self._run("open_session", sess.id, str(sess.path), sess.relative, sess.confinement),
                self.load_timeout)
        except Exception as exc:
            sess.state, sess.finished = "error", time.monotonic()
            if isinstance(exc, ProfviewError):
                log.info("profview: %s", exc)
                sess.error = public_message(exc)
            elif isinstance(exc, asyncio.TimeoutError):
                self._restart()
                sess.error = (f"{sess.relative}: loading took longer than {self.load_timeout:.0f} s; "
                              "the worker was restarted (reopen the other traces)")
                raise SessionGone(sess.error) from None
            elif isinstance(exc, SessionGone):
                sess.error = str(exc.args[0]) if exc.args else "the worker process died"
            else:  # a loader bug: the log has it, the browser gets no server detail
                log.error("profview: loading %s failed", sess.relative, exc_info=exc)
                sess.error = f"{sess.relative}: cannot be read ({type(exc).__name__} in the loader)"
                raise ProfviewError(sess.error) from None
            raise
        if sess.id not in self.sessions:  # closed while loading
            await self._run("close", sess.id)
            sess.state, sess.error = "error", f"session {sess.id} was closed"
            return {}
        sess.state, sess.facts, sess.finished = "ready", facts, time.monotonic()
        return facts

    def get(self, sid: str) -> Session:
        try:
            sess = self.sessions[sid]
        except KeyError:
            raise SessionGone(f"no open session {sid!r} (closed, or evicted: at most "
                              f"{self.max_sessions} traces stay open)") from None
        self.sessions.move_to_end(sid)
        return sess

    async def ready(self, sid: str) -> Session:
        """The session once loaded; raises the load's error (ProfviewError for a bad file)."""
        sess = self.get(sid)
        assert sess.task is not None
        await asyncio.shield(sess.task)
        if sess.state != "ready":
            raise SessionGone(sess.error)
        return sess

    async def state(self, sid: str) -> bytes:
        await self.ready(sid)
        return bytes(await self._run("state", sid))

    async def call(self, sid: str, name: str, msg: Any) -> bytes:
        await self.ready(sid)
        return bytes(await self._run("call", sid, name, msg))

    async def set_traits(self, sid: str, changes: dict[str, Any]) -> bytes:
        await self.ready(sid)
        return bytes(await self._run("set_traits", sid, changes))

    async def close(self, sid: str) -> bool:
        sess = self.sessions.pop(sid, None)
        if sess is not None and sess.task is not None and not sess.task.done():
            return True  # _load closes it in the worker when it finishes
        if self._pool is None:
            return sess is not None
        try:
            return bool(await self._run("close", sid)) or sess is not None
        except SessionGone:
            return sess is not None
