"""HTTP API of the server extension (all under ``{base_url}/profview/``, behind the server's auth).

``POST api/sessions`` ``{"path": <path relative to the server root>}`` -> 202 ``{"id", "name", "size",
"state"}``: loading starts in the worker process.
``GET api/sessions/<id>``: status (``state`` loading | ready | error, ``elapsed`` s, ``size`` bytes,
``error``; once ready ``events`` and, for a run directory, ``run``: ``{"mode": "ranks", "ranks"}``
or ``{"mode": "one-file", "file", "files", "reason"}`` when the ``ranks`` extra is missing).
``GET api/sessions/<id>/state``: waits for the load; the initial synced traits, framed (:mod:`.wire`).
``POST api/sessions/<id>/call/<command>``: a command of the widget's RPC (``_detail``, ``_table`` ...),
body = its JSON request, reply framed.
``POST api/sessions/<id>/traits``: traits set by the browser (``_selection``, ``color_by``,
``_view``); reply framed: the traits changed in answer.
``DELETE api/sessions/<id>``: close (evict) the session.
Errors are JSON ``{"message": ...}``: 400 for a bad trace (the ProfviewError text) or request,
403 outside the root, 404 for a missing file or session.

Auth is jupyter-server's: authenticated (token, or the login cookie -- then POST and DELETE need the
``X-XSRFToken`` header, as for every APIHandler) and authorized (``read`` on ``contents``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from ..errors import ProfviewError
from . import wire
from .store import SessionGone, TraceStore

SID = r"(?P<sid>[0-9a-f]{16})"


def resolve(root: str | Path, api_path: str, allow_hidden: bool = False) -> Path:
    """The file or directory ``api_path`` names under ``root``; 403 if it resolves outside
    (``..``, an absolute path or a symlink leading out) or is hidden (as the contents API
    refuses it unless ``allow_hidden``), 404 if it does not exist."""
    base = Path(root).expanduser().resolve()
    if not isinstance(api_path, str) or not api_path.strip("/"):
        raise tornado.web.HTTPError(400, "'path' must name a file under the server root")
    target = (base / api_path.lstrip("/")).resolve()
    if not target.is_relative_to(base):
        raise tornado.web.HTTPError(403, f"{api_path!r} is outside the server root")
    if not allow_hidden and any(part.startswith(".") for part in target.relative_to(base).parts):
        raise tornado.web.HTTPError(403, f"{api_path!r} is hidden (ContentsManager.allow_hidden is off)")
    if not target.exists():
        raise tornado.web.HTTPError(404, f"no such file: {api_path!r}")
    return target


class _Base(APIHandler):
    #: jupyter-server authorization: every request of the viewer reads files under the root (POST
    #: and DELETE open and close sessions, nothing is written), so each asks for ``read`` on
    #: ``contents`` -- a user the server's Authorizer does not let read files gets 403.
    auth_resource = "contents"

    @property
    def store(self) -> TraceStore:
        return self.settings["profview_store"]  # type: ignore[no-any-return]

    def json_body(self) -> Any:
        try:
            return json.loads(self.request.body or b"null")
        except ValueError as exc:
            raise tornado.web.HTTPError(400, f"request body is not JSON: {exc}") from None

    def send_frame(self, body: bytes) -> None:
        self.set_header("Content-Type", wire.CONTENT_TYPE)
        self.set_header("Cache-Control", "no-store")
        self.finish(body)

    async def guarded(self, coro: Any) -> Any:
        """Await ``coro`` turning the store's failures into HTTP errors with a JSON message."""
        try:
            return await coro
        except ProfviewError as exc:
            raise tornado.web.HTTPError(400, str(exc)) from None
        except SessionGone as exc:
            raise tornado.web.HTTPError(404, str(exc.args[0]) if exc.args else "no such session") from None


class SessionsHandler(_Base):
    @tornado.web.authenticated
    @authorized("read")
    async def post(self) -> None:
        body = self.json_body()
        api_path = body.get("path") if isinstance(body, dict) else None
        cm = self.contents_manager
        target = resolve(cm.root_dir, api_path, bool(getattr(cm, "allow_hidden", False)))  # type: ignore[arg-type]
        sess = self.store.open(target, Path(api_path).name)  # type: ignore[arg-type]
        self.set_status(202)
        self.finish(json.dumps(sess.status()))

    @tornado.web.authenticated
    @authorized("read")
    async def get(self) -> None:
        self.finish(json.dumps([s.status() for s in self.store.sessions.values()]))


class SessionHandler(_Base):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, sid: str) -> None:
        try:
            sess = self.store.get(sid)
        except SessionGone as exc:
            raise tornado.web.HTTPError(404, str(exc.args[0])) from None
        self.finish(json.dumps(sess.status()))

    @tornado.web.authenticated
    @authorized("read")
    async def delete(self, sid: str) -> None:
        closed = await self.store.close(sid)
        self.set_status(204 if closed else 404)
        self.finish()


class StateHandler(_Base):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, sid: str) -> None:
        self.send_frame(await self.guarded(self.store.state(sid)))


class CallHandler(_Base):
    @tornado.web.authenticated
    @authorized("read")
    async def post(self, sid: str, name: str) -> None:
        self.send_frame(await self.guarded(self.store.call(sid, name, self.json_body())))


class TraitsHandler(_Base):
    @tornado.web.authenticated
    @authorized("read")
    async def post(self, sid: str) -> None:
        changes = self.json_body()
        if not isinstance(changes, dict):
            raise tornado.web.HTTPError(400, "traits must be a JSON object")
        self.send_frame(await self.guarded(self.store.set_traits(sid, changes)))


def api_handlers(base_url: str) -> list[tuple[str, type[APIHandler]]]:
    api = url_path_join(base_url, "profview", "api", "sessions")
    return [
        (api, SessionsHandler),
        (url_path_join(api, SID), SessionHandler),
        (url_path_join(api, SID, "state"), StateHandler),
        (url_path_join(api, SID, "call", r"(?P<name>_[a-z_]{1,32})"), CallHandler),
        (url_path_join(api, SID, "traits"), TraitsHandler),
    ]
