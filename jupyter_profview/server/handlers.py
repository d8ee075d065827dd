"""HTTP API of the server extension (all under ``{base_url}/profview/``, behind the server's auth).

``POST api/sessions`` ``{"path": <path relative to the server root>}`` -> 202 ``{"id", "name", "size",
"state"}``: loading starts in the worker process.
``GET api/sessions/<id>``: status (``state`` loading | ready | error, ``elapsed`` s, ``size`` bytes,
``error``; once ready ``events`` and, for a run directory, ``run``: ``{"mode": "ranks", "ranks"}``
or ``{"mode": "one-file", "file", "files", "reason"}`` when the ``ranks`` extra is missing, and
``skipped``: one note per directory entry the path rule refused, its name and why).
``GET api/sessions/<id>/state``: waits for the load; the initial synced traits, framed (`.wire`).
``POST api/sessions/<id>/call/<command>``: a command of the widget's RPC (``_detail``, ``_table`` ...),
body = its JSON request, reply framed.
``POST api/sessions/<id>/traits``: traits set by the browser (``_selection``, ``color_by``,
``_view``); reply framed: the traits changed in answer.
``DELETE api/sessions/<id>``: close (evict) the session.
A session is its opener's (jupyter-server's ``current_user``): to another user every route of it
is a 404, and opening a session evicts only the opener's own least recently used one.  There is no
listing of sessions.
Errors are JSON ``{"message": ...}``: 400 for a bad trace or request, 403 outside the served path
(or hidden, or not a regular file), 404 for a missing file or session, 413 for a body over
`MAX_BODY`.  One error boundary (`_Base.guarded`): whatever a handler or the worker
raises becomes one of these, with a message that names the file as it was asked for (relative to
the root) and never holds a server path or the file's content.

Which paths: [confine][jupyter_profview.sources.confine], the one rule for every path the server
opens (the directory session's files too, see ``worker.open_session``).

Auth is jupyter-server's: authenticated (token, or the login cookie -- then POST and DELETE need the
``X-XSRFToken`` header, as for every APIHandler) and authorized (``read`` on ``contents``).  The
body of a request is read only once it is authenticated, and never beyond `MAX_BODY`: a
trace is opened by its path, never uploaded.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from ..errors import PathRefused, ProfviewError
from ..sources import confine
from ..widget.requests import CommandFailed, failure
from . import wire
from .store import SessionGone, TraceStore, public_message

SID = r"(?P<sid>[0-9a-f]{16})"
#: bytes of a request body: a path, a selection, a command's arguments
MAX_BODY = 1 << 20
log = logging.getLogger(__name__)


@tornado.web.stream_request_body
class _Base(APIHandler):
    #: jupyter-server authorization: every request of the viewer reads files under the root (POST
    #: and DELETE open and close sessions, nothing is written), so each asks for ``read`` on
    #: ``contents`` -- a user the server's Authorizer does not let read files gets 403.
    auth_resource = "contents"

    async def prepare(self) -> None:  # type: ignore[override]
        """Before any body byte is read: refuse an unauthenticated request and a body over
        `MAX_BODY` (tornado reads the body only after this, chunk by chunk)."""
        self._body = bytearray()
        await super().prepare()
        if self.request.method in ("POST", "PUT", "PATCH"):
            if not self.current_user:
                raise tornado.web.HTTPError(403)
            length = self.request.headers.get("Content-Length", "0")
            if not length.isdigit() or int(length) > MAX_BODY:
                raise tornado.web.HTTPError(413, f"a request body of at most {MAX_BODY:,} bytes")
            self.request.connection.set_max_body_size(MAX_BODY)  # type: ignore[union-attr]

    def data_received(self, chunk: bytes) -> None:
        self._body += chunk

    @property
    def store(self) -> TraceStore:
        return self.settings["profview_store"]  # type: ignore[no-any-return]

    @property
    def owner(self) -> str:
        """Who asks: jupyter-server's user (a shared token's browsers are each their own
        anonymous user, kept by the login cookie); a session is its opener's only."""
        return str(getattr(self.current_user, "username", "") or "")

    def json_body(self) -> Any:
        try:
            return json.loads(bytes(self._body) or b"null")
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
            raise tornado.web.HTTPError(400, "the request body is not JSON (or nested too deeply)") from None

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        """An HTTP error's message may quote the request (a refused path): logged as ``repr``,
        so that a client cannot write terminal escape sequences into the operator's log."""
        if isinstance(value, tornado.web.HTTPError) and value.log_message:
            text = value.log_message % value.args if value.args else value.log_message
            log.warning("%d %s %s: %r", value.status_code, self.request.method, self.request.path, text)
            return
        super().log_exception(typ, value, tb)

    def send_frame(self, body: bytes) -> None:
        self.set_header("Content-Type", wire.CONTENT_TYPE)
        self.set_header("Cache-Control", "no-store")
        self.finish(body)

    async def guarded(self, coro: Any) -> Any:
        """Await ``coro`` turning the store's failures into HTTP errors with a JSON message."""
        try:
            return await coro
        except PathRefused as exc:
            raise tornado.web.HTTPError(exc.status, str(exc)) from None
        except ProfviewError as exc:
            log.info("profview: %r", str(exc))
            raise tornado.web.HTTPError(400, public_message(exc)) from None
        except CommandFailed as exc:  # the worker's command failed: its public message (requests.py)
            raise tornado.web.HTTPError(exc.status, exc.message) from None
        except SessionGone as exc:
            raise tornado.web.HTTPError(404, str(exc.args[0]) if exc.args else "no such session") from None
        except tornado.web.HTTPError:
            raise
        except Exception as exc:  # noqa: BLE001 - a bug: the log has it, the browser a 4xx without detail
            status, message = failure(exc, f"{self.request.method} {self.request.path}")
            raise tornado.web.HTTPError(status, message) from None

    def confine(self, asked: Any) -> Path:
        """The path ``asked`` names, by the server's one rule (``profview serve`` narrows it to
        the path it serves: ``profview_scope``)."""
        cm = self.contents_manager
        return confine(cm.root_dir, asked, scope=self.settings.get("profview_scope"),
                       allow_hidden=bool(getattr(cm, "allow_hidden", False)))


