"""Open traces of the server extension: a bounded set of sessions held by one worker process."""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import OrderedDict
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import PathRefused, ProfviewError
from ..sources import walk
from .pool import LoadTimeout, Restarted, SessionGone, WorkerPool

__all__ = ["LOAD_TIMEOUT", "Session", "SessionGone", "TraceStore", "public_message"]

log = logging.getLogger(__name__)
#: seconds a session may load in the worker (counted from when the worker starts it, not while it
#: waits behind another) before the worker is restarted; the other loaded sessions are then reloaded
LOAD_TIMEOUT = 600.0
WORKER_DIED = "the profview worker process died (out of memory?); reopen the file"


def public_message(exc: ProfviewError) -> str:
    """What the browser is told of a ProfviewError: the source (relative to the root: the worker
    loads under that name), where, and what was expected -- not the reason, which may quote the
    file (its first bytes, a value); the server log has the whole text."""
    if isinstance(exc, PathRefused):
        return str(exc)
    where = ": ".join(part for part in (exc.source, exc.position) if part)
    text = f"{where}: cannot be read as a trace" if where else "cannot be read as a trace"
    return text + (f" (expected {exc.expected})" if exc.expected else "")


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
    owner: str = ""  # the user who opened it (jupyter-server's current_user.username)
    note: str = ""  # e.g. why it was reloaded

    def status(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "size": self.size, "state": self.state,
                "elapsed": round((self.finished or time.monotonic()) - self.started, 3), "error": self.error,
                **({"note": self.note} if self.note else {}), **self.facts}


