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

log = logging.getLogger(__name__)


class _WorkerCall:
    """A picklable reference to a function of :mod:`.worker`, resolved in the worker process."""

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

    def status(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "size": self.size, "state": self.state,
                "elapsed": round((self.finished or time.monotonic()) - self.started, 3), "error": self.error,
                **self.facts}


class TraceStore:
    """Sessions (one per open tab) in LRU order; at most ``max_sessions`` are kept in the worker,
    the least recently used is closed when a new one opens.  ``DELETE`` closes one at once."""

    def __init__(self, max_sessions: int = 8) -> None:
        self.max_sessions = max_sessions
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
        except BrokenProcessPool:
            log.error("profview: the worker process died; its %d sessions are lost", len(self.sessions))
            self._pool = None
            for s in self.sessions.values():
                if s.state == "ready":
                    s.state, s.error = "error", "the worker process died (out of memory?); reopen the file"
            raise SessionGone("the profview worker process died (out of memory?); reopen the file") from None

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    # -- sessions -----------------------------------------------------------------------
    def open(self, path: Path, name: str) -> Session:
        """Start loading ``path`` in the worker; returns at once (poll :meth:`get` for status)."""
        size = sum(p.stat().st_size for p in path.iterdir() if p.is_file()) if path.is_dir() \
            else path.stat().st_size
        sess = Session(id=secrets.token_hex(8), path=path, name=name, size=size)
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
            facts: dict[str, Any] = await self._run("open_session", sess.id, str(sess.path))
        except Exception as exc:
            sess.state, sess.error = "error", str(exc) or type(exc).__name__
            sess.finished = time.monotonic()
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