class SessionsHandler(_Base):
    @tornado.web.authenticated
    @authorized("read")
    async def post(self) -> None:
        body = self.json_body()
        api_path = body.get("path") if isinstance(body, dict) else None

        async def open_() -> Any:
            target = self.confine(api_path)
            cm = self.contents_manager
            return await self.store.open(target, Path(api_path).name, root=cm.root_dir,  # type: ignore[arg-type]
                                         scope=self.settings.get("profview_scope"),
                                         allow_hidden=bool(getattr(cm, "allow_hidden", False)),
                                         owner=self.owner)

        sess = await self.guarded(open_())
        self.set_status(202)
        self.finish(json.dumps(sess.status()))


class SessionHandler(_Base):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, sid: str) -> None:
        try:
            sess = self.store.get(sid, self.owner)
        except SessionGone as exc:
            raise tornado.web.HTTPError(404, str(exc.args[0])) from None
        self.finish(json.dumps(sess.status()))

    @tornado.web.authenticated
    @authorized("read")
    async def delete(self, sid: str) -> None:
        closed = await self.guarded(self.store.close(sid, self.owner))
        self.set_status(204 if closed else 404)
        self.finish()


class StateHandler(_Base):
    @tornado.web.authenticated
    @authorized("read")
    async def get(self, sid: str) -> None:
        self.send_frame(await self.guarded(self.store.state(sid, self.owner)))


class CallHandler(_Base):
    @tornado.web.authenticated
    @authorized("read")
    async def post(self, sid: str, name: str) -> None:
        self.send_frame(await self.guarded(self.store.call(sid, name, self.json_body(), self.owner)))


class TraitsHandler(_Base):
    @tornado.web.authenticated
    @authorized("read")
    async def post(self, sid: str) -> None:
        changes = self.json_body()
        if not isinstance(changes, dict):
            raise tornado.web.HTTPError(400, "traits must be a JSON object")
        self.send_frame(await self.guarded(self.store.set_traits(sid, changes, self.owner)))


def api_handlers(base_url: str) -> list[tuple[str, type[APIHandler]]]:
    api = url_path_join(base_url, "profview", "api", "sessions")
    return [
        (api, SessionsHandler),
        (url_path_join(api, SID), SessionHandler),
        (url_path_join(api, SID, "state"), StateHandler),
        (url_path_join(api, SID, "call", r"(?P<name>_[a-z_]{1,32})"), CallHandler),
        (url_path_join(api, SID, "traits"), TraitsHandler),
    ]