class TraceStore:
    """Sessions (one per open tab) in LRU order, each its user's: at most ``max_sessions`` per
    user are kept in the worker, the user's least recently used is closed when the user opens
    another.  ``DELETE`` closes one at once.  A session is found only by the user who opened it
    (``owner``: jupyter-server's ``current_user``); to anyone else it does not exist."""

    def __init__(self, max_sessions: int = 8, load_timeout: float = LOAD_TIMEOUT) -> None:
        self.max_sessions = max_sessions
        self.load_timeout = load_timeout
        self.sessions: OrderedDict[str, Session] = OrderedDict()
        self.worker = WorkerPool()

    def shutdown(self) -> None:
        self.worker.shutdown()

    # -- sessions -----------------------------------------------------------------------
    async def open(self, path: Path, name: str, root: str | Path | None = None, scope: Path | None = None,
                   allow_hidden: bool = False, owner: str = "") -> Session:
        """Start loading ``path`` (already [confine][jupyter_profview.sources.confine]d under
        ``root``) in the worker for user ``owner``; returns at once (poll `get` for status).  The
        worker loads it under its name relative to ``root`` (errors and the state's ``source``
        never show a server path) and walks a directory by the same rule.  A directory's walk
        (its size) runs in a thread: never on the server's event loop."""
        base = Path(root).expanduser().resolve() if root is not None else path.parent
        confinement = {"root": str(base), "scope": None if scope is None else str(scope),
                       "allow_hidden": allow_hidden}
        size = await asyncio.to_thread(_size, base, path, scope, allow_hidden)
        sess = Session(id=secrets.token_hex(8), path=path, name=name, size=size, owner=owner)
        sess.relative = path.relative_to(base).as_posix() if path.is_relative_to(base) else path.name
        sess.confinement = confinement
        self.sessions[sess.id] = sess
        self._start_load(sess)
        mine = [sid for sid, s in self.sessions.items() if s.owner == owner]
        for oldest in mine[:max(0, len(mine) - self.max_sessions)]:  # this user's only
            log.info("profview: closing session %s (more than %d open)", oldest, self.max_sessions)
            asyncio.ensure_future(self._close(oldest))
            self.sessions.pop(oldest, None)
        return sess

    def _start_load(self, sess: Session) -> None:
        sess.state, sess.finished = "loading", None
        sess.task = asyncio.ensure_future(self._load(sess))
        # a failed load is reported to whoever asks for the state; none may ask (tab closed)
        sess.task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def _load(self, sess: Session) -> dict[str, Any]:
        while True:
            try:
                facts: dict[str, Any] = await self.worker.run_timed(
                    self.load_timeout, "open_session", sess.id, str(sess.path), sess.relative,
                    sess.confinement)
                break
            except Restarted:  # another file's load restarted the worker: this one loads in the new one
                if sess.id not in self.sessions:
                    sess.state, sess.error = "error", f"session {sess.id} was closed"
                    return {}
                continue
            except Exception as exc:
                self._failed(sess, exc)
                raise
        if sess.id not in self.sessions:  # closed while loading
            await self._close_in_worker(sess.id)
            sess.state, sess.error = "error", f"session {sess.id} was closed"
            return {}
        sess.state, sess.facts, sess.finished = "ready", facts, time.monotonic()
        return facts

    def _failed(self, sess: Session, exc: Exception) -> None:
        """Record why ``sess`` did not load (raises what the browser is to be told)."""
        sess.state, sess.finished = "error", time.monotonic()
        if isinstance(exc, ProfviewError):
            log.info("profview: %s", exc)
            sess.error = public_message(exc)
        elif isinstance(exc, LoadTimeout):
            reload = [s for s in self.sessions.values() if s is not sess and s.state == "ready"]
            log.warning("profview: loading %s took longer than %.0f s: the worker was restarted; reloading "
                        "%d loaded session(s)", sess.relative, self.load_timeout, len(reload))
            for s in reload:  # their data was in the killed worker: load it again
                s.note = "reloaded: the worker was restarted (another trace took too long to load)"
                self._start_load(s)
            sess.error = (f"{sess.relative}: loading took longer than {self.load_timeout:.0f} s; "
                          "the worker was restarted (the other open traces are reloaded)")
            raise SessionGone(sess.error) from None
        elif isinstance(exc, BrokenProcessPool):
            log.error("profview: the worker process died; its %d sessions are lost", len(self.sessions))
            for s in self.sessions.values():
                if s.state == "ready":
                    s.state, s.error = "error", WORKER_DIED
            sess.error = WORKER_DIED
            raise SessionGone(WORKER_DIED) from None
        elif isinstance(exc, SessionGone):
            sess.error = str(exc.args[0]) if exc.args else "the worker process died"
        else:  # a loader bug: the log has it, the browser gets no server detail
            log.error("profview: loading %s failed", sess.relative, exc_info=exc)
            sess.error = f"{sess.relative}: cannot be read ({type(exc).__name__} in the loader)"
            raise ProfviewError(sess.error) from None

    def get(self, sid: str, owner: str = "") -> Session:
        """``owner``'s session ``sid``; another user's is as missing as a closed one."""
        sess = self.sessions.get(sid)
        if sess is None or sess.owner != owner:
            raise SessionGone(f"no open session {sid!r} (closed, or evicted: at most "
                              f"{self.max_sessions} traces stay open)") from None
        self.sessions.move_to_end(sid)
        return sess

    async def ready(self, sid: str, owner: str = "") -> Session:
        """The session once loaded; raises the load's error (ProfviewError for a bad file)."""
        sess = self.get(sid, owner)
        while True:  # the load's own error (a ProfviewError: 400); again if a restart reloads it
            task = sess.task
            assert task is not None
            await asyncio.shield(task)
            if task is sess.task:
                break
        if sess.state != "ready":
            raise SessionGone(sess.error)
        return sess

    async def _in_session(self, sid: str, owner: str, name: str, *args: Any) -> bytes:
        """``worker.<name>(sid, *args)`` once the session is loaded; again (once it is reloaded)
        when a restart cut the call off."""
        for _ in range(3):
            await self.ready(sid, owner)
            try:
                return bytes(await self._run(name, sid, *args))
            except Restarted:
                continue
        raise SessionGone(f"session {sid} was lost: the worker was restarted")

    async def _run(self, name: str, *args: Any) -> Any:
        try:
            return await self.worker.run(name, *args)
        except BrokenProcessPool:
            log.error("profview: the worker process died; its %d sessions are lost", len(self.sessions))
            for s in self.sessions.values():
                if s.state == "ready":
                    s.state, s.error = "error", WORKER_DIED
            raise SessionGone(WORKER_DIED) from None

    async def state(self, sid: str, owner: str = "") -> bytes:
        return await self._in_session(sid, owner, "state")

    async def call(self, sid: str, name: str, msg: Any, owner: str = "") -> bytes:
        return await self._in_session(sid, owner, "call", name, msg)

    async def set_traits(self, sid: str, changes: dict[str, Any], owner: str = "") -> bytes:
        return await self._in_session(sid, owner, "set_traits", changes)

    async def close(self, sid: str, owner: str = "") -> bool:
        """Close ``owner``'s session ``sid``; False if there is none (or it is someone else's)."""
        try:
            self.get(sid, owner)
        except SessionGone:
            return False
        return await self._close(sid)

    async def _close(self, sid: str) -> bool:
        sess = self.sessions.pop(sid, None)
        if sess is not None and sess.task is not None and not sess.task.done():
            return True  # _load closes it in the worker when it finishes
        return await self._close_in_worker(sid) or sess is not None

    async def _close_in_worker(self, sid: str) -> bool:
        try:
            return bool(await self.worker.run("close", sid))
        except (SessionGone, Restarted, BrokenProcessPool):
            return False


def _size(base: Path, path: Path, scope: Path | None, allow_hidden: bool) -> int:
    """Bytes of a file, or of the files of a run directory that the path rule admits."""
    if path.is_dir():
        files, _ = walk(base, path, scope=scope, allow_hidden=allow_hidden)
        return sum(p.stat().st_size for p in files)
    return path.stat().st_size
